//! A function's routes with their OpenAPI documentation, where the documentation is built only
//! when it is asked for.
//!
//! `utoipa_axum`'s router builds every operation and every schema while the router is built,
//! which on Lambda is init time: for the users function that was about two thirds of the work
//! between exec and the first poll of the runtime API (docs/PERFORMANCE.md, section 4). Here a
//! route is registered from the handler's path and methods alone, and keeps a plain function
//! that adds its documentation to a `utoipa_axum` router; `/openapi.json` and
//! `wearlab-local --print-openapi` run those functions.

use std::convert::Infallible;
use std::sync::Arc;

use axum::Router;
use axum::extract::Request;
use axum::response::IntoResponse;
use axum::routing::{MethodRouter, Route};
use tower::{Layer, Service};

use crate::AppState;

/// The `utoipa_axum` router a route's documentation is added to.
pub type DocRouter = utoipa_axum::router::OpenApiRouter<AppState>;

/// Adds one route's documentation (its operations and the schemas they use).
pub type AddDocs = fn(DocRouter) -> DocRouter;

/// Routes of one or more functions, before state is attached.
#[derive(Default)]
pub struct Routes {
    router: Router<AppState>,
    docs: Vec<AddDocs>,
    ports: Ports,
}

/// The ports handed to the routes' handlers ([`Routes::provide`]): each puts its port in a
/// request's extensions.
#[derive(Clone, Default)]
pub(crate) struct Ports(Vec<AddPort>);

type AddPort = Arc<dyn Fn(&mut http::Extensions) + Send + Sync>;

impl Ports {
    /// Puts every port in a request's extensions.
    pub(crate) fn add_to(&self, extensions: &mut http::Extensions) {
        for add in &self.0 {
            add(extensions);
        }
    }
}

/// One documented path as [`routes!`](crate::routes) builds it from annotated handlers.
pub struct Documented {
    path: String,
    method_router: MethodRouter<AppState>,
    docs: AddDocs,
}

impl Documented {
    #[doc(hidden)]
    pub fn new(path: String, method_router: MethodRouter<AppState>, docs: AddDocs) -> Self {
        Self { path, method_router, docs }
    }
}

impl Routes {
    pub fn new() -> Self {
        Self::default()
    }

    /// A documented path (see [`routes!`](crate::routes)).
    pub fn routes(mut self, documented: Documented) -> Self {
        let path = if documented.path.is_empty() { "/" } else { &documented.path };
        self.router = self.router.route(path, documented.method_router);
        self.docs.push(documented.docs);
        self
    }

    /// A route left out of the document (browser pages, local debug routes).
    pub fn route(mut self, path: &str, method_router: MethodRouter<AppState>) -> Self {
        self.router = self.router.route(path, method_router);
        self
    }

    /// Both sets of routes, documented together.
    pub fn merge(mut self, other: Routes) -> Self {
        self.router = self.router.merge(other.router);
        self.docs.extend(other.docs);
        self.ports.0.extend(other.ports.0);
        self
    }

    /// `layer` applied to every route registered so far.
    pub fn layer<L>(mut self, layer: L) -> Self
    where
        L: Layer<Route> + Clone + Send + Sync + 'static,
        L::Service: Service<Request> + Clone + Send + Sync + 'static,
        <L::Service as Service<Request>>::Response: IntoResponse + 'static,
        <L::Service as Service<Request>>::Error: Into<Infallible> + 'static,
        <L::Service as Service<Request>>::Future: Send + 'static,
    {
        self.router = self.router.layer(layer);
        self
    }

