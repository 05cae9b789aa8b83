// The metadata filters the Search and Ask panels share (author, journal,
// publication type): read into a request body, bounded by the server's
// limit (GET /v1/limits' filter_bytes), which the hint then states.
import {$} from './dom.js';

const FIELDS = [['author', 'author'], ['journal', 'journal'],
  ['pubtype', 'publication_type']];

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
