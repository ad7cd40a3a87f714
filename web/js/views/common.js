import { h } from '../dom.js';
import { t } from '../i18n.js';

/** Shown by the per-app pages while no app exists. */
export function noAppPanel() {
  return h('div', { class: 'banner info' },
    h('div', {}, h('strong', { text: t('app.noneTitle') }), ' ', h('a', { href: '#/apps', text: t('app.noneLink') })));
}
