import { get, post, del, features } from '../api.js';
import { h, field, setFieldError, notice, confirmDialog, formatTime } from '../dom.js';
import { t, errorText, paren, localized } from '../i18n.js';
import { currentApp } from '../state.js';
import { channelLabel } from '../widgets.js';
import { noAppPanel } from './common.js';

export async function renderCredentials(container) {
  const app = currentApp();
  container.append(h('div', { class: 'page-head' },
    h('div', {}, h('h1', { tabindex: '-1', text: t('cred.title') }), h('p', { class: 'subtitle', text: app ? t('cred.subtitle', { name: app.name }) : '' }))));
  if (!app) {
    container.append(noAppPanel());
    return null;
  }
  if (!features().credentials) {
    container.append(h('div', { class: 'banner warn' }, h('div', {}, t('cred.unavailable'))));
    return null;
  }

  const list = h('div', { class: 'table-wrap', id: 'credential-list' });
  const testResult = h('div', { id: 'credential-test-result', 'aria-live': 'polite' });

  async function refresh() {
    const data = await get(`/apps/${app.id}/credentials`);
    if (!data.credentials.length) {
      list.replaceChildren(h('p', { class: 'empty', text: t('cred.none') }));
      return;
    }
    list.replaceChildren(h('table', { id: 'credentials-table', class: 'cards' },
      h('thead', {}, h('tr', {},
        h('th', { scope: 'col', text: t('cred.kind') }),
        h('th', { scope: 'col', text: t('cred.environment') }),
        h('th', { scope: 'col', text: t('cred.identity') }),
        h('th', { scope: 'col', text: t('cred.expires') }),
        h('th', { scope: 'col', text: t('cred.status') }),
        h('th', { scope: 'col', text: t('common.actions') }))),
      h('tbody', {}, data.credentials.map((c) => credentialRow(c)))));
    followPendingChecks(data.credentials, refresh);
  }

  function credentialRow(c) {
    const test = h('button', { type: 'button', class: 'small', text: t('cred.test'), dataset: { test: c.id } });
    test.addEventListener('click', async () => {
      test.disabled = true;
      test.textContent = t('cred.testing');
      testResult.replaceChildren();
      try {
        const result = await post(`/apps/${app.id}/credentials/${c.id}/test`, {}, { timeout: 40000 });
        // Never "works" beside a failing badge: a connection that works for a credential
        // marked failing says so, and a refusal the test found shows in the list at once.
        const failing = result.ok && c.status === 'failing';
        const tone = result.ok ? (failing ? 'warn' : 'ok') : 'bad';
        const title = result.ok ? (failing ? t('cred.testOkFailing', { reason: c.status_reason || '' }) : t('cred.testOk')) : t('cred.testFailed');
        if (!result.ok) await refresh();
        testResult.replaceChildren(h('div', { class: `banner ${tone}`, role: 'status', dataset: { ok: String(result.ok) } },
          h('div', {},
            h('strong', { text: title }),
            h('div', { class: 'mono', text: `${result.endpoint}` }),
            h('div', { text: result.detail }))));
      } catch (error) {
        testResult.replaceChildren(h('div', { class: 'banner bad', role: 'alert' }, errorText(error)));
      } finally {
        test.disabled = false;
        test.textContent = t('cred.test');
      }
    });
    const remove = h('button', { type: 'button', class: 'small danger', text: t('common.delete'), dataset: { delete: c.id } });
    remove.addEventListener('click', async () => {
      if (!await confirmDialog(t('cred.deleteTitle'), t('cred.deleteConfirm'), t('common.delete'), t('common.cancel'))) return;
      try {
        await del(`/apps/${app.id}/credentials/${c.id}`);
        notice(t('cred.deleted'), 'ok');
        await refresh();
      } catch (error) {
        notice(errorText(error), 'bad');
      }
    });
    let expiry;
    if (!c.expires_at) expiry = h('span', { class: 'muted', text: t('cred.noExpiry') });
    else if (c.expired) expiry = h('span', { class: 'badge bad', text: t('cred.expired') });
    else if (c.expiring_soon) expiry = h('span', { class: 'badge warn', text: t('cred.daysLeft', { n: c.days_left }) });
    else expiry = h('span', { title: formatTime(c.expires_at), text: t('cred.daysLeft', { n: c.days_left }) });
    const identity = (c.kind === 'p8'
      ? `${t('cred.keyID')} ${c.key_id} · ${t('cred.teamID')} ${c.team_id}`
      : `${c.subject || ''}${c.topics?.length ? ` · ${c.topics.join(', ')}` : ''}`)
      + (c.selector ? ` · ${t('cred.selectorLabel')} ${c.selector}` : '');
    // data-label names each cell when a phone shows the rows as cards.
    return h('tr', { dataset: { credential: c.id, kind: c.kind } },
      h('td', { dataset: { label: t('cred.kind') } }, h('b', { text: c.kind.toUpperCase() })),
      h('td', { dataset: { label: t('cred.environment') }, text: t(`env.${c.environment}`) }),
      h('td', { class: 'mono', dataset: { label: t('cred.identity') }, text: identity }),
      h('td', { dataset: { label: t('cred.expires') } }, expiry, c.expires_at ? h('div', { class: 'muted wide-only', text: formatTime(c.expires_at) }) : null),
      h('td', { dataset: { label: t('cred.status') } }, statusBadge(c),
        // Of an environment's (and selector's) credentials one sends: the newest that works.
        c.active === false ? h('div', {}, h('span', { class: 'badge', dataset: { inactive: c.id }, text: t('cred.notInUse') })) : null),
      h('td', { dataset: { label: t('common.actions') } }, h('div', { class: 'actions' }, test, remove)));
  }

  const android = androidSection(app);
  // The uploaded-files service's list and form, when the gateway has one.
  const uploaded = uploadedFiles();
  if (uploaded) {
    const service = uploadedService(uploaded);
    container.append(
      h('section', { class: 'panel', 'aria-labelledby': 'cred-list-title' }, h('h2', { id: 'cred-list-title', text: t('cred.list', { service }) }), list, testResult),
      h('section', { class: 'panel', 'aria-labelledby': 'cred-upload-title' }, h('h2', { id: 'cred-upload-title', text: t('cred.upload', { service }) }), uploadForm(app, refresh, uploaded)));
  }
  container.append(android.section);
  await Promise.all([uploaded ? refresh() : null, android.refresh()]);
  return null;
}

