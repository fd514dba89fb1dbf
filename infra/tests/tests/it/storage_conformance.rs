//! One conformance suite for every `Table` adapter: redb (in memory and on a file) and
//! DynamoDB on moto. Each case works in partitions of its own.

use std::sync::Arc;

use serde_json::json;
use wearlab_domain::ports::{
    Add, Condition, Item, Key, Query, StoreError, Table, TextItem, WriteOp, query_all,
};

fn part(name: &str) -> String {
    format!("{name}#{}", uuid::Uuid::new_v4().simple())
}

fn item(pk: &str, sk: &str, n: u64) -> Item {
    Item::new(Key::new(pk, sk), json!({ "n": n }))
}

pub async fn put_get_round_trip(t: Arc<dyn Table>) {
    let pk = part("RT");
    let it = item(&pk, "A", 1).with_gsi1(format!("{pk}#IDX"), "2026-01-01").with_expiry(Some(1_900_000_000));
    t.put(it.clone(), Condition::None).await.unwrap();
    assert_eq!(t.get(&it.key).await.unwrap(), Some(it.clone()));
    assert_eq!(t.get(&Key::new(&pk, "missing")).await.unwrap(), None);
    // An unconditional put replaces the whole item, index key and expiry included.
    let replaced = item(&pk, "A", 2);
    t.put(replaced.clone(), Condition::None).await.unwrap();
    assert_eq!(t.get(&it.key).await.unwrap(), Some(replaced));
    let page = t.query(Query::gsi1(format!("{pk}#IDX"))).await.unwrap();
    assert!(page.items.is_empty(), "the old index entry is gone");
}

/// Several keys read at once answer in the order asked, missing ones as `None`, across
/// partitions; a batch naming a key twice or over 100 keys is refused.
pub async fn get_many_answers_in_order(t: Arc<dyn Table>) {
    let keys: Vec<Key> = (0..20).map(|n| Key::new(part("MANY"), format!("K{n}"))).collect();
    for (n, key) in keys.iter().enumerate().filter(|(n, _)| n % 3 != 0) {
        t.put(Item::new(key.clone(), json!({ "n": n })), Condition::None).await.unwrap();
    }
    let read = t.get_many(&keys).await.unwrap();
    assert_eq!(read.len(), keys.len());
    for (n, (key, got)) in keys.iter().zip(&read).enumerate() {
        match got {
            Some(item) => {
                let (body, version) = item.decode::<serde_json::Value>().unwrap();
                assert_eq!((item.key(), &body["n"], version), (key, &json!(n), 1), "key {n}");
            }
            None => assert_eq!(n % 3, 0, "key {n} was written"),
        }
    }
    assert!(t.get_many(&[]).await.unwrap().is_empty());
    let twice = [keys[1].clone(), keys[1].clone()];
    assert!(matches!(t.get_many(&twice).await, Err(StoreError::Invalid(_))));
    let many: Vec<Key> = (0..101).map(|n| Key::new("MANY", format!("{n}"))).collect();
    assert!(matches!(t.get_many(&many).await, Err(StoreError::Invalid(_))));
}

pub async fn conditional_put_and_delete(t: Arc<dyn Table>) {
    let pk = part("COND");
    let a = item(&pk, "A", 1);
    t.put(a.clone(), Condition::NotExists).await.unwrap();
    assert!(matches!(t.put(a.clone(), Condition::NotExists).await, Err(StoreError::ConditionFailed { .. })));
    assert!(matches!(
        t.put(item(&pk, "B", 1), Condition::Exists).await,
        Err(StoreError::ConditionFailed { .. })
    ));
    assert_eq!(t.get(&Key::new(&pk, "B")).await.unwrap(), None, "failed put wrote nothing");
    t.put(item(&pk, "A", 2), Condition::Exists).await.unwrap();
    assert!(matches!(
        t.delete(&Key::new(&pk, "B"), Condition::Exists).await,
        Err(StoreError::ConditionFailed { .. })
    ));
    t.delete(&Key::new(&pk, "B"), Condition::None).await.unwrap();
    t.delete(&a.key, Condition::Exists).await.unwrap();
    assert_eq!(t.get(&a.key).await.unwrap(), None);
}

