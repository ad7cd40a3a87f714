import { get, patch, put, del } from '../api.js';
import { h, append, field, setFieldError, notice, confirmDialog, formatTime, formatNumber, shortToken } from '../dom.js';
import { t, errorText, localized } from '../i18n.js';
import { currentApp } from '../state.js';
import { stateBadge, reasonText, channelLabel } from '../widgets.js';
import { noAppPanel } from './common.js';

// The last search survives visits to a device's detail page.
const lastSearch = { appID: null, by: 'all', q: '' };

export async function renderDevices(container, { arg, navigate }) {
  const app = currentApp();
  if (!app) {
    container.append(h('h1', { tabindex: '-1', text: t('dev.title') }), noAppPanel());
    return null;
  }
  if (arg) return renderDevice(container, app, arg, navigate);
  if (lastSearch.appID !== app.id) Object.assign(lastSearch, { appID: app.id, by: 'all', q: '' });

  const by = h('select', { name: 'by' }, ['all', 'token', 'user', 'tag'].map((value) => h('option', { value, text: t(`dev.by.${value}`) })));
  by.value = lastSearch.by;
  const q = h('input', { type: 'search', name: 'q', autocomplete: 'off', spellcheck: 'false', value: lastSearch.q });
  const results = h('div', { class: 'table-wrap', id: 'device-results', 'aria-live': 'polite' });
  const summary = h('p', { class: 'muted', id: 'device-summary' });
  const more = h('button', { type: 'button', id: 'device-more', text: t('dev.more'), hidden: true });
  const tagsBox = h('div', { id: 'tag-list' });
  let cursor = null;
  let tbody = null;

  function updatePlaceholder() {
    q.placeholder = t(`dev.placeholder.${by.value}`);
    q.disabled = by.value === 'all';
  }
  by.addEventListener('change', updatePlaceholder);
  updatePlaceholder();

  async function search(append = false) {
    const params = new URLSearchParams({ by: by.value, q: by.value === 'all' ? '' : q.value.trim(), limit: '50' });
    if (append && cursor) params.set('cursor', cursor);
    try {
      const data = await get(`/apps/${app.id}/devices?${params}`);
      Object.assign(lastSearch, { by: by.value, q: q.value });
      cursor = data.next_cursor;
      if (!append) {
        tbody = h('tbody');
        results.replaceChildren(data.devices.length
          ? h('table', { id: 'devices-table', class: 'cards' },
            h('thead', {}, h('tr', {},
              h('th', { scope: 'col', text: t('dev.token') }),
              h('th', { scope: 'col', text: t('dev.channel') }),
              h('th', { scope: 'col', text: t('dev.environment') }),
              h('th', { scope: 'col', text: t('dev.user') }),
              h('th', { scope: 'col', text: t('dev.updated') }),
              h('th', { scope: 'col', text: t('dev.status') }))),
            tbody)
          : h('p', { class: 'empty', text: t('dev.noneFound') }));
      }
      for (const device of data.devices) tbody?.append(deviceRow(device));
      const shown = tbody ? tbody.children.length : 0;
      summary.textContent = t('dev.summary', { shown: formatNumber(shown), total: formatNumber(data.total) });
      more.hidden = !cursor;
    } catch (error) {
      results.replaceChildren(h('div', { class: 'banner bad', role: 'alert' }, errorText(error)));
      more.hidden = true;
    }
  }

  const form = h('form', { role: 'search', id: 'device-search', novalidate: true },
    h('div', { class: 'row bottom' },
      field(t('dev.searchBy'), by, { id: 'device-by' }).wrap,
      field(t('dev.query'), q, { id: 'device-q' }).wrap,
      h('div', { class: 'field' }, h('button', { type: 'submit', class: 'primary', text: t('dev.search') }))));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    search(false);
  });
  more.addEventListener('click', () => search(true));

  container.append(
    h('div', { class: 'page-head' }, h('div', {}, h('h1', { tabindex: '-1', text: t('dev.title') }), h('p', { class: 'subtitle', text: t('dev.subtitle', { name: app.name }) }))),
    h('section', { class: 'panel' }, form, summary, results, h('div', { class: 'actions' }, more)),
    h('section', { class: 'panel', 'aria-labelledby': 'tags-title' }, h('h2', { id: 'tags-title', text: t('dev.tags') }), tagsBox));

  const tags = (await get(`/apps/${app.id}/tags`)).tags;
  tagsBox.append(tags.length
    ? h('div', { class: 'tag-list' }, tags.map((tag) => h('button', {
      type: 'button', class: 'tag-chip', dataset: { tag: tag.name },
      onclick: () => { by.value = 'tag'; q.value = tag.name; updatePlaceholder(); search(false); },
    }, `${tag.name} · ${formatNumber(tag.devices)}`)))
    : h('p', { class: 'empty', text: t('dev.noTags') }));
  await search(false);
  return null;
}

