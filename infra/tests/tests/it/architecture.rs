//! The dependency rule, checked on the workspace as it is: crates point one way
//! (models <- domain <- adapters and web <- functions <- infra), and inside the domain the
//! lower modules do not name the ones built on them. A new forbidden arrow fails here.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// Crates (or name prefixes, ending in `-`) each crate must not depend on.
const FORBIDDEN: &[(&str, &[&str])] = &[
    ("wearlab-models", &["wearlab-"]),
    (
        "wearlab-domain",
        &[
            "wearlab-aws",
            "wearlab-embedded",
            "wearlab-web",
            "wearlab-sim",
            "wearlab-http",
            "wearlab-providers",
            "wearlab-telemetry",
            "axum",
            "http",
            "hyper",
            "tower",
            "utoipa",
            "reqwest",
            "lambda_",
            "aws-",
            "redb",
        ],
    ),
    ("wearlab-aws", &["wearlab-sim", "wearlab-embedded", "wearlab-web", "wearlab-http", "wearlab-providers"]),
    ("wearlab-embedded", &["wearlab-aws", "wearlab-sim", "wearlab-web", "wearlab-http"]),
    ("wearlab-sim", &["wearlab-aws", "wearlab-embedded", "wearlab-http"]),
    ("wearlab-http", &["wearlab-aws", "wearlab-embedded", "wearlab-sim", "wearlab-web"]),
    // Real provider adapters fall back to the simulator (demo connections), and know no storage.
    ("wearlab-providers", &["wearlab-aws", "wearlab-embedded", "wearlab-web", "wearlab-http"]),
];

/// Domain modules (file or folder under `shared/domain/src`) and the modules they must not name.
const LAYERS: &[(&str, &[&str])] = &[
    (
        "ports",
        &[
            "crate::linking",
            "crate::lab",
            "crate::users",
            "crate::bulk",
            "crate::pipeline",
            "crate::webhooks",
        ],
    ),
    ("catalog.rs", &["crate::linking", "crate::users", "crate::lifecycle"]),
    ("users.rs", &["crate::linking", "crate::lifecycle"]),
    ("events.rs", &["crate::linking", "crate::lifecycle", "crate::lab", "crate::pipeline"]),
    ("linking", &["crate::lifecycle"]),
    ("bulk_ledger.rs", &["crate::bulk::", "crate::pipeline"]),
    ("pipeline", &["crate::bulk::", "crate::lifecycle"]),
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `crate -> dependency` arrows that break `FORBIDDEN` in `cargo metadata` output.
fn forbidden_arrows(metadata: &Value) -> Vec<String> {
    let mut found = Vec::new();
    for package in metadata["packages"].as_array().into_iter().flatten() {
        let name = package["name"].as_str().unwrap_or_default();
        let Some((_, banned)) = FORBIDDEN.iter().find(|(c, _)| *c == name) else { continue };
        for dep in package["dependencies"].as_array().into_iter().flatten() {
            // Build and normal dependencies ship; dev-dependencies (tests) may reach further.
            if dep["kind"].as_str() == Some("dev") {
                continue;
            }
            let dep = dep["name"].as_str().unwrap_or_default();
            let hit = |b: &&str| if b.ends_with(['-', '_']) { dep.starts_with(*b) } else { dep == *b };
            if banned.iter().any(hit) {
                found.push(format!("{name} -> {dep}"));
            }
        }
    }
    found
}

fn rust_files(path: &Path, out: &mut Vec<PathBuf>) {
    if path.is_dir() {
        for entry in std::fs::read_dir(path).expect("readable source folder") {
            rust_files(&entry.expect("readable entry").path(), out);
        }
    } else if path.extension().is_some_and(|e| e == "rs") {
        out.push(path.to_owned());
    }
}

#[test]
fn no_crate_depends_on_what_it_must_not() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--no-deps", "--offline", "--manifest-path"])
        .arg(root().join("Cargo.toml"))
        .output()
        .expect("cargo metadata runs");
    assert!(out.status.success(), "cargo metadata: {}", String::from_utf8_lossy(&out.stderr));
    let metadata: Value = serde_json::from_slice(&out.stdout).expect("cargo metadata is JSON");
    assert!(
        metadata["packages"].as_array().is_some_and(|p| p.iter().any(|p| p["name"] == "wearlab-domain")),
        "the workspace was read"
    );
    assert_eq!(forbidden_arrows(&metadata), Vec::<String>::new());
}

