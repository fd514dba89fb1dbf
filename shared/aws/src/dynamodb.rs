//! `Table` on DynamoDB. One item per `Item`: `PK`, `SK`, the sparse `GSI1PK`/`GSI1SK`, `ver`,
//! `expires_at` (the TTL attribute) and `data` (the body as JSON text, so records never depend
//! on DynamoDB's type system).

use std::collections::HashMap;
use std::future::Future;
use std::hash::{BuildHasher, Hasher, RandomState};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::client::Waiters;
use aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextRef;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::error::{BoxError, ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::get_item::GetItemOutput;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, ConditionCheck, Delete, GlobalSecondaryIndex,
    KeySchemaElement, KeyType, KeysAndAttributes, Projection, ProjectionType, Put, PutRequest, ReturnValue,
    ScalarAttributeType, TimeToLiveSpecification, TimeToLiveStatus, TransactWriteItem, Update, WriteRequest,
};
use wearlab_domain::ports::{
    Add, Condition, Cursor, Index, IndexKey, Item, Key, Page, Query, RawItem, RawPage, SkRange, StoreError,
    Table, TextItem, WriteOp, add_to_field, validate_batch, validate_get_many, validate_put_all,
    validate_put_all_text,
};

use crate::error::{describe, is_code};
use crate::lazy::{LazyClient, LazySdkConfig};

const PK: &str = "PK";
const SK: &str = "SK";
const GSI1PK: &str = "GSI1PK";
const GSI1SK: &str = "GSI1SK";
const VER: &str = "ver";
const DATA: &str = "data";
/// Prefix of the number attributes that `WriteOp::Add` adds to (`add:<field>`): DynamoDB's `ADD`
/// works on a top-level number, not inside `data`, so the field's value is the number in
/// `data` (0 if none) plus this attribute, put back together on every read.
const ADDED: &str = "add:";

/// Name of the secondary index (keys `GSI1PK`, `GSI1SK`, projection ALL).
pub const GSI1_INDEX: &str = "GSI1";
/// The table's TTL attribute (epoch seconds, a number).
pub const TTL_ATTRIBUTE: &str = "expires_at";

/// Tries of a write that keeps colliding with concurrent transactions before `Contention`.
const CONFLICT_TRIES: u32 = 8;
/// Most writes in one BatchWriteItem request (DynamoDB's limit).
const BATCH_WRITE_MAX: usize = 25;
const BACKOFF_MIN_MS: u64 = 10;
const BACKOFF_MAX_MS: u64 = 200;

type Attrs = HashMap<String, AttributeValue>;

/// The table, plus a count of DynamoDB requests sent (every attempt, so SDK retries count too).
/// Clones share the client and the counter.
#[derive(Clone, Debug)]
pub struct DynamoDbTable {
    client: LazyClient<Client>,
    table: String,
    round_trips: Arc<AtomicU64>,
}

impl DynamoDbTable {
    /// Writes encoded items whole in BatchWriteItem requests of 25 (`put_all`, `put_all_text`).
    async fn batch_put(&self, items: Vec<Attrs>) -> Result<(), StoreError> {
        let client = self.client().await;
        let mut items = items.into_iter().peekable();
        while items.peek().is_some() {
            let mut pending: Vec<WriteRequest> = items
                .by_ref()
                .take(BATCH_WRITE_MAX)
                .map(|item| {
                    let put = PutRequest::builder()
                        .set_item(Some(item))
                        .build()
                        .map_err(|e| StoreError::Invalid(format!("BatchWriteItem: {e}")))?;
                    Ok(WriteRequest::builder().put_request(put).build())
                })
                .collect::<Result<_, StoreError>>()?;
            // DynamoDB may write part of a batch and hand back the rest (throttling): those are
            // sent again after a backoff, a bounded number of times.
            for attempt in 0..CONFLICT_TRIES {
                let out = client
                    .batch_write_item()
                    .request_items(&self.table, pending)
                    .send()
                    .await
                    .map_err(|e| store_error("BatchWriteItem", &e))?;
                pending =
                    out.unprocessed_items.and_then(|mut left| left.remove(&self.table)).unwrap_or_default();
                if pending.is_empty() {
                    break;
                }
                if attempt + 1 == CONFLICT_TRIES {
                    return Err(StoreError::Contention(format!(
                        "BatchWriteItem: {} items unprocessed after {CONFLICT_TRIES} tries",
                        pending.len()
                    )));
                }
                tracing::debug!(
                    unprocessed = pending.len(),
                    attempt = attempt + 1,
                    "BatchWriteItem partly done, retrying"
                );
                tokio::time::sleep(backoff(attempt)).await;
            }
        }
        Ok(())
    }

    /// Wraps `client` (its configuration is kept; a request counter is added to it).
    pub fn new(client: Client, table_name: impl Into<String>) -> Self {
        let round_trips = Arc::new(AtomicU64::new(0));
        let config = client.config().to_builder().interceptor(CountRequests(round_trips.clone())).build();
        Self { client: LazyClient::ready(Client::from_conf(config)), table: table_name.into(), round_trips }
    }

