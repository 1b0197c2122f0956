// Which map the page shows: the default map at `/` or a class map at `/maps/{slug}/`, arrived at through
// an invite link (`/maps/{slug}/join/{code}`) or not; and the switcher in the top bar that lists the maps
// the student is on. My maps and a map's management load only when they are opened.
import * as api from './api.js';
import { element, say } from './format.js';
import { Menu } from './menu.js';

const $ = (id) => document.getElementById(id);
/** The page to come back to after signing in at the identity provider, which returns to `/`. */
const RETURN_KEY = 'onthemap.returnTo';

export const MODERATORS = ['owner', 'moderator'];

const ROLE_NAMES = { owner: 'owner', moderator: 'moderator', member: 'member', pending: 'waiting for approval' };
export const roleName = (role) => ROLE_NAMES[role] ?? '';

/** What the page says instead of the map when there is none to show. */
const PROBLEMS = {
  notFound: {
    title: 'Map not found',
    text: 'There is no map at this address, or only its members may see it. If your teacher shared an invite link, open that link.',
  },
  invite: {
    title: 'This invite link does not work',
    text: 'It may have expired, been used up or been withdrawn, or it was copied only in part. Ask whoever shared it for a new one.',
  },
  pending: {
    title: 'Waiting for approval',
    text: 'You asked to join this map. Once one of its moderators approves you, it opens here.',
  },
};

/**
 * Joins with the invite's code when the address carries one, then reads the map. Resolves { map } with the
 * map's name, settings and the student's role, or { problem } naming one of PROBLEMS.
 */
export async function arrive() {
  const { slug, path, code } = api.MAP;
  if (code) {
    try {
      const membership = await api.joinMap(slug, code);
      if (membership?.role === 'pending') return { problem: 'pending' };
    } catch (error) {
      if (error.kind === 'notFound') return { problem: 'invite' };
      throw error;
    }
    // Joined: the address is the map's, and a later log in (as someone else) does not use the code again.
    window.history.replaceState(null, '', path);
    api.MAP.code = null;
  }
  try {
    return { map: await api.mapDetails(slug) };
  } catch (error) {
    if (error.kind !== 'notFound') throw error;
    // A pending member reads the map as anyone outside it does; their own list says they are waiting.
    const mine = await api.myMaps().catch(() => []);
    return { problem: mine.some((map) => map.slug === slug && map.role === 'pending') ? 'pending' : 'notFound' };
  }
}

export function showProblem(name) {
  const problem = PROBLEMS[name];
  $('map-message-title').textContent = problem.title;
  $('map-message-text').textContent = problem.text;
}

/** Before leaving for the identity provider's sign-in: the class map's page is where it ends. */
export function returnHereAfterSignIn() {
  if (api.MAP) window.sessionStorage.setItem(RETURN_KEY, window.location.pathname);
}

/** The class map page to go back to after a sign-in at the provider, once; null when there is none. */
export function pageToReturnTo() {
  const path = window.sessionStorage.getItem(RETURN_KEY);
  window.sessionStorage.removeItem(RETURN_KEY);
  return path && api.mapOfAddress(path) ? path : null;
}

export class MapSwitcher {
  /** map(): the class map shown (null on the default map); student(): who is logged in; onUnhidden(pin): a moderator showed a pin again. */
  constructor({ map, student, onUnhidden }) {
    this.map = map;
    this.student = student;
    this.onUnhidden = onUnhidden;
    this.menu = new Menu($('maps-button'), $('maps-menu'), () => this.list());
    $('my-maps').addEventListener('click', async () => {
      this.menu.show(false);
      (await import('./my-maps.js')).openMyMaps();
    });
    $('manage-map').addEventListener('click', async () => {
      this.menu.show(false);
      (await import('./moderation.js')).openManagement({ map: this.map(), student: this.student(), onUnhidden: this.onUnhidden });
    });
  }

  /** The top bar names the map shown; its moderators get a way to manage it. */
  showMap() {
    const map = this.map();
    const name = map?.name ?? 'On The Map';
    $('map-name').textContent = name;
    $('maps-button').setAttribute('aria-label', `Maps: ${name}`);
    document.title = map ? `${map.name} · On The Map` : 'On The Map';
    $('manage-map').hidden = !MODERATORS.includes(map?.role);
  }

  async list() {
    const current = this.map()?.slug ?? null;
    const item = (href, name, note, slug) => element('li', {}, [
      element('a', { text: name, attributes: { href, ...(slug === current ? { 'aria-current': 'page' } : {}) } }),
      ...(note ? [element('span', { className: 'map-role', text: note })] : []),
    ]);
    const everyone = item('/', 'On The Map', 'everyone', null);
    const list = $('maps-list');
    list.replaceChildren(everyone);
    list.setAttribute('aria-busy', 'true');
    say($('maps-error'), '');
    try {
      const maps = await api.myMaps();
      list.replaceChildren(everyone, ...maps.map((map) => item(`/maps/${map.slug}/`, map.name, roleName(map.role), map.slug)));
    } catch (error) {
      say($('maps-error'), `Your maps could not be listed: ${error.message}`);
    } finally {
      list.setAttribute('aria-busy', 'false');
    }
  }
}
