//! The data pipeline on the embedded stack with the manual clock and the simulator: historical
//! pulls started by new connections, one event per resource after the last chunk, the read
//! API, duplicate deliveries, the poll, throttles, erasure.

use std::collections::BTreeMap;

use chrono::Duration;
use http::{Method, StatusCode};
use serde_json::{Value, json};
use wearlab_domain::common::ids::UserId;
use wearlab_domain::keys;
use wearlab_domain::pipeline::{Job, PollJob, PullMessage};
use wearlab_domain::ports::providers::{DateRange, FetchedResource, ProviderError, Providers};
use wearlab_domain::ports::{EventEnvelope, Outgoing, Query, Queue, QueueName, query_all};
use wearlab_models::Resource;

use wearlab_sim::{Alteration, Altered, one_second_samples};

use crate::helpers::{TestApp, error_locs};

/// Runs the pull queue until nothing is due (bounded).
async fn drain(t: &TestApp) -> usize {
    let stack = t.stack.as_ref().unwrap();
    let mut total = 0;
    for _ in 0..50 {
        let n = stack.run_pulls_once().await.unwrap();
        total += n;
        if n == 0 {
            break;
        }
    }
    total
}

fn events(t: &TestApp, prefix: &str) -> Vec<EventEnvelope> {
    t.published().into_iter().filter(|e| e.event_type.starts_with(prefix)).collect()
}

fn counts(events: &[EventEnvelope]) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for e in events {
        *out.entry(e.event_type.clone()).or_default() += 1;
    }
    out
}

async fn data_items(t: &TestApp, user: &str) -> Vec<(String, Value)> {
    let uid = UserId::parse(user).unwrap();
    let q = Query::partition(keys::user_partition(uid)).prefix("DATA#");
    query_all(t.deps.table.as_ref(), q, 1_000_000)
        .await
        .unwrap()
        .into_iter()
        .map(|i| (i.key.sk, i.body))
        .collect()
}

async fn user_with(t: &TestApp, client_user_id: &str) -> String {
    let a = t
        .post(
            "/v2/user",
            json!({"client_user_id": client_user_id, "fallback_time_zone": "Europe/Berlin",
                "fallback_birth_date": "1986-06-15"}),
        )
        .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    a.body["user_id"].as_str().unwrap().to_owned()
}

async fn connect(t: &TestApp, user: &str, provider: &str) {
    let a = t.post("/v2/link/connect/demo", json!({"user_id": user, "provider": provider})).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
}

/// Nine days of the demo fitbit history the read tests ask for.
const READ_RANGE: &str = "start_date=2026-02-20&end_date=2026-02-28";

/// A user connected to the fitbit demo account, its history pulled.
async fn pulled_fitbit_user(t: &TestApp, client_user_id: &str) -> String {
    let user = user_with(t, client_user_id).await;
    connect(t, &user, "fitbit").await;
    drain(t).await;
    user
}

#[tokio::test]
async fn pipeline_new_connection_pulls_history_with_one_event_per_resource() {
    let t = TestApp::embedded().await;
    let user = user_with(&t, "pl-1").await;
    connect(&t, &user, "fitbit").await;
    assert!(events(&t, "historical.").is_empty(), "nothing before the worker runs");
    drain(&t).await;
    let historical = events(&t, "historical.");
    let c = counts(&historical);
    for r in [
        "activity",
        "sleep",
        "sleep_cycle",
        "workouts",
        "body",
        "meal",
        "profile",
        "heartrate",
        "steps",
        "hrv",
        "weight",
        "blood_oxygen",
        "calories_active",
    ] {
        assert_eq!(c.get(&format!("historical.data.{r}.created")), Some(&1), "{r}: {c:?}");
    }
    assert!(c.values().all(|n| *n == 1), "{c:?}");
    assert!(!c.keys().any(|k| k.contains("hypnogram")), "hypnogram events are off by default");
    let e = &historical[0];
    assert_eq!(e.user_id.to_string(), user);
    assert_eq!(e.client_user_id, "pl-1");
    assert_eq!(e.data["start_date"], "2025-12-02", "90 days back, today included");
    assert_eq!(e.data["end_date"], "2026-03-01");
    assert_eq!(e.data["provider"], "fitbit");
    // The events come after the data: 90 days of hourly heart rate are there.
    let items = data_items(&t, &user).await;
    assert_eq!(items.iter().filter(|(sk, _)| sk.starts_with("DATA#TS#heartrate#")).count(), 90);
    assert_eq!(items.iter().filter(|(sk, _)| sk.starts_with("DATA#SUM#activity#")).count(), 90);
}

#[tokio::test]
async fn pipeline_summaries_and_timeseries_read_back() {
    let t = TestApp::embedded().await;
    let user = pulled_fitbit_user(&t, "pl-2").await;
    every_summary_honours_dates_provider_and_team(&t, &user).await;
    every_timeseries_pages_within_its_dates(&t, &user).await;
    let range = READ_RANGE;

    let a = t.get(&format!("/v2/summary/activity/{user}?{range}")).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let days = a.body["activity"].as_array().unwrap();
    assert_eq!(days.len(), 9);
    let d = &days[0];
    assert_eq!(d["calendar_date"], "2026-02-20");
    assert_eq!(d["timezone"], "Europe/Berlin", "the user's fallback time zone");
    assert_eq!(d["timezone_offset"], 3600);
    assert!(d["distance"].as_f64().unwrap() >= 1800.0, "meters");
    assert!(d["low"].as_f64().unwrap() >= 3600.0, "seconds");
    assert!(d["calories_total"].as_f64().unwrap() > d["calories_active"].as_f64().unwrap());
    let src = &d["source"];
    assert_eq!(src["provider"], "fitbit");
    assert_eq!(src["type"], "unknown");
    assert!(src.get("app_id").is_some());
    assert_eq!(src["slug"], "fitbit");
    assert!(src["name"].as_str().is_some());

    let a = t.get(&format!("/v2/summary/sleep/{user}?{range}")).await;
    let s = &a.body["sleep"][0];
    assert_eq!(s["duration"].as_i64().unwrap(), s["total"].as_i64().unwrap() + s["awake"].as_i64().unwrap());
    assert!(s["duration"].as_i64().unwrap() >= 5 * 3600);
    let a = t.get(&format!("/v2/summary/sleep_cycle/{user}?{range}")).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let c = &a.body["sleep_cycle"][0];
    let ends = c["stage_end_offset_second"].as_array().unwrap();
    assert_eq!(ends.len(), c["stage_type"].as_array().unwrap().len());
    assert_eq!(ends.last().unwrap(), &s["duration"], "the stages cover the session");

    let a = t.get(&format!("/v2/summary/profile/{user}")).await;
    let birth_year = a.body["birth_year"].as_i64().unwrap();
    let a = t.get(&format!("/v2/summary/workouts/{user}?start_date=2025-12-02&end_date=2026-03-01")).await;
    let w = &a.body["workouts"].as_array().unwrap()[0];
    let year: i64 = w["calendar_date"].as_str().unwrap()[..4].parse().unwrap();
    assert_eq!(
        w["max_hr"].as_f64().unwrap(),
        (220 - (year - birth_year)) as f64,
        "220 - age from the provider's profile"
    );
    assert_eq!(w["hr_zones"].as_array().unwrap().len(), 6);
    assert_eq!(
        w["hr_zones"].as_array().unwrap().iter().map(|z| z.as_i64().unwrap()).sum::<i64>(),
        w["duration"].as_i64().unwrap()
    );

    let a = t.get(&format!("/v2/summary/body/{user}?{range}")).await;
    let kg = a.body["body"][0]["weight"].as_f64().unwrap();
    assert!((61.0..=62.5).contains(&kg), "kg: drawn from [61, 62.5), then rounded to 2 places");
    let a = t.get(&format!("/v2/summary/meal/{user}?{range}&provider=fitbit")).await;
    assert_eq!(a.body["meals"].as_array().unwrap().len(), 9);
    assert!(a.body["meals"][0]["energy"].as_f64().unwrap() >= 1500.0, "kcal");
    let a = t.get(&format!("/v2/summary/meal/{user}?{range}&provider=oura")).await;
    assert_eq!(a.body["meals"], json!([]), "another provider's data only");
    let a = t.get(&format!("/v2/summary/profile/{user}")).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let h = a.body["height"].as_f64().unwrap();
    assert_eq!(a.body["source"]["provider"], "fitbit");
    let a = t.get(&format!("/v2/summary/profile/{user}?provider=oura")).await;
    assert_eq!(a.status, StatusCode::NOT_FOUND, "no oura profile");
    assert!((1.5..2.0).contains(&h), "meters");

    // Timeseries: grouped by provider, 7 days a page.
    let path = format!("/v2/timeseries/{user}/heartrate/grouped?start_date=2026-02-20&end_date=2026-03-01");
    let a = t.get(&path).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let groups = a.body["groups"]["fitbit"].as_array().unwrap();
    assert_eq!(groups.len(), 1);
    assert_eq!(groups[0]["source"]["provider"], "fitbit");
    let samples = groups[0]["data"].as_array().unwrap();
    assert_eq!(samples.len(), 7 * 24);
    assert_eq!(samples[0]["timestamp"], "2026-02-20T00:00:00Z");
    assert_eq!(samples[0]["unit"], "bpm");
    assert_eq!(samples[0]["timezone_offset"], 3600);
    let cursor = a.body["next_cursor"].as_str().unwrap().to_owned();
    let a = t.get(&format!("{path}&next_cursor={cursor}")).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let rest = a.body["groups"]["fitbit"][0]["data"].as_array().unwrap();
    assert_eq!(rest.len(), 3 * 24);
    assert_eq!(rest[0]["timestamp"], "2026-02-27T00:00:00Z");
    assert!(a.body["next_cursor"].is_null());
    for r in ["steps", "hrv", "blood_oxygen", "calories_active", "weight"] {
        let a = t
            .get(&format!("/v2/timeseries/{user}/{r}/grouped?start_date=2026-02-28&end_date=2026-02-28"))
            .await;
        assert_eq!(a.body["groups"]["fitbit"][0]["data"].as_array().unwrap().len(), 24, "{r}");
    }
    let a = t
        .get(&format!("/v2/timeseries/{user}/weight/grouped?start_date=2026-02-28&end_date=2026-02-28"))
        .await;
    assert_eq!(a.body["groups"]["fitbit"][0]["data"][0]["unit"], "kg");
}

