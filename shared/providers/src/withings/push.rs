//! Withings's notifications: the categories (`appli`) Wearlab subscribes to, what each one
//! concerns, and the reading of a request to the push endpoint (a reachability check, or an
//! unsigned form naming the user and the span that changed).

use chrono::Duration;
use serde::Deserialize;
use wearlab_domain::ports::providers::{DateRange, PushNotice, PushOutcome, PushRequest};
use wearlab_models::Resource;

use super::SLUG;
use super::mappings::epoch;

/// The notification categories (`appli`) Wearlab subscribes to: every one [`resources_of_appli`]
/// maps (body measures, temperature, blood pressure/heart rate/SpO2, activity, sleep), and 46,
/// the user's profile actions, whose `unlink` tells that the user took Wearlab's access away.
/// The codes are the notifications guide's (developer.withings.com, "Notification content");
/// the Withings API reference's `notify` operations do not list them.
pub const NOTIFY_APPLIS: [u32; 6] = [1, 2, 4, 16, 44, APPLI_USER];

/// `appli` 46: user profile actions, with `action` `update`, `unlink` or `delete`.
pub const APPLI_USER: u32 = 46;

/// The catalog resources a notification category (`appli`) concerns; none for categories
/// Wearlab does not map (bed in/out, ECG, ...). Appli 1 is every `getmeas` measure of the
/// scale and the thermometers' body and skin temperature (measure types 71 and 73) among them.
/// Appli 46's unlink is read apart ([`read_push`]).
pub fn resources_of_appli(appli: i64) -> &'static [Resource] {
    match appli {
        1 => &[Resource::Body, Resource::Weight, Resource::Fat, Resource::Profile, Resource::BodyTemperature],
        2 => &[Resource::BodyTemperature],
        4 => &[Resource::BloodOxygen],
        16 => &[
            Resource::Activity,
            Resource::Workouts,
            Resource::Heartrate,
            Resource::Steps,
            Resource::Distance,
            Resource::CaloriesActive,
        ],
        44 => &[Resource::Sleep],
        _ => &[],
    }
}

/// Withings's notification form.
#[derive(Debug, Deserialize)]
struct Notification {
    userid: String,
    appli: i64,
    #[serde(default)]
    startdate: Option<i64>,
    #[serde(default)]
    enddate: Option<i64>,
    /// Appli 46's profile action (`update`, `unlink`, `delete`).
    #[serde(default)]
    action: Option<String>,
}

/// Reads a request to Withings's push endpoint. HEAD and GET are Withings's reachability
/// check before it registers a callback (answered 200). A POST is the form `userid, appli,
/// startdate, enddate`: Withings documents no signature, so a notice is only a hint to fetch
/// with Wearlab's own credentials (a forged one costs at most a redundant fetch).
pub fn read_push(request: &PushRequest) -> PushOutcome {
    match request.method.to_ascii_uppercase().as_str() {
        "HEAD" | "GET" => return PushOutcome::Handshake { status: 200, body: None },
        "POST" => {}
        _ => return PushOutcome::Refused(format!("{SLUG} push with an unexpected method")),
    }
    let Ok(n) = serde_urlencoded::from_bytes::<Notification>(&request.body) else {
        return PushOutcome::Refused(format!("{SLUG} push with an unreadable form"));
    };
    if n.userid.trim().is_empty() {
        return PushOutcome::Refused(format!("{SLUG} push without a user id"));
    }
    let user = n.userid.trim().to_owned();
    if n.appli == i64::from(APPLI_USER) {
        // The user unlinked Wearlab (or deleted the account). The notice is unsigned, so it is
        // not taken as the end of the connection by itself: the connection is polled, and the
        // tokens Withings invalidated end it (the refused refresh marks it, as any revoked
        // access is); a forged notice costs one poll.
        return match n.action.as_deref() {
            Some("unlink" | "delete") => PushOutcome::Notices(vec![PushNotice {
                external_user_id: user,
                resources: vec![Resource::Profile],
                range: None,
            }]),
            _ => PushOutcome::Notices(vec![]),
        };
    }
    let resources = resources_of_appli(n.appli);
    if resources.is_empty() {
        return PushOutcome::Notices(vec![]);
    }
    // The range is in epoch seconds and the user's days are local: a day either side covers
    // any zone.
    let range = match (n.startdate.and_then(epoch), n.enddate.and_then(epoch)) {
        (Some(a), Some(b)) => Some(DateRange {
            start: a.min(b).date_naive() - Duration::days(1),
            end: a.max(b).date_naive() + Duration::days(1),
        }),
        _ => None,
    };
    PushOutcome::Notices(vec![PushNotice { external_user_id: user, resources: resources.to_vec(), range }])
}
