// The APNs payload a test push will carry, built in the browser so its size can be shown on
// every keystroke. It follows APNsPayload.render and JSONValue's serialisation in
// Sources/TuisongCore: keys sorted by their UTF-8 bytes, no white space, only `"`, `\` and
// control characters escaped. The server renders the real payload; this only counts.

import { utf8Length } from './dom.js';

export const PAYLOAD_LIMIT = 4096;

function compareUTF8(a, b) {
  const x = new TextEncoder().encode(a);
  const y = new TextEncoder().encode(b);
  for (let i = 0; i < Math.min(x.length, y.length); i += 1) {
    if (x[i] !== y[i]) return x[i] - y[i];
  }
  return x.length - y.length;
}

export function canonicalJSON(value) {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJSON).join(',')}]`;
  const keys = Object.keys(value).sort(compareUTF8);
  return `{${keys.map((key) => `${JSON.stringify(key)}:${canonicalJSON(value[key])}`).join(',')}}`;
}

/**
 * The payload object for the console's fields: { title, body, badge, sound, custom }.
 * `custom` is an object whose keys sit next to `aps`.
 */
export function buildPayload({ title, body, badge, sound, custom }) {
  const aps = {};
  const alert = {};
  if (title) alert.title = title;
  if (body) alert.body = body;
  if (Object.keys(alert).length) aps.alert = alert;
  if (badge !== null && badge !== undefined && badge !== '') aps.badge = Number(badge);
  if (sound) aps.sound = sound;
  const root = { ...(custom || {}) };
  root.aps = aps;
  return root;
}

export function payloadText(fields) {
  return canonicalJSON(buildPayload(fields));
}

export function payloadSize(fields) {
  return utf8Length(payloadText(fields));
}