    /// The table with a client built from `config` on its first request (see [`LazySdkConfig`]).
    pub fn on_first_use(config: LazySdkConfig, table_name: impl Into<String>) -> Self {
        let round_trips = Arc::new(AtomicU64::new(0));
        let counter = round_trips.clone();
        let client = LazyClient::on_first_use(config, move |sdk| {
            let config = aws_sdk_dynamodb::config::Builder::from(sdk)
                .interceptor(CountRequests(counter.clone()))
                .build();
            Client::from_conf(config)
        });
        Self { client, table: table_name.into(), round_trips }
    }

    /// DynamoDB requests sent so far, retries included: what benchmarks report per use case.
    pub fn round_trips(&self) -> u64 {
        self.round_trips.load(Ordering::Relaxed)
    }

    pub fn table_name(&self) -> &str {
        &self.table
    }

    async fn client(&self) -> &Client {
        self.client.get().await
    }

    /// One strongly consistent GetItem.
    async fn get_item(&self, key: &Key) -> Result<GetItemOutput, StoreError> {
        self.client()
            .await
            .get_item()
            .table_name(&self.table)
            .set_key(Some(key_attrs(key)))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| store_error("GetItem", &e))
    }

    /// One Query, each item read by `read`; the cursor after the page when more may follow.
    async fn query_page<T>(
        &self,
        q: Query,
        read: fn(&Attrs) -> Result<T, StoreError>,
    ) -> Result<(Vec<T>, Option<Cursor>), StoreError> {
        let (pk_attr, sk_attr, index_name) = match q.index {
            Index::Primary => (PK, SK, None),
            Index::Gsi1 => (GSI1PK, GSI1SK, Some(GSI1_INDEX.to_owned())),
        };
        let mut expr = format!("{pk_attr} = :pk");
        let mut values = HashMap::from([(":pk".to_owned(), s(&q.pk))]);
        match &q.range {
            // DynamoDB rejects empty strings in key conditions; an empty prefix is everything.
            SkRange::All => {}
            SkRange::Prefix(p) if p.is_empty() => {}
            SkRange::Prefix(p) => {
                expr.push_str(&format!(" AND begins_with({sk_attr}, :from)"));
                values.insert(":from".to_owned(), s(p));
            }
            // DynamoDB rejects an inverted BETWEEN; the range is simply empty.
            SkRange::Between(a, b) if a > b => {
                return Ok((Vec::new(), None));
            }
            SkRange::Between(a, b) if a.is_empty() => {
                expr.push_str(&format!(" AND {sk_attr} <= :to"));
                values.insert(":to".to_owned(), s(b));
            }
            SkRange::Between(a, b) => {
                expr.push_str(&format!(" AND {sk_attr} BETWEEN :from AND :to"));
                values.insert(":from".to_owned(), s(a));
                values.insert(":to".to_owned(), s(b));
            }
        }
        let exclusive_start = q.cursor.clone().map(|c| start_key(c, &q)).transpose()?;
        let limit = q.limit.map(|l| l.max(1) as usize);
        let out = self
            .client()
            .await
            .query()
            .table_name(&self.table)
            .set_index_name(index_name)
            .key_condition_expression(expr)
            .set_expression_attribute_values(Some(values))
            .scan_index_forward(!q.descending)
            // One extra item tells whether another page exists, so the last page has no cursor.
            .set_limit(limit.map(|l| i32::try_from(l + 1).unwrap_or(i32::MAX)))
            .set_exclusive_start_key(exclusive_start)
            // Reads its own writes like `get` (GSIs are eventually consistent only).
            .consistent_read(q.index == Index::Primary)
            .send()
            .await
            .map_err(|e| store_error("Query", &e))?;
        let mut found = out.items();
        let more = match limit {
            Some(l) if found.len() > l => {
                found = &found[..l];
                true
            }
            // Fewer items than asked with a `LastEvaluatedKey`: the page hit DynamoDB's 1 MB cap.
            _ => out.last_evaluated_key().is_some(),
        };
        let items = found.iter().map(read).collect::<Result<Vec<_>, _>>()?;
        let next_cursor = match (more, found.last()) {
            (false, _) => None,
            (true, Some(last)) => Some(Cursor::after_item(&decode(last)?, q.index)),
            (true, None) => out.last_evaluated_key().and_then(|k| cursor_from_key(k, q.index)),
        };
        Ok((items, next_cursor))
    }
}

/// Counts requests as they go on the wire: once per attempt.
#[derive(Debug)]
struct CountRequests(Arc<AtomicU64>);

