//! `POST /v2/link/provider/manual/{provider}`: connects a user to an SDK provider (the SDKs call
//! it before every sync).

use axum::extract::{Path, State};
use wearlab_domain::phone::connect::{self, ManualConnection};
use wearlab_models::phone_sync::ManualConnectionBody;
use wearlab_models::{DetailBody, SuccessBody};
use wearlab_web::{ApiError, AppState, AuthCaller, Json, JsonBody};

/// Connects the user to an SDK provider (`apple_health_kit`, `health_connect`,
/// `samsung_health` or a Bluetooth device's provider). Idempotent: a user already connected gets
/// the same answer, and nothing is written or announced again.
#[utoipa::path(operation_id = "connect_sdk_provider", post, path = "/v2/link/provider/manual/{provider}", tag = "sdk", security(("api_key" = []), ("user_token" = [])),
    params(("provider" = String, Path, example = "apple_health_kit", description = "An SDK provider's slug.")),
    request_body = ManualConnectionBody,
    responses(
        (status = 200, description = "Connected (now or before).", body = SuccessBody),
        (status = 400, description = "Not an SDK provider; the answer names them.", body = DetailBody),
        (status = 404, description = "No such user in this team (or not the user of the bearer token).", body = DetailBody),
    ))]
pub async fn connect(
    State(s): State<AppState>,
    caller: AuthCaller,
    Path(provider): Path<String>,
    JsonBody(body): JsonBody<ManualConnectionBody>,
) -> Result<Json<SuccessBody>, ApiError> {
    let connection = ManualConnection::parse(&provider, body)?;
    caller.acting_for(connection.user_id)?;
    connect::connect(&s.deps, caller.team, connection).await?;
    Ok(Json(SuccessBody { success: true }))
}
