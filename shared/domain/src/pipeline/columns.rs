//! A day of samples (or one part of a day) as the table keeps it: in columns.
//!
//! `{"d":[diastolic..],"n":[nanos..],"o":[[offset,count]..],"t":[seconds,delta..],"u":[[unit,count]..],"v":[value..]}`
//!
//! - `t`: the first sample's time in seconds since the epoch, then each sample's distance in
//!   seconds from the one before;
//! - `d`: a blood pressure reading's diastolic pressure (its systolic is `v`), only when some
//!   sample has one;
//! - `n`: each timestamp's fraction of a second in nanoseconds, only when some has one;
//! - `o` and `u`: the time zone offsets and units in runs of equal values (a day has one or two);
//! - `v`: the values.
//!
//! The source is not stored: a provider's samples always have the same one
//! (`normalize::source(provider, None)`), taken from the catalog when they are read.
//!
//! A sample takes about 9 bytes where the API's shape (`{"timestamp":..,"timezone_offset":..,
//! "unit":..,"value":..}`) takes about 85: a historical pull writes a tenth of the bytes (the
//! embedded table's commits were a third of its CPU), and DynamoDB bills write units by the KB.
//! Days stored in the API's shape before columns are still read as they are (`Stored::v`).

use chrono::{DateTime, Utc};
use serde::ser::SerializeSeq;
use serde::{Deserialize, Serialize, Serializer};
use wearlab_models::data::Sample;

use crate::ports::StoreError;

/// Samples in columns, for writing (see the module's text).
pub(crate) struct ColumnsText<'a>(pub &'a [Sample]);

impl Serialize for ColumnsText<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let samples = self.0;
        let mut map = serializer.serialize_map(None)?;
        if samples.iter().any(|s| s.diastolic.is_some()) {
            map.serialize_entry("d", &Each(samples, |s: &Sample| s.diastolic))?;
        }
        if samples.iter().any(|s| s.timestamp.timestamp_subsec_nanos() != 0) {
            map.serialize_entry("n", &Each(samples, |s: &Sample| s.timestamp.timestamp_subsec_nanos()))?;
        }
        map.serialize_entry("o", &Runs(samples, |s: &Sample| s.timezone_offset))?;
        map.serialize_entry("t", &Seconds(samples))?;
        map.serialize_entry("u", &Runs(samples, unit))?;
        map.serialize_entry("v", &Each(samples, |s: &Sample| s.value))?;
        map.end()
    }
}

fn unit(s: &Sample) -> &str {
    &s.unit
}

/// One field of every sample, as an array.
struct Each<'a, F>(&'a [Sample], F);

impl<'a, T: Serialize, F: Fn(&'a Sample) -> T> Serialize for Each<'a, F> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(&self.1))
    }
}

/// One field of every sample in runs of equal values: `[[value, count], ..]`.
struct Runs<'a, F>(&'a [Sample], F);

impl<'a, T: Serialize + PartialEq, F: Fn(&'a Sample) -> T> Serialize for Runs<'a, F> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(None)?;
        let mut values = self.0.iter().map(&self.1);
        if let Some(first) = values.next() {
            let (mut value, mut count) = (first, 1u32);
            for next in values {
                if next == value {
                    count += 1;
                } else {
                    seq.serialize_element(&(&value, count))?;
                    (value, count) = (next, 1);
                }
            }
            seq.serialize_element(&(&value, count))?;
        }
        seq.end()
    }
}

/// The first timestamp's whole seconds, then each one's distance from the one before.
struct Seconds<'a>(&'a [Sample]);

impl Serialize for Seconds<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut last = 0i64;
        serializer.collect_seq(self.0.iter().map(|s| {
            let now = s.timestamp.timestamp();
            // Within chrono's range of years, so the distance cannot overflow.
            let delta = now - last;
            last = now;
            delta
        }))
    }
}

/// A stored day (or part) in columns, as read back.
#[derive(Debug, Deserialize)]
pub(crate) struct Columns {
    #[serde(default)]
    d: Option<Vec<Option<f64>>>,
    #[serde(default)]
    n: Option<Vec<u32>>,
    o: Vec<(i32, u32)>,
    t: Vec<i64>,
    u: Vec<(String, u32)>,
    v: Vec<f64>,
}

impl Columns {
    /// The samples, as the API answers them. A text whose columns do not fit together is
    /// refused as corrupt, never read short.
    pub(crate) fn into_samples(self) -> Result<Vec<Sample>, StoreError> {
        let corrupt = |what: &str| StoreError::Corrupt(format!("a stored day of samples: {what}"));
        let len = self.t.len();
        if self.v.len() != len
            || self.n.as_ref().is_some_and(|n| n.len() != len)
            || self.d.as_ref().is_some_and(|d| d.len() != len)
        {
            return Err(corrupt("columns of different lengths"));
        }
        let units = expand(self.u, len).ok_or_else(|| corrupt("unit runs that do not cover the samples"))?;
        let offsets =
            expand(self.o, len).ok_or_else(|| corrupt("offset runs that do not cover the samples"))?;
        let mut data = Vec::with_capacity(len);
        let mut seconds = 0i64;
        for (i, ((delta, value), (unit, timezone_offset))) in
            self.t.into_iter().zip(self.v).zip(units.zip(offsets)).enumerate()
        {
            seconds = seconds.checked_add(delta).ok_or_else(|| corrupt("a timestamp out of range"))?;
            let nanos = self.n.as_ref().map_or(0, |n| n[i]);
            let timestamp: DateTime<Utc> = DateTime::from_timestamp(seconds, nanos)
                .ok_or_else(|| corrupt("a timestamp out of range"))?;
            let diastolic = self.d.as_ref().and_then(|d| d[i]);
            let systolic = diastolic.map(|_| value);
            data.push(Sample { timestamp, value, unit, timezone_offset, systolic, diastolic });
        }
        Ok(data)
    }
}

