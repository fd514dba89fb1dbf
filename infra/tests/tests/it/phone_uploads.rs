//! The mobile SDKs' timeseries uploads (`POST /v2/timeseries/{user_id}/{resource}`) stored with
//! their source, merged, deduplicated, announced and read back (`GET
//! /v2/timeseries/{user_id}/{resource}/grouped`), on the embedded store and on DynamoDB (moto).
//!
//! Every body is in the shape the named SDK source builds: iOS `tryVital/vital-ios`
//! (`TaggedPayload` encoded with snake-case keys and ISO 8601 dates,
//! `Sources/VitalCore/Core/Extensions/APIClient+Extensions.swift`, nil optionals left out;
//! samples from `LocalQuantitySample(_:unit:)` in
//! `Sources/VitalHealthKit/HealthKit/Models/CoreModels+Extensions.swift`) and Android
//! `tryVital/vital-android` (`TimeseriesPayload` through Moshi, nulls left out, no
//! `is_final_chunk`), as in `shared/domain/src/pipeline/phone/tests.rs`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use http::{Method, StatusCode};
use serde_json::{Value, json};
use wearlab_domain::Deps;
use wearlab_domain::ports::{
    Add, Condition, Item, Key, Page, Query, RawItem, RawPage, StoreError, Table, TextItem, WriteOp,
};
use wearlab_embedded::MemoryBus;

use crate::helpers::{TestApp, error_locs};

/// The app with a bus of its own, so the events are read the same way on both adapters.
struct Phone {
    t: TestApp,
    bus: Arc<MemoryBus>,
}

fn phone(t: TestApp) -> Phone {
    let bus = Arc::new(MemoryBus::new());
    let deps = Deps { bus: bus.clone(), ..t.deps.clone() };
    Phone { t: t.with_deps(deps), bus }
}

impl Phone {
    async fn user(&self, name: &str) -> String {
        self.t.create_user(name).await
    }

    async fn upload(&self, user: &str, resource: &str, body: Value) -> crate::helpers::Answer {
        self.t.post(&format!("/v2/timeseries/{user}/{resource}"), body).await
    }

    /// Uploads and expects a 200.
    async fn stored(&self, user: &str, resource: &str, body: Value) -> Value {
        let a = self.upload(user, resource, body).await;
        assert_eq!(a.status, StatusCode::OK, "{}", a.body);
        a.body
    }

    /// `GET .../grouped` of 2026-11-19 to 2026-11-22: the groups of `provider`.
    async fn read(&self, user: &str, resource: &str, provider: &str) -> Vec<Value> {
        let a = self
            .t
            .get(&format!(
                "/v2/timeseries/{user}/{resource}/grouped?start_date=2026-11-19&end_date=2026-11-22"
            ))
            .await;
        assert_eq!(a.status, StatusCode::OK, "{}", a.body);
        a.body["groups"][provider].as_array().cloned().unwrap_or_default()
    }

    /// The data events published so far (`daily.data.*`, `historical.data.*`), as (type, data).
    fn data_events(&self) -> Vec<(String, Value)> {
        self.bus
            .published()
            .into_iter()
            .filter(|e| e.event_type.contains(".data."))
            .map(|e| (e.event_type, e.data))
            .collect()
    }
}

/// A group as (source type, app, samples as (timestamp, value)).
type Group = (String, Option<String>, Vec<(String, f64)>);

