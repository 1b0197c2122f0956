// A pin's history in a dialog: what happened to it, oldest first, each with its time and what changed in
// plain words, and a way to see the whole map at that moment.
import * as api from './api.js';
import { dateTime, element, fullName, say } from './format.js';

const $ = (id) => document.getElementById(id);

const HEADLINES = {
  posted: 'Posted',
  moved: 'Moved',
  edited: 'Edited',
  deleted: 'Deleted by its owner',
  hidden: 'Hidden by an operator',
  unhidden: 'Shown again by an operator',
};

/** The fields a change can touch, in the order the server lists them. */
const FIELDS = [
  ['firstName', 'First name'], ['lastName', 'Last name'], ['mapString', 'Place'], ['mediaURL', 'Link'],
  ['latitude', 'Latitude'], ['longitude', 'Longitude'],
];

const quoted = (value) => (typeof value === 'number' ? String(value) : `“${value}”`);

/** What an event did, one plain sentence a line. */
export function describe(entry) {
  if (entry.event === 'posted' && entry.location) {
    return [`Place: ${entry.location.mapString ?? ''}`, `Link: ${entry.location.mediaURL ?? ''}`];
  }
  const changes = entry.changes ?? {};
  return FIELDS.filter(([name]) => changes[name])
    .map(([name, label]) => `${label} changed from ${quoted(changes[name].from)} to ${quoted(changes[name].to)}`);
}

export class HistoryView {
  /** onSeeMoment(moment): the reader asked for the map at an event's moment (milliseconds since 1970). */
  constructor({ onSeeMoment }) {
    this.dialog = $('history-dialog');
    this.onSeeMoment = onSeeMoment;
    this.opened = 0;
    $('history-close').addEventListener('click', () => this.dialog.close());
  }

  async open(pin) {
    const opened = ++this.opened;
    $('history-title').textContent = `History of ${fullName(pin)}’s pin`;
    $('history-events').replaceChildren();
    say($('history-error'), '');
    say($('history-loading'), 'Loading…');
    if (!this.dialog.open) this.dialog.showModal();
    $('history-close').focus();
    try {
      const entries = await api.pinHistory(pin.objectId);
      if (opened !== this.opened) return;
      $('history-events').replaceChildren(...entries.map((entry) => this.item(entry)));
    } catch (error) {
      if (opened !== this.opened) return;
      const message = error.kind === 'notFound' ? 'This pin has no history to show: it was hidden or erased.'
        : error.kind === 'network' ? error.message : `The history could not be loaded: ${error.message}`;
      say($('history-error'), message);
    } finally {
      if (opened === this.opened) say($('history-loading'), '');
    }
  }

  item(entry) {
    const see = element('button', { className: 'link-button history-see', text: 'See the map then', attributes: { type: 'button' } });
    see.addEventListener('click', () => {
      this.dialog.close();
      this.onSeeMoment(Date.parse(entry.at));
    });
    const lines = describe(entry);
    return element('li', { className: 'history-event', attributes: { 'data-event': entry.event } }, [
      element('time', { className: 'history-time', text: dateTime(entry.at), attributes: { datetime: entry.at ?? '' } }),
      element('strong', { className: 'history-what', text: HEADLINES[entry.event] ?? entry.event }),
      ...(lines.length ? [element('ul', { className: 'history-changes' }, lines.map((text) => element('li', { text })))] : []),
      see,
    ]);
  }
}
