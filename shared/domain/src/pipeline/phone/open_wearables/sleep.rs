//! Sleep: the Open Wearables SDKs send one record per slice of a night (`{id, parentId, stage,
//! startDate, endDate, zoneOffset, source, values, metadata}`, `SleepRecord` of
//! `the-momentum/open-wearables` `backend/app/schemas/providers/mobile_sdk/sync_request.py`).
//! They are stitched into sessions as the Open Wearables backend stitches them
//! (`backend/app/services/apple/healthkit/sleep_service.py`, `handle_sleep_data` and
//! `_apply_transition`; the gap from `sleep_end_gap_minutes` of `backend/app/config.py`, 120):
//!
//! - identical slices (same start, end, stage and source) count once, and slices are taken in
//!   the order they start;
//! - a session opens only on an in-bed or asleep slice (`SLEEP_START_STATES` of
//!   `backend/app/schemas/providers/mobile_sdk/`): an awake or unknown slice with no session
//!   open is dropped;
//! - a slice joins the open session when it overlaps the session's span or lies within 120
//!   minutes of it; further away, it closes the session and opens the next;
//! - unlike the backend, which keeps one open session per user, sessions are stitched per
//!   source (app and device): a Junction sleep summary has one source, and two devices worn the
//!   same night are two sleeps, as the Junction SDKs upload them.
//!
//! Each session is then written as the iOS Junction SDK's sleep summary (`SleepPatch.Sleep`,
//! `tryVital/vital-ios` `Sources/VitalCore/Core/Client/Data Models/Patches/SleepPatch.swift`):
//! its slices as the stage sample lists with HealthKit's raw sleep-analysis values, so the one
//! summary parse reads both dialects.
//!
//! The session's `id` (which keys the summary) is the first slice's `parentId`, else its `id`:
//! a Samsung session id (`slp-001` in the schema's example) or the HealthKit UUID of the night's
//! first slice, so the same slices sent again give the same key and replace the stored sleep.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Duration, Utc};
use serde_json::{Map, Value, json};

use super::{Written, instant, iso, source_fields, zone_of_offset};

/// The gap that closes a session (`sleep_end_gap_minutes` of the backend's `config.py`).
const SESSION_GAP: Duration = Duration::minutes(120);

/// A slice's stage: the backend's `SleepPhase` (`in_bed`, `sleeping`, `awake`, `light`, `deep`,
/// `rem`, `unknown`), also in HealthKit's own words the iOS SDK writes (`core` for raw value 3,
/// `_sleepStageString` of `the-momentum/open_wearables_ios_sdk`
/// `Sources/OpenWearablesHealthSDK/Internal/Types.swift`) and, case-insensitively, as Health
/// Connect shouts them (`DEEP`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Stage {
    InBed,
    Sleeping,
    Awake,
    Light,
    Deep,
    Rem,
    Unknown,
}

impl Stage {
    fn of(name: &str) -> Option<Self> {
        Some(match name.trim().to_ascii_lowercase().as_str() {
            "in_bed" | "inbed" => Stage::InBed,
            "sleeping" | "asleep" | "asleepunspecified" => Stage::Sleeping,
            "awake" => Stage::Awake,
            "light" | "core" | "asleepcore" => Stage::Light,
            "deep" | "asleepdeep" => Stage::Deep,
            "rem" | "asleeprem" => Stage::Rem,
            "unknown" => Stage::Unknown,
            _ => return None,
        })
    }

    /// Whether a slice of this stage opens a session (`SLEEP_START_STATES`).
    fn opens(self) -> bool {
        !matches!(self, Stage::Awake | Stage::Unknown)
    }

    /// The iOS Junction SDK's stage list, and the sample's value: HealthKit's raw
    /// `HKCategoryValueSleepAnalysis` (0 in bed, 1 asleep unspecified, 2 awake, 3 core, 4 deep,
    /// 5 REM); an unknown stage has none and is written -1.
    fn list(self) -> (&'static str, f64) {
        match self {
            Stage::InBed => ("in_bed_sleep_samples", 0.0),
            Stage::Sleeping => ("unspecified_sleep_samples", 1.0),
            Stage::Awake => ("awake_sleep_samples", 2.0),
            Stage::Light => ("light_sleep_samples", 3.0),
            Stage::Deep => ("deep_sleep_samples", 4.0),
            Stage::Rem => ("rem_sleep_samples", 5.0),
            Stage::Unknown => ("unknown_sleep_samples", -1.0),
        }
    }
}