impl Intercept for CountRequests {
    fn name(&self) -> &'static str {
        "CountRequests"
    }

    fn read_before_transmit(
        &self,
        _context: &BeforeTransmitInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        self.0.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

/// Why one attempt of a write failed.
enum Failure {
    /// Another transaction held an item: worth retrying the whole write.
    Conflict,
    Store(StoreError),
}

/// Runs `attempt` until it stops failing on a concurrent transaction, with jittered backoff.
async fn retry_conflicts<T, F, Fut>(op: &str, mut attempt: F) -> Result<T, StoreError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Failure>>,
{
    for n in 0..CONFLICT_TRIES {
        match attempt().await {
            Ok(v) => return Ok(v),
            Err(Failure::Store(e)) => return Err(e),
            Err(Failure::Conflict) if n + 1 < CONFLICT_TRIES => {
                tracing::debug!(op, attempt = n + 1, "transaction conflict, retrying");
                tokio::time::sleep(backoff(n)).await;
            }
            Err(Failure::Conflict) => {}
        }
    }
    Err(StoreError::Contention(format!("{op}: conflicting transactions after {CONFLICT_TRIES} tries")))
}

/// Full jitter within an exponential window: 10ms, 20ms, ... capped at 200ms.
fn backoff(attempt: u32) -> Duration {
    let cap = (BACKOFF_MIN_MS << attempt.min(16)).min(BACKOFF_MAX_MS);
    // A fresh `RandomState` is randomly keyed, which is all the randomness jitter needs.
    let random = RandomState::new().build_hasher().finish();
    Duration::from_millis(BACKOFF_MIN_MS + random % (cap - BACKOFF_MIN_MS + 1))
}

/// Maps an SDK failure to `StoreError`. Validation errors keep DynamoDB's message (it names
/// parameters, never values) and are the caller's fault; the rest is the service's.
/// How a failed PutItem/DeleteItem counts: its own condition, a retryable conflict, or an outage.
fn single_write_failure<E, R>(op: &str, err: &SdkError<E, R>) -> Failure
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    if is_code(err, "ConditionalCheckFailedException") {
        Failure::Store(StoreError::ConditionFailed { op: None })
    } else if is_code(err, "TransactionConflictException") {
        Failure::Conflict
    } else {
        Failure::Store(store_error(op, err))
    }
}

fn store_error<E, R>(op: &str, err: &SdkError<E, R>) -> StoreError
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    if is_code(err, "ValidationException") {
        StoreError::Invalid(describe(op, err, true))
    } else {
        StoreError::Unavailable(describe(op, err, false))
    }
}

fn s(v: &str) -> AttributeValue {
    AttributeValue::S(v.to_owned())
}

fn n(v: impl ToString) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

fn key_attrs(key: &Key) -> Attrs {
    HashMap::from([(PK.to_owned(), s(&key.pk)), (SK.to_owned(), s(&key.sk))])
}

fn encode(item: &Item) -> Attrs {
    let mut attrs = key_attrs(&item.key);
    if let Some(g) = &item.gsi1 {
        attrs.insert(GSI1PK.to_owned(), s(&g.pk));
        attrs.insert(GSI1SK.to_owned(), s(&g.sk));
    }
    attrs.insert(VER.to_owned(), n(item.version));
    if let Some(at) = item.expires_at {
        attrs.insert(TTL_ATTRIBUTE.to_owned(), n(at));
    }
    attrs.insert(DATA.to_owned(), AttributeValue::S(item.body.to_string()));
    attrs
}

/// A [`TextItem`] as `encode` writes the item it stands for (`TextItem::to_item`), the body's
/// text copied as it is instead of written from a parsed tree.
fn encode_text(item: &TextItem) -> Attrs {
    let mut attrs = encode(&Item::new(item.key.clone(), serde_json::Value::Null));
    attrs.insert(DATA.to_owned(), AttributeValue::S(item.body().get().to_owned()));
    attrs
}

fn decode(attrs: &Attrs) -> Result<Item, StoreError> {
    let string = |name: &str| match attrs.get(name) {
        Some(AttributeValue::S(v)) => Ok(Some(v.clone())),
        None => Ok(None),
        Some(_) => Err(name.to_owned()),
    };
    let number = |name: &str| match attrs.get(name) {
        Some(AttributeValue::N(v)) => Ok(Some(v.clone())),
        None => Ok(None),
        Some(_) => Err(name.to_owned()),
    };
    let (Ok(Some(pk)), Ok(Some(sk))) = (string(PK), string(SK)) else {
        return Err(StoreError::Corrupt("item without string PK/SK".into()));
    };
    let corrupt = |what: &str| StoreError::Corrupt(format!("{pk}/{sk}: bad {what}"));
    let gsi1 = match (string(GSI1PK).map_err(|a| corrupt(&a))?, string(GSI1SK).map_err(|a| corrupt(&a))?) {
        (Some(pk), Some(sk)) => Some(IndexKey { pk, sk }),
        (None, None) => None,
        _ => return Err(corrupt("GSI1 keys")),
    };
    let version = number(VER)
        .map_err(|a| corrupt(&a))?
        .and_then(|v| v.parse::<u64>().ok())
        .ok_or_else(|| corrupt(VER))?;
    let expires_at = match number(TTL_ATTRIBUTE).map_err(|a| corrupt(&a))? {
        Some(v) => Some(v.parse::<i64>().map_err(|_| corrupt(TTL_ATTRIBUTE))?),
        None => None,
    };
    let added = added_fields(attrs).map_err(|a| corrupt(&a))?;
    let mut body = match string(DATA).map_err(|a| corrupt(&a))? {
        Some(d) => serde_json::from_str(&d).map_err(|_| corrupt(DATA))?,
        // An item made by an add has no `data` (only its added fields).
        None if !added.is_empty() => serde_json::json!({}),
        None => return Err(corrupt(DATA)),
    };
    for (field, value) in added {
        add_to_field(&mut body, field, value).map_err(|_| corrupt(&format!("{ADDED}{field}")))?;
    }
    Ok(Item { key: Key { pk, sk }, gsi1, version, expires_at, body })
}

