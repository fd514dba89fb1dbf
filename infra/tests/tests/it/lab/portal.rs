//! POST /v2/user/{user_id}/create_portal_url and the portal pages it opens.

use chrono::Duration;
use http::{Method, StatusCode};
use serde_json::json;

use super::{info_body, path_of, place_order};
use crate::helpers::{TestApp, error_locs};

async fn with_demographics(t: &TestApp, client_user_id: &str) -> (String, serde_json::Value) {
    let (user, order) = place_order(t, client_user_id).await;
    assert_eq!(t.patch(&format!("/v2/user/{user}/info"), info_body()).await.status, StatusCode::OK);
    (user, order)
}

#[tokio::test]
async fn no_demographics_is_422() {
    let t = TestApp::embedded().await;
    let user = t.create_user("portal-1").await;
    let a = t.post(&format!("/v2/user/{user}/create_portal_url"), json!({"context": "launch"})).await;
    assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(error_locs(&a.body), vec![vec!["path", "user_id"]]);
}

#[tokio::test]
async fn launch_link_opens_the_page_for_ten_minutes() {
    let t = TestApp::embedded().await;
    let (user, order) = with_demographics(&t, "portal-2").await;
    let a = t.post(&format!("/v2/user/{user}/create_portal_url"), json!({"context": "launch"})).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(a.body["expires_in"], 600);
    let url = path_of(a.body["url"].as_str().unwrap());
    assert!(url.starts_with("/v3/portal?token="), "{url}");
    let page = t.send(Method::GET, &url, None, None).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.headers["content-type"].to_str().unwrap().starts_with("text/html"));
    let html = page.body.as_str().unwrap();
    assert!(html.contains("Hello Ada"), "{html}");
    assert!(html.contains("Essential Health Panel"));
    // The status in words; its code only in the order's data-status, for support.
    assert!(html.contains("<span class=\"stage\">Ordered</span>"), "{html}");
    assert!(html.contains(&format!("data-status=\"{}\"", order["status"].as_str().unwrap())));
    assert!(html.contains(&format!("order-{}", order["id"].as_str().unwrap())));
    assert_eq!(page.headers["cache-control"], "no-store");

    t.clock.advance(Duration::minutes(10) + Duration::seconds(1));
    let expired = t.send(Method::GET, &url, None, None).await;
    assert_eq!(expired.status, StatusCode::GONE);
    assert!(expired.body.as_str().unwrap().contains("This link has expired"));
}

