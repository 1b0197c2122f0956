#!/usr/bin/env python3
"""Makes the web client's world basemap: land, lakes, country borders and country names as GeoJSON in
three zoom bands, each simplified and rounded to what its zooms can show, the finer bands cut into cells
so that a view loads only the ones it shows.

    scripts/make-basemap.py [--out Clients/web/static/basemap]

The shorelines, lakes and borders are GSHHG's (Debian's gmt-gshhg-low; LGPL), the country names and the
places to write them come from the Digital Chart of the World (Debian's gmt-dcw; public domain); both are
read through Debian's gmt. Run it once when the data should change and commit what it writes: the gateway
serves the files as they are.
"""
import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

# Each band: the zooms it is drawn at, its cells' size (degrees of longitude and latitude: the file
# `{band}/{column}-{row}.json` holds the cell whose west edge is -180 + column * width and whose south edge
# is -90 + row * height), the GSHHG resolution read, the simplification tolerance and the rounding
# (degrees; both under about a pixel at the band's deepest zoom, where a pixel is 360 / (256 * 2^zoom)
# degrees across), and the smallest island and the smallest lake kept (km²). The web client
# (static/js/basemap.js) knows the same bands.
BANDS = [
    {"zooms": [0, 2], "cell": [360, 180], "resolution": "c", "tolerance": 0.2, "decimals": 1, "area": 2000, "lakes": 5000},
    {"zooms": [3, 4], "cell": [90, 90], "resolution": "l", "tolerance": 0.08, "decimals": 1, "area": 500, "lakes": 2000},
    {"zooms": [5, 18], "cell": [30, 30], "resolution": "l", "tolerance": 0.025, "decimals": 2, "area": 100, "lakes": 500},
]
# Where Web Mercator ends: a ring closed across a pole goes this far, which is as far as the map shows.
POLE = 85.1
# Every continent DCW knows, for the country names.
CONTINENTS = "=AF,=AN,=AS,=EU,=NA,=OC,=SA"


def gmt(*arguments, stdin=None):
    # Run elsewhere: gmt leaves a gmt.history file where it runs.
    return subprocess.run(["gmt", *arguments], input=stdin, capture_output=True, text=True, check=True, cwd=tempfile.gettempdir()).stdout


def segments(text):
    """gmt's multisegment text as (header, [(lon, lat), ...]) pairs."""
    found = []
    for line in text.splitlines():
        if line.startswith(">"):
            found.append((line[1:].strip(), []))
        elif line.strip() and found:
            lon, lat = line.split()[:2]
            found[-1][1].append((float(lon), float(lat)))
    return found


def joined(text):
    """GSHHG's pieces (cut at the edges of its storage bins) joined end to end into whole lines and rings."""
    return [points for _, points in segments(gmt("gmtconnect", "-T0.01", stdin=text)) if len(points) > 1]


def closed(points):
    """A ring from a joined shoreline: one that ends on the date line it began at is closed along it; one
    that runs from one side of the date line to the other (Antarctica) is closed around the pole."""
    first, last = points[0], points[-1]
    if first == last:
        return points
    if abs(abs(first[0]) - 180) < 1e-6 and abs(abs(last[0]) - 180) < 1e-6 and first[0] != last[0]:
        pole = -POLE if sum(lat for _, lat in points) < 0 else POLE
        return points + [(last[0], pole), (first[0], pole), first]
    return points + [first]


def simplified(points, tolerance):
    """Douglas-Peucker, without recursion: the points that keep the line within `tolerance` of itself."""
    if len(points) < 3:
        return points
    keep = [False] * len(points)
    keep[0] = keep[-1] = True
    stack = [(0, len(points) - 1)]
    while stack:
        start, end = stack.pop()
        (ax, ay), (bx, by) = points[start], points[end]
        dx, dy = bx - ax, by - ay
        length = math.hypot(dx, dy)
        farthest, distance = None, tolerance
        for index in range(start + 1, end):
            px, py = points[index]
            d = abs(dy * (px - ax) - dx * (py - ay)) / length if length else math.hypot(px - ax, py - ay)
            if d > distance:
                farthest, distance = index, d
        if farthest is not None:
            keep[farthest] = True
            stack += [(start, farthest), (farthest, end)]
    return [point for point, kept in zip(points, keep) if kept]


