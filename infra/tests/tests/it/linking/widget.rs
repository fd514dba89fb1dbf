//! The hosted link page at `link_web_url`, driven as a browser without script would.

use chrono::Duration;
use http::StatusCode;
use serde_json::json;

use super::{link_token, query_param};
use crate::helpers::TestApp;
use crate::hosted::{csrf_of, form_action, get_page, post_form};

const REDIRECT: &str = "https://app.example/linked";

async fn password_form(t: &TestApp, tk: &str, provider: &str) -> (String, String) {
    let page = get_page(t, &format!("/v2/link/web/provider/{provider}?token={tk}"), None).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.html);
    (form_action(&page.html), csrf_of(&page))
}

#[tokio::test]
async fn password_with_mfa_ends_on_the_redirect_url_with_state_success() {
    let t = TestApp::embedded().await;
    let user = t.create_user("wg-1").await;
    let tk = link_token(&t, &user, json!({"redirect_url": REDIRECT})).await;
    let list = get_page(&t, &format!("/v2/link/web?token={tk}"), None).await;
    assert!(
        list.html.contains(&format!("/v2/link/web/provider/whoop?token={tk}")),
        "password providers open their form"
    );
    assert!(list.html.contains("Username and password") && list.html.contains("Sign in with the provider"));
    let (action, csrf) = password_form(&t, &tk, "whoop").await;
    assert_eq!(action, "/v2/link/web/password/whoop");
    let mfa = post_form(
        &t,
        &action,
        &[("token", &tk), ("csrf", &csrf), ("username", "jane.mfa-sms"), ("password", "pw")],
        None,
    )
    .await;
    assert_eq!(mfa.status, StatusCode::OK);
    assert!(mfa.html.contains("Enter your WHOOP code"), "{}", mfa.html);
    assert!(
        mfa.html.contains("by text message to <strong class=\"mfa-hint\">+1 *** *** **"),
        "the hint is shown"
    );
    // A reload of the link keeps the step.
    let reload = get_page(&t, &format!("/v2/link/web?token={tk}"), None).await;
    assert!(reload.html.contains("Enter your WHOOP code"));
    let wrong = post_form(
        &t,
        &form_action(&mfa.html),
        &[("token", &tk), ("csrf", &csrf_of(&mfa)), ("mfa_code", "111111")],
        None,
    )
    .await;
    assert_eq!(wrong.status, StatusCode::OK);
    assert!(wrong.html.contains("role=\"alert\"") && wrong.html.contains("That code was not accepted"));
    let done = post_form(
        &t,
        &form_action(&wrong.html),
        &[("token", &tk), ("csrf", &csrf_of(&wrong)), ("mfa_code", "123456")],
        None,
    )
    .await;
    assert_eq!(done.status, StatusCode::SEE_OTHER);
    let to = done.location();
    assert!(to.starts_with(REDIRECT), "{to}");
    assert_eq!(query_param(&to, "state").as_deref(), Some("success"));
    assert_eq!(query_param(&to, "provider").as_deref(), Some("whoop"));
    let connections = t.get(&format!("/v2/user/providers/{user}")).await;
    assert_eq!(connections.body["providers"][0]["slug"], "whoop");
    // Single use: the token is consumed.
    let again = get_page(&t, &format!("/v2/link/web?token={tk}"), None).await;
    assert_eq!(again.status, StatusCode::GONE);
    assert!(again.html.contains("This link was already used"));
}

