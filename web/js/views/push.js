import { get, post, del, features } from '../api.js';
import { h, field, setFieldError, notice, confirmDialog, formatTime, formatNumber } from '../dom.js';
import { t, errorText, paren } from '../i18n.js';
import { currentApp, state } from '../state.js';
import { render as renderPattern, argumentCount } from '../template.js';
import { stateBadge, progressBar, countsLine, channelTable, failureBars, waitingList, audienceText, vendorText, expectedTotal, reasonText, channelLabel } from '../widgets.js';
import { noAppPanel } from './common.js';

// What the server warned about a push this console sent (`audience_empty`), by message id:
// the follow page says it from the first poll.
const pushWarnings = new Map();

/**
 * A service's body as the console shows it: JSON indented, form fields one a line; the shared
 * payload (`payloadChannel`'s, the server's `payload_channel`) exactly as it is sent.
 */
function bodyText(service, payloadChannel) {
  if (service.body === null || service.body === undefined) return '';
  if (service.channel === payloadChannel) return service.body;
  try {
    const value = JSON.parse(service.body);
    if (service.encoding === 'form') return Object.entries(value).map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`).join('\n');
    return JSON.stringify(value, null, 2);
  } catch {
    return service.body;
  }
}

/** The line under a service's body: its size, or why the service gets nothing. */
function bodyNote(service) {
  if (service.skip_reason) return t('push.bodySkipped', { reason: reasonText(service.skip_reason, service.channel) });
  const encoding = service.encoding === 'form' ? t('push.bodyForm') : '';
  return `${t('push.bodyBytes', { size: formatNumber(service.bytes) })}${encoding}`;
}

export async function renderPush(container, { arg, navigate }) {
  // #/push/<message id> follows a message; #/push/device/<token> composes for one device.
  const prefillToken = arg?.startsWith('device/') ? arg.slice('device/'.length) : null;
  if (arg && !prefillToken) return followMessage(container, Number(arg));
  const app = currentApp();
  container.append(h('div', { class: 'page-head' },
    h('div', {}, h('h1', { tabindex: '-1', text: t('push.title') }), h('p', { class: 'subtitle', text: app ? t('push.subtitle', { name: app.name }) : '' }))));
  if (!app) {
    container.append(noAppPanel());
    return null;
  }
  if (!features().push) container.append(h('div', { class: 'banner warn' }, h('div', {}, t('push.unavailable'))));

  const [templates, tags] = await Promise.all([
    get(`/apps/${app.id}/templates`).then((d) => d.templates),
    get(`/apps/${app.id}/tags`).then((d) => d.tags),
  ]);

  const environment = h('select', { name: 'environment' },
    h('option', { value: '', text: t('push.envEach') }),
    h('option', { value: 'sandbox', text: t('env.sandbox') }),
    h('option', { value: 'production', text: t('env.production') }));
  const audienceRadios = ['token', 'tag', 'all'].map((kind) => {
    const input = h('input', { type: 'radio', name: 'audience', value: kind, id: `audience-${kind}`, checked: kind === 'token' });
    return { kind, input, label: h('label', { for: input.id }, input, ` ${t(`push.audience.${kind}`)}`) };
  });
  const token = h('input', { type: 'text', name: 'token', autocomplete: 'off', spellcheck: 'false', placeholder: t('push.tokenPlaceholder'), value: prefillToken || '' });
  const tag = h('input', { type: 'text', name: 'tag', autocomplete: 'off', list: 'push-tags' });
  const tagList = h('datalist', { id: 'push-tags' }, tags.map((x) => h('option', { value: x.name })));
  const tokenField = field(t('push.token'), token, { id: 'push-token' });
  const tagField = field(t('push.tag'), tag, { id: 'push-tag' });

  const templateSelect = h('select', { name: 'template' },
    h('option', { value: '', text: t('push.noTemplate') }),
    templates.map((tpl) => h('option', { value: tpl.id, text: tpl.name })));
  const argsBox = h('div', { class: 'row', id: 'push-template-args' });
  const argInputs = [];
  const title = h('input', { type: 'text', name: 'title', maxlength: 1000, autocomplete: 'off' });
  const body = h('textarea', { name: 'body', rows: 3, maxlength: 4000 });
  const badge = h('input', { type: 'number', name: 'badge', min: 0, step: 1, inputmode: 'numeric' });
  const sound = h('input', { type: 'text', name: 'sound', placeholder: 'default', autocomplete: 'off' });
  const custom = h('textarea', { name: 'custom', rows: 4, class: 'code', spellcheck: 'false', placeholder: '{"order_id": 42}' });
  const customField = field(t('push.custom'), custom, { id: 'push-custom', hint: t('push.customHint') });

  const sizeText = h('span', { id: 'payload-size' });
  const meterFill = h('span');
  const meter = h('div', { class: 'meter', role: 'meter', 'aria-valuemin': 0, 'aria-labelledby': 'payload-size-label' }, meterFill);
  const payloadPre = h('pre', { class: 'payload', id: 'payload-preview' });
  // Each service's own body, rendered by the server through the service's transport: the
  // chosen device's service for one token, any service for a tag or all devices.
  const serviceSelect = h('select', { id: 'push-service', name: 'service' });
  const serviceBodyPre = h('pre', { class: 'payload', id: 'service-body' });
  const serviceNote = h('p', { class: 'muted', id: 'service-body-note' });
  const serviceHint = h('p', { class: 'muted', id: 'service-body-hint' });
  // The payload of the service whose devices all get one (the server's `payload_channel`) and
  // its size, as its transport renders it (the preview, a moment after each change); hidden
  // when the chosen device is of another service, whose own body is shown below instead. (The
  // element ids are the console's since it rendered APNs's payload itself.)
  const payloadHeading = h('h3', { style: { marginTop: '14px' } });
  const payloadSizeBox = h('div', { id: 'apns-size' },
    h('div', { class: 'meter-line' }, h('span', { id: 'payload-size-label', text: t('push.payloadSize') }), sizeText), meter);
  const payloadBox = h('div', { id: 'apns-payload' }, payloadHeading, payloadPre);
  let payloadChannel = null;
  let payloadTooLarge = false;
  let serviceBodies = [];
  let previewTimer = null;
  let previewSerial = 0;
  const previewTitle = h('div', { class: 'preview-title', id: 'push-preview-title' });
  const previewBody = h('div', { class: 'preview-body', id: 'push-preview-body' });
  const preview = h('div', { class: 'preview-phone', role: 'group', 'aria-label': t('tpl.preview') },
    h('div', { class: 'preview-card' }, h('div', { class: 'preview-app', text: app.name }), previewTitle, previewBody));
  const send = h('button', { type: 'submit', class: 'primary', id: 'push-send', text: t('push.send') });
  const inputs = { token, tag, 'audience.token': token, 'audience.tag': tag, environment, title, body, badge, sound, custom, template_id: templateSelect };

  function audienceKind() {
    return audienceRadios.find((r) => r.input.checked).kind;
  }
  function selectedTemplate() {
    return templates.find((tpl) => tpl.id === Number(templateSelect.value)) || null;
  }
  function parseCustom() {
    const text = custom.value.trim();
    if (!text) return { value: {} };
    try {
      const value = JSON.parse(text);
      if (value === null || typeof value !== 'object' || Array.isArray(value)) return { error: t('push.customObject') };
      if ('aps' in value) return { error: t('push.customAps') };
      return { value };
    } catch (error) {
      return { error: t('push.customInvalid', { message: error.message }) };
    }
  }

  function updateTemplateArgs() {
    const tpl = selectedTemplate();
    const count = tpl ? Math.min(argumentCount(tpl.title_pattern, tpl.body_pattern), 20) : 0;
    while (argInputs.length > count) {
      argInputs.pop();
      argsBox.lastElementChild.remove();
    }
    for (let i = argInputs.length; i < count; i += 1) {
      const input = h('input', { type: 'text', id: `push-arg-${i}`, autocomplete: 'off' });
      input.addEventListener('input', update);
      argInputs.push(input);
      argsBox.append(field(`{${i}}`, input).wrap);
    }
    title.disabled = Boolean(tpl);
    body.disabled = Boolean(tpl);
  }

  /** The fields as they will be sent (a template renders title and body). */
  function currentFields() {
    const tpl = selectedTemplate();
    const args = argInputs.map((input) => input.value);
    return {
      title: tpl ? renderPattern(tpl.title_pattern, args) : title.value,
      body: tpl ? renderPattern(tpl.body_pattern, args) : body.value,
      badge: badge.value === '' ? null : badge.value,
      sound: sound.value.trim(),
      custom: parseCustom().value || {},
    };
  }

  /** The body of the push (and of its preview) as the form stands. */
  function pushRequest() {
    const kind = audienceKind();
    const audience = kind === 'token' ? { token: token.value.trim() } : kind === 'tag' ? { tag: tag.value.trim() } : { all: true };
    const tpl = selectedTemplate();
    const fields = currentFields();
    const notification = {};
    const alert = {};
    if (!tpl && fields.title) alert.title = fields.title;
    if (!tpl && fields.body) alert.body = fields.body;
    if (Object.keys(alert).length) notification.alert = alert;
    if (fields.badge !== null) notification.badge = Number(fields.badge);
    if (fields.sound) notification.sound = fields.sound;
    if (Object.keys(fields.custom).length) notification.custom = fields.custom;
    const request = { audience, notification };
    if (environment.value) request.environment = environment.value;
    if (tpl) {
      request.template_id = tpl.id;
      request.arguments = argInputs.map((input) => input.value);
    }
    return request;
  }

  function showServiceBody() {
    const chosen = serviceBodies.find((s) => s.channel === serviceSelect.value) || serviceBodies[0];
    serviceBodyPre.textContent = chosen ? bodyText(chosen, payloadChannel) : '';
    serviceNote.textContent = chosen ? bodyNote(chosen) : '';
    serviceBodyPre.dataset.channel = chosen?.channel ?? '';
  }

  /** Asks the server for each service's body, a moment after the last change. */
  function schedulePreview() {
    clearTimeout(previewTimer);
    previewTimer = setTimeout(async () => {
      const serial = ++previewSerial;
      const request = pushRequest();
      if (request.audience.token === '' || request.audience.tag === '') request.audience = { all: true };
      let data;
      try {
        data = await post(`/apps/${app.id}/push/preview`, request);
      } catch {
        return; // a token still being typed, say: the last bodies stay
      }
      if (serial !== previewSerial) return;
      showPayload(data);
      const previous = serviceSelect.value;
      serviceBodies = data.services || [];
      serviceSelect.replaceChildren(...serviceBodies.map((s) => h('option', { value: s.channel, text: s.display_name })));
      serviceSelect.value = serviceBodies.some((s) => s.channel === previous) ? previous : (serviceBodies[0]?.channel ?? '');
      // One device: its own service's body, nothing to choose.
      serviceSelect.disabled = serviceBodies.length < 2;
      const otherService = Boolean(data.channel) && data.channel !== payloadChannel;
      payloadSizeBox.hidden = otherService;
      payloadBox.hidden = otherService;
      serviceHint.textContent = data.channel ? t('push.bodyForDevice', { service: channelLabel(data.channel) }) : (audienceKind() === 'token' ? t('push.bodyUnknownDevice') : '');
      showServiceBody();
    }, 250);
  }
  serviceSelect.addEventListener('change', showServiceBody);

  /** The shared payload the server rendered, its size against its service's limit. */
  function showPayload(data) {
    payloadChannel = data.payload_channel ?? null;
    payloadHeading.textContent = payloadChannel ? t('push.payload', { service: channelLabel(payloadChannel) }) : '';
    const size = data.bytes ?? 0;
    const limit = data.limit ?? 0;
    sizeText.textContent = t('push.size', { size: formatNumber(size), limit: formatNumber(limit) });
    sizeText.dataset.bytes = String(size);
    meter.setAttribute('aria-valuemax', String(limit));
    meter.setAttribute('aria-valuenow', String(size));
    meter.className = `meter ${size > limit ? 'over' : size > limit * 0.9 ? 'warn' : ''}`;
    meterFill.style.width = `${limit ? Math.min(100, (100 * size) / limit) : 0}%`;
    payloadPre.textContent = data.payload ?? '';
    payloadTooLarge = limit > 0 && size > limit;
    send.disabled = payloadTooLarge || Boolean(parseCustom().error) || !features().push;
  }

  function update() {
    schedulePreview();
    const kind = audienceKind();
    tokenField.wrap.hidden = kind !== 'token';
    tagField.wrap.hidden = kind !== 'tag';
    const tpl = selectedTemplate();
    const fields = currentFields();
    if (tpl) {
      title.value = fields.title;
      body.value = fields.body;
    }
    const parsed = parseCustom();
    setFieldError(custom, parsed.error || null);
    previewTitle.textContent = fields.title;
    previewBody.textContent = fields.body || (fields.title ? '' : t('push.silent'));
    send.disabled = payloadTooLarge || Boolean(parsed.error) || !features().push;
  }

  for (const r of audienceRadios) r.input.addEventListener('change', update);
  templateSelect.addEventListener('change', () => {
    updateTemplateArgs();
    update();
  });
  for (const input of [title, body, badge, sound, custom, token, tag]) input.addEventListener('input', update);
  environment.addEventListener('change', update);

  const form = h('form', { id: 'push-form', novalidate: true },
    h('div', { class: 'grid-2' },
      h('div', {},
        h('fieldset', {}, h('legend', { text: t('push.audience') }),
          h('div', { class: 'radios' }, audienceRadios.map((r) => r.label)),
          h('div', { style: { marginTop: '10px' } }, tokenField.wrap, tagField.wrap, tagList)),
        field(t('push.environment'), environment, { id: 'push-environment', hint: t('push.environmentHint') }).wrap,
        h('fieldset', {}, h('legend', { text: t('push.content') }),
          field(t('push.template'), templateSelect, { id: 'push-template' }).wrap,
          argsBox,
          field(t('push.alertTitle'), title, { id: 'push-title' }).wrap,
          field(t('push.alertBody'), body, { id: 'push-body' }).wrap,
          h('div', { class: 'row' }, field(t('push.badge'), badge, { id: 'push-badge' }).wrap, field(t('push.sound'), sound, { id: 'push-sound' }).wrap),
          customField.wrap)),
      h('div', {},
        h('div', { class: 'panel sticky-panel', style: { marginBottom: '0' } },
          payloadSizeBox,
          h('h3', { style: { marginTop: '14px' }, text: t('tpl.preview') }),
          preview,
          payloadBox,
          h('h3', { style: { marginTop: '14px' }, id: 'service-body-title', text: t('push.serviceBody') }),
          field(t('push.service'), serviceSelect, { id: 'push-service-field' }).wrap,
          serviceHint,
          serviceBodyPre,
          serviceNote,
          h('div', { class: 'actions', style: { marginTop: '14px' } }, send)))));

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    for (const input of Object.values(inputs)) setFieldError(input, null);
    const request = pushRequest();
    send.disabled = true;
    try {
      const result = await post(`/apps/${app.id}/push`, request);
      const warnings = result.warnings || [];
      pushWarnings.set(result.message_id, warnings);
      if (warnings.includes('audience_empty')) notice(t('push.audienceEmpty'), 'warn');
      else notice(t('push.sent', { id: result.message_id }), 'ok');
      navigate(`#/push/${result.message_id}`);
    } catch (error) {
      const input = error.field && inputs[error.field];
      if (input) {
        setFieldError(input, errorText(error));
        input.focus();
      } else {
        notice(errorText(error), 'bad');
      }
      send.disabled = false;
    }
  });

  container.append(h('section', { class: 'panel' }, form));
  updateTemplateArgs();
  update();
  return null;
}

