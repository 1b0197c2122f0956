// The gateway's API as the page uses it. Every failure is an ApiError whose kind the screens tell apart.

const PREFIX = ")]}'\n";

/**
 * The map this page shows, read from its own address: { slug, path, code } for a class map's page
 * (`/maps/{slug}/`) or an invite's (`/maps/{slug}/join/{code}`), null for the default map at `/`.
 */
export function mapOfAddress(pathname) {
  const match = /^\/maps\/([a-z0-9](?:[a-z0-9]|-(?!-)){1,38}[a-z0-9])\/?(?:join\/([A-Za-z0-9_-]{1,64})\/?)?$/.exec(pathname);
  return match ? { slug: match[1], path: `/maps/${match[1]}/`, code: match[2] ?? null } : null;
}

export const MAP = mapOfAddress(window.location.pathname);
/** Where this map's pins are: the default map's routes, or the same routes under the class map's path. */
export const BASE = MAP ? `/maps/${MAP.slug}` : '';

export class ApiError extends Error {
  // kind: network | credentials | disabled | throttled | notLoggedIn | forbidden | notFound | refused | server
  constructor(kind, message, { status = 0, retryAfter = null } = {}) {
    super(message);
    this.kind = kind;
    this.status = status;
    this.retryAfter = retryAfter;
  }
}

export function cookie(name) {
  for (const part of document.cookie.split(';')) {
    const [key, ...value] = part.trim().split('=');
    if (key === name) return decodeURIComponent(value.join('='));
  }
  return '';
}

function kindOf(status) {
  if (status === 429) return 'throttled';
  if (status === 401) return 'notLoggedIn';
  if (status === 403) return 'forbidden';
  if (status === 404) return 'notFound';
  if (status >= 500) return 'server';
  return 'refused';
}

