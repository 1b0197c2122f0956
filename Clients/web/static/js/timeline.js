// The time control: the map at any moment from the first pin to now, chosen by date and time or on a
// slider, or played through. Now (live) is the default. At most one read of the past is in flight; the
// moment asked for last is the one shown.
import * as api from './api.js';
import { dateTime } from './format.js';

const $ = (id) => document.getElementById(id);
/** The slider's positions from the first pin (0) to now. */
const STEPS = 1000;
/** The moments a playback from the first pin to now shows, each for at least FRAME_MS. */
const PLAY_FRAMES = 50;
const FRAME_MS = 200;
/** How many times the search for the first pin looks further back. */
const LOOK_BACK = 8;

const pause = (ms) => new Promise((resolve) => { setTimeout(resolve, Math.max(0, ms)); });

/** A moment as a datetime-local field writes it: the reader's local time, to the second. */
function localInputValue(moment) {
  const date = new Date(moment);
  const two = (number) => String(number).padStart(2, '0');
  return `${String(date.getFullYear()).padStart(4, '0')}-${two(date.getMonth() + 1)}-${two(date.getDate())}`
    + `T${two(date.getHours())}:${two(date.getMinutes())}:${two(date.getSeconds())}`;
}

export class TimeControl {
  /**
   * onShow(moment, pins): the map at that moment (milliseconds since 1970) with its pins, or now (both null).
   * onError(message): a moment could not be shown.
   */
  constructor({ onShow, onError }) {
    this.onShow = onShow;
    this.onError = onError;
    this.section = $('time-control');
    this.input = $('time-moment');
    this.slider = $('time-slider');
    this.playButton = $('time-play');
    this.nowButton = $('time-now');
    this.status = $('time-status');
    /** The first pin's creation: the slider's left end; null while no pin is known. */
    this.start = null;
    /** The moment shown (null: now) and the one asked for last. */
    this.shown = null;
    this.wanted = null;
    this.reading = null;
    this.playing = false;
    this.run = 0;
    this.editing = false;

    this.slider.addEventListener('input', () => {
      const position = Number(this.slider.value);
      this.see(position >= STEPS || this.start === null ? null : this.start + (Date.now() - this.start) * (position / STEPS));
    });
    this.input.addEventListener('change', () => {
      const moment = new Date(this.input.value).getTime();
      if (!Number.isNaN(moment)) this.see(moment);
    });
    // While the reader types a moment, the field keeps what they typed; once they leave it, it shows what is
    // shown. (Chrome moves the focus between the field's parts without a blur, and document.activeElement is
    // the body meanwhile.)
    this.input.addEventListener('focus', () => { this.editing = true; });
    this.input.addEventListener('blur', () => {
      this.editing = false;
      this.render();
    });
    this.playButton.addEventListener('click', () => (this.playing ? this.stop() : this.play()));
    this.nowButton.addEventListener('click', () => this.see(null));
    this.render();
  }

  get live() {
    return this.wanted === null;
  }

  /** Finds where the log's pins begin: the oldest pin now, then the oldest on the map just before it was posted. */
  async findStart() {
    try {
      let first = await api.oldestPin();
      for (let step = 0; first && step < LOOK_BACK; step += 1) {
        const earlier = await api.oldestPin(Date.parse(first.createdAt) - 1);
        if (!earlier) break;
        first = earlier;
      }
      if (first) this.notePin(first);
    } catch {
      // The control starts from the pins it hears of.
    }
  }

  /** A pin seen (posted live, or loaded): the slider reaches back to it. */
  notePin(pin) {
    const created = Date.parse(pin?.createdAt ?? '');
    if (Number.isNaN(created) || (this.start !== null && created >= this.start)) return;
    this.start = created;
    this.render();
  }

  /** Stops a playback and shows the map at a moment (milliseconds since 1970), or now (null or a time not past). */
  see(moment) {
    this.stop();
    if (moment === null || moment >= Date.now()) this.goLive();
    else this.choose(moment);
  }

  /** Shows the map at a past moment; resolves once it is shown or another moment was asked for. */
  choose(moment) {
    this.wanted = moment;
    this.render();
    if (!this.reading && this.wanted !== this.shown) this.reading = this.read();
    return this.reading ?? Promise.resolve();
  }

  async read() {
    while (this.wanted !== null && this.wanted !== this.shown) {
      const moment = this.wanted;
      try {
        const pins = await api.latestPins(moment);
        if (this.wanted === moment) {
          this.shown = moment;
          this.render();
          this.onShow(moment, pins);
        }
      } catch (error) {
        if (this.wanted === moment) this.failed(moment, error);
      }
    }
    this.reading = null;
  }

  failed(moment, error) {
    this.stop();
    // A moment the server's clock has not reached yet (this one runs ahead) is now.
    if (error.kind === 'refused' && moment > Date.now() - 60000) return this.goLive();
    this.wanted = this.shown;
    this.render();
    this.onError(`The map at ${dateTime(moment)} could not be shown: ${error.message}`);
  }

  goLive() {
    this.wanted = null;
    this.shown = null;
    this.render();
    this.onShow(null, null);
  }

  /** Steps the map from the first pin (or the moment paused at) to now, then stays live. */
  async play() {
    if (this.start === null) return;
    const run = ++this.run;
    this.playing = true;
    this.render();
    const step = Math.max((Date.now() - this.start) / PLAY_FRAMES, 1);
    let moment = this.live ? this.start : this.wanted + step;
    while (run === this.run) {
      if (moment >= Date.now()) {
        this.see(null);
        break;
      }
      const began = performance.now();
      await this.choose(moment);
      await pause(FRAME_MS - (performance.now() - began));
      moment += step;
    }
  }

  /** Pauses a playback where it is. */
  stop() {
    this.run += 1;
    if (!this.playing) return;
    this.playing = false;
    this.render();
  }

  /** Leaves the past and forgets the log's start (a log out). */
  reset() {
    this.stop();
    this.start = null;
    this.wanted = null;
    this.shown = null;
    this.render();
  }

  /** Keeps "now" current in the field while live. */
  tick() {
    if (this.live) this.render();
  }

  render() {
    const now = Date.now();
    const moment = this.wanted;
    const past = moment !== null;
    this.section.classList.toggle('past', past);
    // The field has no min or max: Chrome locks the parts of a date and time those bounds leave one value
    // (the day, even the hour, when the log began today), and a reader could not type them.
    if (!this.editing) this.input.value = localInputValue(past ? moment : now);
    const span = this.start === null ? 0 : Math.max(now - this.start, 1);
    this.slider.disabled = this.start === null;
    this.slider.value = String(past && span ? Math.round(Math.min(1, Math.max(0, (moment - this.start) / span)) * STEPS) : STEPS);
    this.slider.setAttribute('aria-valuetext', past ? dateTime(moment) : 'Now');
    this.playButton.disabled = this.start === null;
    this.playButton.textContent = this.playing ? 'Pause' : 'Play';
    this.playButton.classList.toggle('playing', this.playing);
    this.nowButton.hidden = !past;
    if (!past) this.status.textContent = this.start === null ? 'Now, live: no pins yet to look back on' : 'Now, live';
    else this.status.textContent = this.playing ? 'Playing the past' : 'The past: new pins are not shown';
  }
}
