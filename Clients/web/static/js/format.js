// Small pure helpers: links, names, ages, times, waits.

/** The link as an absolute http(s) URL when it is one, else null: only such links are made clickable. */
export function safeLink(text) {
  if (typeof text !== 'string') return null;
  try {
    const url = new URL(text);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.href : null;
  } catch {
    return null;
  }
}

/** What a student typed as their link, completed to https:// when it is a bare domain; null when it is no web link. */
export function normalizeLink(text) {
  const trimmed = text.trim();
  if (!trimmed || /[\s\\]/.test(trimmed)) return null;
  const candidate = /^[a-z][a-z0-9+.-]*:/i.test(trimmed) ? trimmed : `https://${trimmed}`;
  const link = safeLink(candidate);
  if (!link) return null;
  const url = new URL(link);
  if (url.username || url.password || !url.hostname.includes('.') && url.hostname !== 'localhost') return null;
  return candidate;
}

export function fullName(pin) {
  return `${pin.firstName ?? ''} ${pin.lastName ?? ''}`.trim() || 'A student';
}

/** "just now", "3 min ago", "5 h ago", "2 days ago", then the date. */
export function age(iso, now = Date.now()) {
  const time = Date.parse(iso);
  if (Number.isNaN(time)) return '';
  const seconds = Math.max(0, Math.floor((now - time) / 1000));
  if (seconds < 60) return 'just now';
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)} h ago`;
  if (seconds < 2 * 86400) return '1 day ago';
  if (seconds < 30 * 86400) return `${Math.floor(seconds / 86400)} days ago`;
  return new Date(time).toISOString().slice(0, 10);
}

/** A moment (an ISO time or milliseconds since 1970) as the reader's locale writes a date and a time to the second. */
export function dateTime(moment) {
  const date = new Date(moment);
  if (Number.isNaN(date.getTime())) return '';
  return date.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
}

/** "45 seconds", "2 minutes": how long to wait before trying again. */
export function wait(seconds) {
  if (seconds < 60) return `${seconds} second${seconds === 1 ? '' : 's'}`;
  const minutes = Math.ceil(seconds / 60);
  return `${minutes} minute${minutes === 1 ? '' : 's'}`;
}

/** An element with text content only: no markup from data ever reaches the page. */
export function element(tag, { className, text, attributes } = {}, children = []) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  for (const [name, value] of Object.entries(attributes ?? {})) node.setAttribute(name, value);
  for (const child of children) node.append(child);
  return node;
}

/** Puts a message in a node, or hides the node when there is none. */
export function say(node, message) {
  node.textContent = message;
  node.hidden = !message;
}

/** A link that opens in a new tab without telling the other site where it came from, or plain text. */
export function outsideLink(text, className) {
  const href = safeLink(text);
  if (!href) return element('span', { className, text: text ?? '' });
  return element('a', { className, text, attributes: { href, target: '_blank', rel: 'noopener noreferrer' } });
}