#[tokio::test]
async fn a_wrong_password_shows_the_error_and_is_never_echoed() {
    let t = TestApp::embedded().await;
    let user = t.create_user("wg-2").await;
    let tk = link_token(&t, &user, json!({"redirect_url": REDIRECT})).await;
    let (action, csrf) = password_form(&t, &tk, "peloton").await;
    let secret = "wrong-password";
    let a = post_form(
        &t,
        &action,
        &[("token", &tk), ("csrf", &csrf), ("username", "jane"), ("password", secret)],
        None,
    )
    .await;
    assert_eq!(a.status, StatusCode::OK);
    assert!(a.html.contains("Peloton did not accept this username and password"), "{}", a.html);
    assert!(a.html.contains("value=\"jane\""), "the username is kept for a retry");
    assert!(!a.html.contains(secret), "the password is never written into a page");
    // Other refusals keep the user on the page too, and never echo the password either.
    let b = post_form(
        &t,
        &action,
        &[
            ("token", &tk),
            ("csrf", &csrf_of(&a)),
            ("username", "x-password-expired"),
            ("password", "Zq9-unique-pw"),
        ],
        None,
    )
    .await;
    assert!(b.html.contains("password has expired") && !b.html.contains("Zq9-unique-pw"));
    let empty = post_form(
        &t,
        &action,
        &[("token", &tk), ("csrf", &csrf_of(&b)), ("username", ""), ("password", "")],
        None,
    )
    .await;
    assert!(empty.html.contains("Enter your username and password."));
    // The token is still usable after a refusal.
    let ok = post_form(
        &t,
        &action,
        &[("token", &tk), ("csrf", &csrf_of(&empty)), ("username", "jane"), ("password", "pw")],
        None,
    )
    .await;
    assert_eq!(ok.status, StatusCode::SEE_OTHER);
    assert_eq!(query_param(&ok.location(), "state").as_deref(), Some("success"));
}

