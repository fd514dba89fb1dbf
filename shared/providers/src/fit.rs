//! FIT activity files (the Flexible and Interoperable Data Transfer protocol of Garmin's FIT SDK,
//! https://developer.garmin.com/fit/protocol/), as Wahoo hands out a workout's recording and
//! Hammerhead an activity's: decoded with the `fitparser` crate (which applies the FIT profile's
//! scales, offsets and units), never by hand, into the samples of a workout stream, then into the
//! rows of Wearlab's resources with their units.
//!
//! What is read from each `record` message (FIT profile units): `timestamp`, `heart_rate` (bpm),
//! `power` (W), `cadence` (rpm), `enhanced_speed` else `speed` (m/s), `distance` (m, cumulative
//! from the start), `enhanced_altitude` else `altitude` (m). A field in another unit than the
//! profile's is left out rather than misread.

use chrono::{DateTime, SecondsFormat, Utc};
use fitparser::profile::MesgNum;
use serde_json::{Value, json};
use wearlab_models::Resource;

use crate::http;
use crate::kept::Kept;
use wearlab_domain::ports::providers::{ProviderError, RequestGate};

/// Decoded FIT files kept per workout, for the fetches of one pipeline round and a history's
/// chunks: five minutes (a recording does not change once uploaded), at most 32 (an hour at one
/// record a second is about 3,600 samples of seven numbers).
pub fn kept_files<K: Eq + std::hash::Hash + Clone, V>() -> Kept<K, V> {
    Kept::new(std::time::Duration::from_secs(300), 32)
}

/// Downloads a recording with `request` (admitted by `gate` first) and decodes it: `None` when
/// the provider answers one of the `gone` statuses (no recording, or no longer), an unreadable
/// file an API error of `slug`.
pub async fn download(
    gate: &dyn RequestGate,
    slug: &str,
    request: reqwest::RequestBuilder,
    gone: &[u16],
) -> Result<Option<FitActivity>, ProviderError> {
    let answer = http::send_admitted(gate, slug, request).await?;
    if gone.contains(&answer.status.as_u16()) {
        tracing::info!(provider = slug, status = answer.status.as_u16(), "no FIT file to read");
        return Ok(None);
    }
    let answer = http::check(slug, answer)?;
    read(&answer.body).map(Some).map_err(|e| ProviderError::Api(format!("{slug}: {e}")))
}

/// A FIT file that cannot be read.
#[derive(Debug, thiserror::Error)]
#[error("the FIT file is unreadable: {0}")]
pub struct FitError(String);

/// One `record` message: the workout's values at one instant.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FitSample {
    pub at: DateTime<Utc>,
    /// bpm
    pub heart_rate: Option<f64>,
    /// W
    pub power: Option<f64>,
    /// rpm
    pub cadence: Option<f64>,
    /// m/s
    pub speed: Option<f64>,
    /// m from the start of the recording
    pub distance: Option<f64>,
    /// m
    pub altitude: Option<f64>,
}

/// What Wearlab reads of a FIT activity file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FitActivity {
    /// The `record` messages with a timestamp, in time order.
    pub samples: Vec<FitSample>,
    /// The first `session` message's `sport`, as the FIT profile names it (`cycling`, `running`).
    pub sport: Option<String>,
}

impl FitActivity {
    /// When the recording starts: its first sample.
    pub fn start(&self) -> Option<DateTime<Utc>> {
        self.samples.first().map(|s| s.at)
    }
}

/// Decodes a FIT activity file.
pub fn read(bytes: &[u8]) -> Result<FitActivity, FitError> {
    let records = fitparser::from_bytes(bytes).map_err(|e| FitError(e.to_string()))?;
    let mut samples: Vec<FitSample> = records
        .iter()
        .filter(|r| r.kind() == MesgNum::Record)
        .filter_map(|r| {
            let field = |name: &str, unit: &str| -> Option<f64> {
                let f = r.fields().iter().find(|f| f.name() == name && f.units() == unit)?;
                let v: f64 = f.value().clone().try_into().ok()?;
                v.is_finite().then_some(v)
            };
            let at = r.fields().iter().find_map(|f| match (f.name(), f.value()) {
                ("timestamp", fitparser::Value::Timestamp(t)) => Some(t.with_timezone(&Utc)),
                _ => None,
            })?;
            Some(FitSample {
                at,
                heart_rate: field("heart_rate", "bpm"),
                power: field("power", "watts"),
                cadence: field("cadence", "rpm"),
                speed: field("enhanced_speed", "m/s").or_else(|| field("speed", "m/s")),
                distance: field("distance", "m"),
                altitude: field("enhanced_altitude", "m").or_else(|| field("altitude", "m")),
            })
        })
        .collect();
    samples.sort_by_key(|s| s.at);
    let sport = records.iter().filter(|r| r.kind() == MesgNum::Session).find_map(|r| {
        r.fields().iter().find_map(|f| match (f.name(), f.value()) {
            ("sport", fitparser::Value::String(s)) => Some(s.clone()),
            _ => None,
        })
    });
    Ok(FitActivity { samples, sport })
}

