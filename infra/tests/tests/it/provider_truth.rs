//! Provider truth: a deployment that does not link simulated providers (the default of the SAM
//! template, `WEARLAB_SIMULATED_PROVIDERS` unset) says which providers are demo only, refuses
//! every real link, bulk import and bulk trigger of them with a reason, keeps demo connections
//! and the simulated connections made before as demos, and checks a bulk-imported token of a
//! real provider with the provider itself. Storage paths run on the embedded table and on
//! DynamoDB (moto).

use std::sync::Arc;
use std::time::Duration;

use http::{Method, StatusCode};
use serde_json::{Value, json};
use wearlab_domain::Deps;
use wearlab_domain::common::crypto::Secret;
use wearlab_domain::ports::providers::{OauthClient, Providers};
use wearlab_domain::ports::{ManualClock, QueueName, Table};
use wearlab_domain::teams;
use wearlab_embedded::TableQueue;
use wearlab_providers::SIMULATED_PROVIDERS_VAR;
use wearlab_providers::fake::oura::OuraFake;

use crate::helpers::{Answer, TestApp, moto_table, start_time};
use crate::linking::{link_token, password_link, post_linked};

/// Where the test's storage lives.
#[derive(Clone, Copy, Debug)]
enum Storage {
    Embedded,
    Moto,
}

/// The API on `storage` whose providers are those of a deployment with `vars` (the
/// simulator behind them), and the work queues on the same table.
struct Env {
    t: TestApp,
    queue: TableQueue,
}

fn deployment(vars: Vec<(&'static str, String)>) -> impl Fn(Arc<dyn Providers>) -> Arc<dyn Providers> {
    move |sim| {
        wearlab_providers::from_vars(sim, |k| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone()))
    }
}

fn simulating(on: bool) -> Vec<(&'static str, String)> {
    vec![(SIMULATED_PROVIDERS_VAR, on.to_string())]
}

