// Drives the web UI of a running `medtrust serve` in headless Chromium
// (Debian chromium via playwright-core): register, log in, search, check a
// note (highlighted sentence, diff, live trajectory), ask, runs with an
// inline report, settings, log out; every control labelled and reachable
// by Tab; axe-core finds nothing serious or critical on any page in each
// state (logged out, results shown, error shown) and nothing overflows a
// 390 px or a 1280 px wide window; no console error and no failed request
// but those provoked on purpose. Prints TAP-like "ok"/"not ok" lines and
// saves screenshots at both widths.
// Usage: node test_ui.js BASE_URL SHOT_DIR PROFILE_DIR ADMIN_PASSWORD MEDEC_CSV
//        META_JSON (doc id -> the authors, journal, publication_types the
//        store's PubMedQA documents were given) [after-restart: only check,
//        on a restarted server, that the per-user defaults survived]
'use strict';
const fs = require('fs');
const path = require('path');
const TP = path.join(__dirname, '../../third_party/browser/node_modules');
const pw = require(path.join(TP, 'playwright-core'));
const AXE = fs.readFileSync(path.join(TP, 'axe-core/axe.min.js'), 'utf8');

const [base, shots, profile, adminPw, medecCsv, metaJson, mode] =
    process.argv.slice(2);
const META = JSON.parse(fs.readFileSync(metaJson, 'utf8'));
let failed = 0;
function check(name, cond, detail) {
  if (cond) {
    console.log('ok - ' + name);
  } else {
    failed++;
    console.log('not ok - ' + name);
    if (detail) console.log('# ' + String(detail).replace(/\n/g, ' '));
  }
}

// Console errors, HTTP error responses and failed requests, less the
// HTTP errors this test provokes on purpose (each listed with its path
// and status when it is provoked).
const errors = [];
const expected = [];
const icons = []; // requests for a favicon file
const isExpected = (url, status) => expected.some((e) =>
  url.split('?')[0].endsWith(e.path) && status === e.status);
function watch(page) {
  page.on('console', (m) => {
    if (m.type() !== 'error') return;
    const url = (m.location() && m.location().url) || '';
    const st = m.text().match(/status of (\d+)/);
    if (!(st && isExpected(url, Number(st[1])))) {
      errors.push(m.text() + ' ' + url);
    }
  });
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('request', (r) => {
    if (/favicon/.test(r.url())) icons.push(r.url());
  });
  page.on('response', (r) => {
    if (r.status() >= 400 && !isExpected(r.url(), r.status())) {
      errors.push('HTTP ' + r.status() + ' ' + r.url());
    }
  });
  page.on('requestfailed', (r) => {
    // An event stream the page closes itself reads as aborted.
    const f = r.failure() ? r.failure().errorText : '';
    if (!(f === 'net::ERR_ABORTED' && /\/events$/.test(r.url()))) {
      errors.push('request failed: ' + r.url() + ' ' + f);
    }
  });
}

async function shot(page, name) {
  const file = path.join(shots, 'ui_' + name + '.png');
  await page.screenshot({path: file, fullPage: true});
  return file;
}

// A screenshot for the README (docs/img/NAME.png after a copy): the
// window at 1100 x 720 with 'sel' at its top, PNG at CSS pixel size.
async function docShot(page, name, sel) {
  const vp = page.viewportSize();
  await page.setViewportSize({width: 1100, height: 720});
  await page.$eval(sel, (e) => window.scrollTo(0,
      e.getBoundingClientRect().top + window.scrollY - 8));
  await page.screenshot({path: path.join(shots, 'doc_' + name + '.png'),
    scale: 'css'});
  await page.setViewportSize(vp);
}

// ==== Accessibility (axe-core) and layout at two widths ====

const WIDTHS = [390, 1280];
const HEIGHT = 800;

// axe-core's serious and critical violations on the page as it is now.
// The script is evaluated through the debugging protocol, which the
// page's Content-Security-Policy does not cover; the framed score report
// has its own test (test_report.js).
async function axeViolations(page) {
  if (!await page.evaluate(() => typeof window.axe === 'object')) {
    await page.evaluate(AXE + '\n;0');
  }
  return page.evaluate(async () => {
    const r = await window.axe.run(document, {iframes: false,
      resultTypes: ['violations']});
    return r.violations.filter((v) => v.impact === 'serious' ||
        v.impact === 'critical').map((v) => v.id + ' (' + v.impact + '): ' +
        v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(', '));
  });
}

// The page's horizontal overflow: how far it is wider than the window,
// with the outermost elements that stick out.
async function overflow(page) {
  return page.evaluate(() => {
    const w = document.documentElement.clientWidth;
    const extra = document.documentElement.scrollWidth - w;
    const out = [];
    if (extra > 0) {
      for (const e of document.body.querySelectorAll('*')) {
        const r = e.getBoundingClientRect();
        if (r.right <= w + 1 || r.width === 0) continue;
        if (out.some((o) => o.el.contains(e))) continue;
        out.push({el: e, text: e.tagName.toLowerCase() +
            (e.id ? '#' + e.id : '') + (e.className && e.className.baseVal ===
            undefined ? '.' + String(e.className).split(' ')[0] : '') +
            ' right=' + Math.round(r.right)});
        if (out.length >= 4) break;
      }
    }
    return {extra, culprits: out.map((o) => o.text)};
  });
}

// axe at the default width, then each width: no horizontal overflow and a
// full-page screenshot (ui_NAME_390.png, ui_NAME_1280.png).
async function audit(page, name, where) {
  const bad = await axeViolations(page);
  check('axe finds nothing serious on ' + where, bad.length === 0,
      bad.join(' | '));
  const vp = page.viewportSize();
  for (const w of WIDTHS) {
    await page.setViewportSize({width: w, height: HEIGHT});
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(r)));
    const o = await overflow(page);
    check(where + ' fits a ' + w + ' px window', o.extra <= 0,
        'wider by ' + o.extra + ' px: ' + o.culprits.join(', '));
    await shot(page, name + '_' + w);
  }
  await page.setViewportSize(vp);
}

// ==== Accessibility: names and keyboard reach ====

const CONTROL = /^\s*- (button|textbox|searchbox|combobox|slider|spinbutton|checkbox|radio|link|listbox)\b(.*)$/;

// Every control in the accessibility tree has a name.
async function unnamedControls(page) {
  const snap = await page.locator('body').ariaSnapshot();
  return snap.split('\n').filter((l) => {
    const m = l.match(CONTROL);
    return m && !/^\s*"[^"]+"/.test(m[2]);
  });
}

// Tabs through the page and returns the visible, enabled controls that
// focus never reached.
async function unreachable(page) {
  const ids = await page.evaluate(() => {
    const sel = 'a[href], button, input, select, textarea, [tabindex="0"]';
    const out = [];
    document.querySelectorAll(sel).forEach((e, i) => {
      const r = e.getBoundingClientRect();
      const vis = r.width > 0 && r.height > 0 &&
          getComputedStyle(e).visibility !== 'hidden';
      // a closed <details> (a collapsed Settings) hides all but its summary
      const shut = e.closest('details:not([open])');
      if (!vis || e.disabled || e.closest('[hidden]') ||
          (shut && !e.closest('summary'))) return;
      e.dataset.tabid = String(i);
      out.push(String(i));
    });
    // Start from the top of the document, as after loading the page.
    document.body.tabIndex = -1;
    document.body.focus();
    document.body.removeAttribute('tabindex');
    return out;
  });
  const seen = new Set();
  for (let i = 0; i < ids.length + 60; i++) {
    await page.keyboard.press('Tab');
    const id = await page.evaluate(() => document.activeElement &&
        document.activeElement.dataset ? document.activeElement.dataset.tabid : '');
    if (id) seen.add(id);
  }
  const missed = ids.filter((i) => !seen.has(i));
  return page.evaluate((m) => m.map((i) => {
    const e = document.querySelector('[data-tabid="' + i + '"]');
    return e.tagName + '#' + e.id + ' ' + (e.textContent || '').slice(0, 30);
  }), missed);
}

async function a11y(page, where) {
  const bad = await unnamedControls(page);
  check('every control on ' + where + ' has a label', bad.length === 0,
      bad.join(' | '));
  const missed = await unreachable(page);
  check('every control on ' + where + ' is reachable with Tab',
      missed.length === 0, missed.join(' | '));
}

// ==== Flows ====

async function register(page, user, pass) {
  await page.goto(base + '/login');
  await a11y(page, 'the login page');
  await audit(page, 'login', 'the login page (logged out)');
  await page.fill('#reg-user', user);
  await page.fill('#reg-pass', pass);
  await page.click('#reg-btn');
  await page.waitForURL(base + '/', {timeout: 10000});
  await page.waitForSelector('#who:not(:empty)');
  check('register logs the new user in',
      (await page.textContent('#who')).includes(user));
}