/** Its service's name (every device the admin API lists carries its `channel`). */
function channelName(device) {
  return channelLabel(device.channel);
}

/** Every device has an environment, whatever its service: sandbox marks a test phone. */
function environmentText(device) {
  return t(`env.${device.environment}`);
}

function deviceRow(device) {
  // Android tokens are opaque strings, not hex: encoded in the link, shown shortened as well.
  return h('tr', { dataset: { token: device.token, channel: device.channel } },
    h('td', { class: 'token', dataset: { label: t('dev.token') } }, h('a', { href: `#/devices/${encodeURIComponent(device.token)}`, title: device.token, text: shortToken(device.token) })),
    h('td', { class: 'channel', dataset: { label: t('dev.channel') }, text: channelName(device) }),
    h('td', { dataset: { label: t('dev.environment') }, text: environmentText(device) }),
    h('td', { class: 'user', dataset: { label: t('dev.user') }, text: device.user || device.im_account || '—' }),
    h('td', { class: 'time nowrap', dataset: { label: t('dev.updated') }, text: formatTime(device.updated_at) }),
    h('td', { dataset: { label: t('dev.status') } }, device.invalidated_at
      ? h('span', { class: 'badge bad', title: device.invalid_reason || '', text: t('dev.invalidated') })
      : h('span', { class: 'badge ok', text: t('dev.valid') })));
}

