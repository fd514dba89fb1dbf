//! Smoke tests of the AWS adapters against an emulator (moto). They need
//! `WEARLAB_TEST_AWS_ENDPOINT` (and fail without it), e.g.:
//!
//! ```sh
//! moto_server -H 127.0.0.1 -p 5055 &
//! WEARLAB_TEST_AWS_ENDPOINT=http://127.0.0.1:5055 cargo test -p wearlab-aws --test moto_smoke
//! ```

use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{TimeZone, Utc};
use serde_json::json;
use wearlab_aws::{
    DynamoDbTable, EventBridgeScheduler, SchedulerTarget, TTL_ATTRIBUTE, clients_for_endpoint,
    ensure_schedule_group, ensure_table,
};
use wearlab_domain::ports::{
    Condition, Item, Key, MAX_BATCH, Query, Schedule, Scheduler, StoreError, Table, WriteOp, query_all,
};

/// The emulator's endpoint: without it these tests fail rather than pass having checked nothing.
fn endpoint() -> String {
    std::env::var("WEARLAB_TEST_AWS_ENDPOINT").ok().filter(|v| !v.is_empty()).expect(
        "WEARLAB_TEST_AWS_ENDPOINT is not set: run `make test` or `scripts/with-moto`, which start \
         moto_server, or start `moto_server -H 127.0.0.1 -p PORT` and set it to http://127.0.0.1:PORT",
    )
}

/// A fresh table per test, so tests run in parallel against one emulator.
async fn table(test: &str) -> (DynamoDbTable, aws_sdk_dynamodb::Client) {
    let (client, _) = clients_for_endpoint(&endpoint()).await;
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let name = format!("wearlab-{test}-{nanos}");
    ensure_table(&client, &name).await.expect("table created");
    ensure_table(&client, &name).await.expect("ensure_table is idempotent");
    (DynamoDbTable::new(client.clone(), name), client)
}

fn item(pk: &str, sk: &str) -> Item {
    Item::new(Key::new(pk, sk), json!({ "pk": pk, "sk": sk }))
}

fn sks(items: &[Item]) -> Vec<&str> {
    items.iter().map(|i| i.key.sk.as_str()).collect()
}

#[tokio::test]
async fn conditional_writes_and_versions() {
    let (t, _) = table("cond").await;
    let a = item("P", "a");
    t.put(a.clone(), Condition::NotExists).await.unwrap();
    assert_eq!(t.put(a.clone(), Condition::NotExists).await, Err(StoreError::ConditionFailed { op: None }));
    assert_eq!(t.put(item("P", "b"), Condition::Exists).await, Err(StoreError::ConditionFailed { op: None }));
    assert_eq!(t.get(&a.key).await.unwrap(), Some(a.clone()));
    assert_eq!(t.get(&Key::new("P", "zz")).await.unwrap(), None);

    let mut v2 = a.clone();
    v2.version = 2;
    v2.body = json!({"changed": true});
    t.put(v2.clone(), Condition::VersionIs(1)).await.unwrap();
    assert_eq!(
        t.put(v2.clone(), Condition::VersionIs(1)).await,
        Err(StoreError::ConditionFailed { op: None })
    );
    assert_eq!(t.get(&a.key).await.unwrap(), Some(v2.clone()));
    assert_eq!(
        t.put(item("P", "missing"), Condition::VersionIs(1)).await,
        Err(StoreError::ConditionFailed { op: None })
    );

    assert_eq!(
        t.delete(&a.key, Condition::VersionIs(1)).await,
        Err(StoreError::ConditionFailed { op: None })
    );
    t.delete(&a.key, Condition::VersionIs(2)).await.unwrap();
    assert_eq!(t.delete(&a.key, Condition::Exists).await, Err(StoreError::ConditionFailed { op: None }));
    t.delete(&a.key, Condition::None).await.unwrap();
    assert!(t.round_trips() >= 12, "round trips counted: {}", t.round_trips());
}

