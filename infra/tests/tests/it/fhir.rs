//! The FHIR R4 API (`/fhir/**`) as an EHR integration reads it, on the embedded store and on
//! DynamoDB (moto): the CapabilityStatement, a Patient, Observations of the phone's uploads and
//! sleep sessions (searched by code, category and date, paged by their `next` links), every
//! refusal an `OperationOutcome`, another team's key a 404, and a page's table reads bounded.
//!
//! Every resource answered here is also written to `<target>/fhir-resources/` (the target
//! directory cargo builds into), where `make test` validates each against FHIR R4 with a
//! validator no one here wrote (`infra/tests/fhir/validate.py`).

use http::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::{Answer, Reads, TestApp};
use crate::phone_uploads::ios_watch;

const FHIR_JSON: &str = "application/fhir+json";

async fn fhir(t: &TestApp, path: &str) -> Answer {
    let a = t.get(path).await;
    assert_eq!(
        a.headers.get(http::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()),
        Some(FHIR_JSON),
        "{path}: {}",
        a.body
    );
    keep(&a.body);
    a
}

/// Where the resources answered are kept for the validator: `$CARGO_TARGET_DIR/fhir-resources`,
/// else the workspace's `target/fhir-resources`.
pub(crate) fn kept_dir() -> std::path::PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    target.join("fhir-resources")
}

/// Writes a resource (a Bundle with its entries, an OperationOutcome, ...) for the validator.
pub(crate) fn keep(resource: &Value) {
    let dir = kept_dir();
    std::fs::create_dir_all(&dir).unwrap();
    let kind = resource["resourceType"].as_str().unwrap_or("unknown");
    let name = format!("{kind}-{}.json", uuid::Uuid::new_v4());
    std::fs::write(dir.join(name), serde_json::to_vec_pretty(resource).unwrap()).unwrap();
}

/// The diagnostics of an `OperationOutcome`, asserting it is one.
fn outcome(a: &Answer) -> Vec<String> {
    assert_eq!(a.body["resourceType"], "OperationOutcome", "{}", a.body);
    a.body["issue"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["diagnostics"].as_str().unwrap().to_owned())
        .collect()
}

/// A daily upload of the iOS SDK (`TaggedPayload`, as in `phone_uploads.rs`).
fn ios_daily(data: Vec<Value>) -> Value {
    json!({"stage": "daily", "time_zone": "Europe/Berlin", "provider": "apple_health_kit",
           "data": data, "is_final_chunk": true})
}

async fn upload(t: &TestApp, user: &str, resource: &str, body: Value) {
    let a = t.post(&format!("/v2/timeseries/{user}/{resource}"), body).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
}

/// Heart rate of the watch: `per_day` samples a minute apart on each of `days` days from
/// 2026-11-01.
async fn heart_rate_days(t: &TestApp, user: &str, days: u32, per_day: u32) {
    let mut samples = Vec::new();
    for d in 0..days {
        let day = chrono::NaiveDate::from_ymd_opt(2026, 11, 1).unwrap() + chrono::Duration::days(d.into());
        for m in 0..per_day {
            samples.push(ios_watch(
                &format!("{day}T{:02}:{:02}:00Z", 6 + m / 60, m % 60),
                60.0 + f64::from(m % 10),
            ));
        }
    }
    upload(t, user, "heartrate", ios_daily(samples)).await;
}

/// iOS sleep sessions (the SDK's `SleepPatch`, as `phone_journey.rs` uploads one) of `nights`
/// nights from the night of 2026-11-01 to 02: each in bed 22:30 to 05:30 UTC, 60 minutes deep,
/// 280 light, 60 REM and 10 awake.
fn ios_sleep_nights(nights: u32) -> Value {
    let bundle = "com.apple.health.8C1F2A53-9B0E-4C1D-A6B2-3E7F5D9C0A11";
    let stage = |value: f64, start: String, end: String| {
        json!({"value": value, "start_date": start, "end_date": end, "source_bundle": bundle,
               "product_type": "Watch7,1", "unit": "stage", "metadata": {}})
    };
    let sessions: Vec<Value> = (0..nights)
        .map(|n| {
            let night = chrono::NaiveDate::from_ymd_opt(2026, 11, 1).unwrap() + chrono::Duration::days(n.into());
            let morning = night.succ_opt().unwrap();
            let (e, m) = (|t: &str| format!("{night}T{t}:00Z"), |t: &str| format!("{morning}T{t}:00Z"));
            json!({
                "id": format!("6F1D2C3B-4A59-4E8F-9D10-{n:012X}"), "start_date": e("22:30"),
                "end_date": m("05:30"), "source_bundle": bundle, "product_type": "Watch7,1",
                "heart_rate_maximum": 71, "heart_rate_minimum": 47, "heart_rate_mean": 54,
                "heart_rate": [], "heart_rate_variability": [], "respiratory_rate": [], "wrist_temperature": [],
                "sleep_stages": {
                    "unspecified_sleep_samples": [],
                    "awake_sleep_samples": [stage(2.0, m("02:00"), m("02:10"))],
                    "deep_sleep_samples": [stage(4.0, e("22:40"), e("23:40"))],
                    "light_sleep_samples": [stage(3.0, e("23:40"), m("02:00")), stage(3.0, m("02:10"), m("04:30"))],
                    "rem_sleep_samples": [stage(5.0, m("04:30"), m("05:30"))],
                    "in_bed_sleep_samples": [stage(0.0, e("22:30"), m("05:30"))],
                    "unknown_sleep_samples": []
                },
                "metadata": {}
            })
        })
        .collect();
    json!({"stage": "daily", "time_zone": "Europe/Berlin", "provider": "apple_health_kit",
           "is_final_chunk": true, "data": sessions})
}

