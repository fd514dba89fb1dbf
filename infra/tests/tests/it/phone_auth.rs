//! Per-user credentials for the phone (docs/MOBILE.md, "Per-user credentials"): the sign-in
//! token in the format the Junction SDKs parse, its one-time exchange, refresh rotation with
//! replay detection, the user's bearer token on the user's routes only, deletion, and the Open
//! Wearables dialect's token routes. Storage is involved throughout: every journey runs on the
//! embedded stack and on DynamoDB (moto).
//!
//! The request bodies are the SDKs' own: the exchange and refresh forms as `VitalJWTAuth` builds
//! them (`tryVital/vital-ios` `Sources/VitalCore`, `tryVital/vital-android`), the Open
//! Wearables bodies as `the-momentum/open-wearables` `backend/app/api/routes/v1/token.py` takes
//! them.

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use http::{Method, StatusCode};
use serde_json::{Value, json};
use wearlab_domain::common::crypto::SigningKey;

use crate::helpers::{Answer, TestApp};

const EXCHANGE: &str = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Atoken-exchange\
    &subject_token_type=urn%3Ajunction%3Asign-in-token&subject_token=";

async fn embedded() -> TestApp {
    TestApp::embedded().await
}

async fn moto() -> TestApp {
    crate::users_on_dynamodb::on_moto().await.0
}

/// `POST /auth/v1/token` with a form body, no API key.
async fn form(t: &TestApp, body: &str) -> Answer {
    let headers = [("content-type", "application/x-www-form-urlencoded")];
    t.send_bytes(Method::POST, "/auth/v1/token", None, &headers, Some(body.as_bytes().to_vec())).await
}

/// A request with a user's bearer token and no API key.
pub(crate) async fn as_user(
    t: &TestApp,
    method: Method,
    path: &str,
    token: &str,
    body: Option<&str>,
) -> Answer {
    let auth = format!("Bearer {token}");
    t.send_as(method, path, None, &[("authorization", &auth)], body).await
}

/// The sign-in token's parts: `public_key` and the user token's header and claims.
fn decode_sign_in(token: &str) -> (String, String, Value, Value) {
    let outer: Value = serde_json::from_slice(&STANDARD.decode(token).expect("padded base64")).unwrap();
    let jwt = outer["user_token"].as_str().unwrap().to_owned();
    let part = |i: usize| -> Value {
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(jwt.split('.').nth(i).unwrap()).unwrap()).unwrap()
    };
    (outer["public_key"].as_str().unwrap().to_owned(), jwt.clone(), part(0), part(1))
}

async fn sign_in_token(t: &TestApp, user: &str) -> String {
    let a = t.post_empty(&format!("/v2/user/{user}/sign_in_token")).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(a.body["user_id"], user);
    a.body["sign_in_token"].as_str().unwrap().to_owned()
}

/// A user's tokens through the SDKs' exchange: (access, refresh).
pub(crate) async fn signed_in(t: &TestApp, user: &str) -> (String, String) {
    let (_, jwt, _, _) = decode_sign_in(&sign_in_token(t, user).await);
    let a = form(t, &format!("{EXCHANGE}{jwt}")).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    (
        a.body["access_token"].as_str().unwrap().to_owned(),
        a.body["refresh_token"].as_str().unwrap().to_owned(),
    )
}

async fn refresh(t: &TestApp, token: &str) -> Answer {
    form(t, &format!("grant_type=refresh_token&refresh_token={token}")).await
}

fn assert_sdk_error(a: &Answer, error_type: &str) {
    assert!(a.status.is_client_error(), "{} {}", a.status, a.body);
    assert_eq!(a.body["detail"]["error_type"], error_type, "{}", a.body);
}

