//! Per-user credentials for the phone: a user's sign-in token (the team's backend asks), its
//! exchange and refresh (`POST /auth/v1/token`, what the Junction SDKs call), and the Open
//! Wearables SDKs' token routes. docs/MOBILE.md, "Per-user credentials".

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use wearlab_domain::common::crypto::SigningKey;
use wearlab_domain::phone::tokens::{self, Grant, TokenError, TokenPair};
use wearlab_models::DetailBody;
use wearlab_web::{ApiError, AppState, AuthTeam, Json, JsonBody, path_user_id};

/// The answer of `POST /v2/user/{user_id}/sign_in_token`.
#[derive(Debug, Serialize, ToSchema)]
pub struct SignInTokenBody {
    pub user_id: uuid::Uuid,
    /// Padded base64 of `{"public_key": <base64 SPKI DER>, "user_token": <RS256 JWT>}`: what
    /// the SDKs' `signIn` takes. Exchangeable once, within an hour.
    pub sign_in_token: String,
}

/// New tokens of a session.
#[derive(Debug, Serialize, ToSchema)]
pub struct TokenBody {
    /// An RS256 JWT: `Authorization: Bearer <access_token>` on the user's routes.
    pub access_token: String,
    /// Opaque; exchanged for the next pair (once: the old one is then dead).
    pub refresh_token: String,
    /// Seconds the access token is valid.
    pub expires_in: i64,
    /// Always `bearer`.
    pub token_type: String,
}

impl From<TokenPair> for TokenBody {
    fn from(p: TokenPair) -> Self {
        Self {
            access_token: p.access_token,
            refresh_token: p.refresh_token,
            expires_in: p.expires_in,
            token_type: "bearer".into(),
        }
    }
}

/// The token endpoint's refusal, as the SDKs read it: `{"detail": {"error_type": ...}}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct TokenErrorBody {
    pub detail: TokenErrorDetail,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TokenErrorDetail {
    /// `invalid_request`, `unsupported_grant_type` or `invalid_token`.
    pub error_type: String,
    pub error_detail: String,
}

/// A refusal of the token endpoint in the SDKs' shape; storage failures as every route's.
struct TokenRefusal(TokenError);

impl IntoResponse for TokenRefusal {
    fn into_response(self) -> Response {
        let error_type = self.0.error_type();
        let detail = match self.0 {
            TokenError::Domain(e) => return ApiError::from(e).into_response(),
            TokenError::InvalidRequest(why) => why,
            TokenError::UnsupportedGrantType => {
                format!("grant_type must be {} or {}", tokens::TOKEN_EXCHANGE_GRANT, tokens::REFRESH_GRANT)
            }
            // The reason stays in the logs.
            TokenError::InvalidToken(why) => {
                tracing::info!(reason = why, "token refused");
                "The token is invalid, expired or already used.".into()
            }
        };
        let body = TokenErrorBody {
            detail: TokenErrorDetail { error_type: error_type.into(), error_detail: detail },
        };
        (StatusCode::BAD_REQUEST, Json(body)).into_response()
    }
}

/// The deployment's signing key; a function without it issues no token.
fn key(s: &AppState) -> Result<&SigningKey, ApiError> {
    s.phone_key().ok_or_else(|| ApiError::Unavailable("Per-user tokens are not configured.".into()))
}

/// A sign-in token for one of the team's users, for its phone app to sign in with (the SDKs'
/// `signIn`). Short-lived (one hour) and exchanged once.
#[utoipa::path(operation_id = "create_sign_in_token", post, path = "/v2/user/{user_id}/sign_in_token", tag = "sdk",
    params(("user_id" = uuid::Uuid, Path, description = "The user's id.")),
    responses(
        (status = 200, description = "The sign-in token.", body = SignInTokenBody),
        (status = 404, description = "No such user in this team.", body = DetailBody),
    ))]
pub async fn sign_in_token(
    State(s): State<AppState>,
    AuthTeam(team): AuthTeam,
    Path(user_id): Path<String>,
) -> Result<Json<SignInTokenBody>, ApiError> {
    let user = path_user_id(&user_id)?;
    let token = tokens::issue_sign_in_token(&s.deps, key(&s)?, team, user).await?;
    Ok(Json(SignInTokenBody { user_id: user.as_uuid(), sign_in_token: token }))
}

