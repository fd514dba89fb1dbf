//! Checks a JSON body against the OpenAPI schema of its type, to list every offending field.
//!
//! serde stops at the first error; FastAPI (and so the upstream API and its clients) reports all
//! of them at once. The documented schema already says what each body must hold, so the same
//! schema is the one list of rules: this runs only once serde has refused a body, so a valid
//! request pays nothing for it.

use serde_json::{Map, Value};
use utoipa::ToSchema;
use wearlab_models::lab::INPUT_ALIASES;
use wearlab_models::{LocPart, ValidationIssue};

/// Nesting deeper than this is not inspected (bounded work on hostile input).
const MAX_DEPTH: usize = 32;

/// Every issue the schema of `T` finds in `value`, each with its location under `body`.
pub fn issues<T: ToSchema>(value: &Value) -> Vec<ValidationIssue> {
    let Some((defs, root)) = schema_of::<T>() else { return Vec::new() };
    let mut checker = Checker { defs: &defs, out: Vec::new() };
    checker.check(value, &root, &mut vec!["body".into()], 0);
    checker.out
}

/// `value` with every part the schema of `T` refuses replaced by a placeholder the schema
/// accepts (null where allowed, else the first enum value, a minimal string, date, uuid, number,
/// list or object), and every missing required field filled in. Fields the schema accepts keep
/// their values, so the domain's rules can check them although the body as a whole was refused;
/// what they find at a replaced place is not news to the client and is left out by the caller.
pub fn repaired<T: ToSchema>(value: &Value) -> Value {
    let Some((defs, root)) = schema_of::<T>() else { return value.clone() };
    repair(&defs, value, &root, 0)
}

fn schema_of<T: ToSchema>() -> Option<(Map<String, Value>, Value)> {
    let mut named = Vec::new();
    T::schemas(&mut named);
    let defs: Map<String, Value> = named
        .into_iter()
        .filter_map(|(name, schema)| serde_json::to_value(schema).ok().map(|s| (name, s)))
        .collect();
    let root = serde_json::to_value(T::schema()).ok()?;
    Some((defs, root))
}

/// Whether an undeclared key of `fields` is a serde alias of the field `name`.
fn held_under_alias(fields: &Map<String, Value>, name: &str) -> bool {
    INPUT_ALIASES.iter().any(|(alias, field)| *field == name && fields.contains_key(*alias))
}

fn accepts(defs: &Map<String, Value>, value: &Value, schema: &Value, depth: usize) -> bool {
    let mut checker = Checker { defs, out: Vec::new() };
    checker.check(value, schema, &mut Vec::new(), depth);
    checker.out.is_empty()
}

fn repair(defs: &Map<String, Value>, value: &Value, schema: &Value, depth: usize) -> Value {
    if depth > MAX_DEPTH || accepts(defs, value, schema, depth) {
        return value.clone();
    }
    let Some(resolved) = resolve(defs, schema) else { return value.clone() };
    let single = resolved.get("oneOf").or(resolved.get("anyOf")).is_none();
    match value {
        Value::Object(fields) if single => {
            if let Some(properties) = resolved.get("properties").and_then(Value::as_object) {
                let required: Vec<&str> = resolved
                    .get("required")
                    .and_then(Value::as_array)
                    .map(|r| r.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                let mut out = fields.clone();
                for (name, prop) in properties {
                    match fields.get(name) {
                        Some(v) => {
                            out.insert(name.clone(), repair(defs, v, prop, depth + 1));
                        }
                        None if required.contains(&name.as_str()) && !held_under_alias(fields, name) => {
                            out.insert(name.clone(), placeholder(defs, prop, depth + 1));
                        }
                        None => {}
                    }
                }
                let out = Value::Object(out);
                if accepts(defs, &out, schema, depth) {
                    return out;
                }
            }
        }
        Value::Array(items) if single => {
            if let Some(item_schema) = resolved.get("items") {
                let out =
                    Value::Array(items.iter().map(|i| repair(defs, i, item_schema, depth + 1)).collect());
                if accepts(defs, &out, schema, depth) {
                    return out;
                }
            }
        }
        _ => {}
    }
    // An optional object or list (`oneOf` null or the thing) keeps its accepted parts too.
    if let Some(alternatives) = resolved.get("oneOf").or(resolved.get("anyOf")).and_then(Value::as_array) {
        for alternative in alternatives {
            if alternative.get("type").and_then(Value::as_str) == Some("null") {
                continue;
            }
            let out = repair(defs, value, alternative, depth + 1);
            if accepts(defs, &out, schema, depth) {
                return out;
            }
        }
    }
    placeholder(defs, schema, depth)
}

/// The simplest value the schema accepts.
fn placeholder(defs: &Map<String, Value>, schema: &Value, depth: usize) -> Value {
    let Some(schema) = resolve(defs, schema) else { return Value::Null };
    if depth > MAX_DEPTH {
        return Value::Null;
    }
    if let Some(alternatives) = schema.get("oneOf").or(schema.get("anyOf")).and_then(Value::as_array) {
        if alternatives.iter().any(|a| a.get("type").and_then(Value::as_str) == Some("null")) {
            return Value::Null;
        }
        return alternatives.first().map_or(Value::Null, |a| placeholder(defs, a, depth + 1));
    }
    if let Some(first) = schema.get("allOf").and_then(Value::as_array).and_then(|a| a.first()) {
        return placeholder(defs, first, depth + 1);
    }
    if let Some(first) = schema.get("enum").and_then(Value::as_array).and_then(|e| e.first()) {
        return first.clone();
    }
    let types: Vec<&str> = match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if types.contains(&"null") {
        return Value::Null;
    }
    let number = |key: &str| schema.get(key).and_then(Value::as_f64).unwrap_or(0.0);
    match types.first().copied() {
        Some("string") => Value::String(match schema.get("format").and_then(Value::as_str) {
            Some("date") => "2000-01-01".to_owned(),
            Some("date-time") => "2000-01-01T00:00:00Z".to_owned(),
            Some("uuid") => uuid::Uuid::nil().to_string(),
            _ => "x".repeat(schema.get("minLength").and_then(Value::as_u64).unwrap_or(1).max(1) as usize),
        }),
        Some("integer") => Value::from(number("minimum").max(0.0).ceil() as i64),
        Some("number") => Value::from(number("minimum").max(0.0)),
        Some("boolean") => Value::Bool(false),
        Some("array") => Value::Array(Vec::new()),
        Some("object") => {
            let mut out = Map::new();
            let properties = schema.get("properties").and_then(Value::as_object);
            for name in schema
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                if let Some(prop) = properties.and_then(|p| p.get(name)) {
                    out.insert(name.to_owned(), placeholder(defs, prop, depth + 1));
                }
            }
            Value::Object(out)
        }
        _ => Value::Null,
    }
}