    /// Hands `port` to the handlers: they take it as `Extension<T>`. The ports only some
    /// functions have (a queue, the lab network: not on `Deps`) reach their handlers so, and a
    /// function's `app` takes each one its routes use, so a function built without one does
    /// not compile. Every port is put in the request by one layer around the whole router
    /// ([`crate::app`]), not by a layer per route: `Router::layer` wraps each route in another
    /// boxed `Route`, which costs every request a clone of the boxed service and a boxed future.
    pub fn provide<T: Clone + Send + Sync + 'static>(mut self, port: T) -> Self {
        self.ports.0.push(Arc::new(move |extensions: &mut http::Extensions| {
            extensions.insert(port.clone());
        }));
        self
    }

    /// The routes' own document: their operations and schemas, nothing shared yet.
    pub(crate) fn build_docs(docs: &[AddDocs]) -> utoipa::openapi::OpenApi {
        docs.iter().fold(DocRouter::new(), |router, add| add(router)).into_openapi()
    }

    pub(crate) fn into_parts(self) -> (Router<AppState>, Vec<AddDocs>, Ports) {
        (self.router, self.docs, self.ports)
    }
}

/// Undocumented routes (the simulated providers' pages, debug routes).
impl From<Router<AppState>> for Routes {
    fn from(router: Router<AppState>) -> Self {
        Self { router, docs: Vec::new(), ports: Ports::default() }
    }
}

/// The handlers of one path, annotated with `#[utoipa::path]`, as a [`Documented`] route for
/// [`Routes::routes`]. Routing needs only each handler's path and methods; the operations and
/// schemas are left to a function that runs when the document is built.
#[macro_export]
macro_rules! routes {
    // Handlers as plain `module::name` paths: `utoipa_axum` finds the `__path_name` item that
    // `#[utoipa::path]` generated from the path's last segment, which it can only split off
    // tokens, not off a parsed `path` fragment.
    ( $( $first:ident )::+ $(, $( $rest:ident )::+ )* $(,)? ) => {{
        #[allow(unused_imports)]
        use $crate::__private::PathItemExt as _;
        let path: ::std::string::String =
            $crate::__private::utoipa_axum::routes!(@path [path()] of $( $first )::+);
        let mut method_router = $crate::__private::MethodRouter::<$crate::AppState>::new();
        for method in $crate::__private::utoipa_axum::routes!(@path [methods()] of $( $first )::+) {
            method_router = method_router.on(method.to_method_filter(), $( $first )::+);
        }
        $(
            for method in
                $crate::__private::utoipa_axum::routes!(@path [methods()] of $( $rest )::+)
            {
                method_router = method_router.on(method.to_method_filter(), $( $rest )::+);
            }
        )*
        $crate::Documented::new(path, method_router, |docs: $crate::DocRouter| {
            docs.routes($crate::__private::utoipa_axum::routes!($( $first )::+ $(, $( $rest )::+ )*))
        })
    }};
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[utoipa::path(get, path = "/v2/things/{id}", responses((status = 200)))]
    async fn get_thing() {}

    #[utoipa::path(delete, path = "/v2/things/{id}", responses((status = 204)))]
    async fn delete_thing() {}

    static DOCS_BUILT: AtomicUsize = AtomicUsize::new(0);

    fn counted_docs(router: DocRouter) -> DocRouter {
        DOCS_BUILT.fetch_add(1, Ordering::SeqCst);
        router
    }

    #[test]
    fn documentation_is_built_when_the_document_is_asked_for_not_with_the_routes() {
        let counted = Documented::new("/v2/counted".into(), MethodRouter::new(), counted_docs);
        let routes = Routes::new()
            .routes(crate::routes!(get_thing, delete_thing))
            .merge(Routes::new().routes(counted))
            .route("/v2/page", axum::routing::get(|| async {}));
        assert_eq!(DOCS_BUILT.load(Ordering::SeqCst), 0, "building routes builds no documentation");

        let doc = crate::openapi(routes);
        assert_eq!(DOCS_BUILT.load(Ordering::SeqCst), 1);
        let item = &doc.paths.paths["/v2/things/{id}"];
        assert!(item.get.is_some() && item.delete.is_some(), "both handlers of the path are documented");
        assert!(!doc.paths.paths.contains_key("/v2/page"), "plain routes stay out of the document");
    }
}
