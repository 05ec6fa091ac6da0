//! Values written into HCL: rendering that can never smuggle in an interpolation.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A value to write: literal data (possibly from events), or a reference the tool itself built.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttrValue {
    /// Data: rendered as an HCL literal; `${` and `%{` in strings are escaped.
    Literal(Value),
    /// A reference such as `aws_vpc.main.id`; only identifiers, dots and `[n]` are accepted.
    Reference(String),
}

/// The content of a block to add: attributes, then nested blocks.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BlockSpec {
    pub attrs: Vec<(String, AttrValue)>,
    pub blocks: Vec<(String, BlockSpec)>,
}

impl BlockSpec {
    /// The attributes written as literal values (references left out), by name.
    pub fn literal_attrs(&self) -> serde_json::Map<String, serde_json::Value> {
        self.attrs
            .iter()
            .filter_map(|(k, v)| match v {
                AttrValue::Literal(v) => Some((k.clone(), v.clone())),
                AttrValue::Reference(_) => None,
            })
            .collect()
    }
}

/// What cannot be written as HCL: the name or reference that is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RenderError {
    #[error("{0:?} is not a plain reference")]
    NotAReference(String),
    #[error("{0:?} is not a valid attribute name")]
    AttributeName(String),
    #[error("{0:?} is not a valid block type")]
    BlockType(String),
}

impl AttrValue {
    pub fn render(&self, indent: &str) -> Result<String, RenderError> {
        match self {
            AttrValue::Literal(v) => Ok(render_value(v, indent)),
            AttrValue::Reference(r) => {
                if is_reference(r) {
                    Ok(r.clone())
                } else {
                    Err(RenderError::NotAReference(r.clone()))
                }
            }
        }
    }
}

/// A traversal: identifiers joined by `.`, with `[0]` indexes and `["key"]` keys whose text is
/// plain (letters, digits, `_ - . / :`): a key from the state can never open a template or a string.
fn is_reference(r: &str) -> bool {
    let mut rest = r;
    let mut first = true;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("[\"") {
            let Some(end) = after.find("\"]") else { return false };
            let key = &after[..end];
            if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || "_-./:".contains(c)) {
                return false;
            }
            rest = &after[end + 2..];
        } else if let Some(after) = rest.strip_prefix('[') {
            let Some(end) = after.find(']') else { return false };
            if end == 0 || !after[..end].chars().all(|c| c.is_ascii_digit()) {
                return false;
            }
            rest = &after[end + 1..];
        } else {
            let body = if first {
                rest
            } else if let Some(b) = rest.strip_prefix('.') {
                b
            } else {
                return false;
            };
            let end = body.find(['.', '[']).unwrap_or(body.len());
            if !is_identifier(&body[..end]) {
                return false;
            }
            rest = &body[end..];
        }
        first = false;
    }
    !first
}

/// An HCL identifier: usable as a bare attribute name or object key.
pub fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// A quoted HCL string literal; template sequences are escaped so data stays data.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '$' | '%' if chars.peek() == Some(&'{') => {
                out.push(c);
                out.push(c);
            }
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// An object key: bare when it is an identifier, quoted otherwise.
pub fn render_key(k: &str) -> String {
    if is_identifier(k) { k.to_string() } else { quote(k) }
}

/// Render a JSON value as HCL; objects are multi-line, indented from `indent`.
pub fn render_value(v: &Value, indent: &str) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => quote(s),
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(|i| render_value(i, indent)).collect();
            format!("[{}]", parts.join(", "))
        }
        Value::Object(map) if map.is_empty() => "{}".into(),
        Value::Object(_) => render_value_like(v, indent, &[]),
    }
}

/// As [`render_value`], an object's keys in the order `like` gives (a sibling item's order, as the
/// code writes its statements `Sid`, `Effect`, `Action`), then the others.
pub fn render_value_like(v: &Value, indent: &str, like: &[String]) -> String {
    let Value::Object(map) = v else { return render_value(v, indent) };
    if map.is_empty() {
        return "{}".into();
    }
    let keys: Vec<&String> =
        like.iter().filter(|k| map.contains_key(*k)).chain(map.keys().filter(|k| !like.contains(k))).collect();
    let inner = format!("{indent}  ");
    let width = keys.iter().map(|k| render_key(k).len()).max().unwrap_or(0);
    let mut out = String::from("{\n");
    for k in keys {
        let key = render_key(k);
        out.push_str(&format!("{inner}{key:<width$} = {}\n", render_value(&map[k], &inner)));
    }
    out.push_str(indent);
    out.push('}');
    out
}

