//! POST /v2/user/{user_id}/sdk_sync_state/{provider}: what the SDK syncs and how, asked before
//! each sync (iOS `Sources/VitalHealthKit/HealthKit/Models/LocalSyncState.swift`; Android
//! `VitalHealthCore/.../workers/BaseLocalSyncStateManager.kt`). Every date is written
//! `YYYY-MM-DDTHH:MM:SS+00:00`, which Swift's ISO-8601 decoder and Android's instant parser both
//! read, and no field is ever null (Android falls back to its defaults on a missing field, not
//! on a null one).

use chrono::{DateTime, Days, NaiveDate, Utc};
use wearlab_models::ConnectionStatus;
use wearlab_models::phone_sync::{HealthKitParams, PullPreferences, QueryChunkSizes, SyncState, sdk_time};

use crate::Deps;
use crate::common::error::DomainError;
use crate::common::ids::{TeamId, UserId};
use crate::common::provider_catalog::catalog;
use crate::linking::connections;
use crate::pipeline::{history_days, preferences};
use crate::users;

/// Seconds the SDK may keep an answer (the SDKs' own default is 14,400): a removed or paused
/// connection is noticed within the hour.
pub const EXPIRES_IN: u32 = 3_600;
/// Seconds between two sync progress reports (the iOS SDK's default).
pub const REPORTING_INTERVAL: u32 = 3_600;
/// Days after the user's ingestion end during which the phone may still upload what it had not
/// sent (up to the end of that day); then the state says `paused`. Junction pauses 7 days after
/// the ingestion end (`tryVital/docs`, `docs/wearables/providers/data-ingestion-bounds.mdx`).
pub const PAUSE_AFTER_INGESTION_END_DAYS: u64 = 7;

/// Samples per upload. An upload must reach the function whole: API Gateway's HTTP API takes
/// 10 MB, Lambda 6 MB of request payload (6,291,456 bytes), of which a binary (gzip) body takes
/// 4/3 once base64-encoded. The SDKs' own measure: 10,000 heart-rate samples with device
/// metadata are about 3.2 MB of JSON, 320 bytes a sample. 5,000 samples are then 1.6 MB
/// uncompressed, 2.1 MB even base64-encoded: under 6 MB with room for samples twice as
/// heavy (4.3 MB). Compressed (about 90 KB per 10,000 samples) they are far below.
pub const TIMESERIES_CHUNK_FOREGROUND: u32 = 5_000;
/// The iOS SDK's background default, half the foreground's.
pub const TIMESERIES_CHUNK_BACKGROUND: u32 = 2_500;

/// The iOS SDK's defaults for the rest: a workout with its streams and an ECG (about 15,000
/// voltage samples) are large records, so few per upload; sleep is not chunked (0).
fn chunk_sizes(timeseries: u32, workout: u32, electrocardiogram: u32) -> QueryChunkSizes {
    QueryChunkSizes { timeseries, activity_timeseries: timeseries, electrocardiogram, workout, sleep: 0 }
}

/// The HealthKit parameters every sync state carries.
pub fn health_kit_params() -> HealthKitParams {
    HealthKitParams {
        query_chunk_sizes_background: chunk_sizes(TIMESERIES_CHUNK_BACKGROUND, 1, 1),
        query_chunk_sizes_foreground: chunk_sizes(TIMESERIES_CHUNK_FOREGROUND, 5, 4),
        workout_stream: true,
        workout_heart_rate: true,
    }
}

fn midnight(d: NaiveDate) -> DateTime<Utc> {
    d.and_hms_opt(0, 0, 0).unwrap_or_default().and_utc()
}

/// The sync state of the user's (of `team`) connection to the `sdk` provider `provider`.
pub async fn sync_state(
    deps: &Deps,
    team: TeamId,
    user_id: UserId,
    provider: &str,
) -> Result<SyncState, DomainError> {
    let slug = catalog().sdk(provider)?.slug.as_str();
    let (user, _) = users::load_active(deps, team, user_id).await?;
    let conn = connections::find(deps, user_id, slug).await?;
    let prefs = preferences(deps, team).await?;
    let now = deps.now();
    let today = now.date_naive();
    // The SDK reads up to the end of the user's last ingestion day (exclusive bound).
    let end = user.ingestion_end.and_then(|d| d.checked_add_days(Days::new(1))).map(midnight);
    let ended_long_ago = user
        .ingestion_end
        .and_then(|d| d.checked_add_days(Days::new(PAUSE_AFTER_INGESTION_END_DAYS)))
        .is_some_and(|d| today > d);
    let status = match conn {
        None => "error",
        Some(c) if c.status == ConnectionStatus::Paused || ended_long_ago => "paused",
        Some(c) if c.status == ConnectionStatus::Connected => "active",
        Some(_) => "error",
    };
    Ok(SyncState {
        status: status.to_owned(),
        expires_in: EXPIRES_IN,
        ingestion_start: user.ingestion_start.map(|d| sdk_time(&midnight(d))),
        request_end_date: end.as_ref().map(sdk_time),
        request_start_date: sdk_time(&end.map_or(now, |e| e.min(now))),
        per_device_activity_ts: false,
        pull_preferences: PullPreferences {
            historical_days_to_pull: history_days(&prefs, slug),
            backfill_type_overrides: Default::default(),
        },
        reporting_interval: REPORTING_INTERVAL,
        health_kit_params: health_kit_params(),
    })
}

/// POST /v2/user/{user_id}/sdk_start_historical_stage/apple_health_kit: the iOS SDK says so
/// before each historical attempt (`{range_start, range_end, backfill_type}`). Accepted for an
/// active user of the team, and nothing is kept: every historical upload carries the whole
/// window itself (`start_date`, `end_date`), which is what its final chunk's event reports.
pub async fn historical_stage(deps: &Deps, team: TeamId, user_id: UserId) -> Result<(), DomainError> {
    users::load_active(deps, team, user_id).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_as_the_sdks_read_them() {
        let t = DateTime::parse_from_rfc3339("2026-11-27T08:09:10.123Z").unwrap().with_timezone(&Utc);
        assert_eq!(sdk_time(&t), "2026-11-27T08:09:10+00:00");
    }

    #[test]
    fn chunks_fit_the_request_limit_uncompressed_and_base64_encoded() {
        const LAMBDA_PAYLOAD: u64 = 6_291_456;
        const BYTES_PER_SAMPLE: u64 = 320; // 3.2 MB per 10,000 samples
        let p = health_kit_params();
        for sizes in [&p.query_chunk_sizes_background, &p.query_chunk_sizes_foreground] {
            for n in [sizes.timeseries, sizes.activity_timeseries] {
                let base64 = u64::from(n) * BYTES_PER_SAMPLE * 2 * 4 / 3;
                assert!(base64 < LAMBDA_PAYLOAD, "{n} samples twice as heavy: {base64} bytes");
            }
        }
    }
}