/// The samples of a FIT file's `record` messages, in time order; records without a timestamp
/// are left out.
pub fn samples(bytes: &[u8]) -> Result<Vec<FitSample>, FitError> {
    read(bytes).map(|a| a.samples)
}

fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// The rows of `resource` from a workout's samples, each with its unit and the workout's IANA
/// `zone` when known:
/// - `heartrate`: bpm;
/// - `distance`: the metres covered since the previous sample (the FIT distance is cumulative;
///   a sample without one carries the distance over to the next);
/// - `workout_stream`: power (W), cadence (rpm), speed (m/s) and altitude (m), told apart by
///   their unit.
pub fn rows(samples: &[FitSample], resource: &Resource, zone: Option<&str>) -> Vec<Value> {
    let row = |at: DateTime<Utc>, value: f64, unit: &str| {
        let mut r = json!({"timestamp": rfc3339(at), "value": value, "unit": unit});
        if let Some(z) = zone {
            r["timezone"] = json!(z);
        }
        r
    };
    let series = |pick: fn(&FitSample) -> Option<f64>, unit: &str| -> Vec<Value> {
        samples.iter().filter_map(|s| Some(row(s.at, pick(s)?, unit))).collect()
    };
    match resource {
        Resource::Heartrate => series(|s| s.heart_rate, "bpm"),
        Resource::Distance => {
            let mut last = 0.0;
            samples
                .iter()
                .filter_map(|s| {
                    let d = s.distance?;
                    let covered = (d - last).max(0.0);
                    last = d;
                    Some(row(s.at, (covered * 100.0).round() / 100.0, "m"))
                })
                .collect()
        }
        Resource::WorkoutStream => {
            let mut out = series(|s| s.power, "W");
            out.extend(series(|s| s.cadence, "rpm"));
            out.extend(series(|s| s.speed, "m/s"));
            out.extend(series(|s| s.altitude, "m"));
            out
        }
        _ => vec![],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    #[test]
    fn distance_rows_are_the_metres_since_the_previous_sample() {
        let s = |t: &str, d: Option<f64>| FitSample { at: at(t), distance: d, ..Default::default() };
        let samples = [
            s("2026-01-01T00:00:00Z", Some(0.0)),
            s("2026-01-01T00:00:01Z", None),
            s("2026-01-01T00:00:02Z", Some(7.5)),
        ];
        let rows = rows(&samples, &Resource::Distance, Some("Europe/Berlin"));
        let values: Vec<f64> = rows.iter().map(|r| r["value"].as_f64().unwrap()).collect();
        assert_eq!(values, [0.0, 7.5]);
        assert!(rows.iter().all(|r| r["unit"] == "m" && r["timezone"] == "Europe/Berlin"));
    }

    #[test]
    fn the_workout_stream_tells_its_series_apart_by_unit() {
        let sample = FitSample {
            at: at("2026-01-01T00:00:00Z"),
            heart_rate: Some(120.0),
            power: Some(200.0),
            cadence: Some(90.0),
            speed: Some(8.5),
            distance: Some(10.0),
            altitude: Some(312.4),
        };
        let rows = rows(&[sample], &Resource::WorkoutStream, None);
        let units: Vec<&str> = rows.iter().map(|r| r["unit"].as_str().unwrap()).collect();
        assert_eq!(units, ["W", "rpm", "m/s", "m"]);
        assert!(rows.iter().all(|r| r.get("timezone").is_none()));
    }

    #[test]
    fn a_file_that_is_not_fit_is_an_error() {
        assert!(samples(b"not a FIT file").is_err());
    }
}
