// Loads a medtrust score report in headless Chromium (Debian chromium via
// playwright-core) and checks that the SVG charts render, that no error
// reaches the console, and that the notes table sorts and filters. Prints
// TAP-like "ok"/"not ok" lines; saves a screenshot.
// Usage: node test_report.js REPORT.html SCREENSHOT.png PROFILE_DIR
'use strict';
const path = require('path');
const {launch} = require('./launch.js');

const [report, shot, profile] = process.argv.slice(2);
let failed = 0;
function check(name, cond, detail) {
  if (cond) {
    console.log('ok - ' + name);
  } else {
    failed++;
    console.log('not ok - ' + name);
    if (detail) console.log('# ' + detail);
  }
}

async function main() {
  const ctx = await launch(profile);
  const page = ctx.pages()[0] || await ctx.newPage();
  const errors = [];
  const requests = [];
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('request', (r) => { if (!r.url().startsWith('file:')) requests.push(r.url()); });
  await page.goto('file://' + path.resolve(report));
  await page.waitForLoadState('load');

  const boxes = await page.$$eval('svg.chart', (ss) => ss.map((s) => {
    const b = s.getBoundingClientRect();
    return {id: s.id, w: b.width, h: b.height, n: s.childElementCount};
  }));
  check('report has SVG charts', boxes.length >= 3, JSON.stringify(boxes));
  const bad = boxes.filter((b) => !(b.w > 0 && b.h > 0 && b.n > 0));
  check('every chart renders with a non-zero box', bad.length === 0,
      JSON.stringify(bad));
  for (const id of ['chart-types', 'chart-confusion-1', 'chart-hist-1']) {
    check('chart ' + id + ' present', boxes.some((b) => b.id === id));
  }
  const bars = await page.$$eval('#chart-types rect', (r) =>
    r.filter((x) => x.getBoundingClientRect().height > 0).length);
  check('accuracy bars drawn', bars > 0, 'bars=' + bars);

  // Sorting: click the first-run id header twice, ids flip order.
  const firstId = () => page.$eval('#notes-1 tbody tr td', (td) => td.textContent);
  const before = await firstId();
  await page.click('#notes-1 thead th:nth-child(1)');
  const asc = await firstId();
  await page.click('#notes-1 thead th:nth-child(1)');
  const desc = await firstId();
  check('table sorts by a header click', asc !== desc,
      [before, asc, desc].join(' | '));

  // Filtering: type a note id, one visible row is left.
  const target = await page.$eval('#notes-1 tbody tr:nth-child(3) td',
      (td) => td.textContent);
  await page.fill('input[data-table="notes-1"]', target);
  const visible = await page.$$eval('#notes-1 tbody tr', (rs) =>
    rs.filter((r) => r.style.display !== 'none').length);
  check('table filters by typed text', visible >= 1 && visible < 10,
      'visible=' + visible + ' for ' + target);
  await page.fill('input[data-table="notes-1"]', '');
  await page.evaluate(() => window.scrollTo(0, 0));

  check('no console errors', errors.length === 0, errors.join(' | '));
  check('no network requests (self-contained)', requests.length === 0,
      requests.join(' '));
  await page.screenshot({path: shot, fullPage: false});
  check('screenshot saved', require('fs').statSync(shot).size > 0);
  await ctx.close();
}

main().then(() => process.exit(failed ? 1 : 0), (e) => {
  console.log('not ok - browser run: ' + String(e).split('\n')[0]);
  process.exit(1);
});
