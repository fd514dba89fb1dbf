//! Queue behaviour on both adapters: the table-backed queue of the local stack (leases,
//! redelivery after a crash, backoff, dead letters, delays, restart) and SQS on moto (batches,
//! long delays, partial batch responses).

use std::sync::Arc;
use std::time::Duration;

use chrono::Duration as Span;
use serde_json::json;
use wearlab_domain::ports::{Clock, ManualClock, Outcome, Outgoing, Queue, QueueName};
use wearlab_embedded::{MAX_ATTEMPTS, RedbTable, TableQueue};

use crate::helpers::{moto_endpoint, start_time};

fn table_queue() -> (TableQueue, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(start_time()));
    (TableQueue::new(Arc::new(RedbTable::in_memory()), clock.clone()), clock)
}

mod embedded {
    use super::*;

    #[tokio::test]
    async fn messages_are_handled_once_and_acked() {
        let (q, _) = table_queue();
        q.send(QueueName::Pull, (0..3).map(|n| Outgoing::now(json!({ "n": n }))).collect()).await.unwrap();
        let seen = std::sync::Mutex::new(vec![]);
        let handled = q
            .run_once(QueueName::Pull, |env, attempt| {
                seen.lock().unwrap().push((env.body["n"].as_u64().unwrap(), attempt));
                async { Outcome::Ack }
            })
            .await
            .unwrap();
        assert_eq!(handled, 3);
        let mut seen = seen.into_inner().unwrap();
        seen.sort();
        assert_eq!(seen, [(0, 1), (1, 1), (2, 1)]);
        assert_eq!(q.depth(QueueName::Pull).await.unwrap(), 0);
        assert_eq!(q.depth(QueueName::Bulk).await.unwrap(), 0, "queues are separate");
    }

    #[tokio::test]
    async fn delayed_messages_wait_even_beyond_15_minutes() {
        let (q, clock) = table_queue();
        q.send(QueueName::Pull, vec![Outgoing::at(json!({}), clock.now() + Span::hours(2))]).await.unwrap();
        assert_eq!(q.run_once(QueueName::Pull, |_, _| async { Outcome::Ack }).await.unwrap(), 0);
        clock.advance(Span::hours(2));
        assert_eq!(q.run_once(QueueName::Pull, |_, _| async { Outcome::Ack }).await.unwrap(), 1);
    }

    #[tokio::test]
    async fn a_retry_due_exactly_when_the_lease_ends_is_kept() {
        let (q, clock) = table_queue();
        q.send(QueueName::Pull, vec![Outgoing::now(json!({"k": 1}))]).await.unwrap();
        let lease = wearlab_embedded::VISIBILITY;
        let n = q.run_once(QueueName::Pull, |_, _| async move { Outcome::RetryAfter(lease) }).await.unwrap();
        assert_eq!(n, 1);
        assert_eq!(q.depth(QueueName::Pull).await.unwrap(), 1);
        clock.advance(Span::seconds(60));
        assert_eq!(q.run_once(QueueName::Pull, |_, _| async { Outcome::Ack }).await.unwrap(), 1);
        assert_eq!(q.depth(QueueName::Pull).await.unwrap(), 0);
    }

    #[tokio::test]
    async fn a_crashed_consumer_loses_nothing() {
        let (q, clock) = table_queue();
        q.send(QueueName::Bulk, vec![Outgoing::now(json!({"k": 1}))]).await.unwrap();
        let leased = q.receive(QueueName::Bulk, 10).await.unwrap();
        assert_eq!(leased.len(), 1);
        // The consumer dies without answering: the message is invisible, then comes back.
        assert!(q.receive(QueueName::Bulk, 10).await.unwrap().is_empty());
        clock.advance(Span::seconds(61));
        let again = q.receive(QueueName::Bulk, 10).await.unwrap();
        assert_eq!(again.len(), 1);
        assert_eq!(again[0].attempt, 2);
        assert_eq!(again[0].envelope.body, json!({"k": 1}));
    }

    #[tokio::test]
    async fn failures_back_off_then_dead_letter() {
        let (q, clock) = table_queue();
        q.send(QueueName::Webhook, vec![Outgoing::now(json!({"poison": true}))]).await.unwrap();
        let mut attempts = 0;
        for _ in 0..(MAX_ATTEMPTS * 4) {
            attempts +=
                q.run_once(QueueName::Webhook, |_, _| async { Outcome::Fail("boom".into()) }).await.unwrap();
            clock.advance(Span::seconds(61));
        }
        assert_eq!(attempts, MAX_ATTEMPTS as usize);
        assert_eq!(q.depth(QueueName::Webhook).await.unwrap(), 0);
        assert_eq!(q.dead_lettered(QueueName::Webhook).await.unwrap()[0].body, json!({"poison": true}));
    }

    #[tokio::test]
    async fn retry_after_is_not_a_failed_delivery() {
        let (q, clock) = table_queue();
        q.send(QueueName::Pull, vec![Outgoing::now(json!({}))]).await.unwrap();
        for _ in 0..(MAX_ATTEMPTS * 2) {
            let n = q
                .run_once(QueueName::Pull, |_, _| async { Outcome::RetryAfter(Duration::from_secs(30)) })
                .await;
            assert_eq!(n.unwrap(), 1);
            assert_eq!(
                q.run_once(QueueName::Pull, |_, _| async { Outcome::Ack }).await.unwrap(),
                0,
                "not before 30 s"
            );
            clock.advance(Span::seconds(30));
        }
        assert!(q.dead_lettered(QueueName::Pull).await.unwrap().is_empty());
        assert_eq!(
            q.run_once(QueueName::Pull, |_, attempt| async move {
                assert_eq!(attempt, 1, "waiting did not use up attempts");
                Outcome::Ack
            })
            .await
            .unwrap(),
            1
        );
    }

