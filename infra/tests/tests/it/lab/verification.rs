//! The portal pages beyond the first: an order with its draw sites and results, and the
//! identity check of communications links (a one-time code emitted as
//! `user.portal.verification_requested`).

use chrono::Duration;
use http::StatusCode;
use serde_json::Value;
use wearlab_domain::lab::verification::EVENT_VERIFICATION_REQUESTED;

use crate::helpers::TestApp;
use crate::hosted::{PageAnswer, csrf_of, get_page, portal_link, post_form};

/// The codes the stack emitted so far, oldest first.
fn emitted(t: &TestApp) -> Vec<Value> {
    t.published()
        .into_iter()
        .filter(|e| e.event_type == EVENT_VERIFICATION_REQUESTED)
        .map(|e| serde_json::to_value(e).unwrap())
        .collect()
}

async fn send_code(t: &TestApp, short: &str, page: &PageAnswer, channel: &str) -> PageAnswer {
    post_form(t, &format!("{short}/verify/send"), &[("csrf", &csrf_of(page)), ("channel", channel)], None)
        .await
}

async fn enter(t: &TestApp, short: &str, page: &PageAnswer, code: &str) -> PageAnswer {
    post_form(
        t,
        &format!("{short}/verify"),
        &[("csrf", &csrf_of(page)), ("channel", "email"), ("code", code)],
        None,
    )
    .await
}

/// The `name=value` of a Set-Cookie answer.
fn cookie_of(a: &PageAnswer) -> String {
    let set = a.headers["set-cookie"].to_str().unwrap();
    set.split(';').next().unwrap().to_owned()
}

/// Passes the identity check of a short link; returns the device cookie.
pub async fn verify_device(t: &TestApp, short: &str) -> String {
    let start = get_page(t, short, None).await;
    let sent = send_code(t, short, &start, "email").await;
    let code = emitted(t).last().unwrap()["data"]["code"].as_str().unwrap().to_owned();
    let ok = enter(t, short, &sent, &code).await;
    assert_eq!(ok.status, StatusCode::SEE_OTHER, "{}", ok.html);
    cookie_of(&ok)
}

#[tokio::test]
async fn a_communications_link_asks_a_new_device_for_a_code_first() {
    let t = TestApp::embedded().await;
    let (user, _, short) = portal_link(&t, "pv-1", "communications").await;
    let start = get_page(&t, &short, None).await;
    assert_eq!(start.status, StatusCode::OK);
    assert!(start.html.contains("Confirm it&#39;s you"), "{}", start.html);
    assert!(
        !start.html.contains("Hello Ada") && !start.html.contains("Essential Health Panel"),
        "nothing shown yet"
    );
    // Destinations are redacted.
    assert!(start.html.contains("a***@e***.com") && start.html.contains("*** *** **00"));
    assert!(!start.html.contains("ada@example.com"));

    let sent = send_code(&t, &short, &start, "email").await;
    assert_eq!(sent.status, StatusCode::OK);
    assert!(sent.html.contains("We sent a 6-digit code by email to a***@e***.com"));
    let events = emitted(&t);
    assert_eq!(events.len(), 1);
    let e = &events[0];
    assert_eq!(e["user_id"], user.as_str());
    assert_eq!(e["client_user_id"], "pv-1");
    assert_eq!(e["data"]["channel"], "email");
    let code = e["data"]["code"].as_str().unwrap().to_owned();
    assert!(code.len() == 6 && code.bytes().all(|b| b.is_ascii_digit()), "{code}");
    assert!(!sent.html.contains(&code), "the code reaches the user only through the team");
    // Only a MAC of the code is stored.
    let q = wearlab_domain::ports::Query::partition(wearlab_domain::keys::user_partition(
        wearlab_domain::common::ids::UserId::parse(&user).unwrap(),
    ));
    let items = wearlab_domain::ports::query_all(t.deps.table.as_ref(), q, 1_000).await.unwrap();
    assert!(items.iter().any(|i| i.key.sk.starts_with("LAB#PORTAL_VERIFY#")));
    assert!(items.iter().all(|i| !i.body.to_string().contains(&code)));

    let ok = enter(&t, &short, &sent, &code).await;
    assert_eq!(ok.status, StatusCode::SEE_OTHER);
    assert_eq!(ok.location(), short);
    let set = ok.headers["set-cookie"].to_str().unwrap();
    assert!(
        set.contains("HttpOnly") && set.contains("SameSite=Lax") && set.contains(&format!("Path={short}")),
        "{set}"
    );
    let cookie = cookie_of(&ok);
    let page = get_page(&t, &short, Some(&cookie)).await;
    assert!(page.html.contains("Hello Ada"), "{}", page.html);
    // The code works once.
    let again = enter(&t, &short, &sent, &code).await;
    assert_eq!(again.status, StatusCode::BAD_REQUEST);
    assert!(again.html.contains("expired or was already used"));
    // The cookie opens this link only: another link of the user asks again.
    let a = t
        .post(&format!("/v2/user/{user}/create_portal_url"), serde_json::json!({"context": "communications"}))
        .await;
    let other = crate::lab::path_of(a.body["url"].as_str().unwrap());
    assert!(get_page(&t, &other, Some(&cookie)).await.html.contains("Confirm it&#39;s you"));
    // A forged cookie does not pass.
    let forged = get_page(&t, &short, Some("wearlab_portal_device=99999999999.AAAA")).await;
    assert!(forged.html.contains("Confirm it&#39;s you"));
}

