import { get, post, patch, del } from '../api.js';
import { h, field, setFieldError, notice, confirmDialog, formatTime, formatNumber, formatClock } from '../dom.js';
import { t, errorText, paren } from '../i18n.js';
import { currentApp } from '../state.js';
import { noAppPanel } from './common.js';

/** The events an endpoint may name, in the order the console offers them (docs/webhooks.md). */
const EVENTS = ['message.completed', 'device.invalidated', 'credential.failing', 'delivery.failed', 'delivery.arrived', 'delivery.clicked'];
/** What an endpoint created without a list receives; the form starts with these checked. */
const DEFAULT_EVENTS = ['message.completed', 'device.invalidated', 'credential.failing'];
/** While an endpoint's page is open its attempts are read again this often (the sender is asynchronous). */
const REFRESH_MS = 3000;

export async function renderWebhooks(container, { arg, navigate }) {
  const app = currentApp();
  if (!app) {
    container.append(h('h1', { tabindex: '-1', text: t('hook.title') }), noAppPanel());
    return null;
  }
  if (arg) return renderEndpoint(container, app, Number(arg), navigate);

  const list = h('div', { class: 'table-wrap', id: 'webhook-list' });
  async function refreshList() {
    const endpoints = (await get(`/apps/${app.id}/webhooks`)).webhooks;
    list.replaceChildren(endpoints.length ? endpointTable(endpoints) : h('p', { class: 'empty', text: t('hook.none') }));
  }

  const url = h('input', { type: 'text', name: 'url', required: true, maxlength: 2000, autocomplete: 'off', spellcheck: 'false', placeholder: 'https://app.example.com/tuisong' });
  const description = h('input', { type: 'text', name: 'description', maxlength: 500, autocomplete: 'off' });
  const events = eventChecks('new-webhook-events', DEFAULT_EVENTS, t('hook.eventsHint'));
  const secretBox = h('div', { id: 'new-webhook-secret', 'aria-live': 'polite' });
  const inputs = { url, description };
  const submit = h('button', { type: 'submit', class: 'primary', id: 'new-webhook-submit', text: t('hook.create') });
  const form = h('form', { id: 'new-webhook-form', novalidate: true },
    field(t('hook.url'), url, { id: 'new-webhook-url', hint: t('hook.urlHint') }).wrap,
    field(`${t('hook.description')}${paren(t('common.optional'))}`, description, { id: 'new-webhook-description' }).wrap,
    events.element,
    h('div', { class: 'actions' }, submit));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    for (const input of Object.values(inputs)) setFieldError(input, null);
    submit.disabled = true;
    try {
      const chosen = events.selected();
      // None checked: the server's defaults (the hint says which).
      const created = await post(`/apps/${app.id}/webhooks`, { url: url.value.trim(), description: description.value, ...(chosen.length ? { events: chosen } : {}) });
      secretBox.replaceChildren(secretOnce(created.secret, t('hook.secretOnce', { url: created.url }), created.id));
      url.value = '';
      description.value = '';
      notice(t('hook.created'), 'ok');
      await refreshList();
    } catch (error) {
      showError(error, inputs);
    } finally {
      submit.disabled = false;
    }
  });

  container.append(
    h('div', { class: 'page-head' }, h('div', {}, h('h1', { tabindex: '-1', text: t('hook.title') }), h('p', { class: 'subtitle', text: t('hook.subtitle', { name: app.name }) }))),
    h('section', { class: 'panel', 'aria-labelledby': 'hook-list-title' }, h('h2', { id: 'hook-list-title', text: t('hook.list') }), list),
    h('section', { class: 'panel', 'aria-labelledby': 'hook-new-title' },
      h('h2', { id: 'hook-new-title', text: t('hook.new') }),
      h('p', { class: 'muted', text: t('hook.newHint') }),
      form, secretBox));
  await refreshList();
  return null;
}

