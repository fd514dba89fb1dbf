//! Portal links: a page pre-authorized for one user, showing their lab orders. A link carries a
//! token `<claims>.<signature>` (base64url JSON claims with an expiry, HMAC-SHA256 signed with
//! the deployment's key). `launch` links live 10 minutes; `communications` links live 4 weeks
//! and are short: a random code whose pointer item holds the link's claims (and expires with
//! it). The code opens the portal, so storage keeps only an HMAC of it (the pointer's key and the
//! user's record of the link are named by it), and never a signed token that would open it.

use base64::Engine;
use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;
use wearlab_models::PortalContext;
use wearlab_models::lab::{
    CollectionMethod, Interpretation, Order, OrderEvent, OrderResults, PatientServiceCenter, PortalUrl,
    PortalUrlBody, ResultEntry, ResultType,
};

use super::orders::{self, Links};
use super::psc;
use crate::Deps;
use crate::common::error::{DomainError, Found};
use crate::common::ids::{TeamId, UserId};
use crate::common::signing;
use crate::keys::lab as keys;
use crate::ports::LabNetwork;
use crate::ports::lab_network::{status_detail, status_group};
use crate::ports::to_body;
use crate::ports::{Condition, Item, WriteOp};
use crate::users::load_active;

pub const LAUNCH_LIFETIME: Duration = Duration::minutes(10);
pub const COMMUNICATIONS_LIFETIME: Duration = Duration::weeks(4);
/// Length of a short link's code (base62: about 71 bits).
pub const CODE_LEN: usize = 12;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Claims {
    #[serde(rename = "u")]
    user_id: UserId,
    #[serde(rename = "t")]
    team_id: TeamId,
    #[serde(rename = "o", default, skip_serializing_if = "Option::is_none")]
    order_id: Option<Uuid>,
    #[serde(rename = "c")]
    context: String,
    exp: i64,
}

/// A short link's pointer (outside the user's partition), under the HMAC of its code.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct ShortLink {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    claims: Option<Claims>,
    /// Pointers made before codes were kept as HMACs: under the code itself, with the signed
    /// token. They expire within the communications lifetime.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    token: Option<String>,
    user_id: UserId,
}

/// What storage names a short link by: the HMAC of its code under the deployment's signing key.
fn code_handle(key: &[u8], code: &str) -> String {
    signing::sign(key, &format!("portal-code:{code}"))
}

/// The user's record of a short link (in the user's partition, so erasure finds the pointer).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct ShortLinkRecord {
    expires_at: DateTime<Utc>,
}

fn b64() -> base64::engine::GeneralPurpose {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
}

fn encode_token(key: &[u8], claims: &Claims) -> String {
    let payload = b64().encode(serde_json::to_vec(claims).expect("claims serialize"));
    let sig = signing::sign(key, &payload);
    format!("{payload}.{sig}")
}

fn random_code() -> String {
    const ALPHABET: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let mut bytes = Vec::with_capacity(32);
    bytes.extend_from_slice(Uuid::new_v4().as_bytes());
    bytes.extend_from_slice(Uuid::new_v4().as_bytes());
    bytes.iter().take(CODE_LEN).map(|b| ALPHABET[usize::from(*b) % ALPHABET.len()] as char).collect()
}

