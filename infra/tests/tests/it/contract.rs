//! The OpenAPI document against the code: committed copy up to date, every documented
//! operation served, nothing served on a documented path that the document does not list.

use http::{Method, StatusCode};
use serde_json::Value;

use crate::helpers::TestApp;

const METHODS: [&str; 5] = ["get", "post", "put", "patch", "delete"];

fn committed_path() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/openapi.json")
}

#[test]
fn committed_document_matches_the_code() {
    let generated = wearlab_local::openapi_json();
    let committed = std::fs::read_to_string(committed_path()).unwrap_or_default();
    assert!(
        generated == committed,
        "docs/openapi.json is out of date: run `make openapi` and commit the result"
    );
}

#[tokio::test]
async fn served_document_is_the_generated_one() {
    let t = TestApp::embedded().await;
    let a = t.send(Method::GET, "/openapi.json", None, None).await;
    assert_eq!(a.status, StatusCode::OK);
    let generated: Value = serde_json::from_str(&wearlab_local::openapi_json()).unwrap();
    assert_eq!(a.body, generated);
    assert_eq!(a.body["openapi"], "3.1.0");
}

/// Each documented (path, method), with path parameters filled in.
fn operations() -> Vec<(String, Method)> {
    let doc: Value = serde_json::from_str(&wearlab_local::openapi_json()).unwrap();
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        let concrete = path
            .split('/')
            .map(|seg| if seg.starts_with('{') { uuid::Uuid::new_v4().to_string() } else { seg.to_owned() })
            .collect::<Vec<_>>()
            .join("/");
        for m in METHODS {
            if item.get(m).is_some() {
                out.push((concrete.clone(), Method::from_bytes(m.to_uppercase().as_bytes()).unwrap()));
            }
        }
    }
    out
}

#[tokio::test]
async fn every_documented_operation_is_served() {
    let t = TestApp::embedded().await;
    let ops = operations();
    assert!(ops.len() >= 8, "{ops:?}");
    for (path, method) in ops {
        let a = t.send(method.clone(), &path, Some(&t.key), Some("{}")).await;
        assert_ne!(a.status, StatusCode::METHOD_NOT_ALLOWED, "{method} {path}");
        assert_ne!(a.body["detail"], "Not Found", "{method} {path} reached the fallback");
    }
}

#[tokio::test]
async fn documented_paths_serve_no_undocumented_method() {
    let t = TestApp::embedded().await;
    let doc: Value = serde_json::from_str(&wearlab_local::openapi_json()).unwrap();
    for (path, item) in doc["paths"].as_object().unwrap() {
        let concrete =
            path.replace("{user_id}", &uuid::Uuid::new_v4().to_string()).replace("{client_user_id}", "x");
        for m in METHODS.iter().filter(|m| item.get(**m).is_none()) {
            let method = Method::from_bytes(m.to_uppercase().as_bytes()).unwrap();
            let a = t.send(method.clone(), &concrete, Some(&t.key), Some("{}")).await;
            assert!(
                a.status == StatusCode::METHOD_NOT_ALLOWED || a.body["detail"] == "Not Found",
                "{method} {path} is served but not documented: {}",
                a.status
            );
        }
    }
}

#[test]
fn every_operation_documents_auth_and_its_errors() {
    let doc: Value = serde_json::from_str(&wearlab_local::openapi_json()).unwrap();
    assert!(doc["components"]["securitySchemes"]["api_key"]["name"] == "x-service-api-key");
    for (path, item) in doc["paths"].as_object().unwrap() {
        for m in METHODS {
            let Some(op) = item.get(m) else { continue };
            assert_eq!(op["security"][0]["api_key"], serde_json::json!([]), "{m} {path}");
            let responses = op["responses"].as_object().unwrap();
            assert!(responses.contains_key("401"), "{m} {path}");
            assert!(responses.keys().any(|s| s.starts_with('2')), "{m} {path}");
            if op.get("requestBody").is_some() {
                assert!(responses.contains_key("422") && responses.contains_key("413"), "{m} {path}");
            }
        }
    }
}

#[test]
fn operation_ids_are_unique() {
    let doc: Value = serde_json::from_str(&wearlab_local::openapi_json()).unwrap();
    let mut seen = std::collections::HashMap::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for m in METHODS {
            if let Some(id) = item.get(m).and_then(|op| op["operationId"].as_str())
                && let Some(first) = seen.insert(id.to_owned(), format!("{m} {path}"))
            {
                panic!("operationId {id} is used by {first} and {m} {path}");
            }
        }
    }
}