pub async fn version_conflicts(t: Arc<dyn Table>) {
    let pk = part("VER");
    let v1 = item(&pk, "A", 1);
    t.put(v1.clone(), Condition::NotExists).await.unwrap();
    let mut first = item(&pk, "A", 10);
    first.version = 2;
    let mut second = item(&pk, "A", 20);
    second.version = 2;
    t.put(first.clone(), Condition::VersionIs(1)).await.unwrap();
    assert!(matches!(t.put(second, Condition::VersionIs(1)).await, Err(StoreError::ConditionFailed { .. })));
    assert_eq!(t.get(&v1.key).await.unwrap(), Some(first));
    assert!(matches!(
        t.delete(&v1.key, Condition::VersionIs(1)).await,
        Err(StoreError::ConditionFailed { .. })
    ));
    t.delete(&v1.key, Condition::VersionIs(2)).await.unwrap();
}

pub async fn transactions_fail_as_a_whole(t: Arc<dyn Table>) {
    let pk = part("TX");
    t.put(item(&pk, "EXISTS", 1), Condition::None).await.unwrap();
    let ops = vec![
        WriteOp::Put { item: item(&pk, "NEW1", 1), condition: Condition::NotExists },
        WriteOp::Delete { key: Key::new(&pk, "EXISTS"), condition: Condition::None },
        WriteOp::Put { item: item(&pk, "EXISTS", 9), condition: Condition::NotExists }.clone(),
    ];
    // Same key twice is refused before anything is written.
    assert!(matches!(t.transact(ops).await, Err(StoreError::Invalid(_))));
    let ops = vec![
        WriteOp::Put { item: item(&pk, "NEW1", 1), condition: Condition::NotExists },
        WriteOp::Delete { key: Key::new(&pk, "OTHER"), condition: Condition::None },
        WriteOp::Check { key: Key::new(&pk, "EXISTS"), condition: Condition::NotExists },
    ];
    assert_eq!(t.transact(ops).await, Err(StoreError::ConditionFailed { op: Some(2) }));
    assert_eq!(t.get(&Key::new(&pk, "NEW1")).await.unwrap(), None, "nothing of a failed batch is written");
    let ops = vec![
        WriteOp::Put { item: item(&pk, "NEW1", 1), condition: Condition::NotExists },
        WriteOp::Put { item: item(&pk, "NEW2", 2), condition: Condition::NotExists },
        WriteOp::Delete { key: Key::new(&pk, "EXISTS"), condition: Condition::Exists },
        WriteOp::Check { key: Key::new(&pk, "NEW3"), condition: Condition::NotExists },
    ];
    t.transact(ops).await.unwrap();
    let keys: Vec<String> = query_all(t.as_ref(), Query::partition(&pk), 100)
        .await
        .unwrap()
        .into_iter()
        .map(|i| i.key.sk)
        .collect();
    assert_eq!(keys, ["NEW1", "NEW2"]);
}