/// Creates a portal link for an active user of the team who has demographics.
pub async fn create(
    deps: &Deps,
    team: TeamId,
    user_id: UserId,
    body: PortalUrlBody,
    links: &Links,
) -> Result<PortalUrl, DomainError> {
    load_active(deps, team, user_id).await?;
    if PortalContext::known(body.context.as_str()).is_none() {
        return Err(DomainError::invalid(
            &["context"],
            format!("'{}' is not one of: {}", body.context, PortalContext::KNOWN.join(", ")),
            "enum",
        ));
    }
    if super::demographics::find(deps, user_id).await?.is_none() {
        return Err(DomainError::invalid(
            &["user_id"],
            "the user has no demographics: set them with PATCH /v2/user/{user_id}/info first",
            "missing_demographics",
        ));
    }
    if let Some(order_id) = body.order_id
        && !orders::belongs_to(deps, user_id, order_id).await?
    {
        return Err(DomainError::invalid(&["order_id"], "not an order of this user", "value_error"));
    }
    let now = deps.now();
    let lifetime = match body.context {
        PortalContext::Launch => LAUNCH_LIFETIME,
        _ => COMMUNICATIONS_LIFETIME,
    };
    let expires_at = now + lifetime;
    let claims = Claims {
        user_id,
        team_id: team,
        order_id: body.order_id,
        context: body.context.to_string(),
        exp: expires_at.timestamp(),
    };
    let key = signing::key(deps).await?;
    let url = match body.context {
        PortalContext::Launch => {
            format!("{}/v3/portal?token={}", links.base_url, encode_token(&key, &claims))
        }
        _ => {
            let code = random_code();
            let handle = code_handle(&key, &code);
            let expiry = Some(expires_at.timestamp());
            let pointer = ShortLink { claims: Some(claims), token: None, user_id };
            deps.table
                .transact(vec![
                    WriteOp::Put {
                        item: Item::new(keys::portal_pointer(&handle), to_body(&pointer)).with_expiry(expiry),
                        condition: Condition::NotExists,
                    },
                    WriteOp::Put {
                        item: Item::new(
                            keys::portal_link(user_id, &handle),
                            to_body(&ShortLinkRecord { expires_at }),
                        )
                        .with_expiry(expiry),
                        condition: Condition::NotExists,
                    },
                ])
                .await?;
            format!("{}/v3/p/{code}", links.base_url)
        }
    };
    tracing::info!(team_id = %team, user_id = %user_id, context = %body.context, "portal link created");
    Ok(PortalUrl { url, expires_in: lifetime.num_seconds() })
}

/// Why a portal link does not open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Denied {
    /// Not a link we issued (bad signature or malformed).
    Invalid,
    /// Issued, but its time is over.
    Expired,
    /// The user is gone (deleted or erased).
    Gone,
}

/// Who a link opens the portal for.
#[derive(Debug, Clone, PartialEq)]
pub struct Access {
    pub team_id: TeamId,
    pub user_id: UserId,
    pub order_id: Option<Uuid>,
    pub expires_at: DateTime<Utc>,
    pub context: PortalContext,
    /// What the link carried: the token of a launch link, the code of a short link. Forms
    /// and the identity check are bound to it.
    pub link: String,
}

impl Access {
    /// A `communications` link travels by email or SMS and lives for weeks, so it may be
    /// forwarded or read over a shoulder: it opens only on a device that proved, with a
    /// one-time code, to belong to the user (see `verification`). A `launch` link is opened
    /// from the team's own signed-in session and lives minutes.
    pub fn needs_verification(&self) -> bool {
        self.context == PortalContext::Communications
    }
}

/// Checks the token of a launch link (`/v3/portal?token=`). The token of a communications
/// link is refused here: it opens only through its short link, which asks for the identity
/// check.
pub async fn check_token(deps: &Deps, token: &str) -> Result<Result<Access, Denied>, DomainError> {
    Ok(match check_signed(deps, token).await? {
        Ok(a) if a.needs_verification() => Err(Denied::Invalid),
        other => other,
    })
}

/// Checks a signed token: the outcome, or why it does not open.
async fn check_signed(deps: &Deps, token: &str) -> Result<Result<Access, Denied>, DomainError> {
    let Some((payload, sig)) = token.split_once('.') else { return Ok(Err(Denied::Invalid)) };
    let key = signing::key(deps).await?;
    if !signing::verify(&key, payload, sig) {
        return Ok(Err(Denied::Invalid));
    }
    let Some(claims) = b64().decode(payload).ok().and_then(|b| serde_json::from_slice::<Claims>(&b).ok())
    else {
        return Ok(Err(Denied::Invalid));
    };
    check_claims(deps, claims, token).await
}