#[tokio::test]
async fn transactions_are_all_or_nothing() {
    let (t, _) = table("tx").await;
    t.put(item("T", "exists"), Condition::None).await.unwrap();
    t.transact(Vec::new()).await.unwrap();

    let before = t.round_trips();
    let failing = vec![
        WriteOp::Put { item: item("T", "new1"), condition: Condition::NotExists },
        WriteOp::Delete { key: Key::new("T", "exists"), condition: Condition::Exists },
        WriteOp::Check { key: Key::new("T", "nope"), condition: Condition::Exists },
        WriteOp::Put { item: item("T", "new2"), condition: Condition::None },
    ];
    assert_eq!(t.transact(failing).await, Err(StoreError::ConditionFailed { op: Some(2) }));
    assert_eq!(t.round_trips(), before + 1);
    assert_eq!(sks(&query_all(&t, Query::partition("T"), 100).await.unwrap()), ["exists"]);

    let single = vec![WriteOp::Put { item: item("T", "exists"), condition: Condition::NotExists }];
    assert_eq!(t.transact(single).await, Err(StoreError::ConditionFailed { op: None }));

    let ok = vec![
        WriteOp::Put { item: item("T", "new1").with_gsi1("G", "1"), condition: Condition::NotExists },
        WriteOp::Delete { key: Key::new("T", "exists"), condition: Condition::VersionIs(1) },
        WriteOp::Check { key: Key::new("T", "anything"), condition: Condition::None },
    ];
    t.transact(ok).await.unwrap();
    assert_eq!(sks(&query_all(&t, Query::partition("T"), 100).await.unwrap()), ["new1"]);

    let dup = vec![
        WriteOp::Put { item: item("T", "x"), condition: Condition::None },
        WriteOp::Check { key: Key::new("T", "x"), condition: Condition::Exists },
    ];
    assert!(matches!(t.transact(dup).await, Err(StoreError::Invalid(_))));
    let too_many = (0..=MAX_BATCH)
        .map(|i| WriteOp::Put { item: item("T", &format!("{i}")), condition: Condition::None })
        .collect();
    assert!(matches!(t.transact(too_many).await, Err(StoreError::Invalid(_))));
}

#[tokio::test]
async fn queries_page_with_cursors() {
    let (t, _) = table("query").await;
    for i in 0..25 {
        let it = item("Q", &format!("item#{i:02}")).with_gsi1("IDX", format!("k#{:02}", 24 - i));
        t.put(it, Condition::None).await.unwrap();
    }
    t.put(item("Q", "other"), Condition::None).await.unwrap();
    t.put(item("R", "item#00"), Condition::None).await.unwrap();

    for descending in [false, true] {
        let mut q = Query::partition("Q").prefix("item#").limit(10);
        if descending {
            q = q.descending();
        }
        let mut pages = Vec::new();
        let mut all = Vec::new();
        loop {
            let page = t.query(q.clone()).await.unwrap();
            pages.push(page.items.len());
            all.extend(page.items);
            match page.next_cursor {
                Some(c) => q.cursor = Some(c),
                None => break,
            }
        }
        assert_eq!(pages, [10, 10, 5], "descending: {descending}");
        let mut want: Vec<String> = (0..25).map(|i| format!("item#{i:02}")).collect();
        if descending {
            want.reverse();
        }
        assert_eq!(sks(&all), want);
    }

    // Exactly `limit` left: no cursor, so no empty trailing page.
    let page = t.query(Query::partition("Q").prefix("item#2").limit(5)).await.unwrap();
    assert_eq!((page.items.len(), page.next_cursor), (5, None));

    let between = t.query(Query::partition("Q").between("item#03", "item#05")).await.unwrap();
    assert_eq!(sks(&between.items), ["item#03", "item#04", "item#05"]);
    let upto = t.query(Query::partition("Q").between("", "item#01")).await.unwrap();
    assert_eq!(sks(&upto.items), ["item#00", "item#01"]);
    let inverted = t.query(Query::partition("Q").between("b", "a")).await.unwrap();
    assert!(inverted.items.is_empty());
    assert_eq!(t.query(Query::partition("Q")).await.unwrap().items.len(), 26);
    assert_eq!(t.query(Query::partition("Q").prefix("")).await.unwrap().items.len(), 26);

    // GSI1: sorted by the index sort key, paged with index cursors.
    let mut q = Query::gsi1("IDX").limit(10);
    let mut all = Vec::new();
    loop {
        let page = t.query(q.clone()).await.unwrap();
        all.extend(page.items);
        match page.next_cursor {
            Some(c) => {
                assert!(c.gsi1.is_some());
                q.cursor = Some(c);
            }
            None => break,
        }
    }
    let want: Vec<String> = (0..25).rev().map(|i| format!("item#{i:02}")).collect();
    assert_eq!(sks(&all), want);
    let range = t.query(Query::gsi1("IDX").between("k#01", "k#02").descending()).await.unwrap();
    assert_eq!(sks(&range.items), ["item#22", "item#23"]);

    // A cursor from another partition or index is refused.
    let primary_cursor = t.query(Query::partition("Q").limit(1)).await.unwrap().next_cursor;
    assert_eq!(
        t.query(Query::gsi1("IDX").after(primary_cursor.clone())).await,
        Err(StoreError::InvalidCursor)
    );
    assert_eq!(t.query(Query::partition("R").after(primary_cursor)).await, Err(StoreError::InvalidCursor));
}