pub async fn query_pages_with_cursors(t: Arc<dyn Table>) {
    let pk = part("PAGE");
    for n in 0..25u64 {
        t.put(item(&pk, &format!("ITEM#{n:03}"), n), Condition::None).await.unwrap();
    }
    t.put(item(&pk, "OTHER#1", 99), Condition::None).await.unwrap();
    let mut seen = Vec::new();
    let mut cursor = None;
    let mut pages = 0;
    loop {
        let page = t.query(Query::partition(&pk).prefix("ITEM#").limit(10).after(cursor)).await.unwrap();
        pages += 1;
        seen.extend(page.items.iter().map(|i| i.body["n"].as_u64().unwrap()));
        cursor = page.next_cursor;
        if cursor.is_none() || pages > 10 {
            break;
        }
    }
    assert_eq!(seen, (0..25).collect::<Vec<_>>());
    assert!(pages <= 4, "25 items in pages of 10 take 3 pages (DynamoDB may add an empty 4th), took {pages}");
    let desc = t.query(Query::partition(&pk).prefix("ITEM#").limit(3).descending()).await.unwrap();
    let first: Vec<u64> = desc.items.iter().map(|i| i.body["n"].as_u64().unwrap()).collect();
    assert_eq!(first, [24, 23, 22]);
    let next = t
        .query(Query::partition(&pk).prefix("ITEM#").limit(3).descending().after(desc.next_cursor))
        .await
        .unwrap();
    assert_eq!(next.items[0].body["n"], 21);
    let between =
        query_all(t.as_ref(), Query::partition(&pk).between("ITEM#005", "ITEM#007"), 100).await.unwrap();
    assert_eq!(between.len(), 3, "between is inclusive at both ends");
    let all = query_all(t.as_ref(), Query::partition(&pk), 100).await.unwrap();
    assert_eq!(all.len(), 26);
}

pub async fn secondary_index(t: Arc<dyn Table>) {
    let pk = part("GSI");
    let idx = format!("{pk}#IDX");
    for n in 0..12u64 {
        let it = item(&format!("{pk}#{n}"), "ROOT", n).with_gsi1(&idx, format!("{:02}", 12 - n));
        t.put(it, Condition::None).await.unwrap();
    }
    // Sparse: an item without an index key is not listed.
    t.put(item(&format!("{pk}#x"), "ROOT", 99), Condition::None).await.unwrap();
    let first = t.query(Query::gsi1(&idx).limit(5)).await.unwrap();
    let ns: Vec<u64> = first.items.iter().map(|i| i.body["n"].as_u64().unwrap()).collect();
    assert_eq!(ns, [11, 10, 9, 8, 7], "ordered by the index sort key");
    // A raw page is the same page, bodies left as text until decoded.
    for q in [Query::gsi1(&idx).limit(5), Query::gsi1(&idx), Query::partition(format!("{pk}#3"))] {
        let (page, raw) = (t.query(q.clone()).await.unwrap(), t.query_raw(q).await.unwrap());
        assert_eq!(raw.next_cursor, page.next_cursor);
        let decoded: Vec<_> =
            raw.items.iter().map(|r| (r.key().clone(), r.decode::<serde_json::Value>().unwrap())).collect();
        let want: Vec<_> = page.items.into_iter().map(|i| (i.key, (i.body, i.version))).collect();
        assert_eq!(decoded, want);
    }
    let rest = query_all(t.as_ref(), Query::gsi1(&idx).after(first.next_cursor), 100).await.unwrap();
    assert_eq!(rest.len(), 7);
    let some = query_all(t.as_ref(), Query::gsi1(&idx).between("03", "05"), 100).await.unwrap();
    assert_eq!(some.len(), 3);
    // Dropping the index key removes the item from the index.
    t.put(item(&format!("{pk}#0"), "ROOT", 0), Condition::None).await.unwrap();
    assert_eq!(query_all(t.as_ref(), Query::gsi1(&idx), 100).await.unwrap().len(), 11);
    // A new index key moves the item: listed once, at its new place, whether the put that
    // moves it has a condition or not.
    t.put(item(&format!("{pk}#1"), "ROOT", 1).with_gsi1(&idx, "99"), Condition::None).await.unwrap();
    t.put(item(&format!("{pk}#2"), "ROOT", 2).with_gsi1(&idx, "98"), Condition::Exists).await.unwrap();
    let listed: Vec<u64> = query_all(t.as_ref(), Query::gsi1(&idx), 100)
        .await
        .unwrap()
        .iter()
        .map(|i| i.body["n"].as_u64().unwrap())
        .collect();
    assert_eq!(listed, [11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1]);
}

