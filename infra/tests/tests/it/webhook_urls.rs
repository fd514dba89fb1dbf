//! Webhook destinations: a deployed API refuses endpoint URLs that reach its own network, and
//! the sender refuses, at delivery time, every address a name resolves to that is not public.
//! No test sends traffic anywhere but 127.0.0.1: "private" destinations are loopback listeners
//! under the production policy, and names resolve through fixed answers.

use std::net::{IpAddr, Ipv4Addr};

use http::StatusCode;
use serde_json::json;
use wearlab_domain::ports::WebhookSender;
use wearlab_domain::webhooks::url::UrlPolicy;
use wearlab_http::HttpSender;
use wearlab_http::guard::{GuardedResolver, NOT_ALLOWED};

use crate::helpers::{TestApp, error_locs};

const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

/// The team-api routes served as a deployed team-api serves them (production URL policy).
fn deployed(t: TestApp) -> TestApp {
    let app = team_api::app(crate::helpers::state(&t.deps));
    TestApp { app, ..t }
}

/// A loopback listener that never answers; `connected` tells whether anything reached it.
struct Listener(std::net::TcpListener);

impl Listener {
    fn bind() -> Self {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.set_nonblocking(true).unwrap();
        Self(l)
    }

    fn port(&self) -> u16 {
        self.0.local_addr().unwrap().port()
    }

    fn connected(&self) -> bool {
        match self.0.accept() {
            Ok(_) => true,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => false,
            Err(e) => panic!("accept: {e}"),
        }
    }
}

#[tokio::test]
async fn a_deployed_api_refuses_internal_destinations() {
    let t = deployed(TestApp::embedded().await);
    for url in [
        "http://127.0.0.1:1@10.0.0.5:8080/x",
        "http://example.com/x",
        "http://localhost:9001/2018-06-01/runtime/invocation/next",
        "http://127.0.0.1:9000/h",
        "https://169.254.169.254/latest/meta-data/",
        "https://10.0.0.5/x",
        "https://172.16.0.1/x",
        "https://192.168.0.1/x",
        "https://[::1]/x",
        "https://[fc00::1]/x",
        "https://[fe80::1]/x",
        "https://metadata.google.internal/computeMetadata/v1/",
        "https://user:pass@example.com/x",
    ] {
        let a = t.post("/v2/team/webhooks", json!({"url": url})).await;
        assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{url}: {}", a.body);
        assert_eq!(error_locs(&a.body)[0], ["body", "url"], "{url}");
    }
    let ok = t.post("/v2/team/webhooks", json!({"url": "https://hooks.example.com/wearlab"})).await;
    assert_eq!(ok.status, StatusCode::OK, "{}", ok.body);
}

#[tokio::test]
async fn userinfo_cannot_disguise_the_host_on_the_local_stack_either() {
    let t = TestApp::embedded().await;
    let a = t.post("/v2/team/webhooks", json!({"url": "http://127.0.0.1:1@10.0.0.5:8080/x"})).await;
    assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", a.body);
    let local = t.post("/v2/team/webhooks", json!({"url": "http://127.0.0.1:9/hook"})).await;
    assert_eq!(local.status, StatusCode::OK, "loopback http is for the local stack: {}", local.body);
}

#[tokio::test]
async fn the_sender_refuses_a_name_that_resolves_to_a_private_address_without_connecting() {
    let listener = Listener::bind();
    let sender = HttpSender::with_resolver(
        UrlPolicy::Production,
        GuardedResolver::with_answers(UrlPolicy::Production, &[("rebound.example.com", LOOPBACK)]),
    );
    let url = format!("https://rebound.example.com:{}/hook", listener.port());
    assert_eq!(sender.post(&url, vec![], b"{}".to_vec()).await, Err(NOT_ALLOWED.to_owned()));
    assert!(!listener.connected(), "nothing reached the private address");
}

