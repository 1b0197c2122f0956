// Posting a pin in two steps, as the apps do: place and link → the gateway's geocoder → a preview of the
// best place, with the others to pick from → Finish. An existing pin is overwritten only after asking.
import * as api from './api.js';
import { element, normalizeLink, say } from './format.js';
import { addMapLayers, leafletAvailable } from './map.js';
import { ask } from './question.js';

const $ = (id) => document.getElementById(id);

export class PostingFlow {
  /**
   * student(): the logged-in student; onPosted(pin): the saved pin; onSessionEnded(): back to the login.
   */
  constructor({ tiles, student, onPosted, onSessionEnded }) {
    this.dialog = $('post-dialog');
    this.tiles = tiles;
    this.student = student;
    this.onPosted = onPosted;
    this.onSessionEnded = onSessionEnded;
    this.candidates = [];
    this.existing = null;
    this.preview = null;
    $('find-form').addEventListener('submit', (event) => { event.preventDefault(); this.find(); });
    $('confirm-form').addEventListener('submit', (event) => { event.preventDefault(); this.submit(); });
    $('find-cancel').addEventListener('click', () => this.dialog.close());
    $('confirm-cancel').addEventListener('click', () => this.dialog.close());
    $('confirm-back').addEventListener('click', () => this.step('find'));
  }

  async open() {
    say($('find-error'), '');
    $('find-form').reset();
    this.step('find');
    this.dialog.showModal();
    $('post-place').focus();
    this.existing = null;
    try {
      this.existing = await api.myLatestPin(this.student().key);
    } catch {
      // Asked again before submitting.
    }
    if (this.existing && !$('post-place').value && !$('post-link').value) {
      $('post-place').value = this.existing.mapString ?? '';
      $('post-link').value = this.existing.mediaURL ?? '';
      $('post-place').select();
    }
  }

  step(name) {
    $('find-form').hidden = name !== 'find';
    $('confirm-form').hidden = name !== 'confirm';
    if (name === 'find') $('post-place').focus();
  }

  async find() {
    const error = $('find-error');
    const place = $('post-place').value.trim();
    const linkText = $('post-link').value.trim();
    if (!place) return say(error, 'Enter a place, such as "Patiala, Punjab".');
    if (!linkText) return say(error, 'Enter a link to share.');
    const link = normalizeLink(linkText);
    if (!link) return say(error, `"${linkText}" is not a web link. Enter one such as https://example.com.`);
    say(error, '');
    const button = $('find-submit');
    button.disabled = true;
    button.textContent = 'Finding…';
    try {
      this.candidates = await api.geocode(place);
      if (this.candidates.length === 0) throw new api.ApiError('notFound', '');
    } catch (failure) {
      const message = failure.kind === 'notFound' || failure.kind === 'refused'
        ? `No place matches "${place}". Try a city with its region or country, such as "Berlin, Germany".`
        : failure.kind === 'network' ? failure.message : `The place could not be looked up: ${failure.message}`;
      return say(error, message);
    } finally {
      button.disabled = false;
      button.textContent = 'Find on the map';
    }
    this.place = place;
    this.link = link;
    this.showCandidates();
  }

  showCandidates() {
    const list = $('candidates');
    const radios = this.candidates.map((candidate, index) => {
      const input = element('input', { attributes: { type: 'radio', name: 'candidate', id: `candidate-${index}`, value: String(index) } });
      input.checked = index === 0;
      input.addEventListener('change', () => this.preview?.choose(index));
      return element('div', { className: 'candidate' }, [
        input, element('label', { text: candidate.displayName, attributes: { for: `candidate-${index}` } }),
      ]);
    });
    list.replaceChildren(...radios);
    say($('confirm-error'), '');
    this.step('confirm');
    if (leafletAvailable()) {
      this.preview ??= new PreviewMap($('preview-map'), this.tiles);
      this.preview.show(this.candidates);
    }
    $('confirm-submit').focus();
  }

  chosen() {
    const checked = document.querySelector('input[name="candidate"]:checked');
    return this.candidates[Number(checked?.value ?? 0)] ?? this.candidates[0];
  }

  async submit() {
    const error = $('confirm-error');
    const candidate = this.chosen();
    const student = this.student();
    const pin = {
      uniqueKey: student.key, firstName: student.firstName, lastName: student.lastName,
      mapString: this.place, mediaURL: this.link, latitude: candidate.latitude, longitude: candidate.longitude,
    };
    const button = $('confirm-submit');
    button.disabled = true;
    try {
      this.existing = await api.myLatestPin(student.key);
      if (this.existing) {
        const overwrite = await ask({
          title: 'Overwrite your pin?',
          text: `You already have a pin at "${this.existing.mapString}". Replace it with "${this.place}"?`,
          yes: 'Overwrite', no: 'Keep it',
        });
        if (!overwrite) return;
        const answer = await api.updatePin(this.existing.objectId, pin);
        this.onPosted({ ...this.existing, ...pin, updatedAt: answer?.updatedAt ?? new Date().toISOString() });
      } else {
        const answer = await api.postPin(pin);
        const now = new Date().toISOString();
        this.onPosted({ ...pin, objectId: answer?.objectId, createdAt: answer?.createdAt ?? now, updatedAt: answer?.createdAt ?? now });
      }
      this.dialog.close();
    } catch (failure) {
      if (failure.kind === 'notLoggedIn') {
        this.dialog.close();
        this.onSessionEnded();
        return;
      }
      const message = failure.kind === 'network' ? failure.message
        : failure.kind === 'server' ? `The server could not save your pin; try again shortly. (${failure.message})`
          : `The server refused your pin: ${failure.message}`;
      say(error, message);
    } finally {
      button.disabled = false;
    }
  }
}

/** The dialog's own small map, on the same world map and tiles as the page's: a marker on the chosen place. */
class PreviewMap {
  constructor(container, tiles) {
    const L = window.L;
    this.map = L.map(container, { zoomControl: true, attributionControl: true });
    addMapLayers(this.map, container, tiles);
    this.marker = null;
  }

  show(candidates) {
    this.candidates = candidates;
    this.map.invalidateSize();
    this.choose(0);
  }

  choose(index) {
    const candidate = this.candidates[index];
    if (!candidate) return;
    const position = [candidate.latitude, candidate.longitude];
    if (this.marker) this.marker.setLatLng(position);
    else this.marker = window.L.marker(position, { keyboard: false }).addTo(this.map);
    this.marker.options.title = candidate.displayName;
    this.map.setView(position, 9);
  }
}
