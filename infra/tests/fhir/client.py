#!/usr/bin/env python3
"""A FHIR client no one here wrote (`fhirclient` from PyPI, SMART on FHIR's Python client)
against a running local stack: a user's phone uploads go in through the API, then the client
reads the metadata and the Patient, and searches the heart rate Observations by code and date
across pages, following the Bundles' `next` links itself. Then a lab order placed through the
API is taken to its results (the local stack's clock moved past the simulated lab's timeline)
and the client reads its DiagnosticReport with the contained result Observations.

Usage: client.py BASE_URL API_KEY. Prints "N passed, N failed"; exits non-zero on a failure.
"""
import json
import sys
import urllib.request

from fhirclient import client
from fhirclient.models.diagnosticreport import DiagnosticReport
from fhirclient.models.observation import Observation
from fhirclient.models.patient import Patient
from fhirclient.models.fhirsearch import FHIRSearch

base, key = sys.argv[1].rstrip("/"), sys.argv[2]


def call(method, path, body=None):
    req = urllib.request.Request(
        base + path,
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"x-service-api-key": key, "content-type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


# A user whose watch uploaded heart rate on 5 days (3 samples a day), through the phone API.
user = call("POST", "/v2/user", {"client_user_id": "fhir-client-check"})["user_id"]
samples = []
for day in range(1, 6):
    for minute in range(3):
        at = f"2026-11-0{day}T08:0{minute}:00Z"
        samples.append({"value": 60 + day + minute, "unit": "bpm", "start_date": at, "end_date": at,
                        "source_bundle": "com.apple.health.fhir-client", "product_type": "Watch7,1"})
call("POST", f"/v2/timeseries/{user}/heartrate", {
    "stage": "daily", "time_zone": "UTC", "provider": "apple_health_kit", "is_final_chunk": True, "data": samples,
})

checks = []


def check(name, ok, detail=""):
    checks.append(ok)
    print(f"{'ok  ' if ok else 'FAIL'} {name}{'' if ok else ': ' + str(detail)}")


smart = client.FHIRClient(settings={"app_id": "wearlab-fhir-check", "api_base": base + "/fhir/"})
smart.server.session.headers["x-service-api-key"] = key
# The client reads the CapabilityStatement with its own R4 models first.
smart.server.prepare()
check("CapabilityStatement read", smart.server.capabilityStatement is not None
      and smart.server.capabilityStatement.fhirVersion == "4.0.1")

patient = Patient.read(user, smart.server)
ids = {i.system: i.value for i in patient.identifier}
check("Patient read", patient.id == user and ids.get("urn:wearlab:user_id") == user, patient.as_json())
check("Patient's client_user_id", "fhir-client-check" in ids.values(), ids)

search = FHIRSearch(Observation, {
    "subject": f"Patient/{user}",
    "code": "http://loinc.org|8867-4",
    # R4's prefixes (`ge`, `lt`) as values: the client's own `$gte`/`$lt` operators write the
    # older `>=`/`<` form.
    "date": {"$and": ["ge2026-11-01", "lt2026-12-01"]},
    "_count": "2",
})
pages = list(search.perform_iter(smart.server))
observations = [e.resource for p in pages for e in (p.entry or [])]
check("3 pages of 2", len(pages) == 3, len(pages))
days = [o.effectivePeriod.start.isostring[:10] for o in observations]
check("every day once, in order", days == [f"2026-11-0{d}" for d in range(1, 6)], days)
check("LOINC heart rate in /min", all(
    o.code.coding[0].system == "http://loinc.org" and o.code.coding[0].code == "8867-4"
    and o.valueQuantity.code == "/min" for o in observations))
check("the day's mean", observations[0].valueQuantity.value == 62, observations[0].valueQuantity.as_json())

# A lab order taken to its results. The simulated lab reports a walk-in order 3 days after it was
# placed (docs/LAB.md); the local stack's clock moves forward at POST /local/clock/advance (a
# route of the local stack only, taking the team's key), and a read of the order applies the
# lab's changes due by then, results included.
tests = call("GET", "/v3/lab_test?name=meridian_essential_health")["data"]
order = call("POST", "/v3/order", {
    "user_id": user,
    "patient_details": {"first_name": "Grace", "last_name": "Hopper", "dob": "1970-12-09", "gender": "female",
                        "phone_number": "+12125550123", "email": "grace@example.com"},
    "patient_address": {"first_line": "1 Main St", "city": "New York", "state": "NY", "zip": "10001",
                        "country": "US"},
    "order_set": {"lab_test_ids": [tests[0]["id"]]},
})["order"]
call("POST", f"/local/clock/advance?seconds={4 * 24 * 3600}")
status = call("GET", f"/v3/order/{order['id']}")["status"]
check("the order completed", status.startswith("completed."), status)
results = call("GET", f"/v3/order/{order['id']}/result")["results"]

report = DiagnosticReport.read(order["id"], smart.server)
contained = {o.id: o for o in (report.contained or []) if isinstance(o, Observation)}
check("DiagnosticReport read", report.id == order["id"] and report.status == "final"
      and report.subject.reference == f"Patient/{user}", report.as_json())
check("one contained result Observation per result",
      len(contained) == len(results) == len(report.result or []) and len(results) > 0,
      (len(contained), len(results)))
check("every result reference resolves to a contained Observation",
      all(r.reference.startswith("#") and r.reference[1:] in contained for r in report.result), report.as_json())
by_ref = [contained[r.reference[1:]] for r in report.result]
check("each result's LOINC code", [o.code.coding[0].code for o in by_ref] == [r["loinc"] for r in results],
      [o.code.coding[0].code for o in by_ref])
numeric = [(o, r) for o, r in zip(by_ref, results) if r["type"] == "numeric"]
check("numeric values in the lab's unit", bool(numeric) and all(
    o.valueQuantity.value == r["value"] and o.valueQuantity.unit == r["unit"] for o, r in numeric))

print(f"{sum(checks)} passed, {len(checks) - sum(checks)} failed")
sys.exit(0 if all(checks) else 1)
