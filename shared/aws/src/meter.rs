//! Counting every AWS call by kind, for the cost model (`scripts/bench cost`,
//! `docs/PERFORMANCE.md`, "What a month costs"). Off unless a tool installs it: an
//! [`AwsMeter`] is an SDK interceptor that a benchmark adds to the clients it builds
//! ([`AwsMeter::dynamodb`], [`AwsMeter::sqs`], [`AwsMeter::eventbridge`], [`AwsMeter::scheduler`]);
//! no function's `main.rs` adds it, so product code pays nothing for it.
//!
//! Per call it records the service and the operation, and the units AWS bills for them:
//!
//! - DynamoDB on-demand read and write request units, computed from item sizes as DynamoDB
//!   bills them. moto answers `ReturnConsumedCapacity` with a fixed 0.5 or 1.0 per call whatever
//!   the item's size, so the units are computed here from the items sent and answered (and from
//!   a shadow of the sizes of the items written through the meter, for the size an item had
//!   before a write replaced or deleted it):
//!   - an item's size is the sum of its attribute names' and values' sizes (UTF-8 bytes of a
//!     string, about one byte per two significant digits plus one of a number, 3 bytes plus the
//!     elements of a list or map) ("Item sizes and formats",
//!     <https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html>);
//!   - one write request unit per 1 KB written (of the larger of the item before and after the
//!     write), one read request unit per 4 KB of a strongly consistent read, half of it for an
//!     eventually consistent one; transactional reads and writes count double; a Query or Scan
//!     sums the sizes of the items it read and rounds once; BatchGetItem and BatchWriteItem count
//!     per item; a write that fails its condition still consumes its units; a read of an item
//!     that does not exist consumes the minimum (read and write request units,
//!     <https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/on-demand-capacity-mode.html>);
//!   - every write of an item in the sparse index `GSI1` (projection ALL) writes the index too,
//!     billed as more write units; a write that moves the item's index key writes twice
//!     (delete and put) (<https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.html>,
//!     "Provisioned throughput considerations for Global Secondary Indexes");
//!   - stored bytes: each item's size plus 100 bytes of overhead, and again for its index entry
//!     (<https://aws.amazon.com/dynamodb/pricing/on-demand/>, "Data storage").
//! - SQS requests, each 64 KB chunk of a request's or answer's payload one request
//!   (<https://aws.amazon.com/sqs/pricing/>).
//! - EventBridge events, each 64 KB chunk of an entry one event
//!   (<https://aws.amazon.com/eventbridge/pricing/>).
//! - EventBridge Scheduler: each schedule created is one invocation later (one-time `at()`
//!   schedules) (<https://aws.amazon.com/eventbridge/pricing/>, "Scheduler").
//!
//! It also times every call, from before its request is transmitted to after its answer is
//! read ([`CallSpan`], taken with [`AwsMeter::take_spans`]), so that a tool can tell an
//! invocation's time inside AWS calls from the function's own work: Lambda bills wall time, and
//! an emulator's latency is not the service's. A call a client makes on behalf of AWS itself
//! (an EventBridge rule's delivery to SQS, which a benchmark plays in-process) is timed but
//! marked as not the function's ([`AwsMeter::sqs_for_aws`]).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use aws_sdk_dynamodb::config::interceptors::{
    AfterDeserializationInterceptorContextRef, BeforeSerializationInterceptorContextRef,
    BeforeTransmitInterceptorContextRef, FinalizerInterceptorContextRef,
};
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::error::BoxError;
use aws_sdk_dynamodb::types::AttributeValue;
use aws_smithy_runtime_api::client::interceptors::context::{Input, Output};
use aws_smithy_types::config_bag::{Storable, StoreReplace};

