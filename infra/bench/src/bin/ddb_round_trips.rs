//! DynamoDB requests per operation, counted on the wire by `DynamoDbTable::round_trips()`
//! against an emulator (moto): `scripts/with-moto target/release/ddb-round-trips`.
//!
//! For each operation it reports the use case alone (`wearlab_domain::users::*`) and a whole
//! request through the router, where auth adds one GetItem of the API key unless the key is
//! cached (`AppState::new` caches 60 s per process; `AppState::without_auth_cache` does not).

use std::future::Future;

use http::{Method, StatusCode};
use wearlab_aws::DynamoDbTable;
use wearlab_bench::{request, send, user_id_of};
use wearlab_domain::common::ids::UserId;
use wearlab_domain::common::settings::Settings;
use wearlab_domain::teams;
use wearlab_domain::users::{self, NewUser, PageRequest};
use wearlab_models::CreateUserBody;
use wearlab_web::{App, AppState};

/// Users of the team before `list` is counted: one page of DynamoDB's 1 MB holds them all.
const TEAM_USERS: usize = 5;
const LIST_LIMIT: u64 = 100;

type Error = Box<dyn std::error::Error>;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Error> {
    let (deps, table, endpoint) = wearlab_bench::moto_deps().await?;
    let team = teams::create_team(&deps, "Bench team").await?.team_id;
    let key = teams::issue_key(&deps, team, "bench").await?.secret;
    let today = deps.now().date_naive();
    let new_user = |cid: &str| -> Result<NewUser, Error> {
        let body = CreateUserBody {
            client_user_id: cid.to_owned(),
            fallback_time_zone: None,
            fallback_birth_date: None,
            ingestion_start: None,
            ingestion_end: None,
        };
        Ok(NewUser::parse(body, today)?)
    };
    for i in 0..TEAM_USERS - 1 {
        users::create(&deps, team, new_user(&format!("seed-{i}"))?).await?;
    }

    let mut rows = Vec::new();

    // The use cases alone.
    let (user, create) = counted(&table, users::create(&deps, team, new_user("uc-create")?)).await;
    let user_id = UserId::from_uuid(user?.user_id);
    let (r, get) = counted(&table, users::get(&deps, team, user_id)).await;
    r?;
    let (r, list) =
        counted(&table, users::list(&deps, team, PageRequest::parse(None, Some(LIST_LIMIT))?)).await;
    assert_eq!(r?.total, TEAM_USERS as u64);
    let (r, resolve) = counted(&table, users::resolve(&deps, team, "uc-create")).await;
    r?;

    // Whole requests: warm auth cache (after one request that fills it) and no cache.
    let ports = wearlab_local::Ports::on_table(deps.table.clone(), deps.clock.clone());
    let warm = wearlab_local::app(AppState::new(deps.clone(), Settings::default()), &ports);
    let uncached = wearlab_local::app(AppState::without_auth_cache(deps.clone()), &ports);
    let (_, cold_first) =
        counted(&table, call(&warm, Method::GET, &format!("/v2/user/{}", user_id.as_uuid()), &key, None))
            .await;
    let mut per_request = Vec::new();
    for (i, app) in [&warm, &uncached].into_iter().enumerate() {
        let cid = format!("req-create-{i}");
        let body = format!(r#"{{"client_user_id":"{cid}"}}"#);
        let (created, c) = counted(&table, call(app, Method::POST, "/v2/user", &key, Some(body))).await;
        let id = user_id_of(&created?);
        let (r, g) = counted(&table, call(app, Method::GET, &format!("/v2/user/{id}"), &key, None)).await;
        r?;
        let (r, l) =
            counted(&table, call(app, Method::GET, &format!("/v2/user?limit={LIST_LIMIT}"), &key, None))
                .await;
        r?;
        let (r, rs) =
            counted(&table, call(app, Method::GET, &format!("/v2/user/resolve/{cid}"), &key, None)).await;
        r?;
        per_request.push([c, g, l, rs]);
    }

    // POST with an idempotency key: the first answer is kept, a repeat replays it.
    let idem = |cid: &str| {
        let mut req =
            request(Method::POST, "/v2/user", &key, Some(format!(r#"{{"client_user_id":"{cid}"}}"#)));
        req.headers_mut().insert("x-idempotency-key", http::HeaderValue::from_static("bench-idempotency-1"));
        req
    };
    let (r, idem_first) = counted(&table, send(&warm, idem("req-idem"))).await;
    check_ok("POST with x-idempotency-key", r)?;
    let (r, idem_replay) = counted(&table, send(&warm, idem("req-idem"))).await;
    check_ok("POST with x-idempotency-key, replayed", r)?;

    // A phone upload of 10,000 one-minute heart-rate samples (seven local days), as the iOS SDK's
    // daily stage sends it (docs/MOBILE.md): every DynamoDB request of the whole request, reads
    // included, against the issue's budget of at most 40 write calls per 10,000 samples.
    let upload = phone_upload(10_000);
    let (r, phone) = counted(
        &table,
        call(
            &warm,
            Method::POST,
            &format!("/v2/timeseries/{}/heartrate", user_id.as_uuid()),
            &key,
            Some(upload),
        ),
    )
    .await;
    r?;

    // List reads the team's user count (GetItem, its `total`) besides its Query (at once, on
    // page 1); create moves the count with an add inside its one transaction.
    let target = [Some(1), Some(1), Some(2), None];
    let names = [
        "create user (POST /v2/user)",
        "get user (GET /v2/user/{id})",
        "list users, page 1 (GET /v2/user)",
        "resolve (GET /v2/user/resolve/{cid})",
    ];
    let use_case = [create, get, list, resolve];
    for i in 0..names.len() {
        rows.push((names[i], target[i], use_case[i], per_request[0][i], per_request[1][i]));
    }

    println!(
        "DynamoDB round trips per operation (moto at {endpoint}; the team has {TEAM_USERS} users when the use \
         cases run, {} and {} for the two sets of requests; list limit {LIST_LIMIT})",
        TEAM_USERS + 1,
        TEAM_USERS + 2
    );
    println!(
        "| operation | target | use case | request, warm auth cache | request, no auth cache | use case vs target |"
    );
    println!("|---|---:|---:|---:|---:|---|");
    let mut missed = false;
    for (name, target, uc, warm, none) in rows {
        let verdict = match target {
            Some(t) if uc <= t => "met".to_owned(),
            Some(_) => {
                missed = true;
                "MISSED".to_owned()
            }
            None => "-".to_owned(),
        };
        let t = target.map_or("-".to_owned(), |t| t.to_string());
        println!("| {name} | {t} | {uc} | {warm} | {none} | {verdict} |");
    }
    println!("first request of a process (auth cache cold), GET user: {cold_first} round trips");
    println!(
        "POST /v2/user with x-idempotency-key, warm auth cache: first {idem_first}, replay {idem_replay} round trips"
    );
    let phone_verdict = if phone <= 40 { "met" } else { "MISSED" };
    missed |= phone > 40;
    println!(
        "phone upload of 10,000 samples (POST /v2/timeseries/{{id}}/heartrate, daily stage, warm auth cache): \
         {phone} round trips, reads included (target: at most 40 writes): {phone_verdict}"
    );
    if missed {
        println!("round-trip targets: MISSED");
    } else {
        println!("round-trip targets: met");
    }
    Ok(())
}

/// Runs `fut` and returns its output with the DynamoDB requests it sent.
async fn counted<T>(table: &DynamoDbTable, fut: impl Future<Output = T>) -> (T, u64) {
    let before = table.round_trips();
    let out = fut.await;
    (out, table.round_trips() - before)
}

/// An error unless the answer is 200.
fn check_ok(what: &str, (status, body): (StatusCode, axum::body::Bytes)) -> Result<(), String> {
    if status == StatusCode::OK {
        Ok(())
    } else {
        Err(format!("{what}: {status} {}", String::from_utf8_lossy(&body)))
    }
}

/// One request through `app`; the answer body when 200.
async fn call(
    app: &App,
    method: Method,
    path: &str,
    key: &str,
    body: Option<String>,
) -> Result<Vec<u8>, String> {
    let (status, bytes) = send(app, request(method, path, key, body)).await;
    if status == StatusCode::OK {
        Ok(bytes.to_vec())
    } else {
        Err(format!("{path}: {status} {}", String::from_utf8_lossy(&bytes)))
    }
}

/// `samples` one-minute heart-rate samples from an Apple Watch in the iOS SDK's daily upload
/// (`tryVital/vital-ios` `TaggedPayload`; samples as `LocalQuantitySample(_:unit:)` builds them).
fn phone_upload(samples: i64) -> String {
    let start = chrono::DateTime::parse_from_rfc3339("2026-11-01T00:00:00Z").expect("a time").to_utc();
    let data: Vec<serde_json::Value> = (0..samples)
        .map(|m| {
            let at =
                (start + chrono::Duration::minutes(m)).to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
            serde_json::json!({
                "value": 55 + m % 40, "start_date": at, "end_date": at,
                "source_bundle": "com.apple.health.8C1F2A53-9B0E-4C1D-A6B2-3E7F5D9C0A11",
                "product_type": "Watch7,1", "unit": "bpm"
            })
        })
        .collect();
    serde_json::json!({"stage": "daily", "time_zone": "Europe/Berlin", "provider": "apple_health_kit",
                       "data": data, "is_final_chunk": true})
    .to_string()
}
