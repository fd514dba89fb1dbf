//! The users endpoints on the embedded stack: success, every documented error, bad input,
//! other teams' ids, and API keys.

use http::{Method, StatusCode};
use serde_json::json;

use crate::helpers::{TestApp, error_locs};

mod auth {
    //! With the API-key cache on, as deployments run (every test app has it).
    use super::*;

    #[tokio::test]
    async fn missing_key_is_401_with_detail() {
        let t = TestApp::embedded().await;
        let a = t.send(Method::GET, "/v2/user", None, None).await;
        assert_eq!(a.status, StatusCode::UNAUTHORIZED);
        assert_eq!(a.headers["content-type"], "application/json");
        assert!(a.body["detail"].as_str().unwrap().contains("x-service-api-key"));
    }

    #[tokio::test]
    async fn unknown_and_malformed_keys_are_401() {
        let t = TestApp::embedded().await;
        for key in ["sk_test_0000000000000000000000000000000000000000", "nonsense", ""] {
            let a = t.send(Method::GET, "/v2/user", Some(key), None).await;
            assert_eq!(a.status, StatusCode::UNAUTHORIZED, "{key}");
            assert!(a.body["detail"].is_string());
        }
    }

    #[tokio::test]
    async fn revoked_key_stops_working() {
        let t = TestApp::embedded().await;
        assert_eq!(t.get("/v2/user").await.status, StatusCode::OK);
        let keys = wearlab_domain::teams::list_keys(&t.deps, t.team).await.unwrap();
        assert_eq!(keys.len(), 1);
        assert!(!serde_json::to_string(&keys[0]).unwrap().contains(&t.key), "only the hash is stored");
        wearlab_domain::teams::revoke_key(&t.deps, t.team, &keys[0].key_id).await.unwrap();
        // Documented: a revoked key stops working within 60 seconds (the cache's lifetime).
        t.clock.advance(chrono::Duration::seconds(59));
        assert_eq!(t.get("/v2/user").await.status, StatusCode::OK, "still trusted from the cache");
        t.clock.advance(chrono::Duration::seconds(1));
        let a = t.get("/v2/user").await;
        assert_eq!(a.status, StatusCode::UNAUTHORIZED, "60 s after it was verified: {}", a.body);
        assert!(a.body["detail"].is_string());
    }
}

mod create {
    use super::*;

    #[tokio::test]
    async fn answers_the_full_user() {
        let t = TestApp::embedded().await;
        let a = t.post("/v2/user/", json!({"client_user_id": "patient-1"})).await;
        assert_eq!(a.status, StatusCode::OK, "{}", a.body);
        let u = &a.body;
        assert!(uuid::Uuid::parse_str(u["user_id"].as_str().unwrap()).is_ok());
        assert_eq!(u["team_id"], t.team.to_string());
        assert_eq!(u["client_user_id"], "patient-1");
        assert_eq!(u["created_on"], "2026-03-01T09:00:00Z");
        assert_eq!(u["connected_sources"], json!([]));
        assert!(u.as_object().unwrap().contains_key("fallback_time_zone"));
        assert_eq!(u["fallback_time_zone"], json!(null));
        assert_eq!(u["ingestion_start"], json!(null));
        assert_eq!(u["ingestion_end"], json!(null));
    }

    #[tokio::test]
    async fn keeps_fallbacks_and_ingestion_bounds() {
        let t = TestApp::embedded().await;
        let body = json!({
            "client_user_id": "patient-2",
            "fallback_time_zone": "Europe/London",
            "fallback_birth_date": "1980-05-17",
            "ingestion_start": "2025-01-01",
            "ingestion_end": "2026-01-01"
        });
        let a = t.post("/v2/user", body).await;
        assert_eq!(a.status, StatusCode::OK, "{}", a.body);
        assert_eq!(
            a.body["fallback_time_zone"],
            json!({"id": "Europe/London", "source_slug": "manual", "updated_at": "2026-03-01T09:00:00Z"})
        );
        assert_eq!(a.body["fallback_birth_date"]["value"], "1980-05-17");
        assert_eq!(a.body["ingestion_start"], "2025-01-01");
        let got = t.get(&format!("/v2/user/{}", a.body["user_id"].as_str().unwrap())).await;
        assert_eq!(got.body, a.body);
    }