const KB: u64 = 1024;
/// DynamoDB's read unit covers 4 KB, its write unit 1 KB.
const READ_UNIT_BYTES: u64 = 4 * KB;
const WRITE_UNIT_BYTES: u64 = KB;
/// DynamoDB's per-item storage overhead (table, and again per index entry).
const STORED_ITEM_OVERHEAD: u64 = 100;
/// SQS and EventBridge bill a payload in chunks of 64 KB.
const CHUNK_BYTES: u64 = 64 * KB;

/// The services the meter knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Service {
    DynamoDb,
    Sqs,
    EventBridge,
    Scheduler,
}

impl Service {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::DynamoDb => "DynamoDB",
            Self::Sqs => "SQS",
            Self::EventBridge => "EventBridge",
            Self::Scheduler => "Scheduler",
        }
    }
}

/// What the meter counted, from its start or between two snapshots ([`Tally::since`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tally {
    /// Calls per (service, operation), every call.
    pub calls: BTreeMap<(Service, String), u64>,
    /// DynamoDB read request units (on-demand).
    pub read_units: f64,
    /// DynamoDB write request units of the table.
    pub write_units: f64,
    /// DynamoDB write request units of the index `GSI1`.
    pub index_write_units: f64,
    /// SQS requests as billed (64 KB chunks).
    pub sqs_requests: u64,
    /// EventBridge events as billed (64 KB chunks).
    pub events: u64,
    /// One-time schedules created: each one EventBridge Scheduler invocation.
    pub schedules: u64,
    /// Bytes DynamoDB bills as stored (items written through the meter, still present; signed
    /// so that a difference of two snapshots can shrink).
    pub stored_bytes: i64,
}

impl Tally {
    /// What was counted after `earlier` (a snapshot of the same meter).
    pub fn since(&self, earlier: &Tally) -> Tally {
        let mut calls = self.calls.clone();
        for (k, n) in &earlier.calls {
            if let Some(c) = calls.get_mut(k) {
                *c -= n;
            }
        }
        calls.retain(|_, n| *n > 0);
        Tally {
            calls,
            read_units: self.read_units - earlier.read_units,
            write_units: self.write_units - earlier.write_units,
            index_write_units: self.index_write_units - earlier.index_write_units,
            sqs_requests: self.sqs_requests - earlier.sqs_requests,
            events: self.events - earlier.events,
            schedules: self.schedules - earlier.schedules,
            stored_bytes: self.stored_bytes - earlier.stored_bytes,
        }
    }

    /// Calls of one service.
    pub fn calls_of(&self, service: Service) -> u64 {
        self.calls.iter().filter(|((s, _), _)| *s == service).map(|(_, n)| n).sum()
    }
}

/// One AWS call's time, from before its first request was transmitted to after its answer
/// was read.
#[derive(Debug, Clone, PartialEq)]
pub struct CallSpan {
    pub service: Service,
    pub operation: &'static str,
    pub start: Instant,
    pub end: Instant,
    /// Whether the function made the call (false: a client standing in for AWS itself, such as
    /// a rule's delivery; its time is not the function's, neither work nor waiting).
    pub by_function: bool,
}

/// Counts the AWS calls of the clients it is installed on. Clones share the counts.
#[derive(Clone, Debug, Default)]
pub struct AwsMeter(Arc<Mutex<State>>);

#[derive(Debug, Default)]
struct State {
    tally: Tally,
    /// Calls timed since the last [`AwsMeter::take_spans`].
    spans: Vec<CallSpan>,
    /// Size and index key of every item written through the meter and not deleted, by key.
    items: HashMap<(String, String), Shadow>,
}

#[derive(Debug, Clone)]
struct Shadow {
    size: u64,
    index_key: Option<(String, String)>,
}

impl Shadow {
    fn stored(&self) -> i64 {
        let table = self.size + STORED_ITEM_OVERHEAD;
        let index = if self.index_key.is_some() { self.size + STORED_ITEM_OVERHEAD } else { 0 };
        (table + index) as i64
    }
}

impl AwsMeter {
    pub fn new() -> Self {
        Self::default()
    }

