//! What the mobile SDKs upload as summaries (`POST /v2/summary/{resource}/{user_id}`), read into
//! the summaries the data API serves: each upload's records become [`Entry::Summary`] values of
//! exactly the shape of `wearlab_models::data` (and [`wearlab_models::data_phone`] for the
//! menstrual cycle and the electrocardiogram), in Wearlab's units, with their source, keyed so
//! that a later version of the same record replaces the earlier (see [`SummaryUpload::parse`]).
//!
//! The shapes are the SDKs' own (public sources): iOS `tryVital/vital-ios`
//! `Sources/VitalCore/Core/Client/Data Models/Patches/` (`ActivityPatch.swift`, `BodyPatch.swift`,
//! `ProfilePatch.swift`, `SleepPatch.swift`, `WorkoutPatch.swift`, `MealPatch.swift`,
//! `LocalMenstrualCycle.swift`, `LocalElectrocardiogram.swift`; what each upload's `data` is:
//! `SummaryData.payload` in `.../Data Models/Base Models/ResourceData.swift`), encoded with
//! `convertToSnakeCase` keys; Android `tryVital/vital-android`
//! `VitalClient/src/main/java/io/tryvital/client/services/data/Summary.kt` (`SummaryPayload`,
//! `LocalActivity`, `LocalBody`, `LocalProfile`, `LocalSleep`, `LocalWorkout`,
//! `LocalMenstrualCycle`, `ManualMealCreation`), `Activity.kt` (`ActivityDaySummary`), `Meal.kt`,
//! `MenstrualCycle.kt`, keys named by hand. `docs/MOBILE.md`, "Uploads: summaries", explains
//! the choices.
//!
//! As for timeseries, one bad field refuses the whole upload with every offending field's
//! location: the SDKs resend nothing they got a 2xx for.

mod day;
mod fields;
mod logs;
mod sleep;
mod workouts;

use std::collections::HashMap;

use chrono::{NaiveDate, TimeZone, Utc};
use serde::Serialize;
use wearlab_models::data::SourceContext;
use wearlab_models::{LocPart, Resource};

use self::fields::{Issues, Obj};
use super::{SourcedSeries, UploadBody, UploadEnvelope, source_type};
use crate::common::error::{DomainError, issue};
use crate::common::ids::{TimeZoneId, UserId};
use crate::pipeline::normalize::{Entry, record_id, source_of};
use crate::ports::to_body;

/// The summaries the SDKs upload, by the path name they use (Wearlab's resource names):
/// `SummaryData.name` (iOS) and the `summary/...` routes of Android's `VitalPrivateService.kt`.
pub const SDK_SUMMARIES: [Resource; 8] = [
    Resource::Activity,
    Resource::Body,
    Resource::Profile,
    Resource::Sleep,
    Resource::Workouts,
    Resource::MenstrualCycle,
    Resource::Meal,
    Resource::Electrocardiogram,
];

/// The summary resource of an upload path's `{resource}`.
pub fn sdk_summary(path: &str) -> Option<Resource> {
    Resource::known(path).filter(|r| SDK_SUMMARIES.contains(r))
}

/// A summary upload read into Wearlab's summaries.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryUpload {
    pub envelope: UploadEnvelope,
    /// The resource uploaded.
    pub resource: Resource,
    /// Each an [`Entry::Summary`] (a `sleep` upload also gives the `sleep_cycle` of each session
    /// with stages) or, for `profile`, one [`Entry::Profile`]. Of entries with the same key
    /// (resource, day, `n`), the upload's last.
    pub entries: Vec<SourcedSeries>,
}

