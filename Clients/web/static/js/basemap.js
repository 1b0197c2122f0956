// The world map the gateway serves itself (static/basemap/, made by scripts/make-basemap.py): land, lakes,
// borders and the names of countries, drawn under any tiles and under the pins, so the map reads where no
// tile server can be reached. Three zoom bands as the script makes them, each cut into cells of its own
// size; a view loads only the cells it shows, and keeps what it drew until the finer cells have come.

// Kept in step with BANDS in scripts/make-basemap.py.
const BANDS = [
  { maxZoom: 2, cell: [360, 180] },
  { maxZoom: 4, cell: [90, 90] },
  { maxZoom: Infinity, cell: [30, 30] },
];
// The colours app.css gives the sea (the map's own background) and the names.
const LAND = '#f4f1ea';
const SEA = '#aad3df';
const BORDER = '#9b8aa6';
const STYLES = {
  land: { stroke: false, fill: true, fillColor: LAND, fillOpacity: 1 },
  lake: { stroke: false, fill: true, fillColor: SEA, fillOpacity: 1 },
  border: { stroke: true, color: BORDER, weight: 1.5, opacity: 1, fill: false },
};
// More copies of the world than this across one view are not drawn (a phone zoomed all the way out).
const MOST_COPIES = 3;

function mod(value, by) {
  return ((value % by) + by) % by;
}

let NameLayer = null;

/** A country's name at a place: plain text in the names' pane, not a marker (the pins are the markers). */
function nameLayer(position, text) {
  const L = window.L;
  NameLayer ??= L.Layer.extend({
    initialize(latLng, name) {
      this.latLng = latLng;
      this.name = name;
    },
    onAdd(map) {
      this.element = L.DomUtil.create('div', 'basemap-label leaflet-zoom-hide', map.getPane('basemap-labels'));
      this.element.appendChild(document.createElement('span')).textContent = this.name;
      this.place();
      map.on('zoomend viewreset', this.place, this);
    },
    onRemove(map) {
      map.off('zoomend viewreset', this.place, this);
      this.element.remove();
    },
    place() {
      L.DomUtil.setPosition(this.element, this._map.latLngToLayerPoint(this.latLng));
    },
  });
  return new NameLayer(position, text);
}

export class Basemap {
  constructor(map) {
    const L = window.L;
    this.map = map;
    map.createPane('basemap');
    map.createPane('basemap-labels');
    this.renderer = L.canvas({ pane: 'basemap', padding: 0.5 });
    this.files = new Map();
    this.drawn = new Map();
    this.labels = L.layerGroup([], { pane: 'basemap-labels' }).addTo(map);
    this.generation = 0;
    map.attributionControl?.addAttribution('GSHHG, DCW');
    // A map made without a view (the posting preview's) is drawn once it has one.
    map.whenReady(() => {
      map.on('moveend', () => this.update());
      this.update();
    });
  }

  /** The cells of the zoom's band that the view shows, each with the copy of the world it is drawn in. */
  visibleCells() {
    const zoom = this.map.getZoom();
    const band = BANDS.findIndex((candidate) => zoom <= candidate.maxZoom);
    const [width, height] = BANDS[band].cell;
    const bounds = this.map.getBounds();
    const west = Math.max(bounds.getWest(), -180 - 360 * (MOST_COPIES - 1) / 2);
    const east = Math.min(bounds.getEast(), 180 + 360 * (MOST_COPIES - 1) / 2);
    const columns = 360 / width;
    const rows = 180 / height;
    const cells = [];
    for (let column = Math.floor((west + 180) / width); column <= Math.floor((east + 180) / width); column += 1) {
      const offset = 360 * Math.floor((column * width) / 360);
      const firstRow = Math.max(0, Math.floor((bounds.getSouth() + 90) / height));
      const lastRow = Math.min(rows - 1, Math.floor((bounds.getNorth() + 90) / height));
      for (let row = firstRow; row <= lastRow; row += 1) {
        const file = `/web/basemap/${band}/${mod(column, columns)}-${row}.json`;
        cells.push({ id: `${file}@${offset}`, file, offset });
      }
    }
    return cells;
  }

  /** A cell's GeoJSON, asked for once; a failed read is asked for again by the next view. */
  read(file) {
    if (!this.files.has(file)) {
      const reading = fetch(file).then((response) => {
        if (!response.ok) throw new Error(`${file}: ${response.status}`);
        return response.json();
      });
      reading.catch(() => this.files.delete(file));
      this.files.set(file, reading);
    }
    return this.files.get(file);
  }

  async update() {
    const generation = ++this.generation;
    const cells = this.visibleCells();
    const world = this.read('/web/basemap/0/0-0.json').catch(() => null);
    const contents = await Promise.all(cells.map((cell) => this.read(cell.file).catch(() => null)));
    const names = await world;
    // A later view asked meanwhile: it draws instead.
    if (generation !== this.generation) return;
    const wanted = new Set();
    cells.forEach((cell, index) => {
      if (!contents[index]) return;
      wanted.add(cell.id);
      if (!this.drawn.has(cell.id)) this.drawn.set(cell.id, this.layer(contents[index], cell.offset).addTo(this.map));
    });
    for (const [id, layer] of this.drawn) {
      if (!wanted.has(id)) {
        layer.remove();
        this.drawn.delete(id);
      }
    }
    if (names) this.showNames(names, new Set(cells.map((cell) => cell.offset)));
  }

  layer(cell, offset) {
    const L = window.L;
    const shapes = { type: 'FeatureCollection', features: cell.features.filter((feature) => feature.properties.kind !== 'label') };
    return L.geoJSON(shapes, {
      pane: 'basemap',
      renderer: this.renderer,
      interactive: false,
      coordsToLatLng: ([longitude, latitude]) => L.latLng(latitude, longitude + offset),
      style: (feature) => ({ ...STYLES[feature.properties.kind], renderer: this.renderer, interactive: false }),
    });
  }

  /** The names of the countries large enough at this zoom, in each copy of the world in view. */
  showNames(world, offsets) {
    const L = window.L;
    const zoom = this.map.getZoom();
    const bounds = this.map.getBounds().pad(0.2);
    this.labels.clearLayers();
    for (const feature of world.features) {
      if (feature.properties.kind !== 'label' || feature.properties.minZoom > zoom) continue;
      const [longitude, latitude] = feature.geometry.coordinates;
      for (const offset of offsets) {
        const position = L.latLng(latitude, longitude + offset);
        if (!bounds.contains(position)) continue;
        this.labels.addLayer(nameLayer(position, feature.properties.name));
      }
    }
  }
}
