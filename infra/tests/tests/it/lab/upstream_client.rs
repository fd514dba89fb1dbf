//! Every answer that carries an order, and the results, hold every field the upstream Python
//! client (PyPI `vital` 2.1.569, a Fern-generated pydantic client) requires: a model refuses a
//! body that lacks one of its required fields, or holds null where the field is not optional.
//! The required field names below were read from that version's `vital/types/*.py`; the test
//! checks Wearlab's real answers against them.

use chrono::Duration;
use http::StatusCode;
use serde_json::{Value, json};

use super::{lab_test_id, order_body, place_order};
use crate::helpers::TestApp;

/// One model: where it sits in the answer (`a.b`, `[]` for each element of a list) and its
/// required fields. A model under an optional field is checked when the field is present.
type Model = (&'static str, &'static [&'static str]);

/// `ClientFacingOrder` and the models under it (vital 2.1.569).
const ORDER: &[Model] = &[
    // ClientFacingOrder
    (
        "",
        &["user_id", "id", "team_id", "lab_test", "details", "created_at", "updated_at", "events", "has_abn"],
    ),
    // ClientFacingLabTest
    ("lab_test", &["id", "slug", "name", "sample_type", "method", "price", "is_active", "status"]),
    // ClientFacingLab (optional under the lab test)
    (
        "lab_test.lab",
        &[
            "id",
            "slug",
            "name",
            "first_line_address",
            "city",
            "zipcode",
            "collection_methods",
            "sample_types",
        ],
    ),
    // ClientFacingMarker
    ("lab_test.markers[]", &["id", "name", "slug"]),
    // ClientFacingOrderDetails: a union on `type`; every member's `data` requires these.
    ("details", &["type"]),
    ("details.data", &["id", "created_at", "updated_at"]),
    // ClientFacingOrderEvent
    ("events[]", &["id", "created_at", "status"]),
    // ClientFacingPatientDetailsCompatible
    ("patient_details", &["dob", "gender"]),
    // PatientAddressCompatible
    ("patient_address", &["first_line", "city", "state", "zip", "country"]),
    // ClientFacingPhysician
    ("physician", &["first_name", "last_name", "npi"]),
];

/// `PostOrderResponse` (POST /v3/order, POST /v3/order/{id}/cancel).
const POST_ORDER_RESPONSE: &[&str] = &["order", "status", "message"];
/// `GetOrdersResponse` (GET /v3/orders).
const GET_ORDERS_RESPONSE: &[&str] = &["orders"];

/// `LabResultsRaw` (GET /v3/order/{id}/result) and the models under it (vital 2.1.569).
const RESULTS: &[Model] = &[
    ("", &["metadata", "results"]),
    // LabResultsMetadata
    ("metadata", &["age", "dob", "patient", "date_reported", "specimen_number"]),
    // BiomarkerResult
    ("results[]", &["name", "result", "type"]),
];

/// The values at `path` (`a.b`, `[]` fans out over a list's elements); absent or null optional
/// parents yield nothing.
fn at<'a>(v: &'a Value, path: &str) -> Vec<&'a Value> {
    let mut found = vec![v];
    for part in path.split('.').filter(|p| !p.is_empty()) {
        let (key, each) = part.strip_suffix("[]").map_or((part, false), |k| (k, true));
        found = found
            .into_iter()
            .filter_map(|x| x.get(key))
            .filter(|x| !x.is_null())
            .flat_map(|x| {
                if each { x.as_array().map(|a| a.iter().collect()).unwrap_or_default() } else { vec![x] }
            })
            .collect();
    }
    found
}

/// Every `<path>.<field>` the upstream models require and `body` lacks (or holds as null).
fn missing(body: &Value, models: &[Model]) -> Vec<String> {
    let mut out = Vec::new();
    for (path, required) in models {
        for (i, obj) in at(body, path).into_iter().enumerate() {
            for field in *required {
                if obj.get(field).is_none_or(Value::is_null) {
                    out.push(format!("{path}#{i}.{field}"));
                }
            }
        }
    }
    out
}

