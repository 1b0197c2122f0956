// A class map's moderation, for its owner and moderators: invite links with a QR code big enough for a
// projector, the members (approve, change a role, remove), the hidden pins with their reasons (show one
// again), and hiding a pin from the list with a reason.
import * as api from './api.js';
import { dateTime, element, fullName, say } from './format.js';
import { roleName } from './maps.js';
import { drawOn, encode } from './qr.js';
import { ask } from './question.js';

const $ = (id) => document.getElementById(id);
/** The map managed, who manages it, and what the page does when a pin is shown again. */
let managing = null;
/** The pin the hide dialog is about, and what the page does once it is hidden. */
let hiding = null;
/** The invite link shown with its QR code. */
let shownLink = '';

const button = (text, label, onClick, className = '') => {
  const node = element('button', { className, text, attributes: { type: 'button', ...(label ? { 'aria-label': label } : {}) } });
  node.addEventListener('click', onClick);
  return node;
};

/** Draws the link's QR code at about 1200 canvas pixels a side, whole pixels a module; CSS sizes it. */
function drawQR(canvas, link) {
  const modules = encode(link);
  drawOn(canvas, modules, Math.ceil(1200 / (modules.length + 8)));
}

const absolute = (url) => new URL(url, window.location.origin).href;

function showInvite(invite) {
  shownLink = absolute(invite.url);
  $('invite-url').value = shownLink;
  drawQR($('invite-qr'), shownLink);
  $('invite').hidden = false;
  $('invite-copy').textContent = 'Copy the link';
}

function inviteTerms(invite) {
  const ends = invite.expiresAt ? `works until ${dateTime(invite.expiresAt)}` : 'works until withdrawn';
  const used = invite.uses ? `used ${invite.used ?? 0} of ${invite.uses} times` : `used ${invite.used ?? 0} times`;
  return `${ends}, ${used}`;
}

async function listInvites() {
  const { map } = managing;
  try {
    const invites = await api.invites(map.slug);
    $('invite-list').replaceChildren(...invites.map((invite) => element('li', { className: 'manage-item' }, [
      element('span', { className: 'manage-what', text: `…/join/${invite.code.slice(0, 6)}…` }),
      element('span', { className: 'manage-details', text: inviteTerms(invite) }),
      element('span', { className: 'manage-actions' }, [
        button('Show', `Show the link ${invite.code.slice(0, 6)}`, () => showInvite(invite)),
        button('Withdraw', `Withdraw the link ${invite.code.slice(0, 6)}`, () => withdraw(invite)),
      ]),
    ])));
    if (!invites.length) $('invite-list').replaceChildren(element('li', { className: 'empty', text: 'None: make one above.' }));
  } catch (error) {
    say($('invite-error'), `The invite links could not be listed: ${error.message}`);
  }
}

async function makeInvite() {
  const expiresIn = Number($('invite-expires').value);
  say($('invite-error'), '');
  $('invite-create').disabled = true;
  try {
    showInvite(await api.createInvite(managing.map.slug, expiresIn ? { expiresIn } : {}));
    await listInvites();
  } catch (error) {
    say($('invite-error'), `No invite link was made: ${error.message}`);
  } finally {
    $('invite-create').disabled = false;
  }
}

async function withdraw(invite) {
  try {
    await api.withdrawInvite(managing.map.slug, invite.code);
    if (shownLink === absolute(invite.url)) $('invite').hidden = true;
    await listInvites();
  } catch (error) {
    say($('invite-error'), `The link could not be withdrawn: ${error.message}`);
  }
}

async function copyLink() {
  try {
    await navigator.clipboard.writeText(shownLink);
    $('invite-copy').textContent = 'Copied';
  } catch {
    $('invite-url').select();
    $('invite-copy').textContent = 'Press Ctrl+C to copy';
  }
}

function project() {
  $('qr-title').textContent = `Join ${managing.map.name}`;
  $('qr-url').textContent = shownLink;
  drawQR($('qr-big'), shownLink);
  $('qr-dialog').showModal();
  $('qr-close').focus();
}

/** What a moderator may do to a member: the owner everything but to themselves; a moderator approves and removes members. */
function memberActions(member) {
  const { map, student } = managing;
  const name = fullName(member);
  const owner = map.role === 'owner';
  if (member.key === student.key || member.role === 'owner') return [];
  if (member.role === 'pending') {
    return [
      button('Approve', `Approve ${name}`, () => changeRole(member, 'member'), 'primary'),
      button('Reject', `Reject ${name}`, () => remove(member, true)),
    ];
  }
  const actions = [];
  if (owner) {
    const select = element('select', { attributes: { 'aria-label': `Role of ${name}` } }, ['member', 'moderator', 'owner'].map((role) => {
      const option = element('option', { text: role, attributes: { value: role } });
      option.selected = role === member.role;
      return option;
    }));
    select.addEventListener('change', () => changeRole(member, select.value));
    actions.push(select);
  }
  if (owner || member.role === 'member') actions.push(button('Remove', `Remove ${name}`, () => remove(member, false)));
  return actions;
}

