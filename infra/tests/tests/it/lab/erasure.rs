//! Erasure removes demographics, insurance, orders, results and portal links of a user.

use chrono::Duration;
use http::StatusCode;
use serde_json::json;

use super::{info_body, insurance_body, place_order};
use crate::helpers::TestApp;

#[tokio::test]
async fn erasure_leaves_no_lab_data_of_the_user() {
    let t = TestApp::embedded().await;
    let (user, order) = place_order(&t, "erase-lab").await;
    let order_id = order["id"].as_str().unwrap().to_owned();
    assert_eq!(t.patch(&format!("/v2/user/{user}/info"), info_body()).await.status, StatusCode::OK);
    assert_eq!(t.post(&format!("/v2/user/{user}/insurance"), insurance_body()).await.status, StatusCode::OK);
    let link =
        t.post(&format!("/v2/user/{user}/create_portal_url"), json!({"context": "communications"})).await;
    assert_eq!(link.status, StatusCode::OK);
    t.clock.advance(Duration::days(4));
    assert_eq!(t.get(&format!("/v3/order/{order_id}/result")).await.status, StatusCode::OK, "results stored");

    let table = &t.stack.as_ref().unwrap().table;
    let mentions = |needle: String| async move {
        table
            .scan_all()
            .await
            .unwrap()
            .into_iter()
            // Webhook deliveries in flight are messages, not stored user data: the webhook
            // worker consumes them.
            .filter(|i| !i.key.pk.starts_with("QUEUE#"))
            // The audit log of PHI access is the team's record of who read the user's data: it
            // holds the user's id and no data, and outlives erasure (docs/OPERATIONS.md).
            .filter(|i| !i.key.pk.starts_with("AUDIT#"))
            .filter(|i| serde_json::to_string(i).unwrap().contains(&needle))
            .map(|i| format!("{}/{}", i.key.pk, i.key.sk))
            .collect::<Vec<_>>()
    };
    let before = mentions(user.clone()).await;
    for sk in ["LAB#INFO", "LAB#INSURANCE#", "LAB#ORDER#", "LAB#RESULT#", "LAB#PORTAL#"] {
        assert!(before.iter().any(|k| k.contains(sk)), "{sk} stored: {before:?}");
    }
    assert!(before.iter().any(|k| k.starts_with("ORDER#")), "order pointer: {before:?}");
    assert!(before.iter().any(|k| k.starts_with("PORTAL#")), "short link pointer: {before:?}");

    assert_eq!(t.delete(&format!("/v2/user/{user}")).await.status, StatusCode::OK);
    t.clock.advance(Duration::days(7));
    assert_eq!(t.run_due_jobs().await, 1);
    assert_eq!(mentions(user.clone()).await, Vec::<String>::new(), "no item of the user remains");
    assert_eq!(mentions(order_id.clone()).await, Vec::<String>::new(), "no item of the order remains");
    assert_eq!(t.get(&format!("/v3/order/{order_id}")).await.status, StatusCode::NOT_FOUND);
}
