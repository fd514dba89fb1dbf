//! The OpenAPI 3.1 document, generated from the routers and the `wearlab-models` types.
//!
//! Handlers document what is particular to them (success body, 400/404); what every operation
//! shares (the API key, 401, 422, 413, 415, 429 and the `RateLimit-*` headers) is added here once.

use utoipa::openapi::Required;
use utoipa::openapi::path::{Operation, Parameter, ParameterBuilder, ParameterIn};
use utoipa::openapi::response::ResponseBuilder;
use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::security::{
    ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme,
};
use utoipa::openapi::{ContentBuilder, OpenApi, Ref, RefOr, Response};
use utoipa::{PartialSchema, ToSchema};
use wearlab_models::{DetailBody, LocPart, ValidationErrorBody, ValidationIssue};

use crate::auth::API_KEY_HEADER;
use crate::body::{MAX_BODY_BYTES, MAX_DECODED_BODY_BYTES};

pub const SECURITY_SCHEME: &str = "api_key";

/// The security scheme of a user's bearer token (the phone's), beside the API key on the
/// user-level routes that take one (`AuthCaller`).
pub const USER_TOKEN_SCHEME: &str = "user_token";
pub const OPENAPI_PATH: &str = "/openapi.json";

/// The document's frame: title, version, security scheme, shared error schemas.
pub fn base() -> OpenApi {
    let mut doc = utoipa::openapi::OpenApiBuilder::new()
        .info(
            utoipa::openapi::InfoBuilder::new()
                .title("Wearlab API")
                .version(env!("CARGO_PKG_VERSION"))
                .description(Some(format!(
                    "Self-hostable health-data platform API. Every operation takes the team API key in \
                     the `x-service-api-key` header. Errors are JSON with a `detail` key; validation \
                     errors (422) list each offending input with its location. Enums described as \
                     non-exhaustive may gain values: clients must tolerate unknown ones. Each team may \
                     send a limited number of requests per minute: answers carry `RateLimit-Limit`, \
                     `RateLimit-Remaining` and `RateLimit-Reset`, and a request over the limit gets 429 \
                     with `Retry-After`. A request body may be sent gzipped (`Content-Encoding: gzip`): \
                     at most {} MB as sent and {} MiB decompressed (413 past either); a stream that is \
                     not valid gzip is a 400, another encoding a 415.",
                    MAX_BODY_BYTES / (1024 * 1024),
                    MAX_DECODED_BODY_BYTES / (1024 * 1024),
                )))
                .build(),
        )
        .build();
    let components = doc.components.get_or_insert_with(Default::default);
    components.add_security_scheme(
        SECURITY_SCHEME,
        SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
            API_KEY_HEADER,
            "Team API key (sk_...). Missing or unknown: 401.",
        ))),
    );
    components.add_security_scheme(
        USER_TOKEN_SCHEME,
        SecurityScheme::Http(
            HttpBuilder::new()
                .scheme(HttpAuthScheme::Bearer)
                .bearer_format("JWT")
                .description(Some(
                    "A user's access token from the phone's token exchange (docs/MOBILE.md): opens that \
                     user's routes only, where an operation lists it beside the API key.",
                ))
                .build(),
        ),
    );
    components.responses.insert(TOO_MANY_REQUESTS.into(), too_many_requests());
    for (name, schema) in [
        (DetailBody::name(), DetailBody::schema()),
        (ValidationErrorBody::name(), ValidationErrorBody::schema()),
        (ValidationIssue::name(), ValidationIssue::schema()),
        (LocPart::name(), LocPart::schema()),
    ] {
        components.schemas.insert(name.into_owned(), schema);
    }
    doc
}

fn json_response(description: &str, schema: &str) -> RefOr<Response> {
    ResponseBuilder::new()
        .description(description)
        .content(
            "application/json",
            ContentBuilder::new().schema(Some(Ref::from_schema_name(schema))).build(),
        )
        .build()
        .into()
}

/// Adds what every operation shares.
pub fn finish(doc: &mut OpenApi) {
    for item in doc.paths.paths.values_mut() {
        if let Some(op) = &mut item.post {
            finish_operation(op, true);
        }
        for op in [
            &mut item.get,
            &mut item.put,
            &mut item.delete,
            &mut item.patch,
            &mut item.head,
            &mut item.options,
        ]
        .into_iter()
        .flatten()
        {
            finish_operation(op, false);
        }
    }
}

/// Every POST takes an optional idempotency key.
fn idempotency_key_parameter() -> Parameter {
    ParameterBuilder::new()
        .name("X-Idempotency-Key")
        .parameter_in(ParameterIn::Header)
        .required(Required::False)
        .description(Some(
            "Repeat-safe retries: the first answer to a request with this key is kept for 24 hours and \
             replayed (header `Idempotent-Replayed: true`) for the same request; the same key with a \
             different request is a 422; a repeat while the first still runs waits, then answers 409.",
        ))
        .schema(Some(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .min_length(Some(1))
                .max_length(Some(255))
                .pattern(Some("^[!-~]+$")),
        ))
        .build()
}

