#!/usr/bin/env python3
"""Validates every FHIR resource the integration tests wrote (one JSON file each, under the
directory given) against FHIR R4 4.0.1 with the `fhir.resources` models from PyPI (6.4.0: the
last release whose default models are R4 4.0.1; later ones are R4B and R5). A Bundle is
validated whole, its entries included. Exits non-zero when any resource fails or when there is
none to validate.
"""
import json
import pathlib
import sys

import fhir.resources
from fhir.resources import construct_fhir_element

if fhir.resources.__fhir_version__ != "4.0.1":
    sys.exit(f"fhir.resources validates FHIR {fhir.resources.__fhir_version__}, not 4.0.1")

root = pathlib.Path(sys.argv[1])
files = sorted(root.rglob("*.json"))
passed, failed = 0, 0
kinds = {}
for path in files:
    data = json.loads(path.read_text())
    kind = data.get("resourceType", "?")
    try:
        construct_fhir_element(kind, data)
        passed += 1
        kinds[kind] = kinds.get(kind, 0) + 1
    except Exception as e:  # the models' ValidationError, or an unknown resource type
        failed += 1
        print(f"FAIL {path.relative_to(root)} ({kind}):\n{e}\n")
print("validated: " + ", ".join(f"{n} {k}" for k, n in sorted(kinds.items())))
print(f"{passed} passed, {failed} failed")
if not files:
    sys.exit(f"no FHIR resources under {root}: run the fhir integration tests first")
sys.exit(1 if failed else 0)