function endpointTable(endpoints) {
  // data-label names each cell when a phone shows the rows as cards.
  const cell = (labelKey, attrs, ...content) => h('td', { ...attrs, dataset: { label: t(labelKey) } }, ...content);
  return h('table', { id: 'webhooks-table', class: 'cards' },
    h('thead', {}, h('tr', {},
      h('th', { scope: 'col', text: t('hook.url') }),
      h('th', { scope: 'col', text: t('hook.events') }),
      h('th', { scope: 'col', text: t('hook.status') }),
      h('th', { scope: 'col', text: t('hook.failingSince') }))),
    h('tbody', {}, endpoints.map((e) => h('tr', { dataset: { webhook: e.id, enabled: String(e.enabled) } },
      cell('hook.url', { class: 'hook-url' }, h('a', { href: `#/webhooks/${e.id}`, text: e.url }),
        e.description ? h('div', { class: 'muted', text: e.description }) : null),
      cell('hook.events', { class: 'hook-events' }, h('div', {}, e.events.map((name) => [h('span', { class: 'badge', text: name }), ' ']))),
      cell('hook.status', {}, h('div', {}, statusBadge(e), e.enabled ? null : h('div', { class: 'muted hook-reason', text: e.disabled_reason || '' }))),
      cell('hook.failingSince', { class: 'nowrap', text: e.failing_since ? formatTime(e.failing_since) : '—' })))));
}

function statusBadge(endpoint) {
  if (!endpoint.enabled) return h('span', { class: 'badge bad', text: t('hook.disabled') });
  if (endpoint.failing_since) return h('span', { class: 'badge warn', text: t('hook.failing') });
  return h('span', { class: 'badge ok', text: t('hook.enabled') });
}

/** A checkbox per event; `selected()` reads them (an error about them is a notice). */
function eventChecks(id, checked, hint) {
  const boxes = EVENTS.map((name) => h('input', { type: 'checkbox', id: `${id}-${name.replace('.', '-')}`, value: name, checked: checked.includes(name) }));
  const element = h('fieldset', { id },
    h('legend', { text: t('hook.events') }),
    h('div', { class: 'radios' }, boxes.map((box) => h('label', { for: box.id }, box, ` ${box.value}`))),
    h('p', { class: 'muted', text: hint }));
  return { element, selected: () => boxes.filter((box) => box.checked).map((box) => box.value) };
}

/** A `whsec_` secret shown once, with a copy button: the server never shows it again. */
function secretOnce(secret, title, endpointID) {
  const copy = h('button', { type: 'button', class: 'small', id: 'webhook-secret-copy', text: t('apps.copy') });
  copy.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(secret);
      notice(t('apps.copied'), 'ok');
    } catch {
      notice(t('hook.copyFailed'), 'bad');
    }
  });
  return h('div', { class: 'banner info', role: 'status' },
    h('div', { style: { minWidth: '0', flex: '1' } },
      h('strong', { text: title }),
      h('div', { class: 'secret-once', id: 'webhook-secret-value', text: secret }),
      h('p', { class: 'muted', text: t('hook.secretHint') }),
      h('div', { class: 'actions' }, copy,
        endpointID ? h('a', { href: `#/webhooks/${endpointID}`, id: 'webhook-secret-open', text: t('hook.open') }) : null)));
}

function showError(error, inputs) {
  const input = error.field && inputs[error.field];
  if (input) {
    setFieldError(input, errorText(error));
    input.focus();
  } else {
    notice(errorText(error), 'bad');
  }
}

