//! Per-user credentials for the phone: the sign-in token a team's backend asks for, its one-time
//! exchange for an access token and a refresh token, the refresh (rotating both), and the
//! verification of an access token on every request. docs/MOBILE.md, "Per-user credentials",
//! documents the formats and lifetimes.
//!
//! Every token is an RS256 JWT (RFC 7519, RFC 7518 section 3.3) signed with the deployment's
//! [`SigningKey`], except the refresh token: an opaque random secret naming its session, stored
//! only as its SHA-256 in the user's partition ([`keys::phone`]), so that erasing the user
//! removes every credential.
//!
//! The sign-in token is in the format the Junction mobile SDKs parse (`VitalJWTAuth` in
//! `tryVital/vital-ios` `Sources/VitalCore` and `tryVital/vital-android`): padded base64 of
//! `{"public_key", "user_token"}`, the user token a JWT whose header is exactly
//! `{"alg":"RS256","typ":"JWT"}` and whose claims carry `iss`, `uid`, `tenant_id` and
//! `claims.vital_team_id`.

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use chrono::{DateTime, Duration, Utc};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::Deps;
use crate::DomainError;
use crate::common::crypto::{SigningKey, random_bytes};
use crate::common::ids::{TeamId, UserId};
use crate::keys;
use crate::ports::{Condition, Item, StoreError, WriteOp};
use crate::users;

/// How long a sign-in token may be exchanged (once).
pub const SIGN_IN_TOKEN_LIFETIME: Duration = Duration::hours(1);
/// How long an access token opens the user's routes (the `expires_in` answered).
pub const ACCESS_TOKEN_LIFETIME: Duration = Duration::hours(1);
/// How long a session lives without a refresh: every refresh extends it by this much.
pub const SESSION_LIFETIME: Duration = Duration::days(90);
/// How many replaced refresh tokens a session remembers (by hash), to tell a replay of one of
/// them (which revokes the session) from a token that never was.
const REMEMBERED_REFRESH_TOKENS: usize = 16;

/// The sign-in token's issuer, in the shape the SDKs accept:
/// `id-signer-{env}-{region}@vital-id-{env}-{region}.iam.gserviceaccount.com`. The SDKs pick the
/// API host from it; `local` in `eu` is the iOS SDK's local environment (API and auth on
/// `http://localhost:8000`), the one environment of an unmodified SDK that does not point at the
/// upstream service (docs/MOBILE.md says how to wire an app).
pub const SIGN_IN_ISSUER: &str = "id-signer-local-eu@vital-id-local-eu.iam.gserviceaccount.com";
/// The access token's issuer and scope: what sets it apart from a sign-in token signed with the
/// same key.
pub const ACCESS_ISSUER: &str = "wearlab";
pub const ACCESS_SCOPE: &str = "user";

/// The form fields of `POST /auth/v1/token` (RFC 8693 token exchange, RFC 6749 refresh).
pub const TOKEN_EXCHANGE_GRANT: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
pub const REFRESH_GRANT: &str = "refresh_token";
pub const SIGN_IN_TOKEN_TYPE: &str = "urn:junction:sign-in-token";

/// The prefix of refresh tokens: `wlrt.<user id>.<session id>.<secret>`.
const REFRESH_PREFIX: &str = "wlrt";

/// Why a grant is refused; [`TokenError::error_type`] is what the SDKs read.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// A form the endpoint does not take (a field missing or unknown).
    #[error("{0}")]
    InvalidRequest(String),
    #[error("unsupported grant_type")]
    UnsupportedGrantType,
    /// A sign-in token that is not ours, expired or already exchanged; a refresh token that is
    /// unknown, expired, replayed, of a revoked session or of a user who is gone. The reason is
    /// for the logs only.
    #[error("invalid token: {0}")]
    InvalidToken(&'static str),
    #[error(transparent)]
    Domain(#[from] DomainError),
}

impl From<StoreError> for TokenError {
    fn from(e: StoreError) -> Self {
        Self::Domain(e.into())
    }
}

impl TokenError {
    /// The `detail.error_type` the SDKs read (`invalid_token` signs the SDK out).
    pub fn error_type(&self) -> &'static str {
        match self {
            Self::InvalidRequest(_) => "invalid_request",
            Self::UnsupportedGrantType => "unsupported_grant_type",
            Self::InvalidToken(_) => "invalid_token",
            Self::Domain(_) => "server_error",
        }
    }
}

