//! The dependency rule, checked on the workspace as it is: crates point one way
//! (models <- domain <- adapters and web <- functions <- infra), and inside the domain the
//! lower modules do not name the ones built on them; what one room owns (storage keys, the
//! connection record, whether a user is active) is written in that room only. A new forbidden
//! arrow fails here.

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

/// Dependencies a prefix of `FORBIDDEN` would catch that are no adapter.
const ALLOWED: &[&str] = &["aws-lc-rs"];

/// The rooms of the domain (`shared/domain/src`), lowest layer first. A room may name rooms of
/// lower layers only: never one of its own layer, never one above. `foundation` is what every
/// area uses (`common`, `keys`, `ports`); `bulk::ledger` sits apart from the rest of `bulk`
/// because the pipeline reports to it while bulk triggers start pulls.
const LAYERS: &[&[&str]] = &[
    &["foundation"],
    &["teams", "users", "bulk::ledger"],
    &["events"],
    &["linking", "lab"],
    &["pipeline"],
    &["bulk", "lifecycle", "webhooks", "phone", "fhir"],
];

/// The room of a domain source file (a path relative to `shared/domain/src`).
fn room_of_file(path: &str) -> Option<&'static str> {
    if path == "lib.rs" {
        return None;
    }
    let first = path.split('/').next().unwrap_or(path).trim_end_matches(".rs");
    Some(room_named(first, path.strip_prefix("bulk/").is_some_and(|r| r == "ledger.rs")))
}

/// The room a path `crate::a::b...` names (`crate::Deps` and `crate::DomainError` name none).
fn room_of_path(path: &str) -> Option<&'static str> {
    let mut segments = path.trim_start_matches("crate::").split("::");
    let first = segments.next()?;
    if first.starts_with(|c: char| c.is_ascii_uppercase()) {
        return None;
    }
    Some(room_named(first, first == "bulk" && segments.next() == Some("ledger")))
}

fn room_named(first: &str, is_ledger: bool) -> &'static str {
    match first {
        "common" | "keys" | "ports" => "foundation",
        "bulk" if is_ledger => "bulk::ledger",
        other => LAYERS.iter().flat_map(|l| l.iter()).find(|r| **r == other).copied().unwrap_or("unplaced"),
    }
}

fn layer(room: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&room))
}

