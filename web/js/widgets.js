// Pieces several pages show: delivery progress, message state badges, the rate chart,
// failure bars and credential alerts.

import { h, svg, formatNumber, formatClock } from './dom.js';
import { t } from './i18n.js';

const STATE_CLASS = {
  completed: 'ok', sending: 'info', queued: 'info', scheduled: '', cancelled: 'warn',
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

/** Channels in a fixed order (APNs first), then any this console does not know yet. */
const CHANNEL_ORDER = ['apns', 'fcm', 'huawei', 'honor', 'xiaomi', 'oppo', 'vivo'];

function channelEntries(channels) {
  const entries = Object.entries(channels || {});
  const rank = (name) => (CHANNEL_ORDER.includes(name) ? CHANNEL_ORDER.indexOf(name) : CHANNEL_ORDER.length);
  return entries.sort((a, b) => rank(a[0]) - rank(b[0]) || a[0].localeCompare(b[0]));
}

function channelLabel(name) {
  const key = `channel.${name}`;
  const text = t(key);
  return text === key ? name : text;
}

/**
 * Delivered per channel in one line, "APNs 120 · FCM 80", with each channel's failures and
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
    items.push(h('span', { class: 'channel-count', dataset: { channel: name } },
      `${channelLabel(name)} `, h('b', { text: formatNumber(c.delivered || 0) }),
      extra.length ? h('span', { class: 'muted', text: ` (${extra.join(', ')})` }) : null));
  });
  return h('div', { class: 'channel-counts' }, label ? h('span', { class: 'muted', text: `${t('monitor.byChannel')}: ` }) : null, items);
}

/** Every count of every channel a message went through, as a table; null without counts. */
export function channelTable(message) {
  const entries = channelEntries(message.channels);
  if (!entries.length) return null;
  const states = ['delivered', 'failed', 'skipped', 'held', 'pending'];
  return h('div', { class: 'table-wrap' }, h('table', { id: 'channel-table' },
    h('thead', {}, h('tr', {},
      h('th', { scope: 'col', text: t('msg.channel') }),
      states.map((state) => h('th', { scope: 'col', class: 'num', text: t(`count.${state}`) })))),
    h('tbody', {}, entries.map(([name, c]) => h('tr', { dataset: { channel: name } },
      h('th', { scope: 'row', text: channelLabel(name) }),
      states.map((state) => h('td', { class: 'num', dataset: { state }, text: formatNumber(state === 'pending' ? (c.queued || 0) + (c.sending || 0) : (c[state] || 0)) })))))));
}

/** Counts by reason as bars: failures, or skips with `emptyKey` 'monitor.noSkips'. */
export function failureBars(failures, emptyKey = 'monitor.noFailures') {
  const entries = Object.entries(failures || {}).sort((a, b) => b[1] - a[1]);
  if (!entries.length) return h('p', { class: 'empty', text: t(emptyKey) });
  const max = entries[0][1];
  return h('div', { class: 'bars' }, entries.map(([reason, count]) =>
    h('div', { class: 'bar-row' },
      h('span', { class: 'label', title: reason, text: reason }),
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
  const summary = t('monitor.chartSummary', { peak: formatNumber(Math.round(peak * 100) / 100), total: formatNumber(Math.round(total)) });

  const chart = svg('svg', { viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': summary });
  chart.append(svg('title', { text: summary }));
  for (let i = 0; i <= 4; i += 1) {
    const value = (scaleMax * i) / 4;
    const gy = y(value);
    chart.append(svg('line', { class: i === 0 ? 'axis' : 'grid', x1: pad.left, x2: width - pad.right, y1: gy, y2: gy }));
    chart.append(svg('text', { x: pad.left - 6, y: gy + 4, 'text-anchor': 'end', text: formatNumber(value) }));
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
        h('ul', {}, alerts.failing.map((c) => h('li', { dataset: { channel: c.channel || 'apns' } },
          // An Android credential carries its channel; an APNs one its environment and kind.
          c.channel
            ? `${c.app_name} · ${channelLabel(c.channel)} · ${c.vendor_app_id} ${c.client_id || ''} — `
            : `${c.app_name} · ${t(`env.${c.environment}`)} · ${c.kind.toUpperCase()} ${c.key_id || c.subject || ''} — `,
          h('b', { text: c.status_reason || t('cred.failing') })))))));
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