/// Each group, by source type.
fn groups(groups: &[Value]) -> Vec<Group> {
    let mut out: Vec<_> = groups
        .iter()
        .map(|g| {
            let samples = g["data"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| (s["timestamp"].as_str().unwrap().to_owned(), s["value"].as_f64().unwrap()))
                .collect();
            (
                g["source"]["type"].as_str().unwrap().to_owned(),
                g["source"]["app_id"].as_str().map(str::to_owned),
                samples,
            )
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

const WATCH_BUNDLE: &str = "com.apple.health.8C1F2A53-9B0E-4C1D-A6B2-3E7F5D9C0A11";
const PHONE_BUNDLE: &str = "com.apple.health.41D7E0B2-6C3A-4F85-9E1D-7A2B5C8F0E34";

/// iOS `TimeSeriesData.heartRate`: a HealthKit sample of an Apple Watch
/// (`LocalQuantitySample(_:unit:)`, `CoreModels+Extensions.swift`: no `type`, the source
/// revision's bundle and product type, the device keys in `metadata`).
pub(crate) fn ios_watch(at: &str, bpm: f64) -> Value {
    json!({
        "value": bpm, "start_date": at, "end_date": at, "source_bundle": WATCH_BUNDLE,
        "product_type": "Watch7,1", "unit": "bpm",
        "metadata": {"_DMO": "Watch", "_DMA": "Apple Inc.", "_DHV": "Watch7,1", "_DSV": "11.1"}
    })
}

/// The same from the iPhone's own sensor (`product_type` `iPhone15,2`).
fn ios_phone(at: &str, bpm: f64) -> Value {
    json!({
        "value": bpm, "start_date": at, "end_date": at, "source_bundle": PHONE_BUNDLE,
        "product_type": "iPhone15,2", "unit": "bpm",
        "metadata": {"_DMO": "iPhone", "_DMA": "Apple Inc.", "_DHV": "iPhone15,2", "_DSV": "18.1"}
    })
}

/// iOS `TaggedPayload` of the daily stage (`VitalHealthKitClient.swift`).
fn ios_daily(data: Vec<Value>) -> Value {
    json!({"stage": "daily", "time_zone": "Europe/Berlin", "provider": "apple_health_kit",
           "data": data, "is_final_chunk": true})
}

/// iOS `TaggedPayload` of a historical chunk: the whole window in every chunk.
pub(crate) fn ios_historical(data: Vec<Value>, last: bool) -> Value {
    json!({"stage": "historical", "start_date": "2026-08-22T00:00:00Z", "end_date": "2026-11-21T00:00:00Z",
           "time_zone": "Europe/Berlin", "provider": "apple_health_kit", "data": data, "is_final_chunk": last})
}

fn at(minute: u32) -> String {
    format!("2026-11-20T08:{minute:02}:00Z")
}

async fn a_watch_and_the_phone_the_same_minute_are_both_kept(p: Phone) {
    let user = p.user("ph-1").await;
    let done =
        p.stored(&user, "heartrate", ios_daily(vec![ios_watch(&at(0), 62.0), ios_phone(&at(0), 70.0)])).await;
    assert_eq!(done, json!({"created": 2, "updated": 0, "unchanged": 0}));
    assert_eq!(
        groups(&p.read(&user, "heartrate", "apple_health_kit").await),
        vec![
            ("phone".into(), Some(PHONE_BUNDLE.into()), vec![("2026-11-20T08:00:00Z".into(), 70.0)]),
            ("watch".into(), Some(WATCH_BUNDLE.into()), vec![("2026-11-20T08:00:00Z".into(), 62.0)]),
        ]
    );
    let group = &p.read(&user, "heartrate", "apple_health_kit").await[0];
    assert_eq!(group["source"]["provider"], "apple_health_kit");
    assert_eq!(group["data"][0]["unit"], "bpm");
    assert_eq!(group["data"][0]["timezone_offset"], 3600, "Berlin in November");
}

async fn a_second_daily_upload_of_the_day_merges_into_it(p: Phone) {
    let user = p.user("ph-2").await;
    p.stored(&user, "heartrate", ios_daily(vec![ios_watch(&at(0), 60.0), ios_watch(&at(1), 61.0)])).await;
    // The next sync sends only the samples since its anchor.
    p.stored(&user, "heartrate", ios_daily(vec![ios_watch(&at(2), 62.0), ios_watch(&at(3), 63.0)])).await;
    let read = groups(&p.read(&user, "heartrate", "apple_health_kit").await);
    let values: Vec<f64> = read[0].2.iter().map(|s| s.1).collect();
    assert_eq!(values, vec![60.0, 61.0, 62.0, 63.0], "both uploads kept");
    let events = p.data_events();
    let types: Vec<&str> = events.iter().map(|e| e.0.as_str()).collect();
    assert_eq!(types, vec!["daily.data.heartrate.created", "daily.data.heartrate.created"]);
    // Each event carries the day as the read API answers it.
    assert_eq!(events[1].1["data"].as_array().unwrap().len(), 4);
    assert_eq!(events[1].1["source"]["type"], "watch");
    assert_eq!(events[1].1["source"]["app_id"], WATCH_BUNDLE);
}

async fn a_resend_stores_nothing_and_announces_nothing(p: Phone) {
    let user = p.user("ph-3").await;
    let body = ios_daily(vec![ios_watch(&at(0), 60.0), ios_phone(&at(0), 71.0)]);
    p.stored(&user, "heartrate", body.clone()).await;
    let before = p.data_events().len();
    let again = p.stored(&user, "heartrate", body).await;
    assert_eq!(again, json!({"created": 0, "updated": 0, "unchanged": 2}));
    assert_eq!(p.data_events().len(), before, "no event for a resend");
    assert_eq!(groups(&p.read(&user, "heartrate", "apple_health_kit").await).len(), 2);
}

async fn a_changed_value_is_updated(p: Phone) {
    let user = p.user("ph-4").await;
    p.stored(&user, "heartrate", ios_daily(vec![ios_watch(&at(0), 60.0), ios_watch(&at(1), 61.0)])).await;
    // HealthKit's hourly buckets and re-covered days come back with new values.
    let done = p.stored(&user, "heartrate", ios_daily(vec![ios_watch(&at(1), 65.0)])).await;
    assert_eq!(done, json!({"created": 0, "updated": 1, "unchanged": 0}));
    let events = p.data_events();
    assert_eq!(events.last().unwrap().0, "daily.data.heartrate.updated");
    let values: Vec<f64> =
        groups(&p.read(&user, "heartrate", "apple_health_kit").await)[0].2.iter().map(|s| s.1).collect();
    assert_eq!(values, vec![60.0, 65.0], "the upload's value wins; the other point is kept");
}

async fn a_historical_stage_in_three_chunks_is_announced_once_after_the_last(p: Phone) {
    let user = p.user("ph-5").await;
    let chunk = |from: u32, last: bool| {
        ios_historical((from..from + 3).map(|m| ios_watch(&at(m), 50.0 + f64::from(m))).collect(), last)
    };
    p.stored(&user, "heartrate", chunk(0, false)).await;
    p.stored(&user, "heartrate", chunk(3, false)).await;
    // The second chunk's answer was lost: the SDK sends it again.
    p.stored(&user, "heartrate", chunk(3, false)).await;
    assert!(p.data_events().is_empty(), "nothing before the final chunk: {:?}", p.data_events());
    p.stored(&user, "heartrate", chunk(6, true)).await;
    p.stored(&user, "heartrate", chunk(6, true)).await;
    let events = p.data_events();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].0, "historical.data.heartrate.created");
    assert_eq!(
        events[0].1,
        json!({"user_id": user, "start_date": "2026-08-22", "end_date": "2026-11-21", "provider": "apple_health_kit"})
    );
    let values: Vec<f64> =
        groups(&p.read(&user, "heartrate", "apple_health_kit").await)[0].2.iter().map(|s| s.1).collect();
    assert_eq!(values, (0..9).map(|m| 50.0 + f64::from(m)).collect::<Vec<_>>());
}

async fn an_empty_final_historical_chunk_still_announces(p: Phone) {
    let user = p.user("ph-6").await;
    // Android's one historical POST of a resource with nothing in the window
    // (`ResourceSyncWorker.kt`; no `is_final_chunk`, instants with a fraction).
    let body = json!({
        "stage": "historical", "provider": "health_connect", "time_zone": "Europe/Berlin",
        "start_date": "2026-10-21T09:12:44.318Z", "end_date": "2026-11-20T09:12:44.318Z", "data": []
    });
    let done = p.stored(&user, "heartrate_variability", body.clone()).await;
    assert_eq!(done, json!({"created": 0, "updated": 0, "unchanged": 0}));
    p.stored(&user, "heartrate_variability", body).await;
    let events = p.data_events();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].0, "historical.data.hrv.created", "the SDK path's event name is Wearlab's");
    assert_eq!(events[0].1["provider"], "health_connect");
}

