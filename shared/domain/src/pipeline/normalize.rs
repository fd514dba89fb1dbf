//! From a provider's records (normalised JSON from the `Providers` port) to the wire types of
//! `wearlab_models::data`: units (seconds, meters, kcal, kg), calendar dates, time zones (the
//! data's own, else the user's fallback), source context, heart-rate zones.

use chrono::{DateTime, Datelike, NaiveDate, TimeZone, Utc};
use serde_json::Value;
use sha2::{Digest, Sha256};
use wearlab_models::Resource;
use wearlab_models::data::{
    ActivitySummary, BodySummary, DayHeartRate, Macros, MealSummary, ProfileSummary, Sample,
    SleepCycleSummary, SleepSummary, SleepType, SourceContext, WorkoutSummary,
};

use crate::common::ids::{TimeZoneId, UserId};
use crate::common::provider_catalog::catalog;
use crate::ports::to_body;

/// Summary resources (one record per day or per session); every other resource is a timeseries.
pub const SUMMARIES: [Resource; 7] = [
    Resource::Activity,
    Resource::Sleep,
    Resource::SleepCycle,
    Resource::Workouts,
    Resource::Body,
    Resource::Meal,
    Resource::Profile,
];

pub fn is_summary(resource: &Resource) -> bool {
    SUMMARIES.contains(resource)
}

/// Whether a pull stores `resource`: the simulator gives a menstrual cycle day counter, not
/// cycles, so a pulled menstrual cycle is not stored and not announced (the phone's uploads
/// store real cycles, `pipeline::phone::summary`).
pub fn is_modelled(resource: &Resource) -> bool {
    *resource != Resource::MenstrualCycle
}

/// The resources that fetching `fetched` produces (a sleep fetch also gives the sleep cycle).
pub fn produced(fetched: &Resource) -> Vec<Resource> {
    match fetched {
        Resource::Sleep => vec![Resource::Sleep, Resource::SleepCycle],
        r if is_modelled(r) => vec![r.clone()],
        _ => vec![],
    }
}

/// Who the data is of and how to read it.
#[derive(Debug, Clone)]
pub struct Context {
    pub user_id: UserId,
    pub provider: String,
    /// The user's fallback time zone (UTC when the user has none).
    pub fallback_tz: TimeZoneId,
    /// From the provider's profile, else the user's fallback birth date.
    pub birth_year: Option<i32>,
    pub birth_date: Option<NaiveDate>,
}

/// One thing to store.
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    Summary { resource: Resource, date: NaiveDate, n: String, value: Value },
    Series { resource: Resource, date: NaiveDate, samples: Vec<Sample> },
    Profile { value: Value },
}

impl Entry {
    pub fn resource(&self) -> &Resource {
        match self {
            Entry::Summary { resource, .. } | Entry::Series { resource, .. } => resource,
            Entry::Profile { .. } => &Resource::Profile,
        }
    }

    pub fn date(&self) -> Option<NaiveDate> {
        match self {
            Entry::Summary { date, .. } | Entry::Series { date, .. } => Some(*date),
            Entry::Profile { .. } => None,
        }
    }
}

/// The source of a normalised record: its `source_type` and `app_id` when it names them.
pub fn source(provider: &str, record: Option<&Value>) -> SourceContext {
    let text = |k: &str| record.and_then(|v| v.get(k)).and_then(Value::as_str).map(str::to_owned);
    source_of(provider, text("source_type"), text("app_id"))
}

/// The source context of `provider`'s data of a kind of source (`unknown` when none is known)
/// recorded by an app.
pub fn source_of(provider: &str, source_type: Option<String>, app_id: Option<String>) -> SourceContext {
    let r = catalog().reference(provider);
    SourceContext {
        provider: r.slug.clone(),
        source_type: source_type.unwrap_or_else(|| "unknown".into()),
        app_id,
        name: r.name,
        logo: r.logo,
        slug: r.slug,
    }
}

/// A stable id of a stored record.
pub(crate) fn record_id(parts: &[&str]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update([0]);
    }
    let d = h.finalize();
    uuid::Builder::from_random_bytes(d[..16].try_into().expect("16 bytes")).into_uuid().to_string()
}

fn num(v: &Value, k: &str) -> Option<f64> {
    v.get(k).and_then(Value::as_f64)
}

