// Verify page: paste or upload any medical text; POST /v1/verify queues a
// run whose events show the text split into sentences (grey while
// pending), then each sentence coloured as its claims are judged
// (SUPPORT green, CONTRADICT and MISQUOTED red, NO_EVIDENCE and FAILED
// orange, NO_REFERENCE and NOT_A_CLAIM grey); hovering or focusing a sentence
// shows its claims' evidence: the document, its verdict and score, the
// closest sentence and its link. The settings panel is Ask's.
import {applyMine, collapse, common, val, years} from './collapse.js';
import {api, errorText, fillSources} from './api.js';
import {$, clear, el} from './dom.js';
import {followRun} from './check.js';
import {addFilters, boundFilters, mountFilters} from './filters.js';
import {bound, limits, model, offerModels} from './limits.js';
import {showWeight} from './search.js';

const LABELS = {
  SUPPORT: 'supported by a document',
  CONTRADICT: 'contradicted by a document',
  MISQUOTED: 'a quotation not found verbatim in the cited document',
  NO_EVIDENCE: 'no document supports or contradicts it',
  NO_REFERENCE: 'cites a document the store does not hold',
  FAILED: 'the verifier failed: no verdict',
  NOT_A_CLAIM: 'a question, heading or fragment: not checked',
};

function evidenceItem(e) {
  return el('li', {},
      el('span', {class: 'label-' + e.label}, e.label), ' ',
      el('strong', {}, e.title || e.doc), e.cited ? ' (cited)' : '',
      typeof e.score === 'number' && e.label !== 'NO_REFERENCE' ?
        ', score ' + e.score.toFixed(2) : '',
      e.url ? [' ', el('a', {href: e.url, target: '_blank',
        rel: 'noopener'}, e.doc)] : '',
      e.sentence ? el('div', {}, el('span', {class: 'muted'},
          'Closest sentence: '), '“' + e.sentence + '”') : null,
      e.error ? el('div', {class: 'muted'}, e.error) : null);
}

function claimItem(c) {
  return el('li', {},
      el('span', {class: 'label-' + c.verdict}, c.verdict), ': ', c.text,
      (c.quotes || []).map((q) => el('div', {class: 'muted'},
          'Quote ' + q.status.toLowerCase().replace('_', ' ') + ': “' +
          q.text + '”')),
      c.error ? el('div', {class: 'muted'}, c.error) : null,
      el('ul', {}, (c.evidence || []).map(evidenceItem)));
}

// One sentence, coloured by its status, its claims' evidence in a tip.
function sentenceNode(s, i) {
  const tipId = 'verify-tip-' + i;
  const status = s.status || 'PENDING';
  const tip = el('span', {class: 'tip', role: 'tooltip', id: tipId},
      el('span', {class: 'label-' + status}, status), ': ',
      LABELS[status] || 'being verified',
      (s.claims || []).length ? el('ul', {}, s.claims.map(claimItem)) : null);
  return el('span', {class: 'claim ' + status, tabindex: '0',
    'data-index': String(i), 'data-label': status,
    'aria-describedby': tipId}, s.text, tip);
}

function legend() {
  return el('ul', {class: 'legend', 'aria-label': 'Colour legend'},
      Object.keys(LABELS).map((k) =>
        el('li', {}, el('span', {class: 'claim ' + k}, k), ' ' + LABELS[k])));
}

// The text as sentences: set(i, s) replaces sentence i as it is judged.
function textView() {
  const box = el('div', {class: 'answer', id: 'verify-text'});
  return {
    node: box,
    split: (sents) => {
      clear(box);
      sents.forEach((s, i) => box.append(sentenceNode(s, i), ' '));
    },
    set: (i, s) => {
      const old = box.querySelector('[data-index="' + i + '"]');
      if (old) old.replaceWith(sentenceNode(s, i));
    },
  };
}

function summary(r) {
  const sm = r.summary || {};
  const parts = Object.keys(sm).filter((k) => sm[k] > 0)
      .map((k) => sm[k] + ' ' + k);
  return el('p', {id: 'verify-summary'}, 'Summary: ' +
      (parts.length ? parts.join(', ') : 'nothing to verify') +
      (r.search ? ' (' + r.search + ' search).' : '.'));
}

let hasVectors = false;
const showWeights = () => showWeight('verify-w', 'verify-w-val', hasVectors);

