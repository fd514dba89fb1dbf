//! `docs/ARCHITECTURE.md` is where a newcomer looks for things, so every file, folder and Rust
//! symbol it names in backticks must exist: a move or a rename that forgets the document fails
//! here instead of sending the next reader to a path that is gone.
//!
//! The repository also stands alone: a fact is cited by its public source (a provider's
//! documentation URL, a published OpenAPI document) or by the repository's own documents, never
//! by a sheet kept beside the repository that its readers do not have.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Documents held to this check.
const DOCUMENTS: &[&str] = &["docs/ARCHITECTURE.md"];

/// Backticked words that look like paths but are not (routes, prefixes, address ranges...).
const NOT_PATHS: &[&str] = &["provider/resource"];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every file the repository tracks, relative to its root.
fn tracked_files() -> Vec<String> {
    let out = Command::new("git").arg("ls-files").current_dir(root()).output().expect("git runs");
    assert!(out.status.success(), "git ls-files");
    String::from_utf8(out.stdout).expect("utf-8 paths").lines().map(str::to_owned).collect()
}

/// Every backticked span of `text` without spaces.
fn backticked(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).filter(|s| !s.is_empty() && !s.contains(char::is_whitespace)).collect()
}

const EXTENSIONS: &[&str] = &[".rs", ".md", ".toml", ".yaml", ".yml", ".json", ".mjs", ".sh", ".py", ".txt"];

/// Whether a backticked word names a repository path (rather than a route, a key, a symbol).
fn is_path(word: &str) -> bool {
    let looks = word.contains('/') || EXTENSIONS.iter().any(|e| word.ends_with(e));
    looks
        && !word.starts_with(['/', '.', '$', '~'])
        && !word.contains(['<', '>', '{', '}', '*', '#', '=', ':', '?', '&'])
        && !word.contains("://")
        && !NOT_PATHS.contains(&word)
}

/// Whether `word` is a tracked file or folder: from the root, or as the tail of one (a document
/// names `emf.rs` or `bulk/import.rs` in the context of a folder it named before).
fn path_exists(word: &str, files: &[String]) -> bool {
    let dir = word.trim_end_matches('/');
    files.iter().any(|f| {
        f == dir
            || f.starts_with(&format!("{dir}/"))
            || f.ends_with(&format!("/{dir}"))
            || f.contains(&format!("/{dir}/"))
    })
}

/// A Rust path named in the document: `a::b::c` or `name()` (the call form of a function).
fn rust_symbol(word: &str) -> Option<&str> {
    let word = word.trim_end_matches("()").trim_end_matches('!');
    let segments: Vec<&str> = word.split("::").collect();
    let ident = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    (segments.len() > 1 && segments.iter().all(|s| ident(s))).then_some(word)
}

/// Whether the last segment of `symbol` is defined in the workspace's sources (an item, a
/// module, an enum variant or a field), or the path's last two segments appear as written.
fn symbol_exists(symbol: &str, sources: &[String]) -> bool {
    let segments: Vec<&str> = symbol.split("::").collect();
    let last = segments[segments.len() - 1];
    let tail = segments[segments.len() - 2..].join("::");
    let defines = |text: &str| {
        ["fn ", "struct ", "enum ", "trait ", "type ", "const ", "static ", "mod ", "macro_rules! "]
            .iter()
            .any(|kw| text.match_indices(&format!("{kw}{last}")).any(|(at, m)| ends_word(text, at + m.len())))
            || text.lines().any(|l| {
                let l = l.trim_start();
                l.strip_prefix(last).is_some_and(|rest| rest.starts_with([',', '(', ' ', '{', ':']))
            })
    };
    sources.iter().any(|text| text.contains(&tail) || defines(text))
}