#[tokio::test]
async fn expiry_is_a_number_attribute() {
    let (t, client) = table("ttl").await;
    let it = item("E", "1").with_expiry(Some(1_900_000_000)).with_gsi1("G", "S");
    t.put(it.clone(), Condition::None).await.unwrap();
    let raw = client
        .get_item()
        .table_name(t.table_name())
        .key("PK", AttributeValue::S("E".into()))
        .key("SK", AttributeValue::S("1".into()))
        .send()
        .await
        .unwrap();
    let attrs = raw.item().unwrap();
    assert_eq!(attrs.get(TTL_ATTRIBUTE), Some(&AttributeValue::N("1900000000".into())));
    assert_eq!(attrs.get("ver"), Some(&AttributeValue::N("1".into())));
    assert_eq!(attrs.get("GSI1PK"), Some(&AttributeValue::S("G".into())));
    assert!(matches!(attrs.get("data"), Some(AttributeValue::S(_))));
    assert_eq!(t.get(&it.key).await.unwrap(), Some(it));

    let ttl = client.describe_time_to_live().table_name(t.table_name()).send().await.unwrap();
    let ttl = ttl.time_to_live_description().unwrap();
    assert_eq!(ttl.attribute_name(), Some(TTL_ATTRIBUTE));
}

#[tokio::test]
async fn schedules_are_created_replaced_and_cancelled() {
    let endpoint = endpoint();
    let (_, client) = clients_for_endpoint(&endpoint).await;
    let group = "wearlab-smoke";
    ensure_schedule_group(&client, group).await.unwrap();
    ensure_schedule_group(&client, group).await.unwrap();
    let scheduler = EventBridgeScheduler::new(
        client.clone(),
        SchedulerTarget {
            group: group.into(),
            target_arn: "arn:aws:lambda:us-east-1:123456789012:function:erasure".into(),
            role_arn: "arn:aws:iam::123456789012:role/scheduler".into(),
        },
    );
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let name = format!("erase-user-{nanos}");
    let at = Utc.with_ymd_and_hms(2031, 2, 3, 4, 5, 6).unwrap();
    let payload = json!({ "user_id": "u-1" });
    scheduler.schedule_once(Schedule { name: name.clone(), at, payload: payload.clone() }).await.unwrap();
    let got = client.get_schedule().group_name(group).name(&name).send().await.unwrap();
    assert_eq!(got.schedule_expression(), Some("at(2031-02-03T04:05:06)"));
    assert_eq!(got.schedule_expression_timezone(), Some("UTC"));
    let target = got.target().unwrap();
    assert_eq!(target.input().map(|i| serde_json::from_str::<serde_json::Value>(i).unwrap()), Some(payload));

    let later = Utc.with_ymd_and_hms(2031, 3, 1, 0, 0, 0).unwrap();
    scheduler
        .schedule_once(Schedule { name: name.clone(), at: later, payload: json!({"v": 2}) })
        .await
        .unwrap();
    let got = client.get_schedule().group_name(group).name(&name).send().await.unwrap();
    assert_eq!(got.schedule_expression(), Some("at(2031-03-01T00:00:00)"));
    assert_eq!(got.target().unwrap().input(), Some(r#"{"v":2}"#));

    scheduler.cancel(&name).await.unwrap();
    assert!(client.get_schedule().group_name(group).name(&name).send().await.is_err());
    scheduler.cancel(&name).await.unwrap();

    let bad = Schedule { name: "x".repeat(65), at, payload: json!(null) };
    assert!(scheduler.schedule_once(bad).await.is_err());
}

#[tokio::test]
async fn concurrent_transactions_on_one_item_resolve() {
    let (t, _) = table("race").await;
    let t = std::sync::Arc::new(t);
    let before = t.round_trips();
    let writers: Vec<_> = (0..16)
        .map(|i| {
            let t = t.clone();
            tokio::spawn(async move {
                let ops = vec![
                    WriteOp::Put {
                        item: item("C", "shared").with_gsi1("G", format!("{i}")),
                        condition: Condition::None,
                    },
                    WriteOp::Put { item: item("C", &format!("own{i:02}")), condition: Condition::NotExists },
                ];
                t.transact(ops).await
            })
        })
        .collect();
    for w in writers {
        // Real DynamoDB may answer TransactionConflict (retried, at worst `Contention`); never anything else.
        match w.await.unwrap() {
            Ok(()) | Err(StoreError::Contention(_)) => {}
            Err(e) => panic!("unexpected {e:?}"),
        }
    }
    assert!(t.round_trips() - before >= 16);
    assert_eq!(query_all(t.as_ref(), Query::partition("C"), 100).await.unwrap().len(), 17);
}

#[tokio::test]
async fn service_errors_carry_no_item_data() {
    let endpoint = endpoint();
    let (client, _) = clients_for_endpoint(&endpoint).await;
    let t = DynamoDbTable::new(client, "wearlab-no-such-table");
    let secret = Item::new(Key::new("P", "S"), json!({ "email": "secret@example.com" }));
    match t.put(secret, Condition::None).await {
        Err(StoreError::Unavailable(msg)) => assert!(!msg.contains("secret"), "{msg}"),
        other => panic!("unexpected {other:?}"),
    }
    assert!(matches!(t.get(&Key::new("P", "S")).await, Err(StoreError::Unavailable(_))));
}

/// The adapters `deps_from_env` makes build their SDK client on the first request, count that
/// request, and read bodies as text (`get_raw`) the same as `get` reads them.
#[tokio::test]
async fn lazily_built_tables_work_from_the_first_request() {
    let ((created, _), endpoint) = (table("lazy").await, endpoint());
    let config = wearlab_aws::LazySdkConfig::given(wearlab_aws::config_for_endpoint(&endpoint).await);
    let t = DynamoDbTable::on_first_use(config, created.table_name());
    assert_eq!(t.round_trips(), 0);
    let a = item("P", "lazy").with_gsi1("G", "S").with_expiry(Some(1_700_000_000));
    t.put(a.clone(), Condition::NotExists).await.unwrap();
    let raw = t.get_raw(&a.key).await.unwrap().unwrap();
    assert_eq!(raw.key(), &a.key);
    assert_eq!(raw.decode::<serde_json::Value>().unwrap(), (a.body.clone(), a.version));
    assert_eq!(t.get(&a.key).await.unwrap(), Some(a));
    assert!(t.get_raw(&Key::new("P", "missing")).await.unwrap().is_none());
    assert_eq!(t.round_trips(), 4, "one request per call, the first included");
}

/// The deployed functions' data key: an SSM SecureString read with decryption, once. A missing
/// or unusable parameter is an error naming the parameter and never showing a value.
#[tokio::test]
async fn the_data_key_is_read_from_an_ssm_secure_string() {
    let endpoint = endpoint();
    let config = wearlab_aws::config_for_endpoint(&endpoint).await;
    let ssm = aws_sdk_ssm::Client::new(&config);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let name = format!("/wearlab-test/{nanos}/data-key");
    let (expected, encoded) = wearlab_domain::common::crypto::DataKey::generate();
    let put = |name: String, value: String| {
        ssm.put_parameter()
            .name(name)
            .value(value)
            .r#type(aws_sdk_ssm::types::ParameterType::SecureString)
            .send()
    };
    put(name.clone(), encoded.clone()).await.unwrap();

    let lazy = wearlab_aws::LazySdkConfig::given(config.clone());
    let key = wearlab_aws::DataKeySource::Ssm(name.clone()).load(&lazy).await.unwrap();
    let sealed = expected.seal(b"provider token", "ctx");
    assert_eq!(key.open(&sealed, "ctx").unwrap(), b"provider token", "the same key");

    let missing = format!("{name}-missing");
    let err = wearlab_aws::DataKeySource::Ssm(missing.clone()).load(&lazy).await.err().unwrap();
    assert!(err.contains(&missing), "{err}");
    let short = format!("{name}-short");
    put(short.clone(), "c2hvcnQ=".into()).await.unwrap();
    let err = wearlab_aws::DataKeySource::Ssm(short.clone()).load(&lazy).await.err().unwrap();
    assert!(err.contains(&short) && !err.contains("c2hvcnQ"), "{err}");
}

#[tokio::test]
async fn the_data_key_and_the_phone_signing_key_are_read_in_one_call() {
    let endpoint = endpoint();
    let config = wearlab_aws::config_for_endpoint(&endpoint).await;
    let ssm = aws_sdk_ssm::Client::new(&config);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let put = |name: String, value: String| {
        ssm.put_parameter()
            .name(name)
            .value(value)
            .r#type(aws_sdk_ssm::types::ParameterType::SecureString)
            .send()
    };
    let (data, data_b64) = wearlab_domain::common::crypto::DataKey::generate();
    let (phone, phone_b64) = wearlab_domain::common::crypto::SigningKey::generate().unwrap();
    let (data_name, phone_name) =
        (format!("/wearlab-test/{nanos}/data-key"), format!("/wearlab-test/{nanos}/phone-signing-key"));
    put(data_name.clone(), data_b64).await.unwrap();
    put(phone_name.clone(), phone_b64.clone()).await.unwrap();
    let lazy = wearlab_aws::LazySdkConfig::given(config.clone());

    let data_source = wearlab_aws::DataKeySource::Ssm(data_name.clone());
    let phone_source = wearlab_aws::PhoneKeySource::Ssm(phone_name.clone());
    let (d, p) = wearlab_aws::load_data_and_phone_keys(&data_source, &phone_source, &lazy).await.unwrap();
    assert_eq!(d.open(&data.seal(b"x", "c"), "c").unwrap(), b"x", "the same data key");
    assert_eq!(p.public_key_der(), phone.public_key_der(), "the same signing key");
    // The phone key given plainly, the data key from SSM.
    let plain = wearlab_aws::PhoneKeySource::Plain(phone_b64);
    let (_, p) = wearlab_aws::load_data_and_phone_keys(&data_source, &plain, &lazy).await.unwrap();
    assert_eq!(p.public_key_der(), phone.public_key_der());
    // A parameter that does not exist, or a value that is no key: named, the value never shown.
    let missing = wearlab_aws::PhoneKeySource::Ssm(format!("{phone_name}-missing"));
    let err = wearlab_aws::load_data_and_phone_keys(&data_source, &missing, &lazy).await.err().unwrap();
    assert!(err.contains(&format!("{phone_name}-missing")), "{err}");
    let bad = format!("{phone_name}-bad");
    put(bad.clone(), "c2hvcnQ=".into()).await.unwrap();
    let bad_source = wearlab_aws::PhoneKeySource::Ssm(bad.clone());
    let err = wearlab_aws::load_data_and_phone_keys(&data_source, &bad_source, &lazy).await.err().unwrap();
    assert!(err.contains(&bad) && !err.contains("c2hvcnQ"), "{err}");
}
