//! The EventBridge bus adapter against moto: a rule on the bus delivers Wearlab's events to an
//! SQS queue, in full, across PutEvents batches of 10. Needs `WEARLAB_TEST_AWS_ENDPOINT` and
//! fails without it (`make test` and `scripts/with-moto` set it).

use std::collections::HashSet;

use serde_json::{Value, json};
use wearlab_aws::{EVENT_SOURCE, EventBridgeBus, config_for_endpoint};
use wearlab_domain::ports::{EventBus, EventEnvelope};

/// The emulator's endpoint: without it these tests fail rather than pass having checked nothing.
fn endpoint() -> String {
    std::env::var("WEARLAB_TEST_AWS_ENDPOINT").ok().filter(|v| !v.is_empty()).expect(
        "WEARLAB_TEST_AWS_ENDPOINT is not set: run `make test` or `scripts/with-moto`, which start \
         moto_server, or start `moto_server -H 127.0.0.1 -p PORT` and set it to http://127.0.0.1:PORT",
    )
}

#[tokio::test]
async fn every_event_reaches_a_queue_subscribed_by_a_rule() {
    let endpoint = endpoint();
    let config = config_for_endpoint(&endpoint).await;
    let eb = aws_sdk_eventbridge::Client::new(&config);
    let sqs = aws_sdk_sqs::Client::new(&config);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let bus_name = format!("wearlab-bus-{nanos}");
    eb.create_event_bus().name(&bus_name).send().await.unwrap();
    let queue_url =
        sqs.create_queue().queue_name(format!("wearlab-q-{nanos}")).send().await.unwrap().queue_url.unwrap();
    let attrs = sqs
        .get_queue_attributes()
        .queue_url(&queue_url)
        .attribute_names(aws_sdk_sqs::types::QueueAttributeName::QueueArn)
        .send()
        .await
        .unwrap();
    let arn = attrs.attributes().unwrap()[&aws_sdk_sqs::types::QueueAttributeName::QueueArn].clone();
    eb.put_rule()
        .name("all-wearlab")
        .event_bus_name(&bus_name)
        .event_pattern(json!({"source": [EVENT_SOURCE]}).to_string())
        .send()
        .await
        .unwrap();
    eb.put_targets()
        .rule("all-wearlab")
        .event_bus_name(&bus_name)
        .targets(aws_sdk_eventbridge::types::Target::builder().id("q").arn(arn).build().unwrap())
        .send()
        .await
        .unwrap();

    let bus = EventBridgeBus::new(eb, &bus_name);
    let events: Vec<EventEnvelope> = (0..23)
        .map(|i| EventEnvelope {
            event_type: "provider.connection.created".into(),
            user_id: uuid::Uuid::from_u128(i),
            client_user_id: format!("client-{i}"),
            team_id: uuid::Uuid::from_u128(1000),
            data: json!({"n": i}),
        })
        .collect();
    bus.publish(events).await.expect("published in 3 batches");

    let mut seen = HashSet::new();
    for _ in 0..50 {
        let out =
            sqs.receive_message().queue_url(&queue_url).max_number_of_messages(10).send().await.unwrap();
        for m in out.messages() {
            let v: Value = serde_json::from_str(m.body().unwrap()).unwrap();
            assert_eq!(v["source"], EVENT_SOURCE);
            assert_eq!(v["detail-type"], "provider.connection.created");
            assert_eq!(v["detail"]["team_id"], uuid::Uuid::from_u128(1000).to_string());
            seen.insert(v["detail"]["data"]["n"].as_u64().unwrap());
            sqs.delete_message()
                .queue_url(&queue_url)
                .receipt_handle(m.receipt_handle().unwrap())
                .send()
                .await
                .unwrap();
        }
        if seen.len() == 23 {
            break;
        }
    }
    assert_eq!(seen, (0..23).collect::<HashSet<u64>>());
}