async fn an_android_health_connect_upload_reads_back_with_its_source(p: Phone) {
    let user = p.user("ph-7").await;
    // Android `RecordProcessor` HRV (`HeartRateVariabilityRmssdRecord`, ms, labelled `rmssd`)
    // through `quantitySample` (`VitalHealthConnect/.../model/HCQuantitySample.kt`): the record's
    // id, its package, the device's type; no product type; no `is_final_chunk`.
    let body = json!({
        "stage": "daily", "provider": "health_connect", "time_zone": "America/New_York",
        "data": [{
            "id": "3f1c9b52-7d0e-4e59-9a53-0b6f2d8e4c17", "value": 42.5, "unit": "rmssd",
            "start_date": "2026-11-20T14:00:00Z", "end_date": "2026-11-20T14:00:00Z",
            "source_bundle": "com.google.android.apps.fitness", "type": "watch",
            "metadata": {"_DMO": "Pixel Watch 2", "_DMA": "Google", "_DTY": "watch"}
        }]
    });
    p.stored(&user, "heartrate_variability", body).await;
    let read = p.read(&user, "hrv", "health_connect").await;
    assert_eq!(
        groups(&read),
        vec![(
            "watch".into(),
            Some("com.google.android.apps.fitness".into()),
            vec![("2026-11-20T14:00:00Z".into(), 42.5)]
        )]
    );
    assert_eq!(
        (read[0]["data"][0]["unit"].as_str(), read[0]["data"][0]["timezone_offset"].as_i64()),
        (Some("ms"), Some(-5 * 3600))
    );
    assert_eq!(p.data_events()[0].0, "daily.data.hrv.created");
}