/** Follows one message live until every device has an outcome. */
async function followMessage(container, id) {
  const head = h('div', { class: 'page-head' },
    h('div', {}, h('h1', { tabindex: '-1', text: t('push.following', { id }) }), h('p', { class: 'subtitle', id: 'follow-subtitle' })),
    h('a', { href: '#/push', text: t('push.another') }));
  const status = h('div', { id: 'follow-status', 'aria-live': 'polite' });
  const details = h('div', { id: 'follow-details' });
  container.append(head, h('section', { class: 'panel' }, status), details);

  let stopped = false;
  let timer = null;
  let payloadShown = false;
  let cancelling = false;
  const failuresBox = h('div', { id: 'follow-failure-list' });
  const skipsBox = h('div', { id: 'follow-skip-list' });
  async function poll() {
    let message;
    try {
      message = await get(`/messages/${id}`);
    } catch (error) {
      if (stopped || error.status === 401) return;
      status.replaceChildren(h('div', { class: 'banner bad', role: 'alert' }, errorText(error)));
      if (error.status !== 404) timer = setTimeout(poll, 2000);
      return;
    }
    if (stopped) return;
    const appName = state.apps.find((a) => a.id === message.app_id)?.name ?? `#${message.app_id}`;
    head.querySelector('#follow-subtitle').textContent = `${appName} · ${vendorText(message.vendor)} · ${audienceText(message.audience)} · ${formatTime(message.created_at)}`;
    const c = message.counts;
    const done = ['completed', 'cancelled'].includes(message.state) && c.queued + c.sending === 0;
    // Nothing matched: said as such, not as "Completed, 0 sent" alone.
    const empty = (pushWarnings.get(id) || []).includes('audience_empty') || (done && message.state === 'completed' && expectedTotal(message) === 0);
    const scheduled = message.state === 'scheduled' && message.send_at;
    let cancelButton = null;
    if (scheduled) {
      cancelButton = h('button', { type: 'button', class: 'danger', id: 'follow-cancel', text: t('push.cancel'), disabled: cancelling });
      cancelButton.addEventListener('click', async () => {
        if (!await confirmDialog(t('push.cancelTitle'), t('push.cancelConfirm', { id, time: formatTime(message.send_at) }), t('push.cancelYes'), t('push.keepScheduled'))) return;
        cancelling = true;
        cancelButton.disabled = true;
        try {
          await del(`/messages/${id}`);
          notice(t('push.cancelled', { id }), 'ok');
        } catch (error) {
          notice(errorText(error), 'bad');
        }
        cancelling = false;
        clearTimeout(timer);
        poll();
      });
    }
    // replaceChildren writes a null as the text "null": the parts a message lacks are left out.
    status.replaceChildren(...[
      h('div', { class: 'meter-line' }, h('span', {}, message.title ? h('b', { text: `${message.title} ` }) : null, message.body || ''), stateBadge(message.state)),
      progressBar(message),
      countsLine(message),
      channelTable(message),
      empty ? h('div', { class: 'banner warn', role: 'status', id: 'follow-empty' }, h('div', {}, h('strong', { text: t('push.noDeviceMatched') }), t('push.noDeviceMatchedHint'))) : null,
      scheduled ? h('div', { class: 'scheduled-line', id: 'follow-scheduled' }, h('span', { text: t('push.scheduledFor', { time: formatTime(message.send_at) }) }), cancelButton) : null,
      message.state === 'cancelled' && message.send_at ? h('p', { class: 'muted', id: 'follow-cancelled', text: t('push.cancelledScheduled', { time: formatTime(message.send_at) }) }) : null,
      waitingList(message, formatTime),
      done && message.completed_at ? h('p', { class: 'muted', id: 'follow-done', text: t('push.done', { time: formatTime(message.completed_at) }) }) : null,
    ].filter(Boolean));
    status.dataset.state = message.state;
    status.dataset.delivered = String(c.delivered);
    status.dataset.total = String(message.total ?? '');
    if (!payloadShown) {
      payloadShown = true;
      // Each service's own body for this message, the services it went to first.
      let services = [];
      try {
        services = (await get(`/messages/${id}/bodies`)).services || [];
      } catch {
        services = [];
      }
      if (stopped) return;
      const payloadChannel = message.payload_channel;
      const shared = { channel: payloadChannel, display_name: channelLabel(payloadChannel), encoding: 'json', body: message.payload, bytes: message.payload_bytes, used: true };
      if (!services.length) services = [shared];
      // "not sent to" once the message went somewhere (a scheduled one has gone nowhere yet).
      const anyUsed = services.some((s) => s.used);
      const select = h('select', { id: 'follow-service' }, services.map((s) => h('option', { value: s.channel, text: s.used || !anyUsed ? s.display_name : `${s.display_name}${paren(t('push.notSentTo'))}` })));
      const pre = h('pre', { class: 'payload', id: 'follow-body' });
      const note = h('p', { class: 'muted', id: 'follow-payload-size' });
      const show = () => {
        const chosen = services.find((s) => s.channel === select.value) || services[0];
        pre.textContent = bodyText(chosen, payloadChannel);
        pre.dataset.channel = chosen.channel;
        note.textContent = chosen.channel === payloadChannel && !chosen.skip_reason
          ? t('push.size', { size: formatNumber(chosen.bytes), limit: formatNumber(message.payload_limit) })
          : bodyNote(chosen);
      };
      const firstUsed = services.find((s) => s.used && s.channel === payloadChannel) || services.find((s) => s.used) || services[0];
      select.value = firstUsed.channel;
      select.addEventListener('change', show);
      show();
      details.replaceChildren(h('div', { class: 'grid-2' },
        h('section', { class: 'panel', 'aria-labelledby': 'follow-failures' }, h('h2', { id: 'follow-failures', text: t('monitor.failures') }), failuresBox,
          h('h2', { id: 'follow-skips', text: t('monitor.skips') }), skipsBox),
        h('section', { class: 'panel', 'aria-labelledby': 'follow-payload' },
          h('h2', { id: 'follow-payload', text: t('push.serviceBodies') }),
          field(t('push.service'), select, { id: 'follow-service-field' }).wrap,
          pre, note)));
    }
    failuresBox.replaceChildren(failureBars(message.failures));
    skipsBox.replaceChildren(failureBars(message.skips, 'monitor.noSkips'));
    // A held or waiting message may wait for hours (a credential, a service's next day).
    if (!done) timer = setTimeout(poll, ['held', 'waiting', 'scheduled'].includes(message.state) ? 5000 : 500);
  }
  await poll();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
