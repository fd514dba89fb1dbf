use std::sync::Arc;

use http::{Method, StatusCode};
use serde_json::{Value, json};
use wearlab_domain::Deps;
use wearlab_domain::ports::ManualClock;
use wearlab_local::LocalStack;

use super::connect_password;
use crate::helpers::{TestApp, moto_endpoint, moto_table, start_time};

fn assert_connection_created(e: &Value, t: &TestApp, user: &str, client_user_id: &str, provider: &str) {
    assert_eq!(e["event_type"], "provider.connection.created");
    assert_eq!(e["user_id"], user);
    assert_eq!(e["client_user_id"], client_user_id);
    assert_eq!(e["team_id"], t.team.to_string());
    assert_eq!(e["data"]["user_id"], user);
    assert_eq!(e["data"]["provider"]["slug"], provider);
    assert!(e["data"]["provider"]["name"].is_string());
    assert!(e["data"]["provider"].get("logo").is_some());
    assert_eq!(e["data"]["source"], e["data"]["provider"], "deprecated source carries the same");
}

#[tokio::test]
async fn connection_created_is_published_on_the_embedded_bus() {
    let t = TestApp::embedded().await;
    let bus = t.stack.as_ref().unwrap().bus.clone();
    let user = t.create_user("ev-1").await;
    connect_password(&t, &user, "peloton", "jane").await;
    super::connect_demo(&t, &user, "oura").await;
    let events: Vec<Value> = bus
        .published()
        .iter()
        .filter(|e| e.event_type == "provider.connection.created")
        .map(|e| serde_json::to_value(e).unwrap())
        .collect();
    assert_eq!(events.len(), 2);
    assert_connection_created(&events[0], &t, &user, "ev-1", "peloton");
    assert_connection_created(&events[1], &t, &user, "ev-1", "oura");
    // A failed link publishes nothing.
    let before = bus.published().len();
    let tk = super::link_token(&t, &user, json!({})).await;
    super::password_link(&t, "zwift", Some(&tk), "bad-credentials").await;
    assert_eq!(bus.published().len(), before);
}

#[tokio::test]
async fn local_stack_lists_published_events() {
    let clock = Arc::new(ManualClock::new(start_time()));
    let stack = LocalStack::in_memory(clock.clone());
    let mut t = TestApp::on(stack.deps.clone(), clock).await;
    t.app = stack.app(crate::helpers::state(&stack.deps));
    let user = t.create_user("ev-2").await;
    super::connect_demo(&t, &user, "fitbit").await;
    let a = t.get("/local/events?event_type=provider.connection.created").await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.body.as_array().unwrap().len(), 1);
    assert_connection_created(&a.body[0], &t, &user, "ev-2", "fitbit");
    let none = t.get("/local/events?event_type=nothing.happened").await;
    assert_eq!(none.body, json!([]));
    let last = t.get("/local/events?limit=1").await;
    assert_eq!(last.body.as_array().unwrap().len(), 1);
    // The key's team only, and never without a key.
    let anonymous = t.send(Method::GET, "/local/events", None, None).await;
    assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);
    let other = t.other_team_key().await;
    let theirs = t.send(Method::GET, "/local/events", Some(&other), None).await;
    assert_eq!(theirs.status, StatusCode::OK);
    assert_eq!(theirs.body, json!([]));
}