fn resolve<'s>(defs: &'s Map<String, Value>, schema: &'s Value) -> Option<&'s Value> {
    match schema.get("$ref").and_then(Value::as_str) {
        // An unknown reference is not a reason to refuse: serde has the last word anyway.
        Some(r) => r.strip_prefix("#/components/schemas/").and_then(|name| defs.get(name)),
        None => Some(schema),
    }
}

struct Checker<'a> {
    defs: &'a Map<String, Value>,
    out: Vec<ValidationIssue>,
}

impl Checker<'_> {
    fn issue(&mut self, loc: &[LocPart], msg: String, kind: &str) {
        self.out.push(ValidationIssue { loc: loc.to_vec(), msg, kind: kind.to_owned() });
    }

    fn check(&mut self, value: &Value, schema: &Value, loc: &mut Vec<LocPart>, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        let defs = self.defs;
        let Some(schema) = resolve(defs, schema) else { return };
        if let Some(all) = schema.get("allOf").and_then(Value::as_array) {
            for s in all {
                self.check(value, s, loc, depth + 1);
            }
        }
        for key in ["oneOf", "anyOf"] {
            if let Some(alternatives) = schema.get(key).and_then(Value::as_array) {
                self.check_alternatives(value, alternatives, loc, depth);
                return;
            }
        }
        if !self.check_type(value, schema, loc) {
            return;
        }
        if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
            && !allowed.contains(value)
        {
            let names: Vec<String> = allowed.iter().map(|v| v.to_string().replace('"', "'")).collect();
            self.issue(loc, format!("Input should be {}", names.join(", ")), "enum");
            return;
        }
        match value {
            Value::Object(fields) => self.check_object(fields, schema, loc, depth),
            Value::Array(items) => {
                if let Some(item_schema) = schema.get("items") {
                    for (i, item) in items.iter().enumerate() {
                        loc.push(LocPart::Index(i));
                        self.check(item, item_schema, loc, depth + 1);
                        loc.pop();
                    }
                }
            }
            Value::String(s) => self.check_string(s, schema, loc),
            Value::Number(n) => {
                let n = n.as_f64().unwrap_or(0.0);
                if let Some(min) = schema.get("minimum").and_then(Value::as_f64)
                    && n < min
                {
                    self.issue(
                        loc,
                        format!("Input should be greater than or equal to {min}"),
                        "greater_than_equal",
                    );
                }
                if let Some(max) = schema.get("maximum").and_then(Value::as_f64)
                    && n > max
                {
                    self.issue(
                        loc,
                        format!("Input should be less than or equal to {max}"),
                        "less_than_equal",
                    );
                }
            }
            _ => {}
        }
    }

    /// Valid when one alternative accepts the value; otherwise the closest one's issues.
    fn check_alternatives(
        &mut self,
        value: &Value,
        alternatives: &[Value],
        loc: &mut Vec<LocPart>,
        depth: usize,
    ) {
        let mut best: Option<Vec<ValidationIssue>> = None;
        for alternative in alternatives {
            let mut sub = Checker { defs: self.defs, out: Vec::new() };
            sub.check(value, alternative, loc, depth + 1);
            if sub.out.is_empty() {
                return;
            }
            // `null` alternatives of optional fields say nothing useful about a wrong value.
            let is_null_schema = alternative.get("type").and_then(Value::as_str) == Some("null");
            if !is_null_schema && best.as_ref().is_none_or(|b| sub.out.len() < b.len()) {
                best = Some(sub.out);
            }
        }
        if let Some(best) = best {
            self.out.extend(best);
        }
    }

    /// Whether the value has one of the schema's types (no `type`: anything goes).
    fn check_type(&mut self, value: &Value, schema: &Value, loc: &[LocPart]) -> bool {
        let types: Vec<&str> = match schema.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ => return true,
        };
        let matches = |t: &str| match t {
            "null" => value.is_null(),
            "string" => value.is_string(),
            "boolean" => value.is_boolean(),
            "integer" => value.is_i64() || value.is_u64(),
            "number" => value.is_number(),
            "array" => value.is_array(),
            "object" => value.is_object(),
            _ => true,
        };
        if types.iter().any(|t| matches(t)) {
            return true;
        }
        let (msg, kind) = match types.iter().find(|t| **t != "null").copied().unwrap_or("null") {
            "string" => ("Input should be a valid string", "string_type"),
            "boolean" => ("Input should be a valid boolean", "bool_type"),
            "integer" => ("Input should be a valid integer", "int_type"),
            "number" => ("Input should be a valid number", "float_type"),
            "array" => ("Input should be a valid list", "list_type"),
            "object" => ("Input should be a valid dictionary", "dict_type"),
            _ => ("Input should be None", "none_required"),
        };
        self.issue(loc, msg.to_owned(), kind);
        false
    }

    fn check_object(
        &mut self,
        fields: &Map<String, Value>,
        schema: &Value,
        loc: &mut Vec<LocPart>,
        depth: usize,
    ) {
        let properties = schema.get("properties").and_then(Value::as_object);
        let required = schema.get("required").and_then(Value::as_array);
        let Some(properties) = properties else { return };
        // serde aliases (`zip_code` for `zip`) are not in the schema: a field held under one of
        // its aliases (`wearlab_models::INPUT_ALIASES`) is not missing. Other undeclared keys
        // are ignored, as serde ignores them.
        let is_required = |name: &str| required.is_some_and(|r| r.iter().any(|n| n.as_str() == Some(name)));
        // Required fields in declaration order (the `required` list keeps it; a JSON map does not),
        // then the optional ones, so an answer lists fields roughly as the type declares them.
        let names = required
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .chain(properties.keys().map(String::as_str).filter(|n| !is_required(n)));
        for name in names {
            let Some(prop_schema) = properties.get(name) else { continue };
            {
                loc.push(LocPart::Key(name.to_owned()));
                match fields.get(name) {
                    Some(v) => self.check(v, prop_schema, loc, depth + 1),
                    None if is_required(name) && !held_under_alias(fields, name) => {
                        self.issue(loc, "Field required".to_owned(), "missing");
                    }
                    None => {}
                }
                loc.pop();
            }
        }
    }

    fn check_string(&mut self, s: &str, schema: &Value, loc: &[LocPart]) {
        let chars = s.chars().count() as u64;
        if let Some(min) = schema.get("minLength").and_then(Value::as_u64)
            && chars < min
        {
            self.issue(loc, format!("String should have at least {min} characters"), "string_too_short");
        }
        if let Some(max) = schema.get("maxLength").and_then(Value::as_u64)
            && chars > max
        {
            self.issue(loc, format!("String should have at most {max} characters"), "string_too_long");
        }
        let (ok, msg, kind) = match schema.get("format").and_then(Value::as_str) {
            Some("date") => (
                chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").is_ok(),
                "Input should be a valid date in the format YYYY-MM-DD",
                "date_from_datetime_parsing",
            ),
            Some("date-time") => (
                chrono::DateTime::parse_from_rfc3339(s).is_ok()
                    || chrono::NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S%.f").is_ok(),
                "Input should be a valid datetime",
                "datetime_from_date_parsing",
            ),
            Some("uuid") => {
                (uuid::Uuid::parse_str(s).is_ok(), "Input should be a valid UUID", "uuid_parsing")
            }
            _ => (true, "", ""),
        };
        if !ok {
            self.issue(loc, msg.to_owned(), kind);
        }
    }
}
