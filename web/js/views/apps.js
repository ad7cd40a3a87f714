import { get, post, put, del } from '../api.js';
import { h, field, setFieldError, notice, confirmDialog, formatNumber, formatTime } from '../dom.js';
import { t, errorText, localized, paren } from '../i18n.js';
import { state, loadApps, selectApp } from '../state.js';
import { channelLabel } from '../widgets.js';

/** Vendor name → its declared label, from the last `/vendors` schema read. */
let vendorLabels = {};

async function loadVendorSchema() {
  const schema = (await get('/vendors')).vendors;
  vendorLabels = Object.fromEntries(schema.map((v) => [v.vendor, v.label]));
  return schema;
}

export async function renderApps(container, { arg, navigate }) {
  if (arg) return renderApp(container, Number(arg), navigate);
  await Promise.all([loadApps(), loadVendorSchema()]);

  const list = h('div', { class: 'table-wrap' });
  appsTable(list);

  const name = h('input', { type: 'text', name: 'name', required: true, maxlength: 200, autocomplete: 'off' });
  const bundle = h('input', { type: 'text', name: 'bundle_id', required: true, maxlength: 155, autocomplete: 'off', spellcheck: 'false', placeholder: 'com.example.app' });
  const keyBox = h('div', { id: 'new-app-key', 'aria-live': 'polite' });
  const form = h('form', { id: 'new-app-form', novalidate: true },
    h('div', { class: 'row' },
      field(t('apps.name'), name, { id: 'new-app-name' }).wrap,
      field(t('apps.bundle'), bundle, { id: 'new-app-bundle', hint: t('apps.bundleHint') }).wrap),
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary', id: 'new-app-submit', text: t('apps.create') })));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    setFieldError(name, null);
    setFieldError(bundle, null);
    try {
      const created = await post('/apps', { name: name.value, bundle_id: bundle.value });
      selectApp(created.app.id);
      await loadApps();
      keyBox.replaceChildren(apiKeyOnce(created.api_key, created.app.name));
      name.value = '';
      bundle.value = '';
      notice(t('apps.created.ok', { name: created.app.name }), 'ok');
      appsTable(list);
    } catch (error) {
      showFieldError(error, { name, bundle_id: bundle });
    }
  });

  container.append(
    h('div', { class: 'page-head' }, h('div', {}, h('h1', { tabindex: '-1', text: t('apps.title') }), h('p', { class: 'subtitle', text: t('apps.subtitle') }))),
    h('section', { class: 'panel', 'aria-labelledby': 'apps-list-title' }, h('h2', { id: 'apps-list-title', text: t('apps.list') }), list),
    h('section', { class: 'panel', 'aria-labelledby': 'apps-new-title' }, h('h2', { id: 'apps-new-title', text: t('apps.new') }), form, keyBox));
}

/** Fills `target` with the table of `state.apps`. */
function appsTable(target) {
  if (!state.apps.length) {
    target.replaceChildren(h('p', { class: 'empty', text: t('apps.none') }));
    return;
  }
  target.replaceChildren(h('table', { id: 'apps-table' },
    h('thead', {}, h('tr', {},
      h('th', { scope: 'col', text: t('apps.name') }),
      h('th', { scope: 'col', text: t('apps.bundle') }),
      h('th', { scope: 'col', class: 'num', text: t('apps.devices') }),
      h('th', { scope: 'col', class: 'wide-only', text: t('apps.vendors') }),
      h('th', { scope: 'col', class: 'wide-only', text: t('apps.created') }))),
    h('tbody', {}, state.apps.map((app) => h('tr', { dataset: { app: app.id } },
      h('td', {}, h('a', { href: `#/apps/${app.id}`, text: app.name })),
      h('td', { class: 'mono', text: app.bundle_id }),
      h('td', { class: 'num', text: formatNumber(app.devices) }),
      h('td', { class: 'wide-only' }, configuredVendors(app)),
      h('td', { class: 'wide-only nowrap', text: formatTime(app.created_at) }))))));
}

