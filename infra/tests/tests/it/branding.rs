//! The team's brand on the hosted pages (`/v2/team/branding`, its uploaded logo, and the logo
//! served by the pages' origin), on the embedded table and on DynamoDB (moto).

use axum::body::Body;
use http::{Method, Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tower::ServiceExt;
use wearlab_domain::keys;
use wearlab_domain::teams::branding::{self, AccentColor, BrandLogo, DisplayName, LogoType};

use crate::helpers::{Answer, TestApp, error_locs};

const BRANDING: &str = "/v2/team/branding";
const LOGO: &str = "/v2/team/branding/logo";

/// A real 2 x 2 PNG (signature, IHDR, IDAT, IEND).
const PNG: [u8; 73] = [
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52, 0x00,
    0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x02, 0x08, 0x02, 0x00, 0x00, 0x00, 0xfd, 0xd4, 0x9a, 0x73, 0x00,
    0x00, 0x00, 0x10, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0xe0, 0xce, 0xf3, 0x07, 0x22, 0x06, 0x08,
    0x05, 0x00, 0x14, 0xde, 0x03, 0x21, 0xca, 0x7b, 0x63, 0x9c, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e,
    0x44, 0xae, 0x42, 0x60, 0x82,
];

fn sha256_hex(b: &[u8]) -> String {
    hex::encode(Sha256::digest(b))
}

async fn put_brand(t: &TestApp, key: &str, body: Value) -> Answer {
    t.send(Method::PUT, BRANDING, Some(key), Some(&body.to_string())).await
}

async fn put_logo(t: &TestApp, key: &str, content_type: &str, bytes: &[u8]) -> Answer {
    t.send_bytes(Method::PUT, LOGO, Some(key), &[("content-type", content_type)], Some(bytes.to_vec())).await
}

/// A GET without a key, its body as bytes.
async fn fetch(t: &TestApp, path: &str) -> (StatusCode, http::HeaderMap, Vec<u8>) {
    let req = Request::builder().uri(path).body(Body::empty()).unwrap();
    let res = t.app.clone().oneshot(req).await.unwrap();
    let (parts, body) = res.into_parts();
    (parts.status, parts.headers, body.collect().await.unwrap().to_bytes().to_vec())
}

fn path_of(url: &str) -> String {
    url.strip_prefix("http://localhost").unwrap_or(url).to_owned()
}

#[tokio::test]
async fn a_brand_is_unset_then_set_then_replaced_whole() {
    let t = TestApp::embedded().await;
    let unset = json!({"display_name": null, "logo_url": null, "accent_color": null});
    let a = t.get(BRANDING).await;
    assert_eq!((a.status, &a.body), (StatusCode::OK, &unset));

    let brand = json!({
        "display_name": "  Acme Health ",
        "logo_url": "https://cdn.acme.example/logo.png",
        "accent_color": "#0B6E4F",
    });
    let set = put_brand(&t, &t.key, brand).await;
    assert_eq!(set.status, StatusCode::OK, "{}", set.body);
    let expected = json!({
        "display_name": "Acme Health",
        "logo_url": "https://cdn.acme.example/logo.png",
        "accent_color": "#0b6e4f",
    });
    assert_eq!(set.body, expected);
    assert_eq!(t.get(BRANDING).await.body, expected);

    // What the pages read: one item.
    let b = branding::brand(&t.deps, t.team).await.unwrap();
    assert_eq!(b.display_name, Some(DisplayName::parse("Acme Health").unwrap()));
    assert_eq!(b.accent, Some(AccentColor::parse("#0b6e4f").unwrap()));
    assert_eq!(b.logo_src().as_deref(), Some("https://cdn.acme.example/logo.png"));

    // A PUT replaces the brand: omitted fields are unset.
    let only_name = put_brand(&t, &t.key, json!({"display_name": "Acme"})).await;
    assert_eq!(only_name.body, json!({"display_name": "Acme", "logo_url": null, "accent_color": null}));
    assert_eq!(put_brand(&t, &t.key, json!({})).await.body, unset);
    assert_eq!(t.get(BRANDING).await.body, unset);
}

#[tokio::test]
async fn each_rule_is_a_422_at_its_field() {
    let t = TestApp::embedded().await;
    let long_url = format!("https://cdn.acme.example/{}", "a".repeat(2048));
    for (body, field) in [
        (json!({"display_name": ""}), "display_name"),
        (json!({"display_name": "   "}), "display_name"),
        (json!({"display_name": "x".repeat(81)}), "display_name"),
        (json!({"display_name": "Acme\u{0}Health"}), "display_name"),
        (json!({"display_name": 5}), "display_name"),
        (json!({"logo_url": "http://cdn.acme.example/logo.png"}), "logo_url"),
        (json!({"logo_url": "https://user:secret@cdn.acme.example/logo.png"}), "logo_url"),
        (json!({"logo_url": "https://cdn.acme.example/logo.png#top"}), "logo_url"),
        (json!({"logo_url": long_url}), "logo_url"),
        (json!({"logo_url": "javascript:alert(1)"}), "logo_url"),
        (json!({"accent_color": "green"}), "accent_color"),
        (json!({"accent_color": "#0b6e4"}), "accent_color"),
        (json!({"accent_color": "#ffcc00"}), "accent_color"),
    ] {
        let a = put_brand(&t, &t.key, body.clone()).await;
        assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{body}: {}", a.body);
        assert_eq!(error_locs(&a.body), [vec!["body", field]], "{body}");
    }
    // The contrast refusal says the measured ratio and the minimum.
    let a = put_brand(&t, &t.key, json!({"accent_color": "#777777"})).await;
    let msg = a.body["detail"][0]["msg"].as_str().unwrap_or_default();
    assert!(msg.contains("4.47:1") && msg.contains("4.5:1"), "{msg}");
    assert!(put_brand(&t, &t.key, json!({"accent_color": "#767676"})).await.status == StatusCode::OK);
    // Every bad field at once.
    let all =
        put_brand(&t, &t.key, json!({"display_name": "", "logo_url": "ftp://x", "accent_color": "#fff"}))
            .await;
    assert_eq!(error_locs(&all.body).len(), 3, "{}", all.body);
    // Nothing refused was stored.
    assert_eq!(t.get(BRANDING).await.body["accent_color"], "#767676");

    for (method, path) in
        [(Method::GET, BRANDING), (Method::PUT, BRANDING), (Method::PUT, LOGO), (Method::DELETE, LOGO)]
    {
        let a = t.send(method.clone(), path, None, Some("{}")).await;
        assert_eq!(a.status, StatusCode::UNAUTHORIZED, "{method} {path}");
    }
}

#[tokio::test]
async fn an_uploaded_logo_is_served_by_the_pages_origin_until_removed() {
    let t = TestApp::embedded().await;
    put_brand(&t, &t.key, json!({"display_name": "Acme", "accent_color": "#0b6e4f"})).await;
    let up = put_logo(&t, &t.key, "image/png", &PNG).await;
    assert_eq!(up.status, StatusCode::OK, "{}", up.body);
    let id = sha256_hex(&PNG);
    let url = format!("http://localhost/v2/link/web/brand/{id}");
    assert_eq!(up.body, json!({"display_name": "Acme", "logo_url": url, "accent_color": "#0b6e4f"}));
    assert_eq!(t.get(BRANDING).await.body["logo_url"], url);

    let (status, headers, bytes) = fetch(&t, &path_of(&url)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(bytes, PNG);
    assert_eq!(headers["content-type"], "image/png");
    assert_eq!(headers["x-content-type-options"], "nosniff");
    assert_eq!(headers["cache-control"], "public, max-age=31536000, immutable");
    // The pages find it on their own origin.
    let brand = branding::brand(&t.deps, t.team).await.unwrap();
    assert_eq!(brand.logo_src(), Some(format!("/v2/link/web/brand/{id}")));

    // Sending the brand back as GET answers it keeps the upload; the name can change with it.
    let again = put_brand(&t, &t.key, json!({"display_name": "Acme Health", "logo_url": url})).await;
    assert_eq!(again.body["logo_url"], url, "{}", again.body);
    assert!(matches!(branding::brand(&t.deps, t.team).await.unwrap().logo, Some(BrandLogo::Uploaded { .. })));
    // An uploaded logo the brand does not use cannot be named (another team's, say).
    let foreign = format!("http://localhost/v2/link/web/brand/{}", sha256_hex(b"another image"));
    let refused = put_brand(&t, &t.key, json!({"logo_url": foreign})).await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", refused.body);
    assert_eq!(error_locs(&refused.body), [vec!["body", "logo_url"]]);

    let gone = t.delete(LOGO).await;
    assert_eq!(gone.status, StatusCode::OK, "{}", gone.body);
    assert_eq!(gone.body, json!({"display_name": "Acme Health", "logo_url": null, "accent_color": null}));
    assert_eq!(fetch(&t, &path_of(&url)).await.0, StatusCode::NOT_FOUND, "no brand uses it any more");
    assert!(t.deps.table.get(&keys::brand_logo(&id)).await.unwrap().is_none(), "deleted with its last team");
    assert_eq!(t.delete(LOGO).await.status, StatusCode::NOT_FOUND);

    // A URL logo is removed the same way; an unknown or malformed id is a 404.
    put_brand(&t, &t.key, json!({"logo_url": "https://cdn.acme.example/l.png"})).await;
    assert_eq!(t.delete(LOGO).await.body["logo_url"], Value::Null);
    for path in [format!("/v2/link/web/brand/{}", sha256_hex(b"nothing")), "/v2/link/web/brand/x.png".into()]
    {
        assert_eq!(fetch(&t, &path).await.0, StatusCode::NOT_FOUND, "{path}");
    }
}

#[tokio::test]
async fn a_logo_is_refused_for_its_type_its_size_and_its_bytes() {
    let t = TestApp::embedded().await;
    let svg = br#"<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>"#;
    assert_eq!(put_logo(&t, &t.key, "image/svg+xml", svg).await.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert_eq!(put_logo(&t, &t.key, "image/gif", b"GIF89a").await.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let mut big = PNG.to_vec();
    big.resize(100 * 1024 + 1, 0);
    assert_eq!(put_logo(&t, &t.key, "image/png", &big).await.status, StatusCode::PAYLOAD_TOO_LARGE);
    big.truncate(100 * 1024);
    assert_eq!(put_logo(&t, &t.key, "image/png", &big).await.status, StatusCode::OK, "exactly 100 KiB");
    let not_jpeg = put_logo(&t, &t.key, "image/jpeg", &PNG).await;
    assert_eq!(not_jpeg.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", not_jpeg.body);
    assert_eq!(error_locs(&not_jpeg.body), [vec!["body"]]);
    let svg_as_png = put_logo(&t, &t.key, "image/png", svg).await;
    assert_eq!(svg_as_png.status, StatusCode::UNPROCESSABLE_ENTITY);
    // The refused uploads left the accepted logo in place.
    let id = sha256_hex(&big);
    assert!(t.get(BRANDING).await.body["logo_url"].as_str().unwrap_or_default().ends_with(&id));
}

/// A brand is its team's: another team reads its own (unset) brand and writes only its own; two
/// teams uploading the same image share it, and one removing it leaves it to the other.
#[tokio::test]
async fn another_team_cannot_read_or_overwrite_a_brand() {
    let t = TestApp::embedded().await;
    let other = t.other_team_key().await;
    put_brand(&t, &t.key, json!({"display_name": "Acme"})).await;
    let theirs = t.send(Method::GET, BRANDING, Some(&other), None).await;
    assert_eq!(theirs.body["display_name"], Value::Null);
    assert_eq!(put_brand(&t, &other, json!({"display_name": "Other"})).await.status, StatusCode::OK);
    assert_eq!(t.get(BRANDING).await.body["display_name"], "Acme");
    assert_eq!(t.send(Method::DELETE, LOGO, Some(&other), None).await.status, StatusCode::NOT_FOUND);

    assert_eq!(put_logo(&t, &t.key, "image/png", &PNG).await.status, StatusCode::OK);
    assert_eq!(put_logo(&t, &other, "image/png", &PNG).await.status, StatusCode::OK);
    assert_eq!(t.send(Method::DELETE, LOGO, Some(&other), None).await.status, StatusCode::OK);
    assert!(t.get(BRANDING).await.body["logo_url"].is_string(), "the first team keeps its logo");
    let path = format!("/v2/link/web/brand/{}", sha256_hex(&PNG));
    assert_eq!(fetch(&t, &path).await.0, StatusCode::OK, "still served for the team that uses it");
    assert_eq!(t.delete(LOGO).await.status, StatusCode::OK);
    assert_eq!(fetch(&t, &path).await.0, StatusCode::NOT_FOUND);
}

/// What is stored, the same on both adapters: the brand item, the logo item (replacing a logo
/// releases the old one), and the one read the pages make.
async fn stored_state(t: &TestApp) {
    let set = put_brand(t, &t.key, json!({"display_name": "Acme", "accent_color": "#0B6E4F"})).await;
    assert_eq!(set.status, StatusCode::OK, "{}", set.body);
    let item = t.deps.table.get(&keys::team_brand(t.team)).await.unwrap().expect("the brand item");
    assert_eq!(item.body["display_name"], "Acme");
    assert_eq!(item.body["accent_color"], "#0b6e4f");

    assert_eq!(put_logo(t, &t.key, "image/png", &PNG).await.status, StatusCode::OK);
    let first = sha256_hex(&PNG);
    let logo = t.deps.table.get(&keys::brand_logo(&first)).await.unwrap().expect("the logo item");
    assert_eq!(logo.body["teams"], json!([t.team]));
    let mut second = PNG.to_vec();
    second.extend(b"trailing bytes");
    assert_eq!(put_logo(t, &t.key, "image/png", &second).await.status, StatusCode::OK);
    assert!(t.deps.table.get(&keys::brand_logo(&first)).await.unwrap().is_none(), "the old logo is released");
    let brand = branding::brand(&t.deps, t.team).await.unwrap();
    assert_eq!(
        brand.logo,
        Some(BrandLogo::Uploaded {
            id: branding::LogoId::parse(&sha256_hex(&second)).unwrap(),
            kind: LogoType::Png
        })
    );
    assert_eq!(brand.display_name.as_ref().map(DisplayName::as_str), Some("Acme"), "kept with the upload");
    let (status, _, bytes) = fetch(t, &format!("/v2/link/web/brand/{}", sha256_hex(&second))).await;
    assert_eq!((status, bytes), (StatusCode::OK, second));
}

#[tokio::test]
async fn brand_storage_on_the_embedded_table() {
    stored_state(&TestApp::embedded().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn brand_storage_on_dynamodb() {
    let (t, _, _) = crate::users_on_dynamodb::on_moto().await;
    stored_state(&t).await;
}
