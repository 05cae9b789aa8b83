// The /v1 API from the browser: JSON requests with the session cookie and
// the CSRF token the server hands out at login (kept for this tab only).
import {el} from './dom.js';

const CSRF_KEY = 'medtrust.csrf';

export function setCsrf(token) {
  sessionStorage.setItem(CSRF_KEY, token || '');
}

// Sends a request; resolves to {ok, status, data} where data is the parsed
// JSON body (or {error: text} when the body is not JSON). Never throws for
// HTTP errors, so every caller can show the server's own message.
export async function api(method, path, body) {
  const headers = {};
  const opts = {method, headers, credentials: 'same-origin'};
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    opts.body = JSON.stringify(body);
  }
  if (method !== 'GET' && method !== 'HEAD') {
    headers['X-CSRF-Token'] = sessionStorage.getItem(CSRF_KEY) || '';
  }
  let r;
  try {
    r = await fetch(path, opts);
  } catch (e) {
    return {ok: false, status: 0,
      data: {error: 'cannot reach the server: ' + e.message}};
  }
  const text = await r.text();
  let data;
  try {
    data = text ? JSON.parse(text) : {};
  } catch (e) {
    data = {error: text.slice(0, 300) || r.statusText};
  }
  return {ok: r.ok, status: r.status, data};
}

// The message of a failed response, for people.
export function errorText(res) {
  const m = res.data && res.data.error ? res.data.error : '';
  return m || ('request failed (HTTP ' + res.status + ')');
}

// Fills a <select> with the store's sources (GET /v1/sources), after its
// "all sources" option; leaves it as it is when the request fails.
export async function fillSources(select) {
  const res = await api('GET', '/v1/sources');
  if (!res.ok) return;
  for (const s of res.data.sources) {
    select.append(el('option', {value: s.name},
        s.name + ' (' + s.documents + ' documents)'));
  }
}
