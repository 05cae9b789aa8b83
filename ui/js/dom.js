// Small DOM helpers. Text from the server only ever enters the page as
// text nodes (never as HTML), so notes, documents and model replies cannot
// inject markup.

// el('p', {class: 'x'}, 'text', child, ...): a new element.
export function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : v);
  }
  for (const k of kids.flat(Infinity)) {
    if (k === null || k === undefined || k === false) continue;
    e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  }
  return e;
}

export function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
  return node;
}

export function $(id) {
  return document.getElementById(id);
}

// Words of a query worth highlighting: 3+ letters, not common words.
const STOP = new Set(['the', 'and', 'for', 'are', 'what', 'with', 'how',
  'does', 'which', 'who', 'why', 'when', 'from', 'that', 'this', 'can',
  'was', 'were', 'has', 'have', 'not', 'into', 'of']);

export function queryTerms(q) {
  const words = q.toLowerCase().match(/[\p{L}\p{N}]{3,}/gu) || [];
  return [...new Set(words.filter((w) => !STOP.has(w)))];
}

function escapeRe(s) {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

// Text with each word starting with a query term wrapped in <mark>
// (prefix match, so "treatment" is marked for "treatments" and back).
export function highlight(text, terms) {
  const frag = document.createDocumentFragment();
  if (!terms.length) {
    frag.append(text);
    return frag;
  }
  const stems = terms.map((t) => escapeRe(t.length > 5 ? t.slice(0, 5) : t));
  const re = new RegExp('(?<![\\p{L}\\p{N}])(?:' + stems.join('|') +
      ')[\\p{L}\\p{N}]*', 'giu');
  let last = 0;
  for (const m of text.matchAll(re)) {
    frag.append(text.slice(last, m.index), el('mark', {}, m[0]));
    last = m.index + m[0].length;
  }
  frag.append(text.slice(last));
  return frag;
}

// "2024-05-01 12:30" from Unix seconds.
export function when(sec) {
  if (!sec) return '';
  const d = new Date(sec * 1000);
  const p = (n) => String(n).padStart(2, '0');
  return d.getFullYear() + '-' + p(d.getMonth() + 1) + '-' + p(d.getDate()) +
      ' ' + p(d.getHours()) + ':' + p(d.getMinutes());
}

// A table from headers and rows of cells (strings or nodes), in a box
// that scrolls sideways when the table is wider than the screen (the box
// takes focus, so keyboard users can scroll it too).
export function table(caption, heads, rows) {
  return el('div', {class: 'table-wrap', tabindex: '0', role: 'region',
    'aria-label': caption || 'Table: ' + heads.filter(Boolean).join(', ')},
  el('table', {},
      caption ? el('caption', {class: 'muted'}, caption) : null,
      el('thead', {}, el('tr', {}, heads.map((h) => el('th', {scope: 'col'}, h)))),
      el('tbody', {}, rows.map((r) => el('tr', {}, r.map((c) => el('td', {}, c)))))));
}

// A link to a document's own page, from the server's "url" (its "url"
// metadata, else PubMed's page for a PMID), for Ask's documents and
// Search's hits; null when it has none.
export function docHref(d) {
  if (!d.url || !/^https?:\/\//.test(d.url)) return null;
  const pubmed = d.url.startsWith('https://pubmed.ncbi.nlm.nih.gov/');
  return el('a', {href: d.url, rel: 'noopener noreferrer', target: '_blank',
    'aria-label': (pubmed ? 'PubMed' : 'Source') + ' page of ' + d.doc_id},
  pubmed ? 'PubMed' : 'Source');
}

// Puts a copy of <template id=tplId> into element boxId, renaming its ids
// and the attributes naming them ("P-x" becomes "PREFIX-x"): one copy of
// markup that several panels share.
export function mountTemplate(tplId, boxId, prefix) {
  const box = $(boxId);
  if (!box || box.childElementCount) return;
  const copy = $(tplId).content.cloneNode(true);
  const rename = (v) => v.replace(/\bP-/g, prefix + '-');
  for (const e of copy.querySelectorAll('[id], [for], [aria-describedby]')) {
    for (const a of ['id', 'for', 'aria-describedby']) {
      if (e.hasAttribute(a)) e.setAttribute(a, rename(e.getAttribute(a)));
    }
  }
  box.append(copy);
}

// A document's title, or for one without (PubMedQA's abstracts) its
// first sentence, cut at 160 characters: what VerifAI shows as a heading.
export function titleOf(d) {
  if (d.title) return d.title;
  const t = String(d.text || d.preview || '').trim();
  // a sentence ends at . ? or ! before a capital or the end ("60.7 vs.
  // 20.7%" does not end one)
  const m = t.match(/^([^]{10,160}?[.?!])(\s+[A-Z(\[]|$)/);
  if (m) return m[1];
  return t ? (t.length > 160 ? t.slice(0, 159) + '…' : t) : d.doc_id;
}

// The hover preview of a document: its opening text, up to 400 characters.
export function previewOf(d) {
  const t = String(d.text || d.preview || '').trim();
  return t.length > 400 ? t.slice(0, 399) + '…' : t;
}