/// The header of every JWT here, exactly as the SDKs require it.
const JWT_HEADER: &str = r#"{"alg":"RS256","typ":"JWT"}"#;

#[derive(Deserialize)]
struct Header {
    alg: String,
    typ: Option<String>,
}

/// `header.claims.signature`, each part base64url without padding.
fn encode_jwt<T: Serialize>(key: &SigningKey, claims: &T) -> String {
    let claims = serde_json::to_vec(claims).expect("claims serialize to JSON");
    let signed = format!("{}.{}", URL_SAFE_NO_PAD.encode(JWT_HEADER), URL_SAFE_NO_PAD.encode(claims));
    let signature = key.sign_rs256(signed.as_bytes());
    format!("{signed}.{}", URL_SAFE_NO_PAD.encode(signature))
}

/// The claims of a JWT signed by `key` with RS256, or `None` (any other algorithm, a bad
/// signature, claims of another shape). Expiry is the caller's check.
fn decode_jwt<T: DeserializeOwned>(key: &SigningKey, token: &str) -> Option<T> {
    let mut parts = token.split('.');
    let (header, claims, signature) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let h: Header = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(header).ok()?).ok()?;
    if h.alg != "RS256" || h.typ.as_deref().is_some_and(|t| t != "JWT") {
        return None;
    }
    let signature = URL_SAFE_NO_PAD.decode(signature).ok()?;
    let signed = &token[..header.len() + 1 + claims.len()];
    if !key.verify_rs256(signed.as_bytes(), &signature) {
        return None;
    }
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(claims).ok()?).ok()
}

/// The claims of a sign-in token's user token.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SignInClaims {
    pub iss: String,
    /// The user.
    pub uid: UserId,
    /// The team.
    pub tenant_id: TeamId,
    pub claims: TeamClaims,
    pub iat: i64,
    pub exp: i64,
    /// Unique per token: what its one-time use is marked by.
    pub jti: Uuid,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TeamClaims {
    pub vital_team_id: TeamId,
}

/// The claims of an access token.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AccessClaims {
    pub iss: String,
    /// The user.
    pub sub: UserId,
    pub team: TeamId,
    /// The session (of the refresh token) it was issued in.
    pub sid: Uuid,
    pub scope: String,
    pub iat: i64,
    pub exp: i64,
}

/// The sign-in token as the SDKs read it: `public_key` (the deployment's public key: standard
/// base64 of its X.509 SubjectPublicKeyInfo DER, one line, as it may travel in a URL) and
/// `user_token` (the JWT).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SignInToken {
    pub public_key: String,
    pub user_token: String,
}

/// Issues a sign-in token for an active user of `team` (404 otherwise, as the user routes
/// answer): padded base64 of [`SignInToken`]'s JSON, exchangeable once within
/// [`SIGN_IN_TOKEN_LIFETIME`].
pub async fn issue_sign_in_token(
    deps: &Deps,
    key: &SigningKey,
    team: TeamId,
    user: UserId,
) -> Result<String, DomainError> {
    users::load_active(deps, team, user).await?;
    let now = deps.now();
    let claims = SignInClaims {
        iss: SIGN_IN_ISSUER.to_owned(),
        uid: user,
        tenant_id: team,
        claims: TeamClaims { vital_team_id: team },
        iat: now.timestamp(),
        exp: (now + SIGN_IN_TOKEN_LIFETIME).timestamp(),
        jti: Uuid::new_v4(),
    };
    let public_key = STANDARD.encode(key.public_key_der());
    let token = SignInToken { public_key, user_token: encode_jwt(key, &claims) };
    Ok(STANDARD.encode(serde_json::to_vec(&token).expect("the token serializes")))
}

/// What a grant answers: `expires_in` is the access token's lifetime in whole seconds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenPair {
    pub access_token: String,
    pub refresh_token: String,
    pub expires_in: i64,
}

/// A grant of `POST /auth/v1/token`, parsed from its form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Grant {
    /// A sign-in token (its user token, or the whole base64 sign-in token) for a new session.
    Exchange {
        subject_token: String,
    },
    Refresh {
        refresh_token: String,
    },
}

