// The page: the login (and sign-up) screen, then the map and list tabs under one top bar, kept current
// by the live feed, or both showing the same past moment the time control chose. The same page shows the
// default map at `/` and a class map at `/maps/{slug}/`, whose moderators also hide pins from the list.
import { AccountMenu } from './account.js';
import * as api from './api.js';
import { dateTime, fullName, say, wait } from './format.js';
import { HistoryView } from './history.js';
import { refreshAges, renderList } from './list.js';
import { followChanges } from './live.js';
import { leafletAvailable, PinMap } from './map.js';
import { arrive, MapSwitcher, MODERATORS, pageToReturnTo, returnHereAfterSignIn, showProblem } from './maps.js';
import { PostingFlow } from './post.js';
import { TimeControl } from './timeline.js';

const $ = (id) => document.getElementById(id);
const settings = document.body.dataset;
const LATEST = 100;

const state = {
  student: null,
  /** The class map shown (its name, settings and the student's role), or null on the default map. */
  classMap: null,
  switcher: null,
  /** The present, kept current by the live feed even while the past is shown. */
  pins: new Map(),
  /** The past moment shown ({ moment, pins }), or null for now. */
  past: null,
  /** The pins on screen, by objectId. */
  shown: new Map(),
  loaded: false,
  pending: [],
  reloadWhenLoaded: false,
  live: null,
  /** Whether the live feed is connected. */
  connected: false,
  map: null,
  ageTimer: null,
  time: null,
  history: null,
};

/** The quiet line under the top bar; kind says which part of the page owns the message shown. */
function notice(message, kind = '') {
  say($('notice'), message);
  $('notice').dataset.kind = message ? kind : '';
}

/** Clears the line when it holds a message of this kind. */
function clearNotice(kind) {
  if ($('notice').dataset.kind === kind) notice('');
}

function loginMessage(error) {
  switch (error.kind) {
    case 'credentials': return 'Wrong email or password.';
    case 'disabled': return error.message;
    case 'throttled':
      return error.retryAfter ? `Too many attempts. Try again in ${wait(error.retryAfter)}.` : 'Too many attempts. Try again later.';
    case 'network': return 'Cannot reach the server. Check your connection and try again.';
    default: return `Login failed: ${error.message}`;
  }
}

const canModerate = () => MODERATORS.includes(state.classMap?.role);

/** On a class map, its members post, or anyone logged in when the map says so. */
function canPost() {
  const map = state.classMap;
  return !map || map.post === 'signedIn' || ['owner', 'moderator', 'member'].includes(map.role);
}

function sortedPins() {
  return [...state.pins.values()].sort((a, b) => (b.updatedAt ?? '').localeCompare(a.updatedAt ?? '')).slice(0, LATEST);
}

function draw() {
  const present = sortedPins();
  const pins = state.past?.pins ?? present;
  state.shown = new Map(pins.map((pin) => [pin.objectId, pin]));
  state.map?.show(pins);
  renderList($('pin-list'), $('list-empty'), pins, { moderate: canModerate() && !state.past });
  const then = state.past ? dateTime(state.past.moment) : null;
  $('map').classList.toggle('past', Boolean(then));
  $('map').setAttribute('aria-label', then ? `Map of the pins at ${then}` : 'Map of the latest pins');
  $('pin-list').setAttribute('aria-label', then ? `Pins at ${then}, newest first` : 'Latest pins, newest first');
  $('list-empty').textContent = then ? 'No pins at that moment.' : 'No pins yet. Be the first: Add my pin.';
  const mine = state.student && present.some((pin) => pin.uniqueKey === state.student.key);
  $('add-pin').textContent = mine ? 'Update my pin' : 'Add my pin';
}