pub async fn expiry_is_kept(t: Arc<dyn Table>) {
    let pk = part("TTL");
    let it = item(&pk, "A", 1).with_expiry(Some(1_700_000_000));
    t.put(it.clone(), Condition::None).await.unwrap();
    assert_eq!(t.get(&it.key).await.unwrap().unwrap().expires_at, Some(1_700_000_000));
    let page = t.query(Query::partition(&pk)).await.unwrap();
    assert_eq!(page.items[0].expires_at, Some(1_700_000_000));
}

pub async fn invalid_cursor_is_refused(t: Arc<dyn Table>) {
    assert!(matches!(wearlab_domain::ports::Cursor::decode("not-a-cursor"), Err(StoreError::InvalidCursor)));
    // A cursor from another partition must not open a window onto it.
    let (mine, theirs) = (part("MINE"), part("THEIRS"));
    for p in [&mine, &theirs] {
        for n in 0..3u64 {
            t.put(
                item(p, &format!("I#{n}"), n).with_gsi1(format!("{p}#IDX"), format!("{n}")),
                Condition::None,
            )
            .await
            .unwrap();
        }
    }
    let foreign = t.query(Query::partition(&theirs).limit(1)).await.unwrap().next_cursor;
    let r = t.query(Query::partition(&mine).after(foreign)).await;
    assert!(matches!(r, Err(StoreError::InvalidCursor)), "{r:?}");
    let foreign = t.query(Query::gsi1(format!("{theirs}#IDX")).limit(1)).await.unwrap().next_cursor;
    let r = t.query(Query::gsi1(format!("{mine}#IDX")).after(foreign)).await;
    assert!(matches!(r, Err(StoreError::InvalidCursor)), "{r:?}");
}

pub async fn concurrent_conditional_puts_have_one_winner(t: Arc<dyn Table>) {
    let pk = part("RACE");
    let tasks: Vec<_> = (0..20u64)
        .map(|n| {
            let t = t.clone();
            let pk = pk.clone();
            tokio::spawn(async move {
                t.transact(vec![
                    WriteOp::Put { item: item(&pk, "ONE", n), condition: Condition::NotExists },
                    WriteOp::Put { item: item(&pk, &format!("W#{n}"), n), condition: Condition::NotExists },
                ])
                .await
            })
        })
        .collect();
    let results: Vec<_> = futures::future::join_all(tasks).await.into_iter().map(Result::unwrap).collect();
    let wins = results.iter().filter(|r| r.is_ok()).count();
    assert_eq!(wins, 1, "{results:?}");
    for lost in results.iter().filter(|r| r.is_err()) {
        // Each loser failed on the contested item, so a caller knows which condition broke.
        assert_eq!(lost, &Err(StoreError::ConditionFailed { op: Some(0) }), "{results:?}");
    }
    assert_eq!(query_all(t.as_ref(), Query::partition(&pk).prefix("W#"), 100).await.unwrap().len(), 1);
}