#[tokio::test]
async fn pipeline_read_api_refusals() {
    let t = TestApp::embedded().await;
    let user = user_with(&t, "pl-3").await;
    let ok = t.get(&format!("/v2/summary/activity/{user}?start_date=2026-02-01&end_date=2026-02-02")).await;
    assert_eq!(ok.status, StatusCode::OK, "{}", ok.body);
    assert_eq!(ok.body, json!({"activity": []}));
    let a = t.get(&format!("/v2/summary/activity/{user}?start_date=2026-02-31")).await;
    assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(error_locs(&a.body), vec![vec!["query".to_owned(), "start_date".to_owned()]]);
    let a = t.get(&format!("/v2/summary/sleep/{user}?start_date=2026-02-05&end_date=2026-02-01")).await;
    assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(error_locs(&a.body), vec![vec!["query".to_owned(), "end_date".to_owned()]]);
    let a = t.get(&format!("/v2/summary/sleep/{user}")).await;
    assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "start_date is required");
    // Not a resource, a summary, the connection marker: none is a timeseries, each refused at
    // the path's `resource`.
    for resource in ["not_a_thing", "sleep", "connection"] {
        let a = t.get(&format!("/v2/timeseries/{user}/{resource}/grouped?start_date=2026-02-01")).await;
        assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{resource}");
        assert_eq!(error_locs(&a.body), vec![vec!["path".to_owned(), "resource".to_owned()]], "{resource}");
    }
    let a = t
        .get(&format!("/v2/timeseries/{user}/heartrate/grouped?start_date=2026-02-01&next_cursor=zzz"))
        .await;
    assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY);
    let unknown = uuid::Uuid::new_v4();
    let a = t.get(&format!("/v2/summary/workouts/{unknown}?start_date=2026-02-01")).await;
    assert_eq!(a.status, StatusCode::NOT_FOUND);
    let a = t.get(&format!("/v2/summary/profile/{unknown}")).await;
    assert_eq!(a.status, StatusCode::NOT_FOUND);
    let a = t.get(&format!("/v2/summary/profile/{user}")).await;
    assert_eq!(a.status, StatusCode::NOT_FOUND, "no profile data yet");
    let other = t.other_team_key().await;
    for path in [
        format!("/v2/summary/activity/{user}?start_date=2026-02-01"),
        format!("/v2/summary/profile/{user}"),
        format!("/v2/timeseries/{user}/heartrate/grouped?start_date=2026-02-01"),
    ] {
        let a = t.send(Method::GET, &path, Some(&other), None).await;
        assert_eq!(a.status, StatusCode::NOT_FOUND, "another team's user: {path}");
        let a = t.send(Method::GET, &path, None, None).await;
        assert_eq!(a.status, StatusCode::UNAUTHORIZED, "{path}");
    }
}

#[tokio::test]
async fn pipeline_summary_reads_filter_by_provider_before_the_limit_and_never_cut_silently() {
    use wearlab_domain::pipeline::read::MAX_ITEMS;
    use wearlab_domain::ports::{Condition, Item, WriteOp};

    let t = TestApp::embedded().await;
    let user = pulled_fitbit_user(&t, "pl-limit").await;
    let range = READ_RANGE;
    let fitbit = t.get(&format!("/v2/summary/activity/{user}?{range}&provider=fitbit")).await;
    assert_eq!(fitbit.body["activity"].as_array().unwrap().len(), 9, "{}", fitbit.body);

    // More than the limit of another provider's summaries, all keyed before fitbit's.
    let uid = UserId::parse(&user).unwrap();
    let day = chrono::NaiveDate::from_ymd_opt(2026, 2, 20).unwrap();
    let template = data_items(&t, &user)
        .await
        .into_iter()
        .find(|(sk, _)| sk.starts_with("DATA#SUM#activity#2026-02-20#fitbit#"))
        .unwrap()
        .1;
    let ops: Vec<WriteOp> = (0..=MAX_ITEMS)
        .map(|n| WriteOp::Put {
            item: Item::new(
                keys::pipeline::summary(
                    uid,
                    &Resource::Activity,
                    day,
                    "apple_health_kit",
                    &format!("{n:06}"),
                ),
                template.clone(),
            ),
            condition: Condition::None,
        })
        .collect();
    for batch in ops.chunks(100) {
        t.deps.table.transact(batch.to_vec()).await.unwrap();
    }

    let a = t.get(&format!("/v2/summary/activity/{user}?{range}&provider=fitbit")).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(a.body, fitbit.body, "the other provider's items do not push fitbit's out");

    let a = t.get(&format!("/v2/summary/activity/{user}?{range}")).await;
    assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "never a silent cut");
    assert_eq!(error_locs(&a.body), vec![vec!["query".to_owned(), "end_date".to_owned()]]);
    assert!(a.body["detail"][0]["msg"].as_str().unwrap().contains(&MAX_ITEMS.to_string()), "{}", a.body);
}

