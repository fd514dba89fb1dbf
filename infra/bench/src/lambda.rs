//! What the Lambda benches (`lambda-init`, `lambda-first-request`) share: a function binary
//! spawned with the environment Lambda gives it, pointed at a fake Runtime API on 127.0.0.1,
//! its stderr kept for when it fails.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Stdio};

type Error = Box<dyn std::error::Error>;

/// `path` as Lambda would start it for function `name`: a cleared environment with the Runtime
/// API at `api`, the function's name, memory size (256, `template.yaml`'s default), version, log
/// group and stream, `AWS_REGION=us-east-1`, test credentials, `AWS_ENDPOINT_URL` on a closed
/// loopback port (so nothing can leave the machine) and the `WEARLAB_*` variables of
/// `template.yaml`; then `extra_env`, which may override any of them. The data key is given as
/// `WEARLAB_DATA_KEY` and the phone tokens' signing key as `WEARLAB_PHONE_SIGNING_KEY`, not read
/// from SSM as a deployed function does. stdout is dropped, stderr
/// goes to `stderr`.
pub fn lambda_command(
    path: &Path,
    name: &str,
    api: SocketAddr,
    extra_env: &[(String, String)],
    stderr: &File,
) -> Result<Command, Error> {
    let mut cmd = Command::new(path);
    cmd.env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("LANG", "C.UTF-8")
        .env("TZ", ":UTC")
        .env("AWS_LAMBDA_RUNTIME_API", api.to_string())
        .env("AWS_LAMBDA_FUNCTION_NAME", name)
        .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256")
        .env("AWS_LAMBDA_FUNCTION_VERSION", "1")
        .env("AWS_LAMBDA_INITIALIZATION_TYPE", "on-demand")
        .env("AWS_LAMBDA_LOG_GROUP_NAME", format!("/aws/lambda/{name}"))
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
        // The phone tokens' signing key (user-api, data-api, sdk-api stop without it): the
        // public test key, given plainly rather than by its SSM parameter.
        .env(
            "WEARLAB_PHONE_SIGNING_KEY",
            wearlab_domain::common::crypto::SigningKey::FIXED_FOR_TESTS_BASE64.trim(),
        )
        .env("WEARLAB_PULL_QUEUE_URL", "http://127.0.0.1:9/123456789012/wearlab-bench-pull")
        .env("WEARLAB_BULK_QUEUE_URL", "http://127.0.0.1:9/123456789012/wearlab-bench-bulk")
        .env("WEARLAB_WEBHOOK_QUEUE_URL", "http://127.0.0.1:9/123456789012/wearlab-bench-webhook")
        .env("WEARLAB_BULK_DLQ_ARN", "arn:aws:sqs:us-east-1:123456789012:wearlab-bench-bulk-dlq")
        .envs(extra_env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(stderr.try_clone()?));
    Ok(cmd)
}

/// A scratch file, already unlinked, for a child's stderr.
pub fn stderr_file(name: &str) -> Result<File, Error> {
    let path = std::env::temp_dir().join(format!("lambda-bench-{}-{name}.stderr", std::process::id()));
    let file = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&path)?;
    std::fs::remove_file(&path)?;
    Ok(file)
}

/// The last ten lines a child wrote to `stderr` (a file from [`stderr_file`]).
pub fn stderr_tail(mut stderr: File) -> Result<String, Error> {
    let mut log = String::new();
    stderr.seek(SeekFrom::Start(0))?;
    stderr.read_to_string(&mut log)?;
    let tail: Vec<&str> = log.lines().rev().take(10).collect();
    let tail: Vec<&str> = tail.into_iter().rev().collect();
    Ok(tail.join("\n"))
}
