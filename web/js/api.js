// The admin API client: JSON in and out, the CSRF token on every mutation, a timeout on
// every call, and one place that notices an expired session.

const session = { csrf: null, features: {}, onUnauthorized: () => {} };

export class ApiError extends Error {
  constructor(status, detail) {
    super(detail?.message || `HTTP ${status}`);
    this.status = status;
    this.code = detail?.code || 'http_error';
    this.field = detail?.field || null;
    this.retryAfter = detail?.retry_after || null;
    this.params = detail?.params || {};
    // The detail in both languages ({en, zh}), when the server words a case the code alone cannot.
    this.text = detail?.text || null;
  }
}

export function setSession(csrf, features) {
  session.csrf = csrf;
  session.features = features || {};
}

export function features() {
  return session.features;
}

export function onUnauthorized(handler) {
  session.onUnauthorized = handler;
}

export async function api(method, path, body, { timeout = 20000 } = {}) {
  const headers = { Accept: 'application/json' };
  const options = { method, headers, credentials: 'same-origin', cache: 'no-store' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    options.body = JSON.stringify(body);
  }
  if (method !== 'GET' && session.csrf) headers['X-CSRF-Token'] = session.csrf;
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeout);
  options.signal = controller.signal;
  let response;
  try {
    response = await fetch(`/admin/api${path}`, options);
  } catch (error) {
    throw new ApiError(0, { code: error.name === 'AbortError' ? 'timeout' : 'network', message: String(error.message || error) });
  } finally {
    clearTimeout(timer);
  }
  if (response.status === 204) return null;
  let data = null;
  try {
    data = await response.json();
  } catch {
    data = null;
  }
  if (!response.ok) {
    const error = new ApiError(response.status, data?.error);
    if (response.status === 401 && path !== '/login') {
      session.csrf = null;
      session.onUnauthorized();
    }
    throw error;
  }
  return data;
}

export const get = (path, options) => api('GET', path, undefined, options);
export const post = (path, body, options) => api('POST', path, body ?? {}, options);
export const put = (path, body) => api('PUT', path, body);
export const patch = (path, body) => api('PATCH', path, body);
export const del = (path) => api('DELETE', path);
