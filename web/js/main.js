// Boot and routing. Routes are hash paths (#/monitor, #/apps/3, #/devices/<token>), so the
// static server needs no rewrite rules and the back button works.

import { get, post, setSession, onUnauthorized } from './api.js';
import { clear, h } from './dom.js';
import { t, applyStaticText, toggleLanguage, languageToggleLabel, onLanguageChange } from './i18n.js';
import { state, loadApps, selectApp, onAppsChanged } from './state.js';
import { renderLogin } from './views/login.js';
import { renderMonitor } from './views/monitor.js';
import { renderApps } from './views/apps.js';
import { renderCredentials } from './views/credentials.js';
import { renderTemplates } from './views/templates.js';
import { renderDevices } from './views/devices.js';
import { renderPush } from './views/push.js';
import { renderWebhooks } from './views/webhooks.js';

const routes = {
  monitor: renderMonitor,
  apps: renderApps,
  credentials: renderCredentials,
  templates: renderTemplates,
  devices: renderDevices,
  push: renderPush,
  webhooks: renderWebhooks,
};

const main = document.getElementById('main');
let cleanup = null;
let loggedIn = false;
let renderToken = 0;

function parseHash() {
  const path = decodeURIComponent(location.hash.replace(/^#\/?/, ''));
  const [name, ...rest] = path.split('/');
  return { name: routes[name] ? name : 'monitor', arg: rest.join('/') || null };
}

async function route({ focus = true } = {}) {
  if (!loggedIn) return;
  if (cleanup) {
    cleanup();
    cleanup = null;
  }
  const { name, arg } = parseHash();
  for (const link of document.querySelectorAll('#sidenav a')) {
    if (link.dataset.route === name) {
      link.setAttribute('aria-current', 'page');
      // On a phone the navigation is a scrolling strip: keep the current page in view.
      link.scrollIntoView({ block: 'nearest', inline: 'nearest' });
    } else {
      link.removeAttribute('aria-current');
    }
  }
  document.title = `${t(`nav.${name}`)} · ${t('brand')}`;
  const token = ++renderToken;
  clear(main);
  main.setAttribute('aria-busy', 'true');
  delete main.dataset.route;
  try {
    const result = await routes[name](main, { arg, navigate });
    if (token !== renderToken) {
      if (typeof result === 'function') result();
      return;
    }
    cleanup = typeof result === 'function' ? result : null;
    // Says which route the content belongs to (for tests and styles), once it is there.
    main.dataset.route = arg ? `${name}/${arg}` : name;
  } catch (error) {
    if (error.status === 401) return;
    clear(main);
    main.append(h('div', { class: 'banner bad', role: 'alert' }, h('div', {}, h('strong', { text: t('error.load') }), error.message)));
  } finally {
    main.removeAttribute('aria-busy');
  }
  if (focus) main.querySelector('h1')?.focus();
}

export function navigate(hash) {
  if (location.hash === hash) route();
  else location.hash = hash;
}

function fillAppPicker() {
  const picker = document.getElementById('app-picker');
  clear(picker);
  if (!state.apps.length) {
    picker.append(h('option', { value: '', text: t('app.none') }));
    picker.disabled = true;
    return;
  }
  picker.disabled = false;
  for (const app of state.apps) {
    picker.append(h('option', { value: app.id, text: app.name }));
  }
  picker.value = String(state.appID ?? '');
}

async function showConsole() {
  loggedIn = true;
  document.body.classList.remove('logged-out');
  document.getElementById('topbar').hidden = false;
  document.getElementById('sidenav').hidden = false;
  await loadApps();
  await route({ focus: false });
}

function showLogin() {
  loggedIn = false;
  if (cleanup) {
    cleanup();
    cleanup = null;
  }
  document.body.classList.add('logged-out');
  document.getElementById('topbar').hidden = true;
  document.getElementById('sidenav').hidden = true;
  clear(main);
  renderLogin(main, {
    onLoggedIn: async (data) => {
      setSession(data.csrf_token, data.features);
      const info = await get('/session');
      setSession(info.csrf_token, info.features);
      await showConsole();
    },
  });
}

function updateLanguageButtons() {
  for (const button of document.querySelectorAll('.lang-toggle')) {
    button.textContent = languageToggleLabel();
    button.setAttribute('aria-label', t('lang.switch'));
  }
}

async function boot() {
  // Never inside another site's frame: the static files carry no frame-ancestors header, so
  // the page refuses by itself (the API answers with X-Frame-Options: DENY).
  if (window.top !== window.self) {
    document.body.textContent = 'The Tuisong console cannot be shown inside a frame.';
    return;
  }
  applyStaticText();
  updateLanguageButtons();
  document.getElementById('lang-toggle-top').addEventListener('click', toggleLanguage);
  // The skip link moves focus, not the route (routes live in the hash too).
  document.querySelector('.skip-link').addEventListener('click', (event) => {
    event.preventDefault();
    main.focus();
  });
  onLanguageChange(() => {
    applyStaticText();
    updateLanguageButtons();
    if (loggedIn) {
      fillAppPicker();
      route({ focus: false });
    } else {
      showLogin();
    }
  });
  document.getElementById('logout').addEventListener('click', async () => {
    try {
      await post('/logout');
    } catch {
      // Already logged out on the server: the login page is right either way.
    }
    setSession(null, {});
    showLogin();
  });
  document.getElementById('app-picker').addEventListener('change', (event) => {
    selectApp(Number(event.target.value));
    route({ focus: false });
  });
  onAppsChanged(fillAppPicker);
  onUnauthorized(showLogin);
  window.addEventListener('hashchange', () => route());

  try {
    const info = await get('/session');
    setSession(info.csrf_token, info.features);
    await showConsole();
  } catch {
    showLogin();
  }
}

boot();