#[tokio::test]
async fn pipeline_duplicate_delivery_of_every_message_kind_changes_nothing() {
    let t = TestApp::embedded().await;
    let stack = t.stack.as_ref().unwrap();
    let user = user_with(&t, "pl-4").await;
    connect(&t, &user, "fitbit").await;
    drain(&t).await;
    let before_items = data_items(&t, &user).await;
    let before_events = stack.bus.published().len();
    let created = events(&t, "provider.connection.created").pop().unwrap();
    let uid = UserId::parse(&user).unwrap();
    // The connection event again (as EventBridge may deliver it twice), the pull job it became,
    // a poll twice with nothing new, and the scheduled poll.
    let pull_sk =
        query_all(t.deps.table.as_ref(), Query::partition(keys::user_partition(uid)).prefix("PULL#"), 10)
            .await
            .unwrap()
            .pop()
            .unwrap()
            .key
            .sk;
    let pull_id = pull_sk.rsplit('#').next().unwrap().to_owned();
    let pull = serde_json::from_value::<wearlab_domain::pipeline::PullJob>(json!({
        "team_id": t.team, "user_id": user, "provider": "fitbit", "pull_id": pull_id,
    }))
    .unwrap();
    let poll = PollJob { team_id: t.team, user_id: uid, provider: "fitbit".into(), since: None };
    let messages = [
        PullMessage::Event(created.clone()),
        PullMessage::Event(created),
        PullMessage::Job(Job::Pull(pull.clone())),
        PullMessage::Job(Job::Pull(pull)),
        PullMessage::Job(Job::Poll(poll.clone())),
        PullMessage::Job(Job::Poll(poll)),
        PullMessage::Job(Job::PollAll {}),
    ];
    stack
        .queue
        .send(QueueName::Pull, messages.iter().map(|m| Outgoing::now(m.body())).collect())
        .await
        .unwrap();
    drain(&t).await;
    assert_eq!(stack.bus.published().len(), before_events, "no event a second time");
    assert_eq!(data_items(&t, &user).await, before_items, "nothing stored twice or changed");
}

#[tokio::test]
async fn pipeline_poll_emits_daily_created_and_updated_only_on_change() {
    let t = TestApp::embedded().await;
    let stack = t.stack.as_ref().unwrap();
    let user = user_with(&t, "pl-5").await;
    connect(&t, &user, "oura").await;
    drain(&t).await;
    assert!(events(&t, "daily.").is_empty());
    // Later the same day: today's activity grew.
    t.clock.advance(Duration::hours(3));
    stack.schedule_poll().await.unwrap();
    drain(&t).await;
    let c = counts(&events(&t, "daily."));
    assert_eq!(c.get("daily.data.activity.updated"), Some(&1), "{c:?}");
    assert!(!c.contains_key("daily.data.heartrate.updated"), "unchanged data: no event {c:?}");
    assert!(!c.contains_key("daily.data.activity.created"), "{c:?}");
    // A new day: new data for every resource.
    t.clock.advance(Duration::days(1));
    stack.schedule_poll().await.unwrap();
    drain(&t).await;
    let c = counts(&events(&t, "daily."));
    for r in ["activity", "sleep", "sleep_cycle", "heartrate", "steps"] {
        assert_eq!(c.get(&format!("daily.data.{r}.created")), Some(&1), "{r}: {c:?}");
    }
    // The events carry the data: a timeseries day as `{source, data}`, a summary as the item
    // the summary endpoint answers.
    let e = events(&t, "daily.data.heartrate.created").pop().unwrap();
    assert_eq!(e.data["source"]["provider"], "oura");
    let samples = e.data["data"].as_array().unwrap();
    assert!(
        !samples.is_empty()
            && samples.iter().all(|s| s["timestamp"].as_str().unwrap().starts_with("2026-03-02"))
    );
    let e = events(&t, "daily.data.activity.created").pop().unwrap();
    let read = t.get(&format!("/v2/summary/activity/{user}?start_date=2026-03-02&end_date=2026-03-02")).await;
    assert_eq!(e.data, read.body["activity"][0], "{}", read.body);
    assert_eq!(e.data["user_id"], user.as_str());
    assert_eq!(e.data["source"]["provider"], "oura");
    // Nothing new: nothing emitted.
    let n = stack.bus.published().len();
    stack.schedule_poll().await.unwrap();
    drain(&t).await;
    assert_eq!(stack.bus.published().len(), n);
}

/// A stored day in columns (`{"o","t","u","v"}`, see the pipeline's `columns.rs`) in the
/// shape days were stored in before columns, with that shape's hash: the API's `{source,
/// data}` and the SHA-256 of its text.
fn as_stored_before_columns(body: &Value, source: &Value) -> Value {
    use sha2::Digest;
    let c = &body["c"];
    let runs = |runs: &Value| -> Vec<Value> {
        runs.as_array()
            .unwrap()
            .iter()
            .flat_map(|r| std::iter::repeat_n(r[0].clone(), r[1].as_u64().unwrap() as usize))
            .collect()
    };
    let (units, offsets) = (runs(&c["u"]), runs(&c["o"]));
    assert!(c.get("n").is_none(), "the simulator's samples are whole seconds");
    let mut seconds = 0;
    let data: Vec<Value> = c["t"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(i, t)| {
            seconds += t.as_i64().unwrap();
            let at = chrono::DateTime::from_timestamp(seconds, 0).unwrap();
            json!({"timestamp": at, "timezone_offset": offsets[i], "unit": units[i], "value": c["v"][i]})
        })
        .collect();
    let v = json!({"data": data, "source": source});
    let h = hex::encode(sha2::Sha256::digest(serde_json::to_vec(&v).unwrap()));
    json!({"h": h, "v": v})
}