/** The gateway's push services with a declared credential form, each with its fields
 * (`features.transports` of `GET /admin/api/session`, from the transport registry). */
function transportForms() {
  return features().transports || [];
}
/** The services the form offers, in the registry's order. */
function androidChannels() {
  return transportForms().map((form) => form.channel);
}
// The element ids the fields have always had (the browser tests and people's bookmarks know them).
const FIELD_IDS = { file: 'android-file', vendor_app_id: 'android-app-id', client_id: 'android-client-id', client_secret: 'android-client-secret', badge_class: 'android-badge-class' };
/** A field's hint: for a secret, that it is never shown again; for the kit's badge class, the
 * console's own words; else what the service's declaration says of it (`help_text`). */
function fieldHint(spec) {
  if (spec.kind === 'secret') return t('secret.unsetHint');
  if (spec.name === 'badge_class') return t('cred.badgeClassHint');
  return localized(spec.help_text, spec.help || '');
}

/** androidChannels() in the current language, for the section's title, hint and empty state. */
function androidChannelTexts() {
  const separator = t('cred.channelSeparator');
  return {
    channels: androidChannels().map(channelLabel).join(separator),
    ids: androidChannels().join(separator),
  };
}

/** The app's Android credentials (every service in androidChannels()): a list and a form that adds one. */
function androidSection(app) {
  const list = h('div', { class: 'table-wrap', id: 'channel-credential-list' });

  async function refresh() {
    const data = await get(`/apps/${app.id}/channel-credentials`);
    if (!data.credentials.length) {
      list.replaceChildren(h('p', { class: 'empty', text: t('cred.androidNone', androidChannelTexts()) }));
      return;
    }
    const columns = ['cred.channel', 'cred.vendorAppID', 'cred.clientID', 'cred.selectorLabel', 'cred.status', 'cred.created', 'common.actions'];
    list.replaceChildren(h('table', { id: 'channel-credentials-table', class: 'cards' },
      h('thead', {}, h('tr', {}, columns.map((key) => h('th', { scope: 'col', text: t(key) })))),
      h('tbody', {}, data.credentials.map((c) => row(c)))));
    followPendingChecks(data.credentials, refresh);
  }

  function row(c) {
    const remove = h('button', { type: 'button', class: 'small danger', text: t('common.delete'), dataset: { delete: c.id } });
    remove.addEventListener('click', async () => {
      if (!await confirmDialog(t('cred.deleteTitle'), t('cred.androidDeleteConfirm', { channel: channelLabel(c.channel) }), t('common.delete'), t('common.cancel'))) return;
      try {
        await del(`/apps/${app.id}/channel-credentials/${c.id}`);
        notice(t('cred.deleted'), 'ok');
        await refresh();
      } catch (error) {
        notice(errorText(error), 'bad');
      }
    });
    const cell = (labelKey, content, cls) => h('td', { class: cls || null, dataset: { label: t(labelKey) } }, content);
    return h('tr', { dataset: { channelCredential: c.id, channel: c.channel } },
      cell('cred.channel', h('b', { text: channelLabel(c.channel) })),
      cell('cred.vendorAppID', c.vendor_app_id, 'mono'),
      cell('cred.clientID', [c.client_id, c.badge_class ? h('div', { class: 'muted', text: `${t('cred.badgeClassLabel')} ${c.badge_class}` }) : null], 'mono'),
      cell('cred.selectorLabel', c.selector || h('span', { class: 'muted', text: t('cred.defaultSelector') })),
      cell('cred.status', [statusBadge(c),
      // Of a channel and selector's credentials one sends: the newest that works.
      c.active === false ? h('div', {}, h('span', { class: 'badge', dataset: { inactive: c.id }, text: t('cred.notInUse') })) : null,
      // A used-up daily quota (the services that count one) resets at midnight China time.
      c.quota_exhausted_until
        ? h('div', {}, h('span', { class: 'badge warn', dataset: { quota: c.quota_exhausted_until }, text: t('cred.quotaUntil', { time: chinaClock(c.quota_exhausted_until) }) }))
        : null]),
      cell('cred.created', formatTime(c.created_at), 'nowrap'),
      cell('common.actions', h('div', { class: 'actions' }, remove)));
  }

  const section = h('section', { class: 'panel', 'aria-labelledby': 'android-cred-title' },
    h('h2', { id: 'android-cred-title', text: t('cred.android', androidChannelTexts()) }),
    h('p', { class: 'muted', text: t('cred.androidHint', androidChannelTexts()) }),
    list,
    h('h3', { id: 'android-add-title', style: { marginTop: '20px' }, text: t('cred.androidAdd') }),
    androidForm(app, refresh));
  return { section, refresh };
}