function showMoment(moment, pins) {
  state.past = moment === null ? null : { moment, pins };
  clearNotice('time');
  showLiveStatus();
  draw();
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
  if (type === 'LocationPosted') state.time.notePin(data);
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
    clearNotice('load');
  } catch (error) {
    notice(`Could not download the latest pins: ${error.message}`, 'load');
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

/** The gateway could not replay what the feed missed: the list is read again, as at a reconnect. */
function reloadPins() {
  if (state.loaded) loadPins();
  else state.reloadWhenLoaded = true;
}

function setLive(live) {
  // The stream starts at "now": what changed before it opened comes from the list, read again (a 304
  // when nothing did).
  if (live && !state.connected) reloadPins();
  state.connected = live;
  showLiveStatus();
}

/** Live or Offline, as the feed is; Paused while the past is shown (the feed keeps the present meanwhile). */
function showLiveStatus() {
  const status = $('live-status');
  const past = state.past !== null;
  status.textContent = past ? 'Paused' : state.connected ? 'Live' : 'Offline';
  status.classList.toggle('offline', !past && !state.connected);
  status.classList.toggle('paused', past);
  status.title = past ? 'Showing the past; Back to now shows the changes'
    : state.connected ? 'Changes appear as they happen' : 'Not receiving changes; reconnecting';
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
  state.switcher.showMap();
  $('add-pin').hidden = !canPost();
  $('login-view').hidden = true;
  $('top-bar').hidden = false;
  $('app-view').hidden = false;
  if (!state.map && leafletAvailable()) {
    state.map = new PinMap($('map'), {
      tileURL: settings.tileUrl,
      tileMaxZoom: settings.tileMaxZoom,
      onHistory: (pin) => state.history.open(pin),
      onTilesOffline: (offline) => {
        notice(offline ? 'Map tiles cannot be loaded right now; the pins are shown on the built-in world map.' : '', 'tiles');
      },
    });
  } else if (!leafletAvailable()) {
    $('map').textContent = 'The map is not available on this server; the List tab shows every pin.';
  }
  selectTab('map');
  state.loaded = false;
  state.pending = [];
  state.reloadWhenLoaded = false;
  state.live = followChanges({ onChange: applyChange, onStatus: setLive, onReset: reloadPins });
  loadPins(prefetched).then(() => state.time.findStart());
  state.ageTimer = setInterval(() => {
    refreshAges($('pin-list'));
    state.time.tick();
  }, 30000);
}

/** Back to the login form, with an error or a message to show there. */
function showLogin(error = '', message = '') {
  state.live?.stop();
  state.live = null;
  clearInterval(state.ageTimer);
  state.student = null;
  state.pins = new Map();
  state.past = null;
  state.time.reset();
  state.map?.reset();
  $('top-bar').hidden = true;
  $('app-view').hidden = true;
  $('map-message-view').hidden = true;
  $('login-view').hidden = false;
  showSignUp(false);
  say($('login-error'), error);
  say($('login-message'), message);
  $('login-password').value = '';
  $('login-email').focus();
}

function showSignUp(show) {
  $('sign-up-form').hidden = !show;
  $('login-form').hidden = show;
  $('show-sign-up').hidden = show || settings.identityProvider !== 'local';
  $('provider-sign-in').hidden = show || !settings.signInProvider;
  if (show) $('sign-up-first').focus();
}

/** Instead of the map: why there is none to show (not found, a bad invite, waiting for approval). */
function showMapProblem(problem) {
  showProblem(problem);
  $('login-view').hidden = true;
  $('top-bar').hidden = true;
  $('app-view').hidden = true;
  $('map-message-view').hidden = false;
}

async function enter(prefetched) {
  const student = await api.me();
  if (api.MAP) {
    const { map, problem } = await arrive();
    if (problem) return showMapProblem(problem);
    state.classMap = map;
  }
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
  say($('login-message'), '');
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

/** After the account was erased: the login, saying what went with it. */
function erased({ pins, pending }) {
  const message = pending ? 'Your account has been erased and can no longer log in; your pins leave the map as soon as the server can finish.'
    : pins === 0 ? 'Your account has been erased.'
      : pins === 1 ? 'Your account and your pin have been erased.'
        : Number.isInteger(pins) ? `Your account and your ${pins} pins have been erased.`
          : 'Your account and your pins have been erased.';
  showLogin('', message);
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
  // The gateway sends the browser to the provider and, once it vouches for the student, back here with the
  // same cookies a login sets: the start-up below finds the session as after a reload.
  if (settings.signInProvider) $('provider-sign-in-link').textContent = `Log in with ${settings.signInProvider}`;
  wireTabs();
  state.time = new TimeControl({
    onShow: showMoment,
    onError: (message) => notice(message, 'time'),
  });
  state.history = new HistoryView({ onSeeMoment: (moment) => state.time.see(moment) });
  $('pin-list').addEventListener('click', (event) => {
    const objectId = event.target.closest('.row-history')?.closest('li')?.dataset.objectId;
    const pin = objectId && state.shown.get(objectId);
    if (pin) state.history.open(pin);
  });
  new AccountMenu({
    student: () => state.student,
    onErased: erased,
    onSessionEnded: () => showLogin('Your session has ended. Log in again.'),
    onError: (message) => notice(message, 'account'),
  });
  $('refresh').addEventListener('click', () => loadPins());
  $('log-out').addEventListener('click', logOut);
  const posting = new PostingFlow({
    tiles: { tileURL: settings.tileUrl, tileMaxZoom: settings.tileMaxZoom },
    student: () => state.student,
    onPosted: (pin) => {
      upsert(pin);
      state.time.notePin(pin);
      // The student sees their pin where it is now.
      state.time.see(null);
      notice('Your pin is on the map.', 'posted');
    },
    onSessionEnded: () => showLogin('Your session has ended. Log in again.'),
  });
  $('add-pin').addEventListener('click', () => posting.open());
  state.switcher = new MapSwitcher({
    map: () => state.classMap,
    student: () => state.student,
    onUnhidden: (pin) => {
      upsert(pin);
      draw();
    },
  });
  $('pin-list').addEventListener('click', async (event) => {
    const objectId = event.target.closest('.row-hide')?.closest('li')?.dataset.objectId;
    const pin = objectId && state.shown.get(objectId);
    if (!pin) return;
    (await import('./moderation.js')).askToHide(pin, (hidden) => {
      state.pins.delete(hidden.objectId);
      draw();
      notice(`${fullName(hidden)}’s pin is hidden. Manage this map lists it with your reason.`, 'hidden');
    });
  });
  $('provider-sign-in-link').addEventListener('click', returnHereAfterSignIn);
  $('map-message-log-out').addEventListener('click', logOut);
  // The session cookie is HttpOnly; the XSRF-TOKEN cookie set with it says whether there may be one.
  const signedIn = Boolean(api.cookie('XSRF-TOKEN'));
  const back = api.MAP ? null : pageToReturnTo();
  if (back && signedIn) return window.location.replace(back);
  if (!signedIn) return showLogin('', api.MAP?.code ? 'Log in, or sign up, to join this map.' : '');
  // The pins download while the session is checked; on an invite's page, once it has made the student a member.
  const pins = api.MAP?.code ? undefined : api.latestPins();
  pins?.catch(() => {});
  enter(pins).catch((error) => showLogin(error.kind === 'network' ? loginMessage(error) : ''));
}

init();