impl Grant {
    /// An `application/x-www-form-urlencoded` body.
    pub fn parse_form(body: &[u8]) -> Result<Self, TokenError> {
        let fields: Vec<(String, String)> = form_fields(body);
        let field = |name: &str| {
            fields.iter().rev().find(|(k, _)| k == name).map(|(_, v)| v.trim()).filter(|v| !v.is_empty())
        };
        let missing = |name: &str| TokenError::InvalidRequest(format!("{name} is required"));
        match field("grant_type") {
            None => Err(missing("grant_type")),
            Some(TOKEN_EXCHANGE_GRANT) => {
                match field("subject_token_type") {
                    None => return Err(missing("subject_token_type")),
                    Some(SIGN_IN_TOKEN_TYPE) => {}
                    Some(_) => {
                        return Err(TokenError::InvalidRequest(format!(
                            "subject_token_type must be {SIGN_IN_TOKEN_TYPE}"
                        )));
                    }
                }
                let token = field("subject_token").ok_or_else(|| missing("subject_token"))?;
                Ok(Self::Exchange { subject_token: token.to_owned() })
            }
            Some(REFRESH_GRANT) => {
                let token = field("refresh_token").ok_or_else(|| missing("refresh_token"))?;
                Ok(Self::Refresh { refresh_token: token.to_owned() })
            }
            Some(_) => Err(TokenError::UnsupportedGrantType),
        }
    }
}

/// The pairs of a form body (`+` is a space, percent-escapes decoded), in order.
fn form_fields(body: &[u8]) -> Vec<(String, String)> {
    let text = String::from_utf8_lossy(body);
    let decode = |s: &str| {
        let spaced = s.replace('+', " ");
        percent_decode(&spaced)
    };
    text.split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| match pair.split_once('=') {
            Some((k, v)) => (decode(k), decode(v)),
            None => (decode(pair), String::new()),
        })
        .collect()
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1).copied().and_then(hex), bytes.get(i + 2).copied().and_then(hex)) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Runs a grant of `POST /auth/v1/token`.
pub async fn grant(deps: &Deps, key: &SigningKey, grant: Grant) -> Result<TokenPair, TokenError> {
    match grant {
        Grant::Exchange { subject_token } => exchange(deps, key, &subject_token).await,
        Grant::Refresh { refresh_token } => refresh(deps, key, &refresh_token).await,
    }
}

/// The user token of a subject token: the JWT itself (what the SDKs send) or the whole base64
/// sign-in token.
fn user_token_of(subject: &str) -> Option<String> {
    if subject.split('.').count() == 3 {
        return Some(subject.to_owned());
    }
    let json = STANDARD.decode(subject).ok()?;
    Some(serde_json::from_slice::<SignInToken>(&json).ok()?.user_token)
}

/// Exchanges a sign-in token, once, for a new session's tokens.
pub async fn exchange(deps: &Deps, key: &SigningKey, subject_token: &str) -> Result<TokenPair, TokenError> {
    let bad = TokenError::InvalidToken;
    let jwt = user_token_of(subject_token).ok_or(bad("not a sign-in token"))?;
    let claims: SignInClaims = decode_jwt(key, &jwt).ok_or(bad("not signed by this deployment"))?;
    if claims.iss != SIGN_IN_ISSUER {
        return Err(bad("not a sign-in token"));
    }
    let now = deps.now();
    if claims.exp <= now.timestamp() {
        return Err(bad("sign-in token expired"));
    }
    if claims.claims.vital_team_id != claims.tenant_id {
        return Err(bad("not a sign-in token"));
    }
    active_user(deps, claims.tenant_id, claims.uid).await?;
    let (session, pair) = Session::start(key, claims.tenant_id, claims.uid, now);
    let used =
        Item::new(keys::phone::sign_in_used(claims.uid, claims.jti), serde_json::json!({"used_at": now}))
            .with_expiry(Some(claims.exp));
    let ops = vec![
        WriteOp::Put { item: used, condition: Condition::NotExists },
        WriteOp::Put { item: session.item(1), condition: Condition::NotExists },
    ];
    match deps.table.transact(ops).await {
        Ok(()) => Ok(pair),
        Err(StoreError::ConditionFailed { .. }) => Err(bad("sign-in token already exchanged")),
        Err(e) => Err(e.into()),
    }
}