fn int(v: &Value, k: &str) -> Option<i64> {
    v.get(k).and_then(|x| x.as_i64().or_else(|| x.as_f64().map(|f| f.round() as i64)))
}

fn time(v: &Value, k: &str) -> Option<DateTime<Utc>> {
    v.get(k)
        .and_then(Value::as_str)
        .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
        .map(|t| t.with_timezone(&Utc))
}

fn date(v: &Value) -> Option<NaiveDate> {
    v.get("date").and_then(Value::as_str).and_then(|s| s.parse().ok())
}

/// From this many seconds a sleep is a `long_sleep`, under it a `short_sleep` (the upstream
/// API's `SleepType`: "`long_sleep`: >=3 hours of sleep; `short_sleep`: <3 hours of sleep").
pub const LONG_SLEEP_SECS: i64 = 3 * 3600;

/// A sleep's type: the one its record names (the provider's own classification, mapped by its
/// adapter), else by its length (`duration`, seconds in bed).
pub fn sleep_type(named: Option<&str>, duration: i64) -> SleepType {
    match named {
        Some(t) => SleepType::from(t),
        None if duration >= LONG_SLEEP_SECS => SleepType::LongSleep,
        None => SleepType::ShortSleep,
    }
}

/// A sleep record's bedtimes, length (its `duration_s`, else stop - start) and type; `None` for
/// a record without both bedtimes (it is not stored).
fn sleep_facts(r: &Value) -> Option<(DateTime<Utc>, DateTime<Utc>, i64, SleepType)> {
    let (start, stop) = (time(r, "bedtime_start")?, time(r, "bedtime_stop")?);
    let duration = int(r, "duration_s").unwrap_or((stop - start).num_seconds());
    Some((start, stop, duration, sleep_type(r.get("type").and_then(Value::as_str), duration)))
}

/// The index of each day's main sleep among `records`: the longest that is not a nap, else the
/// longest nap; of equally long ones the first.
fn main_sleeps(records: &[Value]) -> std::collections::BTreeMap<NaiveDate, usize> {
    let mut best: std::collections::BTreeMap<NaiveDate, ((bool, i64), usize)> = Default::default();
    for (i, r) in records.iter().enumerate() {
        let (Some(day), Some((_, _, duration, kind))) = (date(r), sleep_facts(r)) else { continue };
        let rank = (kind != SleepType::AcknowledgedNap, duration);
        if best.get(&day).is_none_or(|(kept, _)| rank > *kept) {
            best.insert(day, (rank, i));
        }
    }
    best.into_iter().map(|(day, (_, i))| (day, i)).collect()
}

/// A stored summary as this version answers it: fields added since it was stored are filled in
/// from the rest (a sleep stored before sleeps had a `type` gets the one its length gives).
pub fn upgrade_stored(resource: &Resource, v: &mut Value) {
    if *resource == Resource::Sleep && v.get("type").is_none() {
        let duration = int(v, "duration").unwrap_or(0);
        if let Some(o) = v.as_object_mut() {
            o.insert("type".into(), Value::from(sleep_type(None, duration).as_str()));
        }
    }
}

