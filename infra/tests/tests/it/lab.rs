//! Tests of lab ordering: demographics, insurance, the catalog, orders on the simulated lab
//! network, results, requisitions, patient service centers, portal links and erasure.

mod catalog;
mod demographics;
mod erasure;
mod insurance;
mod open_order_sweep;
mod orders;
mod portal;
mod psc;
mod upstream_client;
mod verification;

use http::StatusCode;
use serde_json::{Value, json};
use wearlab_domain::lab::test_catalog::catalog;

use crate::helpers::TestApp;

/// A valid demographics body.
pub fn info_body() -> Value {
    json!({
        "first_name": "Ada",
        "last_name": "O'Neil-Smith",
        "email": "ada@example.com",
        "phone_number": "+1 (212) 555-0100",
        "gender": "female",
        "dob": "1985-04-12",
        "address": {
            "first_line": "350 5th Ave",
            "second_line": "Floor 3",
            "city": "New York",
            "state": "NY",
            "zip_code": "10118",
            "country": "US",
            "access_notes": null
        },
        "race": "asian",
        "ethnicity": "non_hispanic",
        "sexual_orientation": "bisexual",
        "gender_identity": "female"
    })
}

pub fn address() -> Value {
    json!({"first_line": "1 Main St", "city": "New York", "state": "NY", "zip": "10001", "country": "US"})
}

/// A valid insurance body.
pub fn insurance_body() -> Value {
    json!({
        "payor_code": "60054",
        "member_id": "W123456789",
        "relationship": "Self",
        "insured": {
            "first_name": "Ada",
            "last_name": "Smith",
            "gender": "female",
            "address": address(),
            "dob": "1985-04-12",
            "email": "ada@example.com",
            "phone_number": "2125550100"
        },
        "group_id": "GRP-1"
    })
}

/// The id of a lab test of the reference data by its slug.
pub fn lab_test_id(slug: &str) -> String {
    catalog()
        .lab_tests
        .iter()
        .find(|t| t.slug == slug)
        .unwrap_or_else(|| panic!("no lab test {slug}"))
        .id
        .to_string()
}

/// A valid order body for one lab test of the Meridian lab (walk-in).
pub fn order_body(user_id: &str) -> Value {
    json!({
        "user_id": user_id,
        "patient_details": {
            "first_name": "Grace",
            "last_name": "Hopper",
            "dob": "1970-12-09",
            "gender": "female",
            "phone_number": "+12125550123",
            "email": "grace@example.com"
        },
        "patient_address": address(),
        "order_set": {"lab_test_ids": [lab_test_id("meridian_essential_health")]}
    })
}

/// Creates a user and places an order for it; returns (user id, order).
pub async fn place_order(t: &TestApp, client_user_id: &str) -> (String, Value) {
    let user = t.create_user(client_user_id).await;
    let a = t.post("/v3/order", order_body(&user)).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    (user, a.body["order"].clone())
}

/// `http://host/path?query` -> `/path?query`.
pub fn path_of(url: &str) -> String {
    let rest = url.split_once("://").map(|(_, r)| r).unwrap_or(url);
    rest.find('/').map(|i| rest[i..].to_owned()).unwrap_or_else(|| "/".into())
}