    /// What was counted so far.
    pub fn snapshot(&self) -> Tally {
        self.state().tally.clone()
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The calls timed since the last take, in the order they ended.
    pub fn take_spans(&self) -> Vec<CallSpan> {
        std::mem::take(&mut self.state().spans)
    }

    fn interceptor(&self, service: Service) -> Metered {
        Metered { meter: self.clone(), service, by_function: true }
    }

    /// A DynamoDB client on `config` with the meter installed.
    pub fn dynamodb(&self, config: &aws_config::SdkConfig) -> aws_sdk_dynamodb::Client {
        let c =
            aws_sdk_dynamodb::config::Builder::from(config).interceptor(self.interceptor(Service::DynamoDb));
        aws_sdk_dynamodb::Client::from_conf(c.build())
    }

    /// An SQS client on `config` with the meter installed.
    pub fn sqs(&self, config: &aws_config::SdkConfig) -> aws_sdk_sqs::Client {
        let c = aws_sdk_sqs::config::Builder::from(config).interceptor(self.interceptor(Service::Sqs));
        aws_sdk_sqs::Client::from_conf(c.build())
    }

    /// An SQS client on `config` with the meter installed, for calls that stand in for AWS
    /// itself (an EventBridge rule's deliveries): counted and billed, timed as not the
    /// function's ([`CallSpan::by_function`] false).
    pub fn sqs_for_aws(&self, config: &aws_config::SdkConfig) -> aws_sdk_sqs::Client {
        let interceptor = Metered { meter: self.clone(), service: Service::Sqs, by_function: false };
        let c = aws_sdk_sqs::config::Builder::from(config).interceptor(interceptor);
        aws_sdk_sqs::Client::from_conf(c.build())
    }

    /// An EventBridge client on `config` with the meter installed.
    pub fn eventbridge(&self, config: &aws_config::SdkConfig) -> aws_sdk_eventbridge::Client {
        let c = aws_sdk_eventbridge::config::Builder::from(config)
            .interceptor(self.interceptor(Service::EventBridge));
        aws_sdk_eventbridge::Client::from_conf(c.build())
    }

    /// An EventBridge Scheduler client on `config` with the meter installed.
    pub fn scheduler(&self, config: &aws_config::SdkConfig) -> aws_sdk_scheduler::Client {
        let c = aws_sdk_scheduler::config::Builder::from(config)
            .interceptor(self.interceptor(Service::Scheduler));
        aws_sdk_scheduler::Client::from_conf(c.build())
    }
}

/// The meter as one client's interceptor.
#[derive(Debug)]
struct Metered {
    meter: AwsMeter,
    service: Service,
    by_function: bool,
}

/// One call's operation and times, kept from before the call to its end.
#[derive(Debug, Clone)]
struct Timing {
    operation: &'static str,
    start: Option<Instant>,
    end: Option<Instant>,
}

impl Storable for Timing {
    type Storer = StoreReplace<Self>;
}

/// A DynamoDB read's request, kept from before the call to its answer.
#[derive(Debug, Clone)]
struct ReadRequest {
    consistent: bool,
    /// Keys asked for (BatchGetItem, TransactGetItems): each costs at least the minimum.
    keys: usize,
    transactional: bool,
}

impl Storable for ReadRequest {
    type Storer = StoreReplace<Self>;
}

impl Intercept for Metered {
    fn name(&self) -> &'static str {
        "AwsMeter"
    }

    fn read_before_execution(
        &self,
        context: &BeforeSerializationInterceptorContextRef<'_>,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let input = context.input();
        let mut state = self.meter.state();
        let (operation, read) = match self.service {
            Service::DynamoDb => dynamodb_request(&mut state, input),
            Service::Sqs => (sqs_request(&mut state.tally, input), None),
            Service::EventBridge => (eventbridge_request(&mut state.tally, input), None),
            Service::Scheduler => (scheduler_request(&mut state.tally, input), None),
        };
        *state.tally.calls.entry((self.service, operation.to_owned())).or_default() += 1;
        if let Some(read) = read {
            cfg.interceptor_state().store_put(read);
        }
        cfg.interceptor_state().store_put(Timing { operation, start: None, end: None });
        Ok(())
    }

