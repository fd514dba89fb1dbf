#!/usr/bin/env python3
"""Generates the lab reference data from `analytes.psv` and the definitions below.

    python3 infra/data/lab/gen_catalog.py

writes `catalog.json` (labs, lab accounts, analytes, markers, lab tests) and `psc_sites.json`
(patient service centers) next to this script. `zip_centroids.csv` must exist (see
`convert_zips.py`): each site's ZIP code is the nearest ZIP centroid to its coordinates.
The output is deterministic; commit it together with any change to this script.
"""
import csv
import hashlib
import json
import math
import os
import re
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
NAMESPACE = uuid.UUID("6f1c1c64-8a53-4a43-9f0e-6c3f1a0b7d21")
EARTH_RADIUS_MILES = 3958.8


def slugify(text):
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def stable(text, modulo):
    return int(hashlib.sha256(text.encode()).hexdigest(), 16) % modulo


def read_analytes():
    out = []
    with open(os.path.join(HERE, "analytes.psv"), encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            key, code, loinc_name, name, unit, sample, rtype, low, high, normal = line.split("|")
            out.append({
                "key": key,
                "loinc": {
                    "id": int(code.split("-")[0]),
                    "name": loinc_name,
                    "slug": slugify(name),
                    "code": code,
                    "unit": unit or None,
                },
                "name": name,
                "unit": unit or None,
                "sample_type": sample,
                "result_type": rtype,
                "ref_low": float(low) if low else None,
                "ref_high": float(high) if high else None,
                "normal_text": normal or None,
            })
    return out


# Calculated or derived analytes: listed in panels but not required, not sold alone.
CALCULATED = {
    "egfr", "bun_creatinine_ratio", "globulin", "ag_ratio", "bilirubin_indirect", "uibc",
    "iron_saturation", "vldl", "ldl_calc", "non_hdl", "chol_hdl_ratio", "eag", "anion_gap",
    "acr", "neutrophils_abs", "lymphocytes_abs", "monocytes_abs", "eosinophils_abs",
    "basophils_abs",
}

PANELS = [
    ("cmp", "Comprehensive Metabolic Panel (14)", [
        "glucose", "bun", "creatinine", "egfr", "bun_creatinine_ratio", "sodium", "potassium",
        "chloride", "co2", "calcium", "protein_total", "albumin", "globulin", "ag_ratio",
        "bilirubin_total", "alp", "ast", "alt"]),
    ("bmp", "Basic Metabolic Panel (8)", [
        "glucose", "bun", "creatinine", "egfr", "bun_creatinine_ratio", "sodium", "potassium",
        "chloride", "co2", "calcium"]),
    ("cbc", "CBC With Differential/Platelet", [
        "wbc", "rbc", "hemoglobin", "hematocrit", "mcv", "mch", "mchc", "rdw", "platelets",
        "neutrophils_pct", "lymphocytes_pct", "monocytes_pct", "eosinophils_pct",
        "basophils_pct", "neutrophils_abs", "lymphocytes_abs", "monocytes_abs",
        "eosinophils_abs", "basophils_abs"]),
    ("lipid", "Lipid Panel", [
        "cholesterol_total", "triglycerides", "hdl", "vldl", "ldl_calc", "non_hdl",
        "chol_hdl_ratio"]),
    ("hepatic", "Hepatic Function Panel (7)", [
        "protein_total", "albumin", "bilirubin_total", "bilirubin_direct", "alp", "ast", "alt"]),
    ("thyroid", "Thyroid Panel With TSH", ["tsh", "total_t4", "free_t4", "total_t3"]),
    ("iron_tibc", "Iron and TIBC", ["iron", "tibc", "uibc", "iron_saturation"]),
    ("a1c", "Hemoglobin A1c With eAG", ["hba1c", "eag"]),
    ("urinalysis", "Urinalysis, Complete", [
        "ua_color", "ua_appearance", "ua_sg", "ua_ph", "ua_protein", "ua_glucose",
        "ua_ketones", "ua_blood", "ua_nitrite", "ua_leukocyte_esterase", "ua_bilirubin"]),
    ("pt_inr", "Prothrombin Time (PT) and INR", ["pt", "inr"]),
    ("testosterone", "Testosterone, Free and Total", ["testosterone_total", "testosterone_free"]),
    ("acr_panel", "Microalbumin/Creatinine Ratio, Random Urine", [
        "microalbumin", "creatinine_urine", "acr"]),
]

LABS = [
    {
        "id": 1, "slug": "meridian", "name": "Meridian Clinical Laboratories",
        "first_line_address": "1200 Research Blvd", "city": "Rockville", "state": "MD",
        "zipcode": "20850",
        "collection_methods": ["walk_in_test", "at_home_phlebotomy"],
        "sample_types": ["serum", "plasma", "whole_blood", "urine"],
        "code": lambda i: f"{100000 + i * 113:06d}", "site_prefix": "MRD",
        "missing": {"reverse_t3", "selenium", "mercury_blood"},
        "price_factor": 1.0,
    },
    {
        "id": 2, "slug": "northfield", "name": "Northfield Diagnostics",
        "first_line_address": "450 Lakeview Pkwy", "city": "Vernon Hills", "state": "IL",
        "zipcode": "60061",
        "collection_methods": ["walk_in_test", "at_home_phlebotomy"],
        "sample_types": ["serum", "plasma", "whole_blood", "urine"],
        "code": lambda i: f"{1000 + i * 17}", "site_prefix": "NFD",
        "missing": {"vitamin_e", "vitamin_a", "copper", "oh_progesterone", "estrone", "ldl_direct"},
        "price_factor": 0.9,
    },
    {
        "id": 3, "slug": "cascade", "name": "Cascade Reference Laboratory",
        "first_line_address": "2700 Westlake Ave N", "city": "Seattle", "state": "WA",
        "zipcode": "98109",
        "collection_methods": ["walk_in_test", "at_home_phlebotomy", "testkit"],
        "sample_types": ["serum", "whole_blood", "urine", "dried_blood_spot"],
        "code": lambda i: f"CR{2000 + i * 3}", "site_prefix": "CRL",
        "missing": {"pt", "inr", "aptt", "fibrinogen", "d_dimer", "troponin_i", "nt_probnp",
                    "acth", "aldosterone", "osmolality", "ldh", "haptoglobin"},
        "price_factor": 1.15,
    },
]

# (slug, name, description, parts (analyte keys or "panel:<key>"), fasting, methods per lab id)
LAB_TESTS = [
    ("essential_health", "Essential Health Panel",
     "Metabolic, blood count, lipid and glycemic markers for a yearly check-up.",
     ["panel:cmp", "panel:cbc", "panel:lipid", "panel:a1c"], True,
     {1: ["walk_in_test", "at_home_phlebotomy"], 2: ["walk_in_test", "at_home_phlebotomy"], 3: ["walk_in_test"]}),
    ("heart_health", "Heart Health Panel",
     "Lipids plus apolipoprotein B, lipoprotein (a), hs-CRP and homocysteine.",
     ["panel:lipid", "apob", "lpa", "hs_crp", "homocysteine"], True,
     {1: ["walk_in_test"], 2: ["walk_in_test"], 3: ["walk_in_test"]}),
    ("thyroid_complete", "Complete Thyroid Panel",
     "TSH, free and total thyroid hormones and thyroid antibodies.",
     ["tsh", "free_t4", "free_t3", "tpo_ab", "tg_ab"], False,
     {1: ["walk_in_test"], 2: ["walk_in_test"], 3: ["walk_in_test"]}),
    ("male_hormones", "Male Hormone Panel",
     "Testosterone (free and total), estradiol, SHBG, LH, FSH, prolactin and PSA.",
     ["panel:testosterone", "estradiol", "shbg", "lh", "fsh", "prolactin", "psa_total"], False,
     {1: ["walk_in_test"], 2: ["walk_in_test"], 3: ["walk_in_test"]}),
    ("female_hormones", "Female Hormone Panel",
     "Estradiol, progesterone, LH, FSH, prolactin, DHEA-S, testosterone and TSH.",
     ["estradiol", "progesterone", "lh", "fsh", "prolactin", "dhea_s", "testosterone_total", "tsh"], False,
     {1: ["walk_in_test"], 2: ["walk_in_test"], 3: ["walk_in_test"]}),
    ("metabolic_diabetes", "Diabetes Risk Panel",
     "Glucose, hemoglobin A1c, insulin, C-peptide and fructosamine.",
     ["glucose", "panel:a1c", "insulin", "c_peptide", "fructosamine"], True,
     {1: ["walk_in_test"], 2: ["walk_in_test"], 3: ["walk_in_test"]}),
    ("nutrition", "Iron and Nutrition Panel",
     "Iron studies, ferritin, vitamin B12, folate, vitamin D, magnesium and zinc.",
     ["panel:iron_tibc", "ferritin", "vitamin_b12", "folate", "vitamin_d", "magnesium", "zinc"], True,
     {1: ["walk_in_test"], 2: ["walk_in_test"], 3: ["walk_in_test"]}),
    ("kidney", "Kidney Health Panel",
     "Basic metabolic panel, cystatin C, urinalysis and urine albumin/creatinine ratio.",
     ["panel:bmp", "cystatin_c", "panel:urinalysis", "panel:acr_panel"], False,
     {1: ["walk_in_test"], 2: ["walk_in_test"], 3: ["walk_in_test"]}),
    ("sti_panel", "Sexual Health Panel",
     "HIV, hepatitis B and C, syphilis, chlamydia and gonorrhea screening.",
     ["hiv_ag_ab", "hbsag", "hcv_ab", "rpr", "chlamydia", "gonorrhea"], False,
     {1: ["walk_in_test"], 2: ["walk_in_test"], 3: ["walk_in_test", "testkit"]}),
    ("liver", "Liver Function Panel",
     "Hepatic function panel with GGT.",
     ["panel:hepatic", "ggt"], False,
     {1: ["walk_in_test"], 2: ["walk_in_test"], 3: ["walk_in_test"]}),
    ("inflammation", "Inflammation Panel",
     "hs-CRP, sedimentation rate, ferritin and fibrinogen.",
     ["hs_crp", "esr", "ferritin", "fibrinogen"], False,
     {1: ["walk_in_test"], 2: ["walk_in_test"]}),
    ("coagulation", "Coagulation Panel",
     "Prothrombin time with INR and aPTT.",
     ["panel:pt_inr", "aptt"], False,
     {1: ["walk_in_test"], 2: ["walk_in_test"]}),
    ("vitamin_d_test", "Vitamin D Test",
     "25-hydroxy vitamin D (D2 + D3).",
     ["vitamin_d"], False,
     {1: ["walk_in_test"], 2: ["walk_in_test"], 3: ["walk_in_test", "testkit"]}),
    ("a1c_test", "Hemoglobin A1c Test",
     "Hemoglobin A1c with estimated average glucose.",
     ["panel:a1c"], False,
     {1: ["walk_in_test"], 2: ["walk_in_test"], 3: ["testkit"]}),
    ("autoimmune", "Autoimmune Screening Panel",
     "ANA screen, rheumatoid factor, CRP, complement C3 and C4.",
     ["ana", "rf", "crp", "c3", "c4"], False,
     {1: ["walk_in_test"], 2: ["walk_in_test"], 3: ["walk_in_test"]}),
    ("celiac", "Celiac Disease Screen",
     "tTG IgA with total IgA.",
     ["ttg_iga", "iga"], False,
     {1: ["walk_in_test"], 2: ["walk_in_test"], 3: ["walk_in_test"]}),
]

SAMPLE_FOR_METHOD = {"testkit": "dried_blood_spot"}

# Metro areas and neighbourhoods of patient service centers: (city, state, lat, lng, street).
METROS = {
    "New York": [
        ("New York", "NY", 40.7549, -73.9840, "W 40th St"),
        ("New York", "NY", 40.7736, -73.9566, "Lexington Ave"),
        ("Brooklyn", "NY", 40.6960, -73.9936, "Court St"),
        ("Astoria", "NY", 40.7644, -73.9235, "Steinway St"),
        ("Jersey City", "NJ", 40.7178, -74.0431, "Newark Ave"),
        ("Bronx", "NY", 40.8612, -73.8908, "E Fordham Rd"),
        ("Flushing", "NY", 40.7580, -73.8303, "Main St"),
        ("Staten Island", "NY", 40.6267, -74.0776, "Victory Blvd"),
        ("Hackensack", "NJ", 40.8859, -74.0435, "Main St"),
        ("Yonkers", "NY", 40.9312, -73.8988, "S Broadway"),
    ],
    "Chicago": [
        ("Chicago", "IL", 41.8810, -87.6298, "W Madison St"),
        ("Chicago", "IL", 41.9214, -87.6513, "N Clark St"),
        ("Chicago", "IL", 41.7943, -87.5907, "E 53rd St"),
        ("Evanston", "IL", 42.0451, -87.6877, "Church St"),
        ("Oak Park", "IL", 41.8850, -87.7845, "Lake St"),
        ("Schaumburg", "IL", 42.0334, -88.0834, "E Golf Rd"),
    ],
    "Los Angeles": [
        ("Los Angeles", "CA", 34.0488, -118.2518, "W 7th St"),
        ("Santa Monica", "CA", 34.0195, -118.4912, "Wilshire Blvd"),
        ("Pasadena", "CA", 34.1478, -118.1445, "E Colorado Blvd"),
        ("Long Beach", "CA", 33.7701, -118.1937, "E Broadway"),
        ("Burbank", "CA", 34.1808, -118.3090, "N San Fernando Blvd"),
        ("Torrance", "CA", 33.8358, -118.3406, "Hawthorne Blvd"),
    ],
    "San Francisco": [
        ("San Francisco", "CA", 37.7785, -122.4056, "Mission St"),
        ("Oakland", "CA", 37.8044, -122.2712, "Broadway"),
        ("San Mateo", "CA", 37.5630, -122.3255, "E 3rd Ave"),
        ("Berkeley", "CA", 37.8715, -122.2730, "Shattuck Ave"),
        ("Daly City", "CA", 37.6879, -122.4702, "Southgate Ave"),
    ],
    "Seattle": [
        ("Seattle", "WA", 47.6097, -122.3331, "4th Ave"),
        ("Bellevue", "WA", 47.6101, -122.2015, "NE 8th St"),
        ("Seattle", "WA", 47.6687, -122.3847, "NW Market St"),
        ("Renton", "WA", 47.4829, -122.2171, "S 3rd St"),
    ],
    "Austin": [
        ("Austin", "TX", 30.2711, -97.7437, "Congress Ave"),
        ("Round Rock", "TX", 30.5083, -97.6789, "E Palm Valley Blvd"),
        ("Austin", "TX", 30.2500, -97.7700, "S Lamar Blvd"),
    ],
    "Boston": [
        ("Boston", "MA", 42.3503, -71.0810, "Boylston St"),
        ("Cambridge", "MA", 42.3736, -71.1097, "Massachusetts Ave"),
        ("Quincy", "MA", 42.2529, -71.0023, "Hancock St"),
        ("Newton", "MA", 42.3370, -71.2092, "Washington St"),
    ],
    "Denver": [
        ("Denver", "CO", 39.7447, -104.9919, "17th St"),
        ("Aurora", "CO", 39.7294, -104.8319, "E Colfax Ave"),
        ("Lakewood", "CO", 39.7047, -105.0814, "W Alameda Ave"),
    ],
    "Atlanta": [
        ("Atlanta", "GA", 33.7838, -84.3830, "Peachtree St NE"),
        ("Decatur", "GA", 33.7748, -84.2963, "E Ponce de Leon Ave"),
        ("Marietta", "GA", 33.9526, -84.5499, "Roswell St"),
    ],
    "Miami": [
        ("Miami", "FL", 25.7650, -80.1936, "Brickell Ave"),
        ("Coral Gables", "FL", 25.7215, -80.2684, "Ponce de Leon Blvd"),
        ("Hialeah", "FL", 25.8576, -80.2781, "W 49th St"),
    ],
    "Phoenix": [
        ("Phoenix", "AZ", 33.4484, -112.0740, "N Central Ave"),
        ("Scottsdale", "AZ", 33.4942, -111.9261, "N Scottsdale Rd"),
        ("Tempe", "AZ", 33.4255, -111.9400, "S Mill Ave"),
    ],
    "Houston": [
        ("Houston", "TX", 29.7420, -95.3780, "Main St"),
        ("Houston", "TX", 29.7390, -95.4630, "Westheimer Rd"),
        ("Pasadena", "TX", 29.6911, -95.2091, "Fairmont Pkwy"),
    ],
}

AREA_CODES = {"NY": "212", "NJ": "201", "IL": "312", "CA": "213", "WA": "206", "TX": "512",
              "MA": "617", "CO": "303", "GA": "404", "FL": "305", "AZ": "602"}

# Two sites at exact great-circle distances from the centroid of ZIP 10001 (New York), for
# the radius boundary: 24.9 miles (inside a 25-mile radius) and 25.1 miles (outside it).
BOUNDARY_ORIGIN_ZIP = "10001"
BOUNDARY_SITES = [
    # (lab id, miles, bearing in degrees, name, city, state, street)
    (1, 24.9, 22.0, "White Plains", "White Plains", "NY", "Mamaroneck Ave"),
    (1, 25.1, 262.0, "Livingston", "Livingston", "NJ", "W Northfield Rd"),
]

# (payer id, name, aliases, street, city, state, zip). Electronic payer ids as printed in the
# public payer lists of US claims clearinghouses, addresses of the companies' head offices;
# typed from those public lists, not from a licensed payer database: verify before billing
# real claims. WLSIM* are simulated payors for tests and demos.
PAYORS = [
    ("60054", "Aetna", ["Aetna Inc", "Aetna Health", "CVS Aetna"], "151 Farmington Ave", "Hartford", "CT", "06156"),
    ("87726", "UnitedHealthcare", ["UHC", "United Healthcare", "UnitedHealth", "United Health Care"],
     "9900 Bren Rd E", "Minnetonka", "MN", "55343"),
    ("62308", "Cigna", ["Cigna Healthcare", "Connecticut General"], "900 Cottage Grove Rd", "Bloomfield", "CT", "06002"),
    ("61101", "Humana", ["Humana Inc", "Humana Health Plan"], "500 W Main St", "Louisville", "KY", "40202"),
    ("39026", "UMR", ["United Medical Resources"], "115 W Wausau Ave", "Wausau", "WI", "54401"),
    ("41124", "Meritain Health", ["Meritain"], "300 Corporate Pkwy", "Amherst", "NY", "14226"),
    ("44054", "GEHA", ["Government Employees Health Association"], "310 NE Mulberry St", "Lee's Summit", "MO", "64086"),
    ("06111", "Oxford Health Plans", ["Oxford", "UHC Oxford"], "48 Monroe Tpke", "Trumbull", "CT", "06611"),
    ("37602", "Golden Rule Insurance", ["Golden Rule"], "7440 Woodland Dr", "Indianapolis", "IN", "46278"),
    ("36273", "AARP Medicare Supplement", ["AARP", "AARP Medicare", "UHC AARP"], "9900 Bren Rd E", "Minnetonka", "MN", "55343"),
    ("94265", "Medica", ["Medica Health Plans"], "401 Carlson Pkwy", "Minnetonka", "MN", "55305"),
    ("94267", "HealthPartners", ["Health Partners"], "8170 33rd Ave S", "Bloomington", "MN", "55425"),
    ("38217", "Priority Health", ["Priority"], "1231 E Beltline Ave NE", "Grand Rapids", "MI", "49525"),
    ("04271", "Tufts Health Plan", ["Tufts"], "705 Mount Auburn St", "Watertown", "MA", "02472"),
    ("04273", "Harvard Pilgrim Health Care", ["Harvard Pilgrim", "HPHC"], "1600 Crown Colony Dr", "Quincy", "MA", "02169"),
    ("54704", "Independence Blue Cross", ["IBX", "IBC"], "1901 Market St", "Philadelphia", "PA", "19103"),
    ("22099", "Horizon Blue Cross Blue Shield of New Jersey", ["Horizon BCBSNJ", "Horizon BCBS", "Horizon"],
     "3 Penn Plaza E", "Newark", "NJ", "07105"),
    ("84980", "Blue Cross and Blue Shield of Texas", ["BCBSTX", "BCBS Texas", "Blue Cross Texas"],
     "1001 E Lookout Dr", "Richardson", "TX", "75082"),
    ("00621", "Blue Cross and Blue Shield of Illinois", ["BCBSIL", "BCBS Illinois", "Blue Cross Illinois"],
     "300 E Randolph St", "Chicago", "IL", "60601"),
    ("00710", "Blue Cross Blue Shield of Michigan", ["BCBSM", "BCBS Michigan", "Blue Cross Michigan"],
     "600 E Lafayette Blvd", "Detroit", "MI", "48226"),
    ("14163", "Wellcare", ["WellCare Health Plans", "Wellcare Medicare"], "8735 Henderson Rd", "Tampa", "FL", "33634"),
    ("26375", "Amerigroup", ["Amerigroup Community Care"], "4425 Corporation Ln", "Virginia Beach", "VA", "23462"),
    ("WLSIM1", "Wearlab Simulated Health Plan", ["Sim Health"], "100 Example Plaza", "Springfield", "IL", "62701"),
    ("WLSIM2", "Wearlab Simulated Medicare Advantage", ["Sim Medicare"], "200 Example Plaza", "Springfield", "IL", "62701"),
    ("WLSIM3", "Wearlab Simulated Medicaid", ["Sim Medicaid"], "300 Example Plaza", "Springfield", "IL", "62701"),
]


def read_zips():
    zips = []
    with open(os.path.join(HERE, "zip_centroids.csv"), encoding="utf-8") as f:
        for row in csv.DictReader(f):
            zips.append((row["zip"], float(row["lat"]), float(row["lng"])))
    return zips


def haversine(lat1, lng1, lat2, lng2):
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lng2 - lng1)
    a = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * EARTH_RADIUS_MILES * math.asin(math.sqrt(a))


