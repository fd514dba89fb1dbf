//! `make watch` against `template.yaml`: the environment of the Lambda functions
//! (`infra/lambda-env`, the variables each function reads, must match what the template sets for
//! each function) and the watch router (the same paths to the same functions). `make watch`
//! exports what the template sets, and before it serves it runs each function binary with only
//! its required variables (it must start) and without each one (it must stop, naming it):
//! `scripts/watch-aws check-init`, run by `make test` through the watch smoke.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// One function's variables in `infra/lambda-env`: required ones, and those read only when set.
#[derive(Debug, Default)]
struct Listed {
    required: BTreeSet<String>,
    optional: BTreeSet<String>,
}

impl Listed {
    fn all(&self) -> BTreeSet<String> {
        self.required.union(&self.optional).cloned().collect()
    }
}

/// `infra/lambda-env`, the `*` line merged into every function.
fn listed() -> BTreeMap<String, Listed> {
    let text = std::fs::read_to_string(root().join("infra/lambda-env")).unwrap();
    let mut rows: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in text.lines() {
        let words: Vec<String> =
            line.split('#').next().unwrap().split_whitespace().map(str::to_string).collect();
        if let Some((name, vars)) = words.split_first() {
            rows.insert(name.clone(), vars.to_vec());
        }
    }
    let common = rows.remove("*").expect("a `*` line");
    rows.into_iter()
        .map(|(name, vars)| {
            let mut listed = Listed::default();
            for v in common.iter().chain(&vars) {
                match v.strip_suffix('?') {
                    Some(v) => listed.optional.insert(v.to_string()),
                    None => listed.required.insert(v.clone()),
                };
            }
            (name, listed)
        })
        .collect()
}

/// Every `key:` of a YAML document as its path of keys, with its scalar value (empty for a
/// mapping). Enough for template.yaml's block style: list items and block scalars are skipped,
/// along with everything nested in them.
fn yaml_keys(text: &str) -> Vec<(Vec<String>, String)> {
    let mut out = Vec::new();
    let mut stack: Vec<(usize, String)> = Vec::new();
    let mut skip_deeper_than: Option<usize> = None;
    for line in text.lines() {
        let body = line.trim_start();
        if body.is_empty() || body.starts_with('#') {
            continue;
        }
        let indent = line.len() - body.len();
        if let Some(limit) = skip_deeper_than {
            if indent > limit {
                continue;
            }
            skip_deeper_than = None;
        }
        while stack.last().is_some_and(|(i, _)| *i >= indent) {
            stack.pop();
        }
        if body.starts_with('-') {
            skip_deeper_than = Some(indent);
            continue;
        }
        let Some((key, value)) = body.split_once(':') else { continue };
        let value = value.trim();
        stack.push((indent, key.trim().to_string()));
        out.push((stack.iter().map(|(_, k)| k.clone()).collect(), value.to_string()));
        if value.starts_with('>') || value.starts_with('|') {
            skip_deeper_than = Some(indent);
        }
    }
    out
}

/// The variables template.yaml sets for each function (its `Binary`): Globals plus its own.
fn template_env() -> BTreeMap<String, BTreeSet<String>> {
    let keys = yaml_keys(&std::fs::read_to_string(root().join("template.yaml")).unwrap());
    let at = |path: &[&str]| -> Vec<&(Vec<String>, String)> {
        keys.iter()
            .filter(|(p, _)| {
                p.len() == path.len() + 1 && p.iter().zip(path).all(|(a, b)| b == &"*" || a == b)
            })
            .collect()
    };
    let globals: BTreeSet<String> = at(&["Globals", "Function", "Environment", "Variables"])
        .into_iter()
        .map(|(p, _)| p.last().unwrap().clone())
        .collect();
    let mut out = BTreeMap::new();
    for (path, value) in at(&["Resources", "*"]) {
        if path[2] != "Type" || value != "AWS::Serverless::Function" {
            continue;
        }
        let logical = path[1].as_str();
        let binary = at(&["Resources", logical, "Metadata", "BuildProperties"])
            .into_iter()
            .find(|(p, _)| p[4] == "Binary")
            .unwrap_or_else(|| panic!("{logical} has no BuildProperties.Binary"))
            .1
            .clone();
        let own = at(&["Resources", logical, "Properties", "Environment", "Variables"])
            .into_iter()
            .map(|(p, _)| p.last().unwrap().clone());
        out.insert(binary, globals.iter().cloned().chain(own).collect());
    }
    out
}