/// The SDKs' token endpoint (form body, no API key): `grant_type` token exchange
/// (`subject_token_type=urn:junction:sign-in-token`, `subject_token` the sign-in token's user
/// token) for a new session, or `refresh_token` for the session's next pair (the old refresh
/// token is then dead; replaying it revokes the session).
#[utoipa::path(operation_id = "exchange_token", post, path = "/auth/v1/token", tag = "sdk", security(()),
    request_body(content = String, content_type = "application/x-www-form-urlencoded",
        description = "`grant_type=urn:ietf:params:oauth:grant-type:token-exchange&subject_token_type=urn:junction:sign-in-token&subject_token=<JWT>` or `grant_type=refresh_token&refresh_token=<token>`."),
    responses(
        (status = 200, description = "The session's tokens.", body = TokenBody),
        (status = 400, description = "Refused: `detail.error_type` is `invalid_request`, `unsupported_grant_type` or `invalid_token`.", body = TokenErrorBody),
    ))]
pub async fn token(State(s): State<AppState>, body: Bytes) -> Result<Json<TokenBody>, Response> {
    let key = key(&s).map_err(IntoResponse::into_response)?;
    let grant = Grant::parse_form(&body).map_err(|e| TokenRefusal(e).into_response())?;
    let pair = tokens::grant(&s.deps, key, grant).await.map_err(|e| TokenRefusal(e).into_response())?;
    Ok(Json(pair.into()))
}

/// The refresh token of the Open Wearables dialect's refresh and revoke.
#[derive(Debug, Deserialize, ToSchema)]
pub struct RefreshTokenBody {
    pub refresh_token: String,
}

/// Open Wearables dialect: a new session of one of the team's users, without a sign-in token
/// (the team's backend hands the pair to its app). A body (`app_id`, `app_secret`) is ignored:
/// the team's API key authorises the call.
#[utoipa::path(operation_id = "create_user_token", post, path = "/api/v1/users/{user_id}/token", tag = "sdk",
    params(("user_id" = uuid::Uuid, Path, description = "The user's id.")),
    responses(
        (status = 200, description = "The session's tokens.", body = TokenBody),
        (status = 404, description = "No such user in this team.", body = DetailBody),
    ))]
pub async fn ow_user_token(
    State(s): State<AppState>,
    AuthTeam(team): AuthTeam,
    Path(user_id): Path<String>,
) -> Result<Json<TokenBody>, ApiError> {
    let user = path_user_id(&user_id)?;
    Ok(Json(tokens::open_session(&s.deps, key(&s)?, team, user).await?.into()))
}

/// Open Wearables dialect: the session's next pair for its current refresh token (the old one
/// is then dead; replaying it revokes the session). No API key.
#[utoipa::path(operation_id = "refresh_user_token", post, path = "/api/v1/token/refresh", tag = "sdk", security(()),
    request_body = RefreshTokenBody,
    responses(
        (status = 200, description = "The session's next tokens.", body = TokenBody),
        (status = 401, description = "Unknown, expired, replayed or revoked refresh token.", body = DetailBody),
    ))]
pub async fn ow_refresh(
    State(s): State<AppState>,
    JsonBody(body): JsonBody<RefreshTokenBody>,
) -> Result<Json<TokenBody>, ApiError> {
    match tokens::refresh(&s.deps, key(&s)?, &body.refresh_token).await {
        Ok(pair) => Ok(Json(pair.into())),
        Err(TokenError::Domain(e)) => Err(e.into()),
        Err(e) => {
            tracing::info!(reason = %e, "refresh refused");
            Err(ApiError::Unauthorized("Invalid, expired or revoked refresh token.".into()))
        }
    }
}

/// Open Wearables dialect: ends the session of a refresh token (its access tokens run out
/// within the hour). 204 whether or not the token opened a session. No API key.
#[utoipa::path(operation_id = "revoke_user_token", post, path = "/api/v1/token/revoke", tag = "sdk", security(()),
    request_body = RefreshTokenBody,
    responses((status = 204, description = "Revoked (or nothing to revoke).")))]
pub async fn ow_revoke(
    State(s): State<AppState>,
    JsonBody(body): JsonBody<RefreshTokenBody>,
) -> Result<StatusCode, ApiError> {
    tokens::revoke(&s.deps, &body.refresh_token).await?;
    Ok(StatusCode::NO_CONTENT)
}
