//! Request bodies sent with `Content-Encoding: gzip`, as the mobile SDKs send their uploads: a
//! gzipped body is the plain one (answers, validation, idempotency), a gzip bomb is a 413 at the
//! decompressed limit, a broken stream a 400 and an unknown coding a 415.

use std::io::Write;

use base64::Engine;
use flate2::Compression;
use flate2::write::GzEncoder;
use http::{Method, StatusCode};
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::helpers::{API_KEY_HEADER, Answer, TestApp};

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = GzEncoder::new(Vec::new(), Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// `POST /v2/user` with `body` sent under `coding` (and any other headers).
async fn post_encoded(t: &TestApp, coding: &str, headers: &[(&str, &str)], body: Vec<u8>) -> Answer {
    let mut all = vec![("content-encoding", coding)];
    all.extend_from_slice(headers);
    t.send_bytes(Method::POST, "/v2/user", Some(&t.key), &all, Some(body)).await
}

async fn post_plain(t: &TestApp, headers: &[(&str, &str)], body: &str) -> Answer {
    t.send_with(Method::POST, "/v2/user", headers, Some(body)).await
}

fn keys(v: &Value) -> Vec<String> {
    let mut k: Vec<String> = v.as_object().expect("an object").keys().cloned().collect();
    k.sort();
    k
}

async fn users(t: &TestApp) -> Value {
    t.get("/v2/user").await.body["total"].clone()
}

#[tokio::test]
async fn a_gzipped_create_is_the_plain_one() {
    let t = TestApp::embedded().await;
    let plain = post_plain(&t, &[], r#"{"client_user_id": "plain-1"}"#).await;
    assert_eq!(plain.status, StatusCode::OK, "{}", plain.body);
    for (coding, id) in [("gzip", "gz-1"), ("GZIP", "gz-2"), ("x-gzip", "gz-3")] {
        let body = format!(r#"{{"client_user_id": "{id}"}}"#);
        let gz = post_encoded(&t, coding, &[], gzip(body.as_bytes())).await;
        assert_eq!(gz.status, StatusCode::OK, "{coding}: {}", gz.body);
        assert_eq!(keys(&gz.body), keys(&plain.body), "{coding}: the same answer");
        assert_eq!(gz.headers["content-type"], "application/json");
        let user = gz.body["user_id"].as_str().unwrap();
        let read = t.get(&format!("/v2/user/{user}")).await;
        assert_eq!(read.status, StatusCode::OK, "{}", read.body);
        assert_eq!(read.body["client_user_id"], id, "{coding}: stored as sent");
    }
    // `identity` is no coding at all.
    let same = post_encoded(&t, "identity", &[], br#"{"client_user_id": "id-1"}"#.to_vec()).await;
    assert_eq!(same.status, StatusCode::OK, "{}", same.body);
    assert_eq!(users(&t).await, 5);
}

#[tokio::test]
async fn a_gzipped_request_and_its_plain_retry_are_one_request() {
    let t = TestApp::embedded().await;
    let body = r#"{"client_user_id": "idem-gz"}"#;
    let key = [("x-idempotency-key", "gz-create-1")];
    let first = post_encoded(&t, "gzip", &key, gzip(body.as_bytes())).await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.body);
    assert!(first.headers.get("idempotent-replayed").is_none());

    // Replayed as a plain repeat would be, whichever way the repeat is sent.
    let plain = post_plain(&t, &key, body).await;
    let again = post_encoded(&t, "gzip", &key, gzip(body.as_bytes())).await;
    for repeat in [&plain, &again] {
        assert_eq!(repeat.status, StatusCode::OK, "replayed, not a 400 conflict: {}", repeat.body);
        assert_eq!(repeat.body, first.body);
        assert_eq!(repeat.headers["idempotent-replayed"], "true");
    }

    // The fingerprint is of the decoded body: another body under the same key is refused.
    let other = post_encoded(&t, "gzip", &key, gzip(br#"{"client_user_id": "other"}"#)).await;
    assert_eq!(other.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", other.body);
    assert_eq!(users(&t).await, 1);
}

/// About 64 KB that inflate to 64 MiB of zeros, built a MiB at a time.
fn bomb() -> Vec<u8> {
    let mut e = GzEncoder::new(Vec::new(), Compression::fast());
    let zeros = vec![0u8; 1024 * 1024];
    for _ in 0..64 {
        e.write_all(&zeros).unwrap();
    }
    e.finish().unwrap()
}

#[tokio::test]
async fn a_gzip_bomb_is_a_413_at_the_decompressed_limit() {
    let t = TestApp::embedded().await;
    let bomb = bomb();
    assert!(bomb.len() < 1024 * 1024, "{} bytes sent", bomb.len());
    let limit = format!("{} MiB", wearlab_web::MAX_DECODED_BODY_BYTES / (1024 * 1024));
    // Through the route's extractor, and through the idempotency layer, which reads it first.
    for headers in [&[][..], &[("x-idempotency-key", "bomb")][..]] {
        let started = std::time::Instant::now();
        let a = post_encoded(&t, "gzip", headers, bomb.clone()).await;
        assert_eq!(a.status, StatusCode::PAYLOAD_TOO_LARGE, "{}", a.body);
        let detail = a.body["detail"].as_str().unwrap();
        assert!(detail.contains("decompressed") && detail.contains(&limit), "{detail}");
        eprintln!("bomb refused in {:?} ({headers:?})", started.elapsed());
    }
    assert_eq!(users(&t).await, 0);
}

#[tokio::test]
async fn a_gzipped_body_may_expand_past_the_sent_limit() {
    let t = TestApp::embedded().await;
    // 7 MiB of JSON: a 413 sent plain, read when sent gzipped (the client_user_id is then too
    // long, as the route says).
    let big = format!(r#"{{"client_user_id": "{}"}}"#, "x".repeat(7 * 1024 * 1024));
    let plain = post_plain(&t, &[], &big).await;
    assert_eq!(plain.status, StatusCode::PAYLOAD_TOO_LARGE, "{}", plain.body);
    // Also through the idempotency layer, which decodes it before the route reads it.
    for headers in [&[][..], &[("x-idempotency-key", "big")][..]] {
        let gz = post_encoded(&t, "gzip", headers, gzip(big.as_bytes())).await;
        assert_eq!(gz.status, StatusCode::UNPROCESSABLE_ENTITY, "{headers:?}: {}", gz.body);
        assert_eq!(gz.body["detail"][0]["loc"], json!(["body", "client_user_id"]));
    }
}

#[tokio::test]
async fn a_broken_gzip_stream_is_a_400() {
    let t = TestApp::embedded().await;
    let good = gzip(br#"{"client_user_id": "broken"}"#);
    let truncated = good[..good.len() / 2].to_vec();
    let plain_json = br#"{"client_user_id": "broken"}"#.to_vec();
    for (what, body) in [("truncated", truncated), ("not gzip at all", plain_json)] {
        for headers in [&[][..], &[("x-idempotency-key", "broken")][..]] {
            let a = post_encoded(&t, "gzip", headers, body.clone()).await;
            assert_eq!(a.status, StatusCode::BAD_REQUEST, "{what}: {}", a.body);
            let detail = a.body["detail"].as_str().unwrap();
            assert!(detail.contains("not a valid gzip stream"), "{what}: {detail}");
        }
    }
    assert_eq!(users(&t).await, 0);
}

#[tokio::test]
async fn an_unknown_content_encoding_is_a_415_naming_gzip() {
    let t = TestApp::embedded().await;
    let body = gzip(br#"{"client_user_id": "brotli"}"#);
    for coding in ["br", "deflate", "zstd"] {
        for headers in [&[][..], &[("x-idempotency-key", "br")][..]] {
            let a = post_encoded(&t, coding, headers, body.clone()).await;
            assert_eq!(a.status, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{coding}: {}", a.body);
            let detail = a.body["detail"].as_str().unwrap();
            assert!(detail.contains("gzip") && detail.contains("identity"), "{coding}: {detail}");
        }
    }
    assert_eq!(users(&t).await, 0);
}

#[tokio::test]
async fn invalid_json_gzipped_is_refused_as_plain() {
    let t = TestApp::embedded().await;
    for body in [
        r#"{"client_user_id": "#,
        r#"{"client_user_id": "a"} trailing"#,
        r#"["not", "an", "object"]"#,
        r#"{}"#,
        r#"{"client_user_id": 12}"#,
        "",
    ] {
        let plain = post_plain(&t, &[], body).await;
        let gz = post_encoded(&t, "gzip", &[], gzip(body.as_bytes())).await;
        assert!(plain.status.is_client_error(), "{body:?}: {}", plain.body);
        assert_eq!(gz.status, plain.status, "{body:?}: {}", gz.body);
        assert_eq!(gz.body, plain.body, "{body:?}");
    }
    assert_eq!(users(&t).await, 0);
}

/// As deployed: API Gateway (HTTP API, payload format 2.0) hands the Lambda a binary body in
/// base64 with `isBase64Encoded`, and `lambda_http` turns the event into the request the router
/// serves. The event's shape is the one documented in "Create AWS Lambda proxy integrations for
/// HTTP APIs in API Gateway"
/// (https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-develop-integrations-lambda.html).
#[tokio::test]
async fn a_gzipped_body_through_an_api_gateway_event_is_read() {
    let t = TestApp::embedded().await;
    let body = gzip(br#"{"client_user_id": "from-lambda"}"#);
    let event = json!({
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": "/v2/user",
        "rawQueryString": "",
        "headers": {
            "content-type": "application/json",
            "content-encoding": "gzip",
            "host": "api.example.com",
            API_KEY_HEADER: t.key,
        },
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "api-id",
            "domainName": "api.example.com",
            "http": {
                "method": "POST",
                "path": "/v2/user",
                "protocol": "HTTP/1.1",
                "sourceIp": "192.0.2.1",
                "userAgent": "agent"
            },
            "requestId": "id",
            "routeKey": "$default",
            "stage": "$default",
            "time": "12/Mar/2020:19:03:58 +0000",
            "timeEpoch": 1583348638390u64
        },
        "body": base64::engine::general_purpose::STANDARD.encode(&body),
        "isBase64Encoded": true
    });
    let req = lambda_http::request::from_str(&event.to_string()).expect("an HTTP API event");
    let res = t.app.clone().oneshot(req.map(axum::body::Body::new)).await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let user: Value =
        serde_json::from_slice(&http_body_util::BodyExt::collect(res.into_body()).await.unwrap().to_bytes())
            .unwrap();
    let read = t.get(&format!("/v2/user/{}", user["user_id"].as_str().unwrap())).await;
    assert_eq!(read.body["client_user_id"], "from-lambda");
}