async fn sign_in_token_in_the_sdk_format_verifies_with_its_public_key(t: TestApp) {
    let user = t.create_user("phone-format").await;
    let (public_key, jwt, header, claims) = decode_sign_in(&sign_in_token(&t, &user).await);
    assert_eq!(header, json!({"alg": "RS256", "typ": "JWT"}));
    assert_eq!(claims["iss"], "id-signer-local-eu@vital-id-local-eu.iam.gserviceaccount.com");
    assert_eq!(claims["uid"], user);
    assert_eq!(claims["tenant_id"], t.team.to_string());
    assert_eq!(claims["claims"]["vital_team_id"], t.team.to_string());
    assert_eq!(claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap(), 3600);
    assert!(claims["jti"].is_string());
    // RS256 over `header.claims` with the public key handed out (base64 of the SPKI DER).
    let der = STANDARD.decode(&public_key).unwrap();
    let (signed, signature) = jwt.rsplit_once('.').unwrap();
    let signature = URL_SAFE_NO_PAD.decode(signature).unwrap();
    aws_lc_rs::signature::UnparsedPublicKey::new(&aws_lc_rs::signature::RSA_PKCS1_2048_8192_SHA256, &der)
        .verify(signed.as_bytes(), &signature)
        .expect("signed with the key it carries");
    assert_eq!(der, SigningKey::fixed_for_tests().public_key_der());
    // A second sign-in token is another token.
    let (_, other, _, _) = decode_sign_in(&sign_in_token(&t, &user).await);
    assert_ne!(other, jwt);
}

#[tokio::test]
async fn sign_in_token_in_the_sdk_format_on_embedded() {
    sign_in_token_in_the_sdk_format_verifies_with_its_public_key(embedded().await).await;
}

async fn exchange_once_then_rotate_and_a_replay_kills_the_session(t: TestApp) {
    let user = t.create_user("phone-rotate").await;
    let (_, jwt, _, _) = decode_sign_in(&sign_in_token(&t, &user).await);
    let a = form(&t, &format!("{EXCHANGE}{jwt}")).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(a.body["expires_in"], json!(3600), "a JSON integer");
    assert_eq!(a.body["token_type"], "bearer");
    let (access, first) = (
        a.body["access_token"].as_str().unwrap().to_owned(),
        a.body["refresh_token"].as_str().unwrap().to_owned(),
    );
    // The access token opens the user's connections.
    let own = as_user(&t, Method::GET, &format!("/v2/user/providers/{user}"), &access, None).await;
    assert_eq!(own.status, StatusCode::OK, "{}", own.body);
    // The same sign-in token a second time: refused.
    assert_sdk_error(&form(&t, &format!("{EXCHANGE}{jwt}")).await, "invalid_token");

    let r = refresh(&t, &first).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let second = r.body["refresh_token"].as_str().unwrap().to_owned();
    assert_ne!(second, first);
    let next_access = r.body["access_token"].as_str().unwrap();
    let own = as_user(&t, Method::GET, &format!("/v2/user/providers/{user}"), next_access, None).await;
    assert_eq!(own.status, StatusCode::OK);
    // The old refresh token is dead; its replay revokes the session: the new one dies too.
    assert_sdk_error(&refresh(&t, &first).await, "invalid_token");
    assert_sdk_error(&refresh(&t, &second).await, "invalid_token");
    // Another session of the same user is untouched.
    let (_, other) = signed_in(&t, &user).await;
    assert_eq!(refresh(&t, &other).await.status, StatusCode::OK);
}

