// The app shell: checks the session (GET /v1/session, which answers 200
// logged in or not, so no request fails before login; logged out goes to
// the login page), keeps
// the CSRF token, switches pages on the URL's #fragment, and logs out.
import {api, errorText, setCsrf} from './api.js';
import {$} from './dom.js';
import {initSearch} from './search.js';
import {initCheck} from './check.js';
import {initAsk} from './ask.js';
import {initVerify} from './verify.js';
import {initBatch} from './batch.js';
import {initRuns, loadRuns} from './runs.js';
import {initSettings, loadSettings} from './settings.js';

const PAGES = ['search', 'check', 'ask', 'verify', 'batch', 'runs',
  'settings'];
let me = null;

function show() {
  let page = location.hash.slice(1);
  if (!PAGES.includes(page)) page = 'search';
  for (const s of document.querySelectorAll('main > section[data-page]')) {
    s.hidden = s.dataset.page !== page;
  }
  for (const a of document.querySelectorAll('nav.tabs a')) {
    if (a.dataset.page === page) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  document.title = 'medtrust: ' + page;
  if (page === 'runs') loadRuns();
  if (page === 'settings') loadSettings(me);
}

async function start() {
  const res = await api('GET', '/v1/session');
  if (res.ok && !res.data.authenticated) {
    location.href = '/login';
    return;
  }
  if (!res.ok) {
    $('app-msg').textContent = errorText(res);
    return;
  }
  me = res.data;
  setCsrf(me.csrf_token);
  $('who').textContent = me.username + (me.role === 'admin' ? ' (admin)' : '');
  // The pages' first loads (sources, models, limits) finish before a
  // log out leaves the page (at most 3 s), so none is cut off mid-flight.
  const loads = [];
  $('logout').addEventListener('click', async () => {
    await Promise.race([Promise.allSettled(loads),
      new Promise((r) => setTimeout(r, 3000))]);
    await api('POST', '/v1/logout');
    setCsrf('');
    location.href = '/login';
  });
  loads.push(initCheck(), initAsk(), initVerify(), initBatch());
  initRuns(me);
  initSettings();
  window.addEventListener('hashchange', show);
  show();
  loads.push(initSearch());
  await Promise.allSettled(loads);
}

start();
