//! Queue behaviour on both adapters: the table-backed queue of the local stack (leases,
//! redelivery after a crash, backoff, dead letters, delays, restart) and SQS on moto (batches,
//! long delays, partial batch responses).

use std::sync::Arc;
use std::time::Duration;

use chrono::Duration as Span;
use serde_json::json;
use wearlab_domain::ports::{Clock, ManualClock, Outcome, Outgoing, Queue, QueueName};
use wearlab_embedded::{RedbTable, TableQueue};

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
        for _ in 0..20 {
            attempts +=
                q.run_once(QueueName::Webhook, |_, _| async { Outcome::Fail("boom".into()) }).await.unwrap();
            clock.advance(Span::seconds(61));
        }
        assert_eq!(attempts, 5, "dead-lettered after 5 deliveries (docs/ARCHITECTURE.md, Queues)");
        assert_eq!(q.depth(QueueName::Webhook).await.unwrap(), 0);
        assert_eq!(q.dead_lettered(QueueName::Webhook).await.unwrap()[0].body, json!({"poison": true}));
    }

    #[tokio::test]
    async fn retry_after_is_not_a_failed_delivery() {
        let (q, clock) = table_queue();
        q.send(QueueName::Pull, vec![Outgoing::now(json!({}))]).await.unwrap();
        for _ in 0..10 {
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

    /// A pull job carrying a token-like secret in a field no listing may show.
    fn secret_job(n: u32) -> serde_json::Value {
        json!({"pull": {"team_id": "team-1", "user_id": format!("user-{n}"), "provider": "fitbit",
            "pull_id": format!("pull-{n}"), "access_token": "SECRET-TOKEN", "client_user_id": "jane@example.com"}})
    }

    #[tokio::test]
    async fn dead_letters_are_listed_without_payload_and_redriven() {
        let (q, clock) = table_queue();
        q.send(QueueName::Pull, (0..3).map(|n| Outgoing::now(secret_job(n))).collect()).await.unwrap();
        for _ in 0..20 {
            q.run_once(QueueName::Pull, |_, _| async { Outcome::Fail("boom".into()) }).await.unwrap();
            clock.advance(Span::seconds(61));
        }
        let listing = q.list_dead_letters(QueueName::Pull, 2).await.unwrap();
        assert_eq!((listing.count, listing.messages.len()), (3, 2));
        let m = &listing.messages[0];
        assert_eq!((m.ids.kind.as_str(), m.ids.team_id.as_deref()), ("pull", Some("team-1")));
        assert_eq!((m.ids.provider.as_deref(), m.receive_count), (Some("fitbit"), 5));
        assert!(m.age_seconds.unwrap() > 0);
        let text = serde_json::to_string(&listing).unwrap();
        assert!(!text.contains("SECRET") && !text.contains("jane"), "{text}");

        assert_eq!(q.redrive_dead_letters(QueueName::Pull, 2).await.unwrap().moved, 2);
        assert_eq!(q.redrive_dead_letters(QueueName::Pull, 10).await.unwrap().moved, 1);
        assert!(q.dead_lettered(QueueName::Pull).await.unwrap().is_empty());
        let seen = std::sync::Mutex::new(vec![]);
        q.run_once(QueueName::Pull, |env, attempt| {
            seen.lock().unwrap().push((env.body["pull"]["pull_id"].as_str().unwrap().to_owned(), attempt));
            async { Outcome::Ack }
        })
        .await
        .unwrap();
        let mut seen = seen.into_inner().unwrap();
        seen.sort();
        let want: Vec<_> = (0..3).map(|n| (format!("pull-{n}"), 1)).collect();
        assert_eq!(seen, want, "redriven as fresh messages, due now");
    }
}

mod sqs_moto {
    use super::*;
    use std::collections::HashMap;
    use std::sync::Mutex;

    use aws_sdk_sqs::config::interceptors::BeforeSerializationInterceptorContextRef;
    use aws_sdk_sqs::config::{ConfigBag, Intercept};
    use aws_sdk_sqs::error::BoxError;
    use aws_sdk_sqs::operation::send_message_batch::SendMessageBatchInput;

    /// What each SendMessageBatch call asked of SQS. Delayed
    /// messages cannot be received before their delay, so tests read what was sent here instead
    /// of waiting for it in real time.
    #[derive(Debug, Clone, Default)]
    struct SentBatches(Arc<Mutex<Vec<Batch>>>);

    /// One SendMessageBatch call: each entry's body and delay in seconds.
    type Batch = Vec<(serde_json::Value, i32)>;

    impl SentBatches {
        fn calls(&self) -> Vec<Batch> {
            self.0.lock().unwrap().clone()
        }
    }

    impl Intercept for SentBatches {
        fn name(&self) -> &'static str {
            "SentBatches"
        }

        fn read_before_execution(
            &self,
            context: &BeforeSerializationInterceptorContextRef<'_>,
            _cfg: &mut ConfigBag,
        ) -> Result<(), BoxError> {
            if let Some(input) = context.input().downcast_ref::<SendMessageBatchInput>() {
                let entries = input
                    .entries()
                    .iter()
                    .map(|e| {
                        (serde_json::from_str(e.message_body()).unwrap(), e.delay_seconds().unwrap_or(0))
                    })
                    .collect();
                self.0.lock().unwrap().push(entries);
            }
            Ok(())
        }
    }

    struct Sqs {
        client: aws_sdk_sqs::Client,
        queue: wearlab_aws::SqsQueue,
        url: String,
        clock: Arc<ManualClock>,
        sent: SentBatches,
    }

    async fn sqs() -> Sqs {
        let config = aws_config_for_moto().await;
        let sent = SentBatches::default();
        let client = aws_sdk_sqs::Client::from_conf(
            aws_sdk_sqs::config::Builder::from(&config).interceptor(sent.clone()).build(),
        );
        let name = format!("wearlab-test-{}", uuid::Uuid::new_v4().simple());
        let url =
            client.create_queue().queue_name(name).send().await.unwrap().queue_url().unwrap().to_owned();
        let clock = Arc::new(ManualClock::new(chrono::Utc::now()));
        let queue = wearlab_aws::SqsQueue::new(
            client.clone(),
            HashMap::from([(QueueName::Pull, url.clone())]),
            clock.clone(),
        );
        Sqs { client, queue, url, clock, sent }
    }

    /// Messages on the queue that are still within their delay.
    async fn delayed(client: &aws_sdk_sqs::Client, url: &str) -> u64 {
        let name = aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessagesDelayed;
        let out = client.get_queue_attributes().queue_url(url).attribute_names(name.clone()).send().await;
        out.unwrap().attributes().unwrap()[&name].parse().unwrap()
    }

    async fn aws_config_for_moto() -> aws_config::SdkConfig {
        wearlab_aws::config_for_endpoint(&moto_endpoint()).await
    }

    pub(super) async fn drain(client: &aws_sdk_sqs::Client, url: &str) -> Vec<serde_json::Value> {
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
        let Sqs { client, queue, url, sent, .. } = sqs().await;
        queue
            .send(QueueName::Pull, (0..25).map(|n| Outgoing::now(json!({ "n": n }))).collect())
            .await
            .unwrap();
        assert_eq!(queue.send_batch_calls(), 3, "25 messages take three SendMessageBatch calls");
        let sizes: Vec<usize> = sent.calls().iter().map(Vec::len).collect();
        assert_eq!(sizes, [10, 10, 5]);
        let got = drain(&client, &url).await;
        let mut numbers: Vec<u64> = got.iter().map(|e| e["body"]["n"].as_u64().unwrap()).collect();
        numbers.sort();
        assert_eq!(numbers, (0..25).collect::<Vec<u64>>(), "each message read back once");
        let err = queue.send(QueueName::Webhook, vec![Outgoing::now(json!({}))]).await;
        assert!(err.is_err(), "an unconfigured queue is an error, not a silent drop");
        assert_eq!(queue.send_batch_calls(), 3);
    }

    #[tokio::test]
    async fn long_waits_ride_in_the_envelope() {
        let Sqs { client, queue, url, clock, sent } = sqs().await;
        let later = clock.now() + Span::hours(3);
        queue.send(QueueName::Pull, vec![Outgoing::at(json!({"k": "late"}), later)]).await.unwrap();
        let calls = sent.calls();
        assert_eq!(calls.len(), 1);
        let (body, delay) = &calls[0][0];
        assert_eq!(*delay, 900, "SQS's maximum delay");
        assert_eq!(body["body"], json!({"k": "late"}));
        let not_before: chrono::DateTime<chrono::Utc> =
            serde_json::from_value(body["not_before"].clone()).unwrap();
        assert_eq!(not_before, later, "the rest of the wait rides in the envelope");
        assert_eq!(delayed(&client, &url).await, 1, "the message is on the queue, held by its delay");
        assert!(drain(&client, &url).await.is_empty(), "not receivable before its delay");
    }

    #[tokio::test]
    async fn partial_batch_response_names_only_failures() {
        let Sqs { client, queue, url, clock, sent } = sqs().await;
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
        // The retry-later message went back on the queue with its due time (delay 5 s): read
        // from what was sent, as a delayed message cannot be received before its delay.
        let calls = sent.calls();
        assert_eq!(calls.len(), 1, "only the retry-later message was re-sent");
        let (body, delay) = &calls[0][0];
        assert_eq!((&body["body"], *delay), (&json!("later"), 5));
        let not_before: chrono::DateTime<chrono::Utc> =
            serde_json::from_value(body["not_before"].clone()).unwrap();
        assert_eq!(not_before, clock.now() + Span::seconds(5));
        assert_eq!(delayed(&client, &url).await, 1);
    }
}

