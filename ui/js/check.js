// Check page: sends a note to POST /v1/check, follows the run's events
// (Server-Sent Events) to show the trajectory live, then shows the note
// with the erroneous sentence highlighted and a word diff to the
// correction. renderCheckResult is shared with the Runs page.
import {api, errorText, fillSources} from './api.js';
import {showWeight} from './search.js';
import {$, clear, docHref, el} from './dom.js';
import {renderDiff} from './diff.js';
import {renderStep} from './trace.js';
import {addFilters, boundFilters, mountFilters} from './filters.js';
import {bound, limits, model, offerModels, offerStrategies} from
  './limits.js';
import {applyMine, collapse, common, val, years} from './collapse.js';

// The paper settings' inputs, by the server's field names.
const SETTINGS = {max_steps: 'check-steps', max_rounds: 'check-rounds',
  accept_mean: 'check-mean', accept_min: 'check-min',
  retrieve_k: 'check-retrieve', rerank_k: 'check-k'};
// The years (empty: open), as Ask's.
const YEARS = {year_from: 'check-year-from', year_to: 'check-year-to'};

// The strategy table's entries by name (GET /v1/limits), once loaded.
let strategies = {};
const searches = (name) => !!(strategies[name] &&
    strategies[name].needs_retriever);

// The note (or, without it, the corrected note) with the error marked.
function noteView(note, r) {
  const box = el('div', {class: 'note-view', id: 'check-note-view'});
  const text = note || r.corrected_text || '';
  const needle = note ? r.error_sentence : r.corrected_sentence;
  const at = r.error_flag && needle ? text.indexOf(needle) : -1;
  if (at < 0) {
    box.append(text);
    return box;
  }
  // The erroneous sentence in the note, or the correction in its place.
  const mark = note ? el('mark', {class: 'err', id: 'check-err-sentence'},
      needle) : el('mark', {class: 'fix'}, needle);
  box.append(text.slice(0, at), mark, text.slice(at + needle.length));
  return box;
}

// A check that ended without the model's verdict: failed, with the
// reason in words (the run's error, or the result's fallback_why).
export function renderCheckFailure(why, fallback) {
  return el('div', {class: 'panel', id: 'check-failed'},
      el('h2', {}, 'Verdict'),
      el('p', {class: 'verdict failed'}, el('span', {class: 'badge bad'},
          fallback ? 'fallback: no model answer' : 'check failed'), ' ',
      'No verdict from the model: this is not a result.'),
      el('p', {id: 'check-failed-why'}, why || 'the check failed'));
}

// One sentence's verdict on one document: label, score, closest sentence.
function sideItem(name, v) {
  if (!v) return null;
  return el('div', {}, name + ': ', el('span', {class: 'label-' + v.label},
      v.label), typeof v.score === 'number' ? ' ' + v.score.toFixed(2) : '',
  v.sentence ? [' · “', v.sentence, '”'] : '');
}

// The evidence for a correction (check's "correction_evidence", issue
// 32): the corrected and the original sentence each judged against the
// run's documents, beside the diff; nothing when it was not verified.
function correctionEvidence(ce) {
  if (!ce || !ce.verdict_corrected) return null;
  return el('div', {id: 'check-evidence'},
      el('h3', {}, 'Evidence for the correction'),
      el('p', {}, 'The correction: ', el('span', {class: 'label-' +
          ce.verdict_corrected}, ce.verdict_corrected), '; the original: ',
      el('span', {class: 'label-' + ce.verdict_original},
          ce.verdict_original),
      ce.strongest ? ' (the strongest case: the evidence supports the ' +
        'correction and contradicts the original)' : '',
      el('span', {class: 'muted'}, ce.source === 'run' ?
        ' Judged against the documents the run retrieved.' :
        ' Judged against a ' + ce.source + ' search for the correction.')),
      el('ul', {}, (ce.evidence || []).map((e) => el('li', {},
          el('strong', {}, e.title || e.doc), ' ', docHref({url: e.url,
            doc_id: e.doc}), sideItem('correction', e.corrected),
          sideItem('original', e.original)))));
}

// The model use of a check, in one line.
function usageLine(r) {
  const u = r.usage || {};
  return el('p', {class: 'muted'}, 'Strategy ' + r.strategy + ': ' +
      (u.llm_calls || 0) + ' model calls, ' + (u.prompt_tokens || 0) +
      ' prompt and ' + (u.completion_tokens || 0) + ' completion tokens' +
      (u.fallbacks ? ', ' + u.fallbacks + ' fallbacks' : '') + '.');
}

