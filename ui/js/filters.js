// The metadata filters the Search, Ask and Check panels share (author,
// journal, publication type): one block of markup (index.html's
// #meta-filters-tpl) mounted in each panel, read into a request body, and
// bounded by the server's limit (GET /v1/limits' filter_bytes), which the
// hint then states.
import {$, mountTemplate} from './dom.js';

const FIELDS = [['author', 'author'], ['journal', 'journal'],
  ['pubtype', 'publication_type']];

// Puts a copy of the filter block into #PREFIX-meta, its ids, labels and
// descriptions named PREFIX-author, PREFIX-journal, PREFIX-pubtype and
// PREFIX-meta-hint. Call it before the panel's first await, so the inputs
// are there as soon as the page is.
export function mountFilters(prefix) {
  mountTemplate('meta-filters-tpl', prefix + '-meta', prefix);
}

// Adds the filters that are set to 'body'.
export function addFilters(prefix, body) {
  for (const [id, key] of FIELDS) {
    const v = $(prefix + '-' + id).value.trim();
    if (v) body[key] = v;
  }
  return body;
}

// Sets each input's maxlength to the server's limit and says it.
export function boundFilters(prefix, maxBytes) {
  if (!maxBytes) return;
  for (const [id] of FIELDS) $(prefix + '-' + id).maxLength = maxBytes;
  const hint = $(prefix + '-meta-hint');
  if (hint && !hint.dataset.bounded) {
    hint.dataset.bounded = '1';
    hint.append(' At most ' + maxBytes + ' bytes each.');
  }
}