async fn env(storage: Storage, vars: Vec<(&'static str, String)>) -> Env {
    let clock = Arc::new(ManualClock::new(start_time()));
    let table: Arc<dyn Table> = match storage {
        Storage::Embedded => Arc::new(wearlab_embedded::RedbTable::in_memory()),
        Storage::Moto => Arc::new(moto_table().await),
    };
    on_table(table, clock, vars).await
}

async fn on_table(table: Arc<dyn Table>, clock: Arc<ManualClock>, vars: Vec<(&'static str, String)>) -> Env {
    let queue = TableQueue::new(table.clone(), clock.clone());
    let sim: Arc<dyn Providers> = Arc::new(wearlab_sim::SimProviders::new(clock.clone()));
    let deps = Deps {
        table: table.clone(),
        scheduler: Arc::new(wearlab_embedded::TableScheduler::new(table)),
        clock: clock.clone(),
        bus: Arc::new(wearlab_embedded::MemoryBus::new()),
        providers: deployment(vars)(sim),
        data_key: Arc::new(wearlab_domain::common::crypto::DataKey::ephemeral()),
    };
    Env { t: TestApp::on(deps, clock).await.with_queue(Arc::new(queue.clone())), queue }
}

/// The same storage, team and key under another configuration of providers (a redeploy).
async fn redeployed(e: &Env, vars: Vec<(&'static str, String)>) -> Env {
    let sim: Arc<dyn Providers> = Arc::new(wearlab_sim::SimProviders::new(e.t.clock.clone()));
    let deps = Deps { providers: deployment(vars)(sim), ..e.t.deps.clone() };
    let ports = e.t.ports.clone();
    let app = wearlab_local::app(crate::helpers::state(&deps), &ports);
    let t = TestApp {
        deps,
        ports,
        clock: e.t.clock.clone(),
        app,
        key: e.t.key.clone(),
        team: e.t.team,
        stack: None,
    };
    Env { t, queue: e.queue.clone() }
}

impl Env {
    /// Runs the bulk and pull queues until nothing is due (bounded).
    async fn drain(&self) {
        let deps = &self.t.deps;
        for _ in 0..50 {
            let bulk = self
                .queue
                .run_once(QueueName::Bulk, |env, _| bulk_worker::handle(deps, &self.queue, env))
                .await
                .unwrap();
            let pulls = self
                .queue
                .run_once(QueueName::Pull, |env, _| pull_worker::handle(deps, &self.queue, env))
                .await
                .unwrap();
            if bulk + pulls == 0 {
                break;
            }
        }
    }

    /// POSTs `body` with `wait_for_completion` while the workers run beside the request.
    async fn bulk_waiting(&self, path: &str, mut body: Value) -> Answer {
        body["wait_for_completion"] = json!(true);
        let request = self.t.post(path, body);
        let work = async {
            for _ in 0..40 {
                self.drain().await;
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
        };
        let (answer, ()) = tokio::join!(request, work);
        answer
    }

    async fn connections(&self, user: &str) -> Vec<Value> {
        let a = self.t.get(&format!("/v2/user/providers/{user}")).await;
        assert_eq!(a.status, StatusCode::OK, "{}", a.body);
        a.body["providers"].as_array().unwrap().clone()
    }
}

fn entry<'a>(catalog: &'a Value, slug: &str) -> &'a Value {
    catalog.as_array().unwrap().iter().find(|e| e["slug"] == slug).unwrap_or_else(|| panic!("{slug} listed"))
}

fn assert_refused_for_demo(a: &Answer, provider: &str) {
    assert_eq!(a.status, StatusCode::BAD_REQUEST, "{}", a.body);
    let detail = a.body["detail"].as_str().unwrap_or_default();
    assert!(detail.starts_with(&format!("{provider} cannot be linked on this deployment")), "{detail}");
    assert!(detail.contains("POST /v2/link/connect/demo"), "the demo alternative is named: {detail}");
}

#[tokio::test]
async fn the_catalog_says_how_each_provider_can_be_linked() {
    let off = env(Storage::Embedded, vec![]).await;
    let catalog = off.t.get("/v2/providers").await;
    assert_eq!(catalog.status, StatusCode::OK);
    for slug in ["peloton", "garmin", "oura", "freestyle_libre"] {
        assert_eq!(entry(&catalog.body, slug)["availability"], "demo_only", "{slug}");
    }
    let a = off.t.get("/v2/providers?source_type=password").await;
    assert!(a.body.as_array().unwrap().iter().all(|e| e["availability"] == "demo_only"), "{}", a.body);

    let on = env(Storage::Embedded, simulating(true)).await;
    // The eight SDK providers are live on every deployment: their data comes from the phone.
    for deployment in [&off, &on] {
        let sdk = deployment.t.get("/v2/providers?source_type=sdk").await;
        let entries = sdk.body.as_array().unwrap();
        assert_eq!(entries.len(), 8, "{}", sdk.body);
        assert!(entries.iter().all(|e| e["availability"] == "live"), "{}", sdk.body);
    }
    let catalog = on.t.get("/v2/providers").await;
    for slug in ["peloton", "garmin", "oura"] {
        assert_eq!(entry(&catalog.body, slug)["availability"], "simulated", "{slug}");
    }

    let fake = OuraFake::start(&oura_app()).await;
    let live = env(Storage::Embedded, oura_vars(&fake, false)).await;
    let catalog = live.t.get("/v2/providers").await;
    assert_eq!(entry(&catalog.body, "oura")["availability"], "live");
    assert_eq!(entry(&catalog.body, "peloton")["availability"], "demo_only");
}

async fn links_of_demo_only_providers_are_refused(storage: Storage) {
    let e = env(storage, vec![]).await;
    let user = e.t.create_user("truth-1").await;

    // A token that would open the page on a demo-only provider is refused when made.
    let named = e.t.post("/v2/link/token", json!({"user_id": user, "provider": "peloton"})).await;
    assert_refused_for_demo(&named, "peloton");

    let tk = link_token(&e.t, &user, json!({})).await;
    assert_refused_for_demo(&password_link(&e.t, "peloton", Some(&tk), "rider@example.com").await, "peloton");
    let oauth =
        e.t.send_as(
            Method::GET,
            "/v2/link/provider/oauth/garmin",
            Some(&e.t.key),
            &[(wearlab_domain::linking::tokens::LINK_TOKEN_HEADER, &tk)],
            None,
        )
        .await;
    assert_refused_for_demo(&oauth, "garmin");
    assert!(e.connections(&user).await.is_empty(), "nothing was connected");

    // Demo connections stay, marked as demos.
    let demo = e.t.post("/v2/link/connect/demo", json!({"user_id": user, "provider": "oura"})).await;
    assert_eq!(demo.status, StatusCode::OK, "{}", demo.body);
    let listed = e.connections(&user).await;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["slug"], "oura");
    assert_eq!(listed[0]["demo"], true);

    // The token was not used up by the refusals: with simulation on, the same kind of link
    // goes through (and is listed as a demo too: its data is synthetic).
    let on = redeployed(&e, simulating(true)).await;
    let a = post_linked(
        &on.t,
        "/v2/link/provider/password/peloton",
        Some(&tk),
        json!({"username": "rider@example.com", "password": "correct horse battery staple"}),
    )
    .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(a.body["state"], "success", "{}", a.body);
    let peloton = on.connections(&user).await.into_iter().find(|c| c["slug"] == "peloton").unwrap();
    assert_eq!(peloton["demo"], true);
}

#[tokio::test]
async fn links_of_demo_only_providers_are_refused_embedded() {
    links_of_demo_only_providers_are_refused(Storage::Embedded).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn links_of_demo_only_providers_are_refused_on_dynamodb() {
    links_of_demo_only_providers_are_refused(Storage::Moto).await;
}

async fn simulated_connections_made_before_stay_as_demos(storage: Storage) {
    let on = env(storage, simulating(true)).await;
    let user = on.t.create_user("truth-2").await;
    let tk = link_token(&on.t, &user, json!({})).await;
    let a = password_link(&on.t, "peloton", Some(&tk), "rider@example.com").await;
    assert_eq!(a.body["state"], "success", "{}", a.body);

    // The operator turns simulated links off: the connection is kept, listed as a demo, and
    // still refreshed from the simulator.
    let off = redeployed(&on, vec![]).await;
    let listed = off.connections(&user).await;
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["slug"], "peloton");
    assert_eq!(listed[0]["status"], "connected");
    assert_eq!(listed[0]["demo"], true);
    let refresh = off.t.post_empty(&format!("/v2/user/refresh/{user}?timeout=5")).await;
    assert_eq!(refresh.status, StatusCode::OK, "{}", refresh.body);
    assert!(
        refresh.body["refreshed_sources"]
            .as_array()
            .is_some_and(|r| r.iter().any(|x| x.as_str().is_some_and(|s| s.starts_with("peloton/")))),
        "the demo keeps working: {}",
        refresh.body
    );
}

#[tokio::test]
async fn simulated_connections_made_before_stay_as_demos_embedded() {
    simulated_connections_made_before_stay_as_demos(Storage::Embedded).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simulated_connections_made_before_stay_as_demos_on_dynamodb() {
    simulated_connections_made_before_stay_as_demos(Storage::Moto).await;
}

const FITBIT_APP: &str = "team-fitbit-app";

async fn bulk_of_demo_only_providers_fails_per_user(storage: Storage) {
    let on = env(storage, simulating(true)).await;
    teams::set_bulk_operations(&on.t.deps, on.t.team, true).await.unwrap();
    let app =
        on.t.send(
            Method::PUT,
            "/v2/team/oauth_app/fitbit",
            Some(&on.t.key),
            Some(&json!({"client_id": FITBIT_APP, "client_secret": "s3cret"}).to_string()),
        )
        .await;
    assert_eq!(app.status, StatusCode::OK, "{}", app.body);
    let linked = on.t.create_user("truth-linked").await;
    let recipe = |user: &str, account: &str| {
        json!({"user_id": user, "access_token": wearlab_sim::app_access_token("fitbit", FITBIT_APP, &[], account),
               "refresh_token": "r", "provider_id": account, "expires_at": 1_900_000_000, "oauth_scopes": ["activity"]})
    };
    // Imported while simulation was on: a simulated connection.
    let a = on
        .bulk_waiting(
            "/v2/link/bulk_import",
            json!({"provider": "fitbit", "connections": [recipe(&linked, "fb-1")]}),
        )
        .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(a.body["user_ids_imported"], json!([linked]));

    let off = redeployed(&on, vec![]).await;
    let fresh = off.t.create_user("truth-fresh").await;
    let a = off
        .bulk_waiting(
            "/v2/link/bulk_import",
            json!({"provider": "fitbit", "connections": [recipe(&fresh, "fb-2")]}),
        )
        .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(a.body["user_ids_imported"], json!([]));
    assert_eq!(a.body["user_ids_failed"], json!([fresh]));
    let failure = &a.body["failures"][0];
    assert_eq!(failure["user_id"], fresh);
    assert!(
        failure["reason"].as_str().unwrap().starts_with("fitbit cannot be linked on this deployment"),
        "{failure}"
    );
    assert!(off.connections(&fresh).await.is_empty(), "nothing imported");

    let a = off
        .bulk_waiting(
            "/v2/link/bulk_trigger_historical_pull",
            json!({"provider": "fitbit", "user_ids": [linked]}),
        )
        .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(a.body["user_ids_triggered"], json!([]));
    assert_eq!(a.body["user_ids_failed"], json!([linked]));
    assert!(
        a.body["failures"][0]["reason"].as_str().unwrap().contains("cannot be linked on this deployment"),
        "{}",
        a.body
    );

    // With simulation on, a trigger of a user without a connection says why too.
    let on = redeployed(&off, simulating(true)).await;
    let a = on
        .bulk_waiting(
            "/v2/link/bulk_trigger_historical_pull",
            json!({"provider": "fitbit", "user_ids": [fresh]}),
        )
        .await;
    assert_eq!(a.body["user_ids_failed"], json!([fresh]), "{}", a.body);
    assert_eq!(a.body["failures"][0]["reason"], "the user has no connection to fitbit");
}

#[tokio::test]
async fn bulk_of_demo_only_providers_fails_per_user_embedded() {
    bulk_of_demo_only_providers_fails_per_user(Storage::Embedded).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bulk_of_demo_only_providers_fails_per_user_on_dynamodb() {
    bulk_of_demo_only_providers_fails_per_user(Storage::Moto).await;
}

fn oura_app() -> OauthClient {
    OauthClient { client_id: "team-oura-app".into(), client_secret: Secret::new("team-oura-secret") }
}

/// Oura made real against `fake`: with the platform's app, or only through teams' own apps.
fn oura_vars(fake: &OuraFake, platform: bool) -> Vec<(&'static str, String)> {
    let mut vars = vec![
        ("WEARLAB_PROVIDER_OURA_AUTHORIZE_URL", fake.endpoints().authorize),
        ("WEARLAB_PROVIDER_OURA_TOKEN_URL", fake.endpoints().token),
        ("WEARLAB_PROVIDER_OURA_API_URL", fake.endpoints().api),
    ];
    if platform {
        vars.push(("WEARLAB_PROVIDER_OURA_CLIENT_ID", oura_app().client_id));
        vars.push(("WEARLAB_PROVIDER_OURA_CLIENT_SECRET", oura_app().client_secret.expose().to_owned()));
    } else {
        vars.push(("WEARLAB_PROVIDER_OURA_ENABLED", "true".into()));
    }
    vars
}

/// A token issued to another OAuth app fails the import of a real provider, with the reason;
/// a token of the team's app is checked by refreshing it with that app, and the refreshed
/// tokens are the ones stored (the old refresh token is used up at Oura).
#[tokio::test]
async fn bulk_import_checks_a_real_providers_tokens_with_the_provider() {
    let fake = OuraFake::start(&oura_app()).await;
    let e = env(Storage::Embedded, oura_vars(&fake, false)).await;
    teams::set_bulk_operations(&e.t.deps, e.t.team, true).await.unwrap();
    let app =
        e.t.send(
            Method::PUT,
            "/v2/team/oauth_app/oura",
            Some(&e.t.key),
            Some(
                &json!({"client_id": oura_app().client_id, "client_secret": "team-oura-secret"}).to_string(),
            ),
        )
        .await;
    assert_eq!(app.status, StatusCode::OK, "{}", app.body);
    let good = e.t.create_user("oura-good").await;
    let foreign = e.t.create_user("oura-foreign").await;
    let (access, refresh) = fake.issue_tokens();
    let recipe = |user: &str, access: &str, refresh: &str| {
        json!({"user_id": user, "access_token": access, "refresh_token": refresh, "provider_id": format!("oura-{user}"),
               "expires_at": 1_900_000_000, "oauth_scopes": ["daily"]})
    };
    let a = e
        .bulk_waiting(
            "/v2/link/bulk_import",
            json!({"provider": "oura", "connections": [
                recipe(&good, &access, &refresh),
                recipe(&foreign, "at-of-another-app", "rt-of-another-app"),
            ]}),
        )
        .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(a.body["user_ids_imported"], json!([good]), "{}", a.body);
    assert_eq!(a.body["user_ids_failed"], json!([foreign]), "{}", a.body);
    let reason = a.body["failures"][0]["reason"].as_str().unwrap();
    assert!(reason.starts_with("oura refused the tokens"), "{reason}");
    assert!(reason.contains("another application"), "{reason}");
    assert_eq!(fake.calls("token:refresh_token"), 2, "each recipe checked once at Oura");

    // The stored tokens are the refreshed ones: the imported refresh token is used up.
    let record: wearlab_domain::linking::connections::ConnectionRecord =
        e.t.deps
            .table
            .get(&wearlab_domain::keys::linking::connection(
                wearlab_domain::common::ids::UserId::parse(&good).unwrap(),
                "oura",
            ))
            .await
            .unwrap()
            .unwrap()
            .decode()
            .unwrap();
    let stored = record.credentials(&e.t.deps).unwrap();
    assert_ne!(stored.refresh_token.as_ref().map(Secret::expose), Some(refresh.as_str()));
    assert_ne!(stored.access_token.expose(), access);
    let listed = e.connections(&good).await;
    assert_eq!(listed[0]["demo"], false, "a real connection: {listed:?}");
}