// A fallback verdict the user allowed ("Allow fallbacks"): marked as no
// answer of the model's, never green, with the reason in words, then
// what the strategy fell back to.
function renderCheckFallback(r, note) {
  const what = !r.error_flag ?
    'no error flagged (the strategy\'s default, not a finding)' :
    r.error_sentence_id < 0 ? 'an error flagged, no sentence located' :
    'sentence ' + r.error_sentence_id + ' flagged, kept as it stands';
  return el('div', {class: 'panel', id: 'check-fallback'},
      el('h2', {}, 'Verdict'),
      el('p', {class: 'verdict', id: 'check-verdict'},
          el('span', {class: 'badge bad'}, 'fallback: no model answer'), ' ',
          'Fallbacks were allowed: this is the strategy\'s fallback, not ' +
          'the model\'s verdict.'),
      el('p', {id: 'check-failed-why'}, r.fallback_why ||
          'the model gave no usable answer'),
      el('p', {id: 'check-fallback-verdict'}, 'Fallback verdict: ' + what +
          '.'),
      el('h3', {}, note ? 'The note' : 'The corrected note'),
      noteView(note, r), usageLine(r));
}

export function renderCheckResult(r, note) {
  // A fallback verdict (allowed by the request, or kept by a worker or an
  // older server) is no answer of the model's: never "no error found".
  if (r.fallback) return renderCheckFallback(r, note);
  // MedGuards may detect an error it cannot locate: flag 1, sentence -1.
  const located = r.error_flag && r.error_sentence_id >= 0;
  const verdict = located ?
    'Error found in sentence ' + r.error_sentence_id + ' (counting from 0)' :
    r.error_flag ? 'Error detected, but no sentence located (no correction)' :
    'No error found';
  const parts = [
    el('h2', {}, 'Verdict'),
    el('p', {class: 'verdict', id: 'check-verdict'}, verdict),
    el('h3', {}, note ? 'The note' : 'The corrected note'),
    noteView(note, r),
  ];
  if (located) {
    parts.push(el('h3', {}, 'Correction'),
        el('div', {id: 'check-diff'},
            renderDiff(r.error_sentence, r.corrected_sentence)),
        correctionEvidence(r.correction_evidence));
  }
  parts.push(usageLine(r));
  return el('div', {class: 'panel', id: 'check-verdict-panel'}, parts);
}

// A live trajectory list; add(record) appends one step.
export function trajectory() {
  const list = el('ol', {class: 'trace', id: 'check-trace',
    'aria-label': 'Trajectory'});
  const state = {};
  return {
    node: el('div', {class: 'panel'}, el('h2', {}, 'Trajectory'), list),
    add: (rec) => list.append(renderStep(rec, state)),
    count: () => list.children.length,
  };
}

// Follows run 'id' until it ends: events while it streams, then (if the
// stream breaks) the run itself. Calls onStep and, once, onEnd(run);
// 'more' maps other event names to their handlers.
export function followRun(id, onStep, onStatus, onEnd, more) {
  let ended = false;
  const end = (run) => {
    if (!ended) {
      ended = true;
      onEnd(run);
    }
  };
  const es = new EventSource('/v1/runs/' + id + '/events');
  es.addEventListener('status', (ev) => onStatus(JSON.parse(ev.data).status));
  es.addEventListener('step', (ev) => onStep(JSON.parse(ev.data)));
  for (const [name, fn] of Object.entries(more || {})) {
    es.addEventListener(name, (ev) => fn(JSON.parse(ev.data)));
  }
  es.addEventListener('done', (ev) => {
    es.close();
    end(JSON.parse(ev.data));
  });
  es.onerror = () => {
    es.close();
    if (!ended) poll(id, end);
  };
}

async function poll(id, end) {
  for (;;) {
    const res = await api('GET', '/v1/runs/' + id);
    if (!res.ok) {
      end({status: 'failed', error: errorText(res)});
      return;
    }
    if (res.data.status === 'done' || res.data.status === 'failed') {
      end(res.data);
      return;
    }
    await new Promise((ok) => setTimeout(ok, 1000));
  }
}

// The Cancel button of a running check: POST /v1/runs/ID/cancel stops
// it before its next model call; the run then ends "cancelled".
function cancelButton(id) {
  const b = $('check-cancel');
  b.hidden = false;
  b.disabled = false;
  b.onclick = async () => {
    b.disabled = true;
    $('check-status').textContent = 'Run ' + id + ': cancelling…';
    const res = await api('POST', '/v1/runs/' + id + '/cancel');
    if (!res.ok) $('check-msg').textContent = errorText(res);
  };
  return {done: () => {
    b.hidden = true;
    b.onclick = null;
  }};
}