function configuredVendors(app) {
  const names = Object.entries(app.vendors || {})
    .filter(([, fields]) => Object.values(fields).some((f) => f.set))
    .map(([vendor]) => vendor);
  if (!names.length) return h('span', { class: 'muted', text: '—' });
  return names.map((vendor) => h('span', { class: 'badge info', text: localized(vendorLabels[vendor], vendor) }, ' '));
}

function apiKeyOnce(key, appName) {
  const copy = h('button', { type: 'button', class: 'small', text: t('apps.copy') });
  copy.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(key);
      notice(t('apps.copied'), 'ok');
    } catch {
      notice(t('apps.copyFailed'), 'bad');
    }
  });
  return h('div', { class: 'banner info', role: 'status' },
    h('div', { style: { minWidth: '0', flex: '1' } },
      h('strong', { text: t('apps.keyOnce', { name: appName }) }),
      h('div', { class: 'secret-once', id: 'api-key-value', text: key }),
      copy));
}

/** A text the operator copies (a URL, a callback user name or key), with a copy button. */
function copyable(text, id) {
  const copy = h('button', { type: 'button', class: 'small', text: t('apps.copy'), 'aria-label': `${t('apps.copy')} ${id}` });
  copy.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(text);
      notice(t('apps.copied'), 'ok');
    } catch {
      notice(t('apps.copyFailed'), 'bad');
    }
  });
  return h('span', { class: 'copyable' }, h('code', { class: 'mono', id, text }), ' ', copy);
}

/**
 * The app's delivery receipts: what to register in each service's receipt configuration (the
 * URL and, for the services that sign, the callback user name and key, which the operator must
 * copy into AppGallery Connect), rotating or setting that pair, and the app's own receipts.
 */
async function receiptsSection(id) {
  const section = h('section', { class: 'panel', id: 'app-receipts', 'aria-labelledby': 'receipts-title' });
  let data;
  try {
    data = await get(`/apps/${id}/receipts`);
  } catch (error) {
    section.append(h('h2', { id: 'receipts-title', text: t('receipts.title') }), h('p', { class: 'muted', text: errorText(error) }));
    return section;
  }
  function draw() {
    const services = data.services.map((s) => {
      const rows = [h('dt', { text: t('receipts.url') }), h('dd', {}, s.url ? copyable(s.url, `receipt-url-${s.channel}`) : h('span', { class: 'muted', text: t('receipts.noURL') }))];
      let edit = null;
      if (s.callback_key !== undefined) {
        rows.push(
          h('dt', { text: t('receipts.userName') }), h('dd', {}, copyable(s.callback_user_name, `receipt-user-${s.channel}`)),
          h('dt', { text: t('receipts.key') }), h('dd', {}, copyable(s.callback_key, `receipt-key-${s.channel}`)));
        const rotate = h('button', { type: 'button', class: 'small', id: `receipt-rotate-${s.channel}`, text: t('receipts.rotate') });
        rotate.addEventListener('click', async () => {
          if (!await confirmDialog(t('receipts.rotate'), t('receipts.rotateConfirm'), t('receipts.rotateYes'), t('common.cancel'))) return;
          try {
            Object.assign(s, await post(`/apps/${id}/receipts/${s.channel}/rotate`));
            notice(t('receipts.rotated'), 'ok');
            draw();
          } catch (error) {
            notice(errorText(error), 'bad');
          }
        });
        const user = h('input', { type: 'text', name: 'callback_user_name', maxlength: 64, autocomplete: 'off', spellcheck: 'false' });
        const key = h('input', { type: 'text', name: 'callback_key', maxlength: 64, autocomplete: 'off', spellcheck: 'false' });
        const form = h('form', { class: 'receipt-set', novalidate: true },
          h('div', { class: 'row' },
            field(t('receipts.userName'), user, { id: `receipt-set-user-${s.channel}` }).wrap,
            field(t('receipts.key'), key, { id: `receipt-set-key-${s.channel}` }).wrap),
          h('div', { class: 'actions' }, h('button', { type: 'submit', text: t('receipts.set') })));
        form.addEventListener('submit', async (event) => {
          event.preventDefault();
          setFieldError(user, null);
          setFieldError(key, null);
          try {
            Object.assign(s, await put(`/apps/${id}/receipts/${s.channel}`, { callback_user_name: user.value, callback_key: key.value }));
            notice(t('receipts.saved'), 'ok');
            draw();
          } catch (error) {
            showFieldError(error, { callback_user_name: user, callback_key: key });
          }
        });
        edit = [h('div', { class: 'actions' }, rotate), h('details', {}, h('summary', { text: t('receipts.setOwn') }), form)];
      }
      return h('div', { class: 'receipt-service', dataset: { channel: s.channel } },
        h('h3', { text: channelLabel(s.channel) }),
        h('dl', { class: 'details' }, rows), edit);
    });
    const own = h('input', { type: 'checkbox', id: 'app-receipts-own', checked: data.app_receipts });
    own.addEventListener('change', async () => {
      try {
        data = await put(`/apps/${id}/receipts`, { app_receipts: own.checked });
        notice(t('receipts.ownSaved'), 'ok');
      } catch (error) {
        own.checked = !own.checked;
        notice(errorText(error), 'bad');
      }
    });
    section.replaceChildren(
      h('h2', { id: 'receipts-title', text: t('receipts.title') }),
      h('p', { class: 'muted', text: t('receipts.hint') }),
      ...services,
      h('h3', { text: t('receipts.own') }),
      h('label', { for: own.id }, own, ` ${t('receipts.ownLabel')}`),
      h('p', { class: 'muted' }, t('receipts.ownHint'), data.receipts_url ? [' ', h('code', { class: 'mono', text: `POST ${data.receipts_url}` })] : null));
  }
  draw();
  return section;
}

