use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, header};
use wearlab_domain::teams::branding::{self, LogoType, MAX_LOGO_BYTES, NewBrand, NewLogo};
use wearlab_models::{Branding, BrandingBody, DetailBody, LogoImageBody};
use wearlab_web::{ApiError, AppState, AuthTeam, JsonBody};

type Answer<T> = Result<Json<T>, ApiError>;

/// The API's public address, for the uploaded logo's URL.
fn base_url(s: &AppState, headers: &HeaderMap) -> String {
    s.public_links(headers).base_url
}

/// Reads the team's brand on the hosted pages (the link widget and the user portal).
#[utoipa::path(operation_id = "get_team_branding", get, path = "/v2/team/branding", tag = "team",
    responses((status = 200, description = "The brand; every field null when never set.", body = Branding)))]
pub async fn get(State(s): State<AppState>, AuthTeam(t): AuthTeam, headers: HeaderMap) -> Answer<Branding> {
    Ok(Json(branding::brand(&s.deps, t).await?.to_wire(&base_url(&s, &headers))))
}

/// Replaces the team's brand: an omitted or null field is unset. `logo_url` is an `https://`
/// URL, or the address of the uploaded logo as `GET` answers it (which keeps that logo);
/// `accent_color` must keep a contrast ratio of 4.5:1 against white (WCAG 2.1).
#[utoipa::path(operation_id = "put_team_branding", put, path = "/v2/team/branding", tag = "team", request_body = BrandingBody,
    responses(
        (status = 200, description = "The brand now.", body = Branding),
        (status = 409, description = "The brand changed at the same time; try again.", body = DetailBody),
    ))]
pub async fn put(
    State(s): State<AppState>,
    AuthTeam(t): AuthTeam,
    headers: HeaderMap,
    JsonBody(body): JsonBody<BrandingBody>,
) -> Answer<Branding> {
    let base = base_url(&s, &headers);
    let new = NewBrand::parse(body, &base)?;
    Ok(Json(branding::put(&s.deps, t, new).await?.to_wire(&base)))
}

/// Uploads the brand's logo: the raw image as the body, PNG, JPEG or WebP (no SVG), at most
/// 100 KiB. The brand's `logo_url` becomes this deployment's address of the image, served to
/// anyone without a key (the hosted pages show it).
#[utoipa::path(operation_id = "put_team_branding_logo", put, path = "/v2/team/branding/logo", tag = "team",
    request_body(description = "The image, its bytes as they are.",
        content((LogoImageBody = "image/png"), (LogoImageBody = "image/jpeg"), (LogoImageBody = "image/webp"))),
    responses(
        (status = 200, description = "The brand now.", body = Branding),
        (status = 409, description = "The brand changed at the same time; try again.", body = DetailBody),
        (status = 413, description = "The image is over 100 KiB.", body = DetailBody),
        (status = 415, description = "Not image/png, image/jpeg or image/webp.", body = DetailBody),
        (status = 422, description = "The bytes are not an image of the declared type.", body = DetailBody),
    ))]
pub async fn put_logo(
    State(s): State<AppState>,
    AuthTeam(t): AuthTeam,
    headers: HeaderMap,
    body: Body,
) -> Answer<Branding> {
    let kind = LogoType::declared(headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()))?;
    // Read up to one byte past the limit: a larger body is refused without reading it whole.
    let bytes = axum::body::to_bytes(body, MAX_LOGO_BYTES + 1)
        .await
        .map_err(|_| ApiError::from(branding::LogoRefusal::TooLarge))?;
    let logo = NewLogo::parse(kind, &bytes)?;
    Ok(Json(branding::put_logo(&s.deps, t, logo).await?.to_wire(&base_url(&s, &headers))))
}

/// Removes the brand's logo (an uploaded one or a URL).
#[utoipa::path(operation_id = "delete_team_branding_logo", delete, path = "/v2/team/branding/logo", tag = "team",
    responses(
        (status = 200, description = "The brand now.", body = Branding),
        (status = 404, description = "The brand has no logo.", body = DetailBody),
    ))]
pub async fn delete_logo(
    State(s): State<AppState>,
    AuthTeam(t): AuthTeam,
    headers: HeaderMap,
) -> Answer<Branding> {
    Ok(Json(branding::delete_logo(&s.deps, t).await?.to_wire(&base_url(&s, &headers))))
}
