//! Configuration values compared as Terraform compares them, and literal expressions read as values:
//! what the patcher, the origin tracer and the edits beside them all need.

use hcl_edit::expr::Expression;
use serde_json::Value;

use crate::edit;

/// The value of a literal expression (no references), as JSON.
pub fn literal_value(text: &str, expr: &Expression) -> Option<Value> {
    let source = edit::expr_text(text, expr);
    let parsed: hcl::Expression = source.parse().ok()?;
    let ctx = hcl::eval::Context::new();
    use hcl::eval::Evaluate;
    let value = parsed.evaluate(&ctx).ok()?;
    serde_json::to_value(value).ok()
}

/// Equality as Terraform compares configuration values: numbers by value, numeric strings equal
/// to the number they spell, maps by their entries.
pub fn values_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Number(n), Value::String(s)) | (Value::String(s), Value::Number(n)) => {
            s.trim().parse::<f64>().ok() == n.as_f64()
        }
        (Value::Bool(x), Value::String(s)) | (Value::String(s), Value::Bool(x)) => s == &x.to_string(),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(a, b)| values_equal(a, b)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| values_equal(v, w)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_compare_as_terraform_does() {
        assert!(values_equal(&json!(10), &json!(10.0)));
        assert!(values_equal(&json!("60"), &json!(60)));
        assert!(!values_equal(&json!("t3.large"), &json!("t3.Large")));
        assert!(values_equal(&json!({"a": 1, "b": "x"}), &json!({"b": "x", "a": 1.0})));
        assert!(!values_equal(&json!({"a": 1}), &json!({"a": 1, "b": 2})));
        assert!(values_equal(&json!(true), &json!("true")));
    }
}
