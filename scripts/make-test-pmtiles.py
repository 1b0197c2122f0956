#!/usr/bin/env python3
"""Writes a PMTiles (version 3) archive for the tests, with PyPI's pmtiles writer.

    scripts/make-test-pmtiles.py OUT --max-zoom 2             every tile to z2, each a PNG of its own colour
    scripts/make-test-pmtiles.py OUT --max-zoom 9 --bytes 2048 --tiles 40000
                                                              that many tiles, z0 on, each of that many bytes

A PNG tile's colour is tile_colour(z, x, y) below; a tile of --bytes is its "z/x/y;" repeated to that length
plus (x * 7 + y * 13) % 1024 (lengths that vary make directories too large for the root alone, so the
archive has leaf directories), so a test knows every tile's bytes without the writer's own reader.
"""
import argparse
import struct
import zlib

from pmtiles.tile import Compression, TileType, zxy_to_tileid
from pmtiles.writer import Writer


def tile_colour(z, x, y):
    return (40 + 60 * z, 30 + (x * 97) % 200, 30 + (y * 61) % 200)


def png(colour, size=256):
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    pixels = zlib.compress((b"\x00" + bytes(colour) * size) * size)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")


def patterned(z, x, y, length):
    length += (x * 7 + y * 13) % 1024
    unit = f"{z}/{x}/{y};".encode()
    return (unit * (length // len(unit) + 1))[:length]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out")
    parser.add_argument("--max-zoom", type=int, required=True)
    parser.add_argument("--bytes", type=int, help="patterned tiles of this many bytes instead of PNGs")
    parser.add_argument("--tiles", type=int, help="at most this many tiles (in tile id order)")
    arguments = parser.parse_args()
    tiles = []
    for z in range(arguments.max_zoom + 1):
        for x in range(1 << z):
            for y in range(1 << z):
                tiles.append((zxy_to_tileid(z, x, y), z, x, y))
    tiles.sort()
    if arguments.tiles:
        tiles = tiles[: arguments.tiles]
    last_zoom = tiles[-1][1]
    with open(arguments.out, "wb") as file:
        writer = Writer(file)
        for tile_id, z, x, y in tiles:
            data = patterned(z, x, y, arguments.bytes) if arguments.bytes else png(tile_colour(z, x, y))
            writer.write_tile(tile_id, data)
        writer.finalize({
            "tile_type": TileType.PNG, "tile_compression": Compression.NONE,
            "min_zoom": 0, "max_zoom": last_zoom,
            "min_lon_e7": -1800000000, "min_lat_e7": -850000000, "max_lon_e7": 1800000000, "max_lat_e7": 850000000,
            "center_zoom": 0, "center_lon_e7": 0, "center_lat_e7": 0,
        }, {"name": "On The Map test tiles"})


if __name__ == "__main__":
    main()
