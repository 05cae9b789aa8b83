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

// Reply i of call record 'rec' as an object: the one the checker parsed
// (trace version 2's "parsed"), else, for an older trace, extracted from
// its raw text as the checker does.
function reply(rec, i) {
  if (Array.isArray(rec.parsed)) return rec.parsed[i] || null;
  return parseReply((rec.replies || [])[i]);
}

const pct = (x) => (typeof x === 'number' ? Math.round(x * 100) + '%' : '?');

// A confidence as a model wrote it, checked as the library reads it
// (llmcall/reply.c mtx_reply_conf): a number from 0 to 1, or from 0 to
// 100 read as a percentage; anything else (1e18, Infinity, -3, "high")
// is "invalid", never a percentage. Says which scale it was read on.
export function confidence(x) {
  const d = typeof x === 'string' && x.trim() !== '' ? Number(x) : x;
  if (x === undefined || x === null) return undefined;
  if (typeof d !== 'number' || !Number.isFinite(d) || d < 0 || d > 100) {
    return 'invalid (' + String(x).slice(0, 40) + ': not 0 to 1 or 0 to 100)';
  }
  return d <= 1 ? Math.round(d * 100) + '% (given as ' + d + ', on 0 to 1)' :
    Math.round(d) + '% (given as ' + d + ', on 0 to 100)';
}

// Trace step names in words, for headings.
const STEP_WORDS = {
  round: 'Round ended without an accepted answer',
  rounds: 'Every round used',
  retrieval: 'Retrieval',
  context_budget: 'Context budget: passages or steps left out',
  evidence_budget: 'Evidence budget: passages left out',
  parser_disagreed: 'Final parser disagreed',
  sentences: 'Sentence split',
  few_shot: 'Few-shot examples',
};

// Model roles in words.
const ROLE_WORDS = {react: 'MedReAct', eval: 'MedEval',
  reflect: 'MedReFlex reflection', parser: 'final parser',
  guard: 'guard agent', guard_correct: 'guard corrector',
  arbiter: 'arbiter', single: 'single call'};
const roleWords = (r) => ROLE_WORDS[r] || String(r || 'a role')
    .replace(/_/g, ' ');

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

// A retry (attempt 2 or more) is the same MedReAct step again, not a
// new one.
function reactCall(rec, o, state) {
  if (!(rec.attempt > 1) || !state.react) state.react = (state.react || 0) + 1;
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
    const o = reply(rec, i) || {};
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
      kv('Confidence', o && confidence(o.confidence)),
      kv('Reasoning', o && o.reasoning)]];
  }
  return ['Guard corrector', [kv('Correction', o && o.corrected_sentence),
    kv('Reasoning', o && o.reasoning)]];
}

function callStep(rec, state) {
  const o = reply(rec, 0);
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

// The guards' stage: each agent's opinion (null: its calls failed, never
// "no error"), the decision and the rule that made it; a decision that
// stands only because a call failed is marked.
function arbiterStep(rec) {
  const loc = rec.step === 'guards_locate';
  const v = (x) => (loc ? 'sentence ' + x : (x ? 'error' : 'no error'));
  const agent = (a) => (a && typeof a === 'object' ?
    v(a.value) + ', confidence ' + (a.confidence >= 0 && a.confidence <= 1 ?
      pct(a.confidence) : confidence(a.confidence)) :
    'failed: no usable answer');
  const failed = !rec.agent1 || !rec.agent2 ||
      /failed|unusable/.test(rec.rule || '');
  return ['Arbiter (' + (loc ? 'locates the sentence' : 'detects an error') +
      ')', failed ? [el('span', {class: 'badge bad'}, 'a call failed')] : [], [
    kv('Agent 1', agent(rec.agent1)),
    kv('Agent 2', agent(rec.agent2)),
    kv('Decision', v(rec.decision) + ' (' + rec.rule + ')')]];
}

function otherStep(rec) {
  switch (rec.step) {
    case 'medeval':
      return ['MedEval verdict', [badge(rec.accepted, 'accepted',
          'not accepted')], [kv('Final scores', (rec.finals || []).join(', ')),
        kv('Mean', rec.mean), kv('Minimum', rec.min), kv('Rule', rec.rule)]];
    case 'verdict':
      // A fallback verdict is no answer of the model's: never green.
      if (rec.fallback) {
        return ['Verdict', [el('span', {class: 'badge bad'},
            'fallback: no model answer')], [kv('Why', rec.fallback_why ||
            'no usable reply from the model decided it; the steps above ' +
            'say which calls failed')]];
      }
      return ['Verdict', [badge(!rec.error_flag, 'no error',
          'error in sentence ' + rec.sentence_id)], []];
    case 'fallback':
      return ['Fallback: the ' + roleWords(rec.role) + ' gave no usable ' +
          'answer', [el('span', {class: 'badge bad'}, 'fallback')],
      [kv('What stands instead', rec.rule)]];
    default:
      return [STEP_WORDS[rec.step] || String(rec.step).replace(/_/g, ' '),
        [], [kv('Rule', rec.rule), kv('Why', rec.why)]];
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
