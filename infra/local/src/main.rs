//! `make run`: the whole API on 127.0.0.1, data under `.local/` (or `WEARLAB_DATA_DIR`).

use std::net::SocketAddr;

use axum::ServiceExt;
use axum::extract::Request;
use wearlab_local::{LocalConfig, LocalStack};

/// The local stack's allocator (see [`wearlab_local::Allocator`]).
#[global_allocator]
static ALLOCATOR: wearlab_local::Allocator = wearlab_local::Allocator;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    if std::env::args().nth(1).as_deref() == Some("--print-openapi") {
        print!("{}", wearlab_local::openapi_json());
        return Ok(());
    }
    wearlab_telemetry::init_tracing();
    // Every setting read once, here; a bad value stops the stack naming its variable.
    let config = LocalConfig::from_vars(|name| std::env::var(name).ok())?;
    let (dir, port) = (&config.data_dir, config.port);
    let stack = LocalStack::open_with(&config)?;
    let key = local_key(&stack, dir, config.api_key.as_deref()).await?;
    stack.spawn_workers();

    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let addr = listener.local_addr()?;
    println!("Listening on http://{addr}");
    println!("API key: {key}");
    println!("Data: {}", dir.display());
    let app = stack.app(stack.state());
    axum::serve(wearlab_local::listener::Listener(listener), ServiceExt::<Request>::into_make_service(app))
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}

/// The key of the local team: `configured` (`WEARLAB_API_KEY`) if set, else the one kept in
/// the data directory (created on first start). The file is the developer's own copy, like a
/// credentials file; the table keeps only its hash.
async fn local_key(
    stack: &LocalStack,
    dir: &std::path::Path,
    configured: Option<&str>,
) -> Result<String, Box<dyn std::error::Error>> {
    if let Some(key) = configured {
        return Ok(stack.ensure_team_key(Some(key)).await?);
    }
    let file = dir.join("api_key");
    if let Ok(saved) = std::fs::read_to_string(&file) {
        return Ok(stack.ensure_team_key(Some(saved.trim())).await?);
    }
    let key = stack.ensure_team_key(None).await?;
    std::fs::write(&file, &key)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(key)
}