/// As [`render_value_like`], on one line (`{ port = 443, cidr_blocks = ["0.0.0.0/16"] }`), as a
/// list whose items are one-line objects writes them. `None` when a member holds an object that
/// is not empty, which would not read well on one line.
pub fn render_inline_like(v: &Value, like: &[String]) -> Option<String> {
    let Value::Object(map) = v else { return Some(render_value(v, "")) };
    if map.is_empty() {
        return Some("{}".into());
    }
    let nested = |v: &Value| match v {
        Value::Object(m) => !m.is_empty(),
        Value::Array(items) => items.iter().any(|i| i.as_object().is_some_and(|m| !m.is_empty())),
        _ => false,
    };
    if map.values().any(nested) {
        return None;
    }
    let keys = like.iter().filter(|k| map.contains_key(*k)).chain(map.keys().filter(|k| !like.contains(k)));
    let members: Vec<String> = keys.map(|k| format!("{} = {}", render_key(k), render_value(&map[k], ""))).collect();
    Some(format!("{{ {} }}", members.join(", ")))
}

/// Render a whole block body (without braces), each line starting with `indent`.
pub fn render_block_body(spec: &BlockSpec, indent: &str) -> Result<String, RenderError> {
    let mut out = String::new();
    let width = spec.attrs.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    for (k, v) in &spec.attrs {
        if !is_identifier(k) {
            return Err(RenderError::AttributeName(k.clone()));
        }
        out.push_str(&format!("{indent}{k:<width$} = {}\n", v.render(indent)?));
    }
    for (name, block) in &spec.blocks {
        if !is_identifier(name) {
            return Err(RenderError::BlockType(name.clone()));
        }
        if !out.is_empty() {
            out.push('\n');
        }
        let inner = render_block_body(block, &format!("{indent}  "))?;
        if inner.is_empty() {
            out.push_str(&format!("{indent}{name} {{}}\n"));
        } else {
            out.push_str(&format!("{indent}{name} {{\n{inner}{indent}}}\n"));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strings_cannot_interpolate() {
        assert_eq!(quote("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(quote("${file(\"/etc/passwd\")}"), r#""$${file(\"/etc/passwd\")}""#);
        assert_eq!(quote("%{ if true }x%{ endif }"), r#""%%{ if true }x%%{ endif }""#);
        assert_eq!(quote("cost $5 at 50%"), r#""cost $5 at 50%""#);
        assert_eq!(quote("line\nbreak"), r#""line\nbreak""#);
        let parsed: hcl::Body = hcl::from_str(&format!("x = {}", quote("${var.secret}"))).unwrap();
        let value: serde_json::Value = hcl::from_body(parsed).unwrap();
        assert_eq!(value["x"], json!("${var.secret}"));
    }

    #[test]
    fn references_are_plain_traversals_and_nothing_else() {
        for ok in
            ["aws_vpc.main.id", "aws_s3_bucket.this[\"logs\"].id", "module.app[0].queue_url", "a.b[\"x-1.y/z\"].c"]
        {
            assert!(is_reference(ok), "{ok}");
        }
        for bad in [
            "",
            "aws_s3_bucket.this[\"${file(\"/etc/passwd\")}\"].id",
            "aws_s3_bucket.this[\"a\" ]",
            "a.b[\"\"].c",
            "a..b",
            "a.b[x]",
            "1abc.d",
            "a.b\"",
        ] {
            assert!(!is_reference(bad), "{bad}");
        }
    }

    #[test]
    fn values_render_as_hcl() {
        assert_eq!(render_value(&json!(["a", 1, true, null]), ""), r#"["a", 1, true, null]"#);
        assert_eq!(
            render_value(&json!({"Name": "web", "cost center": "42"}), "  "),
            "{\n    Name          = \"web\"\n    \"cost center\" = \"42\"\n  }"
        );
        assert_eq!(AttrValue::Reference("aws_vpc.main.id".into()).render("").unwrap(), "aws_vpc.main.id");
        assert!(AttrValue::Reference("aws_vpc.main.id} evil {".into()).render("").is_err());
        assert!(AttrValue::Reference("aws_subnet.a[0].id".into()).render("").is_ok());
    }
}