async fn a_ble_glucose_reading_reads_back_in_mg_per_deciliter(p: Phone) {
    let user = p.user("ph-8").await;
    // iOS `VitalDevices/.../GlucoseMeter1808.swift` (Accu-Chek): `type: .fingerprick`, mmol/L,
    // no bundle, product type or metadata; posted daily by `PostSamples.swift`.
    let body = json!({
        "stage": "daily", "time_zone": "Europe/Berlin", "provider": "accuchek_ble",
        "data": [{"value": 6.2, "start_date": "2026-11-20T06:45:00Z", "end_date": "2026-11-20T06:45:00Z",
                  "type": "fingerprick", "unit": "mmol/L"}],
        "is_final_chunk": true
    });
    p.stored(&user, "glucose", body).await;
    let read = p.read(&user, "glucose", "accuchek_ble").await;
    assert_eq!(read.len(), 1);
    assert_eq!(
        (read[0]["source"]["type"].as_str(), read[0]["data"][0]["unit"].as_str()),
        (Some("fingerprick"), Some("mg/dL"))
    );
    let value = read[0]["data"][0]["value"].as_f64().unwrap();
    assert!((value - 111.71).abs() < 0.01, "6.2 mmol/L is 111.71 mg/dL, got {value}");
}

async fn a_cuffs_blood_pressure_reads_back_whole(p: Phone) {
    let user = p.user("ph-9").await;
    // iOS `VitalDevices/DeviceReading/BloodPressureReader1810.swift` (Omron): systolic,
    // diastolic and pulse samples of `type: .cuff`, posted daily by `PostSamples.swift`.
    let cuff = |value: f64, unit: &str| {
        json!({"value": value, "start_date": "2026-11-20T07:30:00Z", "end_date": "2026-11-20T07:30:00Z",
               "type": "cuff", "unit": unit})
    };
    let body = json!({
        "stage": "daily", "time_zone": "Europe/Berlin", "provider": "omron_ble",
        "data": [{"systolic": cuff(128.0, "mmHg"), "diastolic": cuff(82.0, "mmHg"), "pulse": cuff(64.0, "bpm")}],
        "is_final_chunk": true
    });
    p.stored(&user, "blood_pressure", body).await;
    let read = p.read(&user, "blood_pressure", "omron_ble").await;
    assert_eq!(read.len(), 1, "{read:?}");
    assert_eq!(read[0]["source"]["type"], "cuff");
    assert_eq!(
        read[0]["data"][0],
        json!({"timestamp": "2026-11-20T07:30:00Z", "value": 128.0, "systolic": 128.0, "diastolic": 82.0,
               "unit": "mmHg", "timezone_offset": 3600})
    );
    let pulse = p.read(&user, "heartrate", "omron_ble").await;
    assert_eq!(groups(&pulse), vec![("cuff".into(), None, vec![("2026-11-20T07:30:00Z".into(), 64.0)])]);
    let types: Vec<String> = p.data_events().into_iter().map(|e| e.0).collect();
    assert_eq!(types, vec!["daily.data.blood_pressure.created", "daily.data.heartrate.created"]);
}