#[tokio::test]
async fn wrong_codes_are_limited_and_new_codes_are_rate_limited() {
    let t = TestApp::embedded().await;
    let (_, _, short) = portal_link(&t, "pv-2", "communications").await;
    let start = get_page(&t, &short, None).await;
    let sent = send_code(&t, &short, &start, "sms").await;
    let code = emitted(&t).last().unwrap()["data"]["code"].as_str().unwrap().to_owned();
    let wrong_code = if code == "000000" { "111111" } else { "000000" };
    let mut page = sent;
    for left in (1..5).rev() {
        page = enter(&t, &short, &page, wrong_code).await;
        assert_eq!(page.status, StatusCode::BAD_REQUEST);
        assert!(
            page.html.contains(&format!("{left} {} left", if left == 1 { "try" } else { "tries" })),
            "{}",
            page.html
        );
    }
    let locked = enter(&t, &short, &page, wrong_code).await;
    assert_eq!(locked.status, StatusCode::TOO_MANY_REQUESTS);
    assert!(locked.html.contains("Too many tries"));
    // Even the right code no longer works.
    let late = enter(&t, &short, &locked, &code).await;
    assert_eq!(late.status, StatusCode::TOO_MANY_REQUESTS);
    // A new code only after 30 s.
    let soon = send_code(&t, &short, &locked, "sms").await;
    assert!(soon.html.contains("A code was sent moments ago"));
    assert_eq!(emitted(&t).len(), 1);
    t.clock.advance(Duration::seconds(31));
    let fresh = send_code(&t, &short, &soon, "sms").await;
    assert_eq!(emitted(&t).len(), 2);
    let new_code = emitted(&t).last().unwrap()["data"]["code"].as_str().unwrap().to_owned();
    // Codes expire after 10 minutes.
    t.clock.advance(Duration::minutes(10));
    let expired = enter(&t, &short, &fresh, &new_code).await;
    assert_eq!(expired.status, StatusCode::BAD_REQUEST);
    // At most five codes a day.
    for _ in 0..3 {
        t.clock.advance(Duration::seconds(31));
        assert_eq!(send_code(&t, &short, &fresh, "sms").await.status, StatusCode::OK);
    }
    t.clock.advance(Duration::seconds(31));
    assert_eq!(send_code(&t, &short, &fresh, "sms").await.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(emitted(&t).len(), 5);
}

#[tokio::test]
async fn verification_forms_need_their_csrf_token() {
    let t = TestApp::embedded().await;
    let (_, _, short) = portal_link(&t, "pv-3", "communications").await;
    let (_, _, other) = portal_link(&t, "pv-4", "communications").await;
    let other_page = get_page(&t, &other, None).await;
    let none = post_form(&t, &format!("{short}/verify/send"), &[("channel", "email")], None).await;
    assert_eq!(none.status, StatusCode::FORBIDDEN);
    let foreign = send_code(&t, &short, &other_page, "email").await;
    assert_eq!(foreign.status, StatusCode::FORBIDDEN, "a token of another link");
    let guess = post_form(&t, &format!("{short}/verify"), &[("csrf", "1.x"), ("code", "123456")], None).await;
    assert_eq!(guess.status, StatusCode::FORBIDDEN);
    assert!(emitted(&t).is_empty());
}

#[tokio::test]
async fn a_launch_link_shows_the_order_with_its_draw_sites_and_results() {
    let t = TestApp::embedded().await;
    let (_, order, launch) = portal_link(&t, "pv-5", "launch").await;
    let id = order["id"].as_str().unwrap();
    let token = launch.split("token=").nth(1).unwrap();
    let list = get_page(&t, &launch, None).await;
    let detail_path = format!("/v3/portal/orders/{id}?token={token}");
    assert!(list.html.contains(&detail_path.replace('&', "&amp;")), "{}", list.html);
    assert!(list.html.contains("Requisition form (PDF)"));
    let detail = get_page(&t, &detail_path, None).await;
    assert_eq!(detail.status, StatusCode::OK);
    assert!(
        detail.html.contains("Where to give your sample") && detail.html.contains("id=\"psc-list\""),
        "{}",
        detail.html
    );
    assert!(detail.html.contains(" mi</span>"), "distances are shown");
    assert!(detail.html.contains("No results yet"));
    // Three days on, the lab has reported.
    t.clock.advance(Duration::days(3) + Duration::minutes(1));
    let later = get_page(&t, &format!("/v3/portal/orders/{id}?token={token}"), None).await;
    assert_eq!(later.status, StatusCode::GONE, "launch links live 10 minutes");
    let fresh = crate::lab::path_of(
        t.post(
            &format!("/v2/user/{}/create_portal_url", order["user_id"].as_str().unwrap()),
            serde_json::json!({"context": "launch", "order_id": id}),
        )
        .await
        .body["url"]
            .as_str()
            .unwrap(),
    );
    // A link made for the order opens it directly.
    let direct = get_page(&t, &fresh, None).await;
    assert!(
        direct.html.contains("<h2 id=\"results\">Results</h2>") && direct.html.contains("<table "),
        "{}",
        direct.html
    );
    assert!(!direct.html.contains("All your orders"), "the link opens that order only");
    let tk = fresh.split("token=").nth(1).unwrap();
    let (_, second) = crate::lab::place_order(&t, "pv-6").await;
    let foreign =
        get_page(&t, &format!("/v3/portal/orders/{}?token={tk}", second["id"].as_str().unwrap()), None).await;
    assert_eq!(foreign.status, StatusCode::NOT_FOUND, "another user's order");
    let junk = get_page(&t, &format!("/v3/portal/orders/not-a-uuid?token={tk}"), None).await;
    assert_eq!(junk.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_short_links_code_is_kept_only_as_an_hmac_and_no_token_is_stored() {
    let t = TestApp::embedded().await;
    let (_, _, short) = portal_link(&t, "pv-7", "communications").await;
    let code = short.trim_start_matches("/v3/p/");
    let stored = t.stack.as_ref().unwrap().table.scan_all().await.unwrap();
    let text = serde_json::to_string(&stored).unwrap();
    assert!(!text.contains(code), "the code is nowhere in storage");
    assert!(!text.contains("\"token\""), "no signed token that would open the portal is stored");
    // The link still opens (on the identity check).
    assert_eq!(get_page(&t, &short, None).await.status, StatusCode::OK);
    assert_eq!(get_page(&t, "/v3/p/AAAAAAAAAAAA", None).await.status, StatusCode::FORBIDDEN);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_one_time_code_waits_for_its_webhook_retry_sealed() {
    let t = TestApp::embedded().await;
    let stack = t.stack.as_ref().unwrap();
    let (url, seen) = crate::helpers::json_receiver(|n| {
        if n == 1 { StatusCode::INTERNAL_SERVER_ERROR } else { StatusCode::NO_CONTENT }
    })
    .await;
    let hook = t
        .post(
            "/v2/team/webhooks",
            serde_json::json!({"url": url, "event_types": [EVENT_VERIFICATION_REQUESTED]}),
        )
        .await;
    assert_eq!(hook.status, StatusCode::OK, "{}", hook.body);
    let (_, _, short) = portal_link(&t, "pv-8", "communications").await;
    let start = get_page(&t, &short, None).await;
    send_code(&t, &short, &start, "sms").await;
    let code = emitted(&t).last().unwrap()["data"]["code"].as_str().unwrap().to_owned();
    for _ in 0..3 {
        stack.run_webhooks_once().await.unwrap();
    }
    assert_eq!(seen.lock().unwrap().len(), 1, "the first attempt failed; a retry waits");
    let stored = serde_json::to_string(&stack.table.scan_all().await.unwrap()).unwrap();
    assert!(
        !stored.contains(&format!("\"{code}\"")) && !stored.contains(&format!("\\\"{code}\\\"")),
        "the waiting retry holds no code in clear"
    );
    t.clock.advance(Duration::seconds(10));
    for _ in 0..3 {
        stack.run_webhooks_once().await.unwrap();
    }
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    for body in &seen {
        assert_eq!(body["data"]["code"], code.as_str(), "the team receives the code itself");
    }
}

#[tokio::test]
async fn a_user_without_an_email_or_phone_gets_a_409_page() {
    let t = TestApp::embedded().await;
    let (user, _, short) = portal_link(&t, "pv-409", "communications").await;
    // The demographics were there when the link was made and are gone since: the identity
    // check has nowhere to send a code.
    let uid = wearlab_domain::common::ids::UserId::parse(&user).unwrap();
    let gone = wearlab_domain::keys::lab::demographics(uid);
    t.deps.table.delete(&gone, wearlab_domain::ports::Condition::Exists).await.unwrap();
    let page = get_page(&t, &short, None).await;
    assert_eq!(page.status, StatusCode::CONFLICT, "{}", page.html);
    assert!(page.html.contains("no email address or phone number"), "{}", page.html);
    assert!(emitted(&t).is_empty(), "no code was sent");
}

/// The same code checked many times at once: every answer is the code's own (one right, the
/// others refused as used or wrong) or the limit's 429, never a server error.
async fn one_code_checked_at_once_many_times(t: std::sync::Arc<TestApp>, codes: impl Fn() -> Vec<Value>) {
    let (_, _, short) = portal_link(&t, "pv-burst", "communications").await;
    let start = get_page(&t, &short, None).await;
    let sent = send_code(&t, &short, &start, "email").await;
    let code = codes().last().unwrap()["data"]["code"].as_str().unwrap().to_owned();
    let csrf = csrf_of(&sent);
    let tasks: Vec<_> = (0..12)
        .map(|i| {
            let (t, short, csrf) = (t.clone(), short.clone(), csrf.clone());
            let guess = if i % 2 == 0 { code.clone() } else { "000000".to_owned() };
            tokio::spawn(async move {
                let form = [("csrf", csrf.as_str()), ("channel", "email"), ("code", guess.as_str())];
                post_form(&t, &format!("{short}/verify"), &form, None).await.status
            })
        })
        .collect();
    let statuses: Vec<StatusCode> =
        futures::future::join_all(tasks).await.into_iter().map(Result::unwrap).collect();
    assert!(
        statuses.iter().all(|s| matches!(s.as_u16(), 303 | 400 | 429 | 200)),
        "only the code's and the limit's answers: {statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| s.as_u16() == 303).count(),
        1,
        "the code worked once: {statuses:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_code_checked_at_once_many_times_is_answered_by_its_rules() {
    let t = std::sync::Arc::new(TestApp::embedded().await);
    let codes = {
        let t = t.clone();
        move || emitted(&t)
    };
    one_code_checked_at_once_many_times(t, codes).await;
}

/// On DynamoDB (moto) each write is a round trip, so checks of one code really race.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_code_checked_at_once_many_times_is_answered_by_its_rules_on_dynamodb() {
    let (moto, _, _) = crate::users_on_dynamodb::on_moto().await;
    let bus = wearlab_embedded::MemoryBus::new();
    let deps = wearlab_domain::Deps { bus: std::sync::Arc::new(bus.clone()), ..moto.deps.clone() };
    let t = std::sync::Arc::new(moto.with_deps(deps));
    let codes = move || {
        bus.published()
            .into_iter()
            .filter(|e| e.event_type == EVENT_VERIFICATION_REQUESTED)
            .map(|e| serde_json::to_value(e).unwrap())
            .collect()
    };
    one_code_checked_at_once_many_times(t, codes).await;
}

/// A check that keeps losing the race to record itself (other checks of the same link keep
/// writing first) is told to try again in a second (429), never a server error; the code still
/// works once the races are over.
#[tokio::test]
async fn a_check_that_keeps_losing_its_race_is_a_429_not_a_server_error() {
    let (t, table) = TestApp::embedded_with_faults().await;
    let (_, _, short) = portal_link(&t, "pv-race", "communications").await;
    let start = get_page(&t, &short, None).await;
    let sent = send_code(&t, &short, &start, "email").await;
    let code = emitted(&t).last().unwrap()["data"]["code"].as_str().unwrap().to_owned();
    table.set(crate::helpers::Faults { lose_races: true, ..Default::default() });
    let busy = enter(&t, &short, &sent, &code).await;
    table.set(crate::helpers::Faults::default());
    assert_eq!(busy.status, StatusCode::TOO_MANY_REQUESTS, "{}", busy.html);
    assert_eq!(busy.headers["retry-after"], "1");
    assert!(busy.html.contains("Try again in a second"), "{}", busy.html);
    let ok = enter(&t, &short, &sent, &code).await;
    assert_eq!(ok.status, StatusCode::SEE_OTHER, "the code was not used up: {}", ok.html);
}
