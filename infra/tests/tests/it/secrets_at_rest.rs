//! No secret rests in the table in plain text, also when a client asks for its answer to be
//! kept (`X-Idempotency-Key`): the webhook secret, a link token, a portal code and exported
//! provider tokens are looked for in the embedded file's bytes and in every item of the
//! DynamoDB table (moto) after each call, and the kept answer still replays them.

use std::path::PathBuf;
use std::sync::Arc;

use http::{Method, StatusCode};
use serde_json::{Value, json};
use wearlab_domain::Deps;
use wearlab_domain::common::crypto::{DataKey, Secret};
use wearlab_domain::common::ids::UserId;
use wearlab_domain::linking::connections::{self, NewConnection};
use wearlab_domain::ports::providers::{ProviderAccount, ProviderCredentials};
use wearlab_domain::ports::{ManualClock, Table};
use wearlab_domain::{common::provider_catalog, teams};

use crate::helpers::{Answer, TestApp, json_receiver, moto_endpoint, start_time};

/// Where the table's bytes can be read back.
enum Store {
    File(PathBuf),
    Moto { client: aws_sdk_dynamodb::Client, table: String },
}

impl Store {
    /// Everything the table holds, as text.
    async fn contents(&self) -> String {
        match self {
            Store::File(path) => String::from_utf8_lossy(&std::fs::read(path).unwrap()).into_owned(),
            Store::Moto { client, table } => {
                let mut out = String::new();
                let mut start = None;
                for _ in 0..1000 {
                    let page =
                        client.scan().table_name(table).set_exclusive_start_key(start).send().await.unwrap();
                    for item in page.items() {
                        out.push_str(&format!("{item:?}\n"));
                    }
                    start = page.last_evaluated_key().cloned();
                    if start.is_none() {
                        break;
                    }
                }
                out
            }
        }
    }

    async fn assert_nowhere(&self, what: &str, secret: &str) {
        assert!(secret.len() >= 8, "{what}: a secret worth looking for ({secret})");
        assert!(!self.contents().await.contains(secret), "{what} rests in the table in plain text");
    }
}

async fn app(moto: bool) -> (TestApp, Store, Option<tempdir::Dir>) {
    let clock = Arc::new(ManualClock::new(start_time()));
    let (table, store, dir): (Arc<dyn Table>, Store, Option<tempdir::Dir>) = if moto {
        let (client, _) = wearlab_aws::clients_for_endpoint(&moto_endpoint()).await;
        let name = format!("wearlab-secrets-{}", uuid::Uuid::new_v4().simple());
        wearlab_aws::ensure_table(&client, &name).await.unwrap();
        let table = Arc::new(wearlab_aws::DynamoDbTable::new(client.clone(), name.clone()));
        (table, Store::Moto { client, table: name }, None)
    } else {
        let dir = tempdir::Dir::new();
        let path = dir.0.join("wearlab.redb");
        let table = Arc::new(wearlab_embedded::RedbTable::open(&path).unwrap());
        (table, Store::File(path), Some(dir))
    };
    let deps = Deps {
        table: table.clone(),
        scheduler: Arc::new(wearlab_embedded::TableScheduler::new(table)),
        clock: clock.clone(),
        bus: Arc::new(wearlab_embedded::MemoryBus::new()),
        providers: wearlab_sim::providers(),
        data_key: Arc::new(DataKey::ephemeral()),
    };
    (TestApp::on(deps, clock).await, store, dir)
}

/// A throwaway directory, removed when dropped.
mod tempdir {
    pub struct Dir(pub std::path::PathBuf);

    impl Dir {
        pub fn new() -> Self {
            let path =
                std::env::temp_dir().join(format!("wearlab-secrets-{}", uuid::Uuid::new_v4().simple()));
            std::fs::create_dir_all(&path).unwrap();
            Self(path)
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// POSTs `body` twice with one idempotency key: the second answer is the kept one.
async fn kept(t: &TestApp, key: &str, path: &str, body: Value) -> (Answer, Answer) {
    let headers = [("x-idempotency-key", key)];
    let first = t.send_with(Method::POST, path, &headers, Some(&body.to_string())).await;
    assert_eq!(first.status, StatusCode::OK, "{path}: {}", first.body);
    let again = t.send_with(Method::POST, path, &headers, Some(&body.to_string())).await;
    assert_eq!(again.headers.get("idempotent-replayed").map(|v| v.to_str().unwrap()), Some("true"));
    assert_eq!(again.body, first.body, "{path}: the kept answer replays whole");
    (first, again)
}

async fn no_secret_rests_in_kept_answers(moto: bool) {
    let (t, store, _dir) = app(moto).await;
    let user = t.create_user("secret-holder").await;

    let (url, _received) = json_receiver(|_| StatusCode::OK).await;
    let (hook, _) = kept(&t, "hook-1", "/v2/team/webhooks", json!({"url": url})).await;
    store.assert_nowhere("the webhook secret", hook.body["secret"].as_str().unwrap()).await;

    let (token, _) = kept(&t, "token-1", "/v2/link/token", json!({"user_id": user})).await;
    store.assert_nowhere("the link token", token.body["link_token"].as_str().unwrap()).await;

    let (patient, _order) = crate::lab::place_order(&t, "secret-patient").await;
    let info = t.patch(&format!("/v2/user/{patient}/info"), crate::lab::info_body()).await;
    assert_eq!(info.status, StatusCode::OK, "{}", info.body);
    let (portal, _) = kept(
        &t,
        "portal-1",
        &format!("/v2/user/{patient}/create_portal_url"),
        json!({"context": "communications"}),
    )
    .await;
    let portal_url = portal.body["url"].as_str().unwrap();
    let code = portal_url.rsplit('/').next().unwrap();
    store.assert_nowhere("the portal code", code).await;

    // A connection made with the team's own app, exported with its tokens.
    teams::set_bulk_operations(&t.deps, t.team, true).await.unwrap();
    let app = t
        .send(
            Method::PUT,
            "/v2/team/oauth_app/fitbit",
            Some(&t.key),
            Some(&json!({"client_id": "team-fitbit", "client_secret": "team-fitbit-secret"}).to_string()),
        )
        .await;
    assert_eq!(app.status, StatusCode::OK, "{}", app.body);
    let (access, refresh) = ("fitbit-access-0123456789abcdef", "fitbit-refresh-0123456789abcdef");
    let new = NewConnection {
        provider: provider_catalog::catalog().get("fitbit").unwrap(),
        account: ProviderAccount {
            external_user_id: "fb-secret".into(),
            credentials: ProviderCredentials {
                access_token: Secret::new(access),
                refresh_token: Some(Secret::new(refresh)),
                expires_at: None,
                scopes: vec![],
            },
        },
        demo: false,
        token: None,
        extra_ops: vec![],
        team_app_client_id: Some("team-fitbit".into()),
        import_op: None,
    };
    connections::commit(&t.deps, t.team, UserId::parse(&user).unwrap(), new).await.unwrap();
    let (export, _) = kept(&t, "export-1", "/v2/link/bulk_export", json!({"provider": "fitbit"})).await;
    assert_eq!(export.body["data"][0]["access_token"], access, "{}", export.body);
    store.assert_nowhere("an exported access token", access).await;
    store.assert_nowhere("an exported refresh token", refresh).await;
}

#[tokio::test]
async fn no_secret_rests_in_kept_answers_embedded() {
    no_secret_rests_in_kept_answers(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_secret_rests_in_kept_answers_on_dynamodb() {
    no_secret_rests_in_kept_answers(true).await;
}