/// Checks what a link grants (signed, or found under its code): expiry, and the user still there.
async fn check_claims(
    deps: &Deps,
    claims: Claims,
    link: &str,
) -> Result<Result<Access, Denied>, DomainError> {
    let Some(expires_at) = DateTime::from_timestamp(claims.exp, 0) else { return Ok(Err(Denied::Invalid)) };
    if expires_at <= deps.now() {
        return Ok(Err(Denied::Expired));
    }
    if load_active(deps, claims.team_id, claims.user_id).await.found()?.is_none() {
        return Ok(Err(Denied::Gone));
    }
    Ok(Ok(Access {
        team_id: claims.team_id,
        user_id: claims.user_id,
        order_id: claims.order_id,
        expires_at,
        context: PortalContext::from(claims.context.as_str()),
        link: link.to_owned(),
    }))
}

/// Checks a short link's code, then its token.
pub async fn check_code(deps: &Deps, code: &str) -> Result<Result<Access, Denied>, DomainError> {
    if code.len() != CODE_LEN || !code.chars().all(|c| c.is_ascii_alphanumeric()) {
        return Ok(Err(Denied::Invalid));
    }
    let handle = code_handle(&signing::key(deps).await?, code);
    let item = match deps.table.get(&keys::portal_pointer(&handle)).await? {
        Some(item) => item,
        None => match deps.table.get(&keys::portal_pointer(code)).await? {
            Some(legacy) => legacy,
            None => return Ok(Err(Denied::Invalid)),
        },
    };
    // The TTL deletes lazily: an expired pointer may still be there; its claims say so.
    let link: ShortLink = item.decode()?;
    let checked = match (link.claims, link.token) {
        (Some(claims), _) => check_claims(deps, claims, code).await?,
        (None, Some(token)) => check_signed(deps, &token).await?,
        (None, None) => Err(Denied::Invalid),
    };
    Ok(checked.map(|a| Access { link: code.to_owned(), ..a }))
}

/// What the portal page shows.
#[derive(Debug, Clone, PartialEq)]
pub struct View {
    pub first_name: String,
    pub orders: Vec<Order>,
    pub focus: Option<Uuid>,
    pub expires_at: DateTime<Utc>,
}

/// The page's content for an opened link.
pub async fn view(
    deps: &Deps,
    network: &dyn LabNetwork,
    access: &Access,
    links: &Links,
) -> Result<View, DomainError> {
    let first_name =
        super::demographics::find(deps, access.user_id).await?.map(|d| d.first_name).unwrap_or_default();
    let mut orders = orders::of_user(deps, network, access.user_id, links).await?;
    if let Some(focus) = access.order_id {
        orders.retain(|o| o.id == focus);
    }
    Ok(View { first_name, orders, focus: access.order_id, expires_at: access.expires_at })
}

/// How many patient service centers the portal lists for an order, nearest first.
pub const PORTAL_CENTERS: usize = 5;

/// Draw sites near the patient for an order collected at a site.
#[derive(Debug, Clone, PartialEq)]
pub enum Centers {
    Near {
        radius_miles: u32,
        centers: Vec<PatientServiceCenter>,
    },
    /// The sample is not drawn at a site (a kit, a home visit).
    NotNeeded,
    /// No location is known for the patient's ZIP code.
    Unknown,
}

/// One order as its page shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct OrderView {
    pub order: Order,
    pub centers: Centers,
    /// Results as reported so far; `None` before the lab reports any.
    pub results: Option<OrderResults>,
    pub expires_at: DateTime<Utc>,
}

