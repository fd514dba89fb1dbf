//! Workouts: `{id, parentId, type, startDate, endDate, zoneOffset, source, title, notes,
//! values: [{type, unit, value}], segments, laps, route, samples, metadata}` (`Workout` of
//! `the-momentum/open-wearables` `backend/app/schemas/providers/mobile_sdk/sync_request.py`),
//! each written as the iOS Junction SDK's workout summary (`WorkoutPatch.Workout`,
//! `tryVital/vital-ios` `Sources/VitalCore/Core/Client/Data Models/Patches/WorkoutPatch.swift`)
//! and read by the one summary parse.
//!
//! The workout's statistics are its `values`, named as the iOS SDK's `_buildWorkoutStats`
//! (`the-momentum/open_wearables_ios_sdk` `Sources/OpenWearablesHealthSDK/Internal/Types.swift`)
//! and the schema's Samsung example name them: calories `activeEnergyBurned` / `calories`
//! (kcal), `distance` (m), heart rate `averageHeartRate` / `meanHeartRate`, `minHeartRate`,
//! `maxHeartRate` (bpm), elevation `elevationAscended` / `altitudeGain` and
//! `elevationDescended` / `altitudeLoss` (m). A statistic in another unit, or of another type
//! (speed, cadence, power, steps), is left out. A workout is keyed by its `id`, else its
//! `parentId`.

use serde_json::{Map, Value, json};

use super::{Written, instant, iso, source_fields, zone_of_offset};

/// The Open Wearables workout types (`_workoutTypeString` of the iOS SDK's `Types.swift`) with
/// the iOS Junction SDK's name for the same HealthKit activity
/// (`HKWorkoutActivityType.toString`, `tryVital/vital-ios`
/// `Sources/VitalHealthKit/Extensions/HKWorkoutActivityType.swift`) where they differ. A type
/// of this list the Junction SDK has no name for keeps its own (`cricket`); the summary parse
/// makes each a sport slug.
const TYPES: [(&str, Option<&str>); 85] = [
    ("running", None),
    ("walking", None),
    ("hiking", None),
    ("wheelchair_run", Some("Wheelchair Run Pace")),
    ("wheelchair_walk", Some("Wheelchair Walk Pace")),
    ("cycling", None),
    ("hand_cycling", None),
    ("swimming", None),
    ("paddle_sports", None),
    ("rowing", None),
    ("surfing", Some("Surfing Sports")),
    ("water_fitness", None),
    ("water_polo", None),
    ("water_sports", None),
    ("strength_training", Some("Traditional Strength Training")),
    ("functional_strength_training", None),
    ("core_training", None),
    ("cross_training", None),
    ("mixed_cardio", None),
    ("hiit", Some("High Intensity Interval Training")),
    ("flexibility", None),
    ("cooldown", None),
    ("elliptical", None),
    ("stair_climbing", None),
    ("stairs", None),
    ("step_training", None),
    ("fitness_gaming", None),
    ("jump_rope", None),
    ("pilates", None),
    ("preparation_and_recovery", None),
    ("yoga", None),
    ("mind_and_body", None),
    ("barre", None),
    ("tai_chi", None),
    ("dance", None),
    ("dance_inspired_training", None),
    ("social_dance", None),
    ("cardio_dance", None),
    ("tennis", None),
    ("table_tennis", None),
    ("badminton", None),
    ("squash", None),
    ("racquetball", None),
    ("pickleball", None),
    ("soccer", None),
    ("basketball", None),
    ("baseball", None),
    ("softball", None),
    ("american_football", None),
    ("australian_football", None),
    ("rugby", None),
    ("hockey", None),
    ("lacrosse", None),
    ("volleyball", None),
    ("handball", None),
    ("cricket", None),
    ("disc_sports", None),
    ("boxing", None),
    ("kickboxing", None),
    ("martial_arts", None),
    ("wrestling", None),
    ("fencing", None),
    ("snow_sports", None),
    ("cross_country_skiing", None),
    ("downhill_skiing", None),
    ("snowboarding", None),
    ("skating", Some("Skating Sports")),
    ("curling", None),
    ("golf", None),
    ("archery", None),
    ("fishing", None),
    ("hunting", None),
    ("climbing", None),
    ("equestrian", Some("Equestrian Sports")),
    ("play", None),
    ("track_and_field", None),
    ("bowling", None),
    ("gymnastics", None),
    ("mixed_metabolic_cardio_training", None),
    ("sailing", None),
    ("swim_bike_run", None),
    ("transition", None),
    ("underwater_diving", None),
    ("other", Some("Other")),
    ("workout", Some("Other")),
];

