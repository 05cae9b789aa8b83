// The server's limits of each setting (GET /v1/limits, the same tables the
// routes enforce): the panels take their bounds and defaults from it and
// say them next to each control.
import {api} from './api.js';
import {$} from './dom.js';

let cached = null;

export async function limits() {
  if (!cached) {
    cached = api('GET', '/v1/limits').then((r) => (r.ok ? r.data : null));
  }
  return cached;
}

const num = (x) => String(Math.round(x * 100) / 100);

// Sets a number input's bounds and default from field 'f' ({min, max,
// default, integer}) and writes them into its hint element.
export function bound(inputId, hintId, f, unset) {
  const input = $(inputId);
  if (!f || !input) return;
  input.min = num(f.min);
  input.max = num(f.max);
  input.step = f.integer ? '1' : 'any';
  if (!unset && input.value === '') input.value = num(f.default);
  const hint = $(hintId);
  if (hint) {
    hint.textContent = num(f.min) + ' to ' + num(f.max) +
        (unset ? '' : ', default ' + num(f.default)) + '.';
  }
}