fn assert_order(what: &str, order: &Value) {
    assert!(order.is_object(), "{what}: no order in the answer");
    assert_eq!(missing(order, ORDER), Vec::<String>::new(), "{what}: {order}");
    // The union's tag names a member of ClientFacingOrderDetails.
    let tag = order["details"]["type"].as_str().unwrap_or_default();
    assert!(
        ["walk_in_test", "testkit", "at_home_phlebotomy", "on_site_collection"].contains(&tag),
        "{what}: details.type {tag}"
    );
    assert!(order["has_abn"].is_boolean(), "{what}: has_abn {}", order["has_abn"]);
}

fn assert_fields(what: &str, body: &Value, required: &[&str]) {
    let lacking: Vec<&&str> = required.iter().filter(|f| body.get(**f).is_none_or(Value::is_null)).collect();
    assert!(lacking.is_empty(), "{what} lacks {lacking:?}: {body}");
}

#[tokio::test]
async fn every_order_answer_holds_what_the_upstream_client_requires() {
    let t = TestApp::embedded().await;
    let user = t.create_user("upstream-1").await;

    let placed = t.post("/v3/order", order_body(&user)).await;
    assert_eq!(placed.status, StatusCode::OK, "{}", placed.body);
    assert_fields("POST /v3/order", &placed.body, POST_ORDER_RESPONSE);
    assert_order("POST /v3/order", &placed.body["order"]);
    let order = &placed.body["order"];
    assert_eq!(order["details"]["type"], "walk_in_test");
    assert_eq!(order["details"]["type"], order["collection_method"]);
    assert_eq!(order["details"]["data"]["id"], order["id"]);
    assert_eq!(order["has_abn"], false);
    let id = order["id"].as_str().unwrap().to_owned();

    // An order of add-on markers only, collected at home, and a test kit order.
    let mut add_on = order_body(&user);
    add_on["order_set"] = json!({"add_on": {"marker_ids": [1001]}});
    let a = t.post("/v3/order", add_on).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_order("POST /v3/order (add-on markers only)", &a.body["order"]);
    let mut kit = order_body(&user);
    kit["order_set"] = json!({"lab_test_ids": [lab_test_id("cascade_vitamin_d_test_testkit")]});
    let k = t.post("/v3/order", kit).await;
    assert_eq!(k.status, StatusCode::OK, "{}", k.body);
    assert_order("POST /v3/order (testkit)", &k.body["order"]);
    assert_eq!(k.body["order"]["details"]["type"], "testkit");

    let got = t.get(&format!("/v3/order/{id}")).await;
    assert_eq!(got.status, StatusCode::OK);
    assert_order("GET /v3/order/{id}", &got.body);

    let list = t.get("/v3/orders").await;
    assert_eq!(list.status, StatusCode::OK, "{}", list.body);
    assert_fields("GET /v3/orders", &list.body, GET_ORDERS_RESPONSE);
    let orders = list.body["orders"].as_array().unwrap();
    assert_eq!(orders.len(), 3);
    for o in orders {
        assert_order("GET /v3/orders", o);
    }

    // The events carry the order too.
    for e in t.published().iter().filter(|e| e.event_type.starts_with("labtest.order.")) {
        assert_order(&e.event_type, &e.data);
    }

    let cancelled =
        t.post_empty(&format!("/v3/order/{}/cancel", k.body["order"]["id"].as_str().unwrap())).await;
    assert_eq!(cancelled.status, StatusCode::OK, "{}", cancelled.body);
    assert_fields("POST /v3/order/{id}/cancel", &cancelled.body, POST_ORDER_RESPONSE);
    assert_order("POST /v3/order/{id}/cancel", &cancelled.body["order"]);
    assert_eq!(
        cancelled.body["order"]["details"]["data"]["updated_at"],
        cancelled.body["order"]["updated_at"]
    );
}

#[tokio::test]
async fn results_hold_what_the_upstream_client_requires_and_name_their_type_twice() {
    let t = TestApp::embedded().await;
    let (_, o) = place_order(&t, "upstream-2").await;
    let id = o["id"].as_str().unwrap();
    t.clock.advance(Duration::days(4));
    let r = t.get(&format!("/v3/order/{id}/result")).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(missing(&r.body, RESULTS), Vec::<String>::new(), "{}", r.body);
    let results = r.body["results"].as_array().unwrap();
    assert!(!results.is_empty());
    for x in results {
        assert!(x["type"].is_string(), "{x}");
        assert_eq!(x["result_type"], x["type"], "a client reading either name finds the type: {x}");
    }
}