/// The sport name to write for an Open Wearables workout type, matched without regard to case
/// (the schema's Samsung example sends `RUNNING`): an unknown or missing type is `Other`, as
/// the iOS Junction SDK names an activity it does not know.
fn sport(kind: Option<&str>) -> String {
    let kind = kind.unwrap_or("").trim().to_ascii_lowercase();
    match TYPES.iter().find(|(t, _)| *t == kind) {
        Some((t, name)) => name.unwrap_or(t).to_owned(),
        None => "Other".to_owned(),
    }
}

/// Units a statistic is read in, each with its factor to the Junction unit.
type Units = &'static [(&'static str, f64)];

/// The Junction workout field of an Open Wearables statistic, with the units it is read in and
/// each unit's factor to the Junction unit.
const STATS: [(&str, &str, Units); 11] = [
    ("activeEnergyBurned", "calories", &[("kcal", 1.0), ("Cal", 1.0)]),
    ("calories", "calories", &[("kcal", 1.0), ("Cal", 1.0)]),
    ("distance", "distance", &[("m", 1.0), ("km", 1000.0)]),
    ("averageHeartRate", "heart_rate_mean", &[("bpm", 1.0)]),
    ("meanHeartRate", "heart_rate_mean", &[("bpm", 1.0)]),
    ("minHeartRate", "heart_rate_minimum", &[("bpm", 1.0)]),
    ("maxHeartRate", "heart_rate_maximum", &[("bpm", 1.0)]),
    ("elevationAscended", "ascent_elevation", &[("m", 1.0)]),
    ("altitudeGain", "ascent_elevation", &[("m", 1.0)]),
    ("elevationDescended", "descent_elevation", &[("m", 1.0)]),
    ("altitudeLoss", "descent_elevation", &[("m", 1.0)]),
];

/// The body's workouts, each written as the iOS Junction SDK's workout summary, and how many
/// could not be read (not an object, a time that is not ISO 8601 with an offset, an end before
/// the start, `values` not a list).
pub(super) fn workouts(workouts: &[Value]) -> (Vec<Written>, usize) {
    let mut out = Vec::with_capacity(workouts.len());
    let mut skipped = 0;
    for v in workouts {
        match written(v) {
            Some(w) => out.push(w),
            None => skipped += 1,
        }
    }
    (out, skipped)
}

