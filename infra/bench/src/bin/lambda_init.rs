//! Lambda init time: a fake Lambda Runtime API on 127.0.0.1 that spawns a function binary with
//! the environment Lambda gives it and times exec to the function's first
//! `GET /2018-06-01/runtime/invocation/next` (the end of init). The poll is never answered: the
//! child is killed, so no handler runs and no AWS call is made.
//!
//! Usage: `lambda-init [--runs N] [--env KEY=VALUE]... NAME=PATH...` (N default 20, at most
//! 1000; `--env` adds a variable, e.g. one a function has newly come to need). The first binary
//! is the baseline the others are compared to. Runs are interleaved across binaries, after two
//! discarded warm-up runs each.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use tokio::net::{TcpListener, TcpStream};
use wearlab_bench::lambda::{lambda_command, stderr_file, stderr_tail};
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
    let stderr = stderr_file(&f.name)?;
    let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
    let api = listener.local_addr()?;
    let mut cmd = lambda_command(&f.path, &f.name, api, extra_env, &stderr)?;
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
    Err(format!("{failure}\n{}", stderr_tail(stderr)?).into())
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
