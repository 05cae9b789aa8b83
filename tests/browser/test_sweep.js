// Loads a sweep report (medtrust sweep) in headless Chromium: every figure
// is drawn with points, bars or cells, the numbers in the runs table are
// those of the embedded summary, nothing fails in the console and nothing
// is fetched from the network. Prints "ok"/"not ok" lines; saves a
// full-page screenshot.
// Usage: node test_sweep.js REPORT.html SCREENSHOT.png PROFILE_DIR FIGS
// FIGS: comma-separated ids of the figures the grid must produce.
'use strict';
const path = require('path');
const {launch} = require('./launch.js');

const [report, shot, profile, figs] = process.argv.slice(2);
let failed = 0;
function check(name, cond, detail) {
  console.log((cond ? 'ok - ' : 'not ok - ') + name);
  if (!cond) {
    failed++;
    if (detail) console.log('# ' + detail);
  }
}

async function main() {
  const ctx = await launch(profile);
  const page = ctx.pages()[0] || await ctx.newPage();
  const errors = [];
  const remote = [];
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('request', (r) => { if (!r.url().startsWith('file:')) remote.push(r.url()); });
  await page.goto('file://' + path.resolve(report));
  await page.waitForLoadState('load');
  const charts = await page.$$eval('svg.chart', (ss) => ss.map((s) => {
    const b = s.getBoundingClientRect();
    const marks = s.querySelectorAll('circle.pt, rect').length;
    return {id: s.id, w: b.width, h: b.height, marks};
  }));
  for (const id of figs.split(',')) {
    const c = charts.find((x) => x.id === id);
    check('figure ' + id + ' is drawn', c && c.w > 0 && c.h > 0 && c.marks > 0,
        JSON.stringify(c || charts.map((x) => x.id)));
  }
  const data = JSON.parse(await page.$eval('#sweep-data', (s) => s.textContent));
  const shown = await page.$$eval('#runs tbody tr td[data-key="aggregate"]',
      (tds) => tds.map((td) => parseFloat(td.textContent)));
  const want = [];
  for (const c of data.cells) {
    for (const r of c.runs) want.push(r.score.composite.aggregate);
  }
  check('the runs table shows every run\'s aggregate from the summary',
      shown.length === want.length &&
      shown.every((v, i) => Math.abs(v - want[i]) < 5e-5),
      JSON.stringify({shown, want}));
  check('no console error', errors.length === 0, errors.join(' | '));
  check('nothing fetched from the network', remote.length === 0, remote.join(' '));
  await page.screenshot({path: shot, fullPage: true});
  await ctx.close();
  process.exit(failed ? 1 : 0);
}

main().catch((e) => { console.log('not ok - browser run\n# ' + e); process.exit(1); });
