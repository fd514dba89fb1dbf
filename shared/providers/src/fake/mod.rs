//! Local fakes of the providers' APIs: small axum apps on 127.0.0.1 that answer as the real
//! API documents (fixtures under `shared/providers/fixtures/<provider>/`, taken from the
//! providers' published OpenAPI examples and schemas), so the adapters are tested without the
//! internet. Each fake counts the calls it gets, so tests can assert what reached the provider.
//! What they all play alike (hosts, consent, tokens, bearer checks, call records) is [`oauth`],
//! parameterised by the provider's description.

pub mod dexcom;
pub mod google_health;
pub mod hammerhead;
pub mod oauth;
pub mod oura;
pub mod polar;
pub mod strava;
pub mod suunto;
pub mod ultrahuman;
pub mod wahoo;
pub mod whoop;
pub mod withings;

use axum::Router;

/// Serves `app` on an ephemeral loopback port; the base URL (`http://127.0.0.1:<port>`).
pub async fn serve(app: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a loopback port");
    let addr = listener.local_addr().expect("the bound address");
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    format!("http://{addr}")
}
