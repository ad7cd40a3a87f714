// Pieces several pages show: delivery progress, message state badges, the rate chart,
// failure bars and credential alerts.

import { h, svg, formatNumber, formatClock, formatTime } from './dom.js';
import { features } from './api.js';
import { t, maybe, paren, localized, currentLanguage } from './i18n.js';

const STATE_CLASS = {
  completed: 'ok', sending: 'info', queued: 'info', waiting: 'info', scheduled: '', cancelled: 'warn',
  delivered: 'ok', failed: 'bad', skipped: '', held: 'warn',
};

export function stateBadge(state) {
  return h('span', { class: `badge ${STATE_CLASS[state] || ''}`, text: t(`state.${state}`) });
}

/** The expected total of a message: its audience size once known, else what is counted. */
export function expectedTotal(message) {
  const c = message.counts;
  const counted = c.delivered + c.failed + c.skipped + c.held + c.queued + c.sending;
  return Math.max(message.total ?? 0, counted);
}

/**
 * What a sent message still waits for (`waiting_for` of its status): one line per state and
 * reason, with its count and until when (a retry or a daily quota; a hold's expiry). Null when
 * nothing waits.
 */
export function waitingList(message, formatTime) {
  const waiting = message.waiting_for || [];
  if (!waiting.length) return null;
  const held = waiting.some((w) => w.state === 'held');
  return h('div', { class: 'waiting', id: 'follow-waiting' },
    h('p', { text: t('push.waitingFor') }),
    h('ul', {}, waiting.map((w) => h('li', { dataset: { state: w.state, reason: w.reason ?? '' } },
      h('b', { text: t(`state.${w.state}`) }), ` · ${reasonText(w.reason)} · ${formatNumber(w.count)}`,
      w.until ? ` · ${t('push.waitUntil', { time: formatTime(w.until) })}` : ''))),
    held ? h('p', { class: 'muted', text: t('push.heldHint') }) : null);
}

/** A stacked bar: delivered, failed, skipped, held, over the expected total. */
export function progressBar(message) {
  const total = expectedTotal(message);
  const c = message.counts;
  const finished = c.delivered + c.failed + c.skipped + c.held;
  const bar = h('div', {
    class: 'progress', role: 'progressbar', 'aria-valuemin': 0, 'aria-valuemax': total || 1,
    'aria-valuenow': finished, 'aria-label': t('progress.label', { id: message.id }),
  });
  for (const state of ['delivered', 'failed', 'skipped', 'held']) {
    if (!c[state] || !total) continue;
    bar.append(h('span', { class: state, style: { width: `${(100 * c[state]) / total}%` } }));
  }
  return bar;
}

export function countsLine(message) {
  const c = message.counts;
  const total = expectedTotal(message);
  const item = (key, value, cls) => h('span', { class: cls }, `${t(`count.${key}`)} `, h('b', { text: formatNumber(value) }));
  return h('div', { class: 'counts' },
    item('delivered', c.delivered, 'count-delivered'),
    item('failed', c.failed, 'count-failed'),
    item('skipped', c.skipped, 'count-skipped'),
    c.held ? item('held', c.held, 'count-held') : null,
    item('pending', c.queued + c.sending, 'count-pending'),
    item('total', total, 'count-total'));
}

/**
 * A reason as the console shows it: the code as the server (or the service) gave it, with its
 * meaning in the console's language: a service's own code as its transport declares it
 * (`service_codes` of the session's `features.transports`), else the console's words for a
 * reason of any service (`reason.UnknownDevice`).
 */
export function reasonText(reason, channel) {
  if (!reason) return '—';
  const meaning = serviceCodeMeaning(reason, channel) || maybe(`reason.${reason}`);
  return meaning ? `${reason}${paren(meaning)}` : reason;
}

/** What `channel`'s service means by its code `reason` (one stored with its detail, `1101/20003`,
 * means what its code means), in the console's language; null when its transport declares none. */
function serviceCodeMeaning(reason, channel) {
  const codes = channel && declaredTransport(channel)?.service_codes;
  if (!codes) return null;
  const code = Object.hasOwn(codes, reason) ? reason : reason.split('/')[0];
  return Object.hasOwn(codes, code) ? localized(codes[code], codes[code].en) : null;
}

/** What the gateway's registry declares of a channel (`features.transports`), or undefined. */
function declaredTransport(name) {
  const uploaded = features().uploaded_files;
  if (uploaded?.channel === name) return uploaded;
  return (features().transports || []).find((f) => f.channel === name);
}