mod dead_letters_moto {
    use aws_sdk_sqs::types::QueueAttributeName;

    use super::*;
    use crate::queues::sqs_moto::drain;

    #[tokio::test]
    async fn dead_letters_are_listed_without_payload_and_redriven_to_the_source() {
        let config = wearlab_aws::config_for_endpoint(&moto_endpoint()).await;
        let client = aws_sdk_sqs::Client::new(&config);
        let name = format!("wearlab-dlq-test-{}", uuid::Uuid::new_v4().simple());
        let create = |n: String| client.create_queue().queue_name(n).send();
        let dlq_url = create(format!("{name}-dlq")).await.unwrap().queue_url.unwrap();
        let arn_attr = client
            .get_queue_attributes()
            .queue_url(&dlq_url)
            .attribute_names(QueueAttributeName::QueueArn)
            .send()
            .await
            .unwrap();
        let dlq_arn = arn_attr.attributes().unwrap()[&QueueAttributeName::QueueArn].clone();
        let source_url = client
            .create_queue()
            .queue_name(&name)
            .attributes(
                QueueAttributeName::RedrivePolicy,
                json!({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": 5}).to_string(),
            )
            .send()
            .await
            .unwrap()
            .queue_url
            .unwrap();
        for n in 0..13 {
            let body = json!({"body": {"kind": "import", "op": {"team_id": "team-1", "op_id": "op-1",
                "started_at": "2026-01-01T00:00:00Z"}, "chunk": n, "items": 1, "recipes": "SEALED-SECRET"}});
            client.send_message().queue_url(&dlq_url).message_body(body.to_string()).send().await.unwrap();
        }

        let dlq = wearlab_aws::SqsDeadLetters::for_source(client.clone(), "bulk", &source_url).await.unwrap();
        assert_eq!(dlq.dlq_url(), dlq_url, "found by the source queue's redrive policy");
        let listing = dlq.list(5, chrono::Utc::now()).await.unwrap();
        assert_eq!((listing.count, listing.messages.len()), (13, 5));
        let m = &listing.messages[0];
        assert_eq!((m.ids.kind.as_str(), m.ids.team_id.as_deref()), ("import", Some("team-1")));
        assert_eq!(m.ids.op_id.as_deref(), Some("op-1"));
        assert!(m.receive_count >= 1 && m.age_seconds.is_some());
        let text = serde_json::to_string(&listing).unwrap();
        assert!(!text.contains("SECRET") && !text.contains("recipes"), "{text}");

        // Listed messages are visible again: all of them move.
        assert_eq!(dlq.redrive(10).await.unwrap().moved, 10);
        assert_eq!(dlq.redrive(100).await.unwrap().moved, 3);
        assert_eq!(dlq.list(10, chrono::Utc::now()).await.unwrap().count, 0, "the DLQ is empty");
        let mut chunks: Vec<u64> =
            drain(&client, &source_url).await.iter().map(|v| v["body"]["chunk"].as_u64().unwrap()).collect();
        chunks.sort();
        assert_eq!(chunks, (0..13).collect::<Vec<_>>(), "every message on the source queue, once");
    }
}
