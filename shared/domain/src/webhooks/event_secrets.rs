//! Fields of events that are credentials (the portal's one-time code in
//! `user.portal.verification_requested`). The event carries them to the team as published, but
//! nothing Wearlab keeps waiting (a webhook delivery job on its retry schedule) holds them in
//! clear: they are sealed with the data key while they wait and opened just before sending.

use serde_json::{Value, json};
use wearlab_models::EventEnvelope;

use crate::common::crypto::{DataKey, Sealed};
use crate::lab::verification::EVENT_VERIFICATION_REQUESTED;
use crate::ports::StoreError;

/// (event type, field of `data`) pairs that are credentials.
const SECRET_FIELDS: &[(&str, &str)] = &[(EVENT_VERIFICATION_REQUESTED, "code")];
/// The shape a sealed field takes: `{"sealed": "v1...."}`.
const SEALED: &str = "sealed";

fn secret_fields(event_type: &str) -> impl Iterator<Item = &'static str> + '_ {
    SECRET_FIELDS.iter().filter(move |(t, _)| *t == event_type).map(|(_, f)| *f)
}

/// Seals the event's secret fields, bound to `context` (where the event waits).
pub fn seal(key: &DataKey, event: &mut EventEnvelope, context: &str) {
    for field in secret_fields(&event.event_type) {
        if let Some(Value::String(plain)) = event.data.get(field) {
            let sealed = key.seal(plain.as_bytes(), context);
            event.data[field] = json!({ SEALED: sealed });
        }
    }
}

/// Opens what [`seal`] sealed under the same `context`.
pub fn open(key: &DataKey, event: &mut EventEnvelope, context: &str) -> Result<(), StoreError> {
    for field in secret_fields(&event.event_type) {
        let Some(sealed) = event.data.get(field).and_then(|v| v.get(SEALED)).cloned() else {
            continue;
        };
        let sealed: Sealed = serde_json::from_value(sealed)
            .map_err(|_| StoreError::Corrupt("a sealed event field is not readable".into()))?;
        let plain = String::from_utf8(key.open(&sealed, context)?)
            .map_err(|_| StoreError::Corrupt("a sealed event field is not text".into()))?;
        event.data[field] = Value::String(plain);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(event_type: &str) -> EventEnvelope {
        EventEnvelope {
            event_type: event_type.into(),
            user_id: uuid::Uuid::nil(),
            client_user_id: "c".into(),
            team_id: uuid::Uuid::nil(),
            data: json!({"code": "123456", "channel": "sms"}),
        }
    }

    #[test]
    fn codes_are_sealed_while_waiting_and_opened_under_the_same_context_only() {
        let key = DataKey::ephemeral();
        let plain = event(EVENT_VERIFICATION_REQUESTED);
        let mut e = plain.clone();
        seal(&key, &mut e, "msg_1");
        assert!(!serde_json::to_string(&e).unwrap().contains("123456"));
        assert_eq!(e.data["channel"], "sms");
        let mut elsewhere = e.clone();
        assert!(open(&key, &mut elsewhere, "msg_2").is_err());
        open(&key, &mut e, "msg_1").unwrap();
        assert_eq!(e, plain);
    }

    #[test]
    fn other_events_are_left_alone() {
        let key = DataKey::ephemeral();
        let mut e = event("provider.connection.created");
        seal(&key, &mut e, "msg_1");
        assert_eq!(e, event("provider.connection.created"));
    }
}