fn finish_operation(op: &mut Operation, is_post: bool) {
    if is_post {
        op.parameters.get_or_insert_with(Vec::new).push(idempotency_key_parameter());
        op.responses.responses.entry("409".into()).or_insert_with(|| {
            json_response("A request with the same idempotency key is still running; retry.", "DetailBody")
        });
    }
    // An operation that declares `security(())` takes no API key: the phone's token exchange,
    // where the credential is in the form (a sign-in or refresh token). It says so with no
    // security requirement at all, and has no 401 of a missing key.
    let public = op
        .security
        .as_ref()
        .is_some_and(|s| !s.is_empty() && s.iter().all(|r| *r == SecurityRequirement::default()));
    // An operation that also takes a user's bearer token declares both; every other takes the
    // API key only.
    let both = vec![
        SecurityRequirement::new(SECURITY_SCHEME, Vec::<String>::new()),
        SecurityRequirement::new(USER_TOKEN_SCHEME, Vec::<String>::new()),
    ];
    let user_level = op.security.as_ref() == Some(&both);
    op.security = Some(match (public, user_level) {
        (true, _) => Vec::new(),
        (false, true) => both,
        (false, false) => vec![SecurityRequirement::new(SECURITY_SCHEME, Vec::<String>::new())],
    });
    let has_body = op.request_body.is_some();
    let has_input = has_body || op.parameters.as_ref().is_some_and(|p| !p.is_empty());
    let responses = &mut op.responses.responses;
    if !public {
        responses
            .entry("401".into())
            .or_insert_with(|| json_response("Missing or unknown API key.", "DetailBody"));
    }
    if has_input {
        responses.entry("422".into()).or_insert_with(|| {
            json_response("Invalid input: each offending field with its location.", "ValidationErrorBody")
        });
    }
    // An operation with a 429 of its own (refresh) describes it and gets the same headers.
    match responses.entry("429".into()).or_insert_with(|| Ref::new(TOO_MANY_REQUESTS_REF).into()) {
        RefOr::T(own) => {
            for (name, text) in RATE_LIMIT_HEADERS {
                own.headers.entry(name.into()).or_insert_with(|| header(text));
            }
        }
        RefOr::Ref(_) => {}
    }
    if has_body {
        responses.entry("413".into()).or_insert_with(|| {
            json_response(
                &format!(
                    "Request body over the {} MB limit, or over {} MiB once decompressed; split the \
                     request.",
                    MAX_BODY_BYTES / (1024 * 1024),
                    MAX_DECODED_BODY_BYTES / (1024 * 1024)
                ),
                "DetailBody",
            )
        });
        responses.entry("415".into()).or_insert_with(|| {
            json_response("A `Content-Encoding` other than gzip (or x-gzip) and identity.", "DetailBody")
        });
    }
    if has_input {
        responses.entry("414".into()).or_insert_with(|| {
            json_response("The path and query are longer than the API reads (8 KiB).", "DetailBody")
        });
    }
}

/// The shared 429 of every operation (`components.responses`).
const TOO_MANY_REQUESTS: &str = "TooManyRequests";
const TOO_MANY_REQUESTS_REF: &str = "#/components/responses/TooManyRequests";

/// The team's fair use refused the request: the shared 429, with its headers.
fn too_many_requests() -> RefOr<Response> {
    let mut r = ResponseBuilder::new()
        .description(
            "The team sent more than its requests per minute (fair use, per team across every instance); \
             `Retry-After` says when the next minute starts. Every answer to a request with an accepted key \
             carries the `RateLimit-*` headers.",
        )
        .content(
            "application/json",
            ContentBuilder::new().schema(Some(Ref::from_schema_name("DetailBody"))).build(),
        )
        .build();
    for (name, text) in RATE_LIMIT_HEADERS {
        r.headers.insert(name.into(), header(text));
    }
    r.into()
}

/// The fair-use headers of every answer to a request with an API key (and `Retry-After` on a 429).
const RATE_LIMIT_HEADERS: [(&str, &str); 4] = [
    ("Retry-After", "Seconds until a request is accepted again (on a 429)."),
    ("RateLimit-Limit", "The team's requests per minute."),
    (
        "RateLimit-Remaining",
        "Requests the team has left in this minute (an estimate when several instances serve it).",
    ),
    ("RateLimit-Reset", "Seconds until the minute ends and the team's count starts again."),
];

fn header(description: &str) -> utoipa::openapi::header::Header {
    utoipa::openapi::header::HeaderBuilder::new()
        .schema(ObjectBuilder::new().schema_type(Type::Integer).minimum(Some(0)))
        .description(Some(description))
        .build()
}

/// Shared response tuples for handlers' `responses(...)`.
pub mod responses {
    /// 404 with `{"detail": ...}`.
    pub type NotFound = wearlab_models::DetailBody;
}
