// The map tab: one Leaflet marker per pin, each with a popup of the name, the link and a way to its history.
// Every map is drawn on the gateway's own world map first, with tiles over it where there are any; when
// they cannot load, the pins stay on the world map and a quiet notice says why.
import { Basemap } from './basemap.js';
import { element, fullName, outsideLink } from './format.js';

export function leafletAvailable() {
  return typeof window.L !== 'undefined';
}

// How long tiles may take to show before the map is said to be on the world map alone.
const TILE_PATIENCE_MS = 4000;

/**
 * The page's map layers: the world map, then the tiles of `tileURL` over it (none when it is `none`; up to
 * `tileMaxZoom`, deeper zooms enlarging those). Returns the tile layer, or null.
 */
export function addMapLayers(map, container, { tileURL, tileMaxZoom, onTilesOffline = () => {} }) {
  new Basemap(map);
  if (!tileURL || tileURL === 'none') return null;
  const attribution = /openstreetmap\.org/i.test(tileURL) ? '© OpenStreetMap contributors' : '';
  const maxNativeZoom = Number.parseInt(tileMaxZoom, 10);
  const options = { maxZoom: 18, attribution, ...(Number.isFinite(maxNativeZoom) ? { maxNativeZoom } : {}) };
  const layer = window.L.tileLayer(tileURL, options).addTo(map);
  watchTiles(layer, container, onTilesOffline);
  return layer;
}

/**
 * Watches a tile layer: no tile loaded and one failed, or none loaded within a few seconds, means the tiles
 * are unreachable; their pane is hidden then (a class on the container) and the world map shows.
 */
function watchTiles(layer, container, onChange) {
  let offline = false;
  const set = (value) => {
    if (value === offline) return;
    offline = value;
    container.classList.toggle('tiles-offline', offline);
    onChange(offline);
  };
  let loadedThisRound = 0;
  let patience = null;
  layer.on('loading', () => {
    loadedThisRound = 0;
    clearTimeout(patience);
    patience = setTimeout(() => { if (loadedThisRound === 0) set(true); }, TILE_PATIENCE_MS);
  });
  layer.on('tileload', () => { loadedThisRound += 1; set(false); });
  layer.on('tileerror', () => { if (loadedThisRound === 0) set(true); });
}

function popupContent(pin, onHistory) {
  const history = element('button', { className: 'link-button popup-history', text: 'History', attributes: { type: 'button' } });
  history.addEventListener('click', () => onHistory(pin));
  return element('div', { className: 'popup' }, [
    element('strong', { className: 'popup-name', text: fullName(pin) }),
    element('span', { className: 'popup-place', text: pin.mapString ?? '' }),
    outsideLink(pin.mediaURL ?? '', 'popup-link'),
    history,
  ]);
}

export class PinMap {
  /** onHistory(pin): the reader asked for a pin's history from its popup. */
  constructor(container, { tileURL, tileMaxZoom, onTilesOffline, onHistory }) {
    const L = window.L;
    this.map = L.map(container, { worldCopyJump: true, minZoom: 1 }).setView([25, 0], 2);
    addMapLayers(this.map, container, { tileURL, tileMaxZoom, onTilesOffline });
    this.markers = new Map();
    this.fitted = false;
    this.content = (pin) => popupContent(pin, onHistory);
  }

  /** Draws exactly these pins: new ones added, moved ones moved, gone ones removed. */
  show(pins) {
    const L = window.L;
    const seen = new Set();
    for (const pin of pins) {
      if (!Number.isFinite(pin.latitude) || !Number.isFinite(pin.longitude)) continue;
      seen.add(pin.objectId);
      const existing = this.markers.get(pin.objectId);
      if (existing && existing.pin.updatedAt === pin.updatedAt) continue;
      if (existing) {
        existing.marker.setLatLng([pin.latitude, pin.longitude]);
        existing.marker.setPopupContent(this.content(pin));
        existing.pin = pin;
        continue;
      }
      const marker = L.marker([pin.latitude, pin.longitude], { title: fullName(pin), alt: fullName(pin), keyboard: true })
        .bindPopup(() => this.content(this.markers.get(pin.objectId)?.pin ?? pin))
        .addTo(this.map);
      this.markers.set(pin.objectId, { marker, pin });
    }
    for (const [objectId, { marker }] of this.markers) {
      if (!seen.has(objectId)) {
        marker.remove();
        this.markers.delete(objectId);
      }
    }
    // Fitted to the first pins shown, and again after a reset (a log out); a moment without pins (a
    // playback's first steps) keeps the view.
    if (!this.fitted && this.markers.size > 0) {
      this.fitted = true;
      const bounds = L.latLngBounds([...this.markers.values()].map(({ pin }) => [pin.latitude, pin.longitude]));
      this.map.fitBounds(bounds, { padding: [40, 40], maxZoom: 6, animate: false });
    }
  }

  /** Removes every pin; the next ones shown are fitted into view. */
  reset() {
    this.show([]);
    this.fitted = false;
  }

  resized() {
    this.map.invalidateSize();
  }
}