#[tokio::test]
async fn the_sender_refuses_private_literals_stored_before_the_policy() {
    let listener = Listener::bind();
    let sender = HttpSender::new(UrlPolicy::Production);
    for url in [
        format!("http://127.0.0.1:{}/hook", listener.port()),
        format!("https://127.0.0.1:{}/hook", listener.port()),
        format!("https://[::ffff:127.0.0.1]:{}/hook", listener.port()),
    ] {
        assert_eq!(sender.post(&url, vec![], b"{}".to_vec()).await, Err(NOT_ALLOWED.to_owned()), "{url}");
    }
    assert!(!listener.connected());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_the_local_stack_the_sender_reaches_loopback_through_the_guard() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let app = axum::Router::new().route("/hook", axum::routing::post(|| async { StatusCode::NO_CONTENT }));
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let sender = HttpSender::with_resolver(
        UrlPolicy::LocalStack,
        GuardedResolver::with_answers(UrlPolicy::LocalStack, &[("localhost", LOOPBACK)]),
    );
    let sent = sender.post(&format!("http://localhost:{port}/hook"), vec![], b"{}".to_vec()).await;
    assert_eq!(sent, Ok(204));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_attempts_list_says_only_that_the_destination_is_not_allowed() {
    let listener = Listener::bind();
    let local = TestApp::embedded().await;
    let user = local.create_user("guarded").await;
    let t = deployed(local);
    let url = format!("https://rebound.example.com:{}/hook", listener.port());
    let created = t.post("/v2/team/webhooks", json!({"url": url})).await;
    assert_eq!(created.status, StatusCode::OK, "{}", created.body);
    let id = created.body["id"].as_str().unwrap().to_owned();
    let event = wearlab_domain::ports::EventEnvelope {
        event_type: "provider.connection.created".into(),
        user_id: user.parse().unwrap(),
        client_user_id: "c".into(),
        team_id: t.team.as_uuid(),
        data: json!({"provider": "oura"}),
    };
    t.deps.bus.publish(vec![event]).await.unwrap();
    let sender = HttpSender::with_resolver(
        UrlPolicy::Production,
        GuardedResolver::with_answers(UrlPolicy::Production, &[("rebound.example.com", LOOPBACK)]),
    );
    let stack = t.stack.as_ref().unwrap();
    let ports = wearlab_domain::webhooks::WebhookPorts { queue: &stack.queue, sender: &sender };
    for _ in 0..3 {
        stack
            .queue
            .run_once(wearlab_domain::ports::QueueName::Webhook, |env, _| {
                webhook_worker::handle(&t.deps, ports, env)
            })
            .await
            .unwrap();
    }
    let attempts = t.get(&format!("/v2/team/webhooks/{id}/attempts")).await;
    let first = &attempts.body["data"][0];
    assert_eq!(first["outcome"], "failed", "{}", attempts.body);
    assert_eq!(first["error"], NOT_ALLOWED);
    assert_eq!(first["status_code"], serde_json::Value::Null);
    assert!(!listener.connected());
}

/// A receiver that records, per path, the most POSTs it held at once. It holds each POST until it
/// has held two at once on that path (so a sender allowing two is seen sending two, however its
/// tasks are scheduled), waiting at most 10 s for that (a sender allowing one is then seen
/// holding one), then answers after 10 ms more.
async fn slow_receiver()
-> (u16, std::sync::Arc<std::sync::Mutex<std::collections::HashMap<String, (usize, usize)>>>) {
    use std::sync::{Arc, Mutex};
    let seen: Arc<Mutex<std::collections::HashMap<String, (usize, usize)>>> = Arc::default();
    let counts = seen.clone();
    let app = axum::Router::new().route(
        "/{path}",
        axum::routing::post(move |axum::extract::Path(path): axum::extract::Path<String>| {
            let counts = counts.clone();
            async move {
                {
                    let mut c = counts.lock().unwrap();
                    let (now, most) = c.entry(path.clone()).or_default();
                    *now += 1;
                    *most = (*most).max(*now);
                }
                for _ in 0..1000 {
                    if counts.lock().unwrap()[&path].1 >= 2 {
                        break;
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                }
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                counts.lock().unwrap().get_mut(&path).unwrap().0 -= 1;
                StatusCode::NO_CONTENT
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (port, seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sender_holds_at_most_its_in_flight_limit_per_endpoint() {
    let (port, seen) = slow_receiver().await;
    let sender = HttpSender::new(UrlPolicy::LocalStack).with_in_flight(2);
    let posts = (0..12).map(|n| {
        let url = format!("http://127.0.0.1:{port}/{}", if n % 2 == 0 { "a" } else { "b" });
        let sender = &sender;
        async move { sender.post(&url, vec![], b"{}".to_vec()).await }
    });
    let answers = futures::future::join_all(posts).await;
    assert!(answers.iter().all(|a| *a == Ok(204)), "{answers:?}");
    let seen = seen.lock().unwrap().clone();
    // Each endpoint reached its limit (the receiver waits for a second POST before answering
    // the first) and never went over it: the other 4 of each waited for a slot.
    assert_eq!(seen["a"], (0, 2), "endpoint a: at most 2 at once, and it got 2");
    assert_eq!(seen["b"], (0, 2), "endpoint b has slots of its own");
}

#[test]
fn the_in_flight_setting_is_a_bounded_number_or_refused_by_name() {
    use wearlab_domain::common::settings::Settings;
    let read = |v: &str| Settings::from_vars(|n| (n == "WEARLAB_WEBHOOK_IN_FLIGHT").then(|| v.to_owned()));
    assert_eq!(Settings::from_vars(|_| None).unwrap().webhook_in_flight, 16, "the documented default");
    assert_eq!(read("4").unwrap().webhook_in_flight, 4);
    for bad in ["0", "1001", "-2", "many"] {
        let e = read(bad).unwrap_err();
        assert_eq!(e.variable, "WEARLAB_WEBHOOK_IN_FLIGHT", "{bad}");
        assert!(e.to_string().contains("WEARLAB_WEBHOOK_IN_FLIGHT"), "{bad}: {e}");
    }
}