/** The server's audience summary ("tag vip", "1 token(s)", "all devices") in the console's words. */
export function audienceText(summary) {
  if (!summary) return '—';
  const counted = /^(\d+) (token|device|account)\(s\)$/.exec(summary);
  if (counted) return t(`audience.${counted[2]}s`, { n: formatNumber(Number(counted[1])) });
  if (summary.startsWith('tag ')) return t('audience.tag', { name: summary.slice(4) });
  return maybe(`audience.${summary.replace(' ', '_')}`) ?? summary;
}

/** A message's vendor ("native", "baidu", "console") in the console's words. */
export function vendorText(vendor) {
  return maybe(`vendor.${vendor}`) ?? vendor ?? '—';
}

/** Failures as a table of service, reason and count: one service's `Unregistered` is not another's. */
export function failureTable(rows) {
  if (!rows?.length) return h('p', { class: 'empty', text: t('monitor.noFailures') });
  return h('table', { id: 'failures-by-channel' },
    h('thead', {}, h('tr', {},
      h('th', { scope: 'col', text: t('msg.channel') }),
      h('th', { scope: 'col', text: t('msg.reason') }),
      h('th', { scope: 'col', class: 'num', text: t('msg.count') }))),
    h('tbody', {}, rows.map((r) => h('tr', { dataset: { channel: r.channel, reason: r.reason } },
      h('td', { text: channelLabel(r.channel) }),
      h('td', { class: 'mono', title: r.reason, text: reasonText(r.reason, r.channel) }),
      h('td', { class: 'num', text: formatNumber(r.count) })))));
}

/** Channels in the gateway's order (the service whose credentials are uploaded files, then those
 * with a credential form, in registry order), then any it does not declare (a stored row of a
 * transport since removed), by name. */
function channelEntries(channels) {
  const uploaded = features().uploaded_files?.channel;
  const order = [...(uploaded ? [uploaded] : []), ...(features().android_channels || [])];
  const entries = Object.entries(channels || {});
  const rank = (name) => (order.includes(name) ? order.indexOf(name) : order.length);
  return entries.sort((a, b) => rank(a[0]) - rank(b[0]) || a[0].localeCompare(b[0]));
}

/** A service's name for people: the console's own words where it has them (`channel.<name>`),
 * else the display name its transport declares in the console's language, else the name itself. */
export function channelLabel(name) {
  const declared = declaredTransport(name);
  return maybe(`channel.${name}`) || localized(declared?.display_name_text, declared?.display_name) || name;
}

/**
 * A channel's arrival rate: phones that reported the push (the service's receipts, or the app's
 * own) over the pushes the service accepted, as "96%"; null where nothing reports arrival (a
 * service that posts no receipts, without the app's own) or nothing was delivered yet.
 */
export function arrivalRate(c) {
  if (typeof c.arrived !== 'number' || !c.delivered) return null;
  const percent = (100 * c.arrived) / c.delivered;
  return `${percent >= 99.95 || percent === 0 ? Math.round(percent) : percent.toFixed(1)}%`;
}

/**
 * Delivered per channel in one line, "<service> 120 · <other service> 80", with each channel's failures and
 * pending deliveries after it when there are any; null when the message has no channel counts.
 */
export function channelCountsLine(message, { label = true } = {}) {
  const entries = channelEntries(message.channels);
  if (!entries.length) return null;
  const items = [];
  entries.forEach(([name, c], index) => {
    if (index) items.push(h('span', { class: 'sep', 'aria-hidden': 'true', text: ' · ' }));
    const extra = [];
    if (c.failed) extra.push(`${t('count.failed')} ${formatNumber(c.failed)}`);
    if (c.skipped) extra.push(`${t('count.skipped')} ${formatNumber(c.skipped)}`);
    if (c.held) extra.push(`${t('count.held')} ${formatNumber(c.held)}`);
    const pending = (c.queued || 0) + (c.sending || 0);
    if (pending) extra.push(`${t('count.pending')} ${formatNumber(pending)}`);
    const rate = arrivalRate(c);
    items.push(h('span', { class: 'channel-count', dataset: { channel: name } },
      `${channelLabel(name)} `, h('b', { text: formatNumber(c.delivered || 0) }),
      rate ? h('span', { class: 'arrival-rate', title: t('count.arrivalNote'), text: ` ${t('count.arrivedShort')} ${rate}` }) : null,
      extra.length ? h('span', { class: 'muted', text: paren(extra.join(', ')) }) : null));
  });
  return h('div', { class: 'channel-counts' }, label ? h('span', { class: 'muted', text: `${t('monitor.byChannel')}: ` }) : null, items);
}