async function submit(ev) {
  ev.preventDefault();
  const note = $('check-note').value;
  const strategy = $('check-strategy').value;
  const out = clear($('check-result'));
  const btn = $('check-btn');
  $('check-msg').textContent = '';
  btn.disabled = true;
  const body = {note, strategy};
  if ($('check-fallbacks').checked) body.allow_fallbacks = 1;
  if (searches(strategy)) {
    for (const [k, id] of Object.entries(SETTINGS)) {
      if ($(id).value !== '') body[k] = Number($(id).value);
    }
    for (const [k, id] of Object.entries(YEARS)) {
      if (parseInt($(id).value, 10)) body[k] = parseInt($(id).value, 10);
    }
    if ($('check-source').value) body.source = $('check-source').value;
    if (hasVectors) {
      const sem = Number($('check-w').value) / 100;
      body.w_lex = Math.round((1 - sem) * 100) / 100;
      body.w_sem = sem;
    }
    if ($('check-mode').value) body.search_mode = $('check-mode').value;
    addFilters('check', body); // MedReAct's searches
  }
  if (model('check')) body.model = model('check');
  const res = await api('POST', '/v1/check', body);
  if (!res.ok) {
    $('check-msg').textContent = errorText(res);
    $('check-status').textContent = '';
    btn.disabled = false;
    return;
  }
  const id = res.data.run_id;
  $('check-status').textContent = 'Run ' + id + ' queued.';
  const cancel = cancelButton(id);
  const verdict = el('div');
  const traj = trajectory();
  out.append(verdict, traj.node);
  followRun(id, traj.add, (s) => {
    $('check-status').textContent = 'Run ' + id + ': ' + s + '…';
  }, (run) => {
    btn.disabled = false;
    cancel.done();
    if (run.status !== 'done') {
      const why = run.error || 'the check failed';
      $('check-status').textContent = 'Run ' + id + ' failed.';
      $('check-msg').textContent = why;
      // Cancelled: the message says it all; else no verdict, in words.
      if (!/cancel/.test(why)) {
        verdict.append(renderCheckFailure(why, false));
      }
      return;
    }
    $('check-status').textContent = 'Run ' + id + (run.result.fallback ?
      ' done: a fallback verdict, no model answer.' : ' done.');
    // A stream that joined late missed the steps: show them from the result.
    if (traj.count() === 0) (run.result.trace || []).forEach(traj.add);
    verdict.append(renderCheckResult(run.result, note));
  });
}

let hasVectors = false;
const showWeights = () => showWeight('check-w', 'check-w-val', hasVectors);

// The Check settings in one line (the model; react-reflex's N, M,
// thresholds, depths, mode, source, years, filters and weights).
function describe() {
  const m = model('check') ? 'model ' + model('check') : 'the server\'s model';
  const fb = $('check-fallbacks').checked ? 'fallbacks allowed' : '';
  if (!searches($('check-strategy').value)) return [m, fb];
  return [m, fb, 'N ' + val('check-steps'), 'M ' + val('check-rounds'),
    'accept mean ≥ ' + val('check-mean') + ', lowest ≥ ' + val('check-min'),
    'top ' + val('check-k') + ' of ' + val('check-retrieve'),
    val('check-mode') || 'mode as the index allows',
    val('check-source') ? 'source ' + val('check-source') : 'all sources',
    years('check-year-from', 'check-year-to')].concat(common('check'));
}
let summarize = () => {};

// Says up front when the chosen strategy has no model configured (the
// server refuses such a check with the same advice); a front end that runs
// no jobs (serve --llm-jobs 0) leaves that to the nodes that run them.
let ready = null;

function strategyHint() {
  const sel = $('check-strategy');
  let text = strategies[sel.value] ? strategies[sel.value].summary : '';
  if (ready && ready[sel.value] === false) {
    text += ' No language model is configured for it: start the server ' +
        'with --llm openai:BASE_URL#MODEL or --llm gguf:PATH, or set ' +
        'MEDTRUST_LLM.';
  }
  $('check-strategy-hint').textContent = text;
  $('check-config').hidden = !searches(sel.value);
  summarize();
}

export async function initCheck() {
  mountFilters('check');
  summarize = collapse('check', describe);
  $('check-strategy').addEventListener('change', strategyHint);
  $('check-form').addEventListener('submit', submit);
  $('check-w').addEventListener('input', showWeights);
  strategyHint();
  const [lim, res] = await Promise.all([limits(), api('GET', '/v1/models'),
    fillSources($('check-source'))]);
  strategies = offerStrategies('check-strategy', lim, true);
  const f = lim ? lim.check.fields : {};
  $('check-fallbacks').checked = !!(f.allow_fallbacks &&
    f.allow_fallbacks.default);
  for (const [k, id] of Object.entries(SETTINGS)) bound(id, id + '-lim', f[k]);
  for (const [k, id] of Object.entries(YEARS)) {
    bound(id, id + '-lim', f[k], true);
  }
  hasVectors = res.ok && !!res.data.embedder;
  $('check-w').disabled = !hasVectors;
  if (f.w_sem && hasVectors) {
    $('check-w').value = String(Math.round(f.w_sem.default * 100));
  }
  showWeights();
  // MedReAct's searches: the modes this index serves (as for Ask).
  const modes = (lim && lim.ask.modes) || ['bm25'];
  for (const m of modes) $('check-mode').append(el('option', {value: m}, m));
  $('check-mode-lim').textContent = 'This index serves ' + modes.join(', ') +
      (modes.length > 1 ? '; default hybrid.' : ' only (no vectors).');
  if (lim) boundFilters('check', lim.check.filter_bytes);
  offerModels('check', lim);
  ready = res.ok && res.data.runs_jobs !== false ? res.data.check : null;
  await applyMine('check'); // the user's own defaults, within those bounds
  showWeights();
  strategyHint();
}