#[test]
fn the_template_sets_for_each_function_exactly_the_variables_it_reads() {
    let listed = listed();
    let template = template_env();
    let packages: BTreeSet<String> = std::fs::read_dir(root().join("functions"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(listed.keys().cloned().collect::<BTreeSet<_>>(), packages, "infra/lambda-env vs functions/");
    assert_eq!(template.keys().cloned().collect::<BTreeSet<_>>(), packages, "template.yaml vs functions/");
    for (name, vars) in &listed {
        assert_eq!(template[name], vars.all(), "{name}: template.yaml vs infra/lambda-env");
    }
}

/// The providers' OAuth client secrets and push tokens are SSM SecureStrings read at init, never
/// variables of a function (which `lambda:GetFunctionConfiguration` shows to whoever may read
/// the function's configuration), nor parameters of the stack.
#[test]
fn no_function_environment_holds_a_provider_secret() {
    let template = template_env();
    assert!(!template.is_empty());
    for (name, vars) in &template {
        let secrets: Vec<&String> = vars.iter().filter(|v| wearlab_aws::is_provider_secret_var(v)).collect();
        assert!(secrets.is_empty(), "{name}: {secrets:?} in template.yaml");
        assert!(vars.contains(wearlab_aws::PROVIDER_SECRETS_PATH_VAR), "{name}");
    }
    for (name, listed) in listed() {
        let secrets: Vec<String> =
            listed.all().into_iter().filter(|v| wearlab_aws::is_provider_secret_var(v)).collect();
        assert!(secrets.is_empty(), "{name}: {secrets:?} in infra/lambda-env");
    }
    let text = std::fs::read_to_string(root().join("template.yaml")).unwrap();
    assert!(!text.contains("NoEcho"), "a secret parameter of the stack ends up in a function's environment");
    assert!(wearlab_aws::is_provider_secret_var("WEARLAB_PROVIDER_OURA_CLIENT_SECRET"));
}

#[test]
fn the_yaml_reader_skips_lists_and_block_scalars() {
    let keys = yaml_keys("a:\n  b: >-\n    NOT_A_KEY: x\n  c:\n    - d: 1\n      e: 2\n  f: 3\n");
    let paths: Vec<String> = keys.iter().map(|(p, v)| format!("{}={v}", p.join("."))).collect();
    assert_eq!(paths, ["a=", "a.b=>-", "a.c=", "a.f=3"]);
}

/// `make watch` routes paths with `[workspace.metadata.lambda.watch.router]` in Cargo.toml; the
/// HTTP API with the functions' `HttpApi` events. Both must send each path and method to the same
/// function. A router entry naming one function serves every method (`ANY`); an entry listing
/// `{ method, function }` pairs serves those methods only, as the template's route of that method.
#[test]
fn the_watch_router_routes_like_the_template() {
    let cargo = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let section = cargo.split("[workspace.metadata.lambda.watch.router]").nth(1).expect("the watch router");
    let quoted = |s: &str| s.trim().trim_matches('"').to_string();
    let mut router: BTreeSet<(String, String, String)> = BTreeSet::new();
    for (path, value) in section
        .lines()
        .take_while(|l| !l.starts_with('['))
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once('='))
    {
        let path = quoted(path).replace("{*proxy}", "{proxy+}");
        let path = if path.len() > 1 { path.trim_end_matches('/').to_string() } else { path };
        let value = value.trim();
        if !value.starts_with('[') {
            router.insert((path, "ANY".into(), quoted(value)));
            continue;
        }
        for pair in value.trim_matches(|c| c == '[' || c == ']').split('}').filter(|p| p.contains('=')) {
            let field = |name: &str| {
                let at = pair.find(&format!("{name} =")).unwrap_or_else(|| panic!("{name} in {pair}"));
                quoted(pair[at + name.len() + 2..].split(',').next().unwrap())
            };
            router.insert((path.clone(), field("method"), field("function")));
        }
    }

    let keys = yaml_keys(&std::fs::read_to_string(root().join("template.yaml")).unwrap());
    let value = |path: &[&str]| keys.iter().find(|(p, _)| p == path).map(|(_, v)| v.clone());
    let mut template = BTreeSet::new();
    for (path, v) in &keys {
        // Resources.<Function>.Properties.Events.<Event>.Type: HttpApi
        if path.len() == 6
            && path[0] == "Resources"
            && path[3] == "Events"
            && path[5] == "Type"
            && v == "HttpApi"
        {
            let p: Vec<&str> = path.iter().map(String::as_str).collect();
            let route = value(&[p[0], p[1], p[2], p[3], p[4], "Properties", "Path"]).unwrap();
            let method = value(&[p[0], p[1], p[2], p[3], p[4], "Properties", "Method"]).unwrap();
            let binary = value(&["Resources", p[1], "Metadata", "BuildProperties", "Binary"]).unwrap();
            template.insert((route, method, binary));
        }
    }
    assert!(!template.is_empty());
    assert!(router.iter().any(|(_, method, _)| method == "POST"), "method routes are read");
    assert_eq!(router, template, "Cargo.toml's watch router vs template.yaml's HttpApi events");
}

/// The IAM actions the DynamoDB adapter (`shared/aws/src/dynamodb.rs`) needs, read from the SDK
/// operations it calls. TransactWriteItems is authorised per item, as the write it holds.
fn dynamodb_actions_called() -> BTreeSet<&'static str> {
    let code = std::fs::read_to_string(root().join("shared/aws/src/dynamodb.rs")).unwrap();
    let operations: [(&str, &[&str]); 9] = [
        ("get_item", &["GetItem"]),
        ("put_item", &["PutItem"]),
        ("update_item", &["UpdateItem"]),
        ("delete_item", &["DeleteItem"]),
        ("query", &["Query"]),
        ("scan", &["Scan"]),
        ("batch_get_item", &["BatchGetItem"]),
        ("batch_write_item", &["BatchWriteItem"]),
        ("transact_write_items", &["PutItem", "UpdateItem", "DeleteItem", "ConditionCheckItem"]),
    ];
    let mut actions = BTreeSet::new();
    for (operation, needs) in operations {
        if code.contains(&format!(".{operation}()")) {
            actions.extend(needs.iter().copied());
        }
    }
    actions
}