def destination(lat, lng, miles, bearing):
    d = miles / EARTH_RADIUS_MILES
    b = math.radians(bearing)
    p1, l1 = math.radians(lat), math.radians(lng)
    p2 = math.asin(math.sin(p1) * math.cos(d) + math.cos(p1) * math.sin(d) * math.cos(b))
    l2 = l1 + math.atan2(math.sin(b) * math.sin(d) * math.cos(p1), math.cos(d) - math.sin(p1) * math.sin(p2))
    return math.degrees(p2), math.degrees(l2)


def nearest_zip(zips, lat, lng):
    return min(zips, key=lambda z: (z[1] - lat) ** 2 + ((z[2] - lng) * math.cos(math.radians(lat))) ** 2)[0]


def build_catalog(analytes):
    by_key = {a["key"]: a for a in analytes}
    labs_out, markers, lab_tests, accounts = [], [], [], []
    for lab in LABS:
        lab_id = lab["id"]
        labs_out.append({k: lab[k] for k in (
            "id", "slug", "name", "first_line_address", "city", "state", "zipcode",
            "collection_methods", "sample_types")})
        available = [a for a in analytes if a["key"] not in lab["missing"]]
        er_counter = [0]
        marker_by_part = {}

        def expected(a, required):
            er_counter[0] += 1
            return {
                "id": lab_id * 100000 + er_counter[0],
                "name": a["name"],
                "slug": a["loinc"]["slug"],
                "lab_id": lab_id,
                "provider_id": lab["code"](1000 + er_counter[0]),
                "loinc": a["loinc"],
                "required": required,
            }

        index = 0
        for a in available:
            index += 1
            base = 6 + stable(a["key"], 40)
            price = round(base * lab["price_factor"], 2)
            m = {
                "id": lab_id * 1000 + index,
                "name": a["name"],
                "slug": a["loinc"]["slug"],
                "description": f"{a['name']} (LOINC {a['loinc']['code']}), {a['sample_type'].replace('_', ' ')} specimen.",
                "lab_id": lab_id,
                "provider_id": lab["code"](index),
                "type": "biomarker",
                "unit": a["unit"],
                "price": f"{price:.2f}",
                "a_la_carte_enabled": a["key"] not in CALCULATED,
                "expected_results": [expected(a, True)],
            }
            markers.append(m)
            marker_by_part[a["key"]] = m
        for key, name, parts in PANELS:
            if any(p not in {a["key"] for a in available} for p in parts):
                continue
            index += 1
            ers = [expected(by_key[p], p not in CALCULATED) for p in parts]
            price = round((10 + len(parts) * 1.5) * lab["price_factor"], 2)
            m = {
                "id": lab_id * 1000 + index,
                "name": name,
                "slug": slugify(name),
                "description": f"{name}: {len(parts)} results.",
                "lab_id": lab_id,
                "provider_id": lab["code"](index),
                "type": "panel",
                "unit": None,
                "price": f"{price:.2f}",
                "a_la_carte_enabled": True,
                "expected_results": ers,
            }
            markers.append(m)
            marker_by_part["panel:" + key] = m
        for slug, name, description, parts, fasting, methods in LAB_TESTS:
            if lab_id not in methods or any(p not in marker_by_part for p in parts):
                continue
            for method in methods[lab_id]:
                ms = [marker_by_part[p] for p in parts]
                price = round(sum(float(m["price"]) for m in ms) * 0.8 + 9, 2)
                samples = sorted({by_key[p]["sample_type"] for p in parts if not p.startswith("panel:")} |
                                 {by_key[k]["sample_type"] for p in parts if p.startswith("panel:")
                                  for k in dict((k, v) for k, _, v in PANELS)[p[6:]]})
                sample_type = SAMPLE_FOR_METHOD.get(method, samples[0] if len(samples) == 1 else "serum")
                test_slug = f"{lab['slug']}_{slug}" + ("" if method == "walk_in_test" else f"_{method}")
                lab_tests.append({
                    "id": str(uuid.uuid5(NAMESPACE, "lab_test/" + test_slug)),
                    "slug": test_slug,
                    "name": name + ("" if method == "walk_in_test" else f" ({method.replace('_', ' ')})"),
                    "description": description,
                    "lab_id": lab_id,
                    "method": method,
                    "sample_type": sample_type,
                    "fasting": fasting,
                    "price": price,
                    "is_active": True,
                    "common_tat_days": 3 if method != "testkit" else 9,
                    "marker_ids": [m["id"] for m in ms],
                })
        accounts.append({
            "id": str(uuid.uuid5(NAMESPACE, f"lab_account/{lab['slug']}")),
            "lab_id": lab_id,
            "name": f"{lab['name']} (default account)",
            "excluded_provider_ids": [],
        })
    # One restricted account: its lab without the sexually transmitted infection screening.
    meridian_sti = [m["provider_id"] for m in markers if m["lab_id"] == 1 and m["slug"] in {
        "hiv_ag_ab_4th_generation", "hepatitis_b_surface_antigen", "hepatitis_c_antibody",
        "rpr_syphilis_screen", "chlamydia_trachomatis_naa", "neisseria_gonorrhoeae_naa"}]
    accounts.append({
        "id": str(uuid.uuid5(NAMESPACE, "lab_account/meridian-restricted")),
        "lab_id": 1,
        "name": "Meridian Clinical Laboratories (wellness account, no STI screening)",
        "excluded_provider_ids": sorted(meridian_sti),
    })
    analytes_out = [{k: a[k] for k in ("key", "loinc", "name", "unit", "sample_type", "result_type",
                                       "ref_low", "ref_high", "normal_text")} for a in analytes]
    return {"labs": labs_out, "lab_accounts": accounts, "analytes": analytes_out,
            "markers": markers, "lab_tests": lab_tests}


