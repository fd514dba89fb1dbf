//! The first request of a cold function, end to end: a fake Lambda Runtime API on 127.0.0.1
//! spawns a function binary (the environment of `lambda-init`), answers its first
//! `GET /2018-06-01/runtime/invocation/next` with an API Gateway HTTP API (payload format 2.0)
//! event and times exec to the function's `POST .../invocation/{id}/response`. The function's
//! AWS calls go to moto (`WEARLAB_TEST_AWS_ENDPOINT`, set by `scripts/with-moto`), on a table
//! made and seeded here: a team, its API key and one user.
//!
//! Usage: `scripts/with-moto lambda-first-request [--runs N] NAME=PATH...` (N default 10, at most
//! 200). The request a function is sent depends on its name:
//! - `user-api`: `GET /v2/user/{id}` of the seeded user;
//! - `data-api`: `GET /v2/summary/activity/{id}?start_date=..&end_date=..` (7 days, none stored:
//!   auth, fair use, the user's read, the day range read and the audit record are all done);
//! - `hello-lambda` (the baseline): the `user-api` event, which it ignores.
//!
//! Every answer must be a 200 (the function's `statusCode`), or the run fails. What is not in
//! these figures: TLS (moto is plain HTTP, so the first request neither loads the root
//! certificates nor makes a handshake, which a deployed function does on its first AWS call),
//! the SSM read of the data key, and the network to DynamoDB.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use wearlab_bench::lambda::{lambda_command, stderr_file, stderr_tail};
use wearlab_bench::{Summary, ms};
use wearlab_domain::teams;
use wearlab_domain::users::{self, NewUser};
use wearlab_models::CreateUserBody;

const WARM_UP: usize = 1;
const MAX_RUNS: usize = 200;
/// Longest wait for one cold request: a function that takes longer has failed.
const RUN_TIMEOUT: Duration = Duration::from_secs(20);
const REQUEST_ID: &str = "8476a536-e9f4-11e8-9739-2dfe598c3fcd";

type Error = Box<dyn std::error::Error>;

struct Function {
    name: String,
    path: PathBuf,
    event: String,
    /// exec to the first `invocation/next` (init)
    init: Vec<Duration>,
    /// exec to the response (init and the first request)
    total: Vec<Duration>,
    /// the first `invocation/next` to the response (the first request alone)
    request: Vec<Duration>,
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Error> {
    let mut runs = 10;
    let mut named = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--runs" {
            runs = args.next().ok_or("--runs needs a number")?.parse::<usize>()?.clamp(1, MAX_RUNS);
        } else if let Some((name, path)) = arg.split_once('=') {
            let path = PathBuf::from(path);
            if !path.is_file() {
                return Err(format!("{name}: no binary at {}", path.display()).into());
            }
            named.push((name.to_owned(), path));
        } else {
            return Err(format!(
                "unexpected argument {arg:?}; usage: lambda-first-request [--runs N] NAME=PATH..."
            )
            .into());
        }
    }
    if named.is_empty() {
        return Err("usage: lambda-first-request [--runs N] NAME=PATH... (the first is the baseline)".into());
    }

    let (deps, table, endpoint) = wearlab_bench::moto_deps().await?;
    let team = teams::create_team(&deps, "Bench team").await?.team_id;
    let key = teams::issue_key(&deps, team, "bench").await?.secret;
    let today = deps.now().date_naive();
    let body = CreateUserBody {
        client_user_id: "cold-start".into(),
        fallback_time_zone: None,
        fallback_birth_date: None,
        ingestion_start: None,
        ingestion_end: None,
    };
    let user = users::create(&deps, team, NewUser::parse(body, today)?).await?.user_id;
    let week_ago = today - chrono::Days::new(6);

    let mut functions = Vec::new();
    for (name, path) in named {
        let path_and_query = match name.as_str() {
            "user-api" | "hello-lambda" => (format!("/v2/user/{user}"), String::new()),
            "data-api" => {
                (format!("/v2/summary/activity/{user}"), format!("start_date={week_ago}&end_date={today}"))
            }
            other => {
                return Err(format!(
                    "{other}: no request known for this function (user-api, data-api, hello-lambda)"
                )
                .into());
            }
        };
        let event = http_api_event(&path_and_query.0, &path_and_query.1, &key).to_string();
        functions.push(Function {
            name,
            path,
            event,
            init: Vec::new(),
            total: Vec::new(),
            request: Vec::new(),
        });
    }
    let env = vec![
        ("AWS_ENDPOINT_URL".to_owned(), endpoint.clone()),
        ("WEARLAB_TABLE_NAME".to_owned(), table.table_name().to_owned()),
        ("RUST_LOG".to_owned(), "error".to_owned()),
    ];

    for f in &functions {
        for _ in 0..WARM_UP {
            cold_request(f, &env).await?;
        }
    }
    for _ in 0..runs {
        for f in &mut functions {
            let (init, total) = cold_request(f, &env).await?;
            f.init.push(init);
            f.total.push(total);
            f.request.push(total - init);
        }
    }

    println!(
        "Cold first request: exec to the function's invocation response (fake Runtime API on 127.0.0.1, DynamoDB on moto); {runs} runs each after {WARM_UP} warm-up"
    );
    println!(
        "| binary | init median ms | first request median ms (exec to response) | min ms | p90 ms | max ms | request alone (median, ms) |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for f in &mut functions {
        let init = Summary::of(&mut f.init);
        let total = Summary::of(&mut f.total);
        let request = Summary::of(&mut f.request);
        println!(
            "| {} | {} | {} | {} | {} | {} | {} |",
            f.name,
            ms(init.median),
            ms(total.median),
            ms(total.min),
            ms(total.p90),
            ms(total.max),
            ms(request.median)
        );
    }
    Ok(())
}