/// `nights` of the watch's sleep ([`ios_sleep_nights`]), uploaded as the phone does.
async fn sleep_nights(t: &TestApp, user: &str, nights: u32) {
    let a = t.post(&format!("/v2/summary/sleep/{user}"), ios_sleep_nights(nights)).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
}

/// Entries of a searchset Bundle.
fn entries(bundle: &Value) -> Vec<Value> {
    assert_eq!(bundle["resourceType"], "Bundle", "{bundle}");
    assert_eq!(bundle["type"], "searchset");
    bundle["entry"].as_array().unwrap().iter().map(|e| e["resource"].clone()).collect()
}

fn next_link(bundle: &Value) -> Option<String> {
    bundle["link"]
        .as_array()?
        .iter()
        .find(|l| l["relation"] == "next")
        .map(|l| l["url"].as_str().unwrap().to_owned())
}

/// The path and query of a link the server gave (its base is the local stack's host).
fn path_of(url: &str) -> String {
    let at = url.find("/fhir/").expect("a link under /fhir");
    url[at..].to_owned()
}

async fn the_capability_statement_says_what_is_served(t: TestApp) {
    let a = fhir(&t, "/fhir/metadata").await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.body["resourceType"], "CapabilityStatement");
    assert_eq!(a.body["fhirVersion"], "4.0.1");
    let served: Vec<(String, Vec<String>)> = a.body["rest"][0]["resource"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let i =
                r["interaction"].as_array().unwrap().iter().map(|i| i["code"].as_str().unwrap().to_owned());
            (r["type"].as_str().unwrap().to_owned(), i.collect())
        })
        .collect();
    assert_eq!(
        served,
        vec![
            ("Patient".into(), vec!["read".into()]),
            ("Observation".into(), vec!["search-type".into()]),
            ("DiagnosticReport".into(), vec!["read".into(), "search-type".into()]),
            ("ServiceRequest".into(), vec!["read".into()]),
            ("DocumentReference".into(), vec!["read".into()]),
        ]
    );
    // The codes a search takes are every code the mapper emits, sleep among them.
    let code_param = a.body["rest"][0]["resource"][1]["searchParam"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "code")
        .unwrap()["documentation"]
        .as_str()
        .unwrap()
        .to_owned();
    for c in wearlab_domain::fhir::codes::codes() {
        assert!(code_param.contains(c.loinc.code), "{} in {code_param}", c.loinc.code);
    }
    assert!(code_param.contains("93832-4"), "{code_param}");
    // Resting heart rate (beside heart rate's 8867-4) and body height.
    assert!(code_param.contains("40443-4") && code_param.contains("8302-2"), "{code_param}");
    assert_eq!(code_param.matches("8867-4").count(), 1, "each code once: {code_param}");
}

async fn a_patient_carries_its_identifiers(t: TestApp) {
    let user = t.create_user("ehr-patient-1").await;
    let a = fhir(&t, &format!("/fhir/Patient/{user}")).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(a.body["resourceType"], "Patient");
    assert_eq!(a.body["id"], user.as_str());
    let ids: Vec<(String, String)> = a.body["identifier"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["system"].as_str().unwrap().to_owned(), i["value"].as_str().unwrap().to_owned()))
        .collect();
    assert_eq!(ids[0], ("urn:wearlab:user_id".into(), user.clone()));
    assert_eq!(ids[1], (format!("urn:wearlab:team:{}:client_user_id", t.team), "ehr-patient-1".into()));
    assert!(a.body.get("name").is_none(), "no demographics stored: {}", a.body);
}

