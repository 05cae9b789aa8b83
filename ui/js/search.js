// Search page: POST /v1/search with a lexical/semantic weight (BM25 and
// vectors fused as VerifAI does), top k and a source filter; hits show
// with the query's words highlighted and a link to each document's page
// (PubMed for a PMID, else its url). Author, journal and publication
// type filter on the documents' metadata inside the search.
import {api, errorText, fillSources} from './api.js';
import {$, clear, docHref, el, highlight, previewOf, queryTerms, titleOf}
  from './dom.js';
import {addFilters, boundFilters, mountFilters} from './filters.js';
import {limits} from './limits.js';
import {applyMine, collapse, common} from './collapse.js';

let hasVectors = false;
let building = null; // /v1/models index_build: vectors on their way

// The slider is the semantic share in percent.
function weights() {
  const sem = hasVectors ? Number($('search-w').value) : 0;
  if (sem === 0) return {mode: 'bm25'};
  if (sem === 100) return {mode: 'dense'};
  return {mode: 'hybrid', w_lex: (100 - sem) / 100, w_sem: sem / 100};
}

// An index build in progress, as a sentence: done/total, rate and ETA.
function buildText(b) {
  const pct = b.total ? Math.floor(100 * b.done / b.total) : 0;
  const eta = b.eta_s >= 90 ? Math.round(b.eta_s / 60) + ' min' :
    Math.round(b.eta_s) + ' s';
  return 'Vectors (' + b.embedder + ') are being built: ' +
    b.done.toLocaleString('en') + ' / ' + b.total.toLocaleString('en') +
    ' chunks (' + pct + '%), ' + Math.round(b.rate).toLocaleString('en') +
    '/s, about ' + eta + ' left. Search is lexical (BM25) until they ' +
    'land, then hybrid.';
}

// Writes a weight slider's value into its hint (and its aria-valuetext).
export function showWeight(slider, hint, vectors, build) {
  const sem = Number($(slider).value);
  $(hint).textContent = vectors ?
    'Lexical (BM25) ' + (100 - sem) + '% · semantic (vectors) ' + sem + '%' :
    build ? buildText(build) :
    'This index has no vectors (build it with --embedder use-lite), so ' +
    'search is lexical (BM25) only.';
  $(slider).setAttribute('aria-valuetext', $(hint).textContent);
}

const showWeights = () =>
  showWeight('search-w', 'search-w-val', hasVectors, building);

// Takes /v1/models; while vectors are being built (make demo serves BM25
// first), shows their progress and asks again every 3 s, so the slider
// turns on and search goes hybrid when they land, without a reload.
function vectorsFrom(models) {
  hasVectors = models.ok && !!models.data.embedder;
  building = models.ok && !hasVectors ? models.data.index_build : null;
  $('search-w').disabled = !hasVectors;
  showWeights();
  if (building) {
    setTimeout(async () => vectorsFrom(await api('GET', '/v1/models')),
        3000);
  }
}

// One document: its title (or first sentence), the best passage, and
// its other passages among the hits behind "N more passages".
export function hitItem(h, terms) {
  const more = h.more || [];
  // Without a title, the document's earliest passage among the hits (its
  // abstract's opening when that came back) gives the title and preview.
  const first = more.reduce((a, m) => (m.chunk_id < a.chunk_id ? m : a), h);
  const t = {doc_id: h.doc_id, title: h.title, text: first.text};
  return el('li', {},
      el('strong', {class: 'hit-title', title: h.title ? null : previewOf(t)},
          highlight(titleOf(t), terms)),
      el('div', {class: 'hit-meta'}, h.source + ' · ' + h.doc_id +
          ' · score ' + h.score.toFixed(3), ' ', docHref(h)),
      el('div', {}, highlight(h.text, terms)),
      more.length ? el('details', {class: 'more'}, el('summary', {},
          more.length + ' more passage' + (more.length > 1 ? 's' : '') +
          ' of this document'), el('ul', {}, more.map((m) => el('li',
          {class: 'passage'}, highlight(m.text, terms))))) : null);
}

async function submit(ev) {
  ev.preventDefault();
  const q = $('search-q').value.trim();
  const body = Object.assign({query: q, k: Number($('search-k').value) || 10},
      weights());
  if ($('search-source').value) body.source = $('search-source').value;
  addFilters('search', body);
  $('search-msg').textContent = '';
  $('search-status').textContent = 'Searching…';
  $('search-btn').disabled = true;
  const t0 = performance.now();
  const res = await api('POST', '/v1/search', body);
  $('search-btn').disabled = false;
  const list = clear($('search-hits'));
  if (!res.ok) {
    $('search-msg').textContent = errorText(res);
    $('search-status').textContent = '';
    return;
  }
  const terms = queryTerms(q);
  res.data.hits.forEach((h) => list.append(hitItem(h, terms)));
  const passages = res.data.hits.reduce((n, h) =>
    n + 1 + (h.more || []).length, 0);
  $('search-status').textContent = res.data.hits.length + ' documents (' +
      passages + ' passages, ' + res.data.mode + ') in ' +
      Math.round(performance.now() - t0) + ' ms.';
}

export async function initSearch() {
  mountFilters('search');
  const summarize = collapse('search', () => common('search'));
  $('search-form').addEventListener('submit', submit);
  $('search-w').addEventListener('input', showWeights);
  const [models, lim] = await Promise.all([api('GET', '/v1/models'),
    limits(), fillSources($('search-source'))]);
  if (lim) boundFilters('search', lim.search.filter_bytes);
  vectorsFrom(models);
  await applyMine('search'); // the user's own defaults
  showWeights();
  summarize();
}