function showFieldError(error, inputs) {
  const input = error.field && inputs[error.field];
  if (input) {
    setFieldError(input, errorText(error));
    input.focus();
  } else {
    notice(errorText(error), 'bad');
  }
}

async function renderApp(container, id, navigate) {
  let app;
  try {
    app = await get(`/apps/${id}`);
  } catch (error) {
    if (error.status === 404) {
      container.append(h('h1', { tabindex: '-1', text: t('apps.notFound') }), h('p', {}, h('a', { href: '#/apps', text: t('apps.back') })));
      return null;
    }
    throw error;
  }
  const schema = await loadVendorSchema();
  if (state.appID !== app.id) selectApp(app.id);

  const name = h('input', { type: 'text', name: 'name', value: app.name, required: true, maxlength: 200 });
  const bundle = h('input', { type: 'text', name: 'bundle_id', value: app.bundle_id, required: true, maxlength: 155, spellcheck: 'false' });
  const inputs = { name, bundle_id: bundle };
  // The form is the providers' declarations: label, secret (write-only), required, default.
  const vendorSets = schema.map(({ vendor, label, fields }) => {
    const current = app.vendors[vendor] || {};
    const controls = fields.map((f) => {
      const info = current[f.key] || { set: false };
      const id = `vendor-${vendor}-${f.key}`;
      const input = f.secret
        ? h('input', { type: 'password', name: id, autocomplete: 'new-password', maxlength: f.max_length, placeholder: info.set ? t('secret.setPlaceholder') : t('secret.unsetPlaceholder') })
        : h('input', { type: 'text', name: id, value: info.value || '', maxlength: f.max_length, autocomplete: 'off', spellcheck: 'false', placeholder: f.default || null });
      inputs[`vendors.${vendor}.${f.key}`] = input;
      const hint = f.secret ? (info.set ? t('secret.setHint') : t('secret.unsetHint')) : null;
      const text = localized(f.label, f.key) + (f.required ? '' : paren(t('field.optional')));
      const wrapped = field(text, input, { id, hint });
      let clearBox = null;
      if (f.secret && info.set) {
        clearBox = h('input', { type: 'checkbox', id: `${id}-clear` });
        wrapped.wrap.append(h('label', { for: clearBox.id, class: 'muted', style: { fontWeight: '400', marginTop: '4px' } }, clearBox, ` ${t('secret.clear')}`));
      }
      if (f.secret) {
        wrapped.wrap.querySelector('label').append(' ', h('span', { class: `badge ${info.set ? 'ok' : ''}`, text: info.set ? t('secret.isSet') : t('secret.notSet') }));
      }
      return { f, input, clearBox, wrap: wrapped.wrap };
    });
    return {
      vendor, controls,
      element: h('fieldset', { class: 'vendor', dataset: { vendor } },
        h('legend', { text: localized(label, vendor) }),
        h('div', { class: 'row' }, controls.map((c) => c.wrap))),
    };
  });

  const save = h('button', { type: 'submit', class: 'primary', id: 'app-save', text: t('app.save') });
  const form = h('form', { id: 'app-form', novalidate: true },
    h('div', { class: 'row' }, field(t('apps.name'), name, { id: 'app-name' }).wrap, field(t('apps.bundle'), bundle, { id: 'app-bundle' }).wrap),
    h('h2', { text: t('app.vendorSettings') }),
    h('p', { class: 'muted', text: t('app.vendorHint') }),
    vendorSets.map((s) => s.element),
    h('div', { class: 'actions' }, save));

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    for (const input of Object.values(inputs)) setFieldError(input, null);
    const vendors = {};
    for (const set of vendorSets) {
      const edit = {};
      for (const c of set.controls) {
        if (c.f.secret) {
          if (c.clearBox?.checked) edit[c.f.key] = '';
          else if (c.input.value) edit[c.f.key] = c.input.value;
        } else {
          edit[c.f.key] = c.input.value;
        }
      }
      vendors[set.vendor] = edit;
    }
    save.disabled = true;
    try {
      await put(`/apps/${id}`, { name: name.value, bundle_id: bundle.value, vendors });
      await loadApps();
      notice(t('app.saved'), 'ok');
      navigate(`#/apps/${id}`);
    } catch (error) {
      showFieldError(error, inputs);
    } finally {
      save.disabled = false;
    }
  });

  const keyBox = h('div', { 'aria-live': 'polite' });
  const regenerate = h('button', { type: 'button', id: 'regenerate-key', text: t('app.regenerate') });
  regenerate.addEventListener('click', async () => {
    if (!await confirmDialog(t('app.regenerate'), t('app.regenerateConfirm'), t('app.regenerateYes'), t('common.cancel'))) return;
    try {
      const data = await post(`/apps/${id}/api-key`);
      keyBox.replaceChildren(apiKeyOnce(data.api_key, app.name));
    } catch (error) {
      notice(errorText(error), 'bad');
    }
  });
  const remove = h('button', { type: 'button', class: 'danger', id: 'delete-app', text: t('app.delete') });
  remove.addEventListener('click', async () => {
    if (!await confirmDialog(t('app.delete'), t('app.deleteConfirm', { name: app.name }), t('app.deleteYes'), t('common.cancel'))) return;
    try {
      await del(`/apps/${id}`);
      await loadApps();
      notice(t('app.deleted', { name: app.name }), 'ok');
      navigate('#/apps');
    } catch (error) {
      notice(errorText(error), 'bad');
    }
  });

  container.append(
    h('p', {}, h('a', { href: '#/apps', text: `← ${t('apps.back')}` })),
    h('div', { class: 'page-head' },
      h('div', {}, h('h1', { tabindex: '-1', text: app.name }), h('p', { class: 'subtitle mono', text: app.bundle_id })),
      h('div', { class: 'actions' },
        h('a', { href: '#/credentials', text: t('nav.credentials') }), ' · ',
        h('a', { href: '#/templates', text: t('nav.templates') }), ' · ',
        h('a', { href: '#/devices', text: t('nav.devices') }))),
    h('section', { class: 'panel' }, form),
    await receiptsSection(id),
    h('section', { class: 'panel', 'aria-labelledby': 'key-title' },
      h('h2', { id: 'key-title', text: t('app.apiKey') }),
      h('p', { class: 'muted', text: t('app.apiKeyHint') }),
      h('div', { class: 'actions' }, regenerate), keyBox),
    h('section', { class: 'panel', 'aria-labelledby': 'danger-title' },
      h('h2', { id: 'danger-title', text: t('app.danger') }),
      h('p', { class: 'muted', text: t('app.deleteHint') }),
      h('div', { class: 'actions' }, remove)));
  return null;
}
