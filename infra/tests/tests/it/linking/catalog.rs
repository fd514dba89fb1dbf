use http::{Method, StatusCode};

use crate::helpers::TestApp;

#[tokio::test]
async fn lists_every_provider_with_and_without_trailing_slash() {
    let t = TestApp::embedded().await;
    let a = t.get("/v2/providers").await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let list = a.body.as_array().unwrap();
    assert!((35..=60).contains(&list.len()), "{}", list.len());
    let oura = list.iter().find(|p| p["slug"] == "oura").unwrap();
    for key in ["name", "slug", "description", "logo", "auth_type", "supported_resources"] {
        assert!(oura.get(key).is_some(), "{key}");
    }
    assert_eq!(oura["auth_type"], "oauth");
    assert!(oura["supported_resources"].as_array().unwrap().iter().any(|r| r == "sleep"));
    assert_eq!(t.get("/v2/providers/").await.body, a.body);
}

#[tokio::test]
async fn filters_by_source_type() {
    let t = TestApp::embedded().await;
    let a = t.get("/v2/providers/?source_type=password").await;
    assert_eq!(a.status, StatusCode::OK);
    let slugs: Vec<&str> = a.body.as_array().unwrap().iter().map(|p| p["slug"].as_str().unwrap()).collect();
    assert_eq!(slugs.len(), 11);
    assert!(slugs.contains(&"abbott_libreview") && slugs.contains(&"tandem_source"));
    assert!(!slugs.contains(&"hammerhead"), "Hammerhead links by OAuth");
    let team = t.get("/v2/providers?source_type=team_oauth").await;
    let slugs: Vec<&str> =
        team.body.as_array().unwrap().iter().map(|p| p["slug"].as_str().unwrap()).collect();
    for s in ["strava", "dexcom_v3", "whoop_v2", "my_fitness_pal_v2", "map_my_fitness"] {
        assert!(slugs.contains(&s), "{s}");
    }
    assert_eq!(t.get("/v2/providers?source_type=email").await.body[0]["slug"], "freestyle_libre");
    assert_eq!(t.get("/v2/providers?source_type=carrier_pigeon").await.body, serde_json::json!([]));
}

#[tokio::test]
async fn needs_an_api_key() {
    let t = TestApp::embedded().await;
    assert_eq!(t.send(Method::GET, "/v2/providers", None, None).await.status, StatusCode::UNAUTHORIZED);
    let bad = t.send(Method::GET, "/v2/providers", Some("sk_test_nope_nope_nope_nope"), None).await;
    assert_eq!(bad.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn every_linking_operation_refuses_missing_and_wrong_keys() {
    let t = TestApp::embedded().await;
    let user = uuid::Uuid::new_v4();
    let ops = [
        (Method::GET, "/v2/providers".to_owned()),
        (Method::POST, "/v2/link/token".to_owned()),
        (Method::POST, "/v2/link/provider/password/peloton".to_owned()),
        (Method::POST, "/v2/link/provider/password/peloton/complete_mfa".to_owned()),
        (Method::GET, "/v2/link/provider/oauth/oura".to_owned()),
        (Method::POST, "/v2/link/connect/demo".to_owned()),
        (Method::GET, "/v2/team/oauth_app/strava".to_owned()),
        (Method::PUT, "/v2/team/oauth_app/strava".to_owned()),
        (Method::DELETE, "/v2/team/oauth_app/strava".to_owned()),
        (Method::GET, "/v2/team/link_config".to_owned()),
        (Method::PATCH, "/v2/team/link_config".to_owned()),
        (Method::GET, format!("/v2/user/providers/{user}")),
        (Method::DELETE, format!("/v2/user/{user}/oura")),
    ];
    for (method, path) in ops {
        for key in [None, Some("sk_test_0000000000000000000000000000000000000000")] {
            let a = t.send(method.clone(), &path, key, Some("{}")).await;
            assert_eq!(a.status, StatusCode::UNAUTHORIZED, "{method} {path} with {key:?}");
            assert!(a.body["detail"].is_string());
        }
    }
}
