// Settings collapsed behind one "Settings" control (a <details>, as
// VerifAI's configuration window) whose summary line says the values in
// force, kept up to date as they change.
import {$, el} from './dom.js';
import {api, errorText} from './api.js';

// 'prefix'-settings becomes a collapsed panel; describe() returns the
// current values as short phrases.
export function collapse(prefix, describe) {
  const box = $(prefix + '-settings');
  const sum = $(prefix + '-settings-sum');
  const now = el('span', {class: 'now', id: prefix + '-settings-now'});
  sum.replaceChildren('Settings', ': ', now);
  const update = () => {
    now.textContent = describe().filter(Boolean).join(' · ');
  };
  box.addEventListener('input', update);
  box.addEventListener('change', update);
  saveButton(prefix);
  update();
  return update;
}

// The value of input 'id' when it has one, for a phrase.
export function val(id) {
  const e = $(id);
  return e && !e.disabled && e.value !== '' ? e.value : '';
}

// The phrases every panel shares: the metadata filters and the weights
// of panel 'p' (its P-author, P-journal, P-pubtype and P-w inputs).
export function common(p) {
  const f = [['author', p + '-author'], ['journal', p + '-journal'],
    ['type', p + '-pubtype']].filter(([, id]) => val(id))
      .map(([k, id]) => k + ' “' + val(id) + '”');
  const w = $(p + '-w');
  const sem = w && !w.disabled ? Number(w.value) : null;
  return f.concat(sem === null ? ['lexical only'] :
    ['lexical ' + (100 - sem) + '% / semantic ' + sem + '%']);
}

// "from 1990 to 2015", "from 1990", "to 2015" or nothing.
export function years(from, to) {
  const a = val(from);
  const b = val(to);
  if (!a && !b) return '';
  return 'years ' + (a || '…') + ' to ' + (b || '…');
}

// ==== Per-user defaults (GET and PUT /v1/me/settings) ====

// Each panel's settings by the server's names: the input's id, and
// whether it holds a number (the weight slider holds w_sem in percent).
const FIELDS = {
  search: {k: 'search-k', source: 'search-source', author: 'search-author',
    journal: 'search-journal', publication_type: 'search-pubtype',
    w_sem: 'search-w'},
  ask: {k: 'ask-k', year_from: 'ask-year-from', year_to: 'ask-year-to',
    source: 'ask-source', search_mode: 'ask-mode', author: 'ask-author',
    journal: 'ask-journal', publication_type: 'ask-pubtype',
    model: 'ask-model', w_sem: 'ask-w'},
  verify: {k: 'verify-k', year_from: 'verify-year-from',
    year_to: 'verify-year-to', source: 'verify-source',
    search_mode: 'verify-mode', author: 'verify-author',
    journal: 'verify-journal', publication_type: 'verify-pubtype',
    model: 'verify-model', w_sem: 'verify-w'},
  check: {strategy: 'check-strategy', max_steps: 'check-steps',
    max_rounds: 'check-rounds', accept_mean: 'check-mean',
    accept_min: 'check-min', retrieve_k: 'check-retrieve',
    rerank_k: 'check-k', year_from: 'check-year-from',
    year_to: 'check-year-to', source: 'check-source',
    search_mode: 'check-mode', author: 'check-author',
    journal: 'check-journal', publication_type: 'check-pubtype',
    model: 'check-model', w_sem: 'check-w',
    allow_fallbacks: 'check-fallbacks'},
};

let saved = null;
function mine() {
  if (!saved) {
    saved = api('GET', '/v1/me/settings').then((r) =>
      (r.ok ? r.data.settings : {}));
  }
  return saved;
}

// Panel p's values as the server takes them (empty ones left out).
function collect(p) {
  const out = {};
  for (const [k, id] of Object.entries(FIELDS[p])) {
    const e = $(id);
    if (!e || e.disabled || e.value === '' || e.closest('[hidden]')) continue;
    if (k === 'w_sem') out[k] = Number(e.value) / 100;
    else if (e.type === 'checkbox') out[k] = e.checked ? 1 : 0;
    else if (e.type === 'number') out[k] = Number(e.value);
    else out[k] = e.value;
  }
  return out;
}

// Puts the user's saved defaults for panel p into its inputs (after the
// page set the server's defaults and limits), then tells the page.
export async function applyMine(p) {
  const d = (await mine())[p] || {};
  for (const [k, v] of Object.entries(d)) {
    const e = $(FIELDS[p][k] || '');
    if (!e || e.disabled) continue;
    if (e.type === 'checkbox') e.checked = !!v;
    else e.value = k === 'w_sem' ? String(Math.round(v * 100)) : String(v);
    e.dispatchEvent(new Event(e.tagName === 'SELECT' ||
        e.type === 'checkbox' ? 'change' : 'input', {bubbles: true}));
  }
}

// A "Save as my defaults" button at the end of panel p's settings.
export function saveButton(p) {
  const msg = el('p', {class: 'hint', id: p + '-save-msg', role: 'status'});
  const btn = el('button', {type: 'button', class: 'secondary',
    id: p + '-save'}, 'Save as my defaults');
  btn.addEventListener('click', async () => {
    const res = await api('PUT', '/v1/me/settings', {[p]: collect(p)});
    msg.textContent = res.ok ? 'Saved: these are your defaults from now ' +
        'on, on any device.' : errorText(res);
    if (res.ok) saved = Promise.resolve(res.data.settings);
  });
  $(p + '-settings').append(el('div', {class: 'row'}, btn), msg);
}