#[tokio::test]
async fn posts_without_or_with_a_wrong_csrf_token_are_refused_with_403() {
    let t = TestApp::embedded().await;
    let user = t.create_user("wg-3").await;
    let tk = link_token(&t, &user, json!({})).await;
    let other = link_token(&t, &user, json!({})).await;
    let (action, csrf) = password_form(&t, &tk, "zwift").await;
    let (_, other_csrf) = password_form(&t, &other, "zwift").await;
    let creds = [("username", "jane"), ("password", "pw")];
    for (what, token) in
        [("missing", None), ("garbage", Some("123.abc")), ("another link's", Some(other_csrf.as_str()))]
    {
        let mut fields = vec![("token", tk.as_str())];
        if let Some(c) = token {
            fields.push(("csrf", c));
        }
        fields.extend(creds);
        let a = post_form(&t, &action, &fields, None).await;
        assert_eq!(a.status, StatusCode::FORBIDDEN, "{what}");
        assert!(a.html.contains("Form expired"), "{what}: a clear page");
    }
    let mfa =
        post_form(&t, "/v2/link/web/password/zwift/mfa", &[("token", &tk), ("mfa_code", "123456")], None)
            .await;
    assert_eq!(mfa.status, StatusCode::FORBIDDEN);
    // A form left open past its lifetime.
    t.clock.advance(Duration::hours(2) + Duration::seconds(1));
    let late = post_form(
        &t,
        &action,
        &[("token", &tk), ("csrf", &csrf), ("username", "jane"), ("password", "pw")],
        None,
    )
    .await;
    assert_eq!(late.status, StatusCode::FORBIDDEN);
    // Nothing was connected by any refused post.
    assert_eq!(t.get(&format!("/v2/user/providers/{user}")).await.body["providers"], json!([]));
    // A JSON body is not a form.
    let json = t.send_as(http::Method::POST, &action, None, &[], Some("{}")).await;
    assert_eq!(json.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn expired_and_consumed_tokens_show_a_clear_page() {
    let t = TestApp::embedded().await;
    let user = t.create_user("wg-4").await;
    let tk = link_token(&t, &user, json!({"redirect_url": REDIRECT})).await;
    t.clock.advance(Duration::minutes(61));
    let a = get_page(&t, &format!("/v2/link/web?token={tk}"), None).await;
    assert_eq!(a.status, StatusCode::GONE);
    assert!(a.html.contains("This link has expired"));
    assert!(a.html.contains("error_type=token_expired"), "a way back to the app, with the outcome");
    let b = get_page(&t, &format!("/v2/link/web/provider/whoop?token={tk}"), None).await;
    assert_eq!(b.status, StatusCode::GONE);
}

#[tokio::test]
async fn the_token_decides_which_providers_the_page_offers() {
    let t = TestApp::embedded().await;
    let user = t.create_user("wg-5").await;
    let filtered = link_token(&t, &user, json!({"filter_on_providers": ["oura", "renpho"]})).await;
    let list = get_page(&t, &format!("/v2/link/web?token={filtered}"), None).await;
    assert!(list.html.contains("data-provider=\"oura\"") && list.html.contains("data-provider=\"renpho\""));
    assert!(!list.html.contains("data-provider=\"whoop\""));
    let outside = get_page(&t, &format!("/v2/link/web/provider/whoop?token={filtered}"), None).await;
    assert_eq!(outside.status, StatusCode::NOT_FOUND);
    // A token for one provider opens straight on it, with no way to another.
    let named = link_token(&t, &user, json!({"provider": "abbott_libreview"})).await;
    let page = get_page(&t, &format!("/v2/link/web?token={named}"), None).await;
    assert!(
        page.html.contains("Connect Abbott LibreView") && page.html.contains("name=\"region\""),
        "{}",
        page.html
    );
    assert!(!page.html.contains("Choose another provider"));
    // Region: a region the provider does not serve keeps the user on the form.
    let csrf = csrf_of(&page);
    let a = post_form(
        &t,
        "/v2/link/web/password/abbott_libreview",
        &[("token", &named), ("csrf", &csrf), ("username", "jane"), ("password", "pw"), ("region", "in")],
        None,
    )
    .await;
    assert!(a.html.contains("does not serve the region"), "{}", a.html);
    // Without a redirect URL the outcome is shown on the page.
    let b = post_form(
        &t,
        "/v2/link/web/password/abbott_libreview",
        &[
            ("token", &named),
            ("csrf", &csrf_of(&a)),
            ("username", "jane"),
            ("password", "pw"),
            ("region", "us"),
        ],
        None,
    )
    .await;
    assert_eq!(b.status, StatusCode::OK);
    assert!(b.html.contains("account is connected"), "{}", b.html);
}

#[tokio::test]
async fn oauth_from_the_page_comes_back_to_the_outcome() {
    let t = TestApp::embedded().await;
    let user = t.create_user("wg-6").await;
    let tk = link_token(&t, &user, json!({})).await;
    let start = get_page(&t, &format!("/v2/link/web/oauth/oura?token={tk}"), None).await;
    assert_eq!(start.status, StatusCode::SEE_OTHER);
    let consent = super::path_of(&start.location());
    let back = get_page(&t, &format!("{consent}&decision=allow"), None).await;
    let callback = get_page(&t, &super::path_of(&back.location()), None).await;
    // A browser (Accept: text/html) without a redirect URL gets a page, not JSON.
    assert_eq!(callback.status, StatusCode::OK);
    assert!(callback.html.contains("Connected to Oura"), "{}", callback.html);
    crate::hosted::assert_page_headers(&callback, "oauth outcome");
    // A team_oauth provider without the team's app is not offered (it could only fail): not
    // listed, and its address is a 404 page, not JSON.
    let tk2 = link_token(&t, &user, json!({})).await;
    let list = get_page(&t, &format!("/v2/link/web?token={tk2}"), None).await;
    assert!(!list.html.contains("data-provider=\"strava\""), "{}", list.html);
    let strava = get_page(&t, &format!("/v2/link/web/oauth/strava?token={tk2}"), None).await;
    assert_eq!(strava.status, StatusCode::NOT_FOUND);
    assert!(strava.html.starts_with("<!DOCTYPE html>"));
    assert!(!strava.html.contains("/v2/team/oauth_app"), "no developer text for end users");
}

/// Of versioned twins the page shows one: the OAuth API once the team brought its own app for
/// it, else the variant that links without one.
#[tokio::test]
async fn one_row_per_twin_the_one_the_team_can_link() {
    let t = TestApp::embedded().await;
    let user = t.create_user("wg-twins").await;
    let rows = |html: &str, slug: &str| html.matches(&format!("data-provider=\"{slug}\"")).count();
    let tk = link_token(&t, &user, json!({})).await;
    let before = get_page(&t, &format!("/v2/link/web?token={tk}"), None).await;
    assert_eq!((rows(&before.html, "whoop"), rows(&before.html, "whoop_v2")), (1, 0));
    let app = r#"{"client_id": "team-whoop", "client_secret": "s"}"#;
    let put = t.send(http::Method::PUT, "/v2/team/oauth_app/whoop_v2", Some(&t.key), Some(app)).await;
    assert_eq!(put.status, StatusCode::OK);
    let after = get_page(&t, &format!("/v2/link/web?token={tk}"), None).await;
    assert_eq!((rows(&after.html, "whoop"), rows(&after.html, "whoop_v2")), (0, 1));
    assert!(after.html.contains(&format!("/v2/link/web/oauth/whoop_v2?token={tk}")));
    // Discontinued services: said so, pointing to the successor, never a link to connect them.
    assert!(!after.html.contains("/v2/link/web/oauth/fitbit"));
    assert!(
        after.html.contains("Turned off by its maker")
            && after.html.contains("Connect Google Health instead")
    );
}

/// The team's pinned order and hidden providers, and the page's language.
#[tokio::test]
async fn the_team_orders_and_hides_and_the_user_reads_their_language() {
    let t = TestApp::embedded().await;
    let user = t.create_user("wg-order").await;
    let tk = link_token(&t, &user, json!({})).await;
    let set = t
        .patch("/v2/team/link_config", json!({"provider_order": ["renpho"], "hidden_providers": ["oura"]}))
        .await;
    assert_eq!(set.status, StatusCode::OK, "{}", set.body);
    let list = get_page(&t, &format!("/v2/link/web?token={tk}"), None).await;
    let first = list.html.find("data-provider=").map(|i| &list.html[i..i + 30]).unwrap_or_default();
    assert!(first.starts_with("data-provider=\"renpho\""), "{first}");
    assert!(!list.html.contains("data-provider=\"oura\""));
    let hidden = get_page(&t, &format!("/v2/link/web/oauth/oura?token={tk}"), None).await;
    assert_eq!(hidden.status, StatusCode::NOT_FOUND);
    // A search without script: matching rows shown, the others hidden.
    let search = get_page(&t, &format!("/v2/link/web?token={tk}&q=Apple+Watch"), None).await;
    assert!(search.html.contains("apple watch iphone healthkit health app\"><div"), "{}", search.html);
    assert!(
        search.html.contains("<li data-search=\"garmin garmin connect forerunner fenix venu edge\" hidden>")
    );
    assert!(search.html.contains("Providers found: 1"));
    // Spanish by the page's parameter, carried on to the provider's page.
    let es = get_page(&t, &format!("/v2/link/web?token={tk}&lang=es"), None).await;
    assert!(
        es.html.contains("<html lang=\"es\"") && es.html.contains("Conecta un proveedor de datos de salud")
    );
    assert!(es.html.contains(&format!("/v2/link/web/provider/renpho?token={tk}&amp;lang=es")));
}

#[tokio::test]
async fn the_widget_shows_the_teams_brand_in_the_tokens_language() {
    let t = TestApp::embedded().await;
    let user = t.create_user("wg-brand").await;
    let set =
        t.put("/v2/team/branding", json!({"display_name": "Acme Health", "accent_color": "#0B5CAD"})).await;
    assert_eq!(set.status, StatusCode::OK, "{}", set.body);
    let tk = link_token(&t, &user, json!({"language": "de"})).await;

    // No Accept-Language, no lang parameter: the token's language, carried on by the links.
    let list = get_page(&t, &format!("/v2/link/web?token={tk}"), None).await;
    assert_eq!(list.status, StatusCode::OK, "{}", list.html);
    assert!(list.html.contains("<html lang=\"de\""), "{}", list.html);
    assert!(
        list.html.contains("Acme Health möchte sich mit deinen Gesundheitsdaten verbinden"),
        "{}",
        list.html
    );
    assert!(list.html.contains("<header class=\"brand"), "the team's header");
    assert!(list.html.contains("#0b5cad"), "the accent, stored lower-case");
    assert!(list.html.contains("in Acme Health verbunden"), "the phone apps are connected in the team's app");
    assert!(list.html.contains(&format!("/v2/link/web/provider/renpho?token={tk}&amp;lang=de")));
    let csp = list.headers.get("content-security-policy").and_then(|v| v.to_str().ok()).unwrap_or_default();
    assert!(!csp.contains("unsafe-inline"), "{csp}");

    // The page's own lang parameter wins over the token's.
    let fr = get_page(&t, &format!("/v2/link/web?token={tk}&lang=fr"), None).await;
    assert!(fr.html.contains("<html lang=\"fr\"") && fr.html.contains("Acme Health"), "{}", fr.html);

    // A refusal is said in the page's language too.
    let missing =
        get_page(&t, &format!("/v2/link/web/provider/no-such-provider?token={tk}&lang=de"), None).await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    assert!(
        missing.html.contains("<html lang=\"de\"") && missing.html.contains("Nicht gefunden"),
        "{}",
        missing.html
    );

    // The provider's page keeps the brand.
    let form = get_page(&t, &format!("/v2/link/web/provider/renpho?token={tk}"), None).await;
    assert!(form.html.contains("<header class=\"brand") && form.html.contains("<html lang=\"de\""));
}
