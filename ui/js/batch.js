// Batch page: uploads a MEDEC-format CSV, labeled or not (Text ID and
// Text are enough; then nothing is scored), and optional BLEURT and
// BERTScore per-pair scores, as the official scorer's runs write them) to
// POST /v1/batch, follows the run's "progress" events (notes done and
// failed, rate, ETA) on a progress bar, and shows the score report (the
// metrics, a table per error type and `score --report`'s HTML with its
// charts) when it ends. Cancel stops it after the note in flight; Resume
// (POST /v1/runs/ID/resume) continues a cancelled or failed batch.
import {api, errorText} from './api.js';
import {$, clear, el} from './dom.js';
import {followRun} from './check.js';
import {limits, model, offerModels, offerStrategies} from './limits.js';
import {downloads, scoreDetail} from './runs.js';

let uploadMax = 0;
let runId = 0;

function minutes(s) {
  if (s < 0) return 'estimating';
  if (s < 90) return Math.round(s) + ' s';
  return Math.round(s / 60) + ' min';
}

function showProgress(p) {
  $('batch-progress-box').hidden = false;
  $('batch-progress').max = p.total;
  $('batch-progress').value = p.done;
  $('batch-status').textContent = 'Run ' + runId + ': ' + p.done + ' of ' +
      p.total + ' notes checked' + (p.failed ? ', ' + p.failed + ' failed' :
    '') + (p.resumed ? ' (' + p.resumed + ' kept from before)' : '') +
      ' · ' + p.notes_per_min.toFixed(1) + ' notes/min · ETA ' +
      (p.done === p.total ? 'done' : minutes(p.eta_s)) + '.';
}

function buttons(running, resumable) {
  $('batch-btn').disabled = running;
  $('batch-cancel').hidden = !running;
  $('batch-cancel').disabled = false;
  $('batch-resume').hidden = !resumable;
}

function ended(run) {
  const out = clear($('batch-result'));
  buttons(false, run.status === 'failed');
  if (run.status !== 'done') {
    $('batch-msg').textContent = run.error || 'the batch failed';
    return;
  }
  const b = run.result.batch || {};
  const labeled = run.result.labeled !== false;
  $('batch-status').textContent = 'Run ' + runId + ' done: ' + b.notes +
      ' notes' + (b.failed ? ', ' + b.failed + ' failed (scored as ' +
      'missing)' : '') + '.';
  out.append(downloads(runId, labeled));
  if (!labeled) {
    out.append(el('p', {class: 'muted', id: 'batch-unlabeled'}, 'The CSV ' +
        'has no gold columns (Error Flag, Error Sentence ID, Corrected ' +
        'Sentence): the notes were checked, nothing was scored.'));
    return;
  }
  out.append(el('div', {class: 'panel', id: 'batch-report'},
      el('h2', {}, 'Scores'), scoreDetail({id: runId, result: run.result}, 'batch-frame')));
}


function follow() {
  $('batch-msg').textContent = '';
  buttons(true, false);
  followRun(runId, () => {}, (s) => {
    if (s !== 'running') $('batch-status').textContent = 'Run ' + runId + ': ' + s;
  }, ended, {progress: showProgress});
}

async function submit(ev) {
  ev.preventDefault();
  const data = $('batch-data').files[0];
  const bleurt = $('batch-bleurt').files[0];
  const bert = $('batch-bertscore').files[0];
  clear($('batch-result'));
  $('batch-msg').textContent = '';
  const size = [data, bleurt, bert].reduce((n, f) => n + (f ? f.size : 0), 0);
  if (uploadMax && size > uploadMax) {
    $('batch-msg').textContent = 'The files are ' + size + ' bytes; the ' +
        'server takes at most ' + uploadMax + ' bytes a request.';
    return;
  }
  const body = {data: await data.text(), strategy: $('batch-strategy').value};
  if (bleurt) body.bleurt = await bleurt.text();
  if (bert) body.bertscore = await bert.text();
  if ($('batch-name').value.trim()) body.name = $('batch-name').value.trim();
  if (model('batch')) body.model = model('batch');
  $('batch-btn').disabled = true;
  const res = await api('POST', '/v1/batch', body);
  if (!res.ok) {
    $('batch-btn').disabled = false;
    $('batch-msg').textContent = errorText(res);
    return;
  }
  runId = res.data.run_id;
  $('batch-progress').value = 0;
  follow();
}

async function cancel() {
  $('batch-cancel').disabled = true;
  const res = await api('POST', '/v1/runs/' + runId + '/cancel');
  if (!res.ok) $('batch-msg').textContent = errorText(res);
}

async function resume() {
  const res = await api('POST', '/v1/runs/' + runId + '/resume');
  if (!res.ok) {
    $('batch-msg').textContent = errorText(res);
    return;
  }
  follow();
}

export async function initBatch() {
  $('batch-form').addEventListener('submit', submit);
  $('batch-cancel').addEventListener('click', cancel);
  $('batch-resume').addEventListener('click', resume);
  const lim = await limits();
  if (!lim) return;
  offerStrategies('batch-strategy', lim, false);
  offerModels('batch', lim);
  uploadMax = lim.batch.upload_bytes;
  $('batch-data-lim').textContent = 'At most ' + lim.batch.notes_max +
      ' notes and ' + Math.floor(uploadMax / 1048576) + ' MiB with the ' +
      'score files.';
}