/// moto checks no IAM, so a call the template does not allow would pass every local test and
/// fail on AWS: every function's `Table` statement allows every action the adapter calls.
#[test]
fn every_functions_table_policy_allows_every_call_the_dynamodb_adapter_makes() {
    let called = dynamodb_actions_called();
    assert!(called.contains("BatchWriteItem") && called.contains("Query"), "{called:?}");
    let template = std::fs::read_to_string(root().join("template.yaml")).unwrap();
    let lines: Vec<&str> = template.lines().collect();
    let mut statements = 0;
    for (at, line) in lines.iter().enumerate() {
        if line.trim() != "- Sid: Table" {
            continue;
        }
        statements += 1;
        let allowed: BTreeSet<&str> = lines[at + 1..]
            .iter()
            .take_while(|l| !l.trim_start().starts_with("Resource:"))
            .filter_map(|l| l.trim().strip_prefix("- dynamodb:"))
            .collect();
        // A statement that only reads (the erasure worker's index reads) need not write.
        let writes = allowed.contains("PutItem");
        for action in &called {
            let is_write = !matches!(*action, "GetItem" | "Query" | "Scan" | "BatchGetItem");
            if writes || !is_write {
                assert!(allowed.contains(action), "template.yaml line {}: dynamodb:{action} missing", at + 1);
            }
        }
    }
    assert!(statements >= 9, "{statements} Table statements found");
}

/// Every function behind the HTTP API may write the team's fair-use count (UpdateItem) and an
/// audit entry (PutItem): each request is admitted by fair use, and a PHI route records its
/// audit entry before it answers. A read-only table policy passes every local test (neither
/// the embedded store nor moto checks IAM) and fails every request on AWS.
#[test]
fn every_api_function_may_write_its_fair_use_count_and_audit_entries() {
    let text = std::fs::read_to_string(root().join("template.yaml")).unwrap();
    let mut blocks: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        let top = line.starts_with("  ") && !line.starts_with("   ") && line.trim_end().ends_with(':');
        if top {
            blocks.push((line.trim().trim_end_matches(':').to_owned(), String::new()));
        } else if let Some((_, body)) = blocks.last_mut() {
            body.push_str(line);
            body.push('\n');
        }
    }
    let api: Vec<_> = blocks
        .iter()
        .filter(|(name, body)| name.ends_with("Function") && body.contains("Type: HttpApi"))
        .collect();
    assert!(api.len() >= 7, "API functions found: {:?}", api.iter().map(|b| &b.0).collect::<Vec<_>>());
    for (name, body) in api {
        for action in ["dynamodb:PutItem", "dynamodb:UpdateItem"] {
            assert!(body.contains(action), "{name} may not {action}");
        }
    }
}