/// One order of the link's user: `None` when it is not theirs, or the link opens another one.
pub async fn order_view(
    deps: &Deps,
    network: &dyn LabNetwork,
    access: &Access,
    order_id: Uuid,
    links: &Links,
) -> Result<Option<OrderView>, DomainError> {
    if access.order_id.is_some_and(|o| o != order_id)
        || !orders::belongs_to(deps, access.user_id, order_id).await?
    {
        return Ok(None);
    }
    let order = orders::get(deps, network, access.team_id, order_id, links).await?;
    let centers = if order.collection_method == CollectionMethod::WalkInTest {
        match psc::near(&order.patient_address.zip, order.lab.id, psc::DEFAULT_RADIUS, &[]) {
            Ok(mut centers) => {
                centers.truncate(PORTAL_CENTERS);
                Centers::Near { radius_miles: psc::DEFAULT_RADIUS, centers }
            }
            Err(DomainError::Rejected(_)) => Centers::Unknown,
            Err(e) => return Err(e),
        }
    } else {
        Centers::NotNeeded
    };
    let results = match orders::results(deps, network, access.team_id, order_id, links).await {
        Ok(r) => Some(r),
        Err(DomainError::NotFound(_)) => None,
        Err(e) => return Err(e),
    };
    Ok(Some(OrderView { order, centers, results, expires_at: access.expires_at }))
}

/// Where an order is, in the words its patient reads: one stage per status the lab networks
/// send, told apart by collection method where the patient's next step differs (a visit to a
/// draw site, a home visit, a kit in the post).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    Ordered,
    RequisitionReady,
    /// Walk-in: the patient goes to a draw site.
    VisitDrawSite,
    /// At-home phlebotomy: the visit is being arranged.
    AppointmentPending,
    AppointmentScheduled,
    KitOnTheWay,
    KitDelivered,
    /// A test kit's sample on its way back to the lab.
    SampleOnTheWay,
    SampleCollected,
    SampleAtLab,
    SomeResults,
    ResultsReady,
    Cancelled,
    Failed,
    /// A sample is awaited in a way this version does not name.
    WaitingForSample,
    /// A status this version does not know.
    InProgress,
}

impl Stage {
    /// The stage of a status `<group>.<collection_method>.<detail>`.
    pub fn of(status: &str) -> Self {
        let method = status.split('.').nth(1).unwrap_or_default();
        match (status_group(status), status_detail(status)) {
            ("received", "requisition_created") => Self::RequisitionReady,
            ("received", _) => Self::Ordered,
            ("collecting_sample", "appointment_scheduled") => Self::AppointmentScheduled,
            ("collecting_sample", "transit_customer" | "out_for_delivery") => Self::KitOnTheWay,
            ("collecting_sample", "with_customer") => Self::KitDelivered,
            ("collecting_sample", "transit_lab") => Self::SampleOnTheWay,
            ("collecting_sample", _) => match CollectionMethod::from(method) {
                CollectionMethod::WalkInTest => Self::VisitDrawSite,
                CollectionMethod::AtHomePhlebotomy => Self::AppointmentPending,
                _ => Self::WaitingForSample,
            },
            ("sample_with_lab", "draw_completed") => Self::SampleCollected,
            ("sample_with_lab", "partial_results") => Self::SomeResults,
            ("sample_with_lab", _) => Self::SampleAtLab,
            ("completed", _) => Self::ResultsReady,
            ("cancelled", _) => Self::Cancelled,
            ("failed", _) => Self::Failed,
            _ => Self::InProgress,
        }
    }
}

/// One step of an order's timeline: a stage and when the order reached it.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub stage: Stage,
    pub at: DateTime<Utc>,
}

/// The order's history as its patient reads it, oldest first, the last step the current one:
/// its events in order, statuses that read the same merged into their first. An order without
/// events (none recorded yet) has one step, its status at its creation.
pub fn timeline(order: &Order) -> Vec<Step> {
    let mut steps = steps(&order.events);
    if steps.is_empty() {
        steps.push(Step { stage: Stage::of(&order.status), at: order.created_at });
    }
    steps
}