def hours_for(n):
    if n % 5 == 4:
        return None
    weekday = "06:30-15:00" if n % 2 else "07:00-16:30"
    return {"monday": weekday, "tuesday": weekday, "wednesday": weekday, "thursday": weekday,
            "friday": weekday, "saturday": "08:00-12:00" if n % 3 == 0 else None, "sunday": None}


def build_sites(zips):
    sites = []
    counters = {lab["id"]: 0 for lab in LABS}
    prefix = {lab["id"]: lab["site_prefix"] for lab in LABS}
    names = {1: "Meridian", 2: "Northfield", 3: "Cascade"}

    def add(lab_id, city, state, lat, lng, street, label):
        counters[lab_id] += 1
        n = counters[lab_id]
        caps = ["appointment_scheduling_with_lab"]
        if n % 2 == 0:
            caps.append("appointment_scheduling_via_service")
        if n % 3 == 0:
            caps.append("stat")
        bills = ["client_bill"]
        if n % 4 != 3:
            bills.append("commercial_insurance")
        if n % 2 == 1:
            bills.append("patient_bill")
        area = AREA_CODES[state]
        sites.append({
            "lab_id": lab_id,
            "site_code": f"{prefix[lab_id]}{n:04d}",
            "metadata": {
                "name": f"{names[lab_id]} Patient Service Center - {label}",
                "state": state,
                "city": city,
                "zip_code": nearest_zip(zips, lat, lng),
                "first_line": f"{100 + stable(f'{lab_id}/{label}/{street}', 2800)} {street}",
                "second_line": f"Suite {100 + stable(f'{lab_id}/{label}', 400)}" if n % 3 != 1 else None,
                "phone_number": f"({area}) 555-01{stable(f'{lab_id}/{label}/p', 100):02d}",
                "fax_number": f"({area}) 555-01{stable(f'{lab_id}/{label}/f', 100):02d}" if n % 2 else None,
                "hours": hours_for(n),
            },
            "capabilities": caps,
            "supported_bill_types": bills,
            "location": {"lat": round(lat, 6), "lng": round(lng, 6)},
        })

    for metro, hoods in METROS.items():
        for i, (city, state, lat, lng, street) in enumerate(hoods):
            for lab in LABS:
                if (i + lab["id"]) % 3 != 0:
                    label = city if city != metro or i == 0 else f"{city} {street}"
                    add(lab["id"], city, state, lat, lng, street, label)
    origin = next(z for z in zips if z[0] == BOUNDARY_ORIGIN_ZIP)
    for lab_id, miles, bearing, label, city, state, street in BOUNDARY_SITES:
        lat, lng = destination(origin[1], origin[2], miles, bearing)
        lat, lng = round(lat, 6), round(lng, 6)
        got = haversine(origin[1], origin[2], lat, lng)
        assert abs(got - miles) < 0.01, (label, got)
        add(lab_id, city, state, lat, lng, street, label)
    return sites


