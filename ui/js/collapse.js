// Settings collapsed behind one "Settings" control (a <details>, as
// VerifAI's configuration window) whose summary line says the values in
// force, kept up to date as they change.
import {$, el} from './dom.js';

// 'prefix'-settings becomes a collapsed panel; describe() returns the
// current values as short phrases.
export function collapse(prefix, describe) {
  const box = $(prefix + '-settings');
  const sum = $(prefix + '-settings-sum');
  const now = el('span', {class: 'now', id: prefix + '-settings-now'});
  sum.replaceChildren('Settings', ': ', now);
  const update = () => {
    now.textContent = describe().filter(Boolean).join(' · ');
  };
  box.addEventListener('input', update);
  box.addEventListener('change', update);
  update();
  return update;
}

// The value of input 'id' when it has one, for a phrase.
export function val(id) {
  const e = $(id);
  return e && !e.disabled && e.value !== '' ? e.value : '';
}

// The phrases every panel shares: the metadata filters and the weights
// of panel 'p' (its P-author, P-journal, P-pubtype and P-w inputs).
export function common(p) {
  const f = [['author', p + '-author'], ['journal', p + '-journal'],
    ['type', p + '-pubtype']].filter(([, id]) => val(id))
      .map(([k, id]) => k + ' “' + val(id) + '”');
  const w = $(p + '-w');
  const sem = w && !w.disabled ? Number(w.value) : null;
  return f.concat(sem === null ? ['lexical only'] :
    ['lexical ' + (100 - sem) + '% / semantic ' + sem + '%']);
}

// "from 1990 to 2015", "from 1990", "to 2015" or nothing.
export function years(from, to) {
  const a = val(from);
  const b = val(to);
  if (!a && !b) return '';
  return 'years ' + (a || '…') + ' to ' + (b || '…');
}