    #[tokio::test]
    async fn messages_survive_a_restart() {
        let dir = std::env::temp_dir().join(format!("wearlab-queue-{}", uuid::Uuid::new_v4().simple()));
        let clock = Arc::new(ManualClock::new(start_time()));
        {
            let q = TableQueue::new(Arc::new(RedbTable::open(&dir.join("q.redb")).unwrap()), clock.clone());
            q.send(QueueName::Bulk, vec![Outgoing::now(json!({"kept": true}))]).await.unwrap();
        }
        let q = TableQueue::new(Arc::new(RedbTable::open(&dir.join("q.redb")).unwrap()), clock);
        let got = q.receive(QueueName::Bulk, 10).await.unwrap();
        assert_eq!(got[0].envelope.body, json!({"kept": true}));
        let _ = std::fs::remove_dir_all(dir);
    }
}

mod sqs_moto {
    use super::*;
    use std::collections::HashMap;

    async fn sqs() -> (aws_sdk_sqs::Client, wearlab_aws::SqsQueue, String, Arc<ManualClock>) {
        let config = aws_config_for_moto().await;
        let client = aws_sdk_sqs::Client::new(&config);
        let name = format!("wearlab-test-{}", uuid::Uuid::new_v4().simple());
        let url =
            client.create_queue().queue_name(name).send().await.unwrap().queue_url().unwrap().to_owned();
        let clock = Arc::new(ManualClock::new(chrono::Utc::now()));
        let queue = wearlab_aws::SqsQueue::new(
            client.clone(),
            HashMap::from([(QueueName::Pull, url.clone())]),
            clock.clone(),
        );
        (client, queue, url, clock)
    }

    async fn aws_config_for_moto() -> aws_config::SdkConfig {
        wearlab_aws::config_for_endpoint(&moto_endpoint()).await
    }

    async fn drain(client: &aws_sdk_sqs::Client, url: &str) -> Vec<serde_json::Value> {
        let mut out = vec![];
        for _ in 0..20 {
            let r = client.receive_message().queue_url(url).max_number_of_messages(10).send().await.unwrap();
            if r.messages().is_empty() {
                break;
            }
            for m in r.messages() {
                out.push(serde_json::from_str(m.body().unwrap()).unwrap());
                client
                    .delete_message()
                    .queue_url(url)
                    .receipt_handle(m.receipt_handle().unwrap())
                    .send()
                    .await
                    .unwrap();
            }
        }
        out
    }

    #[tokio::test]
    async fn sends_in_batches_of_ten() {
        let (client, queue, url, _) = sqs().await;
        queue
            .send(QueueName::Pull, (0..25).map(|n| Outgoing::now(json!({ "n": n }))).collect())
            .await
            .unwrap();
        let got = drain(&client, &url).await;
        assert_eq!(got.len(), 25);
        assert!(got.iter().all(|e| e["body"]["n"].is_u64()));
        let err = queue.send(QueueName::Webhook, vec![Outgoing::now(json!({}))]).await;
        assert!(err.is_err(), "an unconfigured queue is an error, not a silent drop");
    }

    #[tokio::test]
    async fn long_waits_ride_in_the_envelope() {
        let (_, queue, _, clock) = sqs().await;
        let later = clock.now() + Span::hours(3);
        let (envelope, delay) = Outgoing::at(json!({}), later).envelope(clock.now());
        assert_eq!(delay, Duration::from_secs(900), "SQS's maximum");
        assert_eq!(envelope.not_before, Some(later));
        queue.send(QueueName::Pull, vec![Outgoing::at(json!({}), later)]).await.unwrap();
    }

    #[tokio::test]
    async fn partial_batch_response_names_only_failures() {
        let (client, queue, url, _) = sqs().await;
        let record = |id: &str, body: serde_json::Value| {
            json!({"messageId": id, "body": serde_json::to_string(&json!({"body": body})).unwrap(),
                   "attributes": {"ApproximateReceiveCount": "1"}})
        };
        let event: aws_lambda_events::sqs::SqsEvent = serde_json::from_value(json!({"Records": [
            record("a", json!("ack")), record("b", json!("fail")), record("c", json!("later")),
            {"messageId": "d", "body": "not json", "attributes": {}}
        ]}))
        .unwrap();
        let response = wearlab_aws::handle_sqs_batch(&queue, QueueName::Pull, event, |env, _| async move {
            match env.body.as_str() {
                Some("ack") => Outcome::Ack,
                Some("later") => Outcome::RetryAfter(Duration::from_secs(5)),
                _ => Outcome::Fail("no".into()),
            }
        })
        .await;
        let failed: Vec<_> = response.batch_item_failures.iter().map(|f| f.item_identifier.clone()).collect();
        assert_eq!(failed, ["b", "d"]);
        // The retry-later message went back on the queue with its due time (delay 5 s).
        tokio::time::sleep(Duration::from_millis(5500)).await;
        let resent = drain(&client, &url).await;
        assert_eq!(resent.len(), 1);
        assert_eq!(resent[0]["body"], "later");
        assert!(resent[0]["not_before"].is_string());
    }
}