async fn a_pulled_providers_day_reads_back_as_it_was(p: Phone) {
    let user = p.user("ph-10").await;
    let partition = format!("USER#{user}");
    // A pulled provider's day as the store kept it before and since columns: its key and item
    // are not changed by the phone's days of the same resource and day.
    let before_columns = json!({"h": "0", "v": {"source": {"provider": "oura", "type": "ring", "app_id": null,
        "name": "Oura", "logo": "", "slug": "oura"},
        "data": [{"timestamp": "2026-11-20T08:00:00Z", "value": 58.0, "unit": "bpm", "timezone_offset": 0}]}});
    let in_columns =
        json!({"h": "0", "c": {"o": [[0, 1]], "t": [1_795_161_660], "u": [["bpm", 1]], "v": [59.0]}});
    let old = |provider: &str, body: Value| {
        Item::new(Key::new(partition.clone(), format!("DATA#TS#heartrate#2026-11-20#{provider}")), body)
    };
    p.t.deps.table.put(old("oura", before_columns), Condition::None).await.unwrap();
    p.t.deps.table.put(old("polar", in_columns), Condition::None).await.unwrap();
    p.stored(&user, "heartrate", ios_daily(vec![ios_watch(&at(0), 62.0)])).await;
    let oura = p.read(&user, "heartrate", "oura").await;
    assert_eq!(groups(&oura), vec![("ring".into(), None, vec![("2026-11-20T08:00:00Z".into(), 58.0)])]);
    let polar = p.read(&user, "heartrate", "polar").await;
    assert_eq!(groups(&polar), vec![("unknown".into(), None, vec![("2026-11-20T08:01:00Z".into(), 59.0)])]);
    assert_eq!(polar[0]["source"]["provider"], "polar");
    assert_eq!(groups(&p.read(&user, "heartrate", "apple_health_kit").await).len(), 1);
    // The old items are untouched.
    let kept = p.t.deps.table.get(&Key::new(partition, "DATA#TS#heartrate#2026-11-20#polar")).await.unwrap();
    assert_eq!(kept.unwrap().body["v"], json!(null));
}