/// Through moto: the DynamoDB table, the EventBridge bus adapter, a rule on the bus that
/// delivers Wearlab's connection events to an SQS queue.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_created_reaches_an_sqs_queue_through_an_eventbridge_rule() {
    let config = wearlab_aws::config_for_endpoint(&moto_endpoint()).await;
    let eb = aws_sdk_eventbridge::Client::new(&config);
    let sqs = aws_sdk_sqs::Client::new(&config);
    let suffix = uuid::Uuid::new_v4().simple().to_string();
    let bus_name = format!("wearlab-test-{suffix}");
    eb.create_event_bus().name(&bus_name).send().await.expect("bus created");
    let queue_url = sqs
        .create_queue()
        .queue_name(format!("wearlab-events-{suffix}"))
        .send()
        .await
        .unwrap()
        .queue_url
        .unwrap();
    let attrs = sqs
        .get_queue_attributes()
        .queue_url(&queue_url)
        .attribute_names(aws_sdk_sqs::types::QueueAttributeName::QueueArn)
        .send()
        .await
        .unwrap();
    let queue_arn = attrs.attributes().unwrap()[&aws_sdk_sqs::types::QueueAttributeName::QueueArn].clone();
    eb.put_rule()
        .name("connections")
        .event_bus_name(&bus_name)
        .event_pattern(
            json!({"source": [wearlab_aws::EVENT_SOURCE], "detail-type": ["provider.connection.created"]})
                .to_string(),
        )
        .send()
        .await
        .expect("rule created");
    eb.put_targets()
        .rule("connections")
        .event_bus_name(&bus_name)
        .targets(aws_sdk_eventbridge::types::Target::builder().id("queue").arn(&queue_arn).build().unwrap())
        .send()
        .await
        .expect("target set");

    let clock = Arc::new(ManualClock::new(start_time()));
    let (_, sched) = wearlab_aws::clients_for_endpoint(&moto_endpoint()).await;
    wearlab_aws::ensure_schedule_group(&sched, "default").await.unwrap();
    let deps = Deps {
        table: Arc::new(moto_table().await),
        scheduler: Arc::new(wearlab_aws::EventBridgeScheduler::new(
            sched,
            wearlab_aws::SchedulerTarget {
                group: "default".into(),
                target_arn: "arn:aws:lambda:us-east-1:123456789012:function:erasure-worker".into(),
                role_arn: "arn:aws:iam::123456789012:role/wearlab-scheduler".into(),
            },
        )),
        clock: clock.clone(),
        bus: Arc::new(wearlab_aws::EventBridgeBus::new(eb.clone(), &bus_name)),
        providers: Arc::new(wearlab_sim::SimProviders::new(clock.clone())),
        data_key: Arc::new(wearlab_domain::common::crypto::DataKey::ephemeral()),
    };
    let t = TestApp::on(deps, clock).await;
    let user = t.create_user("ev-moto").await;
    connect_password(&t, &user, "renpho", "jane").await;
    // The whole linking flow works on DynamoDB too.
    assert_eq!(t.get(&format!("/v2/user/providers/{user}")).await.body["providers"][0]["slug"], "renpho");
    assert_eq!(
        t.get(&format!("/v2/user/{user}")).await.body["connected_sources"][0]["provider"]["slug"],
        "renpho"
    );

    let mut bodies = Vec::new();
    for _ in 0..20 {
        let out =
            sqs.receive_message().queue_url(&queue_url).max_number_of_messages(10).send().await.unwrap();
        bodies.extend(out.messages().iter().filter_map(|m| m.body().map(str::to_owned)));
        if !bodies.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(bodies.len(), 1, "{bodies:?}");
    let event: Value = serde_json::from_str(&bodies[0]).unwrap();
    assert_eq!(event["source"], wearlab_aws::EVENT_SOURCE);
    assert_eq!(event["detail-type"], "provider.connection.created");
    assert_connection_created(&event["detail"], &t, &user, "ev-moto", "renpho");

    // Deleting the user removes its connection items on DynamoDB too.
    assert_eq!(t.delete(&format!("/v2/user/{user}")).await.status, StatusCode::OK);
    let uid = wearlab_domain::common::ids::UserId::parse(&user).unwrap();
    let q = wearlab_domain::ports::Query::partition(wearlab_domain::keys::user_partition(uid))
        .prefix(wearlab_domain::keys::linking::CONNECTION_PREFIX);
    assert!(wearlab_domain::ports::query_all(t.deps.table.as_ref(), q, 10).await.unwrap().is_empty());
}