    fn read_before_transmit(
        &self,
        _context: &BeforeTransmitInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        // The first attempt's transmit starts the call's time (a retry's wait is in it too).
        if let Some(t) = cfg.load::<Timing>().filter(|t| t.start.is_none()).cloned() {
            cfg.interceptor_state().store_put(Timing { start: Some(Instant::now()), ..t });
        }
        Ok(())
    }

    fn read_after_deserialization(
        &self,
        _context: &AfterDeserializationInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        if let Some(t) = cfg.load::<Timing>().cloned() {
            cfg.interceptor_state().store_put(Timing { end: Some(Instant::now()), ..t });
        }
        Ok(())
    }

    fn read_after_execution(
        &self,
        context: &FinalizerInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let mut state = self.meter.state();
        if let Some(Timing { operation, start: Some(start), end }) = cfg.load::<Timing>().cloned() {
            state.spans.push(CallSpan {
                service: self.service,
                operation,
                start,
                end: end.unwrap_or_else(Instant::now),
                by_function: self.by_function,
            });
        }
        let Some(Ok(output)) = context.output_or_error() else { return Ok(()) };
        match self.service {
            Service::DynamoDb => {
                if let Some(read) = cfg.load::<ReadRequest>() {
                    state.tally.read_units += dynamodb_read_units(output, read);
                }
            }
            Service::Sqs => {
                if let Some(out) =
                    output.downcast_ref::<aws_sdk_sqs::operation::receive_message::ReceiveMessageOutput>()
                {
                    let bytes: usize = out.messages().iter().map(|m| m.body().map_or(0, str::len)).sum();
                    // The request itself was counted before the call; its answer's further chunks here.
                    state.tally.sqs_requests += chunks(bytes as u64) - 1;
                }
            }
            Service::EventBridge | Service::Scheduler => {}
        }
        Ok(())
    }
}

/// 64 KB chunks of a payload, at least one.
fn chunks(bytes: u64) -> u64 {
    bytes.div_ceil(CHUNK_BYTES).max(1)
}

fn units(bytes: u64, per_unit: u64) -> f64 {
    bytes.div_ceil(per_unit).max(1) as f64
}

type Attrs = HashMap<String, AttributeValue>;

/// An item's size as DynamoDB counts it: attribute names plus values.
pub fn item_size(item: &Attrs) -> u64 {
    item.iter().map(|(name, value)| name.len() as u64 + value_size(value)).sum()
}

fn value_size(v: &AttributeValue) -> u64 {
    match v {
        AttributeValue::S(s) => s.len() as u64,
        AttributeValue::N(n) => number_size(n),
        AttributeValue::B(b) => b.as_ref().len() as u64,
        AttributeValue::Bool(_) | AttributeValue::Null(_) => 1,
        AttributeValue::Ss(v) => v.iter().map(|s| s.len() as u64).sum(),
        AttributeValue::Ns(v) => v.iter().map(|n| number_size(n)).sum(),
        AttributeValue::Bs(v) => v.iter().map(|b| b.as_ref().len() as u64).sum(),
        AttributeValue::L(v) => 3 + v.iter().map(|e| 1 + value_size(e)).sum::<u64>(),
        AttributeValue::M(m) => 3 + m.iter().map(|(k, e)| 1 + k.len() as u64 + value_size(e)).sum::<u64>(),
        _ => 0,
    }
}

/// A number: about one byte per two significant digits, plus one.
fn number_size(n: &str) -> u64 {
    let digits: String = n.chars().filter(char::is_ascii_digit).collect();
    let significant = digits.trim_start_matches('0').trim_end_matches('0').len().max(1) as u64;
    significant.div_ceil(2) + 1
}