async fn refusals(p: Phone) {
    let user = p.user("ph-11").await;
    let ok = ios_daily(vec![ios_watch(&at(0), 62.0)]);
    let refused = |a: &crate::helpers::Answer, status: StatusCode| assert_eq!(a.status, status, "{}", a.body);
    // An unknown resource, and Wearlab's own name of one the SDKs name otherwise: as the data
    // API refuses a resource that is not a timeseries.
    for resource in ["heart_beats", "hrv", "sleep"] {
        let a = p.upload(&user, resource, ok.clone()).await;
        refused(&a, StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(error_locs(&a.body), vec![vec!["path".to_string(), "resource".into()]]);
    }
    // A provider that is not an SDK provider.
    let mut oura = ok.clone();
    oura["provider"] = json!("oura");
    let a = p.upload(&user, "heartrate", oura).await;
    refused(&a, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(error_locs(&a.body), vec![vec!["body".to_string(), "provider".into()]]);
    // Bad values: every one, with its place.
    let bad = ios_daily(vec![ios_watch(&at(0), -5.0), json!({"value": "x", "unit": "bpm"})]);
    let a = p.upload(&user, "heartrate", bad).await;
    refused(&a, StatusCode::UNPROCESSABLE_ENTITY);
    let locs = error_locs(&a.body);
    assert!(locs.contains(&vec!["body".into(), "data".into(), "0".into(), "value".into()]), "{locs:?}");
    assert!(locs.contains(&vec!["body".into(), "data".into(), "1".into(), "start_date".into()]), "{locs:?}");
    // A source type that could not name a stored day.
    let mut odd = ios_watch(&at(0), 62.0);
    odd["type"] = json!("watch#1");
    let a = p.upload(&user, "heartrate", ios_daily(vec![odd])).await;
    refused(&a, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(error_locs(&a.body), vec![vec!["body".to_string(), "data".into(), "0".into(), "type".into()]]);
    // An unknown user, another team's user, a deleted user.
    let a = p.upload("9b2f0c4e-1d3a-4b5c-8e7f-0a1b2c3d4e5f", "heartrate", ok.clone()).await;
    refused(&a, StatusCode::NOT_FOUND);
    let other = p.t.other_team_key().await;
    let a = p
        .t
        .send(Method::POST, &format!("/v2/timeseries/{user}/heartrate"), Some(&other), Some(&ok.to_string()))
        .await;
    refused(&a, StatusCode::NOT_FOUND);
    let gone = p.user("ph-11-gone").await;
    assert_eq!(p.t.delete(&format!("/v2/user/{gone}")).await.status, StatusCode::OK);
    refused(&p.upload(&gone, "heartrate", ok.clone()).await, StatusCode::NOT_FOUND);
    assert!(p.data_events().is_empty(), "nothing refused is stored or announced");
    // iOS writes the user id in upper case.
    let done = p.stored(&user.to_uppercase(), "heartrate", ok).await;
    assert_eq!(done["created"], 1);
}

/// 10,000 one-minute heart rate samples, the iOS SDK's foreground chunk
/// (`health_kit_params.query_chunk_sizes_foreground.timeseries`, `LocalSyncState.swift`).
fn ten_thousand() -> Value {
    let start = chrono::DateTime::parse_from_rfc3339("2026-11-13T00:00:00Z").unwrap();
    let data = (0..10_000)
        .map(|m| {
            let t = (start + chrono::Duration::minutes(m))
                .to_utc()
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
            ios_watch(&t, 55.0 + (m % 40) as f64)
        })
        .collect();
    ios_historical(data, true)
}

/// A table that counts the write requests its DynamoDB adapter makes: one per put, delete,
/// transaction and addition, and one per BatchWriteItem of 25 items.
struct CountingTable {
    inner: Arc<dyn Table>,
    writes: AtomicUsize,
}

impl CountingTable {
    fn batch(&self, items: usize) {
        self.writes.fetch_add(items.div_ceil(25), Ordering::SeqCst);
    }

    fn one(&self) {
        self.writes.fetch_add(1, Ordering::SeqCst);
    }
}

#[async_trait::async_trait]
impl Table for CountingTable {
    async fn get(&self, key: &Key) -> Result<Option<Item>, StoreError> {
        self.inner.get(key).await
    }
    async fn get_raw(&self, key: &Key) -> Result<Option<RawItem>, StoreError> {
        self.inner.get_raw(key).await
    }
    async fn get_many(&self, keys: &[Key]) -> Result<Vec<Option<RawItem>>, StoreError> {
        self.inner.get_many(keys).await
    }
    async fn put(&self, item: Item, condition: Condition) -> Result<(), StoreError> {
        self.one();
        self.inner.put(item, condition).await
    }
    async fn delete(&self, key: &Key, condition: Condition) -> Result<(), StoreError> {
        self.one();
        self.inner.delete(key, condition).await
    }
    async fn transact(&self, ops: Vec<WriteOp>) -> Result<(), StoreError> {
        self.one();
        self.inner.transact(ops).await
    }
    async fn put_all(&self, items: Vec<Item>) -> Result<(), StoreError> {
        self.batch(items.len());
        self.inner.put_all(items).await
    }
    async fn put_all_text(&self, items: Vec<TextItem>) -> Result<(), StoreError> {
        self.batch(items.len());
        self.inner.put_all_text(items).await
    }
    async fn add(&self, add: Add) -> Result<i64, StoreError> {
        self.one();
        self.inner.add(add).await
    }
    async fn query(&self, query: Query) -> Result<Page, StoreError> {
        self.inner.query(query).await
    }
    async fn query_raw(&self, query: Query) -> Result<RawPage, StoreError> {
        self.inner.query_raw(query).await
    }
}

/// A 10,000-sample chunk: its time in this (debug) build against the iOS client's 15 s, and
/// its write requests against the budget of 40.
async fn ten_thousand_samples_in_one_upload(p: Phone) {
    let counting = Arc::new(CountingTable { inner: p.t.deps.table.clone(), writes: AtomicUsize::new(0) });
    let deps = Deps { table: counting.clone(), ..p.t.deps.clone() };
    let p = Phone { t: p.t.with_deps(deps), bus: p.bus };
    let user = p.user("ph-12").await;
    let body = ten_thousand();
    let writes_before = counting.writes.load(Ordering::SeqCst);
    let started = std::time::Instant::now();
    p.stored(&user, "heartrate", body.clone()).await;
    let took = started.elapsed();
    let writes = counting.writes.load(Ordering::SeqCst) - writes_before;
    let again = std::time::Instant::now();
    let resent = p.stored(&user, "heartrate", body).await;
    let resend_took = again.elapsed();
    eprintln!("10,000 samples: {took:?}, {writes} write requests; the resend {resend_took:?}");
    assert!(writes <= 40, "{writes} write requests");
    assert!(took < std::time::Duration::from_secs(15), "{took:?}");
    assert_eq!(resent["created"], 0);
    assert_eq!(p.data_events().len(), 1, "one historical event");
    // The same in the daily stage: seven days, each announced with its samples (staged in the
    // outbox, published, unstaged).
    let mut daily = ten_thousand();
    daily["stage"] = json!("daily");
    for field in ["start_date", "end_date"] {
        daily.as_object_mut().unwrap().remove(field);
    }
    let other = p.user("ph-12-daily").await;
    let writes_before = counting.writes.load(Ordering::SeqCst);
    let started = std::time::Instant::now();
    let done = p.stored(&other, "heartrate", daily).await;
    let took = started.elapsed();
    let writes = counting.writes.load(Ordering::SeqCst) - writes_before;
    eprintln!("10,000 samples, daily: {took:?}, {writes} write requests");
    assert_eq!(done["created"], 7, "seven local days in Berlin");
    assert!(writes <= 40, "{writes} write requests");
    assert!(took < std::time::Duration::from_secs(15), "{took:?}");
    let announced: usize = p.data_events()[1..].iter().map(|e| e.1["data"].as_array().unwrap().len()).sum();
    assert_eq!(announced, 10_000, "every sample announced once");
}

/// Android's body uploads carry Health Connect's changed records only (`tryVital/vital-android`
/// `VitalClient/.../services/data/Summary.kt`, `LocalBody`): a later upload of the day's body fat
/// alone keeps the weight uploaded before it.
async fn a_later_body_upload_keeps_the_measures_it_leaves_out(p: Phone) {
    let user = p.user("phone-body").await;
    let sample = |value: f64, unit: &str| {
        json!({"id": "f00d", "value": value, "unit": unit, "start_date": "2026-11-20T12:00:00Z",
               "end_date": "2026-11-20T12:00:00Z", "source_bundle": "com.fitbit.FitbitMobile", "type": "scale"})
    };
    let android = |data: Value| json!({"stage": "daily", "time_zone": "America/New_York", "provider": "health_connect", "data": data});
    let weight = json!({"body_mass": [sample(80.2, "kg")], "body_fat_percentage": [],
                        "body_mass_index": [], "lean_body_mass": [], "waist_circumference": []});
    let fat = json!({"body_mass": [], "body_fat_percentage": [sample(24.0, "percent")],
                     "body_mass_index": [], "lean_body_mass": [], "waist_circumference": []});
    for body in [weight, fat] {
        let a = p.t.post(&format!("/v2/summary/body/{user}"), android(body)).await;
        assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    }
    let a = p.t.get(&format!("/v2/summary/body/{user}?start_date=2026-11-19&end_date=2026-11-21")).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let day = &a.body["body"][0];
    assert_eq!((day["weight"].as_f64(), day["fat"].as_f64()), (Some(80.2), Some(24.0)), "{}", a.body);
}

/// Every timeseries the iOS SDK uploads (`TimeSeriesData` names, `Base Models/ResourceData.swift`;
/// blood pressure has its own test), one sample each in the unit label the SDK writes for it
/// (`QuantityUnit` in `CoreModels+Extensions.swift`): (path name, label, value, the resource it
/// is read back as, Wearlab's unit, the value read back).
const IOS_TIMESERIES: [(&str, &str, f64, &str, &str, f64); 32] = [
    ("glucose", "mmol/L", 5.5, "glucose", "mg/dL", 5.5 * 18.0182),
    ("blood_oxygen", "%", 97.0, "blood_oxygen", "%", 97.0),
    ("heartrate", "bpm", 61.0, "heartrate", "bpm", 61.0),
    ("heartrate_variability", "rmssd", 48.0, "hrv", "ms", 48.0),
    ("water", "mL", 250.0, "water", "mL", 250.0),
    ("caffeine", "mg", 95.0, "caffeine", "mg", 95.0),
    ("mindfulness_minutes", "minute", 10.0, "mindfulness_minutes", "min", 10.0),
    ("respiratory_rate", "bpm", 14.0, "respiratory_rate", "bpm", 14.0),
    ("calories_active", "kcal", 12.5, "calories_active", "kcal", 12.5),
    ("calories_basal", "kcal", 70.0, "calories_basal", "kcal", 70.0),
    ("distance", "m", 820.0, "distance", "m", 820.0),
    ("floors_climbed", "count", 3.0, "floors_climbed", "count", 3.0),
    ("steps", "count", 1200.0, "steps", "count", 1200.0),
    ("vo2_max", "mL/kg/min", 44.1, "vo2_max", "mL/kg/min", 44.1),
    ("temperature", "°C", 36.6, "body_temperature", "°C", 36.6),
    ("afib_burden", "%", 2.0, "afib_burden", "%", 2.0),
    ("heart_rate_alert", "count", 1.0, "heart_rate_alert", "count", 1.0),
    ("stand_hour", "count", 1.0, "stand_hour", "count", 1.0),
    ("stand_duration", "minute", 5.0, "stand_duration", "min", 5.0),
    ("sleep_apnea_alert", "count", 1.0, "sleep_apnea_alert", "count", 1.0),
    ("sleep_breathing_disturbance", "count", 4.0, "sleep_breathing_disturbance", "count", 4.0),
    ("wheelchair_push", "count", 30.0, "wheelchair_push", "count", 30.0),
    ("forced_expiratory_volume_1", "L", 3.4, "forced_expiratory_volume_1", "L", 3.4),
    ("forced_vital_capacity", "L", 4.2, "forced_vital_capacity", "L", 4.2),
    ("peak_expiratory_flow_rate", "L/min", 480.0, "peak_expiratory_flow_rate", "L/min", 480.0),
    ("inhaler_usage", "count", 1.0, "inhaler_usage", "count", 1.0),
    ("fall", "count", 1.0, "fall", "count", 1.0),
    ("uv_exposure", "count", 3.0, "uv_exposure", "count", 3.0),
    ("daylight_exposure", "minute", 42.0, "daylight_exposure", "min", 42.0),
    ("handwashing", "count", 1.0, "handwashing", "count", 1.0),
    ("basal_body_temperature", "°C", 36.4, "basal_body_temperature", "°C", 36.4),
    ("heart_rate_recovery_one_minute", "count", 22.0, "heart_rate_recovery_one_minute", "bpm", 22.0),
];

/// Each of them is stored and read back through the data API in Wearlab's unit, with the
/// Apple Watch as its source.
async fn every_timeseries_the_ios_sdk_uploads_reads_back(p: Phone) {
    let user = p.user("phone-every-series").await;
    for (path, label, value, resource, unit, read_back) in IOS_TIMESERIES {
        let mut sample = ios_watch(&at(5), value);
        sample["unit"] = json!(label);
        p.stored(&user, path, ios_daily(vec![sample])).await;
        let groups = p.read(&user, resource, "apple_health_kit").await;
        assert_eq!(groups.len(), 1, "{path}: {groups:?}");
        let got = &groups[0]["data"][0];
        assert_eq!(
            (got["unit"].as_str(), groups[0]["source"]["type"].as_str()),
            (Some(unit), Some("watch")),
            "{path}"
        );
        let v = got["value"].as_f64().unwrap();
        assert!((v - read_back).abs() < 1e-9, "{path}: {v} read back, {read_back} expected");
        assert_eq!(got["timestamp"], at(5), "{path}");
    }
}

crate::helpers::on_both_adapters!(
    via = super::phone;
    a_watch_and_the_phone_the_same_minute_are_both_kept,
    a_second_daily_upload_of_the_day_merges_into_it,
    a_resend_stores_nothing_and_announces_nothing,
    a_changed_value_is_updated,
    a_historical_stage_in_three_chunks_is_announced_once_after_the_last,
    an_empty_final_historical_chunk_still_announces,
    an_android_health_connect_upload_reads_back_with_its_source,
    a_ble_glucose_reading_reads_back_in_mg_per_deciliter,
    a_cuffs_blood_pressure_reads_back_whole,
    a_pulled_providers_day_reads_back_as_it_was,
    refusals,
    ten_thousand_samples_in_one_upload,
    a_later_body_upload_keeps_the_measures_it_leaves_out,
    every_timeseries_the_ios_sdk_uploads_reads_back,
);