async function logIn(page, user, pass) {
  await page.goto(base + '/login');
  await page.fill('#login-user', user);
  await page.fill('#login-pass', pass);
  await page.click('#login-btn');
  await page.waitForURL(base + '/', {timeout: 10000});
  await page.waitForSelector('#who:not(:empty)');
  return (await page.textContent('#who')).includes(user);
}

// A wrong password: the login page shows the server's refusal.
async function loginError(page) {
  await page.goto(base + '/login');
  await page.fill('#login-user', 'carol');
  await page.fill('#login-pass', 'not-the-password');
  expected.push({path: '/v1/login', status: 401});
  await page.click('#login-btn');
  await page.waitForFunction(() =>
    document.getElementById('login-msg').textContent.length > 0);
  check('a wrong password shows the refusal',
      (await page.textContent('#login-msg')).length > 0);
  await audit(page, 'login_error', 'the login page with an error shown');
}

async function logOut(page) {
  await page.click('#logout');
  await page.waitForURL(/\/login$/, {timeout: 10000});
  return page.isVisible('#login-btn');
}

// Opens a page's collapsed Settings control (a <details>).
async function openSettings(page, p) {
  await page.$eval('#' + p + '-settings', (d) => {
    d.open = true;
  });
}

// Settings collapsed behind one control whose line says the values in
// force: on a fresh load at 390 px each page's button is above the fold
// with the panel closed; the line follows a change.
async function collapsedSettings(page) {
  const vp = page.viewportSize();
  await page.setViewportSize({width: 390, height: HEIGHT});
  for (const [p, btn] of [['search', 'search-btn'], ['check', 'check-btn'],
    ['ask', 'ask-btn'], ['verify', 'verify-btn']]) {
    await page.goto(base + '/#' + p);
    await page.reload();
    // the line once the page has its limits (and the user's defaults)
    await page.waitForFunction((x) => {
      const t = document.getElementById(x + '-settings-now').textContent;
      return t.length > 0 && (x !== 'check' || /N \d/.test(t));
    }, p);
    const r = await page.evaluate(([x, b]) => [
      document.getElementById(x + '-settings').open,
      document.getElementById(b).getBoundingClientRect().bottom,
      document.getElementById(x + '-settings-now').textContent], [p, btn]);
    check('the ' + p + ' page\'s settings are collapsed with the values ' +
        'in one line, its button above the fold at 390 px', !r[0] &&
        r[1] <= HEIGHT && r[2].length > 10, JSON.stringify(r));
    if (p === 'check') {
      const before = r[2];
      check('the check settings line says the paper\'s defaults',
          /N 4 · M 5 · accept mean ≥ 3\.8, lowest ≥ 3 · top 20 of 50/
              .test(before), before);
      await openSettings(page, 'check');
      await page.fill('#check-rounds', '2');
      const after = await page.textContent('#check-settings-now');
      check('the settings line follows a change', after.includes('M 2') &&
          !after.includes('M 5'), after);
      await page.fill('#check-rounds', '5');
      await shot(page, 'check_settings_390');
    }
  }
  await page.setViewportSize(vp);
}

// Per-user defaults: the Check panel's values saved with "Save as my
// defaults" (PUT /v1/me/settings), bounded by the server's limits (a
// value past them is refused), put back in the panel on the next load.
const MINE = {rounds: '3', source: 'pubmedqa', min: '4'};
async function userDefaults(page) {
  await page.goto(base + '/#check');
  await page.reload();
  await page.waitForFunction(() =>
    document.getElementById('check-k-lim').textContent.length > 0);
  await openSettings(page, 'check');
  await page.fill('#check-rounds', MINE.rounds);
  await page.fill('#check-min', MINE.min);
  await page.selectOption('#check-source', MINE.source);
  await page.check('#check-fallbacks');
  const resp = page.waitForResponse((r) => r.url().endsWith('/v1/me/settings') &&
      r.request().method() === 'PUT');
  await page.click('#check-save');
  const r = await resp;
  const sent = r.request().postDataJSON().check || {};
  check('"Save as my defaults" stores the Check panel\'s values',
      r.status() === 200 && sent.max_rounds === 3 && sent.accept_min === 4 &&
      sent.source === 'pubmedqa' && sent.max_steps === 4 &&
      sent.allow_fallbacks === 1,
  r.status() + ' ' + JSON.stringify(sent));
  expected.push({path: '/v1/me/settings', status: 400});
  const bad = await page.evaluate(async () => {
    const res = await fetch('/v1/me/settings', {method: 'PUT', headers: {
      'Content-Type': 'application/json',
      'X-CSRF-Token': sessionStorage.getItem('medtrust.csrf')},
    body: JSON.stringify({check: {max_rounds: 99}})});
    return [res.status, (await res.json()).error];
  });
  check('a default past the server\'s limits is refused, saying the bounds',
      bad[0] === 400 && /max_rounds.*1 to 10/.test(bad[1]), bad.join(' '));
  await page.reload();
  check('the saved defaults fill the Check panel on the next load',
      await mineShown(page), await page.textContent('#check-settings-now'));
  await audit(page, 'check_defaults', 'Check with saved defaults');
}

// Whether the Check panel shows MINE (the line and the inputs).
async function mineShown(page) {
  await page.waitForFunction(() =>
    document.getElementById('check-k-lim').textContent.length > 0);
  await page.waitForFunction(() => / M 3 /.test(
      document.getElementById('check-settings-now').textContent), null,
  {timeout: 10000}).catch(() => {});
  const v = await page.evaluate(() => ['check-rounds', 'check-min',
    'check-source', 'check-steps'].map((id) => document.getElementById(id).value)
      .concat(document.getElementById('check-fallbacks').checked));
  return v.join(',') === [MINE.rounds, MINE.min, MINE.source, '4', true]
      .join(',');
}

