// Word-level diff (longest common subsequence over words and the spaces
// between them) for showing a correction against the original sentence.
import {el} from './dom.js';

function tokens(s) {
  return s.match(/\s+|[^\s]+/g) || [];
}

// Returns [{op: '=', '-' or '+', text}], merged into runs.
export function wordDiff(a, b) {
  const x = tokens(a);
  const y = tokens(b);
  const n = x.length;
  const m = y.length;
  // lcs[i][j]: LCS length of x[i..] and y[j..]
  const lcs = Array.from({length: n + 1}, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      lcs[i][j] = x[i] === y[j] ? lcs[i + 1][j + 1] + 1 :
          Math.max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  const out = [];
  const push = (op, text) => {
    const top = out[out.length - 1];
    if (top && top.op === op) top.text += text;
    else out.push({op, text});
  };
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (x[i] === y[j]) {
      push('=', x[i]); i++; j++;
    } else if (lcs[i + 1][j] >= lcs[i][j + 1]) {
      push('-', x[i++]);
    } else {
      push('+', y[j++]);
    }
  }
  while (i < n) push('-', x[i++]);
  while (j < m) push('+', y[j++]);
  return out;
}

// A <p class="diff"> with <del> for removed and <ins> for added words.
export function renderDiff(a, b) {
  const p = el('p', {class: 'diff'});
  for (const part of wordDiff(a, b)) {
    if (part.op === '=') p.append(part.text);
    else if (part.op === '-') p.append(el('del', {}, part.text));
    else p.append(el('ins', {}, part.text));
  }
  return p;
}