fn key_of(item: &Attrs) -> (String, String) {
    let s = |name: &str| match item.get(name) {
        Some(AttributeValue::S(s)) => s.clone(),
        _ => String::new(),
    };
    (s("PK"), s("SK"))
}

fn index_key_of(item: &Attrs) -> Option<(String, String)> {
    match (item.get("GSI1PK"), item.get("GSI1SK")) {
        (Some(AttributeValue::S(pk)), Some(AttributeValue::S(sk))) => Some((pk.clone(), sk.clone())),
        _ => None,
    }
}

/// Units of one write (times `factor`: 2 in a transaction) replacing the item at `key` by
/// `after` (`None`: deleted; the size before, for an update), and the shadow moved.
fn write(state: &mut State, key: (String, String), after: Option<Shadow>, factor: f64) {
    let before = state.items.get(&key).cloned();
    let size = before.as_ref().map_or(0, |b| b.size).max(after.as_ref().map_or(0, |a| a.size));
    state.tally.write_units += factor * units(size, WRITE_UNIT_BYTES);
    let old_index = before.as_ref().and_then(|b| b.index_key.clone());
    let new_index = after.as_ref().and_then(|a| a.index_key.clone());
    state.tally.index_write_units += match (&old_index, &new_index) {
        (Some(o), Some(n)) if o == n => units(size, WRITE_UNIT_BYTES),
        _ => {
            let old =
                old_index.map_or(0.0, |_| units(before.as_ref().map_or(0, |b| b.size), WRITE_UNIT_BYTES));
            let new =
                new_index.map_or(0.0, |_| units(after.as_ref().map_or(0, |a| a.size), WRITE_UNIT_BYTES));
            old + new
        }
    };
    state.tally.stored_bytes -= before.as_ref().map_or(0, Shadow::stored);
    match after {
        Some(a) => {
            state.tally.stored_bytes += a.stored();
            state.items.insert(key, a);
        }
        None => {
            state.items.remove(&key);
        }
    }
}

fn put(state: &mut State, item: &Attrs, factor: f64) {
    let shadow = Shadow { size: item_size(item), index_key: index_key_of(item) };
    write(state, key_of(item), Some(shadow), factor);
}

fn delete(state: &mut State, key: &Attrs, factor: f64) {
    write(state, key_of(key), None, factor);
}

/// An update keeps the item's index key; an atomic add changes its size by a number at most.
fn update(state: &mut State, key: &Attrs, factor: f64) {
    let k = key_of(key);
    let after = state.items.get(&k).cloned().unwrap_or(Shadow { size: item_size(key) + 16, index_key: None });
    write(state, k, Some(after), factor);
}

/// A condition check reads the item as a transactional write would write it.
fn check(state: &mut State, key: &Attrs, factor: f64) {
    let size = state.items.get(&key_of(key)).map_or(0, |s| s.size);
    state.tally.write_units += factor * units(size, WRITE_UNIT_BYTES);
}