pub async fn additions_create_add_and_keep_the_rest(t: Arc<dyn Table>) {
    let pk = part("ADD");
    let key = Key::new(&pk, "COUNT");
    // A missing item is created at version 1 with the field alone.
    assert_eq!(t.add(Add::new(key.clone(), "n", 5)).await, Ok(5));
    let got = t.get(&key).await.unwrap().unwrap();
    assert_eq!((got.body.clone(), got.version, got.expires_at), (json!({"n": 5}), 1, None));
    assert_eq!(t.add(Add::new(key.clone(), "n", -7).with_expiry(1_900_000_000)).await, Ok(-2));
    let got = t.get(&key).await.unwrap().unwrap();
    assert_eq!((got.body.clone(), got.version, got.expires_at), (json!({"n": -2}), 2, Some(1_900_000_000)));
    // Other fields, the index key and the expiry of a stored item stay; the version goes up.
    let stored = Item::new(Key::new(&pk, "REC"), json!({"n": 10, "name": "x"}))
        .with_gsi1(format!("{pk}#IDX"), "1")
        .with_expiry(Some(1_800_000_000));
    t.put(stored.clone(), Condition::None).await.unwrap();
    assert_eq!(t.add(Add::new(stored.key.clone(), "n", 1)).await, Ok(11));
    assert_eq!(t.add(Add::new(stored.key.clone(), "other", 3)).await, Ok(3));
    let got = t.get(&stored.key).await.unwrap().unwrap();
    assert_eq!(got, Item { version: 3, body: json!({"n": 11, "name": "x", "other": 3}), ..stored.clone() });
    let listed = t.query(Query::gsi1(format!("{pk}#IDX"))).await.unwrap();
    assert_eq!(listed.items, vec![got.clone()], "queries read the added fields too");
    let raw = t.get_raw(&stored.key).await.unwrap().unwrap();
    assert_eq!(raw.decode::<serde_json::Value>().unwrap(), (got.body, 3));
    // A put replaces the item, added fields included.
    t.put(item(&pk, "REC", 1), Condition::None).await.unwrap();
    assert_eq!(t.add(Add::new(stored.key.clone(), "n", 1)).await, Ok(2));
    // A bad field name is refused before anything is written.
    assert!(matches!(t.add(Add::new(Key::new(&pk, "BAD"), "N-1", 1)).await, Err(StoreError::Invalid(_))));
    assert_eq!(t.get(&Key::new(&pk, "BAD")).await.unwrap(), None);
}

pub async fn additions_in_transactions(t: Arc<dyn Table>) {
    let pk = part("ADDTX");
    let count = Key::new(&pk, "COUNT");
    // With `Exists`, an add to a missing item fails the batch and names itself.
    let ops = vec![
        WriteOp::Put { item: item(&pk, "U#1", 1), condition: Condition::NotExists },
        WriteOp::Add(Add::new(count.clone(), "active", 1).when(Condition::Exists)),
    ];
    assert_eq!(t.transact(ops.clone()).await, Err(StoreError::ConditionFailed { op: Some(1) }));
    assert_eq!(t.get(&Key::new(&pk, "U#1")).await.unwrap(), None, "nothing of a failed batch is written");
    t.put(Item::new(count.clone(), json!({"active": 0})), Condition::NotExists).await.unwrap();
    t.transact(ops).await.unwrap();
    // A failed condition elsewhere leaves the count alone.
    let ops = vec![
        WriteOp::Put { item: item(&pk, "U#1", 1), condition: Condition::NotExists },
        WriteOp::Add(Add::new(count.clone(), "active", 1)),
    ];
    assert_eq!(t.transact(ops).await, Err(StoreError::ConditionFailed { op: Some(0) }));
    t.transact(vec![
        WriteOp::Delete { key: Key::new(&pk, "U#1"), condition: Condition::Exists },
        WriteOp::Add(Add::new(count.clone(), "active", -1).when(Condition::Exists)),
    ])
    .await
    .unwrap();
    t.transact(vec![WriteOp::Add(Add::new(count.clone(), "active", 2))]).await.unwrap();
    let got = t.get(&count).await.unwrap().unwrap();
    assert_eq!((got.body, got.version), (json!({"active": 2}), 4));
}

/// Concurrent adds to one item never conflict and none is lost, alone or in transactions.
pub async fn concurrent_additions_all_count(t: Arc<dyn Table>) {
    let pk = part("ADDRACE");
    let count = Key::new(&pk, "COUNT");
    let tasks: Vec<_> = (0..20u64)
        .map(|n| {
            let (t, pk, count) = (t.clone(), pk.clone(), count.clone());
            tokio::spawn(async move {
                if n % 2 == 0 {
                    t.add(Add::new(count, "n", 1)).await.map(drop)
                } else {
                    t.transact(vec![
                        WriteOp::Put {
                            item: item(&pk, &format!("W#{n}"), n),
                            condition: Condition::NotExists,
                        },
                        WriteOp::Add(Add::new(count, "n", 1)),
                    ])
                    .await
                }
            })
        })
        .collect();
    for r in futures::future::join_all(tasks).await {
        assert_eq!(r.unwrap(), Ok(()));
    }
    assert_eq!(t.get(&count).await.unwrap().unwrap().body, json!({"n": 20}));
    assert_eq!(t.add(Add::new(count, "n", 0)).await, Ok(20));
}