/// Every `crate::...` path named in `text`.
fn crate_paths(text: &str) -> Vec<&str> {
    text.match_indices("crate::")
        .map(|(at, _)| {
            let rest = &text[at..];
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(rest.len());
            &rest[..end]
        })
        .collect()
}

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
            // aws-lc-rs is a crypto library (RSA for the phone's tokens), not an AWS service.
            let allowed = ALLOWED.contains(&dep);
            let hit = |b: &&str| if b.ends_with(['-', '_']) { dep.starts_with(*b) } else { dep == *b };
            if !allowed && banned.iter().any(hit) {
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

#[test]
fn a_path_names_its_room() {
    assert_eq!(room_of_path("crate::events::lifecycle::deleted"), Some("events"));
    assert_eq!(room_of_path("crate::bulk::ledger::record"), Some("bulk::ledger"));
    assert_eq!(room_of_path("crate::bulk::import"), Some("bulk"));
    assert_eq!(room_of_path("crate::common::ids::UserId"), Some("foundation"));
    assert_eq!(room_of_path("crate::Deps"), None);
    assert_eq!(room_of_file("bulk/ledger.rs"), Some("bulk::ledger"));
    assert_eq!(room_of_file("users/page_cache.rs"), Some("users"));
    assert_eq!(room_of_file("brand_new.rs"), Some("unplaced"));
}

#[test]
fn domain_rooms_name_only_rooms_below_them() {
    let src = root().join("shared/domain/src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut found = Vec::new();
    for file in files {
        let rel = file.strip_prefix(&src).unwrap_or(&file).display().to_string();
        let Some(room) = room_of_file(&rel) else { continue };
        let Some(own) = layer(room) else {
            found.push(format!("{rel} is in no layer of LAYERS (place its room)"));
            continue;
        };
        let text = std::fs::read_to_string(&file).expect("readable source");
        for path in crate_paths(&text) {
            let Some(named) = room_of_path(path) else { continue };
            if named == room {
                continue;
            }
            match layer(named) {
                Some(l) if l < own => {}
                _ => found.push(format!("{rel} ({room}) names {path} ({named})")),
            }
        }
    }
    found.sort();
    found.dedup();
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

/// The domain names the fields a validation issue is about; where a field was in the request
/// (body, query, path) is the web layer's to say (`wearlab_web::Inputs`).
#[test]
fn the_domain_names_fields_not_request_locations() {
    let mut files = Vec::new();
    rust_files(&root().join("shared/domain/src"), &mut files);
    let located: Vec<_> = files
        .iter()
        .filter(|f| {
            let text = std::fs::read_to_string(f).expect("readable source");
            ["[\"body\"", "[\"query\"", "[\"path\"", "vec![\"body\".into()", "vec![\"query\".into()"]
                .iter()
                .any(|loc| text.contains(loc))
        })
        .map(|f| f.display().to_string())
        .collect();
    assert_eq!(located, Vec::<String>::new());
}

/// What only one room of the domain may write: `patterns` appear in no domain file outside
/// `owners` (paths relative to `shared/domain/src`; one ending in `/` is a folder), its test
/// module aside.
struct Owned {
    what: &'static str,
    owners: &'static [&'static str],
    patterns: &'static [&'static str],
}

const OWNED: &[Owned] = &[
    Owned {
        what: "every storage key is built and parsed in keys/",
        owners: &["keys/"],
        patterns: &[
            "Key::new(",
            ".pk.split(",
            ".pk.rsplit(",
            ".pk.split_once(",
            ".pk.rsplit_once(",
            ".pk.strip_prefix(",
            ".sk.split(",
            ".sk.rsplit(",
            ".sk.split_once(",
            ".sk.rsplit_once(",
            ".sk.strip_prefix(",
        ],
    },
    Owned {
        what: "a connection is read and written through linking's functions",
        owners: &["linking/", "keys/"],
        patterns: &[
            "linking::connection(",
            "CONNECTION_PREFIX",
            "AccountMarker",
            "decode::<ConnectionRecord>",
            ": ConnectionRecord = ",
        ],
    },
    Owned {
        what: "whether a user is active is users::load_active's",
        owners: &["users.rs", "users/"],
        patterns: &["deletion.is_none()", "deletion.is_some()"],
    },
];

/// Where `text`, the source of the domain file `rel`, writes what `rule` keeps to its owners.
fn trespasses(rel: &str, text: &str, rule: &Owned) -> Vec<String> {
    if rule.owners.iter().any(|o| rel == *o || (o.ends_with('/') && rel.starts_with(o))) {
        return Vec::new();
    }
    let code = text.split("#[cfg(test)]\nmod ").next().unwrap_or(text);
    rule.patterns.iter().filter(|p| names(code, p)).map(|p| format!("{rel}: {p} ({})", rule.what)).collect()
}

/// Whether `code` holds `pattern` as written, not as the end of a longer name
/// (`PerKey::new(` is not `Key::new(`).
fn names(code: &str, pattern: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    code.match_indices(pattern).any(|(at, _)| !pattern.starts_with(ident) || !code[..at].ends_with(ident))
}

#[test]
fn a_trespass_is_reported() {
    let keys = &OWNED[0];
    let text = "let k = Key::new(a, b);\nlet u = item.key.pk.strip_prefix(\"USER#\");\n#[cfg(test)]\nmod tests {\n    Key::new(\"P\", \"S\");\n}\n";
    assert_eq!(
        trespasses("bulk/export.rs", text, keys),
        [
            "bulk/export.rs: Key::new( (every storage key is built and parsed in keys/)",
            "bulk/export.rs: .pk.strip_prefix( (every storage key is built and parsed in keys/)",
        ]
    );
    assert_eq!(trespasses("keys/pipeline.rs", text, keys), Vec::<String>::new());
    let tests_only = "fn a() {}\n#[cfg(test)]\nmod tests {\n    Key::new(\"P\", \"S\");\n}\n";
    assert_eq!(trespasses("pipeline/store.rs", tests_only, keys), Vec::<String>::new());
    assert_eq!(trespasses("users/page_cache.rs", "u.deletion.is_none()", &OWNED[2]), Vec::<String>::new());
    let per_key = "static TURNS: LazyLock<PerKey<()>> = LazyLock::new(|| PerKey::new(Default::default));";
    assert_eq!(trespasses("common/throttle.rs", per_key, keys), Vec::<String>::new());
}

#[test]
fn records_and_keys_stay_in_their_rooms() {
    let src = root().join("shared/domain/src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(files.len() > 50, "the domain's sources were read");
    let mut found = Vec::new();
    for file in files {
        let rel = file.strip_prefix(&src).unwrap_or(&file).display().to_string();
        let text = std::fs::read_to_string(&file).expect("readable source");
        for rule in OWNED {
            found.extend(trespasses(&rel, &text, rule));
        }
    }
    found.sort();
    assert_eq!(found, Vec::<String>::new());
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

/// What a function links, as its deployment builds it (`scripts/package`: `-p` for each function,
/// so no benchmark's or test's features): one TLS stack and one crypto backend, shared by the
/// AWS SDK and reqwest (rustls on aws-lc-rs, the system's root certificates), and no test
/// machinery. A second backend (ring) or compiled-in roots (webpki-roots) came with reqwest
/// 0.12's `rustls-tls`; each adds its code to every function's bootstrap.
#[test]
fn functions_link_one_tls_stack_and_no_test_machinery() {
    let functions: Vec<String> = std::fs::read_dir(root().join("functions"))
        .expect("functions/")
        .map(|e| e.expect("an entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert!(functions.len() >= 10, "the functions were found: {functions:?}");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args([
        "tree",
        "--offline",
        "--locked",
        "-e",
        "normal,features",
        "--prefix",
        "none",
        "--manifest-path",
    ])
    .arg(root().join("Cargo.toml"));
    for f in &functions {
        cmd.args(["-p", f]);
    }
    let out = cmd.output().expect("cargo tree runs");
    assert!(out.status.success(), "cargo tree: {}", String::from_utf8_lossy(&out.stderr));
    let tree = String::from_utf8_lossy(&out.stdout);
    assert!(tree.contains("aws-lc-rs v"), "the tree was read");
    let unwanted: Vec<&str> = tree
        .lines()
        .filter(|l| {
            l.starts_with("ring v")
                || l.starts_with("webpki-roots v")
                || l.starts_with("openssl v")
                || l.starts_with("openssl-sys v")
                || l.contains("feature \"test-support\"")
        })
        .collect();
    assert_eq!(unwanted, Vec::<&str>::new(), "a second TLS stack, crypto backend or test machinery");
}