fn dynamodb_request(state: &mut State, input: &Input) -> (&'static str, Option<ReadRequest>) {
    use aws_sdk_dynamodb::operation as op;
    let read = |consistent: Option<bool>, keys: usize, transactional: bool| {
        Some(ReadRequest { consistent: consistent.unwrap_or(false), keys, transactional })
    };
    if let Some(i) = input.downcast_ref::<op::get_item::GetItemInput>() {
        ("GetItem", read(i.consistent_read(), 1, false))
    } else if let Some(i) = input.downcast_ref::<op::query::QueryInput>() {
        // Index reads are eventually consistent whatever the flag.
        let consistent = i.index_name().is_none() && i.consistent_read() == Some(true);
        ("Query", read(Some(consistent), 0, false))
    } else if let Some(i) = input.downcast_ref::<op::scan::ScanInput>() {
        ("Scan", read(i.consistent_read(), 0, false))
    } else if let Some(i) = input.downcast_ref::<op::batch_get_item::BatchGetItemInput>() {
        let (keys, consistent) = i.request_items().map_or((0, false), |m| {
            let keys = m.values().map(|k| k.keys().len()).sum();
            (keys, m.values().all(|k| k.consistent_read() == Some(true)))
        });
        ("BatchGetItem", read(Some(consistent), keys, false))
    } else if let Some(i) = input.downcast_ref::<op::transact_get_items::TransactGetItemsInput>() {
        ("TransactGetItems", read(Some(true), i.transact_items().len(), true))
    } else if let Some(i) = input.downcast_ref::<op::put_item::PutItemInput>() {
        if let Some(item) = i.item() {
            put(state, item, 1.0);
        }
        ("PutItem", None)
    } else if let Some(i) = input.downcast_ref::<op::delete_item::DeleteItemInput>() {
        if let Some(key) = i.key() {
            delete(state, key, 1.0);
        }
        ("DeleteItem", None)
    } else if let Some(i) = input.downcast_ref::<op::update_item::UpdateItemInput>() {
        if let Some(key) = i.key() {
            update(state, key, 1.0);
        }
        ("UpdateItem", None)
    } else if let Some(i) = input.downcast_ref::<op::batch_write_item::BatchWriteItemInput>() {
        for request in i.request_items().into_iter().flat_map(|m| m.values()).flatten() {
            if let Some(p) = request.put_request() {
                put(state, p.item(), 1.0);
            }
            if let Some(d) = request.delete_request() {
                delete(state, d.key(), 1.0);
            }
        }
        ("BatchWriteItem", None)
    } else if let Some(i) = input.downcast_ref::<op::transact_write_items::TransactWriteItemsInput>() {
        for w in i.transact_items() {
            if let Some(p) = w.put() {
                put(state, p.item(), 2.0);
            }
            if let Some(d) = w.delete() {
                delete(state, d.key(), 2.0);
            }
            if let Some(u) = w.update() {
                update(state, u.key(), 2.0);
            }
            if let Some(c) = w.condition_check() {
                check(state, c.key(), 2.0);
            }
        }
        ("TransactWriteItems", None)
    } else {
        ("other (table management)", None)
    }
}

fn dynamodb_read_units(output: &Output, read: &ReadRequest) -> f64 {
    use aws_sdk_dynamodb::operation as op;
    let factor = if read.transactional {
        2.0
    } else if read.consistent {
        1.0
    } else {
        0.5
    };
    let per_item = |items: &mut dyn Iterator<Item = &Attrs>| -> f64 {
        let mut found = 0;
        let mut total = 0.0;
        for item in items {
            found += 1;
            total += units(item_size(item), READ_UNIT_BYTES);
        }
        // Keys not found still cost the minimum each.
        total + read.keys.saturating_sub(found) as f64
    };
    let raw = if let Some(o) = output.downcast_ref::<op::get_item::GetItemOutput>() {
        units(o.item().map_or(0, item_size), READ_UNIT_BYTES)
    } else if let Some(o) = output.downcast_ref::<op::query::QueryOutput>() {
        units(o.items().iter().map(item_size).sum(), READ_UNIT_BYTES)
    } else if let Some(o) = output.downcast_ref::<op::scan::ScanOutput>() {
        units(o.items().iter().map(item_size).sum(), READ_UNIT_BYTES)
    } else if let Some(o) = output.downcast_ref::<op::batch_get_item::BatchGetItemOutput>() {
        per_item(&mut o.responses().into_iter().flat_map(|m| m.values()).flatten())
    } else if let Some(o) = output.downcast_ref::<op::transact_get_items::TransactGetItemsOutput>() {
        per_item(&mut o.responses().iter().filter_map(|r| r.item()))
    } else {
        0.0
    };
    raw * factor
}

