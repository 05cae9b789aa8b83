// Ask page: POST /v1/ask queues a run; the answer streams in as the model
// writes it (the run's "token" events), each claim shows as it is verified
// (its "step" events), then the answer's claims are coloured by
// their verdict (SUPPORT green, CONTRADICT red, NO_EVIDENCE orange,
// NO_REFERENCE grey) and, on hover or keyboard focus, show each cited
// document's title and its closest sentence. A refusal (no model
// configured, bad input) shows the server's own words.
import {api, errorText, fillSources} from './api.js';
import {$, clear, docHref, el, previewOf, titleOf} from './dom.js';
import {followRun} from './check.js';
import {addFilters, boundFilters, mountFilters} from './filters.js';
import {bound, limits, model, offerModels} from './limits.js';
import {applyMine, collapse, common, val, years} from './collapse.js';
import {showWeight} from './search.js';
import {liveAnswer} from './stream.js';

const LABELS = {
  SUPPORT: 'supported', CONTRADICT: 'contradicted',
  NO_EVIDENCE: 'no evidence in the cited document',
  NO_REFERENCE: 'cites a document that was not retrieved',
  UNVERIFIED: 'not verified',
};

// A link to a retrieved document in the list below the answer; a cited
// id that was not retrieved (NO_REFERENCE) has nothing to link to.
function docLink(id, docs) {
  if (!docs.has(id)) return el('span', {class: 'muted'}, id);
  return el('a', {href: '#doc-' + encodeURIComponent(id),
    'data-doc': id}, id);
}

function verdictItem(v, docs) {
  const d = docs.get(v.doc_id) || {};
  return el('li', {},
      el('span', {class: 'label-' + v.label}, v.label), ' ',
      el('strong', {}, d.doc_id ? titleOf(d) : v.doc_id), ' (',
      docLink(v.doc_id, docs), ')',
      typeof v.score === 'number' ? ', score ' + v.score.toFixed(2) : '',
      v.evidence_sentence ? el('div', {}, el('span', {class: 'muted'},
          'Closest sentence: '), '“' + v.evidence_sentence + '”') : null);
}

function claimNode(c, i, docs) {
  const tipId = 'claim-tip-' + i;
  const label = c.label || 'UNVERIFIED';
  const refs = (c.refs || []).map((r) => ['[', docLink(r, docs), ']']);
  const tip = el('span', {class: 'tip', role: 'tooltip', id: tipId},
      el('span', {class: 'label-' + label}, label), ': ', LABELS[label] || '',
      el('ul', {}, (c.verdicts || []).map((v) => verdictItem(v, docs))));
  return el('span', {class: 'claim ' + label, tabindex: '0',
    'data-label': label, 'aria-describedby': tipId},
  c.text, ' ', refs, tip);
}

function legend() {
  return el('ul', {class: 'legend', 'aria-label': 'Colour legend'},
      Object.keys(LABELS).slice(0, 4).map((k) =>
        el('li', {}, el('span', {class: 'claim ' + k}, k), ' ' + LABELS[k])),
      el('li', {}, el('span', {class: 'unref'}, 'UNREFERENCED'), ' ' + UNREF));
}

const UNREF = 'cites nothing (an introduction or a conclusion)';

// The answer sentence by sentence (the result's "sentences": each with its
// claim's index, or none), so that the uncited introduction and
// conclusion show as such instead of being dropped (VerifAI shows every
// sentence); a claim spanning several sentences shows once. Without
// "sentences" (older runs) the claims alone.
function answerNodes(r, docs) {
  const claims = r.claims || [];
  const sents = r.sentences || [];
  if (!sents.length) return claims.map((c, i) => [claimNode(c, i, docs), ' ']);
  const shown = new Set();
  return sents.map((t) => {
    const i = typeof t.claim === 'number' ? t.claim : -1;
    if (i >= 0 && i < claims.length) {
      if (shown.has(i)) return null;
      shown.add(i);
      return [claimNode(claims[i], i, docs), ' '];
    }
    return [el('span', {class: 'unref', 'data-label': 'UNREFERENCED',
      title: UNREF}, t.text), ' '];
  });
}

export function renderAsk(r) {
  const docs = new Map((r.documents || []).map((d) => [d.doc_id, d]));
  const claims = r.claims || [];
  const answer = el('div', {class: 'answer', id: 'ask-answer'});
  if (claims.length || (r.sentences || []).length) {
    answer.append(...answerNodes(r, docs).flat().filter(Boolean));
  } else {
    answer.append(r.answer || 'No answer was produced.');
  }
  return el('div', {class: 'panel'},
      el('h2', {}, 'Answer'), legend(), answer,
      r.final_verdict ? el('p', {}, 'Final verdict: ' + r.final_verdict) : null,
      (r.notes || []).length ? el('div', {class: 'msg info'},
          'Partial result: ' + r.notes.join(' ')) : null,
      el('h3', {}, 'Documents'),
      el('ol', {}, (r.documents || []).map((d) => el('li', {
        id: 'doc-' + d.doc_id}, el('strong', {class: 'doc-title',
        title: d.title ? null : previewOf(d) || null}, titleOf(d)), ' ',
      el('span', {class: 'muted'}, d.doc_id + (typeof d.score === 'number' ?
          ' · score ' + d.score.toFixed(3) : '')), ' ', docHref(d)))),
      r.search ? el('p', {class: 'muted'}, 'Search: ' + r.search + '.') :
        null);
}

