//! The local stack as `wearlab-local` serves it, plus the data routes (`/v2/summary/**`,
//! `/v2/timeseries/**`) once more without the audit layer on a second port, in the same process
//! on the same table: the same read with and without its audit entry, so what the entry costs
//! is the difference (`scripts/bench http`, `scripts/callgrind-http`). A benchmark tool only:
//! no function or the local stack serves an unaudited PHI route.
//!
//! Settings as `wearlab-local` (`PORT=0` picks a free port); prints `Listening on http://...`
//! (the whole API, audited) and then `Unaudited twin on http://...`.

use std::net::SocketAddr;

use axum::ServiceExt;
use axum::extract::Request;
use wearlab_local::{LocalConfig, LocalStack};

#[global_allocator]
static ALLOCATOR: wearlab_local::Allocator = wearlab_local::Allocator;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let config = LocalConfig::from_vars(|name| std::env::var(name).ok())?;
    let stack = LocalStack::open_with(&config)?;
    stack.ensure_team_key(config.api_key.as_deref()).await?;
    stack.spawn_workers();

    let audited = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], config.port))).await?;
    let twin = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
    println!("Listening on http://{}", audited.local_addr()?);
    println!("Unaudited twin on http://{}", twin.local_addr()?);

    let app = stack.app(stack.state());
    let twin_app = wearlab_web::app(data_api::unaudited_twin_for_benchmarks(), stack.state());
    let serve_twin = tokio::spawn(async move {
        axum::serve(
            wearlab_local::listener::Listener(twin),
            ServiceExt::<Request>::into_make_service(twin_app),
        )
        .await
    });
    axum::serve(wearlab_local::listener::Listener(audited), ServiceExt::<Request>::into_make_service(app))
        .await?;
    serve_twin.abort();
    Ok(())
}