pub async fn put_all_writes_every_item_whole(t: Arc<dyn Table>) {
    let pk = part("ALL");
    t.put_all(vec![]).await.unwrap();
    let old = item(&pk, "S0000", 1).with_gsi1(format!("{pk}#IDX"), "x").with_expiry(Some(1_900_000_000));
    t.put(old.clone(), Condition::None).await.unwrap();
    // More than one DynamoDB batch (25) and more than one transaction (100).
    let items: Vec<Item> = (0..130).map(|i| item(&pk, &format!("S{i:04}"), 100 + i)).collect();
    t.put_all(items.clone()).await.unwrap();
    let stored = query_all(t.as_ref(), Query::partition(&pk), 1000).await.unwrap();
    assert_eq!(stored.len(), 130);
    for (got, want) in stored.iter().zip(&items) {
        assert_eq!((&got.key, &got.body), (&want.key, &want.body));
    }
    assert_eq!(
        t.get(&old.key).await.unwrap().unwrap(),
        items[0],
        "replaced whole: index key and expiry gone"
    );
    assert!(t.query(Query::gsi1(format!("{pk}#IDX"))).await.unwrap().items.is_empty());

    let twice = vec![item(&pk, "T1", 1), item(&pk, "T2", 2), item(&pk, "T1", 3)];
    assert!(matches!(t.put_all(twice).await, Err(StoreError::Invalid(_))), "one key twice is refused");
    assert_eq!(t.get(&Key::new(&pk, "T2")).await.unwrap(), None, "and nothing of it written");
}

/// `put_all_text` writes as `put_all` does, from bodies that are JSON text already: each item
/// whole (version 1, no index entry, no expiry), read back as its body parsed; one key twice or
/// an item over 400 KB refused with nothing written.
pub async fn put_all_text_writes_every_item_whole(t: Arc<dyn Table>) {
    let pk = part("TEXT");
    t.put_all_text(vec![]).await.unwrap();
    let old = item(&pk, "S0000", 1).with_gsi1(format!("{pk}#IDX"), "x").with_expiry(Some(1_900_000_000));
    t.put(old.clone(), Condition::None).await.unwrap();
    let texts: Vec<TextItem> = (0..130)
        .map(|i| {
            let body = json!({"h": format!("{i:x}"), "v": {"data": [{"value": 1.5 * f64::from(i)}], "s": "q\"\u{e9}"}});
            TextItem::new(Key::new(&pk, format!("S{i:04}")), &body).unwrap()
        })
        .collect();
    t.put_all_text(texts.clone()).await.unwrap();
    let stored = query_all(t.as_ref(), Query::partition(&pk), 1000).await.unwrap();
    assert_eq!(stored.len(), 130);
    for (got, want) in stored.iter().zip(&texts) {
        assert_eq!(got, &want.to_item().unwrap());
    }
    assert_eq!(t.get(&old.key).await.unwrap().unwrap().version, 1, "replaced whole");
    assert!(t.query(Query::gsi1(format!("{pk}#IDX"))).await.unwrap().items.is_empty());
    let raw = t.get_raw(&texts[7].key).await.unwrap().unwrap();
    assert_eq!(raw.decode::<serde_json::Value>().unwrap(), (texts[7].to_item().unwrap().body, 1));

    let text = |sk: &str, body: serde_json::Value| TextItem::new(Key::new(&pk, sk), &body).unwrap();
    let twice = vec![text("T1", json!(1)), text("T2", json!(2)), text("T1", json!(3))];
    assert!(matches!(t.put_all_text(twice).await, Err(StoreError::Invalid(_))), "one key twice is refused");
    assert_eq!(t.get(&Key::new(&pk, "T2")).await.unwrap(), None, "and nothing of it written");
    let big = text("BIG", json!({ "x": "y".repeat(410 * 1024) }));
    assert!(matches!(t.put_all_text(vec![text("SMALL", json!(1)), big]).await, Err(StoreError::Invalid(_))));
    assert_eq!(t.get(&Key::new(&pk, "BIG")).await.unwrap(), None);
}