fn ends_word(text: &str, at: usize) -> bool {
    !text[at..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
}

#[test]
fn the_architecture_document_names_only_what_exists() {
    let files = tracked_files();
    let sources: Vec<String> = files
        .iter()
        .filter(|f| f.ends_with(".rs"))
        .filter_map(|f| std::fs::read_to_string(root().join(f)).ok())
        .collect();
    let mut missing = Vec::new();
    for doc in DOCUMENTS {
        let text = std::fs::read_to_string(root().join(doc)).expect("document readable");
        for word in backticked(&text) {
            if is_path(word) && !path_exists(word, &files) {
                missing.push(format!("{doc}: path `{word}`"));
            } else if let Some(symbol) = rust_symbol(word)
                && !symbol_exists(symbol, &sources)
            {
                missing.push(format!("{doc}: symbol `{word}`"));
            }
        }
    }
    missing.sort();
    missing.dedup();
    assert_eq!(missing, Vec::<String>::new(), "rename them in the document, or bring them back");
}

#[test]
fn a_path_or_symbol_that_is_gone_is_reported() {
    let files = vec!["shared/domain/src/users.rs".to_owned(), "shared/telemetry/src/emf.rs".to_owned()];
    assert!(path_exists("shared/domain/src/users.rs", &files));
    assert!(path_exists("emf.rs", &files));
    assert!(path_exists("shared/domain/src/", &files));
    assert!(!path_exists("shared/domain/src/catalog.rs", &files));
    assert!(is_path("functions/user-api"));
    assert!(!is_path("/v2/user"));
    assert!(!is_path("fc00::/7"));
    assert!(!is_path("functions/<name>/src/main.rs"));
    let sources = vec!["pub fn load_active() {}\nenum E {\n    Erased { n: u8 },\n}".to_owned()];
    assert!(symbol_exists("users::load_active", &sources));
    assert!(symbol_exists("lifecycle::Erasure::Erased", &sources));
    assert!(!symbol_exists("users::load_gone", &sources));
    assert_eq!(rust_symbol("users::load_active()"), Some("users::load_active"));
    assert_eq!(rust_symbol("DataKey"), None);
}

/// The sheets kept beside the repository (not in it), by file name.
const OUTSIDE_SHEETS: &[&str] = &["PROVIDERS", "MOBILE", "SPEC", "DESIGN", "API-NOTES"];

/// `<sheet>.md`: the needles are put together at run time so that this file does not match itself.
fn md(sheet: &str) -> String {
    format!("{sheet}.md")
}

/// The 1-based lines of `text` that cite something outside the repository: a path through the
/// parent folder's `shared/`, one of the outside sheets as `shared/<sheet>.md`, or a numbered
/// section of a providers sheet other than the repository's `docs/PROVIDERS.md` (which has no
/// numbered sections).
fn outside_citations(text: &str) -> Vec<usize> {
    let parent = format!("..{}", "/shared/");
    let sheets: Vec<String> = OUTSIDE_SHEETS.iter().map(|s| format!("shared/{}", md(s))).collect();
    let numbered = ["section", "\u{a7}"].map(|n| format!("{} {n}", md("PROVIDERS")));
    let cites_numbered = |line: &str| {
        numbered.iter().any(|n| line.match_indices(n.as_str()).any(|(at, _)| !line[..at].ends_with("docs/")))
    };
    text.lines()
        .enumerate()
        .filter(|(_, line)| {
            line.contains(&parent) || sheets.iter().any(|s| line.contains(s.as_str())) || cites_numbered(line)
        })
        .map(|(at, _)| at + 1)
        .collect()
}

/// Whether a tracked file is left out of the citation check: a provider's JSON kept as a fixture
/// (its text is the provider's, not the repository's).
fn provider_json(path: &str) -> bool {
    path.starts_with("shared/providers/fixtures/") && path.ends_with(".json")
}

#[test]
fn the_repository_cites_no_sheet_outside_it() {
    let mut found = Vec::new();
    for file in tracked_files().iter().filter(|f| !provider_json(f)) {
        let Ok(bytes) = std::fs::read(root().join(file)) else { continue };
        let Ok(text) = String::from_utf8(bytes) else { continue };
        if text.contains('\0') {
            continue;
        }
        let lines: Vec<&str> = text.lines().collect();
        for at in outside_citations(&text) {
            found.push(format!("{file}:{at}: {}", lines[at - 1].trim()));
        }
    }
    assert!(
        found.is_empty(),
        "cite the public source (the provider's documentation URL, its published OpenAPI document) or \
         docs/PROVIDERS.md instead:\n{}",
        found.join("\n")
    );
}

#[test]
fn a_citation_of_an_outside_sheet_is_reported_and_repository_paths_are_not() {
    let providers = md("PROVIDERS");
    let text = [
        "Facts: `shared/providers/src/oura.rs` and `shared/domain/src/users.rs`.".to_owned(),
        format!("Facts: `..{}{providers}` section 2.", "/shared/"),
        format!("Hosts as docs/{providers} says."),
        format!("Limits ({providers} {}9 Rate).", '\u{a7}'),
        format!("The catalog's values: `shared/{}`.", md("SPEC")),
        format!("As in {providers} section 6."),
        format!("Polar's table in docs/{providers} section Polar."),
        format!("A screen of `shared/{}`.", md("MOBILE")),
    ]
    .join("\n");
    assert_eq!(outside_citations(&text), vec![2, 4, 5, 6, 8]);
    assert!(provider_json("shared/providers/fixtures/oura/sleep.json"));
    assert!(!provider_json("shared/providers/fixtures/README.md"));
    assert!(!provider_json("docs/openapi.json"));
}