fn sqs_request(tally: &mut Tally, input: &Input) -> &'static str {
    use aws_sdk_sqs::operation as op;
    let (name, bytes) = if let Some(i) = input.downcast_ref::<op::send_message_batch::SendMessageBatchInput>()
    {
        ("SendMessageBatch", i.entries().iter().map(|e| e.message_body().len()).sum::<usize>())
    } else if let Some(i) = input.downcast_ref::<op::send_message::SendMessageInput>() {
        ("SendMessage", i.message_body().map_or(0, str::len))
    } else if input.downcast_ref::<op::receive_message::ReceiveMessageInput>().is_some() {
        ("ReceiveMessage", 0)
    } else if input.downcast_ref::<op::delete_message_batch::DeleteMessageBatchInput>().is_some() {
        ("DeleteMessageBatch", 0)
    } else if input.downcast_ref::<op::delete_message::DeleteMessageInput>().is_some() {
        ("DeleteMessage", 0)
    } else {
        ("other", 0)
    };
    tally.sqs_requests += chunks(bytes as u64);
    name
}

fn eventbridge_request(tally: &mut Tally, input: &Input) -> &'static str {
    use aws_sdk_eventbridge::operation as op;
    if let Some(i) = input.downcast_ref::<op::put_events::PutEventsInput>() {
        for e in i.entries() {
            let bytes = [e.source(), e.detail_type(), e.detail(), e.event_bus_name()]
                .iter()
                .map(|s| s.map_or(0, str::len))
                .sum::<usize>();
            tally.events += chunks(bytes as u64);
        }
        "PutEvents"
    } else {
        "other"
    }
}

fn scheduler_request(tally: &mut Tally, input: &Input) -> &'static str {
    use aws_sdk_scheduler::operation as op;
    if input.downcast_ref::<op::create_schedule::CreateScheduleInput>().is_some() {
        tally.schedules += 1;
        "CreateSchedule"
    } else if input.downcast_ref::<op::delete_schedule::DeleteScheduleInput>().is_some() {
        "DeleteSchedule"
    } else {
        "other"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> AttributeValue {
        AttributeValue::S(v.to_owned())
    }

    fn item(pk: &str, data_bytes: usize, index: Option<&str>) -> Attrs {
        let mut item = HashMap::from([
            ("PK".to_owned(), s(pk)),
            ("SK".to_owned(), s("#")),
            ("data".to_owned(), s(&"x".repeat(data_bytes))),
        ]);
        if let Some(i) = index {
            item.insert("GSI1PK".into(), s(i));
            item.insert("GSI1SK".into(), s("1"));
        }
        item
    }

    #[test]
    fn sizes_count_names_and_values_as_dynamodb_does() {
        // "PK" + "USER#1" = 8, "SK" + "#" = 3, "data" + 10 = 14.
        assert_eq!(item_size(&item("USER#1", 10, None)), 25);
        // A number: names plus about one byte per two significant digits, plus one.
        let n = HashMap::from([("ver".to_owned(), AttributeValue::N("12345".into()))]);
        assert_eq!(item_size(&n), 3 + 4);
        assert_eq!(number_size("1000"), 2);
    }

    #[test]
    fn writes_bill_per_kilobyte_of_the_larger_size_and_the_index_again() {
        let mut state = State::default();
        put(&mut state, &item("A", 100, None), 1.0);
        assert_eq!(state.tally.write_units, 1.0);
        // 2,000 bytes of data: 2 units; in the index: 2 more.
        put(&mut state, &item("A", 2_000, Some("I")), 1.0);
        assert_eq!(state.tally.write_units, 3.0);
        assert_eq!(state.tally.index_write_units, 2.0);
        // Deleting it costs the size it had, in the table and in the index.
        delete(&mut state, &item("A", 0, None), 1.0);
        assert_eq!(state.tally.write_units, 5.0);
        assert_eq!(state.tally.index_write_units, 4.0);
        assert_eq!(state.tally.stored_bytes, 0);
        // In a transaction, twice.
        put(&mut state, &item("B", 10, None), 2.0);
        assert_eq!(state.tally.write_units, 7.0);
        assert_eq!(state.tally.stored_bytes, item_size(&item("B", 10, None)) as i64 + 100);
    }
}