impl Context {
    /// The record's own time zone (`timezone`, IANA), else the fallback.
    fn tz(&self, record: &Value) -> std::borrow::Cow<'_, TimeZoneId> {
        match record.get("timezone").and_then(Value::as_str).and_then(TimeZoneId::parse) {
            Some(tz) => std::borrow::Cow::Owned(tz),
            None => std::borrow::Cow::Borrowed(&self.fallback_tz),
        }
    }

    /// A summary's calendar day: its `date`, else the local day of its `time_start` in its own
    /// zone or the user's (a provider that gives only an instant, e.g. Polar's daily activity,
    /// leaves the day to the zone Wearlab knows).
    fn day(&self, record: &Value) -> Option<NaiveDate> {
        date(record).or_else(|| Some(self.tz(record).local_date(time(record, "time_start")?)))
    }

    fn id(&self, resource: &Resource, day: NaiveDate, n: &str) -> String {
        record_id(&[&self.user_id.to_string(), &self.provider, resource.as_str(), &day.to_string(), n])
    }

    /// Age on `day`, from the profile's birth year or the fallback birth date.
    fn age_on(&self, day: NaiveDate) -> Option<i32> {
        if let Some(y) = self.birth_year {
            return Some(day.year() - y);
        }
        let b = self.birth_date?;
        let mut age = day.year() - b.year();
        if (day.month(), day.day()) < (b.month(), b.day()) {
            age -= 1;
        }
        Some(age)
    }

    /// Every entry of one fetched resource's records.
    pub fn entries(&self, resource: &Resource, records: &[Value]) -> Vec<Entry> {
        let mut out = Vec::new();
        if !is_modelled(resource) {
            return out;
        }
        if *resource == Resource::Profile {
            for r in records {
                out.push(Entry::Profile { value: to_body(&self.profile(r)) });
            }
            return out;
        }
        if is_summary(resource) {
            let main = if *resource == Resource::Sleep { main_sleeps(records) } else { Default::default() };
            for (i, r) in records.iter().enumerate() {
                let Some(day) = self.day(r) else { continue };
                let start = |k: &str| time(r, k).map(|t| t.timestamp().to_string()).unwrap_or(i.to_string());
                let n = match resource {
                    Resource::Workouts => start("time_start"),
                    // A day's main sleep keeps the key a day's one sleep always had; any other
                    // sleep of the day (a nap) is keyed by its start, as workouts are.
                    Resource::Sleep if main.get(&day) != Some(&i) => start("bedtime_start"),
                    _ => "0".to_owned(),
                };
                self.summary(resource, day, &n, r, &mut out);
            }
            return out;
        }
        // Timeseries: one entry per day (in UTC) of samples.
        let mut by_day: std::collections::BTreeMap<NaiveDate, Vec<Sample>> = Default::default();
        for r in records {
            let (Some(ts), Some(value)) = (time(r, "timestamp"), num(r, "value")) else { continue };
            let offset = self.tz(r).offset_seconds_at(ts);
            let unit = r.get("unit").and_then(Value::as_str).unwrap_or("").to_owned();
            by_day.entry(ts.date_naive()).or_default().push(Sample {
                timestamp: ts,
                value,
                unit,
                timezone_offset: offset,
                systolic: None,
                diastolic: None,
            });
        }
        for (day, mut samples) in by_day {
            samples.sort_by_key(|s| s.timestamp);
            out.push(Entry::Series { resource: resource.clone(), date: day, samples });
        }
        out
    }

    fn profile(&self, r: &Value) -> ProfileSummary {
        ProfileSummary {
            id: record_id(&[&self.user_id.to_string(), &self.provider, Resource::Profile.as_str()]),
            user_id: self.user_id.as_uuid(),
            height: num(r, "height_cm").map(|cm| cm / 100.0).or_else(|| num(r, "height_m")),
            birth_year: int(r, "birth_year").map(|y| y as i32),
            source: source(&self.provider, Some(r)),
        }
    }

    fn summary(&self, resource: &Resource, day: NaiveDate, n: &str, r: &Value, out: &mut Vec<Entry>) {
        let tz = self.tz(r);
        let tz_name = tz.name().to_owned();
        let offset_at = |t: DateTime<Utc>| tz.offset_seconds_at(t);
        let day_offset = offset_at(Utc.from_utc_datetime(&day.and_hms_opt(12, 0, 0).unwrap_or_default()));
        let src = source(&self.provider, Some(r));
        let user_id = self.user_id.as_uuid();
        let mut push = |resource: Resource, value: Value| {
            out.push(Entry::Summary { resource, date: day, n: n.to_owned(), value });
        };
        match resource {
            Resource::Activity => push(
                Resource::Activity,
                to_body(&ActivitySummary {
                    id: self.id(resource, day, n),
                    user_id,
                    calendar_date: day,
                    calories_total: num(r, "calories_total"),
                    calories_active: num(r, "calories_active"),
                    steps: num(r, "steps"),
                    distance: num(r, "distance_m"),
                    floors_climbed: num(r, "floors_climbed"),
                    low: num(r, "low_minutes").map(|m| m * 60.0),
                    high: num(r, "high_minutes").map(|m| m * 60.0),
                    heart_rate: DayHeartRate::of(
                        num(r, "hr_avg_bpm"),
                        num(r, "hr_min_bpm"),
                        num(r, "hr_max_bpm"),
                        num(r, "resting_hr_bpm"),
                    ),
                    timezone: tz_name,
                    timezone_offset: day_offset,
                    source: src,
                }),
            ),
            Resource::Sleep | Resource::SleepCycle => {
                let Some((start, stop, duration, sleep_type)) = sleep_facts(r) else { return };
                let secs = |k: &str| int(r, k).unwrap_or(0);
                let (deep, rem, light, awake) =
                    (secs("deep_s"), secs("rem_s"), secs("light_s"), secs("awake_s"));
                push(
                    Resource::Sleep,
                    to_body(&SleepSummary {
                        id: self.id(&Resource::Sleep, day, n),
                        user_id,
                        calendar_date: day,
                        bedtime_start: start,
                        bedtime_stop: stop,
                        sleep_type,
                        timezone: tz_name.clone(),
                        timezone_offset: offset_at(start),
                        duration,
                        total: deep + rem + light,
                        awake,
                        light,
                        rem,
                        deep,
                        efficiency: num(r, "efficiency"),
                        hr_average: num(r, "hr_average"),
                        source: src.clone(),
                    }),
                );
                if let Some(stages) = r.get("stages").and_then(Value::as_array) {
                    let mut cycle = SleepCycleSummary {
                        id: self.id(&Resource::SleepCycle, day, n),
                        user_id,
                        calendar_date: day,
                        session_start: start,
                        session_end: stop,
                        timezone: tz_name,
                        timezone_offset: offset_at(start),
                        stage_start_offset_second: vec![],
                        stage_end_offset_second: vec![],
                        stage_type: vec![],
                        source: src,
                    };
                    for s in stages {
                        let (Some(a), Some(b)) = (int(s, "start_offset_s"), int(s, "end_offset_s")) else {
                            continue;
                        };
                        cycle.stage_start_offset_second.push(a);
                        cycle.stage_end_offset_second.push(b);
                        cycle.stage_type.push(match s.get("stage").and_then(Value::as_str) {
                            Some("deep") => 1,
                            Some("light") => 2,
                            Some("rem") => 3,
                            Some("awake") => 4,
                            _ => -1,
                        });
                    }
                    push(Resource::SleepCycle, to_body(&cycle));
                }
            }
            Resource::Workouts => {
                let (Some(start), Some(end)) = (time(r, "time_start"), time(r, "time_end")) else { return };
                let duration = (end - start).num_seconds().max(0);
                let average_hr = num(r, "average_hr");
                let max_hr = self.age_on(day).map(|age| f64::from(220 - age));
                let hr_zones = max_hr.map(|max| {
                    let mut zones = vec![0i64; 6];
                    if let Some(avg) = average_hr {
                        let pct = avg / max * 100.0;
                        let i =
                            if pct < 50.0 { 0 } else { (((pct - 50.0) / 10.0).floor() as usize + 1).min(5) };
                        zones[i] = duration;
                    }
                    zones
                });
                push(
                    Resource::Workouts,
                    to_body(&WorkoutSummary {
                        id: self.id(resource, day, n),
                        user_id,
                        calendar_date: day,
                        sport: r.get("sport").and_then(Value::as_str).unwrap_or("other").to_owned(),
                        time_start: start,
                        time_end: end,
                        timezone: tz_name,
                        timezone_offset: offset_at(start),
                        duration,
                        calories: num(r, "calories"),
                        distance: num(r, "distance_m"),
                        average_hr,
                        max_hr,
                        hr_zones,
                        source: src,
                    }),
                );
            }
            Resource::Body => push(
                Resource::Body,
                to_body(&BodySummary {
                    id: self.id(resource, day, n),
                    user_id,
                    calendar_date: day,
                    weight: num(r, "weight_kg"),
                    fat: num(r, "fat_percent"),
                    height: num(r, "height_m"),
                    timezone: tz_name,
                    timezone_offset: day_offset,
                    source: src,
                }),
            ),
            Resource::Meal => push(
                Resource::Meal,
                to_body(&MealSummary {
                    id: self.id(resource, day, n),
                    user_id,
                    calendar_date: day,
                    name: r.get("name").and_then(Value::as_str).unwrap_or("Meal").to_owned(),
                    energy: num(r, "energy_kcal"),
                    macros: Macros {
                        carbs: num(r, "carbohydrates_g"),
                        protein: num(r, "protein_g"),
                        fats: num(r, "fat_g"),
                    },
                    timezone: tz_name,
                    source: src,
                }),
            ),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ctx(birth_year: Option<i32>) -> Context {
        Context {
            user_id: UserId::from_uuid(uuid::Uuid::nil()),
            provider: "oura".into(),
            fallback_tz: TimeZoneId::parse("Europe/Berlin").unwrap(),
            birth_year,
            birth_date: None,
        }
    }

    #[test]
    fn a_days_heart_rate_and_a_measured_height_are_kept_when_given() {
        let c = ctx(None);
        let e = c.entries(&Resource::Activity, &[json!({"date": "2026-07-01", "resting_hr_bpm": 51.2})]);
        let Entry::Summary { value, .. } = &e[0] else { panic!() };
        assert_eq!(
            value["heart_rate"],
            json!({"avg_bpm": null, "min_bpm": null, "max_bpm": null, "resting_bpm": 51.2})
        );
        let e = c.entries(&Resource::Activity, &[json!({"date": "2026-07-01", "steps": 10.0})]);
        let Entry::Summary { value, .. } = &e[0] else { panic!() };
        assert_eq!(value["heart_rate"], Value::Null, "no heart rate given: null, not zeros");
        let e = c.entries(&Resource::Body, &[json!({"date": "2026-01-05", "height_m": 1.78})]);
        let Entry::Summary { value, .. } = &e[0] else { panic!() };
        assert_eq!((value["height"].as_f64(), &value["weight"]), (Some(1.78), &Value::Null));
    }

    #[test]
    fn a_summary_stored_before_heart_rate_and_height_reads_them_as_null() {
        let e = ctx(None).entries(&Resource::Activity, &[json!({"date": "2026-07-01", "steps": 10.0})]);
        let Entry::Summary { value, .. } = &e[0] else { panic!() };
        let mut old = value.clone();
        old.as_object_mut().unwrap().remove("heart_rate");
        let read: ActivitySummary = serde_json::from_value(old).unwrap();
        assert_eq!(read.heart_rate, None);
    }

    #[test]
    fn activity_units_and_fallback_time_zone() {
        let e = ctx(None).entries(
            &Resource::Activity,
            &[json!({"date": "2026-07-01", "steps": 1000.0, "distance_m": 800.0, "low_minutes": 2.0})],
        );
        let Entry::Summary { value, .. } = &e[0] else { panic!() };
        assert_eq!(value["low"], 120.0);
        assert_eq!(value["distance"], 800.0);
        assert_eq!(value["timezone"], "Europe/Berlin");
        assert_eq!(value["timezone_offset"], 7200);
        assert_eq!(value["source"]["provider"], "oura");
        assert_eq!(value["source"]["slug"], "oura");
    }

    #[test]
    fn a_summary_without_a_date_is_dated_by_its_start_in_the_users_zone() {
        // 23:30 UTC is the next morning in Berlin; in Honolulu the same instant's day is the
        // UTC one, and 08:15 UTC is the evening before there.
        let r = [json!({"time_start": "2026-07-01T23:30:00Z", "steps": 10.0})];
        let Entry::Summary { date, value, .. } = &ctx(None).entries(&Resource::Activity, &r)[0] else {
            panic!()
        };
        assert_eq!(date.to_string(), "2026-07-02");
        assert_eq!(value["calendar_date"], "2026-07-02");
        let honolulu = Context { fallback_tz: TimeZoneId::parse("Pacific/Honolulu").unwrap(), ..ctx(None) };
        let r = [json!({"time_start": "2026-07-01T08:15:00Z", "steps": 10.0})];
        let Entry::Summary { date, .. } = &honolulu.entries(&Resource::Activity, &r)[0] else { panic!() };
        assert_eq!(date.to_string(), "2026-06-30");
        // A record's own date wins.
        let r = [json!({"date": "2026-07-01", "time_start": "2026-07-01T23:30:00Z"})];
        let Entry::Summary { date, .. } = &ctx(None).entries(&Resource::Activity, &r)[0] else { panic!() };
        assert_eq!(date.to_string(), "2026-07-01");
    }

    #[test]
    fn workout_zones_need_an_age() {
        let w = json!({"date": "2026-07-01", "time_start": "2026-07-01T07:00:00Z",
            "time_end": "2026-07-01T08:00:00Z", "average_hr": 150.0});
        let Entry::Summary { value, .. } =
            &ctx(Some(1986)).entries(&Resource::Workouts, std::slice::from_ref(&w))[0]
        else {
            panic!()
        };
        // max 180, 150 is 83 %: zone 5 (80-90 %)
        assert_eq!(value["max_hr"], 180.0);
        assert_eq!(value["hr_zones"], json!([0, 0, 0, 0, 3600, 0]));
        let Entry::Summary { value, .. } = &ctx(None).entries(&Resource::Workouts, &[w])[0] else { panic!() };
        assert!(value["hr_zones"].is_null());
    }

    fn sleep(day: &str, start: &str, stop: &str, duration_s: i64, kind: Option<&str>) -> Value {
        let mut r =
            json!({"date": day, "bedtime_start": start, "bedtime_stop": stop, "duration_s": duration_s});
        if let Some(k) = kind {
            r["type"] = json!(k);
        }
        r
    }

    /// The sleep summaries of `records` as (n, type, bedtime_start).
    fn sleeps(records: &[Value]) -> Vec<(String, String, String)> {
        ctx(None)
            .entries(&Resource::Sleep, records)
            .into_iter()
            .filter_map(|e| match e {
                Entry::Summary { resource: Resource::Sleep, n, value, .. } => Some((
                    n,
                    value["type"].as_str().unwrap().to_owned(),
                    value["bedtime_start"].as_str().unwrap().to_owned(),
                )),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_days_main_sleep_keeps_its_key_and_a_nap_is_its_own_sleep() {
        // The nap comes first: the night is still the day's main sleep.
        let got = sleeps(&[
            sleep(
                "2026-11-20",
                "2026-11-20T14:00:00Z",
                "2026-11-20T14:30:00Z",
                1800,
                Some("acknowledged_nap"),
            ),
            sleep("2026-11-20", "2026-11-19T22:00:00Z", "2026-11-20T06:00:00Z", 28800, Some("long_sleep")),
            sleep("2026-11-21", "2026-11-20T22:00:00Z", "2026-11-21T06:00:00Z", 28800, None),
        ]);
        let nap_start = "2026-11-20T14:00:00Z".parse::<DateTime<Utc>>().unwrap().timestamp().to_string();
        assert_eq!(
            got,
            [
                (nap_start, "acknowledged_nap".into(), "2026-11-20T14:00:00Z".into()),
                ("0".into(), "long_sleep".into(), "2026-11-19T22:00:00Z".into()),
                ("0".into(), "long_sleep".into(), "2026-11-20T22:00:00Z".into()),
            ]
        );
    }

    #[test]
    fn a_sleep_without_a_named_type_is_long_from_three_hours() {
        let got = sleeps(&[
            sleep("2026-11-20", "2026-11-20T01:00:00Z", "2026-11-20T04:00:00Z", 3 * 3600, None),
            sleep("2026-11-20", "2026-11-20T05:00:00Z", "2026-11-20T07:59:59Z", 3 * 3600 - 1, None),
        ]);
        assert_eq!((got[0].0.as_str(), got[0].1.as_str()), ("0", "long_sleep"));
        assert_eq!(got[1].1, "short_sleep");
        assert_ne!(got[1].0, "0");
    }

    #[test]
    fn a_nap_alone_is_the_days_main_sleep_and_new_types_are_kept() {
        let got = sleeps(&[
            sleep(
                "2026-11-20",
                "2026-11-20T13:00:00Z",
                "2026-11-20T13:20:00Z",
                1200,
                Some("acknowledged_nap"),
            ),
            sleep("2026-11-21", "2026-11-21T13:00:00Z", "2026-11-21T13:20:00Z", 1200, Some("siesta")),
        ]);
        assert_eq!((got[0].0.as_str(), got[0].1.as_str()), ("0", "acknowledged_nap"));
        assert_eq!(got[1].1, "siesta", "an upstream value this version does not know is kept");
    }

    #[test]
    fn a_sleep_stored_without_a_type_is_read_with_the_one_its_length_gives() {
        let mut night = json!({"duration": 28800});
        upgrade_stored(&Resource::Sleep, &mut night);
        assert_eq!(night["type"], "long_sleep");
        let mut nap = json!({"duration": 1800, "type": "acknowledged_nap"});
        upgrade_stored(&Resource::Sleep, &mut nap);
        assert_eq!(nap["type"], "acknowledged_nap", "a stored type is kept");
        let mut activity = json!({"steps": 1.0});
        upgrade_stored(&Resource::Activity, &mut activity);
        assert!(activity.get("type").is_none());
    }
}
