// Renders a checker's trace (its trajectory) one record at a time, as the
// server streams them: ReAct steps with their queries and passages, the
// MedEval reviews with scores, reflections, the guards' verdicts and the
// arbiter's decisions, fallbacks and the final verdict.
import {docHref, el, table} from './dom.js';

// A model reply as an object: the whole text, else its outermost {...}.
export function parseReply(s) {
  if (typeof s !== 'string') return null;
  try {
    return JSON.parse(s);
  } catch (e) { /* prose around the JSON */ }
  const a = s.indexOf('{');
  const b = s.lastIndexOf('}');
  if (a < 0 || b <= a) return null;
  try {
    return JSON.parse(s.slice(a, b + 1));
  } catch (e) {
    return null;
  }
}

const pct = (x) => (typeof x === 'number' ? Math.round(x * 100) + '%' : '?');

function kv(label, value) {
  if (value === undefined || value === null || value === '') return null;
  return el('div', {}, el('span', {class: 'muted'}, label + ': '),
      String(value));
}

function badge(ok, yes, no) {
  return el('span', {class: 'badge ' + (ok ? 'ok' : 'bad')}, ok ? yes : no);
}

function finalAnswer(o) {
  if (!o) return null;
  return el('div', {},
      kv('Error', o.is_error === undefined ? undefined :
        (o.is_error ? 'yes' : 'no')),
      kv('Sentence', o.sentence_id),
      kv('Correction', o.corrected_sentence),
      kv('Reasoning', o.reasoning));
}

// ==== Model calls, by role ====

function reactCall(rec, o, state) {
  state.react = (state.react || 0) + 1;
  const act = (o && o.action) || {};
  const body = [kv('Observation', o && o.observation),
    kv('Thought', o && o.thought)];
  if (act.name === 'search') body.push(kv('Action', 'search("' + act.query + '")'));
  else if (act.name) body.push(kv('Action', act.name), finalAnswer(act));
  return ['MedReAct step ' + state.react, body];
}

function evalCall(rec) {
  const heads = ['#', 'validity', 'preciseness', 'confidence', 'relevance',
    'completeness', 'final', 'comment'];
  const rows = (rec.replies || []).map((r, i) => {
    const o = parseReply(r) || {};
    return [String(i + 1)].concat(heads.slice(1).map((h) =>
      o[h] === undefined ? '' : String(o[h])));
  });
  return ['MedEval: ' + rows.length + ' reviews',
    [table(null, heads, rows)]];
}

function guardCall(rec, o) {
  const p = rec.prompt || '';
  const m = p.match(/guard_(detect|locate)_(\d)/);
  if (m) {
    const what = m[1] === 'detect' ? 'detects' : 'locates';
    return ['Guard agent ' + m[2] + ' ' + what, [
      kv('Verdict', o && o.verdict), kv('Sentence', o && o.sentence),
      kv('Confidence', o && pct(o.confidence)),
      kv('Reasoning', o && o.reasoning)]];
  }
  return ['Guard corrector', [kv('Correction', o && o.corrected_sentence),
    kv('Reasoning', o && o.reasoning)]];
}

function callStep(rec, state) {
  const o = parseReply((rec.replies || [])[0]);
  let title;
  let body;
  if (rec.role === 'react') [title, body] = reactCall(rec, o, state);
  else if (rec.role === 'eval') [title, body] = evalCall(rec);
  else if (rec.role === 'guard') [title, body] = guardCall(rec, o);
  else if (rec.role === 'reflect') {
    title = 'MedReFlex reflection';
    body = [kv('Reflection', o && o.reflection), kv('Plan', o && o.plan)];
  } else if (rec.role === 'parser') {
    title = 'Final parser';
    body = [finalAnswer(o)];
  } else {
    title = 'Single call';
    body = [finalAnswer(o)];
  }
  const meta = el('span', {class: 'muted'}, ' ' + (rec.ms || 0) + ' ms' +
      (rec.attempt > 1 ? ', attempt ' + rec.attempt : '') + ' ');
  if (rec.ok === false) body.push(kv('Failed', rec.error));
  return [title, [meta, badge(rec.ok !== false, 'ok', 'failed')], body];
}

