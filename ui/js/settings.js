// Settings page: for admins the registration switch, the configured
// models, the corpora and the users; for everyone their API tokens.
import {api, errorText} from './api.js';
import {$, clear, el, table, when} from './dom.js';

function models(m) {
  const roles = Object.entries(m.llm.roles || {});
  const check = Object.entries(m.check || {}).map(([k, v]) =>
    k + (v ? ' ready' : ' needs a model')).join(', ');
  return [table('Language models', ['Role', 'Model'],
      [['every role (default)', m.llm.default || 'none configured']].concat(
          roles.map(([k, v]) => [k, v || '']))),
  el('p', {}, 'Checker strategies: ' + (check || 'unknown') + '.'),
  m.runs_jobs === false ? el('p', {}, 'This server runs no jobs itself ' +
      '(--llm-jobs 0): the servers and workers that claim them use their ' +
      'own models.') : null,
  el('p', {}, 'Question answering: ' + (m.ask ? 'ready' : 'needs a model') +
      ', claims verified by ' + (m.nli === 'llm' || !m.nli ?
        'the model as judge' : m.nli) + '.'),
  el('p', {}, 'Embedder of the index: ' + (m.embedder ?
      m.embedder.spec + ' (' + m.embedder.dims + ' dimensions)' :
      'none (lexical search only)') + '.'),
  el('p', {}, 'Reranker: ' + (m.reranker ? 'a cross-encoder reranks ' +
      'MedReAct\'s searches and Ask\'s documents' : 'none (serve ' +
      '--reranker SPEC adds one)') + '.'),
  m.llm.default ? null : el('p', {class: 'msg info'}, 'To check notes ' +
      'and answer questions, ' +
      'start the server with --llm openai:BASE_URL#MODEL or --llm ' +
      'gguf:PATH, or set MEDTRUST_LLM.')];
}

function sources(s) {
  return table(null, ['Corpus', 'Documents', 'Chunks'],
      s.sources.map((x) => [x.name, String(x.documents), String(x.chunks)])
          .concat([['total', String(s.total ? s.total.documents : 0),
            String(s.total ? s.total.chunks : 0)]]));
}

async function loadAdmin() {
  const [set, m, s, u] = await Promise.all([api('GET', '/v1/settings'),
    api('GET', '/v1/models'), api('GET', '/v1/sources'),
    api('GET', '/v1/users')]);
  const bad = [set, m, s, u].find((r) => !r.ok);
  $('settings-msg').textContent = bad ? errorText(bad) : '';
  if (set.ok) $('set-reg').checked = set.data.registration === 'open';
  if (m.ok) clear($('set-models')).append(...models(m.data).filter(Boolean));
  if (s.ok) clear($('set-sources')).append(sources(s.data));
  if (u.ok) {
    clear($('set-users')).append(table(null, ['User', 'Role', 'Created'],
        u.data.users.map((x) => [x.username, x.role, when(x.created_at)])));
  }
}

async function loadTokens() {
  const res = await api('GET', '/v1/tokens');
  const box = clear($('token-list'));
  if (!res.ok) {
    box.append(el('p', {class: 'msg error'}, errorText(res)));
    return;
  }
  if (!res.data.tokens.length) {
    box.append(el('p', {class: 'muted'}, 'No API tokens.'));
    return;
  }
  box.append(table(null, ['Token', 'Created', ''],
      res.data.tokens.map((t) => [t.name || '(unnamed)', when(t.created_at),
        el('button', {type: 'button', class: 'secondary',
          'aria-label': 'Revoke token ' + (t.name || t.id),
          onclick: async () => {
            await api('DELETE', '/v1/tokens/' + t.id);
            loadTokens();
          }}, 'Revoke')])));
}

export function loadSettings(me) {
  $('settings-admin').hidden = me.role !== 'admin';
  if (me.role === 'admin') loadAdmin();
  loadTokens();
}

export function initSettings() {
  $('set-reg').addEventListener('change', async () => {
    const want = $('set-reg').checked ? 'open' : 'closed';
    const res = await api('PUT', '/v1/settings', {registration: want});
    $('set-reg-status').textContent = res.ok ?
      'Registration is ' + res.data.registration + '.' : errorText(res);
  });
  $('token-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const res = await api('POST', '/v1/tokens', {name: $('token-name').value});
    $('token-new').textContent = res.ok ? 'New token (shown once, copy it ' +
        'now): ' + res.data.token : errorText(res);
    loadTokens();
  });
}
