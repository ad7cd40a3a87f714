import { get, post, put, del } from '../api.js';
import { h, field, setFieldError, notice, confirmDialog } from '../dom.js';
import { t, errorText } from '../i18n.js';
import { currentApp } from '../state.js';
import { parts, argumentCount } from '../template.js';
import { noAppPanel } from './common.js';

export async function renderTemplates(container, { arg, navigate }) {
  const app = currentApp();
  container.append(h('div', { class: 'page-head' },
    h('div', {}, h('h1', { tabindex: '-1', text: t('tpl.title') }), h('p', { class: 'subtitle', text: t('tpl.subtitle') }))));
  if (!app) {
    container.append(noAppPanel());
    return null;
  }
  const templates = (await get(`/apps/${app.id}/templates`)).templates;
  const selected = arg && arg !== 'new' ? templates.find((tpl) => tpl.id === Number(arg)) : null;

  const list = h('nav', { 'aria-label': t('tpl.list') },
    templates.length
      ? h('ul', { class: 'template-list', id: 'template-list' }, templates.map((tpl) => h('li', {},
        h('a', { href: `#/templates/${tpl.id}`, 'aria-current': selected?.id === tpl.id ? 'page' : null, text: tpl.name }),
        ' ', h('span', { class: 'muted', text: t('tpl.args', { n: tpl.argument_count }) }))))
      : h('p', { class: 'empty', text: t('tpl.none') }),
    h('p', {}, h('a', { href: '#/templates/new', id: 'new-template', text: `+ ${t('tpl.new')}` })));

  container.append(h('div', { class: 'grid-2' },
    h('section', { class: 'panel', 'aria-labelledby': 'tpl-list-title' }, h('h2', { id: 'tpl-list-title', text: t('tpl.list') }), list),
    h('section', { class: 'panel', 'aria-labelledby': 'tpl-edit-title' }, editor(app, selected, navigate))));
  return null;
}

function editor(app, template, navigate) {
  const name = h('input', { type: 'text', name: 'name', maxlength: 100, required: true, value: template?.name ?? '', autocomplete: 'off' });
  const title = h('input', { type: 'text', name: 'title_pattern', maxlength: 2000, value: template?.title_pattern ?? '', autocomplete: 'off' });
  const body = h('textarea', { name: 'body_pattern', maxlength: 2000, rows: 3, required: true, value: template?.body_pattern ?? '' });
  const inputs = { name, title_pattern: title, body_pattern: body };
  const argsBox = h('div', { class: 'row', id: 'template-args' });
  const argValues = [];
  const previewTitle = h('div', { class: 'preview-title', id: 'preview-title' });
  const previewBody = h('div', { class: 'preview-body', id: 'preview-body' });
  const preview = h('div', { class: 'preview-phone', 'aria-label': t('tpl.preview'), role: 'group' },
    h('div', { class: 'preview-card' }, h('div', { class: 'preview-app', text: app.name }), previewTitle, previewBody));

  function fill(target, pattern) {
    target.replaceChildren(...parts(pattern).map((part) => {
      if ('text' in part) return document.createTextNode(part.text);
      const value = argValues[part.index];
      if (value) return document.createTextNode(value);
      return h('span', { class: 'placeholder-missing', title: t('tpl.missing'), text: part.written });
    }));
  }

  function updateArgs() {
    const count = Math.min(argumentCount(title.value, body.value), 20);
    while (argsBox.children.length > count) argsBox.lastElementChild.remove();
    for (let i = argsBox.children.length; i < count; i += 1) {
      const input = h('input', { type: 'text', id: `template-arg-${i}`, autocomplete: 'off', value: argValues[i] ?? '' });
      input.addEventListener('input', () => {
        argValues[i] = input.value;
        updatePreview();
      });
      argsBox.append(field(`{${i}}`, input).wrap);
    }
  }
  function updatePreview() {
    updateArgs();
    fill(previewTitle, title.value);
    fill(previewBody, body.value);
  }
  title.addEventListener('input', updatePreview);
  body.addEventListener('input', updatePreview);

  const save = h('button', { type: 'submit', class: 'primary', id: 'template-save', text: template ? t('common.save') : t('tpl.create') });
  const form = h('form', { id: 'template-form', novalidate: true },
    h('h2', { id: 'tpl-edit-title', text: template ? t('tpl.edit', { name: template.name }) : t('tpl.new') }),
    field(t('tpl.name'), name, { id: 'template-name' }).wrap,
    field(t('tpl.titlePattern'), title, { id: 'template-title', hint: t('tpl.patternHint') }).wrap,
    field(t('tpl.bodyPattern'), body, { id: 'template-body' }).wrap,
    h('fieldset', {}, h('legend', { text: t('tpl.samples') }), argsBox, h('p', { class: 'muted', text: t('tpl.samplesHint') })),
    h('h3', { text: t('tpl.preview') }),
    preview,
    h('div', { class: 'actions', style: { marginTop: '12px' } }, save,
      template ? h('button', { type: 'button', class: 'danger', id: 'template-delete', text: t('common.delete'), onclick: remove } ) : null));

  async function remove() {
    if (!await confirmDialog(t('tpl.deleteTitle'), t('tpl.deleteConfirm', { name: template.name }), t('common.delete'), t('common.cancel'))) return;
    try {
      await del(`/apps/${app.id}/templates/${template.id}`);
      notice(t('tpl.deleted'), 'ok');
      navigate('#/templates');
    } catch (error) {
      notice(errorText(error), 'bad');
    }
  }

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    for (const input of Object.values(inputs)) setFieldError(input, null);
    const payload = { name: name.value, title_pattern: title.value, body_pattern: body.value };
    try {
      const saved = template
        ? await put(`/apps/${app.id}/templates/${template.id}`, payload)
        : await post(`/apps/${app.id}/templates`, payload);
      notice(t('tpl.saved', { name: saved.name }), 'ok');
      navigate(`#/templates/${saved.id}`);
    } catch (error) {
      const input = error.field && inputs[error.field];
      if (input) {
        setFieldError(input, errorText(error));
        input.focus();
      } else {
        notice(errorText(error), 'bad');
      }
    }
  });
  updatePreview();
  return form;
}