/// DynamoDB's 400 KB per item: a larger put is refused (in a batch too) and nothing of it is
/// written; one just under it is stored.
pub async fn items_over_400_kb_are_refused(t: Arc<dyn Table>) {
    let pk = part("BIG");
    let big = Item::new(Key::new(&pk, "BIG"), serde_json::json!({ "x": "y".repeat(410 * 1024) }));
    assert!(matches!(t.put(big.clone(), Condition::None).await, Err(StoreError::Invalid(_))));
    let small = item(&pk, "SMALL", 1);
    assert!(matches!(t.put_all(vec![small.clone(), big.clone()]).await, Err(StoreError::Invalid(_))));
    assert_eq!(t.get(&big.key).await.unwrap(), None);
    let fits = Item::new(Key::new(&pk, "FITS"), serde_json::json!({ "x": "y".repeat(380 * 1024) }));
    t.put(fits.clone(), Condition::None).await.unwrap();
    assert_eq!(t.get(&fits.key).await.unwrap().unwrap().body, fits.body);
}

macro_rules! conformance {
    ($adapter:ident, $make:expr) => {
        mod $adapter {
            #[allow(unused_imports)]
            use super::*;

            async fn table() -> std::sync::Arc<dyn wearlab_domain::ports::Table> {
                $make
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn put_get_round_trip() {
                super::put_get_round_trip(table().await).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn get_many_answers_in_order() {
                super::get_many_answers_in_order(table().await).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn conditional_put_and_delete() {
                super::conditional_put_and_delete(table().await).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn version_conflicts() {
                super::version_conflicts(table().await).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn transactions_fail_as_a_whole() {
                super::transactions_fail_as_a_whole(table().await).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn query_pages_with_cursors() {
                super::query_pages_with_cursors(table().await).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn secondary_index() {
                super::secondary_index(table().await).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn expiry_is_kept() {
                super::expiry_is_kept(table().await).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn invalid_cursor_is_refused() {
                super::invalid_cursor_is_refused(table().await).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn concurrent_conditional_puts_have_one_winner() {
                super::concurrent_conditional_puts_have_one_winner(table().await).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn additions_create_add_and_keep_the_rest() {
                super::additions_create_add_and_keep_the_rest(table().await).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn additions_in_transactions() {
                super::additions_in_transactions(table().await).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn concurrent_additions_all_count() {
                super::concurrent_additions_all_count(table().await).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn put_all_writes_every_item_whole() {
                super::put_all_writes_every_item_whole(table().await).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn put_all_text_writes_every_item_whole() {
                super::put_all_text_writes_every_item_whole(table().await).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn items_over_400_kb_are_refused() {
                super::items_over_400_kb_are_refused(table().await).await
            }
        }
    };
}

conformance!(redb_memory, Arc::new(wearlab_embedded::RedbTable::in_memory()));
conformance!(redb_file, {
    let dir = std::env::temp_dir().join(format!("wearlab-conf-{}", uuid::Uuid::new_v4().simple()));
    let table = wearlab_embedded::RedbTable::open(&dir.join("t.redb")).unwrap();
    // The table works through its open file, so the directory goes at once: nothing is left
    // in the temporary directory whether the test passes or not.
    std::fs::remove_dir_all(&dir).unwrap();
    Arc::new(table)
});
conformance!(dynamodb_moto, Arc::new(crate::helpers::moto_table().await));

/// Issue 18's budget: at most 40 DynamoDB write requests per 1,000 stored items.
#[tokio::test]
async fn dynamodb_moto_put_all_writes_1000_items_in_40_requests() {
    let t = crate::helpers::moto_table().await;
    let pk = part("BULK");
    let items: Vec<Item> = (0..1000).map(|i| item(&pk, &format!("S{i:04}"), i)).collect();
    let before = t.round_trips();
    t.put_all(items).await.unwrap();
    assert_eq!(t.round_trips() - before, 40);
    assert_eq!(query_all(&t, Query::partition(&pk), 2000).await.unwrap().len(), 1000);
}

/// Concurrent writes on a redb file share commits (the group committer): each still answers for
/// itself alone (a refused condition refuses only its own write), and everything answered Ok is
/// on the file when it is opened again.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redb_file_concurrent_writes_share_commits_and_each_answers_for_itself() {
    let dir = std::env::temp_dir().join(format!("wearlab-group-{}", uuid::Uuid::new_v4().simple()));
    let path = dir.join("t.redb");
    let t = Arc::new(wearlab_embedded::RedbTable::open(&path).unwrap());
    let tasks: Vec<_> = (0..300u64)
        .map(|i| {
            let t = t.clone();
            tokio::spawn(async move {
                // Every third write races for one key; the others each have their own.
                let sk = if i % 3 == 0 { "CONTESTED".to_owned() } else { format!("OWN{i:03}") };
                let counted = WriteOp::Add(Add::new(Key::new("G", "COUNT"), "n", 1));
                let put = WriteOp::Put { item: item("G", &sk, i), condition: Condition::NotExists };
                (sk, t.transact(vec![put, counted]).await)
            })
        })
        .collect();
    let mut won = 0;
    let mut own = 0;
    for r in futures::future::join_all(tasks).await {
        let (sk, answer) = r.unwrap();
        match (sk.as_str(), answer) {
            ("CONTESTED", Ok(())) => won += 1,
            ("CONTESTED", Err(StoreError::ConditionFailed { op: Some(0) })) => {}
            (_, Ok(())) => own += 1,
            (sk, other) => panic!("{sk}: {other:?}"),
        }
    }
    assert_eq!((won, own), (1, 200));
    drop(t);
    let reopened = wearlab_embedded::RedbTable::open(&path).unwrap();
    let stored = query_all(&reopened, Query::partition("G"), 1000).await.unwrap();
    assert_eq!(stored.len(), 1 + 200 + 1, "the contested item, the own ones and the count");
    assert_eq!(reopened.get(&Key::new("G", "COUNT")).await.unwrap().unwrap().body["n"], 201);
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn redb_file_keeps_data_across_reopen() {
    let dir = std::env::temp_dir().join(format!("wearlab-reopen-{}", uuid::Uuid::new_v4().simple()));
    let path = dir.join("t.redb");
    {
        let t = wearlab_embedded::RedbTable::open(&path).unwrap();
        t.put(item("P", "S", 7), Condition::None).await.unwrap();
    }
    let t = wearlab_embedded::RedbTable::open(&path).unwrap();
    assert_eq!(t.get(&Key::new("P", "S")).await.unwrap().unwrap().body["n"], 7);
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn redb_purges_expired_items_like_ttl() {
    let t = wearlab_embedded::RedbTable::in_memory();
    t.put(item("P", "OLD", 1).with_expiry(Some(100)), Condition::None).await.unwrap();
    t.put(item("P", "NEW", 2).with_expiry(Some(300)), Condition::None).await.unwrap();
    t.put(item("P", "KEEP", 3), Condition::None).await.unwrap();
    assert_eq!(t.purge_expired(200).await.unwrap(), 1);
    assert_eq!(t.get(&Key::new("P", "OLD")).await.unwrap(), None);
    assert!(t.get(&Key::new("P", "NEW")).await.unwrap().is_some());
}