/** A credential's state: failing with its service's code, its check still running, or ok. */
function statusBadge(c) {
  if (c.status === 'failing') {
    return h('span', { class: 'badge bad', title: c.status_reason || '', text: `${t('cred.failing')}: ${c.status_reason || ''}` });
  }
  if (c.check_pending) return h('span', { class: 'badge warn', dataset: { pending: c.id }, text: t('cred.checking') });
  return h('span', { class: 'badge ok', text: t('cred.ok') });
}

/** While a check goes on after its upload was answered, the list is read again until it ends,
 * so the result shows on the credential without a reload. */
const pendingTimers = new WeakMap();
function followPendingChecks(credentials, refresh) {
  clearTimeout(pendingTimers.get(refresh));
  if (!credentials.some((c) => c.check_pending)) return;
  pendingTimers.set(refresh, setTimeout(() => {
    if (document.body.contains(document.getElementById('credential-list'))) refresh().catch(() => {});
  }, 2000));
}

/** What the service answered when a credential was added; a refused one names the
 * credential that stays in use, if one works. A repeat of an upload names the credential
 * saved before; a check still running says it goes on. */
function checkText(check, created) {
  if (created.existing) return t('cred.existing', { id: created.id });
  if (check.result === 'not_checked' && check.reason && !/^local mode/i.test(check.reason)) {
    return t('cred.check.not_checked_because', { reason: check.reason });
  }
  if (check.result !== 'refused') return t(`cred.check.${check.result}`, { reason: check.reason || '' });
  const serving = created.active_credential_id;
  return serving && serving !== created.id
    ? t('cred.check.refusedKept', { reason: check.reason || '', id: serving })
    : t('cred.check.refused', { reason: check.reason || '' });
}

/** The form that adds a credential: a channel picker and the fields its declaration lists
 * (text, secret or file), one input per field name shared by the services that ask for it. */