async function renderEndpoint(container, app, id, navigate) {
  let endpoint;
  try {
    endpoint = await get(`/apps/${app.id}/webhooks/${id}`);
  } catch (error) {
    if (error.status !== 404) throw error;
    container.append(h('h1', { tabindex: '-1', text: t('hook.notFound') }), h('p', {}, h('a', { href: '#/webhooks', text: `← ${t('hook.back')}` })));
    return null;
  }
  const path = `/apps/${app.id}/webhooks/${id}`;
  const state = h('div', { id: 'webhook-state' });
  const details = h('dl', { class: 'details', id: 'webhook-details' });
  const attempts = h('div', { class: 'table-wrap', id: 'webhook-attempts', 'aria-live': 'polite' });
  const secretBox = h('div', { id: 'webhook-rotated-secret', 'aria-live': 'polite' });
  const updated = h('span', { class: 'muted', id: 'webhook-updated' });

  let drawn = null;
  function draw(data) {
    endpoint = data;
    updated.textContent = t('monitor.updated', { time: formatClock(new Date()) });
    // Drawn again only when something changed: a row under the pointer (or a focused Resend)
    // stays where it is between refreshes.
    const key = JSON.stringify(data);
    if (key === drawn) return;
    drawn = key;
    const row = (label, value, cls) => [h('dt', { text: label }), h('dd', { class: cls || null }, value ?? '—')];
    details.replaceChildren(
      ...row(t('hook.status'), statusBadge(data)),
      ...row(t('hook.events'), data.events.map((name) => [h('span', { class: 'badge', text: name }), ' '])),
      ...row(t('hook.description'), data.description || null),
      ...row(t('hook.failingSince'), data.failing_since ? formatTime(data.failing_since) : null),
      ...(data.previous_secret_until ? row(t('hook.previousSecret'), formatTime(data.previous_secret_until)) : []),
      ...row(t('hook.createdAt'), formatTime(data.created_at)));
    state.replaceChildren(data.enabled ? (data.failing_since
      ? h('div', { class: 'banner warn', role: 'status' }, h('div', {}, h('strong', { text: t('hook.failingTitle', { time: formatTime(data.failing_since) }) }), t('hook.failingHint')))
      : '')
      : h('div', { class: 'banner bad', role: 'alert', id: 'webhook-disabled' },
        h('div', {},
          h('strong', { text: t('hook.disabledTitle', { time: formatTime(data.disabled_at) }) }),
          h('div', { class: 'hook-reason', text: data.disabled_reason || '' }),
          h('p', { class: 'muted', text: t('hook.enableHint') }),
          h('div', { class: 'actions' }, h('button', { type: 'button', class: 'primary', id: 'webhook-enable', text: t('hook.enable'), onclick: enable })))));
    attempts.replaceChildren(data.attempts.length ? attemptTable(data.attempts) : h('p', { class: 'empty', text: t('hook.noAttempts') }));
  }

  async function act(button, work) {
    button.disabled = true;
    try {
      await work();
    } catch (error) {
      notice(errorText(error), 'bad');
    } finally {
      button.disabled = false;
    }
  }

  async function enable(event) {
    await act(event.target, async () => {
      await patch(path, { enabled: true });
      notice(t('hook.enabledAgain'), 'ok');
      await refresh();
    });
  }

  function attemptTable(rows) {
    const cell = (labelKey, attrs, ...content) => h('td', { ...attrs, dataset: { label: t(labelKey) } }, ...content);
    return h('table', { id: 'attempts-table', class: 'cards' },
      h('thead', {}, h('tr', {},
        h('th', { scope: 'col', text: t('hook.time') }),
        h('th', { scope: 'col', text: t('hook.event') }),
        h('th', { scope: 'col', text: t('hook.answer') }),
        h('th', { scope: 'col', class: 'num', text: t('hook.latency') }),
        h('th', { scope: 'col', text: t('hook.body') }),
        h('th', { scope: 'col', text: t('common.actions') }))),
      h('tbody', {}, rows.map((a) => h('tr', { dataset: { attempt: a.id, event: a.event_id, status: a.status ?? '' } },
        cell('hook.time', { class: 'nowrap', text: formatTime(a.attempted_at) }),
        cell('hook.event', {}, h('div', {}, h('div', { text: a.type }), h('div', { class: 'muted mono hook-event-id', text: a.event_id }))),
        cell('hook.answer', { class: 'hook-status' }, a.status === null
          ? h('span', { class: 'badge bad', text: t('hook.noAnswer') })
          : h('span', { class: `badge ${a.status >= 200 && a.status < 300 ? 'ok' : 'bad'}`, text: String(a.status) })),
        cell('hook.latency', { class: 'num nowrap hook-latency', text: t('hook.ms', { n: formatNumber(a.latency_ms) }) }),
        cell('hook.body', { class: 'mono hook-response', text: a.response || '—' }),
        cell('common.actions', {}, h('button', { type: 'button', class: 'small hook-resend', text: t('hook.resend'), onclick: (event) => resend(event, a) }))))));
  }

  async function resend(event, attempt) {
    await act(event.target, async () => {
      await post(`${path}/attempts/${attempt.id}/resend`);
      notice(t('hook.resent', { id: attempt.event_id }), 'ok');
      await refresh();
    });
  }

  const description = h('input', { type: 'text', name: 'description', maxlength: 500, autocomplete: 'off', value: endpoint.description || '' });
  const events = eventChecks('webhook-events', endpoint.events, t('hook.eventsEditHint'));
  const inputs = { description };
  const save = h('button', { type: 'submit', class: 'primary', id: 'webhook-save', text: t('common.save') });
  const form = h('form', { id: 'webhook-form', novalidate: true },
    field(`${t('hook.description')}${paren(t('common.optional'))}`, description, { id: 'webhook-description' }).wrap,
    events.element,
    h('div', { class: 'actions' }, save));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    for (const input of Object.values(inputs)) setFieldError(input, null);
    save.disabled = true;
    try {
      await patch(path, { description: description.value, events: events.selected() });
      notice(t('hook.saved'), 'ok');
      await refresh();
    } catch (error) {
      showError(error, inputs);
    } finally {
      save.disabled = false;
    }
  });

  const test = h('button', { type: 'button', id: 'webhook-test', text: t('hook.test') });
  test.addEventListener('click', () => act(test, async () => {
    const sent = await post(`${path}/test`);
    notice(t('hook.testSent', { id: sent.event_id }), 'ok');
    await refresh();
  }));
  const rotate = h('button', { type: 'button', id: 'webhook-rotate', text: t('hook.rotate') });
  rotate.addEventListener('click', async () => {
    if (!await confirmDialog(t('hook.rotate'), t('hook.rotateConfirm'), t('hook.rotateYes'), t('common.cancel'))) return;
    await act(rotate, async () => {
      const rotated = await post(`${path}/rotate-secret`);
      secretBox.replaceChildren(secretOnce(rotated.secret, t('hook.rotatedOnce'), null));
      await refresh();
    });
  });
  const remove = h('button', { type: 'button', class: 'danger', id: 'webhook-delete', text: t('common.delete') });
  remove.addEventListener('click', async () => {
    if (!await confirmDialog(t('hook.deleteTitle'), t('hook.deleteConfirm', { url: endpoint.url }), t('common.delete'), t('common.cancel'))) return;
    await act(remove, async () => {
      await del(path);
      notice(t('hook.deleted'), 'ok');
      navigate('#/webhooks');
    });
  });

  let stopped = false;
  let timer = null;
  async function refresh() {
    clearTimeout(timer);
    try {
      const data = await get(path);
      if (stopped) return;
      draw(data);
    } catch (error) {
      if (stopped || error.status === 401) return;
      updated.textContent = t('monitor.refreshFailed', { message: errorText(error) });
    }
    if (!stopped) timer = setTimeout(refresh, document.hidden ? REFRESH_MS * 5 : REFRESH_MS);
  }

  container.append(
    h('p', {}, h('a', { href: '#/webhooks', text: `← ${t('hook.back')}` })),
    h('div', { class: 'page-head' },
      h('div', { class: 'hook-head' }, h('h1', { tabindex: '-1', text: t('hook.endpoint') }), h('p', { class: 'subtitle mono hook-url', id: 'webhook-url', text: endpoint.url })),
      updated),
    state,
    h('div', { class: 'grid-2' },
      h('section', { class: 'panel', 'aria-labelledby': 'hook-details-title' },
        h('h2', { id: 'hook-details-title', text: t('hook.details') }), details,
        h('div', { class: 'actions' }, test, rotate), secretBox),
      h('section', { class: 'panel', 'aria-labelledby': 'hook-edit-title' },
        h('h2', { id: 'hook-edit-title', text: t('hook.edit') }), form)),
    h('section', { class: 'panel', 'aria-labelledby': 'hook-attempts-title', style: { marginTop: '16px' } },
      h('h2', { id: 'hook-attempts-title', text: t('hook.attempts') }),
      h('p', { class: 'muted', text: t('hook.attemptsHint') }),
      attempts),
    h('section', { class: 'panel', 'aria-labelledby': 'hook-danger-title' },
      h('h2', { id: 'hook-danger-title', text: t('hook.danger') }),
      h('p', { class: 'muted', text: t('hook.deleteHint') }),
      h('div', { class: 'actions' }, remove)));
  draw(endpoint);
  timer = setTimeout(refresh, REFRESH_MS);
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
