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

/// Every operation takes the team's API key and documents its 401, except the phone's token
/// exchange, whose credential is the sign-in or refresh token in its body.
#[test]
fn every_operation_documents_auth_and_its_errors() {
    const PUBLIC: [&str; 3] = ["/auth/v1/token", "/api/v1/token/refresh", "/api/v1/token/revoke"];
    let doc: Value = serde_json::from_str(&wearlab_local::openapi_json()).unwrap();
    assert!(doc["components"]["securitySchemes"]["api_key"]["name"] == "x-service-api-key");
    for (path, item) in doc["paths"].as_object().unwrap() {
        for m in METHODS {
            let Some(op) = item.get(m) else { continue };
            let responses = op["responses"].as_object().unwrap();
            // The phone's token exchange takes its credential in the form, not a key: it says
            // so with no security requirement (and is the only kind that may).
            if PUBLIC.contains(&path.as_str()) {
                assert_eq!(op["security"], serde_json::json!([]), "{m} {path}");
            } else {
                assert_eq!(op["security"][0]["api_key"], serde_json::json!([]), "{m} {path}");
                assert!(responses.contains_key("401"), "{m} {path}");
            }
            assert!(responses.keys().any(|s| s.starts_with('2')), "{m} {path}");
            if op.get("requestBody").is_some() {
                for status in ["413", "415", "422"] {
                    assert!(responses.contains_key(status), "{status} {m} {path}");
                }
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

/// Names of the component schemas a request body may hold: their optional fields are optional
/// as input, so the document cannot mark them required even where answers always carry them.
fn request_schemas(doc: &Value) -> std::collections::BTreeSet<String> {
    fn refs(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                for (k, v) in m {
                    match (k.as_str(), v.as_str()) {
                        ("$ref", Some(r)) => out.push(r.rsplit('/').next().unwrap().to_owned()),
                        _ => refs(v, out),
                    }
                }
            }
            Value::Array(a) => a.iter().for_each(|v| refs(v, out)),
            _ => {}
        }
    }
    let mut todo = Vec::new();
    for item in doc["paths"].as_object().unwrap().values() {
        for op in item.as_object().unwrap().values() {
            if let Some(body) = op.get("requestBody") {
                refs(body, &mut todo);
            }
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    while let Some(name) = todo.pop() {
        if seen.insert(name.clone()) {
            refs(&doc["components"]["schemas"][&name], &mut todo);
        }
    }
    seen
}

/// Walks an answer with its schema: every `required` field is there, and every field the answer
/// carries as `null` (so one the server always sends) is `required` too.
struct RequiredCheck<'a> {
    doc: &'a Value,
    input: std::collections::BTreeSet<String>,
    failures: Vec<String>,
}

impl RequiredCheck<'_> {
    fn check(&mut self, value: &Value, schema: &Value, at: &str, name: Option<&str>, depth: usize) {
        if depth > 40 {
            return;
        }
        if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
            let n = r.rsplit('/').next().unwrap();
            return self.check(value, &self.doc["components"]["schemas"][n], at, Some(n), depth + 1);
        }
        for key in ["oneOf", "anyOf", "allOf"] {
            if let Some(alts) = schema.get(key).and_then(Value::as_array) {
                // The alternative that describes this kind of value (object, list) is walked.
                for alt in alts {
                    if alt.get("type").and_then(Value::as_str) != Some("null") {
                        self.check(value, alt, at, name, depth + 1);
                    }
                }
                return;
            }
        }
        match value {
            Value::Object(fields) => {
                let Some(props) = schema.get("properties").and_then(Value::as_object) else { return };
                let required: Vec<&str> = schema
                    .get("required")
                    .and_then(Value::as_array)
                    .map(|r| r.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                for r in &required {
                    if !fields.contains_key(*r) {
                        self.failures.push(format!("{at}: required `{r}` missing"));
                    }
                }
                let is_input = name.is_some_and(|n| self.input.contains(n));
                for (k, v) in fields {
                    if v.is_null() && !required.contains(&k.as_str()) && !is_input {
                        self.failures.push(format!("{at}.{k}: always sent (null here) but not required"));
                    }
                    if let Some(s) = props.get(k) {
                        self.check(v, s, &format!("{at}.{k}"), None, depth + 1);
                    }
                }
            }
            Value::Array(items) => {
                if let Some(s) = schema.get("items") {
                    for (i, item) in items.iter().enumerate() {
                        self.check(item, s, &format!("{at}[{i}]"), None, depth + 1);
                    }
                }
            }
            _ => {}
        }
    }
}

/// The answers of the API's main reads and writes against the `required` lists of the document.
#[tokio::test]
async fn answers_carry_every_required_field_and_always_sent_fields_are_required() {
    use crate::lab::{insurance_body, place_order};
    use crate::linking::{link_token, password_link};
    use serde_json::json;

    let doc: Value = serde_json::from_str(&wearlab_local::openapi_json()).unwrap();
    let t = TestApp::embedded().await;
    let user = t.create_user("required-1").await;
    let connected = t.create_user("required-2").await;
    assert_eq!(
        t.post("/v2/link/connect/demo", json!({"user_id": connected, "provider": "fitbit"})).await.status,
        StatusCode::OK
    );
    let stack = t.stack.as_ref().unwrap();
    for _ in 0..50 {
        if stack.run_pulls_once().await.unwrap() == 0 {
            break;
        }
    }
    let tk = link_token(&t, &user, json!({})).await;
    let (_, order) = place_order(&t, "required-3").await;
    let order_id = order["id"].as_str().unwrap();
    assert_eq!(t.post(&format!("/v2/user/{user}/insurance"), insurance_body()).await.status, StatusCode::OK);

    let range = "start_date=2026-02-20&end_date=2026-02-28";
    let mut answers: Vec<(&str, &str, crate::helpers::Answer)> = vec![
        ("/v2/user/{user_id}", "get", t.get(&format!("/v2/user/{user}")).await),
        ("/v2/user", "get", t.get("/v2/user").await),
        ("/v2/providers", "get", t.get("/v2/providers").await),
        ("/v2/user/providers/{user_id}", "get", t.get(&format!("/v2/user/providers/{connected}")).await),
        (
            "/v2/link/provider/password/{provider}",
            "post",
            password_link(&t, "zwift", Some(&tk), "nobody").await,
        ),
        ("/v3/order/{order_id}", "get", t.get(&format!("/v3/order/{order_id}")).await),
        ("/v3/insurance/search/payor", "get", t.get("/v3/insurance/search/payor").await),
        ("/v3/lab_test", "get", t.get("/v3/lab_test").await),
    ];
    for r in ["activity", "sleep", "sleep_cycle", "workouts", "body", "meal"] {
        let path = match r {
            "activity" => "/v2/summary/activity/{user_id}",
            "sleep" => "/v2/summary/sleep/{user_id}",
            "sleep_cycle" => "/v2/summary/sleep_cycle/{user_id}",
            "workouts" => "/v2/summary/workouts/{user_id}",
            "body" => "/v2/summary/body/{user_id}",
            _ => "/v2/summary/meal/{user_id}",
        };
        answers.push((path, "get", t.get(&format!("/v2/summary/{r}/{connected}?{range}")).await));
    }
    t.clock.advance(chrono::Duration::days(4));
    answers.push((
        "/v3/order/{order_id}/result",
        "get",
        t.get(&format!("/v3/order/{order_id}/result")).await,
    ));

    let mut check = RequiredCheck { doc: &doc, input: request_schemas(&doc), failures: Vec::new() };
    for (path, method, a) in &answers {
        assert_eq!(a.status, StatusCode::OK, "{method} {path}: {}", a.body);
        let schema =
            &doc["paths"][*path][*method]["responses"]["200"]["content"]["application/json"]["schema"];
        assert!(!schema.is_null(), "{method} {path} documents no 200 JSON answer");
        check.check(&a.body, schema, &format!("{method} {path}"), None, 0);
    }
    assert!(check.failures.is_empty(), "{}", check.failures.join("\n"));
}
