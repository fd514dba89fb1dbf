//! The audit log of PHI access: what is recorded, what is not, who reads it, and what happens
//! when recording fails. On the embedded stack and on DynamoDB (moto).

use chrono::Duration;
use http::{Method, StatusCode};
use serde_json::Value;
use wearlab_domain::keys::audit::team_partitions;
use wearlab_domain::ports::{Clock, Item, Query, query_all};
use wearlab_domain::teams;

use crate::helpers::{Faults, TestApp, error_locs};
use crate::lab::info_body;

const LOG: &str = "/v2/team/audit_log";

fn entries(a: &crate::helpers::Answer) -> Vec<Value> {
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    a.body["data"].as_array().unwrap().clone()
}

fn routes(list: &[Value]) -> Vec<(String, String, u64)> {
    list.iter()
        .map(|e| {
            (
                e["method"].as_str().unwrap().to_owned(),
                e["route"].as_str().unwrap().to_owned(),
                e["status"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// Every stored entry of the team, whichever of its partitions holds it.
pub(crate) async fn stored_entries(t: &TestApp) -> Vec<Item> {
    let mut all = Vec::new();
    for pk in team_partitions(t.team) {
        all.extend(query_all(t.deps.table.as_ref(), Query::partition(pk), 1_000).await.unwrap());
    }
    all
}

async fn key_id(t: &TestApp) -> String {
    let keys = teams::list_keys(&t.deps, t.team).await.unwrap();
    assert_eq!(keys.len(), 1);
    keys[0].key_id.clone()
}

/// Reads and changes of demographics, health data and lab orders each leave one entry with ids
/// only; routes that are not PHI leave none.
async fn records_who_what_when_and_outcome(t: &TestApp) {
    let user = t.create_user("audited").await;
    let a = t.patch(&format!("/v2/user/{user}/info"), info_body()).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    t.clock.advance(Duration::seconds(1));
    let latest = t.get(&format!("/v2/user/{user}/info/latest")).await;
    assert_eq!(latest.status, StatusCode::OK);
    t.clock.advance(Duration::seconds(1));
    let summary = t.get(&format!("/v2/summary/sleep/{user}?start_date=2026-02-01")).await;
    t.clock.advance(Duration::seconds(1));
    let order = uuid::Uuid::new_v4();
    let missing = t.get(&format!("/v3/order/{order}")).await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    // Not PHI routes: the user record and the team's settings.
    assert_eq!(t.get(&format!("/v2/user/{user}")).await.status, StatusCode::OK);
    assert_eq!(t.get("/v2/team/link_config").await.status, StatusCode::OK);

    let log = t.get(LOG).await;
    let list = entries(&log);
    assert_eq!(
        routes(&list),
        vec![
            ("GET".into(), "/v3/order/{order_id}".into(), 404),
            ("GET".into(), "/v2/summary/sleep/{user_id}".into(), u64::from(summary.status.as_u16())),
            ("GET".into(), "/v2/user/{user_id}/info/latest".into(), 200),
            ("PATCH".into(), "/v2/user/{user_id}/info".into(), 200),
        ],
        "newest first"
    );
    let key = key_id(t).await;
    for e in &list {
        assert_eq!(e["key_id"], key.as_str());
        assert!(e["id"].as_str().is_some_and(|id| !id.is_empty()));
    }
    assert_eq!(list[0]["user_id"], Value::Null, "the order route names no user");
    assert_eq!(list[0]["resource"], order.to_string().as_str());
    for e in &list[1..] {
        assert_eq!(e["user_id"], user.as_str());
        assert_eq!(e["resource"], Value::Null);
    }
    assert_eq!(list[3]["at"], "2026-03-01T09:00:00Z");
    assert_eq!(list[2]["at"], "2026-03-01T09:00:01Z");
    // Never the data: not in the answer, not in storage.
    let stored = stored_entries(t).await;
    assert_eq!(stored.len(), 4);
    for text in [
        log.body.to_string(),
        serde_json::to_string(&stored.iter().map(|i| &i.body).collect::<Vec<_>>()).unwrap(),
    ] {
        for secret in ["Ada", "ada@example.com", "555-0100", "New York", "start_date", "2026-02-01"] {
            assert!(!text.contains(secret), "{secret} in {text}");
        }
    }
    // Kept for the default retention (six years: 2,192 days), then DynamoDB's TTL removes them.
    let at = stored.iter().map(|i| i.expires_at.unwrap()).min().unwrap();
    assert_eq!(at, (crate::helpers::start_time() + Duration::days(2192)).timestamp());
}

/// The retention of the settings (`WEARLAB_AUDIT_RETENTION_DAYS`, read once at start) is the
/// one entries are kept for.
#[tokio::test]
async fn entries_are_kept_for_the_configured_retention() {
    let t = TestApp::embedded().await;
    let settings = wearlab_domain::common::settings::Settings::from_vars(|name| {
        (name == "WEARLAB_AUDIT_RETENTION_DAYS").then(|| "30".to_owned())
    })
    .unwrap();
    let t = TestApp { app: t.app_on(wearlab_web::AppState::new(t.deps.clone(), settings)), ..t };
    let user = t.create_user("retained").await;
    assert_eq!(t.get(&format!("/v2/user/{user}/info/latest")).await.status, StatusCode::NOT_FOUND);
    let stored = stored_entries(&t).await;
    assert_eq!(stored.len(), 1);
    let at = stored[0].expires_at.unwrap();
    assert_eq!(at, (crate::helpers::start_time() + Duration::days(30)).timestamp());
}

#[tokio::test]
async fn phi_access_is_recorded_with_ids_only() {
    records_who_what_when_and_outcome(&TestApp::embedded().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn phi_access_is_recorded_on_dynamodb() {
    let (t, _, _) = crate::users_on_dynamodb::on_moto().await;
    records_who_what_when_and_outcome(&t).await;
    filters_and_pages(&t).await;
}

/// `user_id`, `since`/`until` and the cursor, on whatever storage `t` runs.
async fn filters_and_pages(t: &TestApp) {
    let first = t.create_user("first").await;
    let second = t.create_user("second").await;
    let start = t.clock.now();
    for user in [&first, &second, &first] {
        t.clock.advance(Duration::minutes(1));
        t.get(&format!("/v2/user/{user}/info/latest")).await;
    }
    // A user named in the query (the team's order list) counts as the route's user.
    t.clock.advance(Duration::minutes(1));
    assert_eq!(t.get(&format!("/v3/orders?user_id={second}")).await.status, StatusCode::OK);

    let of_first = entries(&t.get(&format!("{LOG}?user_id={first}")).await);
    assert_eq!(of_first.len(), 2);
    assert!(of_first.iter().all(|e| e["user_id"] == first.as_str()));
    let of_second = entries(&t.get(&format!("{LOG}?user_id={second}")).await);
    assert_eq!(
        routes(&of_second).iter().map(|r| r.1.as_str()).collect::<Vec<_>>(),
        ["/v3/orders", "/v2/user/{user_id}/info/latest"]
    );

    // since is inclusive, until exclusive: the second and third reads.
    let since = (start + Duration::minutes(2)).to_rfc3339();
    let until = (start + Duration::minutes(4)).to_rfc3339();
    let q = |s: &str| s.replace('+', "%2B");
    let window = entries(&t.get(&format!("{LOG}?since={}&until={}", q(&since), q(&until))).await);
    let users: Vec<&str> = window.iter().map(|e| e["user_id"].as_str().unwrap()).collect();
    assert_eq!(users, [first.as_str(), second.as_str()]);
    let window = entries(&t.get(&format!("{LOG}?user_id={first}&since={}", q(&since))).await);
    assert_eq!(window.len(), 1);

    // Pages of one follow each other to the end, each entry once.
    let all = entries(&t.get(&format!("{LOG}?limit=500")).await);
    let mut paged = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..=all.len() {
        let path = match &cursor {
            Some(c) => format!("{LOG}?limit=1&next_cursor={c}"),
            None => format!("{LOG}?limit=1"),
        };
        let a = t.get(&path).await;
        paged.extend(entries(&a));
        cursor = a.body["next_cursor"].as_str().map(str::to_owned);
        if cursor.is_none() {
            break;
        }
    }
    assert_eq!(paged, all);
}

#[tokio::test]
async fn filters_and_cursor_on_embedded() {
    filters_and_pages(&TestApp::embedded().await).await;
}

#[tokio::test]
async fn each_team_reads_only_its_own_entries() {
    let t = TestApp::embedded().await;
    let user = t.create_user("mine").await;
    t.get(&format!("/v2/user/{user}/info/latest")).await;
    t.get(&format!("/v2/user/{user}/insurance/latest")).await;
    let other = t.other_team_key().await;

    // The other team probing this team's user: recorded for the other team, not for this one.
    let probe = t.send(Method::GET, &format!("/v2/user/{user}/info/latest"), Some(&other), None).await;
    assert_eq!(probe.status, StatusCode::NOT_FOUND);
    let theirs = t.send(Method::GET, LOG, Some(&other), None).await;
    let theirs = entries(&theirs);
    assert_eq!(theirs.len(), 1);
    assert_eq!(theirs[0]["status"], 404);
    let mine = entries(&t.get(&format!("{LOG}?limit=1")).await);
    assert_eq!(mine.len(), 1);
    assert_ne!(mine[0]["id"], theirs[0]["id"]);

    // This team's cursor does not open the other team's log, nor the other way round.
    let page = t.get(&format!("{LOG}?limit=1")).await;
    let cursor = page.body["next_cursor"].as_str().unwrap().to_owned();
    let a = t.send(Method::GET, &format!("{LOG}?next_cursor={cursor}"), Some(&other), None).await;
    assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", a.body);
    let a = t.get(&format!("{LOG}?next_cursor={cursor}&user_id={user}")).await;
    assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "a cursor of another filter: {}", a.body);

    let a = t.send(Method::GET, LOG, None, None).await;
    assert_eq!(a.status, StatusCode::UNAUTHORIZED);
    let a = t.send(Method::GET, LOG, Some("sk_test_nope"), None).await;
    assert_eq!(a.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn requests_without_a_valid_key_file_nothing() {
    let t = TestApp::embedded().await;
    let user = t.create_user("unseen").await;
    let a = t.send(Method::GET, &format!("/v2/user/{user}/info/latest"), None, None).await;
    assert_eq!(a.status, StatusCode::UNAUTHORIZED);
    assert!(stored_entries(&t).await.is_empty());
}

#[tokio::test]
async fn bad_filters_are_422_naming_each() {
    let t = TestApp::embedded().await;
    let a = t
        .get(&format!("{LOG}?user_id=nope&since=yesterday&until=2026-13-01T00:00:00Z&limit=0&next_cursor=x"))
        .await;
    assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", a.body);
    let locs = error_locs(&a.body);
    for name in ["user_id", "since", "until", "limit", "next_cursor"] {
        assert!(locs.contains(&vec!["query".to_string(), name.to_string()]), "{name} not in {}", a.body);
    }
    let a = t.get(&format!("{LOG}?since=2026-03-02T00:00:00Z&until=2026-03-01T00:00:00Z")).await;
    assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", a.body);
    assert_eq!(t.get(&format!("{LOG}?limit=501")).await.status, StatusCode::UNPROCESSABLE_ENTITY);
}

/// A read whose entry cannot be written is withheld; a change keeps its answer (and is done).
#[tokio::test]
async fn an_unrecorded_read_is_withheld_and_a_change_keeps_its_answer() {
    let (t, table) = TestApp::embedded_with_faults().await;
    let user = t.create_user("faulty").await;
    table.set(Faults { failing_put_pk_prefix: Some("AUDIT#".into()), ..Faults::default() });

    let change = t.patch(&format!("/v2/user/{user}/info"), info_body()).await;
    assert_eq!(change.status, StatusCode::OK, "{}", change.body);
    let read = t.get(&format!("/v2/user/{user}/info/latest")).await;
    assert_eq!(read.status, StatusCode::SERVICE_UNAVAILABLE, "{}", read.body);
    assert!(!read.body.to_string().contains("Ada"), "{}", read.body);

    table.set(Faults::default());
    let read = t.get(&format!("/v2/user/{user}/info/latest")).await;
    assert_eq!(read.status, StatusCode::OK, "the change was stored");
    assert_eq!(read.body["first_name"], "Ada");
    let list = entries(&t.get(LOG).await);
    assert_eq!(routes(&list), vec![("GET".into(), "/v2/user/{user_id}/info/latest".into(), 200)]);
}

/// One request to `app` with the local team's key; the status and the JSON answer.
async fn send_on(
    app: &wearlab_web::App,
    key: &str,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    use http_body_util::BodyExt;
    use tower::ServiceExt;
    let mut req =
        http::Request::builder().method(method).uri(path).header(crate::helpers::API_KEY_HEADER, key);
    if body.is_some() {
        req = req.header("content-type", "application/json");
    }
    let body = body.map_or_else(axum::body::Body::empty, |b| axum::body::Body::from(b.to_string()));
    let res = app.clone().oneshot(req.body(body).unwrap()).await.unwrap();
    let status = res.status();
    let bytes = res.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

/// An answered PHI read has its entry on disk before the answer: the stack on a redb file is
/// dropped right after the answer, without a clean shutdown and before the entry's commit to the
/// table (appended entries wait to be indexed many at a time), and opened again: the entry is
/// listed, in order with the one before it, and the listing's cursor pages over both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answered_read_keeps_its_entry_through_a_stop_before_its_commit() {
    const KEY: &str = "sk_audit_stop_test_local_key_0123456789";
    let dir = std::env::temp_dir().join(format!("wearlab-audit-stop-{}", uuid::Uuid::new_v4().simple()));
    let user = {
        let stack = wearlab_local::LocalStack::open(&dir).expect("the stack opens on its file");
        stack.ensure_team_key(Some(KEY)).await.unwrap();
        let app = stack.app(stack.state());
        let (status, created) =
            send_on(&app, KEY, Method::POST, "/v2/user", Some(serde_json::json!({"client_user_id": "stop"})))
                .await;
        assert_eq!(status, StatusCode::OK, "{created}");
        let user = created["user_id"].as_str().unwrap().to_owned();
        let activity = format!("/v2/summary/activity/{user}?start_date=2026-02-01");
        let (status, body) = send_on(&app, KEY, Method::GET, &activity, None).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let summary = format!("/v2/summary/sleep/{user}?start_date=2026-02-01");
        let (status, body) = send_on(&app, KEY, Method::GET, &summary, None).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        user
        // Dropped here, just after the answer.
    };
    let stack = wearlab_local::LocalStack::open(&dir).expect("the stack opens again");
    let app = stack.app(stack.state());
    let (status, page) =
        send_on(&app, KEY, Method::GET, &format!("{LOG}?user_id={user}&limit=1"), None).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let first = page["data"].as_array().unwrap().clone();
    assert_eq!(routes(&first), vec![("GET".into(), "/v2/summary/sleep/{user_id}".into(), 200)]);
    let cursor = page["next_cursor"].as_str().expect("a second page").to_owned();
    let (_, next) =
        send_on(&app, KEY, Method::GET, &format!("{LOG}?user_id={user}&limit=1&next_cursor={cursor}"), None)
            .await;
    let second = next["data"].as_array().unwrap().clone();
    assert_eq!(routes(&second), vec![("GET".into(), "/v2/summary/activity/{user_id}".into(), 200)]);
    drop((app, stack));
    let _ = std::fs::remove_dir_all(dir);
}