def main():
    analytes = read_analytes()
    catalog = build_catalog(analytes)
    with open(os.path.join(HERE, "catalog.json"), "w", encoding="utf-8") as f:
        json.dump(catalog, f, indent=1, ensure_ascii=True)
        f.write("\n")
    sites = build_sites(read_zips())
    with open(os.path.join(HERE, "psc_sites.json"), "w", encoding="utf-8") as f:
        json.dump(sites, f, indent=1, ensure_ascii=True)
        f.write("\n")
    payors = [{"payor_code": c, "name": n, "aliases": aliases,
               "address": {"first_line": l1, "second_line": None, "city": city, "state": st,
                           "zip": z, "country": "US", "access_notes": None}}
              for c, n, aliases, l1, city, st, z in PAYORS]
    with open(os.path.join(HERE, "payors.json"), "w", encoding="utf-8") as f:
        json.dump(payors, f, indent=1, ensure_ascii=True)
        f.write("\n")
    per_lab = {lab["slug"]: sum(1 for m in catalog["markers"] if m["lab_id"] == lab["id"]) for lab in LABS}
    print(f"markers: {len(catalog['markers'])} {per_lab}; lab tests: {len(catalog['lab_tests'])}; "
          f"sites: {len(sites)}; payors: {len(payors)}")


if __name__ == "__main__":
    main()