/// A slice read.
struct Slice<'a> {
    record: &'a Map<String, Value>,
    stage: Stage,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
    /// The `source` as sent, which names the session's app and device.
    source: String,
}

/// A slice, or `None` when it cannot be read: not an object, a stage the backend does not know,
/// a time that is not ISO 8601 with an offset, or an end before the start.
fn slice(v: &Value) -> Option<Slice<'_>> {
    let record = v.as_object()?;
    let stage = Stage::of(record.get("stage")?.as_str()?)?;
    let (start, end) = (instant(record, "startDate")?, instant(record, "endDate")?);
    let source = record.get("source").map(Value::to_string).unwrap_or_default();
    (end >= start).then_some(Slice { record, stage, start, end, source })
}

/// The sessions stitched from a body's `sleep` slices, each written as the iOS Junction SDK's
/// sleep summary, and how many slices were not kept.
pub(super) fn sessions(slices: &[Value]) -> (Vec<Written>, usize) {
    let mut skipped = 0;
    let mut by_source: BTreeMap<String, Vec<Slice>> = BTreeMap::new();
    for v in slices {
        match slice(v) {
            Some(s) => by_source.entry(s.source.clone()).or_default().push(s),
            None => skipped += 1,
        }
    }
    let mut out = Vec::new();
    for mut slices in by_source.into_values() {
        slices.sort_by_key(|s| (s.start, s.end, s.stage));
        let mut seen = BTreeSet::new();
        slices.retain(|s| seen.insert((s.start, s.end, s.stage)));
        let mut session: Vec<Slice> = Vec::new();
        let (mut from, mut to) = (DateTime::<Utc>::MIN_UTC, DateTime::<Utc>::MIN_UTC);
        for s in slices {
            if session.is_empty() {
                if !s.stage.opens() {
                    skipped += 1;
                    continue;
                }
                (from, to) = (s.start, s.end);
            }
            let gap = if s.start <= to && s.end >= from {
                Duration::zero()
            } else if s.end <= from {
                from - s.end
            } else {
                s.start - to
            };
            if gap > SESSION_GAP {
                out.push(written(std::mem::take(&mut session)));
                (from, to) = (s.start, s.end);
            }
            (from, to) = (from.min(s.start), to.max(s.end));
            session.push(s);
        }
        if !session.is_empty() {
            out.push(written(session));
        }
    }
    (out, skipped)
}