/// A new session of an active user of `team`, without a sign-in token: the Open Wearables
/// dialect's `POST /api/v1/users/{user_id}/token`, which the team's key authorises. 404 for a
/// user who is not an active user of the team.
pub async fn open_session(
    deps: &Deps,
    key: &SigningKey,
    team: TeamId,
    user: UserId,
) -> Result<TokenPair, DomainError> {
    users::load_active(deps, team, user).await?;
    let (session, pair) = Session::start(key, team, user, deps.now());
    deps.table.put(session.item(1), Condition::NotExists).await?;
    Ok(pair)
}

/// Whether `user` is an active user of `team`; a refusal is `invalid_token` (the SDK signs out).
async fn active_user(deps: &Deps, team: TeamId, user: UserId) -> Result<(), TokenError> {
    match users::load_active(deps, team, user).await {
        Ok(_) => Ok(()),
        Err(DomainError::NotFound(_)) => Err(TokenError::InvalidToken("the user is gone")),
        Err(e) => Err(e.into()),
    }
}

/// Rotates a session's tokens: the refresh token given must be the session's current one; a
/// replaced one (a replay: it was stolen, or the client lost an answer) revokes the session.
pub async fn refresh(deps: &Deps, key: &SigningKey, refresh_token: &str) -> Result<TokenPair, TokenError> {
    let bad = TokenError::InvalidToken;
    let token = RefreshToken::parse(refresh_token).ok_or(bad("not a refresh token"))?;
    let (mut session, version) = Session::load(deps, &token).await?.ok_or(bad("no such session"))?;
    let now = deps.now();
    if session.revoked_at.is_some() {
        return Err(bad("session revoked"));
    }
    if session.refreshed_at + SESSION_LIFETIME <= now {
        return Err(bad("session expired"));
    }
    let hash = token.hash();
    if hash != session.refresh_sha256 {
        if session.replaced_sha256.contains(&hash) {
            tracing::warn!(user_id = %token.user, session = %token.session, "replayed refresh token: session revoked");
            session.revoked_at = Some(now);
            // A concurrent change loses nothing: the session is refused either way.
            match deps.table.put(session.item(version + 1), Condition::VersionIs(version)).await {
                Ok(()) | Err(StoreError::ConditionFailed { .. }) => {}
                Err(e) => return Err(e.into()),
            }
            return Err(bad("refresh token replayed"));
        }
        return Err(bad("unknown refresh token"));
    }
    active_user(deps, session.team_id, session.user_id).await?;
    let next = RefreshToken::new(session.user_id, token.session);
    session.replaced_sha256.insert(0, hash);
    session.replaced_sha256.truncate(REMEMBERED_REFRESH_TOKENS);
    session.refresh_sha256 = next.hash();
    session.refreshed_at = now;
    match deps.table.put(session.item(version + 1), Condition::VersionIs(version)).await {
        Ok(()) => Ok(session.pair(key, &next, now)),
        // Another refresh with the same token won: this one is the replay.
        Err(StoreError::ConditionFailed { .. }) => Err(bad("refresh token already used")),
        Err(e) => Err(e.into()),
    }
}

