// The page: the login (and sign-up) screen, then the map and list tabs under one top bar, kept current
// by the live feed.
import * as api from './api.js';
import { wait } from './format.js';
import { refreshAges, renderList } from './list.js';
import { followChanges } from './live.js';
import { leafletAvailable, PinMap } from './map.js';
import { PostingFlow } from './post.js';

const $ = (id) => document.getElementById(id);
const settings = document.body.dataset;
const LATEST = 100;

const state = {
  student: null,
  pins: new Map(),
  loaded: false,
  pending: [],
  reloadWhenLoaded: false,
  live: null,
  map: null,
  ageTimer: null,
};

function say(node, message) {
  node.textContent = message;
  node.hidden = !message;
}

function notice(message) {
  say($('notice'), message);
}

function loginMessage(error) {
  switch (error.kind) {
    case 'credentials': return 'Wrong email or password.';
    case 'throttled':
      return error.retryAfter ? `Too many attempts. Try again in ${wait(error.retryAfter)}.` : 'Too many attempts. Try again later.';
    case 'network': return 'Cannot reach the server. Check your connection and try again.';
    default: return `Login failed: ${error.message}`;
  }
}

function sortedPins() {
  return [...state.pins.values()].sort((a, b) => (b.updatedAt ?? '').localeCompare(a.updatedAt ?? '')).slice(0, LATEST);
}

function draw() {
  const pins = sortedPins();
  state.map?.show(pins);
  renderList($('pin-list'), $('list-empty'), pins);
  const mine = state.student && pins.some((pin) => pin.uniqueKey === state.student.key);
  $('add-pin').textContent = mine ? 'Update my pin' : 'Add my pin';
}

function upsert(pin) {
  if (!pin?.objectId) return;
  const known = state.pins.get(pin.objectId);
  if (known && (known.updatedAt ?? '') > (pin.updatedAt ?? '')) return;
  state.pins.set(pin.objectId, pin);
}

function applyChange(type, data) {
  if (!state.loaded) {
    state.pending.push([type, data]);
    return;
  }
  // A pin an operator hid leaves the map as a deleted one does.
  if (type === 'LocationDeleted' || type === 'LocationHidden') state.pins.delete(data.objectId);
  else upsert(data);
  draw();
}

/** Replaces the pins with the latest list; changes heard meanwhile are applied after it. */
async function loadPins(prefetched) {
  const button = $('refresh');
  button.disabled = true;
  state.loaded = false;
  try {
    const pins = await (prefetched ?? api.latestPins());
    state.pins = new Map(pins.map((pin) => [pin.objectId, pin]));
    if ($('notice').dataset.kind === 'load') notice('');
  } catch (error) {
    notice(`Could not download the latest pins: ${error.message}`);
    $('notice').dataset.kind = 'load';
  } finally {
    state.loaded = true;
    for (const [type, data] of state.pending.splice(0)) applyChange(type, data);
    draw();
    button.disabled = false;
  }
  if (state.reloadWhenLoaded) {
    state.reloadWhenLoaded = false;
    await loadPins();
  }
}

function setLive(live) {
  const status = $('live-status');
  // The stream starts at "now": what changed before it opened comes from the list, read again (a 304
  // when nothing did).
  if (live && status.classList.contains('offline')) {
    if (state.loaded) loadPins();
    else state.reloadWhenLoaded = true;
  }
  status.textContent = live ? 'Live' : 'Offline';
  status.classList.toggle('offline', !live);
  status.title = live ? 'Changes appear as they happen' : 'Not receiving changes; reconnecting';
}

function selectTab(name) {
  for (const tab of ['map', 'list']) {
    const selected = tab === name;
    const button = $(`tab-${tab}`);
    button.setAttribute('aria-selected', String(selected));
    button.tabIndex = selected ? 0 : -1;
    $(`panel-${tab}`).hidden = !selected;
  }
  if (name === 'map') state.map?.resized();
}

function startApp(student, prefetched) {
  state.student = student;
  $('login-view').hidden = true;
  $('top-bar').hidden = false;
  $('app-view').hidden = false;
  if (!state.map && leafletAvailable()) {
    state.map = new PinMap($('map'), {
      tileURL: settings.tileUrl,
      onTilesOffline: (offline) => {
        $('notice').dataset.kind = offline ? 'tiles' : '';
        notice(offline ? 'Map tiles cannot be loaded right now; the pins are shown on a plain background.' : '');
      },
    });
  } else if (!leafletAvailable()) {
    $('map').textContent = 'The map is not available on this server; the List tab shows every pin.';
  }
  selectTab('map');
  state.loaded = false;
  state.pending = [];
  state.reloadWhenLoaded = false;
  state.live = followChanges({ onChange: applyChange, onStatus: setLive });
  loadPins(prefetched);
  state.ageTimer = setInterval(() => refreshAges($('pin-list')), 30000);
}