/// Runs of values as one value per sample, when they cover exactly `len` samples.
fn expand<T: Clone>(runs: Vec<(T, u32)>, len: usize) -> Option<impl Iterator<Item = T>> {
    let covered = runs.iter().try_fold(0usize, |sum, (_, n)| sum.checked_add(*n as usize))?;
    (covered == len).then(|| runs.into_iter().flat_map(|(value, n)| std::iter::repeat_n(value, n as usize)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(at: &str, value: f64, unit: &str, offset: i32) -> Sample {
        Sample {
            timestamp: at.parse().unwrap(),
            value,
            unit: unit.into(),
            timezone_offset: offset,
            systolic: None,
            diastolic: None,
        }
    }

    fn round_trip(samples: &[Sample]) -> (String, Vec<Sample>) {
        let text = serde_json::to_string(&ColumnsText(samples)).unwrap();
        let columns: Columns = serde_json::from_str(&text).unwrap();
        (text, columns.into_samples().unwrap())
    }

    #[test]
    fn samples_read_back_as_they_were_written() {
        let samples = vec![
            sample("2026-03-29T00:00:00Z", 61.0, "bpm", 3600),
            sample("2026-03-29T00:59:59Z", -0.125, "bpm", 3600),
            // The clocks go forward: a second run of offsets.
            sample("2026-03-29T01:00:00Z", 1e-9, "bpm", 7200),
            // Out of order, a fraction of a second, another unit.
            sample("2026-03-28T23:00:00.250Z", 72.5, "\"q\u{e9}", 7200),
            sample("1969-12-31T23:59:59.000000001Z", f64::MAX, "", -18000),
        ];
        assert_eq!(round_trip(&samples).1, samples);
    }

    #[test]
    fn blood_pressure_keeps_its_diastolic_in_a_column_of_its_own() {
        let mut bp = sample("2026-11-20T07:30:00Z", 128.0, "mmHg", 3600);
        (bp.systolic, bp.diastolic) = (Some(128.0), Some(82.0));
        let (text, read) = round_trip(std::slice::from_ref(&bp));
        assert_eq!(read, vec![bp]);
        assert!(text.starts_with(r#"{"d":[82.0],"#), "{text}");
        let (text, _) = round_trip(&[sample("2026-11-20T07:30:00Z", 64.0, "bpm", 3600)]);
        assert!(!text.contains("\"d\""), "no column without a diastolic: {text}");
    }

    #[test]
    fn a_sample_takes_a_tenth_of_the_api_shape() {
        let samples: Vec<Sample> = (0..1_440)
            .map(|m| Sample {
                timestamp: DateTime::from_timestamp(1_772_323_200 + 60 * m, 0).unwrap(),
                value: 60.0 + (m % 40) as f64,
                unit: "bpm".into(),
                timezone_offset: 3600,
                systolic: None,
                diastolic: None,
            })
            .collect();
        let (text, read) = round_trip(&samples);
        assert_eq!(read, samples);
        let through_a_value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(through_a_value.to_string(), text, "keys in the order a read gives them back");
        assert!(!text.contains("\"n\""), "no fractions, no column for them");
        assert!(text.contains(r#""o":[[3600,1440]]"#) && text.contains(r#""u":[["bpm",1440]]"#), "{text}");
        let api = serde_json::to_string(&samples).unwrap();
        assert!(
            text.len() * 7 < api.len(),
            "{} bytes in columns, {} in the API's shape",
            text.len(),
            api.len()
        );
    }

    #[test]
    fn an_empty_day_is_empty() {
        assert_eq!(round_trip(&[]), (r#"{"o":[],"t":[],"u":[],"v":[]}"#.to_owned(), vec![]));
    }

    #[test]
    fn columns_that_do_not_fit_together_are_corrupt() {
        for body in [
            r#""t":[1,2],"v":[1.0],"o":[[0,2]],"u":[["bpm",2]]"#,
            r#""t":[1,2],"v":[1.0,2.0],"o":[[0,1]],"u":[["bpm",2]]"#,
            r#""t":[1,2],"v":[1.0,2.0],"o":[[0,2]],"u":[["bpm",3]]"#,
            r#""t":[1,2],"v":[1.0,2.0],"o":[[0,2]],"u":[["bpm",4294967295],["x",4294967295]]"#,
            r#""t":[1,2],"v":[1.0,2.0],"o":[[0,2]],"u":[["bpm",2]],"n":[5]"#,
            r#""t":[9223372036854775807,1],"v":[1.0,2.0],"o":[[0,2]],"u":[["bpm",2]]"#,
            r#""t":[9000000000000000],"v":[1.0],"o":[[0,1]],"u":[["bpm",1]]"#,
        ] {
            let columns: Columns = serde_json::from_str(&format!("{{{body}}}")).unwrap();
            assert!(matches!(columns.into_samples(), Err(StoreError::Corrupt(_))), "{body}");
        }
    }
}