/// Revokes the session of a refresh token (current or replaced one). A token that opens no
/// session is no error: the answer is the same (RFC 7009 section 2.2).
pub async fn revoke(deps: &Deps, refresh_token: &str) -> Result<(), DomainError> {
    let Some(token) = RefreshToken::parse(refresh_token) else { return Ok(()) };
    let Some((mut session, version)) = Session::load(deps, &token).await? else { return Ok(()) };
    let hash = token.hash();
    if session.revoked_at.is_some()
        || !(hash == session.refresh_sha256 || session.replaced_sha256.contains(&hash))
    {
        return Ok(());
    }
    session.revoked_at = Some(deps.now());
    match deps.table.put(session.item(version + 1), Condition::VersionIs(version)).await {
        Ok(()) | Err(StoreError::ConditionFailed { .. }) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// The claims of an access token signed by `key`, unexpired at `now`: checked in memory (the
/// caller then checks that the user is still active, one read).
pub fn verify_access(key: &SigningKey, token: &str, now: DateTime<Utc>) -> Option<AccessClaims> {
    let claims: AccessClaims = decode_jwt(key, token)?;
    let ok = claims.iss == ACCESS_ISSUER && claims.scope == ACCESS_SCOPE && claims.exp > now.timestamp();
    ok.then_some(claims)
}

/// A refresh token: the user and session it belongs to, and 256 random bits.
struct RefreshToken {
    user: UserId,
    session: Uuid,
    text: String,
}

impl RefreshToken {
    fn new(user: UserId, session: Uuid) -> Self {
        let secret = URL_SAFE_NO_PAD.encode(random_bytes::<32>());
        Self { user, session, text: format!("{REFRESH_PREFIX}.{user}.{session}.{secret}") }
    }

    fn parse(text: &str) -> Option<Self> {
        let mut parts = text.trim().split('.');
        let (prefix, user, session, secret) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
        if prefix != REFRESH_PREFIX || parts.next().is_some() || secret.len() != 43 {
            return None;
        }
        Some(Self {
            user: UserId::parse(user)?,
            session: Uuid::parse_str(session).ok()?,
            text: text.trim().to_owned(),
        })
    }

    /// What storage keeps: SHA-256, hex.
    fn hash(&self) -> String {
        hex::encode(Sha256::digest(self.text.as_bytes()))
    }
}

/// A phone session as stored (in the user's partition).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Session {
    user_id: UserId,
    team_id: TeamId,
    session_id: Uuid,
    /// SHA-256 (hex) of the current refresh token.
    refresh_sha256: String,
    /// SHA-256 of the refresh tokens it replaced, newest first.
    #[serde(default)]
    replaced_sha256: Vec<String>,
    created_at: DateTime<Utc>,
    refreshed_at: DateTime<Utc>,
    #[serde(default)]
    revoked_at: Option<DateTime<Utc>>,
}

impl Session {
    /// A new session and its first tokens.
    fn start(key: &SigningKey, team: TeamId, user: UserId, now: DateTime<Utc>) -> (Self, TokenPair) {
        let session_id = Uuid::new_v4();
        let refresh = RefreshToken::new(user, session_id);
        let session = Self {
            user_id: user,
            team_id: team,
            session_id,
            refresh_sha256: refresh.hash(),
            replaced_sha256: Vec::new(),
            created_at: now,
            refreshed_at: now,
            revoked_at: None,
        };
        let pair = session.pair(key, &refresh, now);
        (session, pair)
    }

    async fn load(deps: &Deps, token: &RefreshToken) -> Result<Option<(Self, u64)>, StoreError> {
        let Some(item) = deps.table.get(&keys::phone::session(token.user, token.session)).await? else {
            return Ok(None);
        };
        let session: Self = item.decode()?;
        // The token names its user: a session of another user is not its session.
        Ok((session.user_id == token.user).then_some((session, item.version)))
    }

    /// The stored item at `version`; storage drops it when the session has expired.
    fn item(&self, version: u64) -> Item {
        let body = serde_json::to_value(self).expect("a session serializes");
        let mut item = Item::new(keys::phone::session(self.user_id, self.session_id), body)
            .with_expiry(Some((self.refreshed_at + SESSION_LIFETIME).timestamp()));
        item.version = version;
        item
    }

    /// An access token of this session with `refresh`.
    fn pair(&self, key: &SigningKey, refresh: &RefreshToken, now: DateTime<Utc>) -> TokenPair {
        let claims = AccessClaims {
            iss: ACCESS_ISSUER.to_owned(),
            sub: self.user_id,
            team: self.team_id,
            sid: self.session_id,
            scope: ACCESS_SCOPE.to_owned(),
            iat: now.timestamp(),
            exp: (now + ACCESS_TOKEN_LIFETIME).timestamp(),
        };
        TokenPair {
            access_token: encode_jwt(key, &claims),
            refresh_token: refresh.text.clone(),
            expires_in: ACCESS_TOKEN_LIFETIME.num_seconds(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> SigningKey {
        SigningKey::fixed_for_tests()
    }

    fn team() -> TeamId {
        TeamId::from_uuid(Uuid::from_u128(1))
    }

    fn user() -> UserId {
        UserId::parse("5b5e7f9c-2d0b-4a51-9f0e-0a5d2c7b1e11").unwrap()
    }

    fn access(exp: i64) -> AccessClaims {
        AccessClaims {
            iss: ACCESS_ISSUER.into(),
            sub: user(),
            team: team(),
            sid: Uuid::from_u128(9),
            scope: ACCESS_SCOPE.into(),
            iat: 0,
            exp,
        }
    }

    #[test]
    fn a_jwt_has_the_sdks_header_and_verifies_only_with_its_key_and_untouched() {
        let key = key();
        let now = Utc::now();
        let token = encode_jwt(&key, &access(now.timestamp() + 60));
        let header = token.split('.').next().unwrap();
        assert_eq!(URL_SAFE_NO_PAD.decode(header).unwrap(), br#"{"alg":"RS256","typ":"JWT"}"#);
        assert_eq!(verify_access(&key, &token, now), Some(access(now.timestamp() + 60)));
        // Another key, a changed claim, a changed signature, a token of another algorithm.
        let (other, _) = SigningKey::generate().unwrap();
        assert_eq!(verify_access(&other, &token, now), None);
        let parts: Vec<&str> = token.split('.').collect();
        let mut forged = access(now.timestamp() + 60);
        forged.sub = UserId::parse("00000000-0000-4000-8000-000000000001").unwrap();
        let forged_claims = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&forged).unwrap());
        assert_eq!(verify_access(&key, &format!("{}.{forged_claims}.{}", parts[0], parts[2]), now), None);
        let mut sig = URL_SAFE_NO_PAD.decode(parts[2]).unwrap();
        sig[0] ^= 1;
        let bad_sig = URL_SAFE_NO_PAD.encode(sig);
        assert_eq!(verify_access(&key, &format!("{}.{}.{bad_sig}", parts[0], parts[1]), now), None);
        let none = URL_SAFE_NO_PAD.encode(r#"{"alg":"none","typ":"JWT"}"#);
        assert_eq!(verify_access(&key, &format!("{none}.{}.", parts[1]), now), None);
        assert_eq!(verify_access(&key, "not a token", now), None);
    }

    #[test]
    fn an_access_token_expires_and_a_sign_in_token_is_not_one() {
        let key = key();
        let now = Utc::now();
        let token = encode_jwt(&key, &access(now.timestamp()));
        assert_eq!(verify_access(&key, &token, now), None, "expired at exp");
        let sign_in = SignInClaims {
            iss: SIGN_IN_ISSUER.into(),
            uid: user(),
            tenant_id: team(),
            claims: TeamClaims { vital_team_id: team() },
            iat: 0,
            exp: now.timestamp() + 60,
            jti: Uuid::new_v4(),
        };
        assert_eq!(verify_access(&key, &encode_jwt(&key, &sign_in), now), None);
    }

    #[test]
    fn grant_forms_parse_as_the_sdks_send_them() {
        let exchange = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Atoken-exchange\
            &subject_token_type=urn%3Ajunction%3Asign-in-token&subject_token=a.b.c";
        assert_eq!(
            Grant::parse_form(exchange.as_bytes()).unwrap(),
            Grant::Exchange { subject_token: "a.b.c".into() }
        );
        assert_eq!(
            Grant::parse_form(b"grant_type=refresh_token&refresh_token=wlrt.x").unwrap(),
            Grant::Refresh { refresh_token: "wlrt.x".into() }
        );
        let kind = |body: &str| Grant::parse_form(body.as_bytes()).unwrap_err().error_type();
        assert_eq!(kind(""), "invalid_request");
        assert_eq!(kind("grant_type=password&username=a"), "unsupported_grant_type");
        assert_eq!(kind("grant_type=refresh_token"), "invalid_request");
        assert_eq!(
            kind("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Atoken-exchange&subject_token=a.b.c"),
            "invalid_request"
        );
        assert_eq!(
            kind(
                "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Atoken-exchange\
                 &subject_token_type=urn%3Aietf%3Aparams%3Aoauth%3Atoken-type%3Ajwt&subject_token=a.b.c"
            ),
            "invalid_request"
        );
    }

    #[test]
    fn refresh_tokens_name_their_session_and_parse_back() {
        let t = RefreshToken::new(user(), Uuid::from_u128(5));
        let back = RefreshToken::parse(&t.text).unwrap();
        assert_eq!((back.user, back.session, back.hash()), (user(), Uuid::from_u128(5), t.hash()));
        assert_ne!(RefreshToken::new(user(), Uuid::from_u128(5)).text, t.text, "random secret");
        assert!(RefreshToken::parse("rt-0123").is_none());
        assert!(RefreshToken::parse(&t.text[..t.text.len() - 1]).is_none());
    }
}