def rounded(points, decimals):
    """Coordinates at the band's precision, written as short as JSON allows, repeats dropped."""
    out = []
    for lon, lat in points:
        point = [short(round(lon, decimals)), short(round(lat, decimals))]
        if not out or out[-1] != point:
            out.append(point)
    return out


def short(value):
    return int(value) if value == int(value) else value


def clipped_ring(ring, west, south, east, north):
    """Sutherland-Hodgman: the part of a ring inside a cell, edges along the cell's sides where it was cut,
    so the pieces of neighbouring cells meet exactly."""
    edges = [
        (lambda p: p[0] >= west, lambda a, b: cut_at_lon(a, b, west)),
        (lambda p: p[0] <= east, lambda a, b: cut_at_lon(a, b, east)),
        (lambda p: p[1] >= south, lambda a, b: cut_at_lat(a, b, south)),
        (lambda p: p[1] <= north, lambda a, b: cut_at_lat(a, b, north)),
    ]
    points = ring[:-1]
    for inside, cut in edges:
        if not points:
            break
        result = []
        for index, current in enumerate(points):
            previous = points[index - 1]
            if inside(current):
                if not inside(previous):
                    result.append(cut(previous, current))
                result.append(current)
            elif inside(previous):
                result.append(cut(previous, current))
        points = result
    return points + points[:1]


def cut_at_lon(a, b, lon):
    return (lon, a[1] + (lon - a[0]) * (b[1] - a[1]) / (b[0] - a[0]))


def cut_at_lat(a, b, lat):
    return (a[0] + (lat - a[1]) * (b[0] - a[0]) / (b[1] - a[1]), lat)


def clipped_line(line, west, south, east, north):
    """The runs of a line that touch a cell, each with one point beyond it on either side so the runs of
    neighbouring cells overlap rather than leave a gap."""
    def inside(point):
        return west <= point[0] <= east and south <= point[1] <= north
    runs, run = [], []
    for index, point in enumerate(line):
        near = inside(point) or (index > 0 and inside(line[index - 1])) or (index + 1 < len(line) and inside(line[index + 1]))
        if near:
            run.append(point)
        elif run:
            runs.append(run)
            run = []
    if run:
        runs.append(run)
    return [run for run in runs if len(run) > 1]


def rings(text, band):
    return [simplified(closed(points), band["tolerance"]) for points in joined(text)]


def lines(text, band):
    return [simplified(points, band["tolerance"]) for points in joined(text)]


def bounds(points):
    return (min(x for x, _ in points), min(y for _, y in points), max(x for x, _ in points), max(y for _, y in points))


def cell_features(shapes, band, west, south, east, north):
    """The band's land, lakes and borders inside one cell, rounded to the band's precision."""
    features = []
    for kind, items in (("land", shapes["land"]), ("lake", shapes["lakes"])):
        polygons = []
        for ring in items:
            box = bounds(ring)
            if box[0] > east or box[2] < west or box[1] > north or box[3] < south:
                continue
            inside = box[0] >= west and box[2] <= east and box[1] >= south and box[3] <= north
            piece = rounded(ring if inside else clipped_ring(ring, west, south, east, north), band["decimals"])
            if len(piece) >= 4:
                polygons.append([piece])
        features.append({"type": "Feature", "properties": {"kind": kind}, "geometry": {"type": "MultiPolygon", "coordinates": polygons}})
    borders = []
    for line in shapes["borders"]:
        for run in clipped_line(line, west, south, east, north):
            piece = rounded(run, band["decimals"])
            if len(piece) >= 2:
                borders.append(piece)
    features.append({"type": "Feature", "properties": {"kind": "border"}, "geometry": {"type": "MultiLineString", "coordinates": borders}})
    return features