function showLogin(message = '') {
  state.live?.stop();
  state.live = null;
  clearInterval(state.ageTimer);
  state.student = null;
  state.pins = new Map();
  state.map?.show([]);
  $('top-bar').hidden = true;
  $('app-view').hidden = true;
  $('login-view').hidden = false;
  showSignUp(false);
  say($('login-error'), message);
  $('login-password').value = '';
  $('login-email').focus();
}

function showSignUp(show) {
  $('sign-up-form').hidden = !show;
  $('login-form').hidden = show;
  $('show-sign-up').hidden = show || settings.identityProvider !== 'local';
  if (show) $('sign-up-first').focus();
}

async function enter(prefetched) {
  const student = await api.me();
  startApp(student, prefetched);
}

async function logIn(event) {
  event.preventDefault();
  const email = $('login-email').value.trim();
  const password = $('login-password').value;
  if (!email || !password) return say($('login-error'), 'Enter your email and password.');
  const button = $('login-submit');
  button.disabled = true;
  say($('login-error'), '');
  try {
    await api.logIn(email, password);
    await enter();
  } catch (error) {
    say($('login-error'), loginMessage(error));
  } finally {
    button.disabled = false;
  }
}

async function signUp(event) {
  event.preventDefault();
  const account = {
    firstName: $('sign-up-first').value.trim(), lastName: $('sign-up-last').value.trim(),
    email: $('sign-up-email').value.trim(), password: $('sign-up-password').value,
  };
  if (!account.firstName || !account.lastName || !account.email || !account.password) {
    return say($('sign-up-error'), 'Fill in every field.');
  }
  if (account.password.length < 8) return say($('sign-up-error'), 'The password needs at least 8 characters.');
  const button = $('sign-up-submit');
  button.disabled = true;
  say($('sign-up-error'), '');
  try {
    await api.signUp(account);
    await api.logIn(account.email, account.password);
    $('sign-up-form').reset();
    await enter();
  } catch (error) {
    const message = error.kind === 'throttled' && error.retryAfter
      ? `Too many sign-ups. Try again in ${wait(error.retryAfter)}.` : error.message;
    say($('sign-up-error'), message);
  } finally {
    button.disabled = false;
  }
}

async function logOut() {
  const button = $('log-out');
  button.disabled = true;
  try {
    await api.logOut();
    showLogin();
  } catch (error) {
    notice(`Could not log out: ${error.message}`);
  } finally {
    button.disabled = false;
  }
}

function wireTabs() {
  const tabs = ['map', 'list'];
  for (const name of tabs) {
    const tab = $(`tab-${name}`);
    tab.addEventListener('click', () => selectTab(name));
    tab.addEventListener('keydown', (event) => {
      const step = { ArrowRight: 1, ArrowLeft: -1 }[event.key];
      if (!step) return;
      event.preventDefault();
      const next = tabs[(tabs.indexOf(name) + step + tabs.length) % tabs.length];
      selectTab(next);
      $(`tab-${next}`).focus();
    });
  }
}

function init() {
  $('login-form').addEventListener('submit', logIn);
  $('sign-up-form').addEventListener('submit', signUp);
  $('show-sign-up').addEventListener('click', () => showSignUp(true));
  $('sign-up-cancel').addEventListener('click', () => showSignUp(false));
  if (settings.signUpUrl) {
    const link = $('sign-up-link');
    link.href = settings.signUpUrl;
    link.hidden = false;
  }
  wireTabs();
  $('refresh').addEventListener('click', () => loadPins());
  $('log-out').addEventListener('click', logOut);
  const posting = new PostingFlow({
    tileURL: settings.tileUrl,
    student: () => state.student,
    onPosted: (pin) => {
      upsert(pin);
      draw();
      notice('Your pin is on the map.');
      $('notice').dataset.kind = 'posted';
    },
    onSessionEnded: () => showLogin('Your session has ended. Log in again.'),
  });
  $('add-pin').addEventListener('click', () => posting.open());
  // The session cookie is HttpOnly; the XSRF-TOKEN cookie set with it says whether there may be one.
  if (!api.cookie('XSRF-TOKEN')) return showLogin();
  // Reads are public: the pins download while the session is checked.
  const pins = api.latestPins();
  pins.catch(() => {});
  enter(pins).catch((error) => showLogin(error.kind === 'network' ? loginMessage(error) : ''));
}

init();