function verifyBody(text) {
  const body = {text};
  const num = (id) => parseInt($(id).value, 10);
  if (num('verify-k')) body.k = num('verify-k');
  if (hasVectors) {
    const sem = Number($('verify-w').value) / 100;
    body.w_lex = Math.round((1 - sem) * 100) / 100;
    body.w_sem = sem;
  }
  if ($('verify-source').value) body.source = $('verify-source').value;
  if (num('verify-year-from')) body.year_from = num('verify-year-from');
  if (num('verify-year-to')) body.year_to = num('verify-year-to');
  if ($('verify-mode').value) body.search_mode = $('verify-mode').value;
  if ($('verify-decompose').checked) body.decompose = true;
  if (model('verify')) body.model = model('verify');
  return addFilters('verify', body);
}

function finish(msg) {
  $('verify-btn').disabled = false;
  $('verify-status').textContent = '';
  if (msg) $('verify-msg').textContent = msg;
}

async function submit(ev) {
  ev.preventDefault();
  const text = $('verify-t').value;
  const out = clear($('verify-result'));
  $('verify-msg').textContent = '';
  $('verify-status').textContent = 'Verifying…';
  $('verify-btn').disabled = true;
  const res = await api('POST', '/v1/verify', verifyBody(text));
  if (!res.ok) {
    finish(errorText(res));
    return;
  }
  const view = textView();
  const panel = el('div', {class: 'panel', id: 'verify-panel',
    'aria-busy': 'true'}, el('h2', {}, 'Sentences'), legend(), view.node);
  out.append(panel);
  let judged = 0;
  const onStep = (st) => {
    if (st.step === 'sentences') view.split(st.sentences || []);
    if (st.step === 'sentence' && st.sentence) view.set(st.index, st.sentence);
    if (st.step === 'claim') {
      judged++;
      $('verify-status').textContent = judged + ' claim' +
          (judged > 1 ? 's' : '') + ' judged…';
    }
  };
  followRun(res.data.run_id, onStep, (s) => {
    $('verify-status').textContent = 'Run ' + res.data.run_id + ': ' + s + '…';
  }, (run) => {
    panel.setAttribute('aria-busy', 'false');
    if (run.status === 'done') {
      view.split(run.result.sentences || []);
      panel.append(summary(run.result));
      if ((run.result.notes || []).length) {
        panel.append(el('div', {class: 'msg info'},
            'Notes: ' + run.result.notes.join(' ')));
      }
      finish('');
    } else {
      finish(run.error || 'the verification failed');
    }
  });
}

// An uploaded file's text goes into the text box.
async function upload() {
  const f = $('verify-file').files[0];
  if (f) $('verify-t').value = await f.text();
}

// The Verify settings in one line.
function describe() {
  return ['top ' + val('verify-k') + ' a claim',
    val('verify-mode') || 'mode as the index allows',
    val('verify-source') ? 'source ' + val('verify-source') : 'all sources',
    years('verify-year-from', 'verify-year-to'),
    $('verify-decompose').checked ? 'atomic claims' : 'whole sentences']
      .concat(common('verify'));
}

export async function initVerify() {
  mountFilters('verify');
  const summarize = collapse('verify', describe);
  $('verify-form').addEventListener('submit', submit);
  $('verify-file').addEventListener('change', upload);
  $('verify-w').addEventListener('input', showWeights);
  const [lim, models] = await Promise.all([limits(), api('GET', '/v1/models'),
    fillSources($('verify-source'))]);
  hasVectors = models.ok && !!models.data.embedder;
  $('verify-w').disabled = !hasVectors;
  const af = lim ? lim.ask.fields : {};
  const vf = lim && lim.verify ? lim.verify.fields : {};
  bound('verify-k', 'verify-k-lim', vf.k);
  bound('verify-year-from', 'verify-year-from-lim', af.year_from, true);
  bound('verify-year-to', 'verify-year-to-lim', af.year_to, true);
  if (af.w_sem && hasVectors) {
    $('verify-w').value = String(Math.round(af.w_sem.default * 100));
  }
  showWeights();
  summarize();
  if (!lim) return;
  if (lim.verify) $('verify-t').maxLength = lim.verify.text_bytes;
  boundFilters('verify', lim.ask.filter_bytes);
  const modes = lim.ask.modes || ['bm25'];
  for (const m of modes) $('verify-mode').append(el('option', {value: m}, m));
  $('verify-mode-lim').textContent = 'This index serves ' + modes.join(', ') +
      (modes.length > 1 ? '; default hybrid.' : ' only (no vectors).');
  offerModels('verify', lim);
  await applyMine('verify'); // the user's own defaults, within the limits
  showWeights();
  summarize();
}
