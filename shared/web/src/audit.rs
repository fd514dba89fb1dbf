//! Records the audit entry of every request through a PHI route (`wearlab_domain::common::audit`): a
//! layer that each API function applies to its PHI routes only, so no handler records anything
//! itself.
//!
//! The layer leaves a slot in the request that [`AuthTeam`](crate::AuthTeam) and
//! [`AuthCaller`](crate::AuthCaller) fill with the caller (an API key, or a user's own token) and
//! the state once the credential is verified; a request that never authenticated (401) has no
//! team to file an entry under and is not recorded. After the handler answered, the
//! entry is written with the answer's status, before the answer leaves. When that write fails,
//! a read is withheld (503) and a change keeps its answer, both logged
//! (`wearlab_domain::common::audit::on_failure` says why).

use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

use axum::RequestExt;
use axum::extract::{MatchedPath, RawPathParams, Request};
use axum::response::{IntoResponse, Response};
use futures_util::future::BoxFuture;
use tower::{Layer, Service};
use wearlab_domain::common::audit::{self, Access, Actor, OnFailure};
use wearlab_domain::common::ids::UserId;

use crate::{ApiError, AppState};

/// Filled by the credential extractors: who called, and the state to record with.
#[derive(Clone, Default)]
pub(crate) struct CallerSlot(Arc<OnceLock<(Actor, AppState)>>);

impl CallerSlot {
    pub(crate) fn fill(&self, actor: Actor, state: &AppState) {
        let _ = self.0.set((actor, state.clone()));
    }
}

/// Records every request through the routes it wraps (see the module documentation).
#[derive(Clone, Copy, Default)]
pub struct AuditLayer;

impl<S> Layer<S> for AuditLayer {
    type Service = AuditService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        AuditService { inner }
    }
}

#[derive(Clone)]
pub struct AuditService<S> {
    inner: S,
}

impl<S> Service<Request> for AuditService<S>
where
    S: Service<Request, Response = Response> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<Response, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request) -> Self::Future {
        // The service that was polled ready serves this request; a fresh clone waits for the next.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        Box::pin(async move {
            let slot = CallerSlot::default();
            req.extensions_mut().insert(slot.clone());
            let what = What::of(&mut req).await;
            let response = inner.call(req).await?;
            let Some((actor, state)) = slot.0.get() else {
                return Ok(response);
            };
            let access = what.access(*actor, response.status().as_u16());
            let method = access.method.clone();
            let (team_id, key_id, route) = (actor.team_id, actor.credential, access.route.clone());
            let user_id = access.user_id;
            let Err(e) = audit::record(&state.deps, access, state.settings.audit_retention).await else {
                return Ok(response);
            };
            match audit::on_failure(&method) {
                OnFailure::Withhold => {
                    tracing::error!(%team_id, %key_id, route, ?user_id, error = %e,
                        "audit entry not written; answer withheld");
                    Ok(ApiError::Unavailable("The access could not be recorded; try again.".into())
                        .into_response())
                }
                OnFailure::Answer => {
                    tracing::error!(%team_id, %key_id, route, ?user_id, error = %e,
                        "audit entry not written; change answered");
                    Ok(response)
                }
            }
        })
    }
}

/// What a request touches, read before the handler takes the request.
struct What {
    method: String,
    route: String,
    user_id: Option<UserId>,
    resource: Option<String>,
}

impl What {
    async fn of(req: &mut Request) -> Self {
        let method = req.method().as_str().to_owned();
        let route = req.extensions().get::<MatchedPath>().map_or_else(String::new, |m| m.as_str().to_owned());
        let mut user = None;
        let mut others: Vec<String> = Vec::new();
        if let Ok(params) = req.extract_parts::<RawPathParams>().await {
            for (name, value) in &params {
                if name == "user_id" {
                    user = Some(value.to_owned());
                } else {
                    others.push(value.to_owned());
                }
            }
        }
        // A route that names its user in the query instead (`GET /v3/orders?user_id=`; a FHIR
        // search's `subject=Patient/{id}` or `patient=`).
        if user.is_none() {
            user = req.uri().query().and_then(|q| {
                form_urlencoded::parse(q.as_bytes())
                    .find(|(k, _)| k == "user_id" || k == "subject" || k == "patient")
                    .map(|(_, v)| v.trim_start_matches("Patient/").to_owned())
            });
        }
        Self {
            method,
            route,
            // Only an id is kept: a value that is not a user id names no user's data.
            user_id: user.as_deref().and_then(UserId::parse),
            resource: (!others.is_empty()).then(|| others.join("/")),
        }
    }

    fn access(self, actor: Actor, status: u16) -> Access {
        Access {
            actor,
            method: self.method,
            route: self.route,
            user_id: self.user_id,
            resource: self.resource,
            status,
        }
    }
}