async function search(page) {
  await page.goto(base + '/#search');
  await page.waitForSelector('#search-source option:nth-child(2)',
      {state: 'attached'});
  await page.fill('#search-q', 'gout treatment');
  await openSettings(page, 'search');
  await page.click('#search-btn');
  await page.waitForSelector('#search-hits li', {timeout: 10000});
  const hits = await page.$$eval('#search-hits li', (l) => l.length);
  const marks = await page.$$eval('#search-hits mark', (m) =>
    m.map((x) => x.textContent.toLowerCase()));
  check('search shows hits', hits > 0, 'hits=' + hits);
  check('search highlights the query terms', marks.length > 0 &&
      marks.every((m) => m.startsWith('gout') || m.startsWith('treat')),
  marks.slice(0, 5).join(','));
  // The weight slider by keyboard: more semantic weight, hybrid search.
  await page.focus('#search-w');
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('ArrowRight');
  const w = await page.$eval('#search-w', (e) => e.value);
  await page.selectOption('#search-source', 'medquad');
  await page.click('#search-btn');
  await page.waitForFunction(() => /documents \(\d+ passages, hybrid\)/.test(
      document.getElementById('search-status').textContent));
  const src = await page.$$eval('#search-hits .hit-meta', (m) =>
    m.map((x) => x.textContent.split(' ')[0]));
  check('the slider moves by keyboard and gives a hybrid search',
      w === '40', 'value=' + w);
  check('the source filter keeps medquad hits only', src.length > 0 &&
      src.every((s) => s === 'medquad'), src.join(','));
  check('each MedQuAD hit links to its own url (not PubMed)',
      await hitLinks(page, (id, h) => id.startsWith('mq-') &&
        /^https?:\/\//.test(h) && !PUBMED.test(h)));
  await searchFilters(page);
  await searchGrouped(page);
  await page.$$eval('#search-hits details.more', (d) => {
    if (d[0]) d[0].open = true; // the README's shot shows one expanded
  });
  await page.$eval('#search-settings', (d) => {
    d.open = false;
  });
  await docShot(page, 'search', '#search-h');
  await audit(page, 'search', 'Search with results');
  await a11y(page, 'Search');
}

// Search lists documents, as VerifAI does: each once (its best passage,
// the others behind "N more passages"); a document without a title
// (PubMedQA) shows its first sentence, its text on hover; /v1/search's
// default mode is the index's best, as /v1/limits says.
async function searchGrouped(page) {
  const lim = await page.evaluate(() => fetch('/v1/limits').then((r) =>
    r.json()));
  const req = page.waitForRequest((r) => r.url().endsWith('/v1/search'));
  const resp = page.waitForResponse((r) => r.url().endsWith('/v1/search'));
  await page.fill('#search-q', 'patients with disease');
  await page.click('#search-btn');
  const sent = (await req).postDataJSON();
  const got = await (await resp).json();
  const ids = got.hits.map((h) => h.doc_id);
  check('search groups by document by default: each document once',
      !('group' in sent) && got.group === 'documents' && ids.length > 0 &&
      new Set(ids).size === ids.length, JSON.stringify(sent) + ' ' +
      ids.join(','));
  const bare = await page.evaluate(() => fetch('/v1/search', {method: 'POST',
    headers: {'Content-Type': 'application/json',
      'X-CSRF-Token': sessionStorage.getItem('medtrust.csrf')},
    body: JSON.stringify({query: 'disease'})}).then((r) => r.json()));
  check('one default search mode, the index\'s best, said in /v1/limits',
      lim.search.default_mode === 'hybrid' && bare.mode === 'hybrid',
      lim.search.default_mode + ' ' + bare.mode);
  await page.waitForFunction(() => /documents \(/.test(
      document.getElementById('search-status').textContent));
  const untitled = await page.$$eval('#search-hits > li', (l) => l.map((x) =>
    [x.querySelector('.hit-meta').textContent.split(' · ')[1],
      x.querySelector('.hit-title').textContent,
      x.querySelector('.hit-title').getAttribute('title') || '']));
  const pq = untitled.filter(([id]) => /^\d+$/.test(id));
  check('a document without a title shows its first sentence, its text ' +
      'on hover', pq.length > 0 && pq.every(([id, t, tip]) => t !== id &&
      t.length > 10 && tip.startsWith(t.replace(/…$/, ''))),
  JSON.stringify(pq.slice(0, 2)).slice(0, 300));
  // The rendering of a document with more passages (trace of /v1/search's
  // grouped answer).
  const r = await page.evaluate(async () => {
    const m = await import('/js/search.js');
    const li = m.hitItem({doc_id: '123', title: null, source: 'pubmedqa',
      score: 2, text: 'Aspirin lowers risk. It was studied in 2001.',
      more: [{rank: 3, text: 'More on aspirin.'}, {rank: 5,
        text: 'Even more.'}]}, ['aspirin']);
    const box = document.getElementById('search-hits');
    box.replaceChildren(li);
    const d = li.querySelector('details.more');
    const closed = d && !d.open;
    d.querySelector('summary').click();
    return [li.querySelector('.hit-title').textContent, closed,
      d.querySelector('summary').textContent,
      [...d.querySelectorAll('li')].map((x) => x.textContent).join('|'),
      d.open];
  });
  check('a document\'s other passages sit behind "2 more passages", ' +
      'expandable', r[0] === 'Aspirin lowers risk.' && r[1] &&
      r[2] === '2 more passages of this document' &&
      r[3] === 'More on aspirin.|Even more.' && r[4], JSON.stringify(r));
  await page.click('#search-btn');
  await page.waitForFunction(() => /documents \(/.test(
      document.getElementById('search-status').textContent));
}

const PUBMED = /^https:\/\/pubmed\.ncbi\.nlm\.nih\.gov\/(\d+)\/$/;

// Whether every hit shown has one document link and ok(doc_id, href) holds
// for each (/v1/search's "url").
async function hitLinks(page, ok) {
  const links = await page.$$eval('#search-hits > li', (l) => l.map((x) => [
    x.querySelector('.hit-meta').textContent.split(' · ')[1],
    [...x.querySelectorAll('a')].map((a) => a.href)]));
  const bad = links.filter(([id, h]) => h.length !== 1 || !ok(id, h[0]));
  if (links.length === 0 || bad.length) {
    console.log('# hit links: ' + JSON.stringify(bad.length ? bad : links)
        .slice(0, 300));
  }
  return links.length > 0 && bad.length === 0;
}

// Author, journal and publication type on the Search page: every hit is
// a document with that metadata (the store's, META), and the inputs take
// the server's byte limit.
async function searchFilters(page) {
  await page.selectOption('#search-source', '');
  await page.fill('#search-q', 'patients with disease');
  await page.fill('#search-author', 'even author');
  await page.fill('#search-journal', 'journal 1');
  const req = page.waitForRequest((r) => r.url().endsWith('/v1/search'));
  await page.click('#search-btn');
  const sent = (await req).postDataJSON();
  await page.waitForFunction(() => /documents \(/.test(
      document.getElementById('search-status').textContent));
  const ids = await page.$$eval('#search-hits .hit-meta', (m) =>
    m.map((x) => x.textContent.split(' · ')[1]));
  const bad = ids.filter((id) => !META[id] ||
      !META[id].authors.includes('Even Author') ||
      META[id].journal !== 'Journal 1 of Medicine');
  check('search by author and journal shows only their documents',
      sent.author === 'even author' && sent.journal === 'journal 1' &&
      ids.length > 0 && bad.length === 0, JSON.stringify(sent) + ' ' +
      ids.join(',') + ' bad=' + bad.join(','));
  check('each PubMedQA hit (a PMID) links to its PubMed page',
      await hitLinks(page, (id, h) => (h.match(PUBMED) || [])[1] === id));
  const lim = await page.evaluate(() => [
    document.getElementById('search-author').maxLength,
    document.getElementById('search-meta-hint').textContent]);
  check('the filter inputs take the server\'s limit and say it',
      lim[0] === 255 && lim[1].includes('At most 255 bytes'), lim.join(' | '));
  await page.fill('#search-q', 'gout treatment');
  await page.fill('#search-author', '');
  await page.fill('#search-journal', '');
}

const NOTE = 'A 62-year-old man has crushing chest pain.\n' +
    'ECG shows ST elevation in II, III and aVF.\n' +
    'He is given aspirin and sent home.\n';

// Records, in the page, the order in which each named selector first
// matches (two in the same change read "a+b"); window.order holds it.
async function recordOrder(page, container, marks) {
  await page.evaluate(([c, m]) => {
    window.order = [];
    const seen = new Set();
    new MutationObserver(() => {
      const now = m.filter(([n, sel]) => !seen.has(n) &&
          document.querySelector(sel)).map(([n]) => n);
      now.forEach((n) => seen.add(n));
      if (now.length) window.order.push(now.join('+'));
    }).observe(document.getElementById(c),
        {childList: true, subtree: true, characterData: true});
  }, [container, marks]);
}

async function checkNote(page, strategy, settings) {
  await page.goto(base + '/#check');
  // The panel is ready: limits, sources and models loaded.
  await page.waitForFunction(() =>
    document.getElementById('check-k-lim').textContent.length > 0);
  await page.fill('#check-note', NOTE);
  await page.selectOption('#check-strategy', strategy);
  await openSettings(page, 'check');
  for (const [id, v] of Object.entries(settings || {})) {
    if (await page.$eval(id, (e) => e.type === 'range')) {
      await page.$eval(id, (e, x) => {
        e.value = x;
        e.dispatchEvent(new Event('input'));
      }, v);
    } else if (await page.$eval(id, (e) => e.tagName === 'SELECT')) {
      await page.selectOption(id, v);
    } else {
      await page.fill(id, v);
    }
  }
  const req = page.waitForRequest((r) => r.url().endsWith('/v1/check'));
  await recordOrder(page, 'check-result', [['step', '#check-trace > li'],
    ['verdict', '#check-verdict']]);
  await page.click('#check-btn');
  await page.waitForSelector('#check-err-sentence', {timeout: 60000});
  const order = await page.evaluate(() => window.order);
  const sent = (await req).postDataJSON();
  const mark = await page.textContent('#check-err-sentence');
  const ins = await page.$$eval('#check-diff ins', (e) =>
    e.map((x) => x.textContent).join(''));
  const steps = await page.$$eval('#check-trace > li', (l) =>
    l.map((x) => x.dataset.step));
  return {mark, ins, steps, order, sent,
    visible: await page.isVisible('#check-err-sentence') &&
        await page.isVisible('#check-diff')};
}

// Cancel stops a running check: the run ends failed, "cancelled", with
// the steps it had made, and the button goes away.
// The stub's reviewers give 5,5,5,5,4: a lowest-score threshold of 5
// rejects every round, so this check reflects for all its rounds (long
// enough to cancel) where the defaults accept the first.
async function cancelCheck(page) {
  await page.goto(base + '/#check');
  await page.fill('#check-note', NOTE);
  await page.selectOption('#check-strategy', 'react-reflex');
  await openSettings(page, 'check');
  await page.fill('#check-rounds', '5');
  await page.fill('#check-min', '5');
  await page.click('#check-btn');
  await page.waitForSelector('#check-trace > li', {timeout: 30000});
  await page.click('#check-cancel');
  await page.waitForFunction(() =>
    document.getElementById('check-msg').textContent.includes('cancel'),
  null, {timeout: 30000});
  check('Cancel stops a running check and says so',
      await page.isHidden('#check-cancel') &&
      await page.$('#check-verdict') === null,
      await page.textContent('#check-msg'));
  await audit(page, 'check_error', 'Check with an error shown');
}

// A check on a model whose replies are all garbage (MedReAct's, or the
// guard agents'): the run fails and the page says so in words; nothing
// reads "no error found", no badge is green, and the trajectory numbers
// a retry as an attempt of its step.
async function failedCheck(page, strategy, model) {
  await page.goto(base + '/#check');
  await page.waitForFunction(() =>
    document.getElementById('check-k-lim').textContent.length > 0);
  await page.fill('#check-note', NOTE);
  await page.selectOption('#check-strategy', strategy);
  await openSettings(page, 'check');
  await page.selectOption('#check-model', model);
  if (strategy === 'react-reflex') {
    await page.fill('#check-steps', '2');
    await page.fill('#check-rounds', '1');
  }
  await page.click('#check-btn');
  await page.waitForSelector('#check-failed', {timeout: 90000});
  const text = await page.textContent('#check-result');
  const why = await page.textContent('#check-failed-why');
  const green = await page.$$eval('#check-result .badge.ok',
      (b) => b.map((x) => x.closest('li').dataset.step + ':' + x.textContent));
  check('a ' + strategy + ' check whose every ' + (strategy === 'guards' ?
    'guard agent' : 'MedReAct step') + ' failed shows as failed, with ' +
      'the reason in words', await page.$('#check-verdict') === null &&
      text.includes('check failed') && !/no error found/i.test(text) &&
      /fallback|failed|unusable/.test(why) && why.length > 30,
  why + ' | ' + text.slice(0, 200));
  check('... and no step of it is green but the calls that answered',
      green.every((g) => g.startsWith('call:')) &&
      !green.some((g) => /no error/.test(g)), green.join(','));
  const heads = await page.$$eval('#check-trace > li > .step-kind',
      (h) => h.map((x) => x.textContent + ' ' +
        x.parentNode.querySelector('.muted').textContent));
  return heads;
}

async function failedChecks(page) {
  const heads = await failedCheck(page, 'react-reflex', 'broken-react');
  // "MedReAct step 2 ... attempt 2" repeats step 2: the same number.
  const react = heads.filter((h) => h.startsWith('MedReAct step'));
  const nums = react.map((h) => [Number(h.split(' ')[2]), / attempt 2/.test(h)]);
  check('the trajectory numbers a retry as an attempt of its step',
      react.length >= 2 && nums.some(([, a]) => a) &&
      nums.every(([n, a], i) => (a ? i > 0 && n === nums[i - 1][0] :
        n === (i ? nums[i - 1][0] + 1 : 1))), react.join(' | '));
  const words = await page.$$eval('#check-trace > li', (l) => l.map((x) =>
    x.dataset.step + '=' + x.querySelector('.step-kind').textContent));
  check('trajectory headings are words, not raw rule names',
      words.every((w) => !/=(round|rounds|fallback|[a-z]+_[a-z_]+)\b/.test(w)),
      words.join(' | '));
  await audit(page, 'check_failed', 'Check with a failed check');
  await docShot(page, 'check_failed', '#check-result');
  await allowedFallback(page);
  await failedCheck(page, 'guards', 'broken-guards');
  const arb = await page.$$eval('[data-step^="guards_"]', (l) =>
    l.map((x) => x.textContent));
  check('guards whose agents failed say so, never "no error" for a failed ' +
      'agent', arb.length > 0 && arb.every((t) => t.includes('failed: no ' +
      'usable answer') && t.includes('a call failed')), arb.join(' | ')
      .slice(0, 300));
  await page.selectOption('#check-model', ''); // the page keeps its state
}

// The same broken model with "Allow fallbacks" on: the run is done, but
// its verdict is the strategy's fallback, shown as "fallback: no model
// answer" with the reason in words, never green and never "no error
// found"; the Settings line says fallbacks are allowed.
async function allowedFallback(page) {
  await page.goto(base + '/#check');
  await page.waitForFunction(() =>
    document.getElementById('check-k-lim').textContent.length > 0);
  await page.fill('#check-note', NOTE);
  await page.selectOption('#check-strategy', 'react-reflex');
  await openSettings(page, 'check');
  await page.selectOption('#check-model', 'broken-react');
  await page.fill('#check-steps', '2');
  await page.fill('#check-rounds', '1');
  await page.check('#check-fallbacks');
  const line = await page.textContent('#check-settings-now');
  const sent = page.waitForRequest((r) => r.url().endsWith('/v1/check'));
  await page.click('#check-btn');
  const body = (await sent).postDataJSON();
  await page.waitForSelector('#check-fallback', {timeout: 90000});
  const text = await page.textContent('#check-result');
  const badge = await page.textContent('#check-verdict .badge');
  const red = await page.$eval('#check-verdict .badge',
      (b) => b.classList.contains('bad'));
  const why = await page.textContent('#check-failed-why');
  const status = await page.textContent('#check-status');
  const green = await page.$$eval('#check-result .badge.ok', (b) =>
    b.map((x) => (x.closest('li') ? x.closest('li').dataset.step : 'verdict') +
      ':' + x.textContent));
  check('"Allow fallbacks" is sent and said in the Settings line',
      body.allow_fallbacks === 1 && /fallbacks allowed/.test(line),
      JSON.stringify(body) + ' | ' + line);
  check('an allowed fallback shows as "fallback: no model answer" with the ' +
      'reason in words, never green, never "no error found"',
  badge === 'fallback: no model answer' && red &&
      /fallback/.test(why) && why.length > 30 &&
      /Fallback verdict: no error flagged \(the strategy's default/.test(
          text) && !/no error found/i.test(text) &&
      !text.includes('check failed') && /fallback verdict/.test(status) &&
      green.every((g) => g.startsWith('call:')),
  [badge, why, status, green.join(','), text.slice(0, 200)].join(' | '));
  await audit(page, 'check_fallback', 'Check with an allowed fallback');
  await docShot(page, 'check_fallback', '#check-result');
  await page.uncheck('#check-fallbacks');
}

// The trajectory's rendering of replies the library reads (trace.js):
// confidences on 0..1 or 0..100 (said which), "invalid" for the rest.
async function confidenceRendering(page) {
  const got = await page.evaluate(async () => {
    const t = await import('/js/trace.js');
    const rec = (c) => ({step: 'call', role: 'guard', ok: true, attempt: 1,
      prompt: 'guard_detect_1', replies: ['{"verdict":"CORRECT",' +
        '"confidence":' + c + ',"reasoning":"r"}']});
    return ['0.85', '85', '1111111111111111111', '1e999', '-0.5', '"high"']
        .map((c) => t.renderStep(rec(c), {}).textContent);
  });
  const conf = got.map((g) => (g.match(/Confidence: (.*?)(Reasoning|$)/) ||
    [])[1] || '');
  check('confidences read on 0..1 or 0..100 (said which), "invalid" for ' +
      'the rest', conf[0].startsWith('85% (given as 0.85, on 0 to 1)') &&
      conf[1].startsWith('85% (given as 85, on 0 to 100)') &&
      conf.slice(2).every((c) => c.startsWith('invalid') && !/%/.test(c)),
  conf.join(' | '));
}

async function checks(page) {
  // The settings panel: the paper's N, M and thresholds, bounded by the
  // server's limits (GET /v1/limits) and sent with the check.
  await page.goto(base + '/#check');
  await page.waitForFunction(() =>
    document.getElementById('check-rounds-lim').textContent.length > 0);
  const lim = await page.evaluate(() => ['check-steps', 'check-rounds',
    'check-mean', 'check-min'].map((id) => [document.getElementById(id).min,
    document.getElementById(id).max, document.getElementById(id).value,
    document.getElementById(id + '-lim').textContent].join(' ')));
  check('the check panel shows each setting\'s limits and default',
      lim.join('|') === '1 12 4 1 to 12, default 4.|1 10 5 1 to 10, ' +
      'default 5.|1 5 3.8 1 to 5, default 3.8.|1 5 3 1 to 5, default 3.',
      lim.join('|'));
  const flim = await page.evaluate(() => [
    document.getElementById('check-author').maxLength,
    document.getElementById('check-meta-hint').textContent]);
  check('the check panel\'s filters take the server\'s limit and say it',
      flim[0] === 255 && flim[1].includes('At most 255 bytes'),
      flim.join(' | '));
  const r = await checkNote(page, 'react-reflex',
      {'#check-steps': '3', '#check-rounds': '2', '#check-mode': 'bm25',
        '#check-author': 'even author'});
  check('the check request carries the panel\'s settings, search mode ' +
      'and author filter', r.sent.max_steps === 3 && r.sent.max_rounds === 2 &&
      r.sent.accept_mean === 3.8 && r.sent.accept_min === 3 &&
      r.sent.search_mode === 'bm25' && r.sent.author === 'even author' &&
      !('journal' in r.sent) && !('model' in r.sent),
      JSON.stringify(r.sent).slice(0, 200));
  const found = await page.$$eval('[data-step="search"] .passage',
      (p) => p.map((x) => [x.dataset.doc, (x.querySelector('a') || {}).href]));
  const how = await page.$$eval('[data-step="search"] .search-how',
      (p) => p.map((x) => x.textContent));
  const offAuthor = found.filter(([id, href]) => !META[id] ||
      !META[id].authors.includes('Even Author') ||
      (href.match(PUBMED) || [])[1] !== id);
  check('MedReAct searches only the author\'s documents, each linked to ' +
      'PubMed, and each step says its filter', found.length > 0 &&
      offAuthor.length === 0 && how.length > 0 &&
      how.every((t) => t.includes('author contains “even author”')),
  JSON.stringify(offAuthor.length ? offAuthor : found).slice(0, 300) + ' ' +
      how.join(' | '));
  check('check highlights the erroneous sentence', r.visible &&
      r.mark === 'He is given aspirin and sent home.', r.mark);
  check('check shows the word diff to the correction',
      r.ins.includes('(corrected)'), r.ins);
  check('react-reflex trajectory shows search, reviews and verdict',
      ['call', 'search', 'medeval', 'verdict'].every((s) => r.steps.includes(s)),
      r.steps.join(','));
  check('trajectory steps arrive live, before the verdict',
      r.order.join(',') === 'step,verdict', r.order.join(','));
  const passages = await page.$$eval('[data-step="search"] .passage',
      (p) => p.length);
  const reviews = await page.$$eval('[data-step="call"] table tbody tr',
      (t) => t.length);
  check('search steps list retrieved passages', passages > 0,
      'passages=' + passages);
  check('the five MedEval reviews are shown with scores', reviews === 5,
      'rows=' + reviews);
  await audit(page, 'check_react', 'Check with its result');
  await docShot(page, 'check', '#check-result');
  // The search settings: source, years, depths and the hybrid weight,
  // bounded as the server says and sent with the check; MedReAct's
  // searches keep the top k asked for, from that source.
  const slim = await page.evaluate(() => ['check-retrieve', 'check-k',
    'check-year-from'].map((id) => document.getElementById(id + '-lim')
      .textContent));
  check('the check panel shows the search settings\' limits',
      slim.join('|') === '1 to 200, default 50.|1 to 50, default 20.|' +
      '1 to 99999.', slim.join('|'));
  const s = await checkNote(page, 'react-reflex', {'#check-source': 'pubmedqa',
    '#check-year-from': '1990', '#check-year-to': '2015',
    '#check-retrieve': '10', '#check-k': '3', '#check-w': '60'});
  const per = await page.$$eval('[data-step="search"]', (l) =>
    l.map((x) => x.querySelectorAll('.passage').length));
  const srcs = await page.$$eval('[data-step="search"] .passage', (p) =>
    p.map((x) => x.dataset.doc));
  const shown = await page.$$eval('[data-step="search"] .search-how',
      (p) => p.map((x) => x.textContent));
  check('the check request carries source, years, depths and weights, ' +
      'and each search keeps the 3 passages asked for, from pubmedqa',
  s.sent.source === 'pubmedqa' && s.sent.year_from === 1990 &&
      s.sent.year_to === 2015 && s.sent.retrieve_k === 10 &&
      s.sent.rerank_k === 3 && s.sent.w_sem === 0.6 &&
      s.sent.w_lex === 0.4 && per.length > 0 &&
      per.every((n) => n > 0 && n <= 3) &&
      srcs.every((id) => id in META) && shown.length > 0 &&
      shown.every((t) => t.includes('top 3 of 10') &&
        t.includes('year 1990 to 2015') && t.includes('source pubmedqa')),
  JSON.stringify(s.sent).slice(0, 300) + ' ' + per.join(',') + ' ' +
      srcs.join(',') + ' ' + shown.join(' | '));
  await audit(page, 'check_search', 'Check with search settings');
  const g = await checkNote(page, 'guards', {'#check-model': 'stub-b'});
  check('guards has no paper settings: the panel hides, none are sent',
      await page.isHidden('#check-config') && !('max_steps' in g.sent) &&
      !('author' in g.sent), JSON.stringify(g.sent).slice(0, 200));
  check('the check goes to the model chosen in the panel',
      g.sent.model === 'stub-b', JSON.stringify(g.sent).slice(0, 200));
  const arb = await page.$$eval('[data-step^="guards_"]', (l) =>
    l.map((x) => x.textContent));
  check('guards shows each agent\'s verdict and the arbiter', arb.length === 2 &&
      arb.every((t) => t.includes('Agent 1') && t.includes('Decision') &&
          t.includes('confidence')), arb.join(' | ').slice(0, 300));
  check('guards highlights the sentence and the diff', g.visible &&
      g.ins.includes('(corrected)'), g.ins);
  await shot(page, 'check_guards');
  await a11y(page, 'Check');
}

// Asks against the stub (qa_answer and qa_judge roles): the run's claims
// arrive live, then the answer with coloured claims whose evidence shows
// on hover and on focus, and the id the stub cites but never got
// (NO_REFERENCE) in a claim's verdicts.
// The Ask page's filters: sources from the store, years sent as they are
// (a reversed range comes back as the server's 400, shown as it is).
async function askFilters(page) {
  await page.waitForSelector('#ask-source option:nth-child(2)',
      {state: 'attached'});
  await openSettings(page, 'ask');
  const opts = await page.$$eval('#ask-source option', (o) =>
    o.map((x) => x.value));
  check('the Ask page offers the store\'s sources', opts.length > 1 &&
      opts[0] === '', opts.join(','));
  const k = await page.evaluate(() => [document.getElementById('ask-k').max,
    document.getElementById('ask-k-lim').textContent,
    document.getElementById('ask-w-val').textContent].join(' | '));
  check('the ask panel shows the server\'s limits and the weights',
      k === '100 | 1 to 100, default 10. | Lexical (BM25) 70% · semantic ' +
      '(vectors) 30%', k);
  const modes = await page.$$eval('#ask-mode option', (o) =>
    o.map((x) => x.value).join(','));
  check('the ask panel offers the search modes the index serves',
      modes === ',bm25,dense,hybrid' &&
      (await page.textContent('#ask-mode-lim')).includes('bm25, dense, hybrid'),
      modes);
  await page.fill('#ask-q', 'Is aspirin useful?');
  await page.fill('#ask-year-from', '2015');
  await page.fill('#ask-year-to', '2010');
  await page.fill('#ask-author', 'Even Author');
  await page.fill('#ask-journal', 'Journal 2');
  await page.fill('#ask-pubtype', 'review');
  await page.selectOption('#ask-mode', 'dense');
  const models = await page.$$eval('#ask-model option', (o) =>
    o.map((x) => x.value).join(','));
  check('the ask panel offers the server\'s models to choose',
      await page.isVisible('#ask-model') &&
      models === ',stub-b,broken-react,broken-guards', models);
  await page.selectOption('#ask-model', 'stub-b');
  expected.push({path: '/v1/ask', status: 400});
  const bad = page.waitForResponse((r) => r.url().endsWith('/v1/ask'));
  const breq = page.waitForRequest((r) => r.url().endsWith('/v1/ask'));
  await page.click('#ask-btn');
  const bsent = (await breq).postDataJSON();
  check('the ask request carries author, journal, type, mode and model',
      bsent.author === 'Even Author' && bsent.journal === 'Journal 2' &&
      bsent.publication_type === 'review' && bsent.search_mode === 'dense' &&
      bsent.model === 'stub-b', JSON.stringify(bsent));
  const br = await bad;
  await page.waitForFunction(() =>
    document.getElementById('ask-msg').textContent.length > 0);
  const msg = await page.textContent('#ask-msg');
  check('year filters reach the server and its 400 shows',
      br.status() === 400 && msg.includes('year_from'), br.status() + ' ' +
      msg);
  await audit(page, 'ask_error', 'Ask with an error shown');
  await page.fill('#ask-year-from', '');
  await page.fill('#ask-year-to', '');
  for (const id of ['#ask-author', '#ask-journal', '#ask-pubtype']) {
    await page.fill(id, '');
  }
  await page.selectOption('#ask-mode', '');
  await page.selectOption('#ask-model', '');
}

async function ask(page) {
  await page.goto(base + '/#ask');
  await askFilters(page);
  await page.fill('#ask-q', 'Do mitochondria play a role in remodelling ' +
      'lace plant leaves during programmed cell death?');
  const req = page.waitForRequest((r) => r.url().endsWith('/v1/ask'));
  const resp = page.waitForResponse((r) => r.url().endsWith('/v1/ask'));
  // Records the order in which the first streamed token, the first
  // verified claim and the answer appear (a step shown only with the
  // answer, from the result, reads "step+answer"), and how much of the
  // answer had streamed when the first claim came.
  // A claim marked in the streamed text arrives with its step ("mark").
  await recordOrder(page, 'ask-result', [
    ['token', '#ask-stream:not(:empty)'], ['step', '#ask-steps > li'],
    ['mark', '#ask-stream .claim'], ['answer', '#ask-answer']]);
  await page.evaluate(() => {
    window.marks = [];
    new MutationObserver(() => {
      const s = document.getElementById('ask-stream');
      if (s && window.streamed === undefined &&
          document.querySelector('#ask-steps > li')) {
        window.streamed = s.textContent;
      }
      if (s) {
        window.marks = [...s.querySelectorAll('.claim')].map((c) =>
          [c.dataset.label, c.textContent]);
      }
    }).observe(document.getElementById('ask-result'),
        {childList: true, subtree: true, characterData: true});
  });
  await page.click('#ask-btn');
  const sent = (await req).postDataJSON();
  check('the ask request carries k, the weights and no empty filters',
      sent.k === 10 && sent.w_lex === 0.7 && sent.w_sem === 0.3 &&
      !('source' in sent) && !('year_from' in sent), JSON.stringify(sent));
  const r = await resp;
  check('ask queues a run (202)', r.status() === 202, 'status=' + r.status());
  // No timing threshold: the order of events is what is checked; the
  // whole run takes 30-60 s under ASan on a loaded two-core machine.
  await page.waitForSelector('#ask-answer .claim', {timeout: 150000});
  const order = await page.evaluate(() => window.order);
  check('streamed tokens arrive before the run ends, then verified ' +
      'claims, each marked in the streamed text as it comes, then the ' +
      'answer', order.join(',') === 'token,step+mark,answer',
  order.join(','));
  const streamed = await page.evaluate(() => window.streamed || '');
  const answer = (await page.evaluate(() => fetch('/v1/runs?limit=1')
      .then((r) => r.json()).then((l) => fetch('/v1/runs/' + l.runs[0].id))
      .then((r) => r.json()))).result.answer;
  check('the streamed text is the model\'s whole answer',
      streamed.length > 0 && streamed === answer,
      JSON.stringify(streamed.slice(0, 80)) + ' vs ' +
      JSON.stringify(String(answer).slice(0, 80)));
  const steps = await page.$$eval('#ask-steps > li', (l) => l.length);
  const labels = await page.$$eval('#ask-answer .claim', (c) =>
    c.map((x) => [x.dataset.label, getComputedStyle(x).backgroundColor]));
  check('ask colours each claim by its verdict', labels.length > 0 &&
      steps === labels.length &&
      labels.every(([l, bg]) => l && bg !== 'rgba(0, 0, 0, 0)'),
  JSON.stringify(labels) + ' steps=' + steps);
  // The stub's answer opens and closes with sentences that cite nothing.
  const unref = await page.$$eval('#ask-answer > span', (s) =>
    s.map((x) => (x.classList.contains('unref') ? 'U:' : 'C:') +
        x.firstChild.textContent.trim()));
  check('the uncited introduction and conclusion are shown as such, ' +
      'in the answer\'s order', unref.length === labels.length + 2 &&
      unref[0] === 'U:Here is what the documents say.' &&
      unref[unref.length - 1] === 'U:More research is needed.' &&
      unref.slice(1, -1).every((t) => t.startsWith('C:')),
  JSON.stringify(unref).slice(0, 300));
  const marked = await page.evaluate(() => window.marks);
  check('every claim was marked in the streamed text with its verdict',
      marked.length === labels.length &&
      marked.every(([l], i) => l === labels[i][0]),
  JSON.stringify(marked).slice(0, 300));
  // PubMedQA ids are PMIDs; MedQuAD documents have their own "url".
  const links = await page.$$eval('#ask-result li[id^="doc-"] a', (a) =>
    a.map((x) => [x.closest('li').id.slice(4), x.href]));
  const pm = /^https:\/\/pubmed\.ncbi\.nlm\.nih\.gov\/(\d+)\/$/;
  check('documents link to PubMed for a PMID, else to their url metadata',
      links.some(([id]) => /^\d+$/.test(id)) &&
      links.some(([id]) => id.startsWith('mq-')) &&
      links.every(([id, h]) => /^\d+$/.test(id) ?
        (h.match(pm) || [])[1] === id : /^https?:/.test(h) && !pm.test(h)),
  JSON.stringify(links).slice(0, 400));
  // The stub's first claim repeats the top document's words: SUPPORT.
  const sel = '#ask-answer .claim.SUPPORT';
  await page.hover(sel);
  const tip = await page.textContent(sel + ' .tip');
  const titles = await page.$$eval('#ask-result li[id^="doc-"] > strong',
      (t) => t.map((x) => x.textContent));
  const pmTitles = await page.$$eval('#ask-result li[id^="doc-"]', (l) =>
    l.filter((x) => /^doc-\d+$/.test(x.id)).map((x) => [x.id.slice(4),
      x.querySelector('strong').textContent,
      x.querySelector('strong').getAttribute('title') || '']));
  check('Ask\'s titleless documents (PubMedQA) show their first sentence ' +
      'as title and a preview on hover', pmTitles.length > 0 &&
      pmTitles.every(([id, t, tip]) => t !== id && t.length > 10 &&
        tip.length > t.length - 2), JSON.stringify(pmTitles.slice(0, 2))
      .slice(0, 300));
  check('hovering a claim shows the cited document and evidence',
      await page.isVisible(sel + ' .tip') &&
      titles.some((t) => tip.includes(t)) &&
      tip.includes('Closest sentence'), tip);
  await page.mouse.move(0, 0);
  await page.locator('#ask-answer .claim').last().focus();
  check('focusing a claim shows it too',
      await page.isVisible('#ask-answer .claim:focus .tip'));
  const tips = await page.$$eval('#ask-answer .claim .tip',
      (t) => t.map((x) => x.textContent).join(' '));
  check('a cited id that was never retrieved shows as NO_REFERENCE',
      /NO_REFERENCE[^]*99999999|99999999[^]*NO_REFERENCE/.test(tips),
      tips.slice(0, 300));
  await page.focus(sel); // the screenshot shows a supported claim's evidence
  await audit(page, 'ask_live', 'Ask with a verified answer');
  await page.focus(sel);
  await docShot(page, 'ask', '#ask-result');
  await a11y(page, 'Ask');
  await askRendering(page);
}

// The Verify page: a pasted text split into sentences (grey while
// pending), each coloured as its claims are judged (the stub's judge:
// SUPPORT on 3+ shared words, CONTRADICT on "not"), the evidence on hover
// and on focus, then the summary.
const VERIFY_TEXT = 'Does the lace plant make holes in its leaves? The ' +
    'lace plant produces perforations in its leaves through programmed ' +
    'cell death. Mitochondria do not change during programmed cell death ' +
    'in the lace plant. Zebras enjoy purple umbrellas on quiet Sundays.';

async function verifyPage(page) {
  await page.goto(base + '/#verify');
  await page.waitForSelector('#verify-mode option:nth-child(2)',
      {state: 'attached', timeout: 20000});
  check('the verify panel shows the server\'s limits',
      (await page.textContent('#verify-k-lim')).includes('default 5'),
      await page.textContent('#verify-k-lim'));
  await a11y(page, 'Verify');
  await audit(page, 'verify', 'Verify');
  await page.fill('#verify-t', VERIFY_TEXT);
  await recordOrder(page, 'verify-result', [
    ['pending', '#verify-text .claim.PENDING'],
    ['judged', '#verify-text .claim.SUPPORT'],
    ['summary', '#verify-summary']]);
  const resp = page.waitForResponse((r) => r.url().endsWith('/v1/verify'));
  await page.click('#verify-btn');
  const r = await resp;
  check('verify queues a run (202)', r.status() === 202, 'status=' + r.status());
  await page.waitForSelector('#verify-summary', {timeout: 120000});
  const order = await page.evaluate(() => window.order);
  check('the sentences show pending, then coloured as judged, then the ' +
      'summary', order.join(',') === 'pending,judged,summary',
  order.join(','));
  const labels = await page.$$eval('#verify-text > .claim', (c) =>
    c.map((x) => [x.dataset.label, getComputedStyle(x).backgroundColor]));
  const bg = Object.fromEntries(labels);
  check('verify colours every sentence by its status',
      labels.map((l) => l[0]).join(',') ===
      'NOT_A_CLAIM,SUPPORT,CONTRADICT,NO_EVIDENCE' &&
      new Set(Object.values(bg)).size === 4 &&
      labels.every(([, b]) => b !== 'rgba(0, 0, 0, 0)'),
  JSON.stringify(labels));
  const sel = '#verify-text .claim.SUPPORT';
  await page.hover(sel);
  const tip = await page.textContent(sel + ' .tip');
  const hrefs = await page.$$eval(sel + ' .tip a', (a) => a.map((x) => x.href));
  check('hovering a sentence shows its evidence sentence and link',
      await page.isVisible(sel + ' .tip') && tip.includes('Closest sentence') &&
      tip.includes('produces perforations in its leaves through PCD') &&
      hrefs.includes('https://pubmed.ncbi.nlm.nih.gov/21645374/'),
  tip + ' ' + hrefs.join(' '));
  await page.mouse.move(0, 0);
  await page.locator('#verify-text .claim.CONTRADICT').focus();
  check('focusing a sentence shows it too',
      await page.isVisible('#verify-text .claim:focus .tip'));
  check('the summary counts the verdicts, and nothing stray follows it',
      (await page.textContent('#verify-summary')).includes('1 SUPPORT') &&
      !(await page.textContent('#verify-panel')).includes('null'),
      await page.textContent('#verify-panel'));
  await page.focus(sel);
  await audit(page, 'verify_live', 'Verify with a verified text');
  await page.focus(sel);
  await docShot(page, 'verify', '#verify-result');
  await a11y(page, 'Verify with a verified text');
}

// The Check page's rendering of a result's documented
// "correction_evidence" (check --verify-correction; a server verifies
// corrections when it has an --nli verifier): both verdicts and each
// document beside the diff.
async function checkEvidenceRendering(page) {
  await page.goto(base + '/#check');
  const sample = {error_flag: 1, error_sentence_id: 1,
    error_sentence: 'Statins raise LDL cholesterol.',
    corrected_sentence: 'Statins lower LDL cholesterol.',
    corrected_text: 'Statins lower LDL cholesterol.', strategy: 'single',
    usage: {}, fallback: false,
    correction_evidence: {verdict_corrected: 'SUPPORT',
      verdict_original: 'CONTRADICT', strongest: true, source: 'run',
      evidence: [{doc: '1003', title: 'Statins', url:
        'https://pubmed.ncbi.nlm.nih.gov/1003/',
      corrected: {label: 'SUPPORT', score: 0.9,
        sentence: 'Statins lower LDL cholesterol.'},
      original: {label: 'CONTRADICT', score: 0.85, sentence: null}}]}};
  await page.evaluate(async (r) => {
    const m = await import('/js/check.js');
    document.getElementById('check-result').replaceChildren(
        m.renderCheckResult(r, null));
  }, sample);
  const t = await page.textContent('#check-evidence');
  const link = await page.$eval('#check-evidence a', (a) => a.href);
  check('the Check page shows the correction\'s evidence beside the diff',
      await page.isVisible('#check-diff') &&
      t.includes('The correction: SUPPORT; the original: CONTRADICT') &&
      t.includes('the strongest case') && t.includes('Statins') &&
      link === 'https://pubmed.ncbi.nlm.nih.gov/1003/', t);
  await audit(page, 'check_evidence', 'Check with a correction\'s evidence');
}

// The Ask page's rendering of the documented /v1/ask JSON (whatever the
// route answers today): one claim of each verdict, coloured, with the
// cited document's title and closest sentence on hover and on focus.
const SAMPLE = {question: 'How is gout treated?',
  answer: 'Gout is treated with colchicine [d1]. ...',
  claims: [
    {text: 'Gout is treated with colchicine.', refs: ['d1'], label: 'SUPPORT',
      verdicts: [{doc_id: 'd1', label: 'SUPPORT', score: 0.93,
        evidence_sentence: 'Colchicine relieves gout flares.'}]},
    {text: 'Gout never recurs.', refs: ['d2'], label: 'CONTRADICT',
      verdicts: [{doc_id: 'd2', label: 'CONTRADICT', score: 0.88,
        evidence_sentence: 'Gout attacks often recur.'}]},
    {text: 'Cherries cure gout.', refs: ['d1'], label: 'NO_EVIDENCE',
      verdicts: [{doc_id: 'd1', label: 'NO_EVIDENCE', score: 0.7,
        evidence_sentence: null}]},
    {text: 'Gout is a virus.', refs: ['x9'], label: 'NO_REFERENCE',
      verdicts: [{doc_id: 'x9', label: 'NO_REFERENCE', score: 0,
        evidence_sentence: null}]}],
  documents: [{doc_id: 'd1', title: 'Gout treatment', score: 1.2},
    {doc_id: 'd2', title: 'Gout recurrence', score: 0.9}]};

async function askRendering(page) {
  await page.evaluate(async (sample) => {
    const m = await import('/js/ask.js');
    const out = document.getElementById('ask-result');
    out.replaceChildren(m.renderAsk(sample));
  }, SAMPLE);
  const colours = await page.$$eval('#ask-answer .claim', (c) =>
    c.map((x) => x.dataset.label + '=' + getComputedStyle(x).backgroundColor));
  check('claims are green, red, orange and grey by verdict',
      colours.join(' ') === 'SUPPORT=rgb(218, 251, 225) ' +
      'CONTRADICT=rgb(255, 235, 233) NO_EVIDENCE=rgb(255, 241, 214) ' +
      'NO_REFERENCE=rgb(230, 233, 237)', colours.join(' '));
  await page.hover('#ask-answer .claim.SUPPORT');
  const tip = await page.textContent('#ask-answer .claim.SUPPORT .tip');
  check('hovering a claim shows the cited title and closest sentence',
      await page.isVisible('#ask-answer .claim.SUPPORT .tip') &&
      tip.includes('Gout treatment') &&
      tip.includes('Colchicine relieves gout flares.'), tip);
  await page.mouse.move(0, 0);
  await page.focus('#ask-answer .claim.CONTRADICT');
  check('focusing a claim with the keyboard shows its evidence too',
      await page.isVisible('#ask-answer .claim.CONTRADICT .tip'));
  const links = await page.$$eval('#ask-answer .claim.SUPPORT a',
      (a) => a.map((x) => x.getAttribute('href')));
  check('claims link to their documents', links.includes('#doc-d1'),
      links.join(','));
  await shot(page, 'ask_claims');
}

// A score run made through the API from the page, then its report inline.
async function runs(page) {
  const run = await page.evaluate(async () => {
    const ref = 'Text ID,Text,Sentences,Error Flag,Error Sentence ID,' +
        'Error Sentence,Corrected Sentence,Corrected Text\n' +
        'ms-1,t,"0 A. 1 B.",1,1,B.,The patient was given metformin.,t\n' +
        'ms-2,t,"0 A.",0,-1,NA,NA,t\n';
    const sub = 'ms-1 1 1 The patient was given insulin.\nms-2 0 -1 NA\n';
    const r = await fetch('/v1/score', {method: 'POST', headers: {
      'Content-Type': 'application/json',
      'X-CSRF-Token': sessionStorage.getItem('medtrust.csrf')},
    body: JSON.stringify({reference: ref, submission: sub, name: 'demo'})});
    return (await r.json()).run_id;
  });
  await page.goto(base + '/#runs');
  await page.waitForSelector('#runs-table tbody tr');
  const kinds = await page.$$eval('#runs-table tbody tr td:nth-child(2)',
      (t) => t.map((x) => x.textContent));
  check('runs lists the check and score runs', kinds.includes('check') &&
      kinds.includes('score'), kinds.join(','));
  await page.waitForFunction(() => [...document.querySelectorAll(
      '#runs-table tbody td:nth-child(7)')].some((t) =>
    t.textContent.includes('aggregate')));
  const sums = await page.$$eval('#runs-table tbody td:nth-child(7)',
      (t) => t.map((x) => x.textContent));
  check('a score without BERTScore and BLEURT says its aggregate is ' +
      'ROUGE-only, not official', sums.some((t) =>
    t.includes('aggregate (ROUGE-only, not official)')), sums.join(' | '));
  await page.click('button[aria-label="Open run ' + run + '"]');
  await page.waitForSelector('#run-report');
  const frame = await (await page.$('#run-report')).contentFrame();
  await frame.waitForSelector('svg', {timeout: 10000});
  const charts = await frame.$$eval('svg', (s) => s.length);
  check('a score run shows its HTML report inline', charts > 0,
      'charts=' + charts);
  await audit(page, 'runs', 'Runs with a report');
  await a11y(page, 'Runs');
}

// Batch evaluation: a MEDEC CSV uploaded, progress to 3 of 3, the score
// report with its charts and a table per error type; then a slower batch
// cancelled after its first note and resumed to the end.
async function startBatch(page, strategy, scores, model, csvFile) {
  await page.goto(base + '/#batch');
  await page.waitForFunction(() =>
    document.getElementById('batch-data-lim').textContent.length > 0);
  await page.setInputFiles('#batch-data', csvFile || medecCsv);
  // bleurt.txt and bertscore.txt lie beside the CSV (0.25 and 0.75 a note)
  for (const f of scores ? ['bleurt', 'bertscore'] : []) {
    await page.setInputFiles('#batch-' + f,
        path.join(path.dirname(medecCsv), f + '.txt'));
  }
  await page.selectOption('#batch-strategy', strategy);
  await page.selectOption('#batch-model', model || '');
  const resp = page.waitForResponse((r) => r.url().endsWith('/v1/batch'));
  await page.click('#batch-btn');
  const r = await resp;
  const sent = r.request().postDataJSON();
  check('the batch request names the model chosen (' + (model || 'the ' +
      'default') + ')', model ? sent.model === model : !('model' in sent),
  JSON.stringify(sent.model));
  return (await r.json()).run_id;
}

async function batchReport(page) {
  await page.waitForSelector('#batch-report iframe', {timeout: 120000});
  const frame = await (await page.$('#batch-report iframe')).contentFrame();
  await frame.waitForSelector('svg', {timeout: 10000});
  return frame.$$eval('svg', (x) => x.length);
}

async function batch(page) {
  const lim = await page.evaluate(() => fetch('/v1/limits').then((r) =>
    r.json()));
  const first = await startBatch(page, 'single', true, 'stub-b');
  const charts = await batchReport(page);
  const bar = await page.$eval('#batch-progress', (p) => p.value + '/' + p.max);
  const types = await page.$$eval('#batch-report caption', (c) =>
    c.map((x) => x.textContent));
  check('a batch upload checks every note and shows the score report',
      charts > 0 && bar === '3/3' && types.includes('By error type'),
      'charts=' + charts + ' bar=' + bar + ' ' + types.join(','));
  const scored = await page.evaluate((i) => fetch('/v1/runs/' + i)
      .then((r) => r.json()), first);
  const rows = await page.$$eval('#batch-report tr', (t) =>
    t.map((x) => x.textContent));
  const c = (scored.result || {}).composite || {};
  check('uploaded BERTScore and BLEURT files feed the score report',
      scored.result.bertscore_model === 'per-pair scores file' &&
      typeof c.bertscore === 'number' && typeof c.bleurt === 'number' &&
      rows.some((r) => r.startsWith('BERTScore')) &&
      rows.some((r) => r.startsWith('BLEURT')), JSON.stringify(c) + ' ' +
      rows.join(' | '));
  check('with BERTScore and BLEURT the aggregate is the official three',
      rows.some((r) => r.startsWith('Aggregate (ROUGE-1, BERTScore, BLEURT)')),
      rows.join(' | '));
  await batchDownloads(page, first, true);
  check('the batch page says the server\'s upload limits',
      (await page.textContent('#batch-data-lim')).includes(
          String(lim.batch.notes_max) + ' notes'));
  await audit(page, 'batch', 'Batch with its report');
  const id = await startBatch(page, 'react-reflex');
  await page.waitForFunction(() =>
    Number(document.getElementById('batch-progress').value) >= 1,
  null, {timeout: 60000});
  await page.click('#batch-cancel');
  await page.waitForFunction(() => document.getElementById('batch-msg')
      .textContent.includes('cancelled'), null, {timeout: 60000});
  check('Cancel stops a batch and offers Resume',
      await page.isVisible('#batch-resume') &&
      await page.isHidden('#batch-cancel'));
  await audit(page, 'batch_error', 'Batch with an error shown');
  await page.click('#batch-resume');
  await batchReport(page);
  const run = await page.evaluate((i) => fetch('/v1/runs/' + i).then((r) =>
    r.json()), id);
  check('a resumed batch keeps the notes it had checked',
      run.status === 'done' && run.result.batch.resumed >= 1 &&
      run.result.batch.notes === 3, JSON.stringify(run.result &&
          run.result.batch));
  check('a resumed batch that completes has no "cancelled after" error',
      !run.error && !(await page.textContent('#batch-msg')),
      JSON.stringify(run.error));
  await unlabeledBatch(page);
}

// The run's downloads: the submission (a MEDIQA-CORR line a note), the
// traces (a JSON line a note, with its trajectory) and the report, each
// an attachment; fetched as the page's links would.
async function batchDownloads(page, id, labeled) {
  const links = await page.$$eval('#batch-downloads a', (a) =>
    a.map((x) => x.getAttribute('href')));
  const want = ['submission', 'traces'].concat(labeled ? ['report'] : [])
      .map((w) => '/v1/runs/' + id + '/' + w);
  check('the batch offers its ' + want.length + ' downloads',
      links.join(',') === want.join(','), links.join(','));
  const got = await page.evaluate(async (urls) => Promise.all(urls.map(
      async (u) => {
        const r = await fetch(u);
        return [r.status, r.headers.get('content-disposition') || '',
          await r.text()];
      })), want.slice(0, 2));
  const sub = got[0][2].trim().split('\n');
  const traces = got[1][2].trim().split('\n').map((l) => JSON.parse(l));
  check('the submission downloads: a MEDIQA-CORR line for each note',
      got[0][0] === 200 && /attachment; filename="run-\d+-submission.txt"/
          .test(got[0][1]) && sub.length === 3 &&
      sub.every((l) => /^\S+ [01] -?\d+ /.test(l)), got[0].join(' | ')
      .slice(0, 300));
  check('the traces download: a JSON line for each note with its ' +
      'trajectory', got[1][0] === 200 && /\.jsonl"/.test(got[1][1]) &&
      traces.length >= 3 && traces.every((t) => t.id &&
        Array.isArray(t.trace) && t.trace.length > 0),
  got[1][1] + ' ' + got[1][2].slice(0, 200));
}

// A CSV without gold columns: checked, downloadable, not scored.
async function unlabeledBatch(page) {
  const csv = medecCsv.replace(/\.csv$/, '-unlabeled.csv');
  const id = await startBatch(page, 'single', false, '', csv);
  await page.waitForSelector('#batch-downloads', {timeout: 120000});
  const run = await page.evaluate((i) => fetch('/v1/runs/' + i).then((r) =>
    r.json()), id);
  check('an unlabeled CSV (Text ID and Text) is checked, not scored',
      run.status === 'done' && run.result.labeled === false &&
      run.result.batch.notes === 3 && await page.isVisible('#batch-unlabeled') &&
      await page.$('#batch-report') === null, JSON.stringify(run).slice(0, 300));
  await batchDownloads(page, id, false);
  await audit(page, 'batch_unlabeled', 'Batch of unlabeled notes');
}

async function settings(page) {
  await page.goto(base + '/#settings');
  await page.waitForSelector('#set-users table');
  const users = await page.textContent('#set-users');
  const models = await page.textContent('#set-models');
  const corpora = await page.textContent('#set-sources');
  check('settings list users, models and corpora', users.includes('carol') &&
      models.includes('openai:') && corpora.includes('pubmedqa'),
  [users, models, corpora].join(' | ').slice(0, 300));
  await page.click('#set-reg');
  await page.waitForFunction(() =>
    document.getElementById('set-reg-status').textContent.includes('closed'));
  expected.push({path: '/v1/register', status: 403});
  const r = await page.evaluate(async () => {
    const res = await fetch('/v1/register', {method: 'POST',
      headers: {'Content-Type': 'application/json'},
      body: JSON.stringify({username: 'dave', password: 'dave-password'})});
    await res.text();
    return res.status;
  });
  check('the admin closes registration from settings', r === 403,
      'status=' + r);
  await page.click('#set-reg');
  await page.waitForFunction(() =>
    document.getElementById('set-reg-status').textContent.includes('open'));
  await audit(page, 'settings', 'Settings');
  await a11y(page, 'Settings');
}

let page = null;

// After the server restarted on the same store: carol's defaults are
// still hers, the admin's panel has the server's.
async function afterRestart() {
  check('carol logs in again after the restart',
      await logIn(page, 'carol', 'carol-password'));
  await page.goto(base + '/#check');
  check('per-user defaults survive a server restart', await mineShown(page),
      await page.textContent('#check-settings-now'));
  check('log out', await logOut(page));
  check('the admin logs in', await logIn(page, 'admin', adminPw));
  await page.goto(base + '/#check');
  await page.waitForFunction(() =>
    document.getElementById('check-k-lim').textContent.length > 0);
  const v = await page.evaluate(() => ['check-rounds', 'check-source']
      .map((id) => document.getElementById(id).value)
      .concat(document.getElementById('check-fallbacks').checked).join(','));
  check('another user\'s panel keeps the server\'s defaults', v === '5,,false',
      v);
  check('no console errors after the restart', errors.length === 0,
      errors.join(' | '));
}

async function main() {
  fs.mkdirSync(shots, {recursive: true});
  const ctx = await pw.chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    viewport: {width: 1280, height: HEIGHT},
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic',
      '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
  page = ctx.pages()[0] || await ctx.newPage();
  page.setDefaultTimeout(20000);
  watch(page);
  if (mode === 'after-restart') {
    await afterRestart();
    await ctx.close();
    return;
  }
  await register(page, 'carol', 'carol-password');
  check('log out returns to the login page', await logOut(page));
  await loginError(page);
  check('log in with the form', await logIn(page, 'carol', 'carol-password'));
  await collapsedSettings(page);
  await search(page);
  await checks(page);
  await failedChecks(page);
  await confidenceRendering(page);
  await cancelCheck(page);
  await ask(page);
  await verifyPage(page);
  await checkEvidenceRendering(page);
  await batch(page);
  await runs(page);
  await userDefaults(page);
  check('log out', await logOut(page));
  check('the admin logs in', await logIn(page, 'admin', adminPw));
  await settings(page);
  check('the admin logs out', await logOut(page));
  const r = await page.goto(base + '/');
  await page.waitForURL(/\/login$/, {timeout: 10000});
  check('after logout the app sends you to the login page', r.ok());
  // The icon is inline: a page that moves on at once (logged out, just
  // logged in) has no icon request to abort (favicon.svg ERR_ABORTED).
  const icon = await page.$eval('link[rel="icon"]', (l) => l.href);
  check('the login page\'s icon is inline, so no icon request is made ' +
      'or aborted', icon.startsWith('data:image/svg+xml,') &&
      icons.length === 0, icon.slice(0, 40) + ' ' + icons.join(','));
  check('no console errors', errors.length === 0, errors.join(' | '));
  await ctx.close();
}

main().then(() => process.exit(failed ? 1 : 0), async (e) => {
  console.log('not ok - browser run: ' + String(e).split('\n')[0]);
  if (errors.length) console.log('# console: ' + errors.join(' | '));
  if (page) await shot(page, 'failure').catch(() => {});
  process.exit(1);
});