/// The `add:<field>` attributes of an item, as (field, number).
fn added_fields(attrs: &Attrs) -> Result<Vec<(&str, i64)>, String> {
    attrs
        .iter()
        .filter_map(|(name, v)| name.strip_prefix(ADDED).map(|field| (name, field, v)))
        .map(|(name, field, v)| match v {
            AttributeValue::N(n) => n.parse().map(|n| (field, n)).map_err(|_| name.clone()),
            _ => Err(name.clone()),
        })
        .collect()
}

/// The key, version and body text of an item, for `get_raw`: the body is not parsed here
/// (unless the item has added fields, which must be put back into it).
fn decode_raw(attrs: &Attrs) -> Result<RawItem, StoreError> {
    if attrs.keys().any(|name| name.starts_with(ADDED)) {
        return decode(attrs).map(|item| RawItem::from_item(&item));
    }
    let string = |name: &str| match attrs.get(name) {
        Some(AttributeValue::S(v)) => Some(v),
        _ => None,
    };
    let (Some(pk), Some(sk)) = (string(PK), string(SK)) else {
        return Err(StoreError::Corrupt("item without string PK/SK".into()));
    };
    let corrupt = |what: &str| StoreError::Corrupt(format!("{pk}/{sk}: bad {what}"));
    let version = match attrs.get(VER) {
        Some(AttributeValue::N(v)) => v.parse::<u64>().map_err(|_| corrupt(VER))?,
        _ => return Err(corrupt(VER)),
    };
    let body = string(DATA).ok_or_else(|| corrupt(DATA))?;
    Ok(RawItem::from_body_json(Key { pk: pk.clone(), sk: sk.clone() }, version, body.clone()))
}

/// A condition as a DynamoDB condition expression and its values.
/// Every item has `PK`, so its presence is the item's presence.
fn condition(c: Condition) -> (Option<String>, Option<Attrs>) {
    match c {
        Condition::None => (None, None),
        Condition::NotExists => (Some(format!("attribute_not_exists({PK})")), None),
        Condition::Exists => (Some(format!("attribute_exists({PK})")), None),
        Condition::VersionIs(v) => {
            (Some(format!("{VER} = :v")), Some(HashMap::from([(":v".to_owned(), n(v))])))
        }
    }
}

/// An add as an update expression: `ADD` to the field's attribute and to the version (both
/// start from 0 when missing, so a new item gets version 1), and the expiry if given.
struct AddExpression {
    update: String,
    condition: Option<String>,
    names: HashMap<String, String>,
    values: Attrs,
}

fn add_expression(add: &Add) -> AddExpression {
    let mut update = "ADD #field :delta, #ver :one".to_owned();
    let mut names = HashMap::from([
        ("#field".to_owned(), format!("{ADDED}{}", add.field)),
        ("#ver".to_owned(), VER.to_owned()),
    ]);
    let (condition_expr, condition_values) = condition(add.condition);
    let mut values = condition_values.unwrap_or_default();
    values.insert(":delta".to_owned(), n(add.delta));
    values.insert(":one".to_owned(), n(1));
    if let Some(at) = add.expires_at {
        update.push_str(" SET #expires = :expires");
        names.insert("#expires".to_owned(), TTL_ATTRIBUTE.to_owned());
        values.insert(":expires".to_owned(), n(at));
    }
    AddExpression { update, condition: condition_expr, names, values }
}