#[tokio::test]
async fn exchange_and_rotation_on_embedded() {
    exchange_once_then_rotate_and_a_replay_kills_the_session(embedded().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exchange_and_rotation_on_moto() {
    exchange_once_then_rotate_and_a_replay_kills_the_session(moto().await).await;
}

#[tokio::test]
async fn the_whole_sign_in_token_is_accepted_and_an_expired_one_is_refused() {
    let t = embedded().await;
    let user = t.create_user("phone-expiry").await;
    let whole = sign_in_token(&t, &user).await;
    let escaped: String = form_urlencoded::byte_serialize(whole.as_bytes()).collect();
    assert_eq!(form(&t, &format!("{EXCHANGE}{escaped}")).await.status, StatusCode::OK);
    let (_, jwt, _, _) = decode_sign_in(&sign_in_token(&t, &user).await);
    t.clock.advance(chrono::Duration::seconds(3600));
    assert_sdk_error(&form(&t, &format!("{EXCHANGE}{jwt}")).await, "invalid_token");
    // A token signed by another key, and one that is no token.
    let (other, _) = SigningKey::generate().unwrap();
    let (h, c, _) = {
        let mut p = jwt.split('.');
        (p.next().unwrap(), p.next().unwrap(), p.next().unwrap())
    };
    let forged =
        format!("{h}.{c}.{}", URL_SAFE_NO_PAD.encode(other.sign_rs256(format!("{h}.{c}").as_bytes())));
    assert_sdk_error(&form(&t, &format!("{EXCHANGE}{forged}")).await, "invalid_token");
    assert_sdk_error(&form(&t, &format!("{EXCHANGE}garbage")).await, "invalid_token");
}

#[tokio::test]
async fn bad_forms_answer_the_sdk_error_shape() {
    let t = embedded().await;
    assert_sdk_error(&form(&t, "").await, "invalid_request");
    assert_sdk_error(&form(&t, "grant_type=password&username=a&password=b").await, "unsupported_grant_type");
    assert_sdk_error(&form(&t, "grant_type=refresh_token").await, "invalid_request");
    let no_type = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Atoken-exchange&subject_token=a.b.c";
    assert_sdk_error(&form(&t, no_type).await, "invalid_request");
    assert_sdk_error(&refresh(&t, "wlrt.not.a-token").await, "invalid_token");
}

async fn a_user_token_opens_only_its_users_routes(t: TestApp) {
    let user = t.create_user("phone-scope").await;
    let other = t.create_user("phone-other").await;
    let (access, _) = signed_in(&t, &user).await;
    // Its own user, the id upper-cased as iOS sends it.
    let upper = user.to_uppercase();
    for path in [
        format!("/v2/user/providers/{upper}"),
        format!("/v2/summary/sleep/{upper}?start_date=2026-02-01"),
        format!("/v2/timeseries/{user}/heartrate/grouped?start_date=2026-02-01"),
    ] {
        let a = as_user(&t, Method::GET, &path, &access, None).await;
        assert_eq!(a.status, StatusCode::OK, "{path}: {}", a.body);
    }
    // Another user's id: 404, as an unknown user.
    let unknown = uuid::Uuid::new_v4();
    let a = t.get(&format!("/v2/user/providers/{unknown}")).await;
    assert_eq!(a.body["detail"], format!("User {unknown} not found."));
    for path in [
        format!("/v2/user/providers/{other}"),
        format!("/v2/summary/sleep/{other}?start_date=2026-02-01"),
        format!("/v2/timeseries/{other}/heartrate/grouped?start_date=2026-02-01"),
    ] {
        let a = as_user(&t, Method::GET, &path, &access, None).await;
        assert_eq!(a.status, StatusCode::NOT_FOUND, "{path}: {}", a.body);
        assert_eq!(a.body["detail"], format!("User {other} not found."));
    }
    let a = as_user(&t, Method::DELETE, &format!("/v2/user/{other}/oura"), &access, None).await;
    assert_eq!(a.status, StatusCode::NOT_FOUND, "{}", a.body);
    // Team routes: a user token is no key, 401 as without one.
    let no_key = t.send(Method::GET, "/v2/team/webhooks", None, None).await;
    for (method, path, body) in [
        (Method::POST, "/v2/user".to_owned(), Some(r#"{"client_user_id":"x"}"#)),
        (Method::GET, "/v2/team/webhooks".to_owned(), None),
        (Method::GET, format!("/v3/order/{}", uuid::Uuid::new_v4()), None),
        (Method::GET, format!("/v2/user/{user}"), None),
        (Method::POST, format!("/v2/user/{user}/sign_in_token"), None),
    ] {
        let a = as_user(&t, method, &path, &access, body).await;
        assert_eq!(a.status, StatusCode::UNAUTHORIZED, "{path}: {}", a.body);
        assert_eq!(a.body, no_key.body, "{path}");
    }
    // A forged or expired token is refused on the user's routes.
    let path = format!("/v2/user/providers/{user}");
    assert_eq!(as_user(&t, Method::GET, &path, "a.b.c", None).await.status, StatusCode::UNAUTHORIZED);
    t.clock.advance(chrono::Duration::seconds(3600));
    assert_eq!(as_user(&t, Method::GET, &path, &access, None).await.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn a_user_token_opens_only_its_users_routes_on_embedded() {
    a_user_token_opens_only_its_users_routes(embedded().await).await;
}

async fn credentials_die_with_the_user(t: TestApp) {
    let user = t.create_user("phone-deleted").await;
    let (access, refresh_token) = signed_in(&t, &user).await;
    let (_, unused, _, _) = decode_sign_in(&sign_in_token(&t, &user).await);
    let path = format!("/v2/user/providers/{user}");
    assert_eq!(as_user(&t, Method::GET, &path, &access, None).await.status, StatusCode::OK);
    assert_eq!(t.delete(&format!("/v2/user/{user}")).await.status, StatusCode::OK);
    assert_eq!(as_user(&t, Method::GET, &path, &access, None).await.status, StatusCode::UNAUTHORIZED);
    assert_sdk_error(&refresh(&t, &refresh_token).await, "invalid_token");
    assert_sdk_error(&form(&t, &format!("{EXCHANGE}{unused}")).await, "invalid_token");
    assert_eq!(t.post_empty(&format!("/v2/user/{user}/sign_in_token")).await.status, StatusCode::NOT_FOUND);
    let unknown = uuid::Uuid::new_v4();
    assert_eq!(
        t.post_empty(&format!("/v2/user/{unknown}/sign_in_token")).await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn credentials_die_with_the_user_on_embedded() {
    credentials_die_with_the_user(embedded().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_die_with_the_user_on_moto() {
    credentials_die_with_the_user(moto().await).await;
}

async fn open_wearables_token_routes(t: TestApp) {
    let user = t.create_user("phone-ow").await;
    // The backend's call (`app_id`, `app_secret` ignored: the team key authorises it).
    let a = t
        .post(&format!("/api/v1/users/{user}/token"), json!({"app_id": "app_1", "app_secret": "secret"}))
        .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!((a.body["token_type"].clone(), a.body["expires_in"].clone()), (json!("bearer"), json!(3600)));
    let (access, first) = (
        a.body["access_token"].as_str().unwrap().to_owned(),
        a.body["refresh_token"].as_str().unwrap().to_owned(),
    );
    let own = as_user(&t, Method::GET, &format!("/v2/user/providers/{user}"), &access, None).await;
    assert_eq!(own.status, StatusCode::OK);
    let no_key = t.send(Method::POST, &format!("/api/v1/users/{user}/token"), None, Some("{}")).await;
    assert_eq!(no_key.status, StatusCode::UNAUTHORIZED);
    let unknown = t.post_empty(&format!("/api/v1/users/{}/token", uuid::Uuid::new_v4())).await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);

    let body = |token: &str| json!({ "refresh_token": token }).to_string();
    let r = t.send(Method::POST, "/api/v1/token/refresh", None, Some(&body(&first))).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let second = r.body["refresh_token"].as_str().unwrap().to_owned();
    assert_eq!(
        t.send(Method::POST, "/api/v1/token/refresh", None, Some(&body(&first))).await.status,
        StatusCode::UNAUTHORIZED
    );
    // The replay revoked the session.
    assert_eq!(
        t.send(Method::POST, "/api/v1/token/refresh", None, Some(&body(&second))).await.status,
        StatusCode::UNAUTHORIZED
    );

    // Revoke: 204, then the token is dead; an unknown token is 204 too.
    let a = t.post_empty(&format!("/api/v1/users/{user}/token")).await;
    let third = a.body["refresh_token"].as_str().unwrap().to_owned();
    let r = t.send(Method::POST, "/api/v1/token/revoke", None, Some(&body(&third))).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.body);
    assert_eq!(
        t.send(Method::POST, "/api/v1/token/refresh", None, Some(&body(&third))).await.status,
        StatusCode::UNAUTHORIZED
    );
    let r = t.send(Method::POST, "/api/v1/token/revoke", None, Some(&body("rt-0123456789abcdef"))).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
}

#[tokio::test]
async fn open_wearables_token_routes_on_embedded() {
    open_wearables_token_routes(embedded().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_wearables_token_routes_on_moto() {
    open_wearables_token_routes(moto().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_token_opens_only_its_users_routes_on_moto() {
    a_user_token_opens_only_its_users_routes(moto().await).await;
}

/// A function that was not given the signing key accepts no user token (and issues none).
#[tokio::test]
async fn without_the_signing_key_user_tokens_open_nothing() {
    let t = embedded().await;
    let user = t.create_user("phone-keyless").await;
    let (access, _) = signed_in(&t, &user).await;
    let keyless = TestApp {
        app: t.app_on(wearlab_web::AppState::new(t.deps.clone(), Default::default())),
        ..embedded().await
    };
    let keyless = TestApp { deps: t.deps.clone(), key: t.key.clone(), team: t.team, ..keyless };
    let a = as_user(&keyless, Method::GET, &format!("/v2/user/providers/{user}"), &access, None).await;
    assert_eq!(a.status, StatusCode::UNAUTHORIZED, "{}", a.body);
    let a = keyless.post_empty(&format!("/v2/user/{user}/sign_in_token")).await;
    assert_eq!(a.status, StatusCode::SERVICE_UNAVAILABLE, "{}", a.body);
}
