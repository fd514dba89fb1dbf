//! A workout's maximum heart rate is 220 - age and its heart-rate zones follow it. The age comes
//! from the provider's profile (its birth year), else from the user's `fallback_birth_date`;
//! without either, both are null.

use chrono::{Datelike, NaiveDate};
use http::StatusCode;
use serde_json::{Value, json};
use wearlab_domain::ports::QueueName;
use wearlab_domain::ports::providers::{DateRange, FetchedResource};
use wearlab_models::Resource;
use wearlab_sim::{Alteration, Altered};

use crate::helpers::TestApp;

/// Profiles answered without a birth year (the provider does not share it).
struct NoBirthYear;

impl Alteration for NoBirthYear {
    fn after_fetch(
        &self,
        _p: &str,
        resource: &Resource,
        _r: DateRange,
        mut fetched: FetchedResource,
    ) -> FetchedResource {
        if *resource == Resource::Profile {
            for record in &mut fetched.records {
                if let Some(fields) = record.as_object_mut() {
                    fields.remove("birth_year");
                }
            }
        }
        fetched
    }
}

/// The workouts of a fitbit demo user created with `body`, its history pulled from providers
/// whose profile holds no birth year.
async fn workouts_of_user(body: Value) -> Vec<Value> {
    let base = TestApp::embedded().await;
    let stack = base.stack.clone().expect("the embedded stack");
    let mut deps = stack.deps.clone();
    deps.providers = std::sync::Arc::new(Altered::new(stack.deps.providers.clone(), NoBirthYear));
    let t = TestApp::on(deps.clone(), base.clock.clone()).await;

    let a = t.post("/v2/user", body).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let user = a.body["user_id"].as_str().unwrap().to_owned();
    let a = t.post("/v2/link/connect/demo", json!({"user_id": user, "provider": "fitbit"})).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    for _ in 0..50 {
        let n = stack
            .queue
            .run_once(QueueName::Pull, |env, _| pull_worker::handle(&deps, &stack.queue, env))
            .await
            .unwrap();
        if n == 0 {
            break;
        }
    }
    let profile = t.get(&format!("/v2/summary/profile/{user}")).await;
    assert!(profile.body["birth_year"].is_null(), "the provider gave no birth year: {}", profile.body);
    let a = t.get(&format!("/v2/summary/workouts/{user}?start_date=2025-12-02&end_date=2026-03-01")).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let workouts = a.body["workouts"].as_array().cloned().unwrap_or_default();
    assert!(!workouts.is_empty(), "the demo account has workouts: {}", a.body);
    workouts
}

#[tokio::test]
async fn fallback_birth_date_gives_the_maximum_heart_rate_when_the_provider_gives_no_age() {
    let born = NaiveDate::from_ymd_opt(1986, 6, 15).unwrap();
    let workouts = workouts_of_user(json!({
        "client_user_id": "max-hr-fallback", "fallback_time_zone": "Europe/Berlin",
        "fallback_birth_date": born.to_string()
    }))
    .await;
    for w in &workouts {
        let day: NaiveDate = w["calendar_date"].as_str().unwrap().parse().unwrap();
        let mut age = day.year() - born.year();
        if (day.month(), day.day()) < (born.month(), born.day()) {
            age -= 1;
        }
        let max_hr = f64::from(220 - age);
        assert_eq!(w["max_hr"].as_f64(), Some(max_hr), "220 - age on {day} from 1986-06-15: {w}");
        let zones: Vec<i64> = w["hr_zones"].as_array().unwrap().iter().map(|z| z.as_i64().unwrap()).collect();
        assert_eq!(zones.len(), 6);
        assert_eq!(zones.iter().sum::<i64>(), w["duration"].as_i64().unwrap(), "{w}");
        // The whole workout sits in the zone of its average heart rate as a share of max_hr.
        if let Some(avg) = w["average_hr"].as_f64() {
            let pct = avg / max_hr * 100.0;
            let zone = if pct < 50.0 { 0 } else { (((pct - 50.0) / 10.0).floor() as usize + 1).min(5) };
            assert_eq!(
                zones[zone],
                w["duration"].as_i64().unwrap(),
                "zone {zone} for {avg} of {max_hr}: {w}"
            );
        }
    }
}

#[tokio::test]
async fn without_a_fallback_birth_date_the_zones_are_null_when_the_provider_gives_no_age() {
    let workouts = workouts_of_user(json!({
        "client_user_id": "max-hr-none", "fallback_time_zone": "Europe/Berlin"
    }))
    .await;
    for w in &workouts {
        assert!(w["max_hr"].is_null(), "{w}");
        assert!(w["hr_zones"].is_null(), "{w}");
    }
}