fn written(v: &Value) -> Option<Written> {
    let record = v.as_object()?;
    let text = |k: &str| record.get(k).and_then(Value::as_str).filter(|t| !t.is_empty());
    let (start, end) = (instant(record, "startDate")?, instant(record, "endDate")?);
    if end < start {
        return None;
    }
    let values = match record.get("values") {
        None | Some(Value::Null) => &Vec::new(),
        Some(v) => v.as_array()?,
    };
    let mut w = Map::new();
    if let Some(id) = text("id").or(text("parentId")) {
        w.insert("id".into(), json!(id));
    }
    w.insert("start_date".into(), json!(iso(start)));
    w.insert("end_date".into(), json!(iso(end)));
    w.extend(source_fields(record, "source_type"));
    w.insert("sport".into(), json!(sport(text("type"))));
    for stat in values.iter().filter_map(Value::as_object) {
        let field = |k: &str| stat.get(k).and_then(Value::as_str);
        let (Some(kind), Some(unit), Some(value)) =
            (field("type"), field("unit"), stat.get("value").and_then(Value::as_f64))
        else {
            continue;
        };
        let Some((_, key, units)) = STATS.iter().find(|(t, ..)| *t == kind) else { continue };
        if let Some((_, factor)) = units.iter().find(|(u, _)| *u == unit) {
            w.insert((*key).into(), json!(value * factor));
        }
    }
    w.insert("heart_rate".into(), json!([]));
    w.insert("respiratory_rate".into(), json!([]));
    w.insert("metadata".into(), json!({}));
    Some(Written {
        zone: zone_of_offset(text("zoneOffset").unwrap_or("+00:00")),
        record: Value::Object(w),
        entries: 1,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};
    use wearlab_models::Resource;

    use super::super::OpenWearablesSync;
    use super::super::tests::{body, ios_source, samsung_source, summaries_of, user};

    /// The workout of the schema's example (`SyncRequest.Config.json_schema_extra` of
    /// `the-momentum/open-wearables` `backend/app/schemas/providers/mobile_sdk/sync_request.py`),
    /// every field as written there.
    fn samsung_run() -> Value {
        json!({
            "id": "wrk-001-s0",
            "parentId": "wrk-001",
            "type": "RUNNING",
            "startDate": "2026-02-24T06:00:00Z",
            "endDate": "2026-02-24T06:45:00Z",
            "zoneOffset": "+01:00",
            "source": samsung_source(),
            "title": null,
            "notes": "Morning run in the park",
            "values": [
                {"type": "duration", "value": 2700000, "unit": "ms"},
                {"type": "calories", "value": 345.5, "unit": "kcal"},
                {"type": "distance", "value": 5234.0, "unit": "m"},
                {"type": "meanHeartRate", "value": 142.3, "unit": "bpm"},
                {"type": "maxHeartRate", "value": 178.0, "unit": "bpm"},
                {"type": "minHeartRate", "value": 95.0, "unit": "bpm"},
                {"type": "meanSpeed", "value": 1.50, "unit": "m/s"},
                {"type": "maxSpeed", "value": 3.20, "unit": "m/s"},
                {"type": "meanCadence", "value": 165.0, "unit": "spm"},
                {"type": "maxCadence", "value": 182.0, "unit": "spm"},
                {"type": "altitudeGain", "value": 45.0, "unit": "m"},
                {"type": "altitudeLoss", "value": 42.0, "unit": "m"},
                {"type": "maxAltitude", "value": 185.0, "unit": "m"},
                {"type": "minAltitude", "value": 140.0, "unit": "m"},
                {"type": "vo2Max", "value": 42.5, "unit": "mL/kg/min"}
            ],
            "segments": null,
            "laps": null,
            "route": [{"timestamp": "2026-02-24T06:01:00Z", "latitude": 52.229676, "longitude": 21.012229,
                       "altitudeM": 142.0, "horizontalAccuracyM": 3.5, "verticalAccuracyM": null}],
            "samples": [
                {"timestamp": "2026-02-24T06:01:00Z", "type": "heartRate", "value": 110.0, "unit": "bpm"},
                {"timestamp": "2026-02-24T06:01:00Z", "type": "cadence", "value": 155.0, "unit": "spm"},
                {"timestamp": "2026-02-24T06:01:00Z", "type": "speed", "value": 1.8, "unit": "m/s"}
            ],
            "metadata": null
        })
    }

    /// A workout as the iOS SDK writes it (`_mapWorkoutEfficient` and `_buildWorkoutStats` of
    /// `the-momentum/open_wearables_ios_sdk` `Sources/OpenWearablesHealthSDK/Internal/Types.swift`).
    fn ios(id: &str, kind: &str) -> Value {
        json!({
            "id": id,
            "parentId": null,
            "type": kind,
            "startDate": "2026-02-24T17:00:00Z",
            "endDate": "2026-02-24T17:30:00Z",
            "zoneOffset": "+01:00",
            "source": ios_source(),
            "title": null,
            "notes": null,
            "values": [
                {"type": "duration", "value": 1800.0, "unit": "s"},
                {"type": "activeEnergyBurned", "value": 280.0, "unit": "kcal"},
                {"type": "basalEnergyBurned", "value": 40.0, "unit": "kcal"},
                {"type": "minHeartRate", "value": 91.0, "unit": "bpm"},
                {"type": "averageHeartRate", "value": 131.0, "unit": "bpm"},
                {"type": "maxHeartRate", "value": 170.0, "unit": "bpm"},
                {"type": "indoorWorkout", "value": 1, "unit": "bool"}
            ],
            "segments": null,
            "laps": null,
            "route": null,
            "samples": null,
            "metadata": null
        })
    }

    fn sync(provider: &str, workouts: Vec<Value>) -> Value {
        body(provider, vec![], workouts)
    }

    fn workouts(parsed: &OpenWearablesSync) -> Vec<(String, String, Value)> {
        summaries_of(parsed, &Resource::Workouts)
    }

    #[test]
    fn a_workout_is_the_workout_summary_with_its_stats() {
        let parsed = OpenWearablesSync::parse(user(), &sync("samsung", vec![samsung_run()])).unwrap();
        assert_eq!(parsed.skipped, 0);
        let all = workouts(&parsed);
        let (day, n, v) = &all[0];
        assert_eq!((all.len(), day.as_str(), n.as_str()), (1, "2026-02-24", "wrk-001-s0"));
        assert_eq!(v["sport"], "running");
        assert_eq!(v["duration"], 45 * 60);
        assert_eq!((v["calories"].as_f64(), v["distance"].as_f64()), (Some(345.5), Some(5234.0)));
        assert_eq!(v["average_hr"], 142.3);
        assert_eq!((v["timezone"].as_str(), v["timezone_offset"].as_i64()), (Some("Etc/GMT-1"), Some(3600)));
        assert_eq!(v["source"]["provider"], "samsung_health");
        assert_eq!(v["source"]["type"], "watch");
        serde_json::from_value::<wearlab_models::data::WorkoutSummary>(v.clone()).unwrap();

        let parsed =
            OpenWearablesSync::parse(user(), &sync("apple", vec![ios("9E8D7C6B-0001", "hiit")])).unwrap();
        let (_, n, v) = &workouts(&parsed)[0];
        assert_eq!(n, "9E8D7C6B-0001");
        assert_eq!(
            v["sport"], "high_intensity_interval_training",
            "the Junction SDK's name for the activity"
        );
        assert_eq!((v["calories"].as_f64(), v["average_hr"].as_f64()), (Some(280.0), Some(131.0)));
        assert!(v["distance"].is_null(), "no distance sent");
        assert_eq!(v["source"]["app_id"], "com.apple.health.81A1B5B2");
    }

    #[test]
    fn an_unknown_workout_type_is_other() {
        let mut none = ios("9E8D7C6B-0003", "x");
        none["type"] = Value::Null;
        let parsed = OpenWearablesSync::parse(
            user(),
            &sync("apple", vec![ios("9E8D7C6B-0002", "zorbing"), none, ios("9E8D7C6B-0004", "cricket")]),
        )
        .unwrap();
        let sports: Vec<String> =
            workouts(&parsed).iter().map(|(_, _, v)| v["sport"].as_str().unwrap().to_owned()).collect();
        assert_eq!(sports, ["other", "other", "cricket"]);
    }

    #[test]
    fn a_workout_that_cannot_be_read_is_skipped_alone() {
        let mut backwards = ios("9E8D7C6B-0005", "running");
        backwards["endDate"] = json!("2026-02-24T16:00:00Z");
        let mut negative = ios("9E8D7C6B-0006", "running");
        negative["values"] = json!([{"type": "activeEnergyBurned", "value": -5.0, "unit": "kcal"}]);
        let mut bad_id = ios("not an id!", "running");
        bad_id["startDate"] = json!("2026-02-24T18:00:00Z");
        bad_id["endDate"] = json!("2026-02-24T18:30:00Z");
        let parsed = OpenWearablesSync::parse(
            user(),
            &sync("apple", vec![ios("9E8D7C6B-0007", "walking"), backwards, negative, bad_id, json!("run")]),
        )
        .unwrap();
        assert_eq!(parsed.skipped, 4);
        let kept: Vec<String> = workouts(&parsed).into_iter().map(|(_, n, _)| n).collect();
        assert_eq!(kept, ["9E8D7C6B-0007"]);
    }
}