#[tokio::test]
async fn communications_link_is_short_and_lives_four_weeks() {
    let t = TestApp::embedded().await;
    let (user, _) = with_demographics(&t, "portal-3").await;
    let a = t.post(&format!("/v2/user/{user}/create_portal_url"), json!({"context": "communications"})).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(a.body["expires_in"], 4 * 7 * 24 * 3600);
    let url = path_of(a.body["url"].as_str().unwrap());
    assert!(url.starts_with("/v3/p/") && url.len() == "/v3/p/".len() + 12, "{url}");
    assert!(a.body["url"].as_str().unwrap().len() < 60, "short");
    // A new device confirms it is the user's first (see `verification`).
    let cookie = super::verification::verify_device(&t, &url).await;
    t.clock.advance(Duration::weeks(4) - Duration::minutes(1));
    let page = crate::hosted::get_page(&t, &url, Some(&cookie)).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.html.contains("Hello Ada"), "{}", page.html);
    t.clock.advance(Duration::minutes(2));
    assert_eq!(crate::hosted::get_page(&t, &url, Some(&cookie)).await.status, StatusCode::GONE);
    assert_eq!(t.send(Method::GET, "/v3/p/AAAAAAAAAAAA", None, None).await.status, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn tampered_tokens_are_refused() {
    let t = TestApp::embedded().await;
    let (user, _) = with_demographics(&t, "portal-4").await;
    let a = t.post(&format!("/v2/user/{user}/create_portal_url"), json!({"context": "launch"})).await;
    let url = path_of(a.body["url"].as_str().unwrap());
    let (head, sig) = url.rsplit_once('.').unwrap();
    let flipped = format!("{head}.{}{}", if sig.starts_with('A') { 'B' } else { 'A' }, &sig[1..]);
    assert_eq!(t.send(Method::GET, &flipped, None, None).await.status, StatusCode::FORBIDDEN);
    assert_eq!(
        t.send(Method::GET, "/v3/portal?token=nonsense", None, None).await.status,
        StatusCode::FORBIDDEN
    );
    assert_eq!(t.send(Method::GET, "/v3/portal", None, None).await.status, StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test]
async fn order_id_must_be_an_order_of_the_user() {
    let t = TestApp::embedded().await;
    let (user, order) = with_demographics(&t, "portal-5").await;
    let (_, other_order) = place_order(&t, "portal-6").await;
    let path = format!("/v2/user/{user}/create_portal_url");
    let foreign = t.post(&path, json!({"context": "launch", "order_id": other_order["id"]})).await;
    assert_eq!(foreign.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(error_locs(&foreign.body), vec![vec!["body", "order_id"]]);
    // A second order of the user, which a link for the first does not show.
    let second = t.post("/v3/order", super::order_body(&user)).await.body["order"].clone();
    let own = t.post(&path, json!({"context": "launch", "order_id": order["id"]})).await;
    assert_eq!(own.status, StatusCode::OK);
    let html = t.send(Method::GET, &path_of(own.body["url"].as_str().unwrap()), None, None).await;
    let html = html.body.as_str().unwrap();
    assert!(html.contains(&format!("order-{}", order["id"].as_str().unwrap())));
    assert!(!html.contains(&format!("order-{}", second["id"].as_str().unwrap())));
}

#[tokio::test]
async fn unknown_user_and_context() {
    let t = TestApp::embedded().await;
    let a = t
        .post(&format!("/v2/user/{}/create_portal_url", uuid::Uuid::new_v4()), json!({"context": "launch"}))
        .await;
    assert_eq!(a.status, StatusCode::NOT_FOUND);
    let (user, _) = with_demographics(&t, "portal-7").await;
    let b = t.post(&format!("/v2/user/{user}/create_portal_url"), json!({"context": "carrier_pigeon"})).await;
    assert_eq!(b.status, StatusCode::UNPROCESSABLE_ENTITY);
    let other = t.other_team_key().await;
    let body = json!({"context": "launch"}).to_string();
    let c =
        t.send(Method::POST, &format!("/v2/user/{user}/create_portal_url"), Some(&other), Some(&body)).await;
    assert_eq!(c.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn links_of_a_deleted_user_no_longer_open() {
    let t = TestApp::embedded().await;
    let (user, _) = with_demographics(&t, "portal-8").await;
    let a = t.post(&format!("/v2/user/{user}/create_portal_url"), json!({"context": "communications"})).await;
    let url = path_of(a.body["url"].as_str().unwrap());
    assert_eq!(t.delete(&format!("/v2/user/{user}")).await.status, StatusCode::OK);
    assert_eq!(t.send(Method::GET, &url, None, None).await.status, StatusCode::NOT_FOUND);
}

async fn launch_url(t: &TestApp, user: &str, order_id: Option<&str>) -> String {
    let body = json!({"context": "launch", "order_id": order_id});
    let a = t.post(&format!("/v2/user/{user}/create_portal_url"), body).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    path_of(a.body["url"].as_str().unwrap())
}

#[tokio::test]
async fn the_portal_speaks_the_language_asked_for_and_keeps_it_in_its_links() {
    let t = TestApp::embedded().await;
    let (user, order) = with_demographics(&t, "portal-9").await;
    let url = launch_url(&t, &user, None).await;
    let id = order["id"].as_str().unwrap();

    let es = crate::hosted::get_page_in(&t, &format!("{url}&lang=es"), "de-DE,de;q=0.9").await;
    assert_eq!(es.status, StatusCode::OK);
    assert!(es.html.contains("<html lang=\"es\""), "{}", es.html);
    assert!(
        es.html.contains("Hola, Ada") && es.html.contains("<span class=\"stage\">Pedido realizado</span>")
    );
    assert!(!es.html.contains("received.walk_in_test.ordered</"), "no status code as text");
    let order_link = format!("/v3/portal/orders/{id}?token=");
    let link = es.html.split(&order_link).nth(1).and_then(|r| r.split('"').next()).unwrap();
    assert!(link.ends_with("&amp;lang=es"), "the explicit language is kept: {link}");

    // Without lang, the browser's language.
    let de = crate::hosted::get_page_in(&t, &url, "de-DE,de;q=0.9,en;q=0.5").await;
    assert!(de.html.contains("<html lang=\"de\"") && de.html.contains("Bestellt"), "{}", de.html);
    // An order page in French (on a new link, the first one lives minutes), its dates written
    // the French way.
    t.clock.advance(Duration::hours(2));
    let url = launch_url(&t, &user, None).await;
    let order_path = format!("/v3/portal/orders/{id}?token={}&lang=fr", url.split("token=").nth(1).unwrap());
    let fr = crate::hosted::get_page(&t, &order_path, None).await;
    assert_eq!(fr.status, StatusCode::OK, "{}", fr.html);
    assert!(fr.html.contains("Prêt pour votre passage au centre de prélèvement"), "{}", fr.html);
    assert!(fr.html.contains("aria-current=\"step\""));
    let timeline = fr.html.split("<ol class=\"timeline\"").nth(1).unwrap().split("</ol>").next().unwrap();
    assert_eq!(timeline.matches("<li").count(), 3, "ordered, requisition ready, visit: {timeline}");
    let months = [
        "janvier",
        "février",
        "mars",
        "avril",
        "mai",
        "juin",
        "juillet",
        "août",
        "septembre",
        "octobre",
        "novembre",
        "décembre",
    ];
    assert!(months.iter().any(|m| timeline.contains(m)), "French dates: {timeline}");

    // A refusal in the reader's language too.
    t.clock.advance(Duration::minutes(11));
    let gone = crate::hosted::get_page_in(&t, &url, "pt-BR").await;
    assert_eq!(gone.status, StatusCode::GONE);
    assert!(gone.html.contains("Este link expirou"), "{}", gone.html);
}

#[tokio::test]
async fn results_are_read_with_their_flag_in_words() {
    let t = TestApp::embedded().await;
    let (user, _) = with_demographics(&t, "portal-10").await;
    // The simulated lab puts about one numeric result in seven out of range: with a few
    // orders, one has a flagged result.
    let mut ids = Vec::new();
    for _ in 0..4 {
        ids.push(
            t.post("/v3/order", super::order_body(&user)).await.body["order"]["id"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    t.clock.advance(Duration::days(3) + Duration::minutes(1));
    let mut flagged = None;
    for id in &ids {
        let r = t.get(&format!("/v3/order/{id}/result")).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        let found =
            r.body["results"].as_array().unwrap().iter().find(|x| x["is_above_max_range"] == true).cloned();
        if let Some(x) = found {
            flagged = Some((id.clone(), x));
            break;
        }
    }
    let (id, high) = flagged.expect("one of the orders has a result above its range");
    let url = launch_url(&t, &user, Some(&id)).await;
    let page = crate::hosted::get_page(&t, &url, None).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.html.contains("Results ready"), "{}", page.html);
    assert!(page.html.contains("Final results, reported on"), "{}", page.html);
    let name = high["name"].as_str().unwrap();
    let row = page
        .html
        .split("<tr")
        .find(|r| r.contains(&format!("<th scope=\"row\">{name}</th>")))
        .unwrap_or_else(|| panic!("a row for {name}: {}", page.html));
    assert!(row.starts_with(" class=\"flagged\""), "{row}");
    assert!(row.contains("High: above the range"), "{row}");
    assert!(row.contains(" to "), "its reference range: {row}");
    assert!(page.html.contains("In range"), "the others read as in range");

    // In German, with German decimals.
    let de = crate::hosted::get_page(&t, &format!("{url}&lang=de"), None).await;
    assert!(de.html.contains("Hoch: über dem Bereich") && de.html.contains("Ergebnisse da"), "{}", de.html);
    let value = high["result"].as_str().unwrap();
    if let Some((int, frac)) = value.split_once('.') {
        assert!(de.html.contains(&format!("{int},{frac}")), "{value} written with a decimal comma");
    }
}

#[tokio::test]
async fn the_portal_shows_the_teams_brand() {
    let t = TestApp::embedded().await;
    let (user, order) = with_demographics(&t, "portal-brand").await;
    let plain = crate::hosted::get_page(&t, &launch_url(&t, &user, None).await, None).await;
    assert!(!plain.html.contains("<header class=\"brand"), "no brand set: no header");
    let set =
        t.put("/v2/team/branding", json!({"display_name": "Acme Health", "accent_color": "#0b5cad"})).await;
    assert_eq!(set.status, StatusCode::OK, "{}", set.body);

    let url = launch_url(&t, &user, None).await;
    let home = crate::hosted::get_page(&t, &url, None).await;
    assert_eq!(home.status, StatusCode::OK, "{}", home.html);
    assert!(
        home.html.contains("<header class=\"brand") && home.html.contains("Acme Health"),
        "{}",
        home.html
    );
    assert!(home.html.contains("#0b5cad"));
    let id = order["id"].as_str().unwrap();
    let order_path = format!("/v3/portal/orders/{id}?token={}", url.split("token=").nth(1).unwrap());
    let page = crate::hosted::get_page(&t, &order_path, None).await;
    assert!(page.html.contains("<header class=\"brand"), "{}", page.html);
}