fn transact_item(table: &str, op: &WriteOp) -> Result<TransactWriteItem, StoreError> {
    let build = |e: aws_sdk_dynamodb::error::BuildError| StoreError::Invalid(e.to_string());
    Ok(match op {
        WriteOp::Put { item, condition: c } => {
            let (expr, values) = condition(*c);
            let put = Put::builder()
                .table_name(table)
                .set_item(Some(encode(item)))
                .set_condition_expression(expr)
                .set_expression_attribute_values(values)
                .build()
                .map_err(build)?;
            TransactWriteItem::builder().put(put).build()
        }
        WriteOp::Delete { key, condition: c } => {
            let (expr, values) = condition(*c);
            let delete = Delete::builder()
                .table_name(table)
                .set_key(Some(key_attrs(key)))
                .set_condition_expression(expr)
                .set_expression_attribute_values(values)
                .build()
                .map_err(build)?;
            TransactWriteItem::builder().delete(delete).build()
        }
        WriteOp::Check { key, condition: c } => {
            // DynamoDB requires an expression; `None` becomes one that always holds, which keeps
            // the op (and so the indices of cancellation reasons) in place.
            let (expr, values) = condition(*c);
            let expr =
                expr.unwrap_or_else(|| format!("attribute_exists({PK}) OR attribute_not_exists({PK})"));
            let check = ConditionCheck::builder()
                .table_name(table)
                .set_key(Some(key_attrs(key)))
                .condition_expression(expr)
                .set_expression_attribute_values(values)
                .build()
                .map_err(build)?;
            TransactWriteItem::builder().condition_check(check).build()
        }
        WriteOp::Add(add) => {
            let e = add_expression(add);
            let update = Update::builder()
                .table_name(table)
                .set_key(Some(key_attrs(&add.key)))
                .update_expression(e.update)
                .set_condition_expression(e.condition)
                .set_expression_attribute_names(Some(e.names))
                .set_expression_attribute_values(Some(e.values))
                .build()
                .map_err(build)?;
            TransactWriteItem::builder().update(update).build()
        }
    })
}

/// Reads the per-op cancellation reasons of a cancelled transaction.
fn transaction_failure<R: std::fmt::Debug>(ops: usize, err: SdkError<TransactWriteItemsError, R>) -> Failure {
    let Some(TransactWriteItemsError::TransactionCanceledException(cancelled)) = err.as_service_error()
    else {
        return Failure::Store(store_error("TransactWriteItems", &err));
    };
    let reasons = cancelled.cancellation_reasons();
    let op_of = |i: usize| (ops > 1).then_some(i);
    if let Some(i) = reasons.iter().position(|r| r.code() == Some("ConditionalCheckFailed")) {
        return Failure::Store(StoreError::ConditionFailed { op: op_of(i) });
    }
    if reasons.iter().any(|r| r.code() == Some("TransactionConflict")) {
        return Failure::Conflict;
    }
    let codes: Vec<&str> = reasons.iter().filter_map(|r| r.code()).filter(|c| *c != "None").collect();
    if codes.is_empty() && cancelled.message().is_some_and(|m| m.contains("ConditionalCheckFailed")) {
        // Without reasons (some emulators) the message still tells a failed condition apart.
        return Failure::Store(StoreError::ConditionFailed { op: None });
    }
    let msg = format!("TransactWriteItems cancelled: {}", codes.join(", "));
    Failure::Store(if codes.contains(&"ValidationError") {
        StoreError::Invalid(msg)
    } else {
        StoreError::Unavailable(msg)
    })
}

/// The `ExclusiveStartKey` of a cursor: the item's table keys, plus its index keys for GSI1.
fn start_key(cursor: Cursor, q: &Query) -> Result<Attrs, StoreError> {
    let mut attrs = key_attrs(&Key::new(cursor.pk.clone(), cursor.sk));
    match q.index {
        Index::Primary if cursor.pk == q.pk => {}
        Index::Gsi1 => match cursor.gsi1 {
            Some((gpk, gsk)) if gpk == q.pk => {
                attrs.insert(GSI1PK.to_owned(), AttributeValue::S(gpk));
                attrs.insert(GSI1SK.to_owned(), AttributeValue::S(gsk));
            }
            _ => return Err(StoreError::InvalidCursor),
        },
        Index::Primary => return Err(StoreError::InvalidCursor),
    }
    Ok(attrs)
}

/// A cursor from a `LastEvaluatedKey`, for the (filter-only) case of a page with no items.
fn cursor_from_key(key: &Attrs, index: Index) -> Option<Cursor> {
    let get = |name: &str| match key.get(name) {
        Some(AttributeValue::S(v)) => Some(v.clone()),
        _ => None,
    };
    let gsi1 = match index {
        Index::Primary => None,
        Index::Gsi1 => Some((get(GSI1PK)?, get(GSI1SK)?)),
    };
    Some(Cursor { pk: get(PK)?, sk: get(SK)?, gsi1 })
}

#[async_trait]
impl Table for DynamoDbTable {
    async fn get(&self, key: &Key) -> Result<Option<Item>, StoreError> {
        self.get_item(key).await?.item().map(decode).transpose()
    }

    async fn get_raw(&self, key: &Key) -> Result<Option<RawItem>, StoreError> {
        self.get_item(key).await?.item().map(decode_raw).transpose()
    }

