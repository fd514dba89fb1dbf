//! Lambda init time: a fake Lambda Runtime API on 127.0.0.1 that spawns a function binary with
//! the environment Lambda gives it and times exec to the function's first
//! `GET /2018-06-01/runtime/invocation/next` (the end of init). The poll is never answered: the
//! child is killed, so no handler runs and no AWS call is made.
//!
//! Usage: `lambda-init [--runs N] [--env KEY=VALUE]... NAME=PATH...` (N default 20, at most
//! 1000; `--env` adds a variable, e.g. one a function has newly come to need). The first binary
//! is the baseline the others are compared to. Runs are interleaved across binaries, after two
//! discarded warm-up runs each.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tokio::net::{TcpListener, TcpStream};
use wearlab_bench::{Summary, ms};

const NEXT: &str = "GET /2018-06-01/runtime/invocation/next ";
const WARM_UP: usize = 2;
const MAX_RUNS: usize = 1000;
/// Longest wait for one init: a function that takes longer has failed.
const INIT_TIMEOUT: Duration = Duration::from_secs(10);

type Error = Box<dyn std::error::Error>;

struct Function {
    name: String,
    path: PathBuf,
    samples: Vec<Duration>,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let mut runs = 20;
    let mut functions = Vec::new();
    let mut extra_env = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--runs" {
            runs = args.next().ok_or("--runs needs a number")?.parse::<usize>()?.clamp(1, MAX_RUNS);
        } else if arg == "--env" {
            let kv = args.next().ok_or("--env needs KEY=VALUE")?;
            let (k, v) = kv.split_once('=').ok_or("--env needs KEY=VALUE")?;
            extra_env.push((k.to_owned(), v.to_owned()));
        } else if let Some((name, path)) = arg.split_once('=') {
            let path = PathBuf::from(path);
            if !path.is_file() {
                return Err(format!("{name}: no binary at {}", path.display()).into());
            }
            functions.push(Function { name: name.to_owned(), path, samples: Vec::new() });
        } else {
            return Err(format!(
                "unexpected argument {arg:?}; usage: lambda-init [--runs N] [--env K=V]... NAME=PATH..."
            )
            .into());
        }
    }
    if functions.is_empty() {
        return Err(
            "usage: lambda-init [--runs N] [--env K=V]... NAME=PATH... (the first is the baseline)".into()
        );
    }

    for f in &functions {
        for _ in 0..WARM_UP {
            init_time(f, &extra_env).await?;
        }
    }
    for _ in 0..runs {
        for f in &mut functions {
            let took = init_time(f, &extra_env).await?;
            f.samples.push(took);
        }
    }

    println!(
        "Lambda init: exec to first GET /runtime/invocation/next, fake Runtime API on 127.0.0.1; {runs} runs each after {WARM_UP} warm-up"
    );
    println!(
        "| binary | size (bytes) | size (MiB) | median ms | min ms | p90 ms | max ms | median vs {} |",
        functions[0].name
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    let mut baseline = None;
    for f in &mut functions {
        let size = std::fs::metadata(&f.path)?.len();
        let s = Summary::of(&mut f.samples);
        let base = *baseline.get_or_insert(s.median);
        println!(
            "| {} | {size} | {:.1} | {} | {} | {} | {} | {:.2}x |",
            f.name,
            size as f64 / (1024.0 * 1024.0),
            ms(s.median),
            ms(s.min),
            ms(s.p90),
            ms(s.max),
            s.median.as_secs_f64() / base.as_secs_f64()
        );
    }
    Ok(())
}