/** Every count of every channel a message went through, as a table; null without counts. */
export function channelTable(message) {
  const entries = channelEntries(message.channels);
  if (!entries.length) return null;
  const states = ['delivered', 'failed', 'skipped', 'held', 'pending'];
  // Arrival columns only when some channel reports arrival; "—" on a channel that reports none.
  const receipts = entries.some(([, c]) => typeof c.arrived === 'number');
  // With the arrival columns, a phone keeps delivered, failed, arrived and the rate in view.
  const narrowClass = (state) => (receipts && ['skipped', 'held', 'pending'].includes(state) ? 'num wide-only' : 'num');
  const receiptCells = (c) => {
    if (!receipts) return [];
    const reported = typeof c.arrived === 'number';
    return [
      h('td', { class: 'num', dataset: { state: 'arrived' }, text: reported ? formatNumber(c.arrived) : '—' }),
      h('td', { class: 'num wide-only', dataset: { state: 'clicked' }, text: reported ? formatNumber(c.clicked || 0) : '—' }),
      h('td', { class: 'num', dataset: { state: 'arrival-rate' }, text: arrivalRate(c) ?? '—' }),
    ];
  };
  return h('div', { class: 'table-wrap' }, h('table', { id: 'channel-table' },
    h('thead', {}, h('tr', {},
      h('th', { scope: 'col', text: t('msg.channel') }),
      states.map((state) => h('th', { scope: 'col', class: narrowClass(state), text: t(`count.${state}`) })),
      receipts ? [
        h('th', { scope: 'col', class: 'num', text: t('count.arrived') }),
        h('th', { scope: 'col', class: 'num wide-only', text: t('count.clicked') }),
        h('th', { scope: 'col', class: 'num', title: t('count.arrivalNote'), text: t('count.arrivalRate') }),
      ] : [])),
    h('tbody', {}, entries.map(([name, c]) => h('tr', { dataset: { channel: name } },
      h('th', { scope: 'row', text: channelLabel(name) }),
      states.map((state) => h('td', { class: narrowClass(state), dataset: { state }, text: formatNumber(state === 'pending' ? (c.queued || 0) + (c.sending || 0) : (c[state] || 0)) })),
      receiptCells(c))))));
}

/** Counts by reason as bars: failures, or skips with `emptyKey` 'monitor.noSkips'. */
export function failureBars(failures, emptyKey = 'monitor.noFailures') {
  const entries = Object.entries(failures || {}).sort((a, b) => b[1] - a[1]);
  if (!entries.length) return h('p', { class: 'empty', text: t(emptyKey) });
  const max = entries[0][1];
  return h('div', { class: 'bars' }, entries.map(([reason, count]) =>
    h('div', { class: 'bar-row' },
      h('span', { class: 'label', title: reason, text: reasonText(reason) }),
      h('span', { 'aria-hidden': 'true' }, h('span', { class: 'bar', style: { width: `${Math.max(2, (100 * count) / max)}%` } })),
      h('span', { class: 'right', text: formatNumber(count) }))));
}

