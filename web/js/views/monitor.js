import { get } from '../api.js';
import { h, clear, formatTime, formatNumber, formatClock } from '../dom.js';
import { t } from '../i18n.js';
import { state } from '../state.js';
import { stateBadge, progressBar, countsLine, channelCountsLine, failureBars, failureTable, rateChart, credentialBanners, audienceText, vendorText } from '../widgets.js';

const REFRESH_MS = 2000;

export async function renderMonitor(container) {
  const alerts = h('div', { id: 'monitor-alerts' });
  const running = h('div', { id: 'monitor-running' });
  const chart = h('div', { id: 'monitor-chart' });
  const failures = h('div', { id: 'monitor-failures' });
  const skips = h('div', { id: 'monitor-skips' });
  const recent = h('div', { id: 'monitor-recent', class: 'table-wrap' });
  const updated = h('span', { class: 'muted', id: 'monitor-updated' });

  container.append(
    h('div', { class: 'page-head' },
      h('div', {}, h('h1', { tabindex: '-1', text: t('monitor.title') }), h('p', { class: 'subtitle', text: t('monitor.subtitle') })),
      updated),
    alerts,
    h('section', { class: 'panel', 'aria-labelledby': 'running-title' }, h('h2', { id: 'running-title', text: t('monitor.running') }), running),
    h('div', { class: 'grid-2' },
      h('section', { class: 'panel', 'aria-labelledby': 'rate-title' }, h('h2', { id: 'rate-title', text: t('monitor.rate') }), chart),
      h('section', { class: 'panel', 'aria-labelledby': 'failures-title' }, h('h2', { id: 'failures-title', text: t('monitor.failures') }), failures,
        h('h2', { id: 'skips-title', text: t('monitor.skips') }), skips)),
    h('section', { class: 'panel', 'aria-labelledby': 'recent-title', style: { marginTop: '16px' } }, h('h2', { id: 'recent-title', text: t('monitor.recent') }), recent));

  const appName = (id) => state.apps.find((app) => app.id === id)?.name ?? `#${id}`;

  function draw(data) {
    clear(alerts).append(...credentialBanners(data.credentials));
    clear(running);
    if (!data.running.length) {
      running.append(h('p', { class: 'empty', text: t('monitor.nothingRunning') }));
    } else {
      for (const message of data.running) {
        running.append(h('div', { class: 'running-message', dataset: { message: message.id } },
          h('div', { class: 'meter-line' },
            h('span', {}, h('a', { href: `#/push/${message.id}`, text: `#${message.id}` }), ` · ${appName(message.app_id)} · ${audienceText(message.audience)}`),
            stateBadge(message.state)),
          progressBar(message), countsLine(message), channelCountsLine(message)));
      }
    }
    clear(chart).append(rateChart(data.rate, data.bucket_seconds, chart.clientWidth || 720));
    clear(failures).append(
      h('p', { class: 'muted', text: t('monitor.failuresWindow', { minutes: Math.round(data.failures_window_seconds / 60) }) }),
      data.failures_by_channel ? failureTable(data.failures_by_channel) : failureBars(data.failures));
    clear(skips).append(failureBars(data.skips, 'monitor.noSkips'));
    clear(recent);
    if (!data.recent.length) {
      recent.append(h('p', { class: 'empty', text: t('monitor.noMessages') }));
    } else {
      // One card per message on a phone: nothing clipped, times on one line.
      recent.append(h('table', { class: 'cards', id: 'recent-table' },
        h('thead', {}, h('tr', {},
          h('th', { scope: 'col', text: t('msg.id') }),
          h('th', { scope: 'col', text: t('msg.app') }),
          h('th', { scope: 'col', class: 'wide-only', text: t('msg.vendor') }),
          h('th', { scope: 'col', text: t('msg.state') }),
          h('th', { scope: 'col', text: t('msg.audience') }),
          h('th', { scope: 'col', class: 'num', text: t('count.delivered') }),
          h('th', { scope: 'col', class: 'num', text: t('count.failed') }),
          h('th', { scope: 'col', text: t('msg.channels') }),
          h('th', { scope: 'col', text: t('msg.created') }))),
        h('tbody', {}, data.recent.map((m) => h('tr', { dataset: { message: m.id } },
          h('td', { dataset: { label: t('msg.id') } }, h('a', { href: `#/push/${m.id}`, text: `#${m.id}` })),
          h('td', { dataset: { label: t('msg.app') }, text: appName(m.app_id) }),
          h('td', { class: 'wide-only', dataset: { label: t('msg.vendor') }, text: vendorText(m.vendor) }),
          h('td', { dataset: { label: t('msg.state') } }, stateBadge(m.state)),
          h('td', { class: 'audience', dataset: { label: t('msg.audience') }, text: audienceText(m.audience) }),
          h('td', { class: 'num', dataset: { label: t('count.delivered') }, text: formatNumber(m.counts.delivered) }),
          h('td', { class: 'num', dataset: { label: t('count.failed') }, text: formatNumber(m.counts.failed) }),
          h('td', { class: 'channels', dataset: { label: t('msg.channels') } }, channelCountsLine(m, { label: false }) ?? '—'),
          h('td', { class: 'time nowrap', dataset: { label: t('msg.created') }, text: formatTime(m.created_at) }))))));
    }
    updated.textContent = t('monitor.updated', { time: formatClock(new Date(data.now)) });
  }

  let stopped = false;
  let timer = null;
  async function refresh() {
    try {
      const data = await get('/monitor?minutes=15&bucket=15');
      if (stopped) return;
      draw(data);
    } catch (error) {
      if (stopped || error.status === 401) return;
      updated.textContent = t('monitor.refreshFailed', { message: error.message });
    }
    if (!stopped) timer = setTimeout(refresh, document.hidden ? REFRESH_MS * 5 : REFRESH_MS);
  }
  await refresh();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
