// Runs page: the user's runs (an admin may list everyone's) with their
// scores; a score run shows its metrics and the HTML report inline, a
// check run its verdict and trajectory, an ask run its answer.
import {api, errorText} from './api.js';
import {$, clear, el, table, when} from './dom.js';
import {renderCheckResult, trajectory} from './check.js';
import {renderAsk} from './ask.js';

const DETAIL_MAX = 10; // runs whose results are fetched for the list

const f2 = (x) => (typeof x === 'number' ? x.toFixed(2) : '–');

// One line of scores for a finished run.
function summary(run) {
  const r = run.result;
  if (!r) return run.error || '';
  if (run.kind === 'batch' && r.labeled === false) {
    return (r.batch || {}).notes + ' notes checked, unlabeled: no scores';
  }
  if (run.kind === 'score' || run.kind === 'batch') {
    return 'flag acc ' + f2(r.error_flag_accuracy) + ', sentence acc ' +
        f2(r.error_sentence_accuracy) + ', ' +
        'aggregate' + aggregateLabel(r.composite || {}).slice(9) + ' ' +
        f2(r.composite && r.composite.aggregate);
  }
  if (run.kind === 'check') {
    if (r.fallback) return 'fallback: no model answer';
    if (r.error_flag && r.error_sentence_id < 0) return 'error, not located';
    return r.error_flag ? 'error in sentence ' + r.error_sentence_id :
      'no error';
  }
  if (run.kind === 'ask') return (r.claims || []).length + ' claims';
  return '';
}

// The aggregate's caveat, as the report says it: the official
// MEDIQA-CORR aggregate is the mean of ROUGE-1, BERTScore and BLEURT;
// without both of the latter it is the mean of what was given.
export function aggregateLabel(c) {
  const bert = typeof c.bertscore === 'number';
  const bleurt = typeof c.bleurt === 'number';
  if (bert && bleurt) return 'Aggregate (ROUGE-1, BERTScore, BLEURT)';
  if (!bert && !bleurt) return 'Aggregate (ROUGE-only, not official)';
  return 'Aggregate (ROUGE-1 and ' + (bert ? 'BERTScore' : 'BLEURT') +
      ' only, not official)';
}

// Links to the run's files: the submission (one MEDIQA-CORR line a
// note), every note's trace (JSON lines) and, when scored, the report.
export function downloads(id, labeled) {
  const a = (what, text) => el('li', {}, el('a', {href: '/v1/runs/' + id +
      '/' + what, download: '', id: 'batch-dl-' + what}, text));
  return el('div', {class: 'panel', id: 'batch-downloads'},
      el('h2', {}, 'Downloads'), el('ul', {}, a('submission', 'Submission ' +
          '(MEDIQA-CORR lines, .txt)'), a('traces', 'Traces (each note\'s ' +
          'check and trajectory, JSON lines)'), labeled ?
        a('report', 'Score report (HTML)') : null));
}

// A score or batch run's metrics, its per-error-type table and its HTML
// report (score --report) framed.
export function scoreDetail(run, frameId) {
  const r = run.result || {};
  const c = r.composite || {};
  const rows = [['Error flag accuracy', f2(r.error_flag_accuracy)],
    ['Error sentence accuracy', f2(r.error_sentence_accuracy)],
    ['ROUGE-1', f2(c.rouge1)], ['ROUGE-2', f2(c.rouge2)],
    ['ROUGE-L', f2(c.rougeL)]].concat(
      typeof c.bertscore === 'number' ? [[r.bertscore_label || 'BERTScore',
        f2(c.bertscore)]] : [],
      typeof c.bleurt === 'number' ? [['BLEURT', f2(c.bleurt)]] : [],
      [[aggregateLabel(c), f2(c.aggregate)],
        ['Notes', String(r.notes || 0)]]);
  const types = Object.entries((r.breakdown || {}).error_type || {});
  return [table('Scores of ' + (r.run || 'the run'), ['Metric', 'Value'], rows),
    ...(types.length ? [table('By error type', ['Error type', 'Notes',
      'Flag accuracy', 'Sentence accuracy', 'Aggregate'], types.map(
        ([k, g]) => [k, String(g.notes), f2(g.error_flag_accuracy),
          f2(g.error_sentence_accuracy), f2((g.composite || {}).aggregate)]))] :
      []),
    el('h3', {}, 'Report'),
    el('iframe', {class: 'report', id: frameId || 'run-report',
      src: '/v1/runs/' + run.id + '/report', sandbox: 'allow-scripts',
      title: 'Score report of run ' + run.id})];
}

function checkDetail(run) {
  const t = trajectory();
  (run.result.trace || []).forEach(t.add);
  return [renderCheckResult(run.result, null), t.node];
}

async function showRun(id) {
  const box = clear($('run-detail'));
  const res = await api('GET', '/v1/runs/' + id);
  if (!res.ok) {
    box.append(el('p', {class: 'msg error'}, errorText(res)));
    return;
  }
  const run = res.data;
  box.append(el('h2', {id: 'run-detail-h', tabindex: '-1'},
      'Run ' + run.id + ' (' + run.kind + ', ' + run.status + ')'));
  if (run.status === 'failed' || run.status === 'interrupted') {
    box.append(el('p', {class: 'msg error'}, run.error || 'failed'));
  } else if (run.result && run.kind === 'batch' &&
      run.result.labeled === false) {
    box.append(downloads(run.id, false));
  } else if (run.result && (run.kind === 'score' || run.kind === 'batch')) {
    if (run.kind === 'batch') box.append(downloads(run.id, true));
    box.append(...scoreDetail(run));
  } else if (run.result && run.kind === 'check') {
    box.append(...checkDetail(run));
  } else if (run.result && run.kind === 'ask') {
    box.append(renderAsk(run.result));
  } else {
    box.append(el('pre', {}, JSON.stringify(run.result, null, 2)));
  }
  $('run-detail-h').focus();
}

// Fills the scores column for the newest finished runs, one at a time so
// the account's rate limit is never hit.
async function fillScores(runs, cells) {
  let n = 0;
  for (let i = 0; i < runs.length && n < DETAIL_MAX; i++) {
    if (runs[i].status !== 'done') continue;
    n++;
    const res = await api('GET', '/v1/runs/' + runs[i].id);
    if (res.ok) cells[i].textContent = summary(res.data);
  }
}

export async function loadRuns() {
  const all = $('runs-all').checked ? '?all=1' : '';
  const res = await api('GET', '/v1/runs' + all);
  const box = clear($('runs-table'));
  $('runs-msg').textContent = res.ok ? '' : errorText(res);
  if (!res.ok) return;
  const runs = res.data.runs;
  if (!runs.length) {
    box.append(el('p', {class: 'muted'}, 'No runs yet: check a note, ask ' +
        'a question, or score a submission (POST /v1/score).'));
    return;
  }
  const cells = runs.map((r) => el('span', {}, r.error || ''));
  const rows = runs.map((r, i) => [
    el('button', {type: 'button', class: 'secondary',
      'aria-label': 'Open run ' + r.id, onclick: () => showRun(r.id)},
    String(r.id)), r.kind, r.status, r.user, when(r.created_at),
    when(r.finished_at), cells[i]]);
  box.append(table(null, ['Run', 'Kind', 'Status', 'User', 'Started',
    'Finished', 'Scores'], rows));
  fillScores(runs, cells);
}

export function initRuns(me) {
  $('runs-all-box').hidden = me.role !== 'admin';
  $('runs-refresh').addEventListener('click', loadRuns);
  $('runs-all').addEventListener('change', loadRuns);
}
