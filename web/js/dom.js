// Small DOM helpers. Text always goes in through textContent (never innerHTML), so nothing
// the API returns can inject markup.

export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === 'class') el.className = value;
    else if (key === 'text') el.textContent = value;
    else if (key.startsWith('on') && typeof value === 'function') el.addEventListener(key.slice(2), value);
    else if (key === 'dataset') Object.assign(el.dataset, value);
    // Through CSSOM: the page's CSP refuses inline style attributes.
    else if (key === 'style') Object.assign(el.style, value);
    else if (key === 'value') el.value = value;
    else if (key === 'checked') el.checked = Boolean(value);
    else if (value === true) el.setAttribute(key, '');
    else el.setAttribute(key, String(value));
  }
  append(el, children);
  return el;
}

const SVG_NS = 'http://www.w3.org/2000/svg';

export function svg(tag, attrs, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined) continue;
    if (key === 'text') el.textContent = value;
    else el.setAttribute(key, String(value));
  }
  append(el, children);
  return el;
}

export function append(parent, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    parent.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return parent;
}

export function clear(el) {
  while (el.firstChild) el.firstChild.remove();
  return el;
}

let fieldCounter = 0;

/** A labelled form field: returns { wrap, input }. `control` is an element or a tag name. */
export function field(labelText, control, { hint, id } = {}) {
  const input = typeof control === 'string' ? h(control) : control;
  input.id = input.id || id || `f${++fieldCounter}`;
  const children = [h('label', { for: input.id, text: labelText }), input];
  let hintEl = null;
  if (hint) {
    hintEl = h('div', { class: 'hint', id: `${input.id}-hint`, text: hint });
    input.setAttribute('aria-describedby', hintEl.id);
    children.push(hintEl);
  }
  const wrap = h('div', { class: 'field' }, children);
  return { wrap, input, hint: hintEl };
}

/** Marks the field holding `input` invalid with `message`, or clears it. */
export function setFieldError(input, message) {
  const wrap = input.closest('.field');
  if (!wrap) return;
  wrap.querySelector('.error-text')?.remove();
  wrap.classList.toggle('invalid', Boolean(message));
  input.toggleAttribute('aria-invalid', Boolean(message));
  if (message) {
    const err = h('div', { class: 'error-text', id: `${input.id}-error`, text: message });
    wrap.append(err);
    input.setAttribute('aria-errormessage', err.id);
  } else {
    input.removeAttribute('aria-errormessage');
  }
}

export function notice(message, kind = '') {
  const box = document.getElementById('notices');
  const el = h('div', { class: `notice ${kind}`, text: message });
  box.append(el);
  setTimeout(() => el.remove(), kind === 'bad' ? 8000 : 4000);
}

/** A modal confirmation; resolves true when confirmed. Uses <dialog> for focus handling. */
export function confirmDialog(title, message, confirmLabel, cancelLabel) {
  return new Promise((resolve) => {
    const yes = h('button', { type: 'button', class: 'danger', text: confirmLabel });
    const no = h('button', { type: 'button', text: cancelLabel });
    const dialog = h('dialog', { 'aria-labelledby': 'confirm-title', class: 'confirm' },
      h('h2', { id: 'confirm-title', text: title }),
      h('p', { text: message }),
      h('div', { class: 'actions' }, yes, no));
    const done = (value) => { dialog.close(); dialog.remove(); resolve(value); };
    yes.addEventListener('click', () => done(true));
    no.addEventListener('click', () => done(false));
    dialog.addEventListener('cancel', (event) => { event.preventDefault(); done(false); });
    document.body.append(dialog);
    dialog.showModal();
    no.focus();
  });
}

/** The page's language (set by i18n.js), so numbers and dates follow the toggle. */
function locale() {
  return document.documentElement.lang || undefined;
}

export function formatNumber(n) {
  return new Intl.NumberFormat(locale()).format(n);
}

export function formatTime(iso) {
  if (!iso) return '—';
  const date = new Date(iso);
  return date.toLocaleString(locale(), { year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit' });
}

export function formatClock(date, withSeconds = true) {
  return date.toLocaleTimeString(locale(), withSeconds ? undefined : { hour: '2-digit', minute: '2-digit' });
}

export function shortToken(token) {
  return token.length > 20 ? `${token.slice(0, 10)}…${token.slice(-8)}` : token;
}

/** Bytes of `text` in UTF-8. */
export function utf8Length(text) {
  return new TextEncoder().encode(text).length;
}