/// Spawns `f` against a fresh fake Runtime API and times it to its first `next` poll.
async fn init_time(f: &Function, extra_env: &[(String, String)]) -> Result<Duration, Error> {
    // The child's stderr, shown when init fails (a missing variable, say).
    let stderr = tempfile(&f.name)?;
    let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
    let api = listener.local_addr()?;
    let mut cmd = Command::new(&f.path);
    cmd.env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("LANG", "C.UTF-8")
        .env("TZ", ":UTC")
        .env("AWS_LAMBDA_RUNTIME_API", api.to_string())
        .env("AWS_LAMBDA_FUNCTION_NAME", &f.name)
        .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256")
        .env("AWS_LAMBDA_FUNCTION_VERSION", "1")
        .env("AWS_LAMBDA_INITIALIZATION_TYPE", "on-demand")
        .env("AWS_LAMBDA_LOG_GROUP_NAME", format!("/aws/lambda/{}", f.name))
        .env("AWS_LAMBDA_LOG_STREAM_NAME", "2026/03/01/[1]bench")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_DEFAULT_REGION", "us-east-1")
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_SESSION_TOKEN", "test")
        // Nothing is called during init; should anything try, it stays on this machine.
        .env("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("WEARLAB_TABLE_NAME", "wearlab-bench")
        .env("WEARLAB_SCHEDULE_GROUP", "wearlab-bench")
        .env("WEARLAB_ERASURE_TARGET_ARN", "arn:aws:lambda:us-east-1:123456789012:function:erasure-worker")
        .env("WEARLAB_SCHEDULER_ROLE_ARN", "arn:aws:iam::123456789012:role/wearlab-scheduler")
        .env("WEARLAB_EVENT_BUS_NAME", "wearlab-bench")
        // Required on a deployment: links handed to users never come from a request's headers.
        .env("WEARLAB_PUBLIC_URL", "https://api.example.test")
        // base64 of 32 bytes: the key that seals secrets at rest.
        .env("WEARLAB_DATA_KEY", "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")
        .env("WEARLAB_PULL_QUEUE_URL", "http://127.0.0.1:9/123456789012/wearlab-bench-pull")
        .env("WEARLAB_BULK_QUEUE_URL", "http://127.0.0.1:9/123456789012/wearlab-bench-bulk")
        .env("WEARLAB_WEBHOOK_QUEUE_URL", "http://127.0.0.1:9/123456789012/wearlab-bench-webhook")
        .env("WEARLAB_BULK_DLQ_ARN", "arn:aws:sqs:us-east-1:123456789012:wearlab-bench-bulk-dlq")
        .envs(extra_env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(stderr.try_clone()?));
    let start = Instant::now();
    let mut child = cmd.spawn()?;
    let outcome = tokio::time::timeout(INIT_TIMEOUT, first_next_poll(&listener, &mut child)).await;
    let took = start.elapsed();
    let _ = child.kill();
    let _ = child.wait();
    let failure = match outcome {
        Ok(Ok(at)) => return Ok(at.duration_since(start)),
        Ok(Err(e)) => format!("{}: {e}", f.name),
        Err(_) => format!("{}: no invocation/next poll within {took:?}", f.name),
    };
    let mut log = String::new();
    let mut stderr = stderr;
    stderr.seek(SeekFrom::Start(0))?;
    stderr.read_to_string(&mut log)?;
    let tail: Vec<&str> = log.lines().rev().take(10).collect();
    let tail: Vec<&str> = tail.into_iter().rev().collect();
    Err(format!("{failure}\n{}", tail.join("\n")).into())
}

/// A scratch file, already unlinked, for the child's stderr.
fn tempfile(name: &str) -> Result<File, Error> {
    let path = std::env::temp_dir().join(format!("lambda-init-{}-{name}.stderr", std::process::id()));
    let file = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&path)?;
    std::fs::remove_file(&path)?;
    Ok(file)
}

/// When the first `invocation/next` request head arrived; an error when the function exits or
/// sends anything else first (such as `init/error`).
async fn first_next_poll(listener: &TcpListener, child: &mut std::process::Child) -> Result<Instant, Error> {
    let mut exit_check = tokio::time::interval(Duration::from_millis(20));
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, _) = accepted?;
                let head = read_head(&stream).await?;
                let at = Instant::now();
                if head.starts_with(NEXT) {
                    return Ok(at);
                }
                let line = head.lines().next().unwrap_or_default();
                return Err(format!("first request was {line:?}, not invocation/next").into());
            }
            _ = exit_check.tick() => {
                if let Some(status) = child.try_wait()? {
                    return Err(format!("exited during init: {status}").into());
                }
            }
        }
    }
}

/// Reads one request head (up to the blank line; at most 64 KiB).
async fn read_head(stream: &TcpStream) -> Result<String, Error> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        if buf.len() > 64 * 1024 {
            return Err("request head over 64 KiB".into());
        }
        stream.readable().await?;
        match stream.try_read(&mut chunk) {
            Ok(0) => return Err("connection closed before a request head".into()),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Ok(String::from_utf8_lossy(&buf).into_owned())
}
