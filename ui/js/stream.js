// The answer as it streams in ("token" events), with each claim marked in
// the text, coloured by its verdict, as soon as its "claim" step arrives
// (VerifAI marks the answer while it verifies). The streamed text holds
// the citation brackets the claims' texts leave out, so a claim is found
// by its letters and digits alone, brackets skipped, after the last claim
// marked (claims come in answer order); its citations after it are
// marked with it.
import {clear, el} from './dom.js';

const WORD = /[\p{L}\p{N}]/u;

// The text's letters and digits (lower case) outside [...] groups, and
// where each came from in 'text'.
function skeleton(text, from) {
  let s = '';
  const at = [];
  let depth = 0;
  for (let i = from; i < text.length; i++) {
    const c = text[i];
    if (c === '[') depth++;
    else if (c === ']' && depth > 0) depth--;
    else if (depth === 0 && WORD.test(c)) {
      s += c.toLowerCase();
      at.push(i);
    }
  }
  return {s, at};
}

// [start, end) of 'claim' in 'text' at or after 'from', or null.
export function findClaim(text, claim, from) {
  const want = skeleton(claim, 0).s;
  if (!want) return null;
  const hay = skeleton(text, from);
  const k = hay.s.indexOf(want);
  if (k < 0) return null;
  let end = hay.at[k + want.length - 1] + 1;
  // take the citation groups (and the full stop) that follow it
  const tail = text.slice(end).match(/^(\s*\[[^\]]*\])*\s*[.!?]?(\s*\[[^\]]*\])*/);
  end += tail ? tail[0].length : 0;
  return [hay.at[k], end];
}

const LABELS = {SUPPORT: 'supported', CONTRADICT: 'contradicted',
  NO_EVIDENCE: 'no evidence', NO_REFERENCE: 'cites an unretrieved document',
  UNVERIFIED: 'not verified'};

export function liveAnswer(node) {
  let text = '';
  let marks = []; // [start, end, label], in order, not overlapping
  const render = () => {
    clear(node);
    let at = 0;
    for (const [a, b, label] of marks) {
      if (a > at) node.append(text.slice(at, a));
      node.append(el('span', {class: 'claim ' + label, 'data-label': label,
        title: LABELS[label] || label}, text.slice(a, b)));
      at = b;
    }
    if (at < text.length) node.append(text.slice(at));
  };
  return {
    token: (t) => {
      if (t.reset) {
        text = '';
        marks = [];
      } else {
        text += t.text;
      }
      render();
    },
    claim: (c) => {
      const from = marks.length ? marks[marks.length - 1][1] : 0;
      const r = findClaim(text, c.text || '', from);
      if (!r) return false;
      marks.push([r[0], r[1], c.label || 'UNVERIFIED']);
      render();
      return true;
    },
    marked: () => marks.length,
  };
}