export async function request(method, path, { body, prefixed = false } = {}) {
  const headers = { Accept: 'application/json' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  // The session cookie is HttpOnly; writes prove this page can read the XSRF-TOKEN cookie set beside it.
  const xsrf = cookie('XSRF-TOKEN');
  if (method !== 'GET' && xsrf) headers['X-XSRF-TOKEN'] = xsrf;
  let response;
  let text;
  try {
    response = await fetch(path, {
      method, headers, credentials: 'same-origin', cache: 'no-cache',
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    text = await response.text();
  } catch {
    throw new ApiError('network', 'Cannot reach the server. Check your connection and try again.');
  }
  if (prefixed && text.startsWith(PREFIX)) text = text.slice(PREFIX.length);
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = null; }
  if (response.ok) return data;
  const seconds = Number.parseInt(response.headers.get('Retry-After') ?? '', 10);
  const message = data && typeof data.error === 'string' ? data.error : `The server answered ${response.status}.`;
  throw new ApiError(kindOf(response.status), message, {
    status: response.status, retryAfter: Number.isFinite(seconds) ? seconds : null,
  });
}

export async function logIn(email, password) {
  try {
    return await request('POST', '/v1/session', { body: { udacity: { username: email, password } }, prefixed: true });
  } catch (error) {
    // The gateway words a disabled account's refusal apart from a wrong password's: only the right
    // password is told, and it calls for asking the server's operators, not for typing again.
    if (error.status === 403 && error.message.startsWith('This account has been disabled')) {
      throw new ApiError('disabled', error.message, { status: error.status });
    }
    if (error.status === 403 || error.status === 400) {
      throw new ApiError('credentials', 'Wrong email or password.', { status: error.status });
    }
    throw error;
  }
}

export const signUp = (account) => request('POST', '/v1/accounts', { body: account });

export const logOut = () => request('DELETE', '/v1/session', { prefixed: true });

/** Erases the logged-in student's account and every pin of theirs, past and present; ends the session. */
export const eraseAccount = () => request('DELETE', '/v1/accounts/me', { prefixed: true });

/** The logged-in student: { key, firstName, lastName }. */
export async function me() {
  const user = await request('GET', '/v1/users/me', { prefixed: true });
  return { key: String(user.key), firstName: user.first_name ?? '', lastName: user.last_name ?? '' };
}

/** Pins by the list's query, now or (at: milliseconds since 1970) as the map was then. */
async function listPins(parameters, at = null) {
  const query = new URLSearchParams(parameters);
  if (at !== null) query.set('at', new Date(at).toISOString());
  const answer = await request('GET', `${BASE}/v1/StudentLocation?${query}`);
  return Array.isArray(answer?.results) ? answer.results : [];
}

/** The latest 100 pins, newest first, now or at a moment. */
export const latestPins = (at = null) => listPins({ limit: '100', order: '-updatedAt' }, at);

/** The pin created first among those on the map now or at a moment, or null. */
export async function oldestPin(at = null) {
  return (await listPins({ limit: '1', order: 'createdAt' }, at))[0] ?? null;
}

/** The student's newest pin, or null. */
export async function myLatestPin(key) {
  return (await listPins({ uniqueKey: key, order: '-updatedAt', limit: '1' }))[0] ?? null;
}

/** A pin's events, oldest first: { event, at, location?, changes? }. */
export async function pinHistory(objectId) {
  const answer = await request('GET', `${BASE}/v1/StudentLocation/${encodeURIComponent(objectId)}/history`);
  return Array.isArray(answer?.results) ? answer.results : [];
}

export async function geocode(place) {
  const answer = await request('GET', `/v1/geocode?${new URLSearchParams({ q: place, limit: '5' })}`);
  return answer?.results ?? [];
}

export const postPin = (pin) => request('POST', `${BASE}/v1/StudentLocation`, { body: pin });

export const updatePin = (objectId, pin) =>
  request('PUT', `${BASE}/v1/StudentLocation/${encodeURIComponent(objectId)}`, { body: pin });

const mapPath = (slug, rest = '') => `/v1/maps/${encodeURIComponent(slug)}${rest}`;

/** The maps the student belongs to (any role, pending too), newest first. */
export async function myMaps() {
  const answer = await request('GET', '/v1/maps');
  return Array.isArray(answer?.results) ? answer.results : [];
}

/** A map's name, settings and the student's role in it; notFound when it is none the student may read. */
export const mapDetails = (slug) => request('GET', mapPath(slug));

/** Joins with an invite's code: the membership ({ role } is `member`, or `pending` while approval is on). */
export const joinMap = (slug, code) => request('POST', mapPath(slug, '/members'), { body: { code } });

export const createMap = (settings) => request('POST', '/v1/maps', { body: settings });

export const leaveMap = (slug) => request('DELETE', mapPath(slug, '/members/me'));

export async function members(slug) {
  return (await request('GET', mapPath(slug, '/members')))?.results ?? [];
}

export const removeMember = (slug, key) => request('DELETE', mapPath(slug, `/members/${encodeURIComponent(key)}`));

export const setRole = (slug, key, role) => request('PUT', mapPath(slug, `/members/${encodeURIComponent(key)}/role`), { body: { role } });

/** A new invite: { code, url, expiresAt, uses, used }. */
export const createInvite = (slug, limits = {}) => request('POST', mapPath(slug, '/invites'), { body: limits });

export async function invites(slug) {
  return (await request('GET', mapPath(slug, '/invites')))?.results ?? [];
}

export const withdrawInvite = (slug, code) => request('DELETE', mapPath(slug, `/invites/${encodeURIComponent(code)}`));

/** The map's hidden pins: { pin, reason, hiddenAt, hiddenBy }. */
export async function hiddenPins(slug) {
  return (await request('GET', mapPath(slug, '/hidden')))?.results ?? [];
}

export const hidePin = (objectId, reason) => request('POST', `${BASE}/v1/StudentLocation/${encodeURIComponent(objectId)}/hide`, { body: { reason } });

export const unhidePin = (objectId) => request('POST', `${BASE}/v1/StudentLocation/${encodeURIComponent(objectId)}/unhide`, { body: {} });