/// Days of samples stored in the API's shape (before columns) read back as they did, and the
/// poll does not announce them as changed when the provider gives the same samples: their
/// hash is compared in their own shape. Changed days are written in columns.
#[tokio::test]
async fn pipeline_days_stored_before_columns_read_back_and_are_not_announced_again() {
    let t = TestApp::embedded().await;
    let stack = t.stack.as_ref().unwrap();
    let user = user_with(&t, "pl-columns").await;
    connect(&t, &user, "oura").await;
    drain(&t).await;
    let uid = UserId::parse(&user).unwrap();
    let series: Vec<(String, Value)> =
        data_items(&t, &user).await.into_iter().filter(|(sk, _)| sk.starts_with("DATA#TS#")).collect();
    assert!(series.len() > 100 && series.iter().all(|(_, b)| b.get("c").is_some() && b.get("v").is_none()));
    let today = t.deps.now().date_naive().to_string();
    let yesterday = (t.deps.now().date_naive() - Duration::days(1)).to_string();
    let before = (read_day(&t, &user, &yesterday).await, read_day(&t, &user, &today).await);
    assert!(!before.0.is_empty() && !before.1.is_empty());
    let path = format!("/v2/timeseries/{user}/heartrate/grouped?start_date={today}&end_date={today}");
    let source = t.get(&path).await.body["groups"]["oura"][0]["source"].clone();
    assert_eq!(source["provider"], "oura");
    for (sk, body) in &series {
        let key = wearlab_domain::ports::Key::new(keys::user_partition(uid), sk.clone());
        let old = wearlab_domain::ports::Item::new(key, as_stored_before_columns(body, &source));
        t.deps.table.put(old, wearlab_domain::ports::Condition::None).await.unwrap();
    }
    assert_eq!((read_day(&t, &user, &yesterday).await, read_day(&t, &user, &today).await), before);

    // Later the same day: the same heart rate, so no heart-rate event, and the old days stay.
    t.clock.advance(Duration::hours(3));
    stack.schedule_poll().await.unwrap();
    drain(&t).await;
    let c = counts(&events(&t, "daily."));
    assert!(!c.keys().any(|k| k.starts_with("daily.data.heartrate")), "unchanged data: no event {c:?}");
    assert_eq!(c.get("daily.data.activity.updated"), Some(&1), "the poll ran: {c:?}");
    let own = format!("DATA#TS#heartrate#{today}#oura");
    let items = data_items(&t, &user).await;
    let stored = |sk: &str| items.iter().find(|(k, _)| k == sk).map(|(_, b)| b.clone()).unwrap();
    assert!(stored(&own).get("v").is_some(), "an unchanged day is not rewritten");

    // A new day is written in columns, and every day reads back.
    t.clock.advance(Duration::days(1));
    stack.schedule_poll().await.unwrap();
    drain(&t).await;
    let c = counts(&events(&t, "daily."));
    assert_eq!(c.get("daily.data.heartrate.created"), Some(&1), "{c:?}");
    let tomorrow = t.deps.now().date_naive().to_string();
    let items = data_items(&t, &user).await;
    let new = items.iter().find(|(k, _)| *k == format!("DATA#TS#heartrate#{tomorrow}#oura")).unwrap();
    assert!(new.1.get("c").is_some());
    assert!(!read_day(&t, &user, &tomorrow).await.is_empty());
    assert_eq!(read_day(&t, &user, &yesterday).await, before.0);
}

#[tokio::test]
async fn pipeline_sleeps_stored_before_sleep_types_read_back_typed_by_their_length() {
    let t = TestApp::embedded().await;
    let user = pulled_fitbit_user(&t, "pl-sleep-type").await;
    let uid = UserId::parse(&user).unwrap();
    let sleeps: Vec<(String, Value)> =
        data_items(&t, &user).await.into_iter().filter(|(sk, _)| sk.starts_with("DATA#SUM#sleep#")).collect();
    assert!(sleeps.len() >= 9, "{}", sleeps.len());
    // Every stored sleep as an earlier version wrote it: no `type`; the first one 2 hours long.
    for (i, (sk, body)) in sleeps.iter().enumerate() {
        let mut old = body.clone();
        assert_eq!(old["v"].as_object_mut().unwrap().remove("type"), Some(json!("long_sleep")));
        if i == 0 {
            old["v"]["duration"] = json!(7200);
        }
        let key = wearlab_domain::ports::Key::new(keys::user_partition(uid), sk.clone());
        let item = wearlab_domain::ports::Item::new(key, old);
        t.deps.table.put(item, wearlab_domain::ports::Condition::None).await.unwrap();
    }
    let a = t.get(&format!("/v2/summary/sleep/{user}?start_date=2025-01-01&end_date=2026-03-01")).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let types: Vec<&str> =
        a.body["sleep"].as_array().unwrap().iter().map(|s| s["type"].as_str().unwrap()).collect();
    assert_eq!(types.len(), sleeps.len());
    assert_eq!(types[0], "short_sleep", "under 3 hours");
    assert!(types[1..].iter().all(|t| *t == "long_sleep"), "{types:?}");
}

#[tokio::test]
async fn pipeline_preferences_bounds_and_hypnogram_setting() {
    let t = TestApp::embedded().await;
    let a = t.get("/v2/team/data_pull_preferences").await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(a.body, json!({"default_history_days": 90, "history_days": {}, "hypnogram_events": false}));
    let bad = json!({"default_history_days": 366, "history_days": {"oura": 0, "nope": 5}});
    let a = t.send(Method::PUT, "/v2/team/data_pull_preferences", Some(&t.key), Some(&bad.to_string())).await;
    assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", a.body);
    assert_eq!(error_locs(&a.body).len(), 3);
    let good = json!({"default_history_days": 90, "history_days": {"oura": 10}, "hypnogram_events": true});
    let a =
        t.send(Method::PUT, "/v2/team/data_pull_preferences", Some(&t.key), Some(&good.to_string())).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(t.get("/v2/team/data_pull_preferences").await.body, good);

    // 10 days, bounded further by the user's ingestion_start.
    let user = user_with(&t, "pl-6").await;
    let a = t.patch(&format!("/v2/user/{user}"), json!({"ingestion_start": "2026-02-25"})).await;
    assert_eq!(a.status, StatusCode::NO_CONTENT, "{}", a.body);
    connect(&t, &user, "oura").await;
    drain(&t).await;
    let e = events(&t, "historical.data.sleep.created").pop().unwrap();
    assert_eq!(e.data["start_date"], "2026-02-25");
    assert_eq!(e.data["end_date"], "2026-03-01");
    let c = counts(&events(&t, "historical."));
    assert_eq!(c.get("historical.timeseries.hypnogram.created"), Some(&1), "switched on: {c:?}");
    assert_eq!(c.get("historical.data.sleep_cycle.created"), Some(&1));
    // The daily ones too.
    t.clock.advance(Duration::days(1));
    t.stack.as_ref().unwrap().schedule_poll().await.unwrap();
    drain(&t).await;
    let c = counts(&events(&t, "daily."));
    assert_eq!(c.get("daily.timeseries.hypnogram.created"), Some(&1), "{c:?}");
    assert_eq!(c.get("daily.data.sleep_cycle.created"), Some(&1), "{c:?}");
}

#[tokio::test]
async fn pipeline_waits_for_throttle_capacity() {
    let t = TestApp::embedded().await;
    let stack = t.stack.as_ref().unwrap();
    // The team used oura's whole window (150 per 5 minutes) a minute ago.
    t.clock.advance(Duration::minutes(-1));
    for i in 0..150 {
        wearlab_domain::common::throttle::acquire(&t.deps, t.team, "oura", &format!("other-{i}"))
            .await
            .unwrap();
    }
    t.clock.advance(Duration::minutes(1));
    let user = user_with(&t, "pl-7").await;
    connect(&t, &user, "oura").await;
    drain(&t).await;
    assert!(events(&t, "historical.").is_empty(), "no capacity yet");
    assert_eq!(stack.queue.depth(QueueName::Pull).await.unwrap(), 1, "waiting on the queue");
    t.clock.advance(Duration::minutes(4));
    drain(&t).await;
    assert!(!events(&t, "historical.").is_empty(), "pulled once capacity came back");
}

#[tokio::test]
async fn pipeline_erasure_leaves_no_data_item() {
    let t = TestApp::embedded().await;
    let user = user_with(&t, "pl-8").await;
    connect(&t, &user, "oura").await;
    drain(&t).await;
    assert!(!data_items(&t, &user).await.is_empty());
    let a = t.delete(&format!("/v2/user/{user}")).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    t.clock.advance(Duration::days(7) + Duration::minutes(1));
    t.run_due_jobs().await;
    let uid = UserId::parse(&user).unwrap();
    let left =
        query_all(t.deps.table.as_ref(), Query::partition(keys::user_partition(uid)), 10).await.unwrap();
    assert!(left.is_empty(), "{:?}", left.iter().map(|i| &i.key.sk).collect::<Vec<_>>());
    for partition in keys::pipeline::poll_index_partitions() {
        let polled = query_all(t.deps.table.as_ref(), Query::gsi1(partition), 10).await.unwrap();
        assert!(polled.is_empty(), "no longer polled");
    }
}