def area_km2(ring):
    """A ring's area on the sphere, near enough to rank countries by."""
    total = 0.0
    for (x1, y1), (x2, y2) in zip(ring, ring[1:] + ring[:1]):
        total += math.radians(x2 - x1) * (2 + math.sin(math.radians(y1)) + math.sin(math.radians(y2)))
    return abs(total) * 6371.0**2 / 2


def label_point(ring):
    """Where to write a country's name: the middle of the widest stretch of land across the parallel
    through its centre of mass, so a curved country's name is not written in the sea. A piece across the
    date line (Fiji's, Russia's) is measured in 0-360 degrees and its point put back in -180-180."""
    shifted = [(x + 360 if x < 0 else x, y) for x, y in ring]
    if width(ring) > 180 and width(shifted) <= 180:
        lon, lat = widest_middle(shifted)
        return (lon - 360 if lon > 180 else lon), lat
    return widest_middle(ring)


def width(ring):
    return max(x for x, _ in ring) - min(x for x, _ in ring)


def widest_middle(ring):
    lat = sum(y for _, y in ring) / len(ring)
    crossings = []
    for (x1, y1), (x2, y2) in zip(ring, ring[1:] + ring[:1]):
        if (y1 <= lat < y2) or (y2 <= lat < y1):
            crossings.append(x1 + (lat - y1) * (x2 - x1) / (y2 - y1))
    crossings.sort()
    spans = list(zip(crossings[0::2], crossings[1::2]))
    if not spans:
        return sum(x for x, _ in ring) / len(ring), lat
    west, east = max(spans, key=lambda span: span[1] - span[0])
    return (west + east) / 2, lat


def labels():
    """One name per country of DCW, at its largest piece, with the zoom from which it fits on the map."""
    largest = {}
    for header, points in segments(gmt("coast", "-Rd", f"-E{CONTINENTS}", "-M")):
        name = header.rsplit(" Segment ", 1)[0].strip()
        if len(points) < 3:
            continue
        area = area_km2(points)
        if area > largest.get(name, (0, None))[0]:
            largest[name] = (area, points)
    features = []
    for name, (area, ring) in sorted(largest.items(), key=lambda item: -item[1][0]):
        if area < 1_000:
            continue
        lon, lat = label_point(ring)
        zoom = 2 if area > 1_500_000 else 3 if area > 250_000 else 4 if area > 40_000 else 5 if area > 8_000 else 6
        features.append({
            "type": "Feature", "properties": {"kind": "label", "name": name, "minZoom": zoom},
            "geometry": {"type": "Point", "coordinates": [short(round(lon, 1)), short(round(lat, 1))]},
        })
    return features


def band_shapes(band):
    common = ["-Rd", f"-D{band['resolution']}", "-M"]
    return {
        "land": rings(gmt("coast", *common, f"-A{band['area']}", "-W1/0.1p"), band),
        "lakes": rings(gmt("coast", *common, f"-A{band['lakes']}", "-W2/0.1p"), band),
        "borders": lines(gmt("coast", *common, "-N1/0.1p"), band),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "Clients", "web", "static", "basemap"))
    arguments = parser.parse_args()
    if shutil.which("gmt") is None:
        sys.exit("make-basemap: gmt not found; install Debian's gmt, gmt-gshhg-low and gmt-dcw")
    names = labels()
    for index, band in enumerate(BANDS):
        folder = os.path.join(arguments.out, str(index))
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        shapes = band_shapes(band)
        width, height = band["cell"]
        total = 0
        for column in range(360 // width):
            for row in range(180 // height):
                west, south = -180 + column * width, -90 + row * height
                features = cell_features(shapes, band, west, south, west + width, south + height)
                # The names are few: they come with the world's one cell and are shown at every zoom.
                features += names if index == 0 else []
                document = {"type": "FeatureCollection", "features": features}
                path = os.path.join(folder, f"{column}-{row}.json")
                with open(path, "w") as file:
                    json.dump(document, file, separators=(",", ":"), ensure_ascii=False)
                total += os.path.getsize(path)
        print(f"band {index} (zooms {band['zooms'][0]}-{band['zooms'][1]}): {total:,} bytes in {folder}")


if __name__ == "__main__":
    main()