impl SummaryUpload {
    /// Reads an upload of `resource` by `user`'s phone. Every offending field of the envelope
    /// and of every record is reported at once.
    ///
    /// Each summary's `n` (its key within the day and provider) is what names the record
    /// upstream: sleeps, workouts and ECGs their record `id` (a HealthKit UUID or a Health
    /// Connect id), activity and body their calendar day (`"0"`, as every provider's daily
    /// summary), a menstrual cycle its period's first day, a Health Connect meal its start and
    /// a HealthKit day of food its app; the profile is one per provider.
    pub fn parse(resource: Resource, user: UserId, body: &UploadBody) -> Result<Self, DomainError> {
        let mut issues = Vec::new();
        if !SDK_SUMMARIES.contains(&resource) {
            issues.push(issue(&["resource"], format!("{resource} is not a summary the SDKs upload"), "enum"));
        }
        let envelope = UploadEnvelope::read(body, &mut issues);
        let cx = Cx {
            user,
            provider: envelope.as_ref().map_or(body.provider.as_str(), |e| e.provider.as_str()),
            tz: envelope.as_ref().map_or_else(TimeZoneId::utc, |e| e.time_zone.clone()),
        };
        let loc = vec![LocPart::from("data")];
        let entries = match resource {
            Resource::Activity => day::activity(&cx, &body.data, loc, &mut issues),
            Resource::Body => day::body(&cx, &body.data, loc, &mut issues),
            Resource::Profile => day::profile(&cx, &body.data, loc, &mut issues),
            Resource::Sleep => sleep::sleeps(&cx, &body.data, loc, &mut issues),
            Resource::Workouts => workouts::workouts(&cx, &body.data, loc, &mut issues),
            Resource::MenstrualCycle => logs::menstrual_cycles(&cx, &body.data, loc, &mut issues),
            Resource::Meal => logs::meals(&cx, &body.data, loc, &mut issues),
            Resource::Electrocardiogram => logs::electrocardiograms(&cx, &body.data, loc, &mut issues),
            _ => Vec::new(),
        };
        match envelope {
            Some(envelope) if issues.is_empty() => {
                Ok(Self { envelope, resource, entries: last_of_each(entries) })
            }
            _ => Err(DomainError::Validation(issues)),
        }
    }
}

/// Of the entries with the same key, the last one, in the order they came (a resent record in
/// one upload is one write, and a batch write never holds one key twice).
fn last_of_each(entries: Vec<SourcedSeries>) -> Vec<SourcedSeries> {
    let key = |s: &SourcedSeries| match &s.entry {
        Entry::Summary { resource, date, n, .. } => Some((resource.clone(), *date, n.clone())),
        _ => None,
    };
    let last: HashMap<_, usize> = entries.iter().enumerate().map(|(i, s)| (key(s), i)).collect();
    entries.into_iter().enumerate().filter(|(i, s)| last.get(&key(s)) == Some(i)).map(|(_, s)| s).collect()
}

/// Whose upload it is and how to read it.
pub(super) struct Cx<'a> {
    user: UserId,
    provider: &'a str,
    /// The device's time zone (the envelope's).
    tz: TimeZoneId,
}

impl Cx<'_> {
    /// The source of a record: its app (`source_bundle`), and its kind of source by the
    /// timeseries' rule ([`source_type`]) from the type it names at `type_key` (Android), else
    /// its app and device (`product_type`).
    fn source(&self, o: &Obj, type_key: &str, issues: &mut Issues) -> SourceContext {
        let bundle = o.text("source_bundle", false, issues);
        let product = o.text("product_type", false, issues);
        let sent = o.text(type_key, false, issues);
        source_of(self.provider, Some(source_type(sent, bundle, product)), bundle.map(str::to_owned))
    }

    /// The stored id of a summary: the same derivation as the pulled providers' summaries.
    fn id(&self, resource: &Resource, day: NaiveDate, n: &str) -> String {
        record_id(&[&self.user.to_string(), self.provider, resource.as_str(), &day.to_string(), n])
    }

    /// Seconds east of UTC in `tz` on `day` (at noon UTC, as the pulled daily summaries).
    fn day_offset(tz: &TimeZoneId, day: NaiveDate) -> i32 {
        tz.offset_seconds_at(Utc.from_utc_datetime(&day.and_hms_opt(12, 0, 0).unwrap_or_default()))
    }

    fn summary(
        &self,
        resource: Resource,
        date: NaiveDate,
        n: &str,
        source: SourceContext,
        value: &impl Serialize,
    ) -> SourcedSeries {
        SourcedSeries {
            source,
            entry: Entry::Summary { resource, date, n: n.to_owned(), value: to_body(value) },
        }
    }
}

/// Beats per minute a heart can have.
const HEART_RATE: std::ops::RangeInclusive<f64> = 0.0..=300.0;
/// Any amount of at least 0.
const AT_LEAST_0: std::ops::RangeInclusive<f64> = 0.0..=f64::INFINITY;

#[cfg(test)]
mod tests;