#[tokio::test]
async fn pipeline_poll_index_is_sharded_by_user_and_still_reads_the_legacy_partition() {
    let t = TestApp::embedded().await;
    let stack = t.stack.as_ref().unwrap();
    let mut users = Vec::new();
    for i in 0..8 {
        let user = user_with(&t, &format!("pl-shard-{i}")).await;
        connect(&t, &user, "oura").await;
        users.push(UserId::parse(&user).unwrap());
    }
    drain(&t).await;
    let mut shards = std::collections::BTreeSet::new();
    for &user in &users {
        let item = t.deps.table.get(&keys::pipeline::sync(user, "oura")).await.unwrap().unwrap();
        let index = item.gsi1.expect("indexed for the poll");
        assert_eq!(index.pk, keys::pipeline::poll_index(user));
        assert!(index.pk.starts_with("POLL#") && index.pk.len() == "POLL#00".len(), "{}", index.pk);
        shards.insert(index.pk);
    }
    assert!(shards.len() > 1, "8 random users share one of 64 shards: {shards:?}");
    // An entry written before the shards: the poll still finds it and moves it to its shard.
    let legacy = users[0];
    let item = t.deps.table.get(&keys::pipeline::sync(legacy, "oura")).await.unwrap().unwrap();
    let index = item.gsi1.clone().unwrap();
    let old = wearlab_domain::ports::Item::new(item.key.clone(), item.body.clone())
        .with_gsi1(keys::pipeline::LEGACY_POLL_INDEX, index.sk);
    t.deps.table.put(old, wearlab_domain::ports::Condition::None).await.unwrap();
    t.clock.advance(Duration::days(1));
    stack.schedule_poll().await.unwrap();
    drain(&t).await;
    let polled: std::collections::BTreeSet<String> =
        events(&t, "daily.data.heartrate.created").into_iter().map(|e| e.user_id.to_string()).collect();
    assert_eq!(polled.len(), users.len(), "every connection polled once, the legacy entry's too");
    let item = t.deps.table.get(&keys::pipeline::sync(legacy, "oura")).await.unwrap().unwrap();
    assert_eq!(item.gsi1.unwrap().pk, keys::pipeline::poll_index(legacy), "moved to its shard");
    let left =
        query_all(t.deps.table.as_ref(), Query::gsi1(keys::pipeline::LEGACY_POLL_INDEX), 10).await.unwrap();
    assert!(left.is_empty());
}

/// What the tests change about the simulator: one chunk of one resource fails `fails` times, a
/// poll (a range of a few days) of `densify` gives its last day's hourly samples as 1-second
/// samples, a provider's fetches wait while a flag is set, and the first `revoke_fails`
/// revokes fail (`revoked` counts those reaching the simulator). Used as `Altered<FlakyProviders>`.
pub(crate) struct FlakyProviders {
    resource: Option<Resource>,
    chunk_start: chrono::NaiveDate,
    /// Fetches of `resource`'s chunk at `chunk_start` answer the provider's 500 this many times.
    fails: std::sync::atomic::AtomicUsize,
    densify: Option<Resource>,
    /// Fetches of this provider wait while the flag is set (a slow source the test lets go).
    slow: Option<(&'static str, std::sync::Arc<std::sync::atomic::AtomicBool>)>,
    pub(crate) revoke_fails: std::sync::atomic::AtomicUsize,
    pub(crate) revoked: std::sync::atomic::AtomicUsize,
}

impl FlakyProviders {
    /// Nothing changed.
    pub(crate) fn plain() -> Self {
        Self {
            resource: None,
            chunk_start: "2000-01-01".parse().unwrap(),
            fails: Default::default(),
            densify: None,
            slow: None,
            revoke_fails: Default::default(),
            revoked: Default::default(),
        }
    }