#[test]
fn a_forbidden_arrow_is_reported() {
    let metadata = serde_json::json!({"packages": [
        {"name": "wearlab-domain", "dependencies": [
            {"name": "axum", "kind": null}, {"name": "aws-sdk-sqs", "kind": null},
            {"name": "serde", "kind": null}, {"name": "http", "kind": "dev"}
        ]},
        {"name": "wearlab-aws", "dependencies": [{"name": "wearlab-sim", "kind": null}]}
    ]});
    assert_eq!(
        forbidden_arrows(&metadata),
        ["wearlab-domain -> axum", "wearlab-domain -> aws-sdk-sqs", "wearlab-aws -> wearlab-sim"]
    );
}

/// Whether `text` names the module path `path` itself (`crate::lifecycle` is not named by
/// `crate::lifecycle_events`).
fn names(text: &str, path: &str) -> bool {
    text.match_indices(path)
        .any(|(at, _)| !text[at + path.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_'))
}

#[test]
fn a_module_path_is_named_only_whole() {
    assert!(names("use crate::lifecycle::refresh;", "crate::lifecycle"));
    assert!(names("crate::lifecycle;", "crate::lifecycle"));
    assert!(!names("crate::lifecycle_events::deleted(", "crate::lifecycle"));
}

#[test]
fn lower_domain_modules_do_not_name_the_ones_above() {
    let src = root().join("shared/domain/src");
    let mut found = Vec::new();
    for (module, banned) in LAYERS {
        let mut files = Vec::new();
        rust_files(&src.join(module), &mut files);
        assert!(!files.is_empty(), "{module} exists");
        for file in files {
            let text = std::fs::read_to_string(&file).expect("readable source");
            for b in banned.iter().filter(|b| names(&text, b)) {
                found.push(format!("{} names {b}", file.strip_prefix(&src).unwrap_or(&file).display()));
            }
        }
    }
    assert_eq!(found, Vec::<String>::new());
}

#[test]
fn the_domain_reads_no_environment() {
    let mut files = Vec::new();
    rust_files(&root().join("shared/domain/src"), &mut files);
    let readers: Vec<_> = files
        .iter()
        .filter(|f| std::fs::read_to_string(f).expect("readable source").contains("env::var"))
        .map(|f| f.display().to_string())
        .collect();
    assert_eq!(readers, Vec::<String>::new(), "configuration is read at the edge (main.rs, wearlab-web)");
}

/// Settings are read once, at start: the web plumbing, the webhook sender and the functions'
/// handlers and workers read no environment variable (a request or an invocation would
/// otherwise read it again, and a bad value would surface only then). Only each function's
/// `main.rs` (through `wearlab_aws::deps_from_env`) and the local stack's `main.rs` read them.
#[test]
fn requests_and_invocations_read_no_environment() {
    let mut files = Vec::new();
    for dir in ["shared/web/src", "shared/http/src", "shared/sim/src"] {
        rust_files(&root().join(dir), &mut files);
    }
    let functions = std::fs::read_dir(root().join("functions")).expect("functions/");
    for function in functions {
        rust_files(&function.expect("an entry").path().join("src"), &mut files);
    }
    files.retain(|f| !f.ends_with("main.rs"));
    assert!(files.len() > 20, "the sources were found: {}", files.len());
    let readers: Vec<_> = files
        .iter()
        .filter(|f| std::fs::read_to_string(f).expect("readable source").contains("env::var"))
        .map(|f| f.display().to_string())
        .collect();
    assert_eq!(readers, Vec::<String>::new(), "settings come from `Settings`, read once at start");
}