function androidForm(app, refresh) {
  const forms = transportForms();
  const channel = h('select', { name: 'channel' }, androidChannels().map((value) => h('option', { value, text: channelLabel(value) })));
  const selector = h('input', { type: 'text', name: 'selector', maxlength: 128, autocomplete: 'off', spellcheck: 'false' });
  const selectorField = field(t('cred.selector'), selector, { id: 'android-selector', hint: t('cred.androidSelectorHint') });
  const result = h('div', { id: 'android-cred-result', 'aria-live': 'polite' });
  const submit = h('button', { type: 'submit', class: 'primary', id: 'android-cred-submit', text: t('cred.androidAddButton') });
  // One input per declared field name; the server names the field a refusal is about by it.
  const fields = new Map();
  for (const form of forms) {
    for (const spec of form.fields) {
      if (fields.has(spec.name)) continue;
      const input = spec.kind === 'file'
        ? h('input', { type: 'file', name: spec.name, accept: spec.accept || null })
        // A secret is write-only: never filled from the server, cleared after a save.
        : spec.kind === 'secret'
          ? h('input', { type: 'password', name: spec.name, autocomplete: 'new-password' })
          : h('input', { type: 'text', name: spec.name, autocomplete: 'off', spellcheck: 'false' });
      const id = FIELD_IDS[spec.name] || `android-${spec.name.replace(/_/g, '-')}`;
      const hint = fieldHint(spec);
      fields.set(spec.name, { input, field: field(localized(spec.label, spec.name), input, { id, hint }) });
    }
  }
  const inputs = { channel, selector };
  for (const [name, { input }] of fields) inputs[name] = input;

  /** The declared fields of the chosen service. */
  function chosen() {
    return forms.find((form) => form.channel === channel.value)?.fields || [];
  }
  function update() {
    const specs = chosen();
    for (const [name, { input, field: f }] of fields) {
      const spec = specs.find((s) => s.name === name);
      f.wrap.hidden = !spec;
      if (!spec) continue;
      // Each service names its values its own way (docs/android.md, Credentials).
      const label = localized(spec.label, name);
      f.wrap.querySelector('label').textContent = spec.required ? label : `${label}${paren(t('common.optional'))}`;
      if (f.hint) f.hint.textContent = fieldHint(spec);
      if (spec.kind === 'text') {
        input.inputMode = spec.numeric ? 'numeric' : 'text';
        input.placeholder = spec.placeholder || '';
      }
    }
    for (const input of Object.values(inputs)) setFieldError(input, null);
    result.replaceChildren();
  }
  channel.addEventListener('change', update);

  const wraps = [...fields.values()].map((f) => f.field.wrap);
  const rows = [];
  for (let i = 0; i < wraps.length; i += 2) rows.push(h('div', { class: 'row' }, wraps.slice(i, i + 2)));
  const form = h('form', { id: 'android-cred-form', novalidate: true, 'aria-labelledby': 'android-add-title' },
    h('div', { class: 'row' }, field(t('cred.channel'), channel, { id: 'android-channel' }).wrap),
    rows,
    h('div', { class: 'row' }, selectorField.wrap),
    result,
    h('div', { class: 'actions' }, submit));
  update();

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    for (const input of Object.values(inputs)) setFieldError(input, null);
    result.replaceChildren();
    const body = { channel: channel.value };
    for (const spec of chosen()) {
      const { input } = fields.get(spec.name);
      if (spec.kind === 'file') {
        if (!input.files.length) {
          if (!spec.required) continue;
          setFieldError(input, t('cred.fileRequired'));
          input.focus();
          return;
        }
        if (input.files[0].size > 64 * 1024) {
          setFieldError(input, t('cred.fileTooLarge'));
          return;
        }
        body[spec.name] = await fileBase64(input.files[0]);
      } else if (spec.kind === 'secret') {
        body[spec.name] = input.value;
      } else if (spec.required || input.value.trim()) {
        body[spec.name] = input.value.trim();
      }
    }
    if (selector.value.trim()) body.selector = selector.value.trim();
    submit.disabled = true;
    try {
      const created = await post(`/apps/${app.id}/channel-credentials`, body);
      for (const input of Object.values(inputs)) if (input !== channel) input.value = '';
      // The server signed in once with it: say what the service answered.
      const check = created.check || { result: 'not_checked' };
      const tone = { accepted: 'ok', refused: 'bad', unavailable: 'warn', not_checked: 'warn', pending: 'warn' }[check.result] || 'warn';
      result.replaceChildren(h('div', { class: `banner ${tone}`, role: tone === 'bad' ? 'alert' : 'status', dataset: { check: check.result, existing: String(!!created.existing) } },
        h('div', {}, h('strong', { text: t('cred.androidAdded', { channel: channelLabel(created.channel) }) }),
          h('div', { class: 'mono', text: `${created.vendor_app_id} · ${created.client_id}` }),
          h('div', { id: 'android-cred-check', text: checkText(check, created) }))));
      await refresh();
    } catch (error) {
      const text = channelErrorText(error, chosen());
      const input = error.field && inputs[error.field];
      if (input) setFieldError(input, text);
      result.replaceChildren(h('div', { class: 'banner bad', role: 'alert', dataset: { code: error.code, field: error.field || '' } },
        h('div', {}, h('strong', { text: t('cred.androidRejected') }), h('div', { text: text }))));
      (input && !input.closest('[hidden]') ? input : submit).focus();
    } finally {
      submit.disabled = false;
    }
  });
  return form;
}