// The live list of verified claims: add(step) appends one "claim" step.
function verification() {
  const list = el('ol', {class: 'trace', id: 'ask-steps',
    'aria-label': 'Verified claims'});
  return {
    node: el('div', {class: 'panel'}, el('h2', {}, 'Verification'), list),
    add: (st) => {
      if (st.step !== 'claim' || !st.claim) return;
      const c = st.claim;
      list.append(el('li', {'data-label': c.label},
          el('span', {class: 'label-' + c.label}, c.label), ' ',
          'claim ' + (st.index + 1) + ' of ' + st.of + ': ', c.text,
          el('span', {class: 'muted'}, ' (' + (c.verdicts || []).map((v) =>
            v.doc_id + ' ' + v.label).join(', ') + ')')));
    },
    count: () => list.children.length,
  };
}

let hasVectors = false;
const showWeights = () => showWeight('ask-w', 'ask-w-val', hasVectors);

// The request: the question plus the settings that are set (the server
// checks them against GET /v1/limits' bounds and answers 400 with the
// reason otherwise).
function askBody(question) {
  const body = {question};
  const num = (id) => parseInt($(id).value, 10);
  if (num('ask-k')) body.k = num('ask-k');
  if (hasVectors) {
    const sem = Number($('ask-w').value) / 100;
    body.w_lex = Math.round((1 - sem) * 100) / 100;
    body.w_sem = sem;
  }
  if ($('ask-source').value) body.source = $('ask-source').value;
  if (num('ask-year-from')) body.year_from = num('ask-year-from');
  if (num('ask-year-to')) body.year_to = num('ask-year-to');
  if ($('ask-mode').value) body.search_mode = $('ask-mode').value;
  if (model('ask')) body.model = model('ask');
  return addFilters('ask', body);
}

async function submit(ev) {
  ev.preventDefault();
  const question = $('ask-q').value.trim();
  const out = clear($('ask-result'));
  $('ask-msg').textContent = '';
  $('ask-status').textContent = 'Asking…';
  $('ask-btn').disabled = true;
  const res = await api('POST', '/v1/ask', askBody(question));
  const answer = el('div');
  const steps = verification();
  const done = (r) => {
    $('ask-btn').disabled = false;
    $('ask-status').textContent = '';
    answer.append(renderAsk(r));
  };
  out.append(answer);
  if (!res.ok) {
    $('ask-btn').disabled = false;
    $('ask-status').textContent = '';
    $('ask-msg').textContent = errorText(res);
    return;
  }
  if (res.status !== 202) {
    done(res.data);
    return;
  }
  // Queued as a run: follow it like a check; the answer's text streams in
  // as "token" events while the model writes it, then each claim shows
  // with its verdict as the verifier settles it.
  const stream = el('p', {id: 'ask-stream', class: 'answer'});
  const live = el('div', {class: 'panel', id: 'ask-live', 'aria-busy': 'true'},
      el('h2', {}, 'Answer (being written)'), stream);
  out.append(live, steps.node);
  const text = liveAnswer(stream);
  const onStep = (st) => {
    steps.add(st);
    if (st.step === 'claim' && st.claim) text.claim(st.claim);
  };
  followRun(res.data.run_id, onStep, (s) => {
    $('ask-status').textContent = 'Run ' + res.data.run_id + ': ' + s + '…';
  }, (run) => {
    live.remove();
    if (run.status === 'done') {
      // A stream that joined late missed the steps: show them from the result.
      const cs = run.result.claims || [];
      if (steps.count() === 0) {
        cs.forEach((c, i) => steps.add({step: 'claim', index: i,
          of: cs.length, claim: c}));
      }
      done(run.result);
    } else {
      $('ask-btn').disabled = false;
      $('ask-status').textContent = '';
      $('ask-msg').textContent = run.error || 'the question failed';
    }
  }, {token: text.token});
}

// The Ask settings in one line.
function describe() {
  return ['top ' + val('ask-k'), val('ask-mode') || 'mode as the index allows',
    val('ask-source') ? 'source ' + val('ask-source') : 'all sources',
    years('ask-year-from', 'ask-year-to'),
    model('ask') ? 'model ' + model('ask') : ''].concat(common('ask'));
}

export async function initAsk() {
  mountFilters('ask');
  const summarize = collapse('ask', describe);
  $('ask-form').addEventListener('submit', submit);
  $('ask-w').addEventListener('input', showWeights);
  const [lim, models] = await Promise.all([limits(), api('GET', '/v1/models'),
    fillSources($('ask-source'))]);
  hasVectors = models.ok && !!models.data.embedder;
  $('ask-w').disabled = !hasVectors;
  const f = lim ? lim.ask.fields : {};
  bound('ask-k', 'ask-k-lim', f.k);
  bound('ask-year-from', 'ask-year-from-lim', f.year_from, true);
  bound('ask-year-to', 'ask-year-to-lim', f.year_to, true);
  if (f.w_sem && hasVectors) {
    $('ask-w').value = String(Math.round(f.w_sem.default * 100));
  }
  showWeights();
  summarize();
  if (!lim) return;
  boundFilters('ask', lim.ask.filter_bytes);
  const modes = lim.ask.modes || ['bm25'];
  for (const m of modes) $('ask-mode').append(el('option', {value: m}, m));
  $('ask-mode-lim').textContent = 'This index serves ' + modes.join(', ') +
      (modes.length > 1 ? '; default hybrid.' : ' only (no vectors).');
  offerModels('ask', lim); // when the server has more than its --llm
  await applyMine('ask'); // the user's own defaults, within those bounds
  showWeights();
  summarize();
}
