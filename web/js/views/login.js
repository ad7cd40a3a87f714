import { post } from '../api.js';
import { h, field, setFieldError } from '../dom.js';
import { t, toggleLanguage, languageToggleLabel, errorText } from '../i18n.js';

export function renderLogin(container, { onLoggedIn }) {
  const password = h('input', { type: 'password', name: 'password', autocomplete: 'current-password', required: true });
  const passwordField = field(t('login.password'), password, { id: 'login-password', hint: t('login.hint') });
  const submit = h('button', { type: 'submit', class: 'primary', id: 'login-submit', text: t('login.submit') });
  const status = h('div', { role: 'alert', id: 'login-error' });
  const toggle = h('button', { type: 'button', class: 'lang-toggle small', text: languageToggleLabel(), 'aria-label': t('lang.switch'), onclick: toggleLanguage });

  let countdown = null;
  function lockFor(seconds) {
    submit.disabled = true;
    let left = seconds;
    clearInterval(countdown);
    const tick = () => {
      if (left <= 0) {
        clearInterval(countdown);
        submit.disabled = false;
        submit.textContent = t('login.submit');
        return;
      }
      submit.textContent = t('login.wait', { seconds: left });
      left -= 1;
    };
    tick();
    countdown = setInterval(tick, 1000);
  }

  const form = h('form', { class: 'panel login-card', novalidate: true, 'aria-labelledby': 'login-title' },
    toggle,
    h('div', { class: 'brand' }, h('span', { class: 'brand-mark', 'aria-hidden': 'true', text: '推' }), h('span', { text: t('brand') })),
    h('h1', { id: 'login-title', tabindex: '-1', text: t('login.title') }),
    h('p', { class: 'subtitle', text: t('login.subtitle') }),
    passwordField.wrap,
    status,
    h('div', { class: 'actions' }, submit));

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    status.replaceChildren();
    setFieldError(password, null);
    if (!password.value) {
      setFieldError(password, t('login.required'));
      password.focus();
      return;
    }
    submit.disabled = true;
    try {
      const data = await post('/login', { password: password.value });
      password.value = '';
      clearInterval(countdown);
      await onLoggedIn(data);
    } catch (error) {
      submit.disabled = false;
      status.replaceChildren(h('div', { class: 'banner bad' }, errorText(error)));
      password.select();
      if (error.retryAfter) lockFor(error.retryAfter);
    }
  });

  container.append(h('div', { class: 'login-wrap' }, form));
  password.focus();
}