    #[tokio::test]
    async fn explicit_nulls_mean_not_set() {
        let t = TestApp::embedded().await;
        let a = t
            .post(
                "/v2/user",
                json!({"client_user_id": "n", "fallback_time_zone": null, "ingestion_start": null}),
            )
            .await;
        assert_eq!(a.status, StatusCode::OK);
        assert_eq!(a.body["fallback_time_zone"], json!(null));
    }

    #[tokio::test]
    async fn duplicate_client_user_id_is_400_naming_the_holder() {
        let t = TestApp::embedded().await;
        let first = t.post("/v2/user", json!({"client_user_id": "dup"})).await;
        let again = t.post("/v2/user", json!({"client_user_id": "dup"})).await;
        assert_eq!(again.status, StatusCode::BAD_REQUEST);
        let d = &again.body["detail"];
        assert_eq!(d["error_type"], "INVALID_REQUEST");
        assert_eq!(d["user_id"], first.body["user_id"]);
        assert_eq!(d["created_on"], first.body["created_on"]);
        assert!(d["error_message"].is_string());
    }

    #[tokio::test]
    async fn same_client_user_id_in_two_teams_is_fine() {
        let t = TestApp::embedded().await;
        t.create_user("shared").await;
        let other = t.other_team_key().await;
        let a = t.send(Method::POST, "/v2/user", Some(&other), Some(r#"{"client_user_id":"shared"}"#)).await;
        assert_eq!(a.status, StatusCode::OK);
    }

    #[tokio::test]
    async fn personal_data_as_client_user_id_is_422() {
        let t = TestApp::embedded().await;
        for id in ["jane.doe@example.com", "+1 415 555 0100", "(415) 555-0100", ""] {
            let a = t.post("/v2/user", json!({"client_user_id": id})).await;
            assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{id}");
            assert_eq!(error_locs(&a.body), [["body", "client_user_id"]], "{id}");
            assert!(!a.body.to_string().contains("jane.doe"), "the value is not echoed");
        }
    }

    #[tokio::test]
    async fn rule_violations_are_all_reported() {
        let t = TestApp::embedded().await;
        let a = t
            .post(
                "/v2/user",
                json!({"client_user_id": "ok", "fallback_time_zone": "Mars/Base", "fallback_birth_date": "2099-01-01",
                       "ingestion_start": "2026-02-01", "ingestion_end": "2026-01-01"}),
            )
            .await;
        assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(
            error_locs(&a.body),
            [["body", "fallback_time_zone"], ["body", "fallback_birth_date"], ["body", "ingestion_end"]]
        );
    }

    #[tokio::test]
    async fn malformed_and_mistyped_bodies_are_422() {
        let t = TestApp::embedded().await;
        let cases = [
            ("{not json", vec!["body"], "json_invalid"),
            (r#"{"client_user_id": "trailing"} xyz"#, vec!["body"], "json_invalid"),
            (r#"{"client_user_id": "twice"}{"client_user_id": "again"}"#, vec!["body"], "json_invalid"),
            ("", vec!["body"], "missing"),
            ("{}", vec!["body", "client_user_id"], "missing"),
            (r#"{"client_user_id": 5}"#, vec!["body", "client_user_id"], "type_error"),
            (
                r#"{"client_user_id": "a", "ingestion_start": "yesterday"}"#,
                vec!["body", "ingestion_start"],
                "type_error",
            ),
            (r#"[1, 2]"#, vec!["body"], "dict_type"),
            ("null", vec!["body"], "dict_type"),
        ];
        for (body, loc, kind) in cases {
            let a = t.send(Method::POST, "/v2/user", Some(&t.key), Some(body)).await;
            assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
            assert_eq!(error_locs(&a.body), [loc], "{body}");
            assert_eq!(a.body["detail"][0]["type"], kind, "{body}");
        }
        assert_eq!(t.get("/v2/user").await.body["total"], 0, "nothing half-written");
    }

    #[tokio::test]
    async fn oversized_body_is_413() {
        let t = TestApp::embedded().await;
        let big = format!(r#"{{"client_user_id": "{}"}}"#, "x".repeat(7 * 1024 * 1024));
        let a = t.send(Method::POST, "/v2/user", Some(&t.key), Some(&big)).await;
        assert_eq!(a.status, StatusCode::PAYLOAD_TOO_LARGE);
        assert!(a.body["detail"].as_str().unwrap().contains("6 MB"));
    }

    #[tokio::test]
    async fn fifty_concurrent_creates_have_one_winner() {
        let t = std::sync::Arc::new(TestApp::embedded().await);
        super::one_winner_among_fifty(t).await;
    }
}

/// 50 concurrent creates with one client_user_id: one 200, 49 conflicts naming the winner.
pub async fn one_winner_among_fifty(t: std::sync::Arc<TestApp>) {
    let tasks: Vec<_> = (0..50)
        .map(|_| {
            let t = t.clone();
            tokio::spawn(async move { t.post("/v2/user", json!({"client_user_id": "race"})).await })
        })
        .collect();
    let answers: Vec<_> = futures::future::join_all(tasks).await.into_iter().map(Result::unwrap).collect();
    let winners: Vec<_> = answers.iter().filter(|a| a.status == StatusCode::OK).collect();
    assert_eq!(winners.len(), 1, "{:?}", answers.iter().map(|a| a.status).collect::<Vec<_>>());
    let winner_id = &winners[0].body["user_id"];
    for a in answers.iter().filter(|a| a.status != StatusCode::OK) {
        assert_eq!(a.status, StatusCode::BAD_REQUEST, "{}", a.body);
        assert_eq!(&a.body["detail"]["user_id"], winner_id);
    }
    let list = t.get("/v2/user").await;
    assert_eq!(list.body["total"], 1);
}

mod read {
    use super::*;

    #[tokio::test]
    async fn get_and_resolve() {
        let t = TestApp::embedded().await;
        let id = t.create_user("c-1").await;
        let by_id = t.get(&format!("/v2/user/{id}")).await;
        assert_eq!(by_id.status, StatusCode::OK);
        let by_client = t.get("/v2/user/resolve/c-1/").await;
        assert_eq!(by_client.status, StatusCode::OK);
        assert_eq!(by_client.body, by_id.body);
    }

    #[tokio::test]
    async fn unknown_ids_are_404_and_bad_uuid_422() {
        let t = TestApp::embedded().await;
        let a = t.get(&format!("/v2/user/{}", uuid::Uuid::new_v4())).await;
        assert_eq!(a.status, StatusCode::NOT_FOUND);
        assert!(a.body["detail"].is_string());
        assert_eq!(t.get("/v2/user/resolve/nobody").await.status, StatusCode::NOT_FOUND);
        let bad = t.get("/v2/user/not-a-uuid").await;
        assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(error_locs(&bad.body), [["path", "user_id"]]);
    }

    #[tokio::test]
    async fn another_teams_user_is_not_found() {
        let t = TestApp::embedded().await;
        let id = t.create_user("mine").await;
        let other = t.other_team_key().await;
        for (m, p) in [
            (Method::GET, format!("/v2/user/{id}")),
            (Method::GET, "/v2/user/resolve/mine".to_owned()),
            (Method::DELETE, format!("/v2/user/{id}")),
            (Method::POST, format!("/v2/user/refresh/{id}")),
            (Method::POST, format!("/v2/user/undo_delete?user_id={id}")),
        ] {
            let a = t.send(m.clone(), &p, Some(&other), None).await;
            assert_eq!(a.status, StatusCode::NOT_FOUND, "{m} {p}");
        }
        let a = t
            .send(
                Method::PATCH,
                &format!("/v2/user/{id}"),
                Some(&other),
                Some(r#"{"ingestion_start":"2025-01-01"}"#),
            )
            .await;
        assert_eq!(a.status, StatusCode::NOT_FOUND);
        let list = t.send(Method::GET, "/v2/user", Some(&other), None).await;
        assert_eq!(list.body["total"], 0);
        assert_eq!(t.get(&format!("/v2/user/{id}")).await.body["ingestion_start"], json!(null), "unchanged");
    }

    #[tokio::test]
    async fn list_pages_with_offset_and_limit() {
        let t = TestApp::embedded().await;
        for n in 0..7 {
            t.create_user(&format!("u{n}")).await;
            t.clock.advance(chrono::Duration::seconds(1));
        }
        let a = t.get("/v2/user?offset=2&limit=3").await;
        assert_eq!(a.status, StatusCode::OK);
        assert_eq!(a.body["total"], 7);
        assert_eq!(a.body["offset"], 2);
        assert_eq!(a.body["limit"], 3);
        let ids: Vec<_> = a.body["users"]
            .as_array()
            .unwrap()
            .iter()
            .map(|u| u["client_user_id"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(ids, ["u2", "u3", "u4"], "oldest first");
        let last = t.get("/v2/user?offset=6&limit=500").await;
        assert_eq!(last.body["users"].as_array().unwrap().len(), 1);
        let beyond = t.get("/v2/user?offset=70").await;
        assert_eq!(beyond.body["users"], json!([]));
        assert_eq!(t.get("/v2/user").await.body["limit"], 100);
    }

    #[tokio::test]
    async fn list_rejects_bad_paging() {
        let t = TestApp::embedded().await;
        for q in
            ["limit=0", "limit=501", "limit=abc", "offset=-1", "offset=1000001", "offset=9223372036854775808"]
        {
            let a = t.get(&format!("/v2/user?{q}")).await;
            assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{q}");
            assert_eq!(error_locs(&a.body)[0][0], "query", "{q}");
        }
    }

    #[tokio::test]
    async fn unknown_route_and_method_answer_json() {
        let t = TestApp::embedded().await;
        let a = t.get("/v2/nothing-here").await;
        assert_eq!(a.status, StatusCode::NOT_FOUND);
        assert!(a.body["detail"].is_string());
        let b = t.send(Method::PUT, "/v2/user", Some(&t.key), None).await;
        assert_eq!(b.status, StatusCode::METHOD_NOT_ALLOWED);
        assert!(b.body["detail"].is_string());
    }
}

mod patch {
    use super::*;

    #[tokio::test]
    async fn updates_and_clears_fields() {
        let t = TestApp::embedded().await;
        let id = t.create_user("p1").await;
        let path = format!("/v2/user/{id}");
        t.clock.advance(chrono::Duration::hours(1));
        let a = t
            .patch(&path, json!({"fallback_time_zone": "America/New_York", "ingestion_start": "2025-06-01"}))
            .await;
        assert_eq!(a.status, StatusCode::NO_CONTENT);
        assert_eq!(a.body, json!(null), "no body");
        let u = t.get(&path).await.body;
        assert_eq!(u["fallback_time_zone"]["id"], "America/New_York");
        assert_eq!(u["fallback_time_zone"]["updated_at"], "2026-03-01T10:00:00Z");
        assert_eq!(u["ingestion_start"], "2025-06-01");
        let b = t.patch(&format!("{path}/"), json!({"fallback_time_zone": null})).await;
        assert_eq!(b.status, StatusCode::NO_CONTENT);
        let u = t.get(&path).await.body;
        assert_eq!(u["fallback_time_zone"], json!(null));
        assert_eq!(u["ingestion_start"], "2025-06-01", "omitted fields are kept");
    }

    #[tokio::test]
    async fn client_user_id_change_keeps_uniqueness() {
        let t = TestApp::embedded().await;
        let a = t.create_user("old-id").await;
        let b = t.create_user("taken").await;
        let taken = t.patch(&format!("/v2/user/{a}"), json!({"client_user_id": "taken"})).await;
        assert_eq!(taken.status, StatusCode::BAD_REQUEST);
        assert_eq!(taken.body["detail"]["user_id"], b);
        let ok = t.patch(&format!("/v2/user/{a}"), json!({"client_user_id": "new-id"})).await;
        assert_eq!(ok.status, StatusCode::NO_CONTENT);
        assert_eq!(t.get("/v2/user/resolve/new-id").await.body["user_id"], a);
        assert_eq!(t.get("/v2/user/resolve/old-id").await.status, StatusCode::NOT_FOUND);
        t.create_user("old-id").await;
        // `null` (what the upstream client sends for "unchanged") keeps the id: a user always has one.
        let null = t
            .patch(&format!("/v2/user/{a}"), json!({"client_user_id": null, "ingestion_start": "2025-06-01"}))
            .await;
        assert_eq!(null.status, StatusCode::NO_CONTENT, "{}", null.body);
        let u = t.get(&format!("/v2/user/{a}")).await.body;
        assert_eq!(u["client_user_id"], "new-id");
        assert_eq!(u["ingestion_start"], "2025-06-01", "the other fields of the PATCH apply");
        assert_eq!(t.get("/v2/user/resolve/new-id").await.body["user_id"], a);
    }

    #[tokio::test]
    async fn validates_merged_values() {
        let t = TestApp::embedded().await;
        let id = t.create_user("p2").await;
        let path = format!("/v2/user/{id}");
        assert_eq!(
            t.patch(&path, json!({"ingestion_end": "2025-01-01"})).await.status,
            StatusCode::NO_CONTENT
        );
        let a = t.patch(&path, json!({"ingestion_start": "2025-02-01"})).await;
        assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "start after the stored end");
        assert_eq!(error_locs(&a.body), [["body", "ingestion_end"]]);
        let tz = t.patch(&path, json!({"fallback_time_zone": "Nowhere/City"})).await;
        assert_eq!(error_locs(&tz.body), [["body", "fallback_time_zone"]]);
        let email = t.patch(&path, json!({"client_user_id": "x@y.org"})).await;
        assert_eq!(email.status, StatusCode::UNPROCESSABLE_ENTITY);
        let typed = t.patch(&path, json!({"ingestion_start": 3})).await;
        assert_eq!(typed.status, StatusCode::UNPROCESSABLE_ENTITY);
        let malformed = t.send(Method::PATCH, &path, Some(&t.key), Some("{")).await;
        assert_eq!(malformed.status, StatusCode::UNPROCESSABLE_ENTITY);
        let unknown = t.patch(&format!("/v2/user/{}", uuid::Uuid::new_v4()), json!({})).await;
        assert_eq!(unknown.status, StatusCode::NOT_FOUND);
        assert_eq!(t.get(&path).await.body["ingestion_start"], json!(null));
    }
}

mod refresh {
    use super::*;

    #[tokio::test]
    async fn without_connections_succeeds_at_once() {
        let t = TestApp::embedded().await;
        let id = t.create_user("r1").await;
        let a = t.post_empty(&format!("/v2/user/refresh/{id}?timeout=5")).await;
        assert_eq!(a.status, StatusCode::OK);
        assert_eq!(
            a.body,
            json!({"success": true, "user_id": id, "refreshed_sources": [], "in_progress_sources": [], "failed_sources": []})
        );
        assert_eq!(t.post_empty(&format!("/v2/user/refresh/{id}/")).await.status, StatusCode::OK);
    }

    #[tokio::test]
    async fn timeout_outside_5_to_60_is_422() {
        let t = TestApp::embedded().await;
        let id = t.create_user("r2").await;
        for q in ["timeout=4.9", "timeout=61", "timeout=abc", "timeout=NaN"] {
            let a = t.post_empty(&format!("/v2/user/refresh/{id}?{q}")).await;
            assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{q}");
            assert_eq!(error_locs(&a.body), [["query", "timeout"]], "{q}");
        }
        assert_eq!(t.post_empty(&format!("/v2/user/refresh/{id}?timeout=60")).await.status, StatusCode::OK);
        let unknown = t.post_empty(&format!("/v2/user/refresh/{}", uuid::Uuid::new_v4())).await;
        assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    }

    #[tokio::test]
    async fn the_ninth_refresh_within_an_hour_is_429_with_retry_after() {
        let t = TestApp::embedded().await;
        let id = t.create_user("r-limit").await;
        let other = t.create_user("r-other").await;
        for i in 0..8 {
            t.clock.advance(chrono::Duration::minutes(1));
            let a = t.post_empty(&format!("/v2/user/refresh/{id}")).await;
            assert_eq!(a.status, StatusCode::OK, "refresh {}: {}", i + 1, a.body);
        }
        let a = t.post_empty(&format!("/v2/user/refresh/{id}")).await;
        assert_eq!(a.status, StatusCode::TOO_MANY_REQUESTS, "{}", a.body);
        assert!(a.body["detail"].as_str().unwrap().contains('8'), "{}", a.body);
        // The first of the eight was 7 minutes ago: free again 53 minutes from now.
        let retry = a.headers.get("retry-after").unwrap().to_str().unwrap().to_owned();
        assert_eq!(retry, (53 * 60).to_string());
        assert_eq!(
            t.post_empty(&format!("/v2/user/refresh/{other}")).await.status,
            StatusCode::OK,
            "per user"
        );
        t.clock.advance(chrono::Duration::minutes(53));
        assert_eq!(t.post_empty(&format!("/v2/user/refresh/{id}")).await.status, StatusCode::OK);
        assert_eq!(
            t.post_empty(&format!("/v2/user/refresh/{id}")).await.status,
            StatusCode::TOO_MANY_REQUESTS
        );
    }
}

mod delete_and_undo {
    use super::*;

    #[tokio::test]
    async fn delete_hides_the_user_and_frees_its_client_id() {
        let t = TestApp::embedded().await;
        let id = t.create_user("d1").await;
        let a = t.delete(&format!("/v2/user/{id}")).await;
        assert_eq!(a.status, StatusCode::OK);
        assert_eq!(a.body, json!({"success": true}));
        assert_eq!(t.get(&format!("/v2/user/{id}")).await.status, StatusCode::NOT_FOUND);
        assert_eq!(t.get("/v2/user/resolve/d1").await.status, StatusCode::NOT_FOUND);
        assert_eq!(t.get("/v2/user").await.body["total"], 0);
        assert_eq!(
            t.delete(&format!("/v2/user/{id}")).await.status,
            StatusCode::NOT_FOUND,
            "already deleted"
        );
        assert_eq!(t.post_empty(&format!("/v2/user/refresh/{id}")).await.status, StatusCode::NOT_FOUND);
        t.create_user("d1").await;
    }

    #[tokio::test]
    async fn undo_by_user_id_or_client_user_id() {
        let t = TestApp::embedded().await;
        let a = t.create_user("u-a").await;
        let b = t.create_user("u-b").await;
        t.delete(&format!("/v2/user/{a}")).await;
        t.delete(&format!("/v2/user/{b}")).await;
        let r = t.post_empty(&format!("/v2/user/undo_delete?user_id={a}")).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        assert_eq!(r.body, json!({"success": true}));
        let r = t.post_empty("/v2/user/undo_delete/?client_user_id=u-b").await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        assert_eq!(t.get("/v2/user/resolve/u-a").await.body["user_id"], a);
        assert_eq!(t.get("/v2/user/resolve/u-b").await.body["user_id"], b);
        assert_eq!(t.get("/v2/user").await.body["total"], 2);
        let again = t.post_empty(&format!("/v2/user/undo_delete?user_id={a}")).await;
        assert_eq!(again.status, StatusCode::NOT_FOUND, "not deleted any more");
    }

    #[tokio::test]
    async fn undo_needs_exactly_one_selector() {
        let t = TestApp::embedded().await;
        let id = uuid::Uuid::new_v4();
        for q in ["", &format!("?user_id={id}&client_user_id=x"), "?user_id=nope"] {
            let a = t.post_empty(&format!("/v2/user/undo_delete{q}")).await;
            assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{q}");
        }
        assert_eq!(
            t.post_empty(&format!("/v2/user/undo_delete?user_id={id}")).await.status,
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            t.post_empty("/v2/user/undo_delete?client_user_id=ghost").await.status,
            StatusCode::NOT_FOUND
        );
    }

    #[tokio::test]
    async fn undo_is_refused_when_the_client_id_was_taken_again() {
        let t = TestApp::embedded().await;
        let old = t.create_user("reused").await;
        t.delete(&format!("/v2/user/{old}")).await;
        t.create_user("reused").await;
        let a = t.post_empty(&format!("/v2/user/undo_delete?user_id={old}")).await;
        assert_eq!(a.status, StatusCode::BAD_REQUEST);
        assert!(a.body["detail"].as_str().unwrap().contains("another user"));
        assert_eq!(t.get(&format!("/v2/user/{old}")).await.status, StatusCode::NOT_FOUND, "still deleted");
    }
}
