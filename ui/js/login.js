// Login and registration page: both forms post JSON to /v1 and, on
// success, keep the CSRF token for the app and go to it.
import {api, errorText, setCsrf} from './api.js';

async function logIn(username, password, msg) {
  const res = await api('POST', '/v1/login', {username, password});
  if (!res.ok) {
    msg.textContent = errorText(res);
    return false;
  }
  setCsrf(res.data.csrf_token);
  location.href = '/';
  return true;
}

function bind(formId, btnId, msgId, action) {
  const form = document.getElementById(formId);
  const btn = document.getElementById(btnId);
  const msg = document.getElementById(msgId);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const user = form.elements.username.value.trim();
    const pass = form.elements.password.value;
    msg.textContent = '';
    btn.disabled = true;
    try {
      await action(user, pass, msg);
    } finally {
      btn.disabled = false;
    }
  });
}

document.addEventListener('DOMContentLoaded', () => {
  bind('login', 'login-btn', 'login-msg', logIn);
  bind('register', 'reg-btn', 'reg-msg', async (user, pass, msg) => {
    const res = await api('POST', '/v1/register',
        {username: user, password: pass});
    if (!res.ok) {
      msg.textContent = errorText(res);
      return;
    }
    await logIn(user, pass, msg);
  });
});
