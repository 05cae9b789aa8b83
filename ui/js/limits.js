// The server's limits of each setting (GET /v1/limits, the same tables the
// routes enforce): the panels take their bounds and defaults from it and
// say them next to each control.
import {api} from './api.js';
import {$, el, mountTemplate} from './dom.js';

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

// The model selector of panel 'prefix' (#PREFIX-model-box): shown with
// the server's default and the names of GET /v1/limits' "models" (serve
// --llm-choice) when there are any; model(prefix) is the name chosen, or
// '' for the server's default (--llm).
export function offerModels(prefix, lim) {
  const names = (lim && lim.models) || [];
  const box = $(prefix + '-model-box');
  box.hidden = names.length === 0;
  if (!names.length) return;
  mountTemplate('model-tpl', prefix + '-model-box', prefix);
  $(prefix + '-model').append(
      el('option', {value: ''}, 'The server\'s default'),
      ...names.map((n) => el('option', {value: n}, n)));
  $(prefix + '-model-lim').textContent = 'The server offers ' +
      names.length + ' more model' + (names.length > 1 ? 's' : '') +
      ' (--llm-choice).';
}

export function model(prefix) {
  const box = $(prefix + '-model-box');
  return box && !box.hidden && $(prefix + '-model') ?
    $(prefix + '-model').value : '';
}

// Fills select 'id' with the checker's strategies, from the one strategy
// table the server reads (GET /v1/limits' check.strategy_info): each
// option's value is the strategy's name, its text the name and, with
// 'titled', its title. Returns the entries by name ({} without limits).
export function offerStrategies(id, lim, titled) {
  const info = (lim && lim.check && lim.check.strategy_info) || [];
  const sel = $(id);
  const byName = {};
  for (const s of info) {
    byName[s.name] = s;
    sel.append(el('option', {value: s.name},
        titled ? s.name + ': ' + s.title : s.name));
  }
  return byName;
}