    /// The simulator `inner` with these changes.
    pub(crate) fn on(self, inner: std::sync::Arc<dyn Providers>) -> std::sync::Arc<Altered<Self>> {
        std::sync::Arc::new(Altered::new(inner, self))
    }
}

#[async_trait::async_trait]
impl Alteration for FlakyProviders {
    async fn before_fetch(
        &self,
        p: &str,
        resource: &Resource,
        range: DateRange,
    ) -> Result<(), ProviderError> {
        use std::sync::atomic::Ordering::SeqCst;
        if Some(resource) == self.resource.as_ref()
            && range.start == self.chunk_start
            && self.fails.fetch_update(SeqCst, SeqCst, |n| n.checked_sub(1)).is_ok()
        {
            return Err(ProviderError::Api("500".into()));
        }
        if let Some((provider, held)) = &self.slow
            && *provider == p
        {
            while held.load(SeqCst) {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        }
        Ok(())
    }

    fn after_fetch(
        &self,
        _p: &str,
        resource: &Resource,
        range: DateRange,
        mut fetched: FetchedResource,
    ) -> FetchedResource {
        // Only the test clock's days are dense: a historical pull's earlier days stay hourly
        // (its chunks of one day would otherwise make every day dense).
        if self.densify.as_ref() == Some(resource)
            && (range.end - range.start).num_days() <= 7
            && range.end >= crate::helpers::start_time().date_naive()
        {
            fetched.records = one_second_samples(fetched.records, |day| day == range.end);
        }
        fetched
    }

    fn before_deregister(&self, _p: &str) -> Result<(), ProviderError> {
        use std::sync::atomic::Ordering::SeqCst;
        if self.revoke_fails.fetch_update(SeqCst, SeqCst, |n| n.checked_sub(1)).is_ok() {
            return Err(ProviderError::Api("the provider's deauthorization endpoint answered 500".into()));
        }
        Ok(())
    }

    fn after_deregister(&self, _p: &str) {
        self.revoked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// An embedded app on the simulator altered by `alter`, with its stack and dependencies.
async fn with_providers(alter: FlakyProviders) -> (TestApp, wearlab_local::LocalStack, wearlab_domain::Deps) {
    let base = TestApp::embedded().await;
    let stack = base.stack.clone().unwrap();
    let mut deps = stack.deps.clone();
    deps.providers = alter.on(stack.deps.providers.clone());
    let t = TestApp::on(deps.clone(), base.clock.clone()).await;
    (t, stack, deps)
}

#[tokio::test]
async fn pipeline_a_day_of_one_second_heart_rate_is_split_into_events_under_the_size_limit() {
    use wearlab_domain::pipeline::MAX_EVENT_BYTES;

    let (t, stack, deps) =
        with_providers(FlakyProviders { densify: Some(Resource::Heartrate), ..FlakyProviders::plain() })
            .await;
    let user = user_with(&t, "pl-dense").await;
    connect(&t, &user, "oura").await;
    let run =
        || stack.queue.run_once(QueueName::Pull, |env, _| pull_worker::handle(&deps, &stack.queue, env));
    for _ in 0..50 {
        if run().await.unwrap() == 0 {
            break;
        }
    }
    t.clock.advance(Duration::days(1));
    stack.schedule_poll().await.unwrap();
    for _ in 0..50 {
        if run().await.unwrap() == 0 {
            break;
        }
    }
    let parts: Vec<EventEnvelope> = stack
        .bus
        .published()
        .into_iter()
        .filter(|e| e.event_type == "daily.data.heartrate.created" && e.team_id == t.team.as_uuid())
        .collect();
    let whole: usize = parts.iter().map(|e| serde_json::to_vec(e).unwrap().len()).sum();
    assert!(whole > 256 * 1024, "the day would not fit one event: {whole} bytes");
    assert!(parts.len() > 1, "split into several events");
    for e in &parts {
        assert!(serde_json::to_vec(e).unwrap().len() <= MAX_EVENT_BYTES);
        assert_eq!(e.data["source"]["provider"], "oura", "each part is a valid event on its own");
    }
    // Together the parts carry every sample of the day, as the timeseries endpoint reads it.
    let sent: Vec<Value> = parts.iter().flat_map(|e| e.data["data"].as_array().unwrap().clone()).collect();
    assert_eq!(sent, read_day(&t, &user, "2026-03-02").await);
    assert!(sent.len() > 3600, "{}", sent.len());
}

/// Every sample of `day` of the user's oura heart rate, through every page of the timeseries
/// endpoint (bounded).
async fn read_day(t: &TestApp, user: &str, day: &str) -> Vec<Value> {
    let path = format!("/v2/timeseries/{user}/heartrate/grouped?start_date={day}&end_date={day}");
    let mut samples = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..1_000 {
        let a = match &cursor {
            None => t.get(&path).await,
            Some(c) => t.get(&format!("{path}&next_cursor={c}")).await,
        };
        assert_eq!(a.status, StatusCode::OK, "{}", a.body);
        if let Some(groups) = a.body["groups"]["oura"].as_array() {
            samples.extend(groups.iter().flat_map(|g| g["data"].as_array().unwrap().clone()));
        }
        match a.body["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => return samples,
        }
    }
    panic!("more than 1,000 pages");
}

/// A day of 1-second heart rate (86,400 samples: about 7 MB in the API's JSON, 700 KB in
/// columns) is more than the 400 KB DynamoDB keeps in an item: it is stored in parts of 2,000
/// samples, each well under the limit, and
/// read back whole and in order, also through pages that start inside the day. Parts left from
/// a day that once had more samples are not read.
async fn a_day_of_one_second_samples_is_stored_in_parts(t: TestApp) {
    let user = user_with(&t, "pl-parts").await;
    connect(&t, &user, "oura").await;
    let mut prefs = wearlab_models::data::DataPullPreferences::default();
    prefs.history_days.insert("oura".into(), 2);
    wearlab_domain::pipeline::set_preferences(&t.deps, t.team, prefs).await.unwrap();
    let created = EventEnvelope {
        event_type: "provider.connection.created".into(),
        user_id: user.parse().unwrap(),
        client_user_id: "pl-parts".into(),
        team_id: t.team.as_uuid(),
        data: json!({"user_id": user, "provider": {"slug": "oura", "name": "Oura", "logo": null}}),
    };
    let outcome = wearlab_domain::pipeline::handle(&t.deps, t.queue(), PullMessage::Event(created)).await;
    assert_eq!(outcome, wearlab_domain::ports::Outcome::Ack);
    // The densified day is the last of the pulled range: today.
    let day = t.deps.now().date_naive().to_string();
    let day = day.as_str();
    let own = format!("DATA#TS#heartrate#{day}#oura");
    let items: Vec<(String, Value)> =
        data_items(&t, &user).await.into_iter().filter(|(sk, _)| sk.starts_with(&own)).collect();
    assert_eq!(items.len(), 44, "86,400 samples in parts of 2,000");
    assert_eq!(items[0].1["parts"], 44);
    for (sk, body) in &items {
        // In columns: about 8 bytes a sample (the second's distance from the one before, the value).
        let bytes = serde_json::to_vec(body).unwrap().len();
        assert!(bytes < 24 * 1024, "{sk}: {bytes} bytes");
    }
    let samples = read_day(&t, &user, day).await;
    assert_eq!(samples.len(), 86_400);
    let times: Vec<&str> = samples.iter().map(|s| s["timestamp"].as_str().unwrap()).collect();
    assert!(times.windows(2).all(|w| w[0] < w[1]), "in order, none twice");

    // The day rewritten with fewer samples (one part): the other parts stay but are not read.
    let uid = UserId::parse(&user).unwrap();
    let key = wearlab_domain::ports::Key::new(keys::user_partition(uid), own.clone());
    let mut first = t.deps.table.get(&key).await.unwrap().unwrap();
    first.body["parts"] = json!(1);
    first.body["h"] = json!("changed");
    t.deps.table.put(first, wearlab_domain::ports::Condition::None).await.unwrap();
    assert_eq!(read_day(&t, &user, day).await, samples[..2_000].to_vec());
}

#[tokio::test]
async fn pipeline_a_day_of_one_second_samples_is_stored_in_parts() {
    let (t, _stack, deps) =
        with_providers(FlakyProviders { densify: Some(Resource::Heartrate), ..FlakyProviders::plain() })
            .await;
    a_day_of_one_second_samples_is_stored_in_parts(TestApp::on(deps, t.clock.clone()).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipeline_a_day_of_one_second_samples_is_stored_in_parts_on_dynamodb() {
    let (t, table, _) = crate::users_on_dynamodb::on_moto().await;
    let queue = wearlab_embedded::TableQueue::new(table.clone(), t.clock.clone());
    let t = t.with_queue(std::sync::Arc::new(queue));
    let mut deps = t.deps.clone();
    deps.providers = FlakyProviders { densify: Some(Resource::Heartrate), ..FlakyProviders::plain() }
        .on(t.deps.providers.clone());
    a_day_of_one_second_samples_is_stored_in_parts(TestApp::on(deps, t.clock.clone()).await).await;
}

#[tokio::test]
async fn pipeline_failed_chunk_is_retried_and_the_event_waits_for_the_last_chunk() {
    let (t, stack, deps) = with_providers(FlakyProviders {
        resource: Some(Resource::Heartrate),
        // 90 days from 2025-12-02: a first chunk of one day (the series' density is not known
        // yet), then chunks of 30 (24 samples a day is sparse): the third chunk.
        chunk_start: "2026-01-02".parse().unwrap(),
        fails: 1.into(),
        ..FlakyProviders::plain()
    })
    .await;
    let user = user_with(&t, "pl-9").await;
    connect(&t, &user, "oura").await;
    let run =
        || stack.queue.run_once(QueueName::Pull, |env, _| pull_worker::handle(&deps, &stack.queue, env));
    run().await.unwrap();
    let heartrate = |t: &TestApp| {
        stack
            .bus
            .published()
            .iter()
            .filter(|e| e.event_type == "historical.data.heartrate.created" && e.team_id == t.team.as_uuid())
            .count()
    };
    assert_eq!(heartrate(&t), 0, "the resource's last chunk is not fetched yet");
    let items = data_items(&t, &user).await;
    assert_eq!(
        items.iter().filter(|(sk, _)| sk.starts_with("DATA#TS#heartrate#")).count(),
        31,
        "the first two chunks are kept"
    );
    assert_eq!(stack.queue.depth(QueueName::Pull).await.unwrap(), 1, "the message comes back");
    // The first failure waits 15 to 30 s (30 s, half of it random).
    t.clock.advance(Duration::seconds(14));
    assert_eq!(run().await.unwrap(), 0, "not before the backoff's sure half");
    t.clock.advance(Duration::seconds(17));
    run().await.unwrap();
    assert_eq!(heartrate(&t), 1);
    let items = data_items(&t, &user).await;
    assert_eq!(items.iter().filter(|(sk, _)| sk.starts_with("DATA#TS#heartrate#")).count(), 90);
    assert_eq!(stack.queue.depth(QueueName::Pull).await.unwrap(), 0);
    let c = counts(
        &stack
            .bus
            .published()
            .into_iter()
            .filter(|e| e.event_type.starts_with("historical."))
            .collect::<Vec<_>>(),
    );
    assert!(c.values().all(|n| *n == 1), "one event per resource: {c:?}");
}

#[tokio::test]
async fn pipeline_refresh_leaves_a_slow_source_in_progress_and_the_pull_worker_finishes_it() {
    let held = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (t, stack, deps) =
        with_providers(FlakyProviders { slow: Some(("oura", held.clone())), ..FlakyProviders::plain() })
            .await;
    let run_pull_worker = || async {
        for _ in 0..50 {
            let run =
                stack.queue.run_once(QueueName::Pull, |env, _| pull_worker::handle(&deps, &stack.queue, env));
            if run.await.unwrap() == 0 {
                break;
            }
        }
    };
    let user = user_with(&t, "pl-refresh-slow").await;
    connect(&t, &user, "oura").await;
    connect(&t, &user, "freestyle_libre").await;
    run_pull_worker().await; // the historical pulls
    let created = |t: &TestApp, event_type: &str| -> Vec<Value> {
        let mine = |e: &EventEnvelope| e.event_type == event_type && e.team_id == t.team.as_uuid();
        stack.bus.published().into_iter().filter(mine).map(|e| e.data).collect()
    };
    // A new day; oura answers slower than the refresh waits.
    t.clock.advance(Duration::days(1));
    held.store(true, std::sync::atomic::Ordering::SeqCst);
    let a = t.post_empty(&format!("/v2/user/refresh/{user}?timeout=5")).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(a.body["refreshed_sources"], json!(["freestyle_libre/glucose"]), "{}", a.body);
    let pending = a.body["in_progress_sources"].as_array().unwrap().clone();
    assert!(
        pending.contains(&json!("oura/activity")) && pending.contains(&json!("oura/heartrate")),
        "{pending:?}"
    );
    assert!(created(&t, "daily.data.activity.created").is_empty());
    // The refresh left a poll of oura on the pull queue; the worker finishes it.
    held.store(false, std::sync::atomic::Ordering::SeqCst);
    assert_eq!(stack.queue.depth(QueueName::Pull).await.unwrap(), 1);
    run_pull_worker().await;
    let read = t.get(&format!("/v2/summary/activity/{user}?start_date=2026-03-02&end_date=2026-03-02")).await;
    assert_eq!(read.status, StatusCode::OK, "{}", read.body);
    assert_eq!(read.body["activity"].as_array().unwrap().len(), 1, "{}", read.body);
    assert_eq!(created(&t, "daily.data.activity.created"), vec![read.body["activity"][0].clone()]);
    assert_eq!(created(&t, "daily.data.heartrate.created").len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipeline_pull_poll_and_reads_on_dynamodb() {
    let (t, table, _) = crate::users_on_dynamodb::on_moto().await;
    let queue = wearlab_embedded::TableQueue::new(table.clone(), t.clock.clone());
    let t = t.with_queue(std::sync::Arc::new(queue.clone()));
    let user = user_with(&t, "pl-moto").await;
    connect(&t, &user, "oura").await;
    let mut prefs = wearlab_models::data::DataPullPreferences::default();
    prefs.history_days.insert("oura".into(), 10);
    wearlab_domain::pipeline::set_preferences(&t.deps, t.team, prefs).await.unwrap();
    let created = EventEnvelope {
        event_type: "provider.connection.created".into(),
        user_id: user.parse().unwrap(),
        client_user_id: "pl-moto".into(),
        team_id: t.team.as_uuid(),
        data: json!({"user_id": user, "provider": {"slug": "oura", "name": "Oura", "logo": null}}),
    };
    for _ in 0..2 {
        let outcome =
            wearlab_domain::pipeline::handle(&t.deps, t.queue(), PullMessage::Event(created.clone())).await;
        assert_eq!(outcome, wearlab_domain::ports::Outcome::Ack);
    }
    let items = data_items(&t, &user).await;
    assert_eq!(items.iter().filter(|(sk, _)| sk.starts_with("DATA#TS#heartrate#")).count(), 10);
    let a = t.get(&format!("/v2/summary/sleep/{user}?start_date=2026-02-20&end_date=2026-03-01")).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(a.body["sleep"].as_array().unwrap().len(), 9, "tonight's sleep has not happened yet");
    let path = format!("/v2/timeseries/{user}/heartrate/grouped?start_date=2026-02-20&end_date=2026-03-01");
    let a = t.get(&path).await;
    let cursor = a.body["next_cursor"].as_str().unwrap().to_owned();
    let b = t.get(&format!("{path}&next_cursor={cursor}")).await;
    assert_eq!(b.status, StatusCode::OK, "{}", b.body);
    assert_eq!(b.body["groups"]["oura"][0]["data"].as_array().unwrap().len(), 3 * 24);
    // The scheduled poll finds the connection through the index and polls it.
    t.clock.advance(Duration::days(1));
    let outcome =
        wearlab_domain::pipeline::handle(&t.deps, t.queue(), PullMessage::Job(Job::PollAll {})).await;
    assert_eq!(outcome, wearlab_domain::ports::Outcome::Ack);
    let n =
        queue.run_once(QueueName::Pull, |env, _| pull_worker::handle(&t.deps, t.queue(), env)).await.unwrap();
    assert_eq!(n, 1);
    let items = data_items(&t, &user).await;
    assert_eq!(items.iter().filter(|(sk, _)| sk.starts_with("DATA#TS#heartrate#")).count(), 11);
}

#[tokio::test]
async fn pipeline_pull_on_demand_runs_again() {
    let t = TestApp::embedded().await;
    let user = user_with(&t, "pl-10").await;
    connect(&t, &user, "oura").await;
    drain(&t).await;
    let uid = UserId::parse(&user).unwrap();
    let start = wearlab_domain::pipeline::pull::start;
    assert!(start(&t.deps, t.queue(), t.team, uid, "fitbit").await.is_err(), "no fitbit connection");
    t.clock.advance(Duration::hours(1));
    start(&t.deps, t.queue(), t.team, uid, "oura").await.unwrap();
    drain(&t).await;
    let c = counts(&events(&t, "historical."));
    assert_eq!(c.get("historical.data.sleep.created"), Some(&2), "{c:?}");
    assert!(c.values().all(|n| *n == 2), "{c:?}");
}

/// One summary read that must succeed: the list under `field`.
async fn summary(t: &TestApp, path: &str, user: &str, field: &str, query: String) -> Vec<Value> {
    let a = t.get(&format!("/v2/summary/{path}/{user}?{query}")).await;
    assert_eq!(a.status, StatusCode::OK, "{path}?{query}: {}", a.body);
    a.body[field].as_array().unwrap_or_else(|| panic!("{path}: {}", a.body)).clone()
}

/// Every summary endpoint through HTTP, for a user whose only connection is fitbit: date bounds
/// (a narrow window answers exactly the wide answer's days in it), the provider filter, another
/// team's user and no key. Run on the setup of the test above, so that it costs no second pull.
async fn every_summary_honours_dates_provider_and_team(t: &TestApp, user: &str) {
    let other = t.other_team_key().await;
    let wide = "start_date=2025-12-02&end_date=2026-03-01";
    let (from, to) = ("2026-02-20", "2026-02-22");
    for (path, field) in [
        ("activity", "activity"),
        ("sleep", "sleep"),
        ("sleep_cycle", "sleep_cycle"),
        ("workouts", "workouts"),
        ("body", "body"),
        ("meal", "meals"),
    ] {
        let read = |query: String| summary(t, path, user, field, query);
        let date = |v: &Value| v["calendar_date"].as_str().unwrap().to_owned();
        let all = read(wide.to_owned()).await;
        assert!(!all.is_empty(), "{path}: fitbit has it");
        assert!(all.iter().all(|v| ("2025-12-02".."2026-03-02").contains(&date(v).as_str())), "{path}");
        let window = read(format!("start_date={from}&end_date={to}")).await;
        let expected: Vec<&Value> =
            all.iter().filter(|v| (from..="2026-02-22").contains(&date(v).as_str())).collect();
        assert_eq!(window.iter().collect::<Vec<_>>(), expected, "{path}: the window's days, no more");

        assert!(all.iter().all(|v| v["source"]["provider"] == "fitbit"), "{path}");
        assert_eq!(read(format!("{wide}&provider=fitbit")).await, all, "{path}: all of it is fitbit's");
        assert_eq!(
            read(format!("{wide}&provider=oura")).await,
            Vec::<Value>::new(),
            "{path}: none is oura's"
        );

        let theirs =
            t.send(Method::GET, &format!("/v2/summary/{path}/{user}?{wide}"), Some(&other), None).await;
        assert_eq!(theirs.status, StatusCode::NOT_FOUND, "{path}: another team's user");
        let anonymous = t.send(Method::GET, &format!("/v2/summary/{path}/{user}?{wide}"), None, None).await;
        assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED, "{path}");
    }
    let mine = t.get(&format!("/v2/summary/profile/{user}?provider=fitbit")).await;
    assert_eq!((mine.status, &mine.body["source"]["provider"]), (StatusCode::OK, &json!("fitbit")));
    let theirs = t.send(Method::GET, &format!("/v2/summary/profile/{user}"), Some(&other), None).await;
    assert_eq!(theirs.status, StatusCode::NOT_FOUND);
}

/// Every timeseries resource of fitbit through HTTP, page by page: the pages follow each other
/// without gap or repeat, stay within the dates, and another team's user is 404.
async fn every_timeseries_pages_within_its_dates(t: &TestApp, user: &str) {
    let other = t.other_team_key().await;
    // Ten days that all have data, and data on the days around them.
    let range = "start_date=2026-02-10&end_date=2026-02-19";
    for resource in ["heartrate", "steps", "hrv", "blood_oxygen", "calories_active", "weight"] {
        let path = format!("/v2/timeseries/{user}/{resource}/grouped?{range}");
        let mut stamps: Vec<String> = Vec::new();
        let mut pages = 0;
        let mut cursor: Option<String> = None;
        for _ in 0..10 {
            let page_path = match &cursor {
                Some(c) => format!("{path}&next_cursor={c}"),
                None => path.clone(),
            };
            let a = t.get(&page_path).await;
            assert_eq!(a.status, StatusCode::OK, "{resource}: {}", a.body);
            pages += 1;
            let groups = a.body["groups"].as_object().unwrap();
            assert_eq!(groups.keys().collect::<Vec<_>>(), ["fitbit"], "{resource}");
            for g in a.body["groups"]["fitbit"].as_array().unwrap() {
                assert_eq!(g["source"]["provider"], "fitbit");
                stamps.extend(
                    g["data"].as_array().unwrap().iter().map(|s| s["timestamp"].as_str().unwrap().to_owned()),
                );
            }
            cursor = a.body["next_cursor"].as_str().map(str::to_owned);
            if cursor.is_none() {
                break;
            }
        }
        assert!(cursor.is_none(), "{resource}: the pages end");
        assert_eq!(pages, 2, "{resource}: 10 days in pages of 7");
        assert_eq!(stamps.len(), 10 * 24, "{resource}: hourly samples over the 10 days");
        assert!(stamps.windows(2).all(|w| w[0] < w[1]), "{resource}: no repeat across pages");
        assert_eq!(stamps.first().unwrap(), "2026-02-10T00:00:00Z", "{resource}");
        assert!(stamps.last().unwrap().as_str() < "2026-02-20", "{resource}: within end_date");
        let theirs = t.send(Method::GET, &path, Some(&other), None).await;
        assert_eq!(theirs.status, StatusCode::NOT_FOUND, "{resource}: another team's user");
    }
}

/// A provider that keeps answering 500: the pull backs off (doubling, jittered) and gives the
/// throttle slot back meanwhile; after the retry budget the connection is in error and the team
/// hears `provider.connection.error`; what was stored stays; other pulls go on.
#[tokio::test]
async fn pipeline_a_provider_that_keeps_failing_backs_off_then_marks_the_connection_in_error() {
    use wearlab_domain::pipeline::PROVIDER_FAILURE_BUDGET;

    let (t, stack, deps) = with_providers(FlakyProviders {
        resource: Some(Resource::Heartrate),
        chunk_start: "2026-01-02".parse().unwrap(),
        fails: usize::MAX.into(),
        ..FlakyProviders::plain()
    })
    .await;
    let failing = user_with(&t, "pl-failing").await;
    connect(&t, &failing, "oura").await;
    let other = user_with(&t, "pl-other").await;
    connect(&t, &other, "freestyle_libre").await;
    let run =
        || stack.queue.run_once(QueueName::Pull, |env, _| pull_worker::handle(&deps, &stack.queue, env));
    let mine = |t: &TestApp, event_type: &str| {
        stack
            .bus
            .published()
            .into_iter()
            .filter(|e| e.event_type == event_type && e.team_id == t.team.as_uuid())
            .count()
    };
    run().await.unwrap();
    assert_eq!(mine(&t, "historical.data.glucose.created"), 1, "the other user's pull is not held up");
    let mut tries = 1;
    // The waits before tries 2..5 are at most 30, 60, 120 and 240 s.
    for full in [30, 60, 120, 240] {
        assert_eq!(stack.queue.depth(QueueName::Pull).await.unwrap(), 1, "try {tries}: the pull comes back");
        t.clock.advance(Duration::seconds(full / 2 - 1));
        assert_eq!(run().await.unwrap(), 0, "try {tries}: nothing before half the wait");
        t.clock.advance(Duration::seconds(full / 2 + 1));
        assert_eq!(run().await.unwrap(), 1, "try {tries}: the pull runs again within the wait");
        tries += 1;
    }
    assert_eq!(tries, PROVIDER_FAILURE_BUDGET);
    assert_eq!(stack.queue.depth(QueueName::Pull).await.unwrap(), 0, "the pull ended");
    let providers = t.get(&format!("/v2/user/providers/{failing}")).await;
    assert_eq!(providers.status, StatusCode::OK, "{}", providers.body);
    let oura =
        providers.body["providers"].as_array().unwrap().iter().find(|p| p["slug"] == "oura").unwrap().clone();
    assert_eq!(oura["status"], "error", "{oura}");
    assert_eq!(oura["error_details"]["error_type"], "provider_api_error", "{oura}");
    let errors: Vec<EventEnvelope> = stack
        .bus
        .published()
        .into_iter()
        .filter(|e| e.event_type == "provider.connection.error" && e.team_id == t.team.as_uuid())
        .collect();
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].user_id, failing.parse::<uuid::Uuid>().unwrap());
    assert_eq!(mine(&t, "historical.data.heartrate.created"), 0, "the failing resource never completed");
    let items = data_items(&t, &failing).await;
    assert_eq!(
        items.iter().filter(|(sk, _)| sk.starts_with("DATA#TS#heartrate#")).count(),
        31,
        "the chunks stored before the outage stay"
    );
    assert_eq!(mine(&t, "historical.data.sleep.created"), 1, "the other resources completed");
}
