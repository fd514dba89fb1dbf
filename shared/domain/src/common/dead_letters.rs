//! What an operator may see of a dead-lettered queue message: its kind and ids, never its
//! payload (provider data, sealed recipes, tokens, client user ids, event data).

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;

use crate::ports::{Envelope, QueueName};

/// The three queues that have a dead-letter queue, by the name an operator types.
pub fn queue_named(name: &str) -> Option<QueueName> {
    match name {
        "pull" => Some(QueueName::Pull),
        "bulk" => Some(QueueName::Bulk),
        "webhook" => Some(QueueName::Webhook),
        _ => None,
    }
}

/// Ids found in a message, by a fixed list of field names; everything else is left out.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct MessageIds {
    /// `pull`, `poll`, `pushed_poll`, `poll_all`, `import`, `trigger`, `deliver`, `event`, or
    /// `unreadable`.
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub team_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pull_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub op_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoint_id: Option<String>,
}

/// One dead letter as listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeadLetter {
    /// The queue's id of the message.
    pub id: String,
    /// Deliveries before it was given up.
    pub receive_count: u32,
    /// Seconds since it was first sent (SQS) or dead-lettered (local); `None` when unknown.
    pub age_seconds: Option<i64>,
    #[serde(flatten)]
    pub ids: MessageIds,
}

/// A bounded look at a dead-letter queue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeadLetterListing {
    pub queue: String,
    /// Messages in the dead-letter queue (approximate on SQS).
    pub count: u64,
    pub messages: Vec<DeadLetter>,
}

/// The result of moving dead letters back to their source queue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Redriven {
    pub queue: String,
    pub moved: u64,
}

/// Ids longer than this are not ids: they are left out.
const MAX_ID_CHARS: usize = 80;

fn id_at(v: &Value, key: &str) -> Option<String> {
    match v.get(key)? {
        Value::String(s) if !s.is_empty() && s.chars().count() <= MAX_ID_CHARS => Some(s.clone()),
        _ => None,
    }
}

/// The kind and ids of a queue message body (the raw text SQS or the local queue holds).
pub fn describe(raw: &str) -> MessageIds {
    match serde_json::from_str::<Envelope>(raw) {
        Ok(envelope) => describe_body(&envelope.body),
        Err(_) => MessageIds { kind: "unreadable".into(), ..MessageIds::default() },
    }
}

/// The kind and ids of an envelope's body: pull and poll jobs (`{"pull": {...}}`), bulk
/// messages (`{"kind": ...}`), webhook deliveries and events.
pub fn describe_body(body: &Value) -> MessageIds {
    let mut ids = MessageIds::default();
    // Externally tagged jobs: one key naming the job, its fields inside.
    let (kind, inner) = match body {
        Value::Object(map) if map.len() == 1 && map.values().all(Value::is_object) => {
            let (k, v) = map.iter().next().expect("one entry");
            (Some(k.clone()), v)
        }
        _ => (None, body),
    };
    ids.kind = kind
        .or_else(|| id_at(inner, "kind"))
        .or_else(|| inner.get("endpoint_id").map(|_| "deliver".to_owned()))
        .or_else(|| inner.get("event_type").map(|_| "event".to_owned()))
        .unwrap_or_else(|| "unknown".into());
    let event = inner.get("event").unwrap_or(inner);
    let op = inner.get("op").or_else(|| inner.get("bulk_op"));
    ids.event_type = id_at(event, "event_type");
    ids.team_id = id_at(inner, "team_id")
        .or_else(|| op.and_then(|o| id_at(o, "team_id")))
        .or_else(|| id_at(event, "team_id"));
    ids.user_id = id_at(inner, "user_id").or_else(|| id_at(event, "user_id"));
    ids.provider = id_at(inner, "provider");
    ids.pull_id = id_at(inner, "pull_id");
    ids.op_id = op.and_then(|o| id_at(o, "op_id"));
    ids.endpoint_id = id_at(inner, "endpoint_id");
    ids
}

/// Age in whole seconds from `since` to `now`, never negative.
pub fn age_seconds(since: DateTime<Utc>, now: DateTime<Utc>) -> i64 {
    (now - since).num_seconds().max(0)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn pull_job_shows_its_ids_only() {
        let raw = json!({"body": {"pull": {"team_id": "t1", "user_id": "u1", "provider": "fitbit",
            "pull_id": "p1"}}})
        .to_string();
        let d = describe(&raw);
        assert_eq!(d.kind, "pull");
        assert_eq!((d.team_id.as_deref(), d.user_id.as_deref()), (Some("t1"), Some("u1")));
        assert_eq!((d.provider.as_deref(), d.pull_id.as_deref()), (Some("fitbit"), Some("p1")));
    }

    #[test]
    fn bulk_import_hides_its_sealed_recipes() {
        let raw = json!({"body": {"kind": "import", "op": {"team_id": "t1", "op_id": "o1",
            "started_at": "2026-01-01T00:00:00Z"}, "chunk": 2, "items": 3, "recipes": "SEALED-SECRET"}})
        .to_string();
        let d = describe(&raw);
        assert_eq!(d.kind, "import");
        assert_eq!((d.team_id.as_deref(), d.op_id.as_deref()), (Some("t1"), Some("o1")));
        assert!(!serde_json::to_string(&d).unwrap().contains("SEALED"));
    }

    #[test]
    fn webhook_delivery_shows_event_type_not_data() {
        let raw = json!({"body": {"endpoint_id": "e1", "team_id": "t1", "message_id": "m", "attempt": 2,
            "event": {"event_type": "daily.data.sleep.created", "user_id": "u1", "client_user_id": "jane@x",
            "team_id": "t1", "data": {"token": "SECRET"}}}})
        .to_string();
        let d = describe(&raw);
        assert_eq!(d.kind, "deliver");
        assert_eq!(d.event_type.as_deref(), Some("daily.data.sleep.created"));
        assert_eq!(d.user_id.as_deref(), Some("u1"));
        let text = serde_json::to_string(&d).unwrap();
        assert!(!text.contains("SECRET") && !text.contains("jane"), "{text}");
    }

    #[test]
    fn unreadable_bodies_are_named_so() {
        assert_eq!(describe("not json").kind, "unreadable");
        assert_eq!(queue_named("pull"), Some(QueueName::Pull));
        assert_eq!(queue_named("other"), None);
    }
}