async function renderDevice(container, app, token, navigate) {
  let device;
  try {
    device = await get(`/apps/${app.id}/devices/${encodeURIComponent(token)}`);
  } catch (error) {
    if (error.status !== 404) throw error;
    container.append(h('h1', { tabindex: '-1', text: t('dev.notFound') }), h('p', {}, h('a', { href: '#/devices', text: `← ${t('dev.back')}` })));
    return null;
  }
  const row = (label, value, cls) => [h('dt', { text: label }), h('dd', { class: cls || null }, value ?? '—')];
  const path = `/apps/${app.id}/devices/${encodeURIComponent(device.token)}`;
  // After a change the page is drawn again from what the server now has.
  const redraw = async () => {
    container.replaceChildren();
    await renderDevice(container, app, device.token, navigate);
    container.querySelector('h1')?.focus();
  };

  // The user: changed, or detached (`"user": null`, as the native API takes it).
  const userInput = h('input', { type: 'text', id: 'device-user', name: 'user', autocomplete: 'off', spellcheck: 'false', maxlength: 256, value: device.user || '' });
  const userSave = h('button', { type: 'submit', class: 'primary', id: 'device-user-save', text: t('dev.userSave') });
  const userDetach = device.user ? h('button', { type: 'button', id: 'device-user-detach', text: t('dev.userDetach') }) : null;
  async function saveUser(user) {
    setFieldError(userInput, null);
    try {
      await patch(path, { user });
      notice(t(user === null ? 'dev.userDetached' : 'dev.userSaved'), 'ok');
      await redraw();
    } catch (error) {
      setFieldError(userInput, errorText(error));
    }
  }
  const userForm = h('form', { id: 'device-user-form', novalidate: true },
    field(t('dev.user'), userInput, { id: 'device-user-field', hint: t('dev.userHint') }).wrap,
    h('div', { class: 'actions' }, userSave, userDetach));
  userForm.addEventListener('submit', (event) => {
    event.preventDefault();
    const user = userInput.value.trim();
    saveUser(user === '' ? null : user);
  });
  userDetach?.addEventListener('click', () => saveUser(null));

  // Tags: each removable, a new one added.
  const tagInput = h('input', { type: 'text', id: 'device-tag-new', name: 'tag', autocomplete: 'off', spellcheck: 'false', maxlength: 128 });
  const tagForm = h('form', { id: 'device-tag-form', novalidate: true },
    h('div', { class: 'row bottom' },
      field(t('dev.tagNew'), tagInput, { id: 'device-tag-field' }).wrap,
      h('div', { class: 'field' }, h('button', { type: 'submit', id: 'device-tag-add', text: t('dev.tagAdd') }))));
  tagForm.addEventListener('submit', async (event) => {
    event.preventDefault();
    setFieldError(tagInput, null);
    const tag = tagInput.value.trim();
    try {
      await put(`${path}/tags/${encodeURIComponent(tag)}`);
      notice(t('dev.tagAdded', { tag }), 'ok');
      await redraw();
    } catch (error) {
      setFieldError(tagInput, errorText(error));
    }
  });
  const tagChips = device.tags.length
    ? h('span', { class: 'tag-list', id: 'device-tags' }, device.tags.map((tag) => h('span', { class: 'badge tag-removable', dataset: { tag } }, tag,
      h('button', {
        type: 'button', class: 'tag-remove', 'aria-label': t('dev.tagRemove', { tag }), title: t('dev.tagRemove', { tag }), text: '×',
        onclick: async () => {
          try {
            await del(`${path}/tags/${encodeURIComponent(tag)}`);
            notice(t('dev.tagRemoved', { tag }), 'ok');
            await redraw();
          } catch (error) {
            notice(errorText(error), 'bad');
          }
        },
      }))))
    : null;

  // Deleting (a test phone, a device that is gone).
  const deleteButton = h('button', { type: 'button', class: 'danger', id: 'device-delete', text: t('dev.delete') });
  deleteButton.addEventListener('click', async () => {
    if (!await confirmDialog(t('dev.deleteTitle'), t('dev.deleteConfirm', { token: shortToken(device.token) }), t('common.delete'), t('common.cancel'))) return;
    try {
      await del(path);
      notice(t('dev.deleted'), 'ok');
      navigate('#/devices');
    } catch (error) {
      notice(errorText(error), 'bad');
    }
  });
  const last = device.last_delivery;
  const lastBox = last
    ? h('dl', { class: 'details', id: 'last-delivery' },
      row(t('dev.message'), h('a', { href: `#/push/${last.message_id}`, text: `#${last.message_id}` })),
      row(t('dev.vendor'), last.vendor),
      row(t('msg.state'), stateBadge(last.state)),
      last.reason ? row(t('dev.reason'), last.reason) : null,
      row(t('dev.when'), formatTime(last.at || last.created_at)))
    : h('p', { class: 'empty', id: 'last-delivery', text: t('dev.noDelivery') });

  append(container, [
    h('p', {}, h('a', { href: '#/devices', text: `← ${t('dev.back')}` })),
    h('h1', { tabindex: '-1', text: t('dev.detail') }),
    h('p', { class: 'subtitle token', text: device.token }),
    h('p', {}, h('a', { href: `#/push/device/${encodeURIComponent(device.token)}`, id: 'device-send-push', text: t('dev.sendPush') })),
    device.invalidated_at
      ? h('div', { class: 'banner bad', role: 'status' }, h('div', {}, h('strong', { text: t('dev.invalidatedAt', { time: formatTime(device.invalidated_at) }) }), device.invalid_reason || ''))
      : null,
    h('div', { class: 'grid-2' },
      h('section', { class: 'panel', 'aria-labelledby': 'dev-fields' },
        h('h2', { id: 'dev-fields', text: t('dev.fields') }),
        h('dl', { class: 'details', id: 'device-details' },
          row(t('dev.channel'), channelName(device)),
          row(t('dev.environment'), environmentText(device)),
          row(t('dev.status'), device.invalidated_at ? h('span', { class: 'badge bad', text: t('dev.invalidated') }) : h('span', { class: 'badge ok', text: t('dev.valid') })),
          row(t('dev.user'), device.user),
          row(t('dev.locale'), device.locale),
          row(t('dev.imAccount'), device.im_account),
          // Columns the mounted providers declare (Baidu's channel_id and user_id, …).
          (device.vendor_columns || []).map((c) => row(localized(c.label, c.key), device.vendor_values?.[c.vendor]?.[c.key], 'mono')),
          row(t('dev.created'), formatTime(device.created_at)),
          row(t('dev.updated'), formatTime(device.updated_at)),
          row(t('dev.tags'), tagChips))),
      h('section', { class: 'panel', 'aria-labelledby': 'dev-edit', id: 'device-edit' },
        h('h2', { id: 'dev-edit', text: t('dev.edit') }),
        userForm,
        tagForm,
        h('div', { class: 'actions', style: { marginTop: '16px' } }, deleteButton)),
      h('section', { class: 'panel', 'aria-labelledby': 'dev-last' },
        h('h2', { id: 'dev-last', text: t('dev.lastDelivery') }), lastBox,
        device.recent_problems.length
          ? [h('h3', { style: { marginTop: '16px' }, text: t('dev.problems') }),
            h('div', { class: 'table-wrap' }, h('table', {},
              h('thead', {}, h('tr', {}, h('th', { text: t('dev.message') }), h('th', { text: t('msg.state') }), h('th', { text: t('dev.reason') }), h('th', { class: 'wide-only', text: t('dev.when') }))),
              h('tbody', {}, device.recent_problems.map((p) => h('tr', {},
                h('td', {}, h('a', { href: `#/push/${p.message_id}`, text: `#${p.message_id}` })),
                h('td', {}, stateBadge(p.state)),
                h('td', { text: reasonText(p.reason, p.channel) }),
                h('td', { class: 'wide-only nowrap', text: formatTime(p.updated_at) }))))))]
          : null))]);
  return null;
}