    /// One strongly consistent BatchGetItem (at most 100 keys); keys DynamoDB hands back
    /// unprocessed (throttling) are asked for again after a backoff, a bounded number of times.
    async fn get_many(&self, keys: &[Key]) -> Result<Vec<Option<RawItem>>, StoreError> {
        validate_get_many(keys)?;
        let client = self.client().await;
        let mut found: HashMap<Key, RawItem> = HashMap::with_capacity(keys.len());
        let mut pending: Vec<Attrs> = keys.iter().map(key_attrs).collect();
        for attempt in 0..CONFLICT_TRIES {
            if pending.is_empty() {
                break;
            }
            let wanted = KeysAndAttributes::builder()
                .set_keys(Some(std::mem::take(&mut pending)))
                .consistent_read(true)
                .build()
                .map_err(|e| StoreError::Invalid(format!("BatchGetItem: {e}")))?;
            let out = client
                .batch_get_item()
                .request_items(&self.table, wanted)
                .send()
                .await
                .map_err(|e| store_error("BatchGetItem", &e))?;
            for attrs in out.responses.and_then(|mut r| r.remove(&self.table)).unwrap_or_default() {
                let item = decode_raw(&attrs)?;
                found.insert(item.key().clone(), item);
            }
            pending = out
                .unprocessed_keys
                .and_then(|mut left| left.remove(&self.table))
                .map(|k| k.keys)
                .unwrap_or_default();
            if !pending.is_empty() && attempt + 1 < CONFLICT_TRIES {
                tokio::time::sleep(backoff(attempt)).await;
            }
        }
        if !pending.is_empty() {
            return Err(StoreError::Contention(format!(
                "BatchGetItem: {} keys unprocessed after {CONFLICT_TRIES} tries",
                pending.len()
            )));
        }
        Ok(keys.iter().map(|k| found.remove(k)).collect())
    }

    async fn put(&self, item: Item, condition_: Condition) -> Result<(), StoreError> {
        let attrs = encode(&item);
        let (expr, values) = condition(condition_);
        let client = self.client().await;
        retry_conflicts("PutItem", || async {
            client
                .put_item()
                .table_name(&self.table)
                .set_item(Some(attrs.clone()))
                .set_condition_expression(expr.clone())
                .set_expression_attribute_values(values.clone())
                .send()
                .await
                .map(|_| ())
                .map_err(|e| single_write_failure("PutItem", &e))
        })
        .await
    }

    async fn delete(&self, key: &Key, condition_: Condition) -> Result<(), StoreError> {
        let (expr, values) = condition(condition_);
        let client = self.client().await;
        retry_conflicts("DeleteItem", || async {
            client
                .delete_item()
                .table_name(&self.table)
                .set_key(Some(key_attrs(key)))
                .set_condition_expression(expr.clone())
                .set_expression_attribute_values(values.clone())
                .send()
                .await
                .map(|_| ())
                .map_err(|e| single_write_failure("DeleteItem", &e))
        })
        .await
    }

    async fn transact(&self, ops: Vec<WriteOp>) -> Result<(), StoreError> {
        if ops.is_empty() {
            return Ok(());
        }
        validate_batch(&ops)?;
        let items = ops.iter().map(|op| transact_item(&self.table, op)).collect::<Result<Vec<_>, _>>()?;
        // Each attempt gets a fresh idempotency token from the SDK (its own retries reuse it),
        // so a retried-after-conflict batch is a new transaction, as it must be.
        let client = self.client().await;
        retry_conflicts("TransactWriteItems", || async {
            client
                .transact_write_items()
                .set_transact_items(Some(items.clone()))
                .send()
                .await
                .map(|_| ())
                .map_err(|e| transaction_failure(ops.len(), e))
        })
        .await
    }

    async fn put_all(&self, items: Vec<Item>) -> Result<(), StoreError> {
        validate_put_all(&items)?;
        self.batch_put(items.iter().map(encode).collect()).await
    }

    async fn put_all_text(&self, items: Vec<TextItem>) -> Result<(), StoreError> {
        validate_put_all_text(&items)?;
        self.batch_put(items.iter().map(encode_text).collect()).await
    }

    async fn add(&self, add: Add) -> Result<i64, StoreError> {
        add.validate()?;
        let e = add_expression(&add);
        let client = self.client().await;
        let out = retry_conflicts("UpdateItem", || async {
            client
                .update_item()
                .table_name(&self.table)
                .set_key(Some(key_attrs(&add.key)))
                .update_expression(e.update.clone())
                .set_condition_expression(e.condition.clone())
                .set_expression_attribute_names(Some(e.names.clone()))
                .set_expression_attribute_values(Some(e.values.clone()))
                .return_values(ReturnValue::AllNew)
                .send()
                .await
                .map_err(|err| single_write_failure("UpdateItem", &err))
        })
        .await?;
        let item = decode(
            out.attributes().ok_or_else(|| StoreError::Corrupt("UpdateItem answered no item".into()))?,
        )?;
        item.body
            .get(&add.field)
            .and_then(serde_json::Value::as_i64)
            .ok_or_else(|| StoreError::Corrupt(format!("{}/{}: bad {}", add.key.pk, add.key.sk, add.field)))
    }