/** `00:00 CST`: a time as the services that count days in China show it. */
function chinaClock(iso) {
  const time = new Intl.DateTimeFormat('en-GB', { timeZone: 'Asia/Shanghai', hour: '2-digit', minute: '2-digit' }).format(new Date(iso));
  return `${time} CST`;
}

/** A refusal in the console's words where it has them; a service-account file's reason as the
 * server gave it (in the console's language: `text`), since only that says which part of the
 * file is wrong. A field whose service
 * words its refusal its own way (`refusal_text`: an app id that is a package name, where the
 * others' consoles show a number) is answered in the declaration's words. */
function channelErrorText(error, specs) {
  if (error.code === 'corrupt_file') return `${t('err.corrupt_service_account')}${paren(localized(error.text, error.message))}`;
  const spec = specs.find((s) => s.name === error.field);
  if (spec?.refusal_text && error.code === `invalid_${spec.name}`) return localized(spec.refusal_text, error.message);
  return errorText(error);
}

/** The declared upload form of the service whose credentials are uploaded files
 * (`features.uploaded_files` of `GET /admin/api/session`, from its transport's declaration):
 * its file kinds, each with the fields it needs and may be given with; null when the gateway
 * has no such service. */
function uploadedFiles() {
  return features().uploaded_files || null;
}
/** That service's name in the current language. */
function uploadedService(spec) {
  return localized(spec.display_name_text, spec.display_name);
}

/** The upload form, rendered from the declaration: one radio per file kind (`cred-kind-<kind>`),
 * the file, the environment, and each declared field (`cred-<name>`, `_` as `-`) shown for the
 * kinds that need it or may be given it. */
