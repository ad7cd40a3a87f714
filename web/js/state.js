// What the whole console shares: the apps and which one is selected.

import { get } from './api.js';

const STORAGE_KEY = 'tuisong.app';

export const state = {
  apps: [],
  appID: null,
};

const listeners = new Set();

export function onAppsChanged(listener) {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

export async function loadApps() {
  const data = await get('/apps');
  state.apps = data.apps;
  const remembered = Number(localStorage.getItem(STORAGE_KEY));
  if (!state.apps.some((app) => app.id === state.appID)) {
    state.appID = state.apps.some((app) => app.id === remembered) ? remembered : (state.apps[0]?.id ?? null);
  }
  for (const listener of listeners) listener();
  return state.apps;
}

export function selectApp(id) {
  state.appID = id;
  if (id) localStorage.setItem(STORAGE_KEY, String(id));
  for (const listener of listeners) listener();
}

export function currentApp() {
  return state.apps.find((app) => app.id === state.appID) || null;
}
