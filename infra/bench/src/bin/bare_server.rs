//! The baseline of the HTTP load test: hyper 1 on tokio answering every request with a fixed
//! user-sized JSON body, on 127.0.0.1 only. Same runtime and HTTP/1 stack as `wearlab-local`,
//! with no routing, auth, storage or serialisation.
//!
//! `PORT` chooses the port (default 0: any free one); prints `Listening on http://...`.

use std::convert::Infallible;
use std::net::SocketAddr;

use http::header::CONTENT_TYPE;
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use wearlab_bench::SAMPLE_USER_JSON;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let port: u16 = std::env::var("PORT").ok().and_then(|p| p.parse().ok()).unwrap_or(0);
    let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], port))).await?;
    println!("Listening on http://{}", listener.local_addr()?);
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(conn) => conn,
            Err(e) => {
                eprintln!("accept: {e}");
                continue;
            }
        };
        tokio::spawn(async move {
            let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), service_fn(answer)).await;
        });
    }
}

async fn answer(_req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let mut res = Response::new(Full::new(Bytes::from_static(SAMPLE_USER_JSON.as_bytes())));
    res.headers_mut().insert(CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
    Ok(res)
}
