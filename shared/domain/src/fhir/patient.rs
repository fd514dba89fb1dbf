//! `Patient`: a user of the team. Its id is the Wearlab `user_id`; its identifiers are the
//! `user_id` and the team's `client_user_id`; name, birth date, gender, telecom and address
//! come from the demographics the team stored for lab orders, when it did.

use serde_json::{Value, json};
use wearlab_models::lab::UserInfo;

use super::{FhirError, instant};
use crate::Deps;
use crate::DomainError;
use crate::common::ids::{TeamId, UserId};
use crate::lab;
use crate::users::{self, UserRecord};

/// The identifier system of a Wearlab `user_id`.
pub const USER_ID_SYSTEM: &str = "urn:wearlab:user_id";

/// The identifier system of a team's `client_user_id` (unique within the team only).
pub fn client_user_id_system(team: TeamId) -> String {
    format!("urn:wearlab:team:{team}:client_user_id")
}

/// The active user of the team, or a 404 naming the Patient. One read.
pub async fn check(deps: &Deps, team: TeamId, user: UserId) -> Result<UserRecord, FhirError> {
    match users::load_active(deps, team, user).await {
        Ok((record, _)) => Ok(record),
        Err(DomainError::NotFound(_)) => Err(not_found(&user.to_string())),
        Err(e) => Err(e.into()),
    }
}

fn not_found(id: &str) -> FhirError {
    FhirError::NotFound(format!("Patient {id} not found."))
}

/// `GET Patient/{id}`: two reads (the user, its demographics).
pub async fn read(deps: &Deps, team: TeamId, id: &str) -> Result<Value, FhirError> {
    let user = UserId::parse(id).ok_or_else(|| not_found(id))?;
    let record = check(deps, team, user).await?;
    let info = lab::demographics::find(deps, user).await?;
    Ok(of_user(&record, info.as_ref()))
}

/// The Patient of a user and its demographics.
pub fn of_user(record: &UserRecord, info: Option<&UserInfo>) -> Value {
    let mut p = json!({
        "resourceType": "Patient",
        "id": record.user_id.to_string(),
        "meta": {"lastUpdated": instant(record.created_on)},
        "identifier": [
            {"use": "official", "system": USER_ID_SYSTEM, "value": record.user_id.to_string()},
            {"use": "secondary", "system": client_user_id_system(record.team_id), "value": record.client_user_id.as_str()},
        ],
        "active": true,
    });
    if let Some(i) = info {
        p["name"] = json!([{"use": "official", "family": i.last_name, "given": [i.first_name]}]);
        p["telecom"] = json!([
            {"system": "email", "value": i.email},
            {"system": "phone", "value": i.phone_number},
        ]);
        p["gender"] = json!(gender(&i.gender));
        p["birthDate"] = json!(i.dob.to_string());
        let a = &i.address;
        let mut lines = vec![a.first_line.clone()];
        lines.extend(a.second_line.clone().filter(|l| !l.is_empty()));
        p["address"] = json!([{
            "line": lines, "city": a.city, "state": a.state, "postalCode": a.zip, "country": a.country,
        }]);
    }
    p
}

/// FHIR's administrative gender (`male`, `female`, `other`, `unknown`) of the text the team gave.
fn gender(text: &str) -> &'static str {
    match text.trim().to_ascii_lowercase().as_str() {
        "male" | "m" => "male",
        "female" | "f" => "female",
        "other" => "other",
        _ => "unknown",
    }
}