function uploadForm(app, refresh, spec) {
  const kindRadios = spec.files.map((file, index) => {
    const input = h('input', { type: 'radio', name: 'cred-kind', value: file.name, id: `cred-kind-${file.name}`, checked: index === 0 });
    return { file, input, label: h('label', { for: input.id }, input, ` ${localized(file.label, file.name)}`) };
  });
  const environment = h('select', { name: 'environment' },
    h('option', { value: 'both', text: t('env.both') }),
    h('option', { value: 'sandbox', text: t('env.sandbox') }),
    h('option', { value: 'production', text: t('env.production') }));
  const file = h('input', { type: 'file', name: 'file' });
  const selector = h('input', { type: 'text', name: 'selector', maxlength: 128, autocomplete: 'off', spellcheck: 'false', placeholder: '1001 · ios-prod' });
  // The file's hint is its kind's; an empty one is replaced on the first update.
  const fileField = field(t('cred.file'), file, { id: 'cred-file', hint: ' ' });
  const environmentHint = localized(spec.environment_hint_text, '');
  const environmentField = field(t('cred.environment'), environment, { id: 'cred-environment', hint: environmentHint || null });
  const selectorField = field(t('cred.selector'), selector, { id: 'cred-selector', hint: t('cred.selectorHint') });
  // One input per declared field; the server names the field a refusal is about by its name.
  const fields = new Map(spec.fields.map((declared) => {
    const input = declared.kind === 'secret'
      ? h('input', { type: 'password', name: declared.name, autocomplete: 'off' })
      : h('input', {
        type: 'text', name: declared.name, maxlength: declared.max_length || null, autocomplete: 'off', spellcheck: 'false',
        placeholder: declared.placeholder || null, inputmode: declared.numeric ? 'numeric' : null,
      });
    const id = `cred-${declared.name.replace(/_/g, '-')}`;
    return [declared.name, { declared, input, field: field(localized(declared.label, declared.name), input, { id }) }];
  }));
  const result = h('div', { id: 'cred-upload-result', 'aria-live': 'polite' });
  const submit = h('button', { type: 'submit', class: 'primary', id: 'cred-upload-submit', text: t('cred.uploadButton') });
  const inputs = { file, environment, selector };
  for (const [name, { input }] of fields) inputs[name] = input;

  function selectedFile() {
    return kindRadios.find((r) => r.input.checked).file;
  }
  function update() {
    const chosen = selectedFile();
    for (const [name, { declared, field: f }] of fields) {
      const needed = (chosen.needs || []).includes(name);
      const optional = (chosen.optional || []).includes(name);
      f.wrap.hidden = !needed && !optional;
      const label = localized(declared.label, name);
      f.wrap.querySelector('label').textContent = optional ? `${label}${paren(t('common.optional'))}` : label;
    }
    file.accept = chosen.accept || '';
    fileField.hint.textContent = localized(chosen.hint_text, '');
  }
  for (const r of kindRadios) r.input.addEventListener('change', update);

  const form = h('form', { id: 'cred-upload-form', novalidate: true },
    h('fieldset', {}, h('legend', { text: t('cred.kind') }), h('div', { class: 'radios' }, kindRadios.map((r) => r.label))),
    h('div', { class: 'row' }, environmentField.wrap, fileField.wrap),
    h('div', { class: 'row' }, [...fields.values()].map((f) => f.field.wrap)),
    h('div', { class: 'row' }, selectorField.wrap),
    result,
    h('div', { class: 'actions' }, submit));
  update();

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    for (const input of Object.values(inputs)) setFieldError(input, null);
    result.replaceChildren();
    const chosen = selectedFile();
    if (!file.files.length) {
      setFieldError(file, t('cred.fileRequired'));
      file.focus();
      return;
    }
    if (file.files[0].size > 64 * 1024) {
      setFieldError(file, t('cred.fileTooLarge'));
      return;
    }
    const body = { kind: chosen.name, environment: environment.value, file: await fileBase64(file.files[0]) };
    if (selector.value.trim()) body.selector = selector.value.trim();
    // A text is sent trimmed, a secret as typed; what the kind needs always, what it may be
    // given with when filled.
    const value = (name) => {
      const { declared, input } = fields.get(name);
      return declared.kind === 'secret' ? input.value : input.value.trim();
    };
    for (const name of chosen.needs || []) body[name] = value(name);
    for (const name of chosen.optional || []) if (value(name)) body[name] = value(name);
    submit.disabled = true;
    try {
      const created = await post(`/apps/${app.id}/credentials`, body);
      for (const { declared, input } of fields.values()) if (declared.kind === 'secret') input.value = '';
      file.value = '';
      selector.value = '';
      // A key the service refused is saved (marked failing): say so, never as a success. Saved
      // with its check still running: say that, and the list shows the result when it lands. A
      // repeat of an upload names the credential saved before.
      const refused = created.status === 'failing';
      const pending = created.check?.result === 'pending';
      const words = { kind: created.kind.toUpperCase(), env: t(`env.${created.environment}`), reason: created.status_reason || '', id: created.id, service: uploadedService(spec) };
      const title = created.existing ? 'cred.existing' : refused ? 'cred.uploadedRefused' : pending ? 'cred.uploadedPending' : 'cred.uploaded';
      const tone = refused ? 'bad' : pending || created.existing ? 'warn' : 'ok';
      result.replaceChildren(h('div', { class: `banner ${tone}`, role: refused ? 'alert' : 'status', dataset: { status: created.status, check: created.check?.result || '', existing: String(!!created.existing) } },
        h('div', {}, h('strong', { text: t(title, words) }),
          created.subject ? h('div', { class: 'mono', text: created.subject }) : null,
          created.expires_at ? h('div', { text: `${t('cred.expires')}: ${formatTime(created.expires_at)}` }) : null)));
      await refresh();
    } catch (error) {
      const input = error.field && inputs[error.field];
      if (input) setFieldError(input, errorText(error));
      result.replaceChildren(h('div', { class: 'banner bad', role: 'alert', dataset: { code: error.code } },
        h('div', {}, h('strong', { text: t('cred.rejected') }), h('div', { text: errorText(error) }))));
    } finally {
      submit.disabled = false;
    }
  });
  return form;
}

function fileBase64(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => {
      const bytes = new Uint8Array(reader.result);
      let binary = '';
      for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
      resolve(btoa(binary));
    };
    reader.onerror = () => reject(reader.error);
    reader.readAsArrayBuffer(file);
  });
}
