//! Backend settings as plain values: from a `backend`/`cloud` block, a partial configuration file
//! (`*.tfbackend`, `backend.hcl`) or the driftback configuration, merged in the order Terraform
//! applies them (later wins, nested blocks merged key by key).

use hcl_edit::expr::{Expression, ObjectKey};
use hcl_edit::structure::Body;
use serde_json::{Map, Value};

use driftback_terraform::edit::label_str;

/// Setting name -> value; nested blocks (`assume_role {}`, `endpoints {}`, `workspaces {}`) are
/// objects.
pub type Settings = Map<String, Value>;

/// The literal value of an expression; `None` for anything that needs evaluating (Terraform does
/// not allow references in backend configuration either).
pub fn literal(expr: &Expression) -> Option<Value> {
    match expr {
        Expression::Null(_) => Some(Value::Null),
        Expression::Bool(b) => Some(Value::Bool(*b.value())),
        Expression::Number(n) => serde_json::to_value(n.value()).ok(),
        Expression::String(s) => Some(Value::String(s.value().clone())),
        Expression::Array(items) => items.iter().map(literal).collect::<Option<Vec<_>>>().map(Value::Array),
        Expression::Object(object) => {
            let mut out = Map::new();
            for (key, value) in object.iter() {
                let key = match key {
                    ObjectKey::Ident(i) => i.as_str().to_string(),
                    ObjectKey::Expression(Expression::String(s)) => s.value().clone(),
                    ObjectKey::Expression(_) => return None,
                };
                out.insert(key, literal(value.expr())?);
            }
            Some(Value::Object(out))
        }
        Expression::Parenthesis(p) => literal(p.inner()),
        _ => None,
    }
}

/// The settings of a block body (or a whole partial-configuration file): attributes as values,
/// nested blocks as objects (a block with labels is keyed by its first label under its type).
/// Attributes whose value is not a literal are returned by name in the second list.
pub fn from_body(body: &Body) -> (Settings, Vec<String>) {
    let mut out = Map::new();
    let mut not_literal = Vec::new();
    for attr in body.attributes() {
        match literal(&attr.value) {
            Some(v) => {
                out.insert(attr.key.as_str().to_string(), v);
            }
            None => not_literal.push(attr.key.as_str().to_string()),
        }
    }
    for block in body.blocks() {
        let (inner, bad) = from_body(&block.body);
        not_literal.extend(bad.into_iter().map(|b| format!("{}.{b}", block.ident.as_str())));
        let slot = out.entry(block.ident.as_str().to_string()).or_insert_with(|| Value::Object(Map::new()));
        let target = match block.labels.first() {
            Some(label) => match slot {
                Value::Object(m) => m.entry(label_str(label).to_string()).or_insert_with(|| Value::Object(Map::new())),
                other => other,
            },
            None => slot,
        };
        merge_into(target, Value::Object(inner));
    }
    (out, not_literal)
}

/// Merge `overlay` over `base`: objects key by key, anything else replaced.
pub fn merge(base: &mut Settings, overlay: &Settings) {
    for (k, v) in overlay {
        match base.get_mut(k) {
            Some(existing) => merge_into(existing, v.clone()),
            None => {
                base.insert(k.clone(), v.clone());
            }
        }
    }
}

fn merge_into(target: &mut Value, overlay: Value) {
    match (target, overlay) {
        (Value::Object(t), Value::Object(o)) => merge(t, &o),
        (t, o) => *t = o,
    }
}

/// A string setting, at a dotted path (`endpoints.s3`).
pub fn text<'a>(settings: &'a Settings, path: &str) -> Option<&'a str> {
    get(settings, path).and_then(Value::as_str).filter(|s| !s.is_empty())
}

/// A boolean setting; `"true"` counts, as Terraform reads `-backend-config=key=true`.
pub fn flag(settings: &Settings, path: &str) -> Option<bool> {
    match get(settings, path)? {
        Value::Bool(b) => Some(*b),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

/// A list of strings (a single string counts as a list of one).
pub fn texts(settings: &Settings, path: &str) -> Vec<String> {
    match get(settings, path) {
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).map(str::to_string).collect(),
        Some(Value::String(s)) => vec![s.clone()],
        _ => Vec::new(),
    }
}

pub fn get<'a>(settings: &'a Settings, path: &str) -> Option<&'a Value> {
    let mut parts = path.split('.');
    let mut current = settings.get(parts.next()?)?;
    for part in parts {
        current = current.get(part)?;
    }
    Some(current)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> (Settings, Vec<String>) {
        from_body(&hcl_edit::parser::parse_body(text).unwrap())
    }

    #[test]
    fn literals_blocks_and_merging() {
        let (mut base, bad) = parse(
            "bucket = \"tf-state\"\nencrypt = true\nassume_role {\n  role_arn = \"arn:aws:iam::1:role/a\"\n}\nkey = var.key\n",
        );
        assert_eq!(bad, ["key"]);
        assert_eq!(text(&base, "assume_role.role_arn"), Some("arn:aws:iam::1:role/a"));
        assert_eq!(flag(&base, "encrypt"), Some(true));
        let (overlay, _) = parse(
            "key = \"prod/app.tfstate\"\nassume_role {\n  session_name = \"x\"\n}\nendpoints = { s3 = \"http://h\" }\n",
        );
        merge(&mut base, &overlay);
        assert_eq!(text(&base, "key"), Some("prod/app.tfstate"));
        assert_eq!(text(&base, "assume_role.role_arn"), Some("arn:aws:iam::1:role/a"), "blocks merge key by key");
        assert_eq!(text(&base, "assume_role.session_name"), Some("x"));
        assert_eq!(text(&base, "endpoints.s3"), Some("http://h"));
        let (labelled, _) = parse("backend \"s3\" {\n  bucket = \"b\"\n}\n");
        assert_eq!(text(&labelled, "backend.s3.bucket"), Some("b"));
    }
}