// ==== Decisions ====

// How a search ran: its mode, depths and weights, the rerank stage, and
// its filters.
function searchHow(rec) {
  const names = {authors: 'author', journal: 'journal',
    publication_types: 'publication type'};
  const parts = [rec.mode || 'none'];
  if (rec.k) parts.push('top ' + rec.k + ' of ' + rec.retrieve_k);
  if (rec.mode === 'hybrid' && rec.w_sem !== undefined) {
    parts.push('weights lexical ' + Math.round(rec.w_lex * 100) +
        '% / semantic ' + Math.round(rec.w_sem * 100) + '%');
  }
  if (rec.reranked) parts.push('reranked');
  if ((rec.sources || []).length) {
    parts.push('source ' + rec.sources.join(' or '));
  }
  for (const [k, v] of Object.entries(rec.meta || {})) {
    parts.push(Array.isArray(v) ? k + ' ' + v[0] + ' to ' + v[1] :
      (names[k] || k) + ' contains “' + v + '”');
  }
  return el('p', {class: 'muted search-how'}, 'Search ' + parts.join(', ') +
      '.');
}

function searchStep(rec) {
  const ps = rec.passages || [];
  const list = el('ol', {}, ps.map((p) => el('li', {class: 'passage',
    'data-doc': p.doc_id},
  el('strong', {}, p.title || p.doc_id), ' ',
  el('span', {class: 'muted'}, '(' + p.doc_id + ')'), ' ', docHref(p),
  el('br'), p.text + (p.cut ? '…' : ''))));
  const n = (rec.hits || []).length;
  return ['Search: "' + rec.query + '"', [], [searchHow(rec),
    el('details', {}, el('summary', {}, n + ' passages retrieved'),
        ps.length ? list : el('p', {class: 'muted'},
          'ids: ' + (rec.hits || []).join(', ')))]];
}

function arbiterStep(rec) {
  const loc = rec.step === 'guards_locate';
  const v = (a) => (loc ? 'sentence ' + a.value :
    (a.value ? 'error' : 'no error'));
  const a1 = rec.agent1 || {};
  const a2 = rec.agent2 || {};
  return ['Arbiter (' + (loc ? 'locate' : 'detect') + ')', [], [
    kv('Agent 1', v(a1) + ', confidence ' + pct(a1.confidence)),
    kv('Agent 2', v(a2) + ', confidence ' + pct(a2.confidence)),
    kv('Decision', v({value: rec.decision}) + ' (' + rec.rule + ')')]];
}

function otherStep(rec) {
  switch (rec.step) {
    case 'medeval':
      return ['MedEval verdict', [badge(rec.accepted, 'accepted',
          'not accepted')], [kv('Final scores', (rec.finals || []).join(', ')),
        kv('Mean', rec.mean), kv('Minimum', rec.min), kv('Rule', rec.rule)]];
    case 'verdict':
      return ['Verdict', [badge(!rec.error_flag, 'no error',
          'error in sentence ' + rec.sentence_id)],
      [rec.fallback ? kv('Note', 'fallback verdict') : null]];
    case 'fallback':
      return ['Fallback (' + rec.role + ')', [], [kv('Rule', rec.rule)]];
    default:
      return [rec.step, [], [kv('Rule', rec.rule), kv('Why', rec.why)]];
  }
}

// One <li> for a trace record. 'state' carries counters across records.
export function renderStep(rec, state) {
  let parts;
  if (rec.step === 'call') parts = callStep(rec, state);
  else if (rec.step === 'search') parts = searchStep(rec);
  else if (rec.step === 'guards_detect' || rec.step === 'guards_locate') {
    parts = arbiterStep(rec);
  } else parts = otherStep(rec);
  const [title, extra, body] = parts;
  return el('li', {class: 'step', 'data-step': rec.step},
      el('span', {class: 'step-kind'}, title), ' ', extra,
      el('div', {}, body));
}