/// An API Gateway HTTP API event (payload format 2.0) of a GET with the team's key, shaped as
/// "Create AWS Lambda proxy integrations for HTTP APIs in API Gateway" documents it
/// (https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-develop-integrations-lambda.html).
fn http_api_event(path: &str, query: &str, key: &str) -> Value {
    json!({
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": query,
        "headers": {
            "accept": "application/json",
            "host": "api.example.test",
            wearlab_bench::API_KEY_HEADER: key,
        },
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "api-id",
            "domainName": "api.example.test",
            "http": {
                "method": "GET",
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": "192.0.2.1",
                "userAgent": "bench"
            },
            "requestId": "id",
            "routeKey": "$default",
            "stage": "$default",
            "time": "28/Nov/2026:10:00:00 +0000",
            "timeEpoch": 1795860000000u64
        },
        "isBase64Encoded": false
    })
}

/// What the fake Runtime API saw, in order.
#[derive(Debug)]
enum Seen {
    Next(Instant),
    Response(Instant, Bytes),
    Error(String),
}

/// Spawns `f` against a fresh fake Runtime API and times exec to its first `next` poll and to
/// its response.
async fn cold_request(f: &Function, env: &[(String, String)]) -> Result<(Duration, Duration), Error> {
    let stderr = stderr_file(&f.name)?;
    let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
    let api = listener.local_addr()?;
    let (seen, mut events) = mpsc::unbounded_channel();
    let server = tokio::spawn(serve(listener, Arc::new(f.event.clone()), seen));
    let mut cmd = lambda_command(&f.path, &f.name, api, env, &stderr)?;
    let start = Instant::now();
    let mut child = cmd.spawn()?;
    let outcome = tokio::time::timeout(RUN_TIMEOUT, async {
        let mut next = None;
        while let Some(event) = events.recv().await {
            match event {
                Seen::Next(at) => {
                    next.get_or_insert(at);
                }
                Seen::Response(at, body) => return Ok((next, at, body)),
                Seen::Error(e) => return Err(e),
            }
        }
        Err("the fake Runtime API stopped".to_owned())
    })
    .await;
    let _ = child.kill();
    let _ = child.wait();
    server.abort();
    let failure = match outcome {
        Ok(Ok((Some(next), at, body))) => {
            let answer: Value = serde_json::from_slice(&body)?;
            if answer["statusCode"] == 200 || f.name == "hello-lambda" {
                return Ok((next.duration_since(start), at.duration_since(start)));
            }
            format!("{}: answered {}", f.name, String::from_utf8_lossy(&body))
        }
        Ok(Ok((None, _, _))) => format!("{}: a response before any invocation/next", f.name),
        Ok(Err(e)) => format!("{}: {e}", f.name),
        Err(_) => format!("{}: no response within {RUN_TIMEOUT:?}", f.name),
    };
    Err(format!("{failure}\n{}", stderr_tail(stderr)?).into())
}

/// The fake Runtime API: the first `invocation/next` gets `event`, later ones are never
/// answered (the function is killed); responses and errors are reported on `seen`.
async fn serve(listener: TcpListener, event: Arc<String>, seen: mpsc::UnboundedSender<Seen>) {
    let handed = Arc::new(Mutex::new(false));
    while let Ok((stream, _)) = listener.accept().await {
        let (event, seen, handed) = (event.clone(), seen.clone(), handed.clone());
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req: Request<Incoming>| {
                let (event, seen, handed) = (event.clone(), seen.clone(), handed.clone());
                async move { runtime_api(req, &event, &seen, &handed).await }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

async fn runtime_api(
    req: Request<Incoming>,
    event: &str,
    seen: &mpsc::UnboundedSender<Seen>,
    handed: &Mutex<bool>,
) -> Result<Response<Full<Bytes>>, hyper::Error> {
    let path = req.uri().path().to_owned();
    if path == "/2018-06-01/runtime/invocation/next" {
        let _ = seen.send(Seen::Next(Instant::now()));
        let first = !std::mem::replace(&mut *handed.lock().expect("not poisoned"), true);
        if !first {
            // The function waits here until it is killed.
            std::future::pending::<()>().await;
        }
        let deadline = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default()
            + Duration::from_secs(15);
        return Ok(Response::builder()
            .status(StatusCode::OK)
            .header("content-type", "application/json")
            .header("lambda-runtime-aws-request-id", REQUEST_ID)
            .header("lambda-runtime-deadline-ms", deadline.as_millis().to_string())
            .header(
                "lambda-runtime-invoked-function-arn",
                "arn:aws:lambda:us-east-1:123456789012:function:bench",
            )
            .header(
                "lambda-runtime-trace-id",
                "Root=1-5bef4de7-ad49b0e87f6ef6c87fc2e700;Parent=9a9197af755a6419;Sampled=1",
            )
            .body(Full::new(Bytes::from(event.to_owned())))
            .expect("a valid response"));
    }
    let body = req.into_body().collect().await?.to_bytes();
    let at = Instant::now();
    if path.ends_with("/response") {
        let _ = seen.send(Seen::Response(at, body));
    } else {
        let _ = seen.send(Seen::Error(format!("{path}: {}", String::from_utf8_lossy(&body))));
    }
    Ok(Response::builder()
        .status(StatusCode::ACCEPTED)
        .body(Full::new(Bytes::new()))
        .expect("a valid response"))
}