    async fn query(&self, q: Query) -> Result<Page, StoreError> {
        let (items, next_cursor) = self.query_page(q, decode).await?;
        Ok(Page { items, next_cursor })
    }

    async fn query_raw(&self, q: Query) -> Result<RawPage, StoreError> {
        let (items, next_cursor) = self.query_page(q, decode_raw).await?;
        Ok(RawPage { items, next_cursor })
    }
}

/// Creates the table (keys, GSI1, on-demand billing) and enables TTL on `expires_at`, unless
/// already done: safe to call on every start of a test run or local stack.
pub async fn ensure_table(client: &Client, name: &str) -> Result<(), StoreError> {
    let attr = |n: &str| {
        AttributeDefinition::builder().attribute_name(n).attribute_type(ScalarAttributeType::S).build()
    };
    let key = |n: &str, t: KeyType| KeySchemaElement::builder().attribute_name(n).key_type(t).build();
    let build = |e: aws_sdk_dynamodb::error::BuildError| StoreError::Invalid(e.to_string());
    let gsi = GlobalSecondaryIndex::builder()
        .index_name(GSI1_INDEX)
        .key_schema(key(GSI1PK, KeyType::Hash).map_err(build)?)
        .key_schema(key(GSI1SK, KeyType::Range).map_err(build)?)
        .projection(Projection::builder().projection_type(ProjectionType::All).build())
        .build()
        .map_err(build)?;
    let created = client
        .create_table()
        .table_name(name)
        .set_attribute_definitions(Some(
            [PK, SK, GSI1PK, GSI1SK].into_iter().map(attr).collect::<Result<_, _>>().map_err(build)?,
        ))
        .key_schema(key(PK, KeyType::Hash).map_err(build)?)
        .key_schema(key(SK, KeyType::Range).map_err(build)?)
        .global_secondary_indexes(gsi)
        .billing_mode(BillingMode::PayPerRequest)
        .send()
        .await;
    match created {
        Ok(_) => {}
        Err(e) if is_code(&e, "ResourceInUseException") => {}
        Err(e) => return Err(store_error("CreateTable", &e)),
    }
    client
        .wait_until_table_exists()
        .table_name(name)
        .wait(Duration::from_secs(120))
        .await
        .map_err(|e| StoreError::Unavailable(format!("waiting for table {name}: {e}")))?;

    let ttl = client
        .describe_time_to_live()
        .table_name(name)
        .send()
        .await
        .map_err(|e| store_error("DescribeTimeToLive", &e))?;
    let enabled = ttl.time_to_live_description().is_some_and(|d| {
        d.attribute_name() == Some(TTL_ATTRIBUTE)
            && matches!(d.time_to_live_status(), Some(TimeToLiveStatus::Enabled | TimeToLiveStatus::Enabling))
    });
    if !enabled {
        let spec = TimeToLiveSpecification::builder()
            .attribute_name(TTL_ATTRIBUTE)
            .enabled(true)
            .build()
            .map_err(build)?;
        client
            .update_time_to_live()
            .table_name(name)
            .time_to_live_specification(spec)
            .send()
            .await
            .map_err(|e| store_error("UpdateTimeToLive", &e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// What DynamoDB bills for one audited read (docs/PERFORMANCE.md, "The audit log on PHI
    /// routes"): the entry as stored, on a route with the longest template and a resource,
    /// fits one write unit (1 KB), and so does its index entry (GSI1 projects every attribute).
    #[test]
    fn an_audit_entry_is_one_write_unit_and_its_index_entry_one_more() {
        use wearlab_domain::common::audit::{Access, Actor, Credential, Retention, entry_item};
        use wearlab_domain::common::ids::{KeyId, TeamId, UserId};
        let team = TeamId::parse("6f1c1a52-93a5-4c2b-8d0e-0a4b1d6c9e21").unwrap();
        let access = Access {
            actor: Actor {
                team_id: team,
                credential: Credential::ApiKey(KeyId::parse("0123456789ab").unwrap()),
            },
            method: "GET".into(),
            route: "/v2/timeseries/{user_id}/{resource}/grouped".into(),
            user_id: UserId::parse("0b6a3c7e-2f4d-4e8a-9c1b-5d2e7f8a9b0c"),
            resource: Some("heartrate".into()),
            status: 200,
        };
        let at = chrono::DateTime::parse_from_rfc3339("2026-11-28T10:00:00.123456Z").unwrap().to_utc();
        let item = entry_item(access, at, uuid::Uuid::new_v4().simple().to_string(), Retention::default());
        let size = crate::meter::item_size(&encode(&item));
        assert!(item.gsi1.is_some());
        assert!(size <= 1024, "{size} bytes");
        println!("audit entry: {size} bytes as DynamoDB counts them");
    }

    #[test]
    fn items_round_trip_through_attributes() {
        let item = Item::new(Key::new("USER#1", "PROFILE"), json!({"a": [1, "x"], "b": null}))
            .with_gsi1("TEAM#t", "USER#1")
            .with_expiry(Some(1_700_000_000));
        let attrs = encode(&item);
        assert_eq!(attrs.get(TTL_ATTRIBUTE), Some(&AttributeValue::N("1700000000".into())));
        assert_eq!(attrs.get(VER), Some(&AttributeValue::N("1".into())));
        assert_eq!(decode(&attrs).unwrap(), item);

        let plain = Item::new(Key::new("P", "S"), json!("text"));
        let attrs = encode(&plain);
        assert!(!attrs.contains_key(GSI1PK) && !attrs.contains_key(TTL_ATTRIBUTE));
        assert_eq!(decode(&attrs).unwrap(), plain);
    }

    #[test]
    fn unreadable_items_are_corrupt() {
        let mut attrs = encode(&Item::new(Key::new("P", "S"), json!({})));
        attrs.insert(DATA.into(), AttributeValue::S("{".into()));
        assert!(matches!(decode(&attrs), Err(StoreError::Corrupt(_))));
        assert!(matches!(
            decode_raw(&attrs).unwrap().decode::<serde_json::Value>(),
            Err(StoreError::Corrupt(_))
        ));
    }

    #[test]
    fn raw_items_keep_the_body_text() {
        let item =
            Item::new(Key::new("USER#1", "PROFILE"), json!({"a": [1, "x"], "b": null})).with_gsi1("G", "S");
        let raw = decode_raw(&encode(&item)).unwrap();
        assert_eq!(raw.key(), &item.key);
        assert_eq!(raw.decode::<serde_json::Value>().unwrap(), (item.body, item.version));
    }

    #[test]
    fn backoff_stays_in_bounds() {
        for attempt in 0..20 {
            let d = backoff(attempt).as_millis() as u64;
            assert!((BACKOFF_MIN_MS..=BACKOFF_MAX_MS).contains(&d), "{d}");
        }
    }

    fn cancelled(codes: &[&str]) -> SdkError<TransactWriteItemsError, ()> {
        use aws_sdk_dynamodb::types::CancellationReason;
        use aws_sdk_dynamodb::types::error::TransactionCanceledException;
        let mut e = TransactionCanceledException::builder().message("Transaction cancelled");
        for code in codes {
            e = e.cancellation_reasons(CancellationReason::builder().code(*code).build());
        }
        SdkError::service_error(TransactWriteItemsError::TransactionCanceledException(e.build()), ())
    }

    fn failure(ops: usize, codes: &[&str]) -> Option<StoreError> {
        match transaction_failure(ops, cancelled(codes)) {
            Failure::Conflict => None,
            Failure::Store(e) => Some(e),
        }
    }

    #[test]
    fn cancellation_reasons_map_to_store_errors() {
        let failed = |op| Some(StoreError::ConditionFailed { op });
        assert_eq!(
            failure(3, &["None", "ConditionalCheckFailed", "ConditionalCheckFailed"]),
            failed(Some(1))
        );
        assert_eq!(failure(1, &["ConditionalCheckFailed"]), failed(None));
        assert_eq!(failure(2, &["TransactionConflict", "ConditionalCheckFailed"]), failed(Some(1)));
        assert_eq!(failure(2, &["None", "TransactionConflict"]), None);
        assert!(matches!(
            failure(2, &["ThrottlingError", "None"]),
            Some(StoreError::Unavailable(m)) if m.contains("ThrottlingError")
        ));
        assert!(matches!(failure(2, &["ValidationError", "None"]), Some(StoreError::Invalid(_))));
    }

    #[tokio::test]
    async fn conflicts_are_retried_then_reported_as_contention() {
        let mut calls = 0;
        let ok = retry_conflicts("Op", || {
            calls += 1;
            let n = calls;
            async move { if n < 3 { Err(Failure::Conflict) } else { Ok(n) } }
        })
        .await;
        assert_eq!(ok, Ok(3));

        let mut calls = 0;
        let busy: Result<(), _> = retry_conflicts("Op", || {
            calls += 1;
            async { Err(Failure::Conflict) }
        })
        .await;
        assert!(matches!(busy, Err(StoreError::Contention(_))));
        assert_eq!(calls, CONFLICT_TRIES);
    }

    #[test]
    fn cursors_must_match_the_query() {
        let item = Item::new(Key::new("P", "S"), json!({})).with_gsi1("G", "GS");
        let primary = Cursor::after_item(&item, Index::Primary);
        assert!(start_key(primary.clone(), &Query::partition("P")).is_ok());
        assert_eq!(start_key(primary.clone(), &Query::partition("Q")), Err(StoreError::InvalidCursor));
        assert_eq!(start_key(primary, &Query::gsi1("G")), Err(StoreError::InvalidCursor));
        let index = Cursor::after_item(&item, Index::Gsi1);
        assert_eq!(start_key(index, &Query::gsi1("G")).unwrap().len(), 4);
    }
}