/** An SVG area chart of deliveries per second; `points` = [{ t, per_second }]. */
export function rateChart(points, bucketSeconds, pixelWidth = 720) {
  // Drawn at the width it is shown at, so labels keep their size on a phone.
  const width = Math.round(Math.min(900, Math.max(300, pixelWidth)));
  const height = width < 500 ? 180 : 200;
  const pad = { left: 44, right: 10, top: 12, bottom: 26 };
  const innerW = width - pad.left - pad.right;
  const innerH = height - pad.top - pad.bottom;
  const values = points.map((p) => p.per_second);
  const peak = Math.max(0, ...values);
  const scaleMax = niceCeiling(Math.max(1, peak));
  const x = (i) => pad.left + (points.length <= 1 ? 0 : (i * innerW) / (points.length - 1));
  const y = (v) => pad.top + innerH - (v / scaleMax) * innerH;
  const total = values.reduce((sum, v) => sum + v * bucketSeconds, 0);
  // One format for every rate the chart shows (axis and peak): as many decimals as the scale needs.
  const decimals = scaleMax < 4 ? 2 : scaleMax < 40 ? 1 : 0;
  const rateFormat = new Intl.NumberFormat(document.documentElement.lang || undefined, { minimumFractionDigits: decimals, maximumFractionDigits: decimals });
  const formatRate = (v) => rateFormat.format(v);
  const summary = t('monitor.chartSummary', { peak: formatRate(peak), total: formatNumber(Math.round(total)) });

  const chart = svg('svg', { viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': summary });
  chart.append(svg('title', { text: summary }));
  for (let i = 0; i <= 4; i += 1) {
    const value = (scaleMax * i) / 4;
    const gy = y(value);
    chart.append(svg('line', { class: i === 0 ? 'axis' : 'grid', x1: pad.left, x2: width - pad.right, y1: gy, y2: gy }));
    chart.append(svg('text', { x: pad.left - 6, y: gy + 4, 'text-anchor': 'end', text: formatRate(value) }));
  }
  if (points.length > 1) {
    const line = points.map((p, i) => `${i ? 'L' : 'M'}${x(i).toFixed(1)},${y(p.per_second).toFixed(1)}`).join(' ');
    const area = `${line} L${x(points.length - 1).toFixed(1)},${y(0)} L${x(0).toFixed(1)},${y(0)} Z`;
    chart.append(svg('path', { class: 'area', d: area }));
    chart.append(svg('path', { class: 'line', d: line }));
    const labelEvery = Math.max(1, Math.round(points.length / 5));
    points.forEach((p, i) => {
      if (i % labelEvery !== 0 && i !== points.length - 1) return;
      const label = formatClock(new Date(p.t), false);
      chart.append(svg('text', { x: x(i), y: height - 8, 'text-anchor': i === 0 ? 'start' : (i === points.length - 1 ? 'end' : 'middle'), text: label }));
    });
  }
  return h('div', { class: 'chart' }, chart, h('p', { class: 'muted chart-summary', text: summary }));
}

function niceCeiling(value) {
  const magnitude = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 2.5, 5, 10]) {
    if (value <= step * magnitude) return step * magnitude;
  }
  return 10 * magnitude;
}

/** Banners for failing credentials (red) and expiring ones (amber); null when all is well. */
export function credentialBanners(alerts) {
  const out = [];
  if (alerts?.failing?.length) {
    out.push(h('div', { class: 'banner bad', role: 'alert', id: 'failing-credentials' },
      h('span', { class: 'banner-icon', 'aria-hidden': 'true', text: '!' }),
      h('div', {},
        h('strong', { text: t('cred.failingTitle', { n: alerts.failing.length }) }),
        h('ul', {}, alerts.failing.map((c) => h('li', { dataset: { channel: c.channel || '' } },
          // A form credential carries its ids; an uploaded file its environment and kind.
          // Which one: its selector (label) and when it was added, so two of one service differ.
          c.kind
            ? `${c.app_name} · ${channelLabel(c.channel)} ${t(`env.${c.environment}`)} · ${c.kind.toUpperCase()} ${c.key_id || c.subject || ''}`
            : `${c.app_name} · ${channelLabel(c.channel)} · ${c.vendor_app_id} ${c.client_id || ''}`,
          c.selector ? ` · ${t('cred.selectorShort', { selector: c.selector })}` : '',
          c.created_at ? ` · ${t('cred.addedOn', { time: formatTime(c.created_at) })}` : '',
          ' — ',
          h('b', { class: 'mono', text: c.status_reason || t('cred.failing') }),
          // The service's own code says little alone: its meaning, as the service documents it.
          c.meaning ? h('span', { class: 'meaning', text: `${currentLanguage() === 'zh' ? '：' : ': '}${localized(c.meaning_text, c.meaning)}` }) : null))))));
  }
  if (alerts?.expiring?.length) {
    out.push(h('div', { class: 'banner warn', id: 'expiring-credentials' },
      h('span', { class: 'banner-icon', 'aria-hidden': 'true', text: '!' }),
      h('div', {},
        h('strong', { text: t('cred.expiringTitle', { n: alerts.expiring.length }) }),
        h('ul', {}, alerts.expiring.map((c) => h('li', {},
          `${c.app_name} · ${t(`env.${c.environment}`)} · ${c.subject || c.key_id || c.kind} — `,
          h('b', { text: c.expired ? t('cred.expired') : t('cred.daysLeft', { n: c.days_left }) })))))));
  }
  return out;
}
