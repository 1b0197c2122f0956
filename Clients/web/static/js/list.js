// The list tab: newest first, each row the name, place, link and age; a row opens the link, the button
// beside it the pin's history, and for a map's moderators one more hides the pin (the page listens on the
// list for .row-history and .row-hide clicks).
import { age, element, fullName, safeLink } from './format.js';

export function renderList(listElement, emptyElement, pins, { moderate = false, now = Date.now() } = {}) {
  const rows = pins.map((pin) => {
    const href = safeLink(pin.mediaURL);
    const content = [
      element('span', { className: 'row-name', text: fullName(pin) }),
      element('span', { className: 'row-place', text: pin.mapString ?? '' }),
      element('span', { className: 'row-link', text: pin.mediaURL ?? '' }),
      element('time', { className: 'row-age', text: age(pin.updatedAt, now), attributes: { datetime: pin.updatedAt ?? '' } }),
    ];
    const row = href
      ? element('a', { className: 'row', attributes: { href, target: '_blank', rel: 'noopener noreferrer' } }, content)
      : element('div', { className: 'row' }, content);
    const history = element('button', {
      className: 'row-history', text: 'History',
      attributes: { type: 'button', 'aria-label': `History of ${fullName(pin)}’s pin` },
    });
    const hide = moderate ? [element('button', {
      className: 'row-hide', text: 'Hide',
      attributes: { type: 'button', 'aria-label': `Hide ${fullName(pin)}’s pin` },
    })] : [];
    return element('li', { className: moderate ? 'moderated' : '', attributes: { 'data-object-id': pin.objectId } }, [row, history, ...hide]);
  });
  listElement.replaceChildren(...rows);
  emptyElement.hidden = pins.length > 0;
}

/** Brings the ages up to date without redrawing the rows. */
export function refreshAges(listElement, now = Date.now()) {
  for (const time of listElement.querySelectorAll('time.row-age')) {
    time.textContent = age(time.getAttribute('datetime'), now);
  }
}