/// A session (its slices in order) as the iOS Junction SDK's sleep summary.
fn written(session: Vec<Slice>) -> Written {
    let first = session[0].record;
    let text = |k: &str| first.get(k).and_then(Value::as_str).filter(|t| !t.is_empty());
    let start = session.iter().map(|s| s.start).min().unwrap_or_default();
    let end = session.iter().map(|s| s.end).max().unwrap_or_default();
    let source = source_fields(first, "source_type");
    let mut lists: Map<String, Value> =
        [Stage::Sleeping, Stage::Awake, Stage::Deep, Stage::Light, Stage::Rem, Stage::InBed, Stage::Unknown]
            .iter()
            .map(|s| (s.list().0.to_owned(), json!([])))
            .collect();
    for s in &session {
        let (list, value) = s.stage.list();
        let mut sample = Map::new();
        sample.insert("value".into(), json!(value));
        sample.insert("start_date".into(), json!(iso(s.start)));
        sample.insert("end_date".into(), json!(iso(s.end)));
        for k in ["source_bundle", "product_type"] {
            if let Some(v) = source.get(k) {
                sample.insert(k.into(), v.clone());
            }
        }
        sample.insert("unit".into(), json!("stage"));
        sample.insert("metadata".into(), json!({}));
        if let Some(Value::Array(samples)) = lists.get_mut(list) {
            samples.push(Value::Object(sample));
        }
    }
    let mut sleep = Map::new();
    if let Some(id) = text("parentId").or(text("id")) {
        sleep.insert("id".into(), json!(id));
    }
    sleep.insert("start_date".into(), json!(iso(start)));
    sleep.insert("end_date".into(), json!(iso(end)));
    sleep.extend(source);
    for k in ["heart_rate", "heart_rate_variability", "respiratory_rate", "wrist_temperature"] {
        sleep.insert(k.into(), json!([]));
    }
    sleep.insert("sleep_stages".into(), Value::Object(lists));
    sleep.insert("metadata".into(), json!({}));
    Written {
        zone: zone_of_offset(text("zoneOffset").unwrap_or("+00:00")),
        record: Value::Object(sleep),
        entries: session.len(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};
    use wearlab_models::Resource;

    use super::super::OpenWearablesSync;
    use super::super::tests::{body, ios_source, samsung_source, summaries_of, user};
    use crate::pipeline::normalize::Entry;

    /// A slice as the schema's example writes it (`SyncRequest.Config.json_schema_extra` of
    /// `the-momentum/open-wearables` `backend/app/schemas/providers/mobile_sdk/sync_request.py`:
    /// a Samsung Health slice from a Galaxy Watch7), with its id, parent, stage and times.
    fn samsung(id: &str, parent: &str, stage: &str, start: &str, end: &str) -> Value {
        json!({
            "id": id,
            "parentId": parent,
            "stage": stage,
            "startDate": start,
            "endDate": end,
            "zoneOffset": "+01:00",
            "source": samsung_source(),
            "values": [{"type": "sleepScore", "value": 82, "unit": "score"}],
            "metadata": null
        })
    }

    /// A slice as the iOS SDK writes it (`_mapSleepEfficient` of
    /// `the-momentum/open_wearables_ios_sdk` `Sources/OpenWearablesHealthSDK/Internal/Types.swift`:
    /// `parentId`, `values` and `metadata` null, the source of `_mapSource`, `zoneOffset` null
    /// without a `HKTimeZone`).
    fn ios(id: &str, stage: &str, start: &str, end: &str) -> Value {
        json!({
            "id": id,
            "parentId": null,
            "stage": stage,
            "startDate": start,
            "endDate": end,
            "zoneOffset": null,
            "source": ios_source(),
            "values": null,
            "metadata": null
        })
    }

    /// One Samsung night, its slices in the order a sync may send them.
    fn night() -> Vec<Value> {
        vec![
            samsung("slp-001-s0-1", "slp-001", "deep", "2026-02-24T00:00:00Z", "2026-02-24T01:00:00Z"),
            samsung("slp-001-s0-0", "slp-001", "light", "2026-02-23T23:10:00Z", "2026-02-24T00:00:00Z"),
            samsung("slp-001-s0-2", "slp-001", "awake", "2026-02-24T01:00:00Z", "2026-02-24T01:10:00Z"),
            samsung("slp-001-s0-3", "slp-001", "rem", "2026-02-24T01:10:00Z", "2026-02-24T02:00:00Z"),
            samsung("slp-001-s0-4", "slp-001", "light", "2026-02-24T02:30:00Z", "2026-02-24T06:00:00Z"),
        ]
    }

    fn sync(provider: &str, slices: Vec<Value>) -> Value {
        body(provider, slices, vec![])
    }

    fn sleeps(parsed: &OpenWearablesSync) -> Vec<(String, String, Value)> {
        summaries_of(parsed, &Resource::Sleep)
    }

    #[test]
    fn the_slices_of_one_night_are_one_sleep_with_its_stage_durations() {
        let parsed = OpenWearablesSync::parse(user(), &sync("samsung", night())).unwrap();
        assert_eq!(parsed.skipped, 0);
        let sleeps = sleeps(&parsed);
        assert_eq!(sleeps.len(), 1, "one session: {sleeps:?}");
        let (day, n, v) = &sleeps[0];
        // Ends at 07:00 at +01:00 on the 24th; keyed by the Samsung session id.
        assert_eq!((day.as_str(), n.as_str()), ("2026-02-24", "slp-001"));
        assert_eq!(
            (v["bedtime_start"].as_str(), v["bedtime_stop"].as_str()),
            (Some("2026-02-23T23:10:00Z"), Some("2026-02-24T06:00:00Z"))
        );
        assert_eq!(v["duration"], 410 * 60, "the 30-minute gap is within the session");
        assert_eq!(
            (v["light"].as_i64(), v["deep"].as_i64(), v["rem"].as_i64()),
            (Some(260 * 60), Some(3600), Some(50 * 60))
        );
        assert_eq!(v["awake"], 600);
        assert_eq!(v["total"], 370 * 60);
        assert_eq!((v["timezone"].as_str(), v["timezone_offset"].as_i64()), (Some("Etc/GMT-1"), Some(3600)));
        assert_eq!(v["source"]["provider"], "samsung_health");
        assert_eq!(v["source"]["app_id"], "com.sec.android.app.shealth");
        assert_eq!(v["source"]["type"], "watch");
        // Its hypnogram, in the order of the night.
        let cycle = parsed.summaries[0]
            .entries
            .iter()
            .find_map(|s| match &s.entry {
                Entry::Summary { resource: Resource::SleepCycle, value, .. } => Some(value.clone()),
                _ => None,
            })
            .expect("a hypnogram");
        assert_eq!(cycle["stage_type"], json!([2, 1, 4, 3, 2]));
    }

    #[test]
    fn a_gap_of_three_hours_makes_two_sleeps() {
        let parsed = OpenWearablesSync::parse(
            user(),
            &sync(
                "apple",
                vec![
                    ios("A1", "core", "2026-02-23T22:00:00Z", "2026-02-24T01:00:00Z"),
                    ios("A2", "deep", "2026-02-24T01:00:00Z", "2026-02-24T02:00:00Z"),
                    // 3 hours later: a nap of its own.
                    ios("B1", "sleeping", "2026-02-24T05:00:00Z", "2026-02-24T05:40:00Z"),
                ],
            ),
        )
        .unwrap();
        let sleeps = sleeps(&parsed);
        let spans: Vec<(&str, i64, i64)> = sleeps
            .iter()
            .map(|(_, n, v)| (n.as_str(), v["duration"].as_i64().unwrap(), v["light"].as_i64().unwrap()))
            .collect();
        // HealthKit's "core" is light sleep; "asleep unspecified" counts as light, as the
        // Junction SDK's own upload does.
        assert_eq!(spans, [("A1", 4 * 3600, 3 * 3600), ("B1", 40 * 60, 40 * 60)]);
        assert_eq!(sleeps[0].2["timezone"], "UTC", "no zoneOffset sent");
        assert_eq!(sleeps[0].2["source"]["provider"], "apple_health_kit");
    }

    #[test]
    fn the_same_slices_sent_again_give_the_same_sleep_key() {
        let first = OpenWearablesSync::parse(user(), &sync("samsung", night())).unwrap();
        let mut again = night();
        again.reverse();
        again.push(again[0].clone());
        let again = OpenWearablesSync::parse(user(), &sync("samsung", again)).unwrap();
        let (a, b) = (&sleeps(&first)[0], &sleeps(&again)[0]);
        assert_eq!((&a.0, &a.1, &a.2["id"]), (&b.0, &b.1, &b.2["id"]));
        assert_eq!(a.2["total"], b.2["total"], "a slice sent twice in one body counts once");
        // Without a parentId (iOS), the first slice's HealthKit UUID names the session.
        let ios_night = |order: &[usize]| {
            let s = [
                ios("5B7D3C1E-0001", "in_bed", "2026-02-23T22:50:00Z", "2026-02-24T06:10:00Z"),
                ios("5B7D3C1E-0002", "core", "2026-02-23T23:00:00Z", "2026-02-24T03:00:00Z"),
                ios("5B7D3C1E-0003", "rem", "2026-02-24T03:00:00Z", "2026-02-24T06:00:00Z"),
            ];
            let body = sync("apple", order.iter().map(|i| s[*i].clone()).collect());
            sleeps(&OpenWearablesSync::parse(user(), &body).unwrap())
        };
        let (x, y) = (&ios_night(&[0, 1, 2])[0], &ios_night(&[2, 1, 0])[0]);
        assert_eq!((x.1.as_str(), &x.2["id"]), ("5B7D3C1E-0001", &y.2["id"]));
    }

    #[test]
    fn a_slice_that_cannot_be_read_is_skipped_alone() {
        let mut slices = night();
        slices.push(samsung("x-1", "x", "dozing", "2026-02-24T02:00:00Z", "2026-02-24T02:10:00Z"));
        slices.push(samsung("x-2", "x", "deep", "yesterday", "2026-02-24T02:10:00Z"));
        slices.push(samsung("x-3", "x", "deep", "2026-02-24T03:00:00Z", "2026-02-24T02:00:00Z"));
        slices.push(json!(7));
        // An awake slice with no session open opens none (the backend drops it too).
        slices.push(ios("lone", "awake", "2026-02-24T12:00:00Z", "2026-02-24T12:10:00Z"));
        let parsed = OpenWearablesSync::parse(user(), &sync("samsung", slices)).unwrap();
        assert_eq!(parsed.skipped, 5);
        let sleeps = sleeps(&parsed);
        assert_eq!(sleeps.len(), 1);
        assert_eq!(sleeps[0].2["total"], 370 * 60, "the night is whole");
    }
}