fn steps(events: &[OrderEvent]) -> Vec<Step> {
    let mut events: Vec<_> = events.iter().collect();
    events.sort_by_key(|e| e.id);
    let mut steps: Vec<Step> = Vec::with_capacity(events.len());
    for e in events {
        let stage = Stage::of(&e.status);
        if steps.last().is_none_or(|s| s.stage != stage) {
            steps.push(Step { stage, at: e.created_at });
        }
    }
    steps
}

/// How a result reads against its reference range, when it needs the reader's attention.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flag {
    /// The lab calls it critical.
    Critical,
    /// Above the range's maximum.
    High,
    /// Below the range's minimum.
    Low,
    /// The lab calls it abnormal (a coded value, or no range to place it against).
    Abnormal,
}

/// The flag of one result: the lab's critical first, then where the value sits against the
/// range, then the lab's abnormal; `None` for a result within its range or read as normal.
pub fn flag(r: &ResultEntry) -> Option<Flag> {
    match r.interpretation {
        Interpretation::Critical => Some(Flag::Critical),
        _ if r.is_above_max_range == Some(true) => Some(Flag::High),
        _ if r.is_below_min_range == Some(true) => Some(Flag::Low),
        Interpretation::Abnormal => Some(Flag::Abnormal),
        _ => None,
    }
}

/// A numeric result's value and the decimals the lab reported it with (`"5.40"` is 5.4 with 2),
/// so a page can write it in its reader's conventions without losing precision; `None` for
/// any other result, shown as the lab wrote it.
pub fn numeric_value(r: &ResultEntry) -> Option<(f64, usize)> {
    if r.kind != ResultType::Numeric {
        return None;
    }
    let text = r.result.trim();
    let value: f64 = text.parse().ok().filter(|v: &f64| v.is_finite())?;
    let decimals = text.split_once('.').map_or(0, |(_, f)| f.len());
    Some((value, decimals))
}

#[cfg(test)]
mod portal_page_tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn statuses_read_by_method() {
        assert_eq!(Stage::of("received.walk_in_test.ordered"), Stage::Ordered);
        assert_eq!(Stage::of("received.testkit.requisition_created"), Stage::RequisitionReady);
        assert_eq!(Stage::of("collecting_sample.walk_in_test.appointment_pending"), Stage::VisitDrawSite);
        assert_eq!(
            Stage::of("collecting_sample.at_home_phlebotomy.appointment_pending"),
            Stage::AppointmentPending
        );
        assert_eq!(Stage::of("collecting_sample.testkit.out_for_delivery"), Stage::KitOnTheWay);
        assert_eq!(Stage::of("collecting_sample.testkit.transit_lab"), Stage::SampleOnTheWay);
        assert_eq!(Stage::of("sample_with_lab.at_home_phlebotomy.draw_completed"), Stage::SampleCollected);
        assert_eq!(Stage::of("sample_with_lab.testkit.delivered_to_lab"), Stage::SampleAtLab);
        assert_eq!(Stage::of("completed.walk_in_test.completed"), Stage::ResultsReady);
        assert_eq!(Stage::of("cancelled.testkit.cancelled"), Stage::Cancelled);
        assert_eq!(Stage::of("something.new"), Stage::InProgress);
    }

    fn event(id: u32, minutes: i64, status: &str) -> OrderEvent {
        let at = Utc.with_ymd_and_hms(2026, 4, 12, 9, 0, 0).unwrap() + Duration::minutes(minutes);
        OrderEvent { id, created_at: at, status: status.into() }
    }

    #[test]
    fn a_timeline_merges_statuses_that_read_the_same() {
        let events = [
            event(2, 1, "received.walk_in_test.requisition_created"),
            event(1, 0, "received.walk_in_test.ordered"),
            event(3, 60, "collecting_sample.walk_in_test.appointment_pending"),
            event(4, 61, "collecting_sample.walk_in_test.something_else"),
        ];
        let steps: Vec<Stage> = steps(&events).into_iter().map(|s| s.stage).collect();
        assert_eq!(steps, [Stage::Ordered, Stage::RequisitionReady, Stage::VisitDrawSite]);
    }
}