async function listMembers() {
  say($('members-error'), '');
  try {
    const members = await api.members(managing.map.slug);
    $('member-list').replaceChildren(...members.map((member) => element('li', {
      className: 'manage-item', attributes: { 'data-key': member.key, 'data-role': member.role },
    }, [
      element('span', { className: 'manage-what', text: fullName(member) }),
      element('span', { className: 'manage-details', text: roleName(member.role) }),
      element('span', { className: 'manage-actions' }, memberActions(member)),
    ])));
  } catch (error) {
    say($('members-error'), `The members could not be listed: ${error.message}`);
  }
}

async function changeRole(member, role) {
  if (role === 'owner') {
    const sure = await ask({
      title: `Hand ${managing.map.name} to ${fullName(member)}?`,
      text: `${fullName(member)} becomes its owner, and you one of its moderators.`,
      yes: 'Hand it over', no: 'Keep it', danger: true,
    });
    if (!sure) return listMembers();
  }
  try {
    await api.setRole(managing.map.slug, member.key, role);
    if (role === 'owner') window.location.reload();
  } catch (error) {
    say($('members-error'), `The role could not be changed: ${error.message}`);
  }
  await listMembers();
}

async function remove(member, pending) {
  const name = fullName(member);
  if (!pending) {
    const sure = await ask({
      title: `Remove ${name}?`,
      text: `${name} leaves ${managing.map.name}, and their pins leave the map. Invite links made before cannot bring them back.`,
      yes: 'Remove', no: 'Keep', danger: true,
    });
    if (!sure) return;
  }
  try {
    await api.removeMember(managing.map.slug, member.key);
  } catch (error) {
    say($('members-error'), `${name} could not be removed: ${error.message}`);
  }
  await listMembers();
}

async function listHidden() {
  say($('hidden-error'), '');
  try {
    const hidden = await api.hiddenPins(managing.map.slug);
    $('hidden-list').replaceChildren(...hidden.map(({ pin, reason, hiddenAt }) => element('li', {
      className: 'manage-item', attributes: { 'data-object-id': pin.objectId },
    }, [
      element('span', { className: 'manage-what', text: fullName(pin) }),
      element('span', { className: 'manage-details', text: `${pin.mapString ?? ''} · hidden ${dateTime(hiddenAt)}` }),
      element('span', { className: 'hidden-reason', text: `Reason: ${reason}` }),
      element('span', { className: 'manage-actions' }, [button('Show again', `Show ${fullName(pin)}’s pin again`, () => unhide(pin))]),
    ])));
    $('hidden-empty').hidden = hidden.length > 0;
  } catch (error) {
    say($('hidden-error'), `The hidden pins could not be listed: ${error.message}`);
  }
}

async function unhide(pin) {
  try {
    managing.onUnhidden(await api.unhidePin(pin.objectId) ?? pin);
  } catch (error) {
    say($('hidden-error'), `The pin could not be shown again: ${error.message}`);
  }
  await listHidden();
}

/** Opens the map's management: { map, student, onUnhidden(pin) }. */
export function openManagement(what) {
  managing = what;
  $('manage-title').textContent = `Manage ${what.map.name}`;
  say($('invite-error'), '');
  if (!$('manage-dialog').open) $('manage-dialog').showModal();
  listInvites();
  listMembers();
  listHidden();
}

/** Asks for a reason, then hides the pin; onHidden(pin) once it is. */
export function askToHide(pin, onHidden) {
  hiding = { pin, onHidden };
  $('hide-text').textContent = `${fullName(pin)}’s pin at “${pin.mapString ?? ''}” leaves the map for everyone but its `
    + 'moderators, who see it with your reason and can show it again.';
  $('hide-form').reset();
  say($('hide-error'), '');
  $('hide-dialog').showModal();
  $('hide-reason').focus();
}

async function hide(event) {
  event.preventDefault();
  const reason = $('hide-reason').value.trim();
  if (!reason) return say($('hide-error'), 'Say why the pin is hidden.');
  $('hide-submit').disabled = true;
  try {
    await api.hidePin(hiding.pin.objectId, reason);
    $('hide-dialog').close();
    hiding.onHidden(hiding.pin);
  } catch (error) {
    say($('hide-error'), error.kind === 'network' ? error.message : `The pin could not be hidden: ${error.message}`);
  } finally {
    $('hide-submit').disabled = false;
  }
}

$('invite-create').addEventListener('click', makeInvite);
$('invite-copy').addEventListener('click', copyLink);
$('invite-project').addEventListener('click', project);
$('qr-close').addEventListener('click', () => $('qr-dialog').close());
$('manage-close').addEventListener('click', () => $('manage-dialog').close());
$('hide-form').addEventListener('submit', hide);
$('hide-cancel').addEventListener('click', () => $('hide-dialog').close());
