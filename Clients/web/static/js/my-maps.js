// My maps: the class maps the student is on, with their role, leaving one, and creating a map (its name,
// its address, who may see it and who may post), which opens it.
import * as api from './api.js';
import { element, say } from './format.js';
import { roleName } from './maps.js';
import { ask } from './question.js';

const $ = (id) => document.getElementById(id);
const dialog = $('maps-dialog');
let slugTyped = false;

const SLUG = /^[a-z0-9](?:[a-z0-9]|-(?!-)){1,38}[a-z0-9]$/;

/** An address made from a name: "iOS 2027!" → "ios-2027". */
function suggestedSlug(name) {
  return name.normalize('NFKD').toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 40).replace(/-+$/, '');
}

function showSlug() {
  $('new-map-slug-preview').textContent = $('new-map-slug').value || '…';
}

async function list() {
  say($('my-maps-error'), '');
  try {
    const maps = await api.myMaps();
    $('my-maps-list').replaceChildren(...maps.map(row));
    $('my-maps-empty').hidden = maps.length > 0;
  } catch (error) {
    say($('my-maps-error'), `Your maps could not be listed: ${error.message}`);
  }
}

function row(map) {
  const settings = `${map.read === 'public' ? 'everyone sees it' : 'members see it'}, `
    + `${map.post === 'signedIn' ? 'anyone logged in posts' : 'members post'}`;
  const parts = [
    element('a', { className: 'my-map-name', text: map.name, attributes: { href: `/maps/${map.slug}/` } }),
    element('span', { className: 'my-map-details', text: `/maps/${map.slug}/ · you are ${roleName(map.role)} · ${settings}` }),
  ];
  if (map.role !== 'owner') {
    const leave = element('button', { className: 'link-button', text: 'Leave', attributes: { type: 'button', 'aria-label': `Leave ${map.name}` } });
    leave.addEventListener('click', () => leaveMap(map));
    parts.push(leave);
  }
  return element('li', { className: 'my-map', attributes: { 'data-slug': map.slug } }, parts);
}

async function leaveMap(map) {
  const sure = await ask({
    title: `Leave ${map.name}?`,
    text: 'Your pins leave the map with you. To come back you need a new invite link.',
    yes: 'Leave the map', no: 'Stay', danger: true,
  });
  if (!sure) return;
  try {
    await api.leaveMap(map.slug);
    if (api.MAP?.slug === map.slug) window.location.assign('/');
    else await list();
  } catch (error) {
    say($('my-maps-error'), `Could not leave ${map.name}: ${error.message}`);
  }
}

async function create(event) {
  event.preventDefault();
  const error = $('create-map-error');
  const name = $('new-map-name').value.trim();
  const slug = $('new-map-slug').value.trim();
  if (!name) return say(error, 'Give the map a name.');
  if (!SLUG.test(slug)) return say(error, 'The address takes 3 to 40 lowercase letters, digits and single hyphens, beginning and ending with a letter or digit.');
  say(error, '');
  const button = $('create-map-submit');
  button.disabled = true;
  try {
    await api.createMap({ slug, name, read: $('new-map-read').value, post: $('new-map-post').value });
    window.location.assign(`/maps/${slug}/`);
  } catch (failure) {
    const message = failure.status === 409 ? `The address /maps/${slug}/ is taken. Choose another.`
      : failure.kind === 'network' ? failure.message : `The map could not be created: ${failure.message}`;
    say(error, message);
  } finally {
    button.disabled = false;
  }
}

$('create-map-form').addEventListener('submit', create);
$('maps-dialog-close').addEventListener('click', () => dialog.close());
$('new-map-name').addEventListener('input', () => {
  if (!slugTyped) $('new-map-slug').value = suggestedSlug($('new-map-name').value);
  showSlug();
});
$('new-map-slug').addEventListener('input', () => {
  slugTyped = $('new-map-slug').value !== '';
  showSlug();
});

export function openMyMaps() {
  say($('create-map-error'), '');
  if (!dialog.open) dialog.showModal();
  list();
}