async fn wearable_data_reads_as_coded_observations(t: TestApp) {
    let user = t.create_user("ehr-patient-2").await;
    upload(
        &t,
        &user,
        "heartrate",
        ios_daily(vec![
            ios_watch("2026-11-20T08:00:00Z", 60.0),
            ios_watch("2026-11-20T08:01:00Z", 64.0),
            ios_watch("2026-11-20T09:00:00Z", 71.0),
        ]),
    )
    .await;
    let cuff = |value: f64, unit: &str| {
        json!({"value": value, "start_date": "2026-11-20T07:30:00Z", "end_date": "2026-11-20T07:30:00Z",
               "type": "cuff", "unit": unit})
    };
    upload(
        &t,
        &user,
        "blood_pressure",
        json!({"stage": "daily", "time_zone": "Europe/Berlin", "provider": "omron_ble",
               "data": [{"systolic": cuff(128.0, "mmHg"), "diastolic": cuff(82.0, "mmHg")}], "is_final_chunk": true}),
    )
    .await;
    let a =
        fhir(&t, &format!("/fhir/Observation?subject=Patient/{user}&date=ge2026-11-19&date=lt2026-11-22"))
            .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let found = entries(&a.body);
    assert_eq!(found.len(), 2, "{}", a.body);
    let hr = &found[0];
    assert_eq!(
        hr["code"]["coding"][0],
        json!({"system": "http://loinc.org", "code": "8867-4", "display": "Heart rate"})
    );
    assert_eq!(hr["category"][0]["coding"][0]["code"], "vital-signs");
    assert_eq!(hr["meta"]["profile"][0], "http://hl7.org/fhir/StructureDefinition/heartrate");
    assert_eq!(hr["meta"]["source"], "urn:wearlab:provider:apple_health_kit");
    assert_eq!(hr["subject"]["reference"], format!("Patient/{user}"));
    assert_eq!(
        hr["valueQuantity"],
        json!({"value": 65.0, "unit": "beats/minute", "system": "http://unitsofmeasure.org", "code": "/min"})
    );
    assert_eq!(
        hr["effectivePeriod"],
        json!({"start": "2026-11-20T08:00:00Z", "end": "2026-11-20T09:00:00Z"})
    );
    assert!(hr["device"]["display"].as_str().unwrap().contains("watch"), "{hr}");
    let bp = &found[1];
    assert_eq!(bp["code"]["coding"][0]["code"], "85354-9");
    assert_eq!(bp["meta"]["source"], "urn:wearlab:provider:omron_ble");
    assert!(bp.get("valueQuantity").is_none());
    let components: Vec<(String, f64, String)> = bp["component"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["code"]["coding"][0]["code"].as_str().unwrap().to_owned(),
                c["valueQuantity"]["value"].as_f64().unwrap(),
                c["valueQuantity"]["code"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        components,
        vec![("8480-6".into(), 128.0, "mm[Hg]".into()), ("8462-4".into(), 82.0, "mm[Hg]".into())]
    );
    assert_eq!(bp["effectiveDateTime"], "2026-11-20T07:30:00Z");

    // By code (with or without its system), by category, by a date that holds none.
    let by_code =
        |q: &str| format!("/fhir/Observation?subject={user}&date=ge2026-11-19&date=lt2026-11-22&{q}");
    for (q, codes) in [
        ("code=http://loinc.org|85354-9", vec!["85354-9"]),
        ("code=8867-4,85354-9", vec!["8867-4", "85354-9"]),
        ("category=vital-signs", vec!["8867-4", "85354-9"]),
        ("category=activity", vec![]),
        ("code=http://snomed.info/sct|8867-4", vec![]),
    ] {
        let a = fhir(&t, &by_code(q)).await;
        assert_eq!(a.status, StatusCode::OK, "{q}: {}", a.body);
        let got: Vec<String> = entries(&a.body)
            .iter()
            .map(|o| o["code"]["coding"][0]["code"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(got, codes, "{q}");
    }
    let a = fhir(&t, &format!("/fhir/Observation?subject={user}&date=ge2026-11-21")).await;
    assert_eq!(entries(&a.body).len(), 0, "{}", a.body);

    // Each read is in the team's audit log of PHI access, under the patient it named.
    let log = t.get(&format!("/v2/team/audit_log?user_id={user}")).await;
    assert_eq!(log.status, StatusCode::OK, "{}", log.body);
    let fhir_reads =
        log.body["data"].as_array().unwrap().iter().filter(|e| e["route"] == "/fhir/Observation").count();
    assert_eq!(fhir_reads, 7, "{}", log.body);
}

async fn pages_follow_their_next_links_to_the_last(t: TestApp) {
    let user = t.create_user("ehr-patient-3").await;
    heart_rate_days(&t, &user, 5, 3).await;
    let mut path = Some(format!(
        "/fhir/Observation?subject=Patient/{user}&code=8867-4&date=ge2026-11-01&date=lt2026-12-01&_count=2"
    ));
    let mut pages = Vec::new();
    // At most 10 pages: 5 days in pages of 2 are 3.
    for _ in 0..10 {
        let Some(p) = path.take() else { break };
        let a = fhir(&t, &p).await;
        assert_eq!(a.status, StatusCode::OK, "{}", a.body);
        let days: Vec<String> = entries(&a.body)
            .iter()
            .map(|o| o["effectivePeriod"]["start"].as_str().unwrap()[..10].to_owned())
            .collect();
        pages.push(days);
        path = next_link(&a.body).map(|u| path_of(&u));
    }
    assert_eq!(
        pages,
        vec![
            vec!["2026-11-01".to_owned(), "2026-11-02".into()],
            vec!["2026-11-03".into(), "2026-11-04".into()],
            vec!["2026-11-05".into()],
        ]
    );
}

async fn every_refusal_is_an_operation_outcome(t: TestApp) {
    let user = t.create_user("ehr-patient-4").await;
    let other = t.other_team_key().await;
    let search = format!("/fhir/Observation?subject=Patient/{user}");
    for (path, key, status, says) in [
        (format!("/fhir/Patient/{user}"), None, StatusCode::UNAUTHORIZED, "x-service-api-key"),
        (format!("/fhir/Patient/{user}"), Some(other.as_str()), StatusCode::NOT_FOUND, "not found"),
        (search.clone(), Some(other.as_str()), StatusCode::NOT_FOUND, "not found"),
        ("/fhir/Patient/not-a-user".into(), Some(t.key.as_str()), StatusCode::NOT_FOUND, "not found"),
        (format!("{search}&_sort=date"), Some(t.key.as_str()), StatusCode::BAD_REQUEST, "_sort"),
        (format!("{search}&date=sa2026-11-01"), Some(t.key.as_str()), StatusCode::BAD_REQUEST, "prefix"),
        (format!("{search}&_count=1000"), Some(t.key.as_str()), StatusCode::BAD_REQUEST, "_count"),
        (format!("{search}&_cursor=nonsense"), Some(t.key.as_str()), StatusCode::BAD_REQUEST, "_cursor"),
        ("/fhir/Observation?code=8867-4".into(), Some(t.key.as_str()), StatusCode::BAD_REQUEST, "subject"),
        ("/fhir/Encounter".into(), Some(t.key.as_str()), StatusCode::NOT_FOUND, "metadata"),
    ] {
        let a = t.send(Method::GET, &path, key, None).await;
        assert_eq!(a.status, status, "{path}: {}", a.body);
        assert_eq!(
            a.headers.get(http::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()),
            Some(FHIR_JSON),
            "{path}"
        );
        keep(&a.body);
        let said = outcome(&a).join(" ");
        assert!(said.contains(says), "{path}: {said}");
    }
    let a = t.send(Method::POST, &format!("/fhir/Patient/{user}"), Some(&t.key), Some("{}")).await;
    assert_eq!(a.status, StatusCode::METHOD_NOT_ALLOWED, "{}", a.body);
    outcome(&a);

    // A deleted user is gone from FHIR at once, its data with it.
    heart_rate_days(&t, &user, 1, 2).await;
    assert_eq!(t.delete(&format!("/v2/user/{user}")).await.status, StatusCode::OK);
    for path in [format!("/fhir/Patient/{user}"), format!("{search}&date=ge2026-11-01")] {
        let a = fhir(&t, &path).await;
        assert_eq!(a.status, StatusCode::NOT_FOUND, "{path}: {}", a.body);
        outcome(&a);
    }
}

/// The minutes of a summary's seconds field, as the Observation carries them.
fn minutes(summary: &Value, field: &str) -> f64 {
    (summary[field].as_f64().unwrap() / 60.0 * 100.0).round() / 100.0
}

/// `found`, the sleep Observations of a search, are the `stored` sleep sessions of `provider`
/// (as `GET /v2/summary/sleep` answers them), in the same order: each over its time in bed,
/// its value the time asleep in minutes, its stages components (light, deep and REM by their
/// LOINC codes; awake by its text, as LOINC has no code for it).
pub(crate) fn assert_sleep_observations(found: &[Value], stored: &[Value], provider: &str) {
    assert_eq!(found.len(), stored.len(), "one Observation per session: {found:?}");
    assert!(!found.is_empty());
    for (o, s) in found.iter().zip(stored) {
        assert_eq!(
            o["code"]["coding"][0],
            json!({"system": "http://loinc.org", "code": "93832-4", "display": "Sleep duration"})
        );
        assert_eq!(o["category"][0]["coding"][0]["code"], "activity");
        assert!(o["meta"].get("profile").is_none(), "no vital-signs profile applies: {o}");
        assert_eq!(o["meta"]["source"], format!("urn:wearlab:provider:{provider}"));
        let status = if s["type"] == "unknown" { "preliminary" } else { "final" };
        assert_eq!(o["status"], status, "{o}");
        assert_eq!(
            o["effectivePeriod"],
            json!({"start": s["bedtime_start"], "end": s["bedtime_stop"]}),
            "{o}"
        );
        assert_eq!(o["valueQuantity"]["code"], "min", "{o}");
        assert_eq!(o["valueQuantity"]["value"].as_f64(), Some(minutes(s, "total")), "{o}");
        let components: Vec<(Option<&str>, &str, f64)> = o["component"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                assert_eq!(c["valueQuantity"]["code"], "min", "{c}");
                (
                    c["code"]["coding"][0]["code"].as_str(),
                    c["code"]["text"].as_str().unwrap(),
                    c["valueQuantity"]["value"].as_f64().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            components,
            vec![
                (Some("93830-8"), "Light sleep duration", minutes(s, "light")),
                (Some("93831-6"), "Deep sleep duration", minutes(s, "deep")),
                (Some("93829-0"), "REM sleep duration", minutes(s, "rem")),
                (None, "Awake duration within the sleep session", minutes(s, "awake")),
            ],
            "{o}"
        );
        assert!(o["component"][3]["code"].get("coding").is_none(), "{o}");
    }
}

async fn sleep_sessions_read_as_observations_with_their_stages(t: TestApp) {
    let user = t.create_user("ehr-sleep").await;
    sleep_nights(&t, &user, 2).await;
    let stored = t.get(&format!("/v2/summary/sleep/{user}?start_date=2026-10-30&end_date=2026-11-10")).await;
    assert_eq!(stored.status, StatusCode::OK, "{}", stored.body);
    let stored = stored.body["sleep"].as_array().unwrap().clone();
    assert_eq!(stored.len(), 2, "{stored:?}");

    let search =
        |q: &str| format!("/fhir/Observation?subject=Patient/{user}&date=ge2026-11-01&date=lt2026-11-10&{q}");
    let a = fhir(&t, &search("code=http://loinc.org|93832-4")).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let found = entries(&a.body);
    assert_eq!(found.len(), 2, "one Observation per session: {}", a.body);
    assert_sleep_observations(&found, &stored, "apple_health_kit");
    // Seven hours in bed, 400 minutes of them asleep: the value is the time asleep.
    assert_eq!(
        found[0]["valueQuantity"],
        json!({"value": 400.0, "unit": "min", "system": "http://unitsofmeasure.org", "code": "min"})
    );
    assert_ne!(found[0]["id"], found[1]["id"]);

    // By category; and one a page, following the next link.
    let a = fhir(&t, &search("category=activity")).await;
    assert_eq!(entries(&a.body).len(), 2, "{}", a.body);
    let a = fhir(&t, &search("category=vital-signs")).await;
    assert_eq!(entries(&a.body).len(), 0, "{}", a.body);
    let a = fhir(&t, &search("code=93832-4&_count=1")).await;
    assert_eq!(entries(&a.body)[0]["id"], found[0]["id"]);
    let next = next_link(&a.body).expect("a second page");
    let a = fhir(&t, &path_of(&next)).await;
    assert_eq!(entries(&a.body)[0]["id"], found[1]["id"], "{}", a.body);

    // In the patient's everything, after the Patient.
    let a = fhir(&t, &format!("/fhir/Patient/{user}/$everything?start=2026-11-01&end=2026-11-10")).await;
    let ids: Vec<&str> =
        a.body["entry"].as_array().unwrap().iter().map(|e| e["resource"]["id"].as_str().unwrap()).collect();
    assert_eq!(ids, vec![user.as_str(), found[0]["id"].as_str().unwrap(), found[1]["id"].as_str().unwrap()]);

    // Another team's key sees none of it.
    let other = t.other_team_key().await;
    let a = t.send(Method::GET, &search("code=93832-4"), Some(&other), None).await;
    assert_eq!(a.status, StatusCode::NOT_FOUND, "{}", a.body);
    outcome(&a);
}

async fn a_lab_orders_results_read_as_a_diagnostic_report(t: TestApp) {
    let (user, order) = crate::lab::place_order(&t, "ehr-lab-1").await;
    let order_id = order["id"].as_str().unwrap().to_owned();
    let a = t.patch(&format!("/v2/user/{user}/info"), crate::lab::info_body()).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    // Before the lab reported: the order is there, its report is not.
    let a = fhir(&t, &format!("/fhir/ServiceRequest/{order_id}")).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(a.body["status"], "active");
    assert_eq!(a.body["subject"]["reference"], format!("Patient/{user}"));
    assert_eq!(fhir(&t, &format!("/fhir/DiagnosticReport/{order_id}")).await.status, StatusCode::NOT_FOUND);
    t.clock.advance(chrono::Duration::days(4));
    let wire = t.get(&format!("/v3/order/{order_id}/result")).await;
    assert_eq!(wire.status, StatusCode::OK, "{}", wire.body);

    let a = fhir(&t, &format!("/fhir/DiagnosticReport/{order_id}")).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let report = &a.body;
    assert_eq!(report["basedOn"][0]["reference"], format!("ServiceRequest/{order_id}"));
    assert_eq!(report["category"][0]["coding"][0]["code"], "LAB");
    let results = wire.body["results"].as_array().unwrap();
    let contained = report["contained"].as_array().unwrap();
    assert_eq!(contained.len(), results.len());
    assert_eq!(report["result"].as_array().unwrap().len(), results.len());
    for (o, r) in contained.iter().zip(results) {
        assert_eq!(o["code"]["coding"][0]["system"], "http://loinc.org");
        assert_eq!(o["code"]["coding"][0]["code"], r["loinc"], "{o}");
        if r["type"] == "numeric" {
            assert_eq!(o["valueQuantity"]["value"], r["value"], "{o}");
            assert_eq!(o["valueQuantity"]["unit"], r["unit"], "{o}");
        } else {
            assert_eq!(o["valueString"], r["result"], "{o}");
        }
        if let Some(lo) = r["min_range_value"].as_f64() {
            assert_eq!(o["referenceRange"][0]["low"]["value"].as_f64(), Some(lo), "{o}");
        }
        let flag = o["interpretation"][0]["coding"][0]["code"].as_str().unwrap();
        let expected = if r["is_above_max_range"] == true {
            "H"
        } else if r["is_below_min_range"] == true {
            "L"
        } else {
            match r["interpretation"].as_str().unwrap() {
                "critical" => "AA",
                "abnormal" => "A",
                _ => "N",
            }
        };
        assert_eq!(flag, expected, "{o}");
    }
    let a = fhir(&t, &format!("/fhir/DiagnosticReport?subject=Patient/{user}")).await;
    assert_eq!(entries(&a.body).len(), 1, "{}", a.body);
    let a = fhir(&t, &format!("/fhir/DocumentReference/{order_id}")).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let url = a.body["content"][0]["attachment"]["url"].as_str().unwrap();
    let pdf = t.send(Method::GET, &path_of_api(url), Some(&t.key), None).await;
    assert_eq!(pdf.status, StatusCode::OK, "the requisition is where the reference says");
    // The demographics the team stored for the order.
    let a = fhir(&t, &format!("/fhir/Patient/{user}")).await;
    assert!(a.body["name"][0]["family"].is_string(), "{}", a.body);
    assert!(a.body["birthDate"].is_string(), "{}", a.body);
    // Another team sees none of it.
    let other = t.other_team_key().await;
    for path in [
        format!("/fhir/DiagnosticReport/{order_id}"),
        format!("/fhir/ServiceRequest/{order_id}"),
        format!("/fhir/DocumentReference/{order_id}"),
        format!("/fhir/DiagnosticReport?subject=Patient/{user}"),
    ] {
        let a = t.send(Method::GET, &path, Some(&other), None).await;
        assert_eq!(a.status, StatusCode::NOT_FOUND, "{path}: {}", a.body);
        outcome(&a);
    }
}

/// The path of an API address (`http://host/v3/...` -> `/v3/...`).
fn path_of_api(url: &str) -> String {
    crate::lab::path_of(url)
}

async fn everything_of_a_patient_pages_through_its_resources(t: TestApp) {
    let (user, order) = crate::lab::place_order(&t, "ehr-everything").await;
    heart_rate_days(&t, &user, 3, 2).await;
    let order_id = order["id"].as_str().unwrap().to_owned();
    let mut path = Some(format!("/fhir/Patient/{user}/$everything?start=2026-02-01&end=2026-12-01&_count=2"));
    let mut found: Vec<(String, String)> = Vec::new();
    for _ in 0..20 {
        let Some(p) = path.take() else { break };
        let a = fhir(&t, &p).await;
        assert_eq!(a.status, StatusCode::OK, "{}", a.body);
        found.extend(
            entries(&a.body).iter().map(|r| {
                (r["resourceType"].as_str().unwrap().to_owned(), r["id"].as_str().unwrap().to_owned())
            }),
        );
        path = next_link(&a.body).map(|u| path_of(&u));
    }
    let kinds: Vec<&str> = found.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        kinds,
        vec!["Patient", "Observation", "Observation", "Observation", "ServiceRequest", "DocumentReference"],
        "{found:?}"
    );
    assert_eq!(found[0].1, user);
    assert_eq!(found[4].1, order_id);
    // A range that holds neither the data nor the order: the Patient alone.
    let a = fhir(&t, &format!("/fhir/Patient/{user}/$everything?start=2025-01-01&end=2025-01-31")).await;
    assert_eq!(entries(&a.body).len(), 1, "{}", a.body);
    let other = t.other_team_key().await;
    let a = t.send(Method::GET, &format!("/fhir/Patient/{user}/$everything"), Some(&other), None).await;
    assert_eq!(a.status, StatusCode::NOT_FOUND, "{}", a.body);
}

/// iOS activity days (`ActivityPatch.Activity`, as `phone_summaries.rs` uploads one) of
/// 2026-11-20 to 22, each with HealthKit's resting heart rate `resting` + the day's index, but the
/// 21st, which has no heart rate at all.
fn ios_activity_days(resting: f64) -> Value {
    let days: Vec<Value> = [("2026-11-20", true), ("2026-11-21", false), ("2026-11-22", true)]
        .iter()
        .enumerate()
        .map(|(i, (date, with_hr))| {
            let mut summary = json!({"calendar_date": date, "active_energy_burned_sum": 512.0,
                "basal_energy_burned_sum": 1688.0, "steps_sum": 10412, "exercise_time": 42});
            if *with_hr {
                summary["max_heart_rate"] = json!(151);
                summary["min_heart_rate"] = json!(48);
                summary["avg_heart_rate"] = json!(74);
                summary["resting_heart_rate"] = json!(resting + i as f64);
            }
            json!({"day_summary": summary, "active_energy_burned": [], "basal_energy_burned": [],
                   "steps": [], "floors_climbed": [], "distance_walking_running": [], "vo2_max": []})
        })
        .collect();
    ios_daily(days)
}

/// The phone's daily resting heart rate is kept in the activity summary (`heart_rate`, read back
/// over the data API) and served as a heart rate Observation of its day that also carries LOINC's
/// resting heart rate code: found by either code, by category and date, in `$everything`, and
/// not by another team.
async fn a_days_resting_heart_rate_reads_back_and_as_an_observation(t: TestApp) {
    let user = t.create_user("ehr-resting").await;
    let a = t.post(&format!("/v2/summary/activity/{user}"), ios_activity_days(55.0)).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let a = t.get(&format!("/v2/summary/activity/{user}?start_date=2026-11-20&end_date=2026-11-22")).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let hr: Vec<Value> =
        a.body["activity"].as_array().unwrap().iter().map(|d| d["heart_rate"].clone()).collect();
    assert_eq!(
        hr,
        vec![
            json!({"avg_bpm": 74.0, "min_bpm": 48.0, "max_bpm": 151.0, "resting_bpm": 55.0}),
            Value::Null,
            json!({"avg_bpm": 74.0, "min_bpm": 48.0, "max_bpm": 151.0, "resting_bpm": 57.0}),
        ]
    );

    let search =
        |q: &str| format!("/fhir/Observation?subject=Patient/{user}&date=ge2026-11-19&date=lt2026-11-23&{q}");
    let a = fhir(&t, &search("code=http://loinc.org|40443-4")).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let found = entries(&a.body);
    let days: Vec<(&str, f64)> = found
        .iter()
        .map(|o| (o["effectiveDateTime"].as_str().unwrap(), o["valueQuantity"]["value"].as_f64().unwrap()))
        .collect();
    assert_eq!(days, [("2026-11-20", 55.0), ("2026-11-22", 57.0)], "the 21st has none");
    let o = &found[0];
    let codings: Vec<&str> =
        o["code"]["coding"].as_array().unwrap().iter().map(|c| c["code"].as_str().unwrap()).collect();
    assert_eq!(codings, ["8867-4", "40443-4"], "the heart rate profile's code, then resting heart rate");
    assert_eq!(o["code"]["text"], "Resting heart rate");
    assert_eq!(o["meta"]["profile"][0], "http://hl7.org/fhir/StructureDefinition/heartrate");
    assert_eq!(o["meta"]["source"], "urn:wearlab:provider:apple_health_kit");
    assert_eq!(o["valueQuantity"]["code"], "/min");
    assert_eq!(o["valueQuantity"]["system"], "http://unitsofmeasure.org");
    assert_eq!(o["category"][0]["coding"][0]["code"], "vital-signs");
    // 8867-4 and the vital-signs category find it too; a day range that holds only the 22nd, one.
    for (q, n) in [("code=8867-4", 2), ("category=vital-signs", 2), ("category=activity", 0)] {
        let a = fhir(&t, &search(q)).await;
        assert_eq!(entries(&a.body).len(), n, "{q}: {}", a.body);
    }
    let a = fhir(
        &t,
        &format!("/fhir/Observation?subject=Patient/{user}&code=40443-4&date=ge2026-11-21&date=le2026-11-22"),
    )
    .await;
    assert_eq!(entries(&a.body).len(), 1, "{}", a.body);

    let a = fhir(&t, &format!("/fhir/Patient/{user}/$everything?start=2026-11-20&end=2026-11-22")).await;
    let resting = entries(&a.body).iter().filter(|r| r["code"]["coding"][1]["code"] == "40443-4").count();
    assert_eq!(resting, 2, "{}", a.body);

    let other = t.other_team_key().await;
    let a = t.send(Method::GET, &search("code=40443-4"), Some(&other), None).await;
    assert_eq!(a.status, StatusCode::NOT_FOUND, "{}", a.body);
    keep(&a.body);
}

crate::helpers::on_both_adapters!(
    a_days_resting_heart_rate_reads_back_and_as_an_observation,
    everything_of_a_patient_pages_through_its_resources,
    the_capability_statement_says_what_is_served,
    a_lab_orders_results_read_as_a_diagnostic_report,
    a_patient_carries_its_identifiers,
    wearable_data_reads_as_coded_observations,
    sleep_sessions_read_as_observations_with_their_stages,
    pages_follow_their_next_links_to_the_last,
    every_refusal_is_an_operation_outcome,
);

/// A page of 100 Observations costs the same table reads for a user with 120 days of heart rate
/// and 120 nights of sleep as for one with 300 of each (on DynamoDB, counted at the table port:
/// moto).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_of_observations_costs_bounded_reads_on_dynamodb() {
    let (t, table) = crate::users_count::moto().await;
    let mut costs = Vec::new();
    for (name, days) in [("ehr-reads-1", 120), ("ehr-reads-2", 300)] {
        let user = t.create_user(name).await;
        heart_rate_days(&t, &user, days, 2).await;
        sleep_nights(&t, &user, days).await;
        let mut cost = Vec::new();
        for code in ["8867-4", "93832-4"] {
            table.take_reads();
            let a = fhir(
                &t,
                &format!("/fhir/Observation?subject=Patient/{user}&code={code}&date=ge2026-11-01&date=lt2027-11-01&_count=100"),
            )
            .await;
            assert_eq!(a.status, StatusCode::OK, "{}", a.body);
            assert_eq!(entries(&a.body).len(), 100, "{code}");
            assert!(next_link(&a.body).is_some(), "{code}");
            cost.push(table.take_reads());
        }
        costs.push(cost);
    }
    assert_eq!(costs[0], costs[1], "the same reads whatever the user holds");
    // Heart rate: the user (the key's team is cached), and two queries of day items: the 100
    // days, then the 100th's end and the first item of the 101st, which shows the 100th is whole.
    assert_eq!(costs[0][0], Reads { gets: 1, queries: 2, items: 102 });
    // Sleep: the user, and one query of the 100 sessions' summaries.
    assert_eq!(costs[0][1], Reads { gets: 1, queries: 1, items: 100 });
}

/// `docs/FHIR.md`'s code table lists exactly the codes the mapper emits, each with its unit,
/// category, profile and how a day's value is made.
#[test]
fn the_code_table_in_the_docs_is_what_the_mapper_emits() {
    use wearlab_domain::fhir::codes::{Aggregate, Reading, SleepStage, codes};
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/FHIR.md")).unwrap();
    let documented: Vec<Vec<String>> = doc
        .lines()
        .filter(|l| l.starts_with("| Observation |") || l.starts_with("| component |"))
        .map(|l| l.split('|').map(|c| c.trim().trim_matches('`').to_owned()).skip(1).take(8).collect())
        .collect();
    let mut emitted: Vec<Vec<String>> = Vec::new();
    for c in codes() {
        let (value, part) = match c.reading {
            Reading::Samples(_) if c.components.is_some() => ("components", "mean"),
            Reading::Samples(Aggregate::Mean) => ("mean", "mean"),
            Reading::Samples(Aggregate::Sum) => ("sum", "sum"),
            Reading::SleepSessions => ("time asleep", "time in stage"),
            // The summary field it reads.
            Reading::DayValues(v) => (v.field(), ""),
        };
        let row = |kind: &str, code: &str, display: &str, category: &str, profile: &str, value: &str| {
            vec![
                kind.to_owned(),
                c.resource.as_str().to_owned(),
                code.to_owned(),
                display.to_owned(),
                c.ucum.to_owned(),
                category.to_owned(),
                profile.to_owned(),
                value.to_owned(),
            ]
        };
        let (category, profile) = (c.category.code(), c.profile.unwrap_or_default());
        emitted.push(row("Observation", c.loinc.code, c.loinc.display, category, profile, value));
        for also in c.also {
            emitted.push(row("Observation", also.code, also.display, category, profile, value));
        }
        if let Some((systolic, diastolic)) = &c.components {
            for p in [systolic, diastolic] {
                emitted.push(row("component", p.code, p.display, "", "", part));
            }
        }
        if c.reading == Reading::SleepSessions {
            for stage in SleepStage::ALL {
                let code = stage.loinc().map_or("(none)", |l| l.code);
                emitted.push(row("component", code, stage.text(), "", "", part));
            }
        }
    }
    assert_eq!(documented, emitted, "docs/FHIR.md's code table vs shared/domain/src/fhir/codes.rs");
}

/// Every timeseries the simulated providers pull reads as coded Observations (and each is kept
/// for the validator): blood pressure, temperature, body composition, glucose, heart rate and
/// its variability, breathing, oxygen, steps and energy; and their sleep sessions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_simulated_providers_data_reads_as_observations_of_every_code() {
    let t = TestApp::embedded().await;
    let user = t.create_user("ehr-sim").await;
    // The providers the simulator connects as demos.
    for provider in ["fitbit", "freestyle_libre", "apple_health_kit"] {
        crate::linking::connect_demo(&t, &user, provider).await;
    }
    let stack = t.stack.as_ref().unwrap();
    for _ in 0..50 {
        if stack.run_pulls_once().await.unwrap() == 0 {
            break;
        }
    }
    let mut codes = std::collections::BTreeSet::new();
    let mut providers = std::collections::BTreeSet::new();
    let mut path = Some(format!(
        "/fhir/Observation?subject=Patient/{user}&date=ge2025-03-02&date=le2026-03-01&_count=100"
    ));
    let mut pages = 0;
    while let Some(p) = path.take() {
        pages += 1;
        assert!(pages <= 100, "bounded");
        let a = fhir(&t, &p).await;
        assert_eq!(a.status, StatusCode::OK, "{}", a.body);
        for o in entries(&a.body) {
            for c in o["code"]["coding"].as_array().unwrap() {
                codes.insert(c["code"].as_str().unwrap().to_owned());
            }
            providers.insert(o["meta"]["source"].as_str().unwrap().to_owned());
        }
        path = next_link(&a.body).map(|u| path_of(&u));
    }
    let emitted: std::collections::BTreeSet<String> = wearlab_domain::fhir::codes::codes()
        .iter()
        .flat_map(|c| std::iter::once(&c.loinc).chain(c.also))
        .map(|l| l.code.to_owned())
        // The simulator gives no BMI, no measured height, and blood pressure without its
        // diastolic, which the blood pressure panel needs (the phone's cuffs give both: above).
        .filter(|c| c != "39156-5" && c != "85354-9" && c != "8302-2")
        .collect();
    assert_eq!(codes, emitted, "{providers:?}");
    assert_eq!(providers.len(), 3, "{providers:?}");
}
