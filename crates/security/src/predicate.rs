//! Predicates on attribute values, in three-valued logic: a value the code does not let us compute
//! (a reference left symbolic, `${...}`) is neither passing nor failing.

use regex::Regex;
use serde::Deserialize;
use serde_json::Value;

use crate::value::{Verdict, is_missing, is_symbolic};
use crate::{cidr, document};

/// A predicate with the path it reads, relative to the value it is given.
#[derive(Debug, Clone)]
pub struct Predicate {
    pub path: String,
    pub test: Test,
}

/// The test itself (data/FORMAT.md, "Predicates").
#[derive(Debug, Clone)]
pub enum Test {
    Equals(Value),
    NotEquals(Value),
    In(Vec<Value>),
    NotIn(Vec<Value>),
    Min(f64),
    Max(f64),
    Present,
    Absent,
    Matches(Regex),
    NotMatches(Regex),
    Contains(Value),
    NotContains(Value),
    NoPublicCidr,
    PolicyNotPublic,
    PolicyNoAdmin,
    PolicyRequiresTls,
    All(Vec<Predicate>),
    Any(Vec<Predicate>),
    Not(Box<Predicate>),
    Some(Box<Predicate>),
}

/// A predicate as written: one test key, and optionally a path.
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPredicate {
    #[serde(default)]
    path: String,
    equals: Option<Value>,
    not_equals: Option<Value>,
    #[serde(rename = "in")]
    in_: Option<Vec<Value>>,
    not_in: Option<Vec<Value>>,
    min: Option<f64>,
    max: Option<f64>,
    present: Option<bool>,
    absent: Option<bool>,
    matches: Option<String>,
    not_matches: Option<String>,
    contains: Option<Value>,
    not_contains: Option<Value>,
    no_public_cidr: Option<bool>,
    policy_not_public: Option<bool>,
    policy_no_admin: Option<bool>,
    policy_requires_tls: Option<bool>,
    all: Option<Vec<RawPredicate>>,
    any: Option<Vec<RawPredicate>>,
    not: Option<Box<RawPredicate>>,
    some: Option<Box<RawPredicate>>,
}

/// Why a predicate of the control table is not one.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum PredicateError {
    #[error("bad regex {pattern:?}: {source}")]
    Regex { pattern: String, source: regex::Error },
    #[error("`{0} = false` says nothing: leave it out")]
    FalseFlag(&'static str),
    #[error("a predicate needs one test (equals, in, min, present, policy_not_public, all, ...)")]
    NoTest,
    #[error("a predicate has one test, this one has {0}: write them under `all = [...]`")]
    Several(usize),
}

impl RawPredicate {
    pub(crate) fn build(self) -> Result<Predicate, PredicateError> {
        let regex = |r: &str| Regex::new(r).map_err(|source| PredicateError::Regex { pattern: r.to_string(), source });
        let flag = |name: &'static str, v: bool, t: Test| if v { Ok(t) } else { Err(PredicateError::FalseFlag(name)) };
        let mut tests: Vec<Result<Test, PredicateError>> = Vec::new();
        if let Some(v) = self.equals {
            tests.push(Ok(Test::Equals(v)));
        }
        if let Some(v) = self.not_equals {
            tests.push(Ok(Test::NotEquals(v)));
        }
        if let Some(v) = self.in_ {
            tests.push(Ok(Test::In(v)));
        }
        if let Some(v) = self.not_in {
            tests.push(Ok(Test::NotIn(v)));
        }
        if let Some(v) = self.min {
            tests.push(Ok(Test::Min(v)));
        }
        if let Some(v) = self.max {
            tests.push(Ok(Test::Max(v)));
        }
        if let Some(v) = self.present {
            tests.push(flag("present", v, Test::Present));
        }
        if let Some(v) = self.absent {
            tests.push(flag("absent", v, Test::Absent));
        }
        if let Some(r) = self.matches {
            tests.push(regex(&r).map(Test::Matches));
        }
        if let Some(r) = self.not_matches {
            tests.push(regex(&r).map(Test::NotMatches));
        }
        if let Some(v) = self.contains {
            tests.push(Ok(Test::Contains(v)));
        }
        if let Some(v) = self.not_contains {
            tests.push(Ok(Test::NotContains(v)));
        }
        if let Some(v) = self.no_public_cidr {
            tests.push(flag("no_public_cidr", v, Test::NoPublicCidr));
        }
        if let Some(v) = self.policy_not_public {
            tests.push(flag("policy_not_public", v, Test::PolicyNotPublic));
        }
        if let Some(v) = self.policy_no_admin {
            tests.push(flag("policy_no_admin", v, Test::PolicyNoAdmin));
        }
        if let Some(v) = self.policy_requires_tls {
            tests.push(flag("policy_requires_tls", v, Test::PolicyRequiresTls));
        }
        if let Some(ps) = self.all {
            tests.push(ps.into_iter().map(RawPredicate::build).collect::<Result<_, _>>().map(Test::All));
        }
        if let Some(ps) = self.any {
            tests.push(ps.into_iter().map(RawPredicate::build).collect::<Result<_, _>>().map(Test::Any));
        }
        if let Some(p) = self.not {
            tests.push(p.build().map(|p| Test::Not(Box::new(p))));
        }
        if let Some(p) = self.some {
            tests.push(p.build().map(|p| Test::Some(Box::new(p))));
        }
        match tests.len() {
            0 => Err(PredicateError::NoTest),
            1 => Ok(Predicate { path: self.path, test: tests.pop().expect("one test")? }),
            n => Err(PredicateError::Several(n)),
        }
    }
}

/// Every value `path` reaches from `value`: names step into objects, and lists on the way (nested
/// blocks, lists of objects) are entered item by item. A list of objects reached at the end is
/// entered too; a list of plain values is one value.
pub fn resolve(value: &Value, path: &str) -> Vec<Value> {
    let mut current = vec![value.clone()];
    for step in path.split('.').filter(|s| !s.is_empty()) {
        let mut next = Vec::new();
        for v in current {
            step_into(&v, step, &mut next);
        }
        current = next;
    }
    let mut out = Vec::new();
    for v in current {
        match v {
            Value::Array(items) if !path.is_empty() && items.iter().all(Value::is_object) && !items.is_empty() => {
                out.extend(items)
            }
            other => out.push(other),
        }
    }
    out
}

/// One step of a path. A name steps into an object (into each item of a list on the way); `[]`
/// enters a list item by item, so that a predicate under it judges each item alone. A JSON
/// document held as text (`container_definitions`, a policy) is read as the document it spells
/// when a step goes into it.
fn step_into(value: &Value, step: &str, out: &mut Vec<Value>) {
    match value {
        Value::Array(items) if step == "[]" => out.extend(items.iter().cloned()),
        Value::Object(map) => {
            if let Some(v) = map.get(step) {
                out.push(v.clone());
            }
        }
        Value::Array(items) => items.iter().for_each(|item| step_into(item, step, out)),
        Value::String(text) => {
            if let Some(document) = json_document(text) {
                step_into(&document, step, out);
            }
        }
        _ => {}
    }
}

/// The object or list a text spells as JSON, if it does.
fn json_document(text: &str) -> Option<Value> {
    let trimmed = text.trim_start();
    if !(trimmed.starts_with('{') || trimmed.starts_with('[')) {
        return None;
    }
    serde_json::from_str::<Value>(text).ok().filter(|v| v.is_object() || v.is_array())
}

impl Predicate {
    /// Judge the values at this predicate's path from each of `values`: every one must pass,
    /// except under `some`.
    pub fn eval(&self, values: &[Value]) -> Verdict {
        let reached: Vec<Value> = if self.path.is_empty() {
            values.iter().flat_map(|v| resolve(v, "")).collect()
        } else {
            values.iter().flat_map(|v| resolve(v, &self.path)).collect()
        };
        match &self.test {
            Test::All(ps) => ps.iter().fold(Verdict::Pass, |acc, p| acc.and(p.eval(&reached))),
            Test::Any(ps) => ps.iter().fold(Verdict::Fail, |acc, p| acc.or(p.eval(&reached))),
            Test::Not(p) => p.eval(&reached).not(),
            Test::Some(p) => reached.iter().fold(Verdict::Fail, |acc, v| acc.or(p.eval(std::slice::from_ref(v)))),
            leaf => {
                if reached.is_empty() {
                    return leaf_on(leaf, &Value::Null);
                }
                reached.iter().fold(Verdict::Pass, |acc, v| acc.and(leaf_on(leaf, v)))
            }
        }
    }
}

fn leaf_on(test: &Test, value: &Value) -> Verdict {
    match test {
        Test::Present => return Verdict::from_bool(!is_missing(value)),
        Test::Absent => return Verdict::from_bool(is_missing(value)),
        _ => {}
    }
    if is_symbolic(value) {
        return Verdict::Unknown;
    }
    match test {
        Test::Equals(want) => Verdict::from_bool(same(value, want)),
        Test::NotEquals(want) => Verdict::from_bool(!same(value, want)),
        Test::In(wants) => Verdict::from_bool(wants.iter().any(|w| same(value, w))),
        Test::NotIn(wants) => Verdict::from_bool(!wants.iter().any(|w| same(value, w))),
        Test::Min(n) => number(value).map_or(Verdict::Fail, |v| Verdict::from_bool(v >= *n)),
        Test::Max(n) => number(value).map_or(Verdict::Fail, |v| Verdict::from_bool(v <= *n)),
        Test::Matches(r) => Verdict::from_bool(text(value).is_some_and(|t| r.is_match(&t))),
        Test::NotMatches(r) => Verdict::from_bool(!text(value).is_some_and(|t| r.is_match(&t))),
        Test::Contains(want) => Verdict::from_bool(items(value).iter().any(|v| same(v, want))),
        Test::NotContains(want) => Verdict::from_bool(!items(value).iter().any(|v| same(v, want))),
        Test::NoPublicCidr => {
            let items = items(value);
            let texts: Vec<&str> = items.iter().filter_map(|v| v.as_str()).collect();
            Verdict::from_bool(!cidr::internet_wide(&texts))
        }
        Test::PolicyNotPublic => document::on_policy(value, |p| !document::is_public(p)),
        Test::PolicyNoAdmin => document::on_policy(value, |p| !document::grants_admin(p)),
        Test::PolicyRequiresTls => document::on_policy(value, document::requires_tls),
        Test::Present | Test::Absent | Test::All(_) | Test::Any(_) | Test::Not(_) | Test::Some(_) => {
            unreachable!("handled above")
        }
    }
}

/// Equality as the table means it: strings without regard to case, `"true"` as `true`, numbers
/// (and numeric text) by value.
pub fn same(value: &Value, want: &Value) -> bool {
    match (value, want) {
        (Value::String(a), Value::String(b)) => a.eq_ignore_ascii_case(b),
        (Value::Bool(a), Value::Bool(b)) => a == b,
        (Value::String(s), Value::Bool(b)) | (Value::Bool(b), Value::String(s)) => {
            s.eq_ignore_ascii_case(if *b { "true" } else { "false" })
        }
        (Value::Null, Value::Null) => true,
        _ => match (number(value), number(want)) {
            (Some(a), Some(b)) => a == b,
            _ => value == want,
        },
    }
}

fn number(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

fn items(value: &Value) -> Vec<Value> {
    match value {
        Value::Array(items) => items.clone(),
        Value::Null => vec![],
        one => vec![one.clone()],
    }
}

impl Predicate {
    /// What the predicate holds, in a few words (`= true`, `>= 365`, `some default_action: ...`).
    pub fn describe(&self) -> String {
        let v = |v: &Value| match v {
            Value::String(s) => format!("\"{s}\""),
            other => other.to_string(),
        };
        let list = |vs: &[Value]| vs.iter().map(v).collect::<Vec<_>>().join(", ");
        let joined = |ps: &[Predicate], word: &str| ps.iter().map(Predicate::describe).collect::<Vec<_>>().join(word);
        let test = match &self.test {
            Test::Equals(x) => format!("= {}", v(x)),
            Test::NotEquals(x) => format!("≠ {}", v(x)),
            Test::In(xs) => format!("one of {}", list(xs)),
            Test::NotIn(xs) => format!("none of {}", list(xs)),
            Test::Min(n) => format!(">= {n}"),
            Test::Max(n) => format!("<= {n}"),
            Test::Present => "set".into(),
            Test::Absent => "not set".into(),
            Test::Matches(r) => format!("matches `{r}`"),
            Test::NotMatches(r) => format!("does not match `{r}`"),
            Test::Contains(x) => format!("contains {}", v(x)),
            Test::NotContains(x) => format!("does not contain {}", v(x)),
            Test::NoPublicCidr => "no 0.0.0.0/0 or ::/0, whole or split into pieces".into(),
            Test::PolicyNotPublic => "a policy that lets no one in as `*` without a narrowing condition".into(),
            Test::PolicyNoAdmin => "a policy that grants no `*` on `*`".into(),
            Test::PolicyRequiresTls => "a policy that denies requests without TLS".into(),
            Test::All(ps) => format!("({})", joined(ps, " and ")),
            Test::Any(ps) => format!("({})", joined(ps, " or ")),
            Test::Not(p) => format!("not ({})", p.describe()),
            Test::Some(p) => format!("at least one with {}", p.describe()),
        };
        if self.path.is_empty() { test } else { format!("`{}` {test}", self.path) }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pred(toml_text: &str) -> Predicate {
        let raw: RawPredicate = toml::from_str(toml_text).unwrap();
        raw.build().unwrap()
    }

    #[test]
    fn paths_enter_nested_blocks_item_by_item() {
        let v =
            json!({"default_action": [{"type": "forward"}, {"type": "redirect", "redirect": [{"protocol": "HTTPS"}]}]});
        assert_eq!(resolve(&v, "default_action.type"), vec![json!("forward"), json!("redirect")]);
        assert_eq!(resolve(&v, "default_action.redirect.protocol"), vec![json!("HTTPS")]);
        assert_eq!(resolve(&v, "default_action").len(), 2);
        assert!(resolve(&v, "nothing.here").is_empty());
        assert_eq!(resolve(&json!({"cidr_blocks": ["0.0.0.0/0"]}), "cidr_blocks"), vec![json!(["0.0.0.0/0"])]);
    }

    #[test]
    fn a_path_steps_into_json_text_and_brackets_judge_each_item_alone() {
        let v = json!({"container_definitions": r#"[{"name": "a", "user": "65534"}, {"name": "b"}]"#});
        assert_eq!(resolve(&v, "container_definitions.user"), vec![json!("65534")]);
        assert_eq!(resolve(&v, "container_definitions.[]").len(), 2);
        // The text itself stays one value where the path ends on it.
        assert_eq!(resolve(&v, "container_definitions").len(), 1);
        assert!(resolve(&json!({"x": "not json"}), "x.y").is_empty());
        // Each container alone: one without a user fails "every container names a user".
        let every_named = pred("path = 'container_definitions.[]'\nnot = { some = { path = 'user', absent = true } }");
        assert_eq!(every_named.eval(std::slice::from_ref(&v)), Verdict::Fail);
        let both = json!({"container_definitions": r#"[{"user": "1"}, {"user": "2"}]"#});
        assert_eq!(every_named.eval(&[both]), Verdict::Pass);
    }

    #[test]
    fn every_value_must_pass_unless_some() {
        let v = json!({"default_action": [{"type": "forward"}, {"type": "redirect"}]});
        assert_eq!(
            pred("path = 'default_action.type'\nequals = 'redirect'").eval(std::slice::from_ref(&v)),
            Verdict::Fail
        );
        let some = pred("path = 'default_action'\nsome = { path = 'type', equals = 'redirect' }");
        assert_eq!(some.eval(std::slice::from_ref(&v)), Verdict::Pass);
        let none = json!({"default_action": [{"type": "forward"}]});
        assert_eq!(some.eval(&[none]), Verdict::Fail);
    }

    #[test]
    fn values_compare_as_the_table_means_them() {
        assert!(same(&json!("ENABLED"), &json!("Enabled")));
        assert!(same(&json!("true"), &json!(true)));
        assert!(same(&json!("7"), &json!(7.0)));
        assert!(!same(&json!("7"), &json!(8)));
        assert_eq!(pred("min = 365").eval(&[json!(400)]), Verdict::Pass);
        assert_eq!(pred("min = 365").eval(&[json!(7)]), Verdict::Fail);
        assert_eq!(pred("min = 365").eval(&[json!("${var.retention}")]), Verdict::Unknown);
        assert_eq!(pred("no_public_cidr = true").eval(&[json!(["10.0.0.0/8", "::/0"])]), Verdict::Fail);
        assert_eq!(pred("no_public_cidr = true").eval(&[json!(["10.0.0.0/8"])]), Verdict::Pass);
        assert_eq!(pred("no_public_cidr = true").eval(&[json!(["0.0.0.0/1", "128.0.0.0/1"])]), Verdict::Fail);
    }

    #[test]
    fn three_valued_logic_never_passes_what_it_cannot_compute() {
        let p = pred("all = [{ path = 'a', equals = true }, { path = 'b', equals = true }]");
        assert_eq!(p.eval(&[json!({"a": true, "b": "${x}"})]), Verdict::Unknown);
        assert_eq!(p.eval(&[json!({"a": false, "b": "${x}"})]), Verdict::Fail);
        let any = pred("any = [{ path = 'a', equals = true }, { path = 'b', equals = true }]");
        assert_eq!(any.eval(&[json!({"a": true, "b": "${x}"})]), Verdict::Pass);
        assert_eq!(pred("not = { equals = 'x' }").eval(&[json!("${y}")]), Verdict::Unknown);
    }

    #[test]
    fn a_predicate_has_exactly_one_test() {
        let two: RawPredicate = toml::from_str("equals = 1\nmin = 2").unwrap();
        assert!(two.build().unwrap_err().to_string().contains("has 2"));
        let none: RawPredicate = toml::from_str("path = 'a'").unwrap();
        assert!(none.build().unwrap_err().to_string().contains("needs one test"));
        let off: RawPredicate = toml::from_str("present = false").unwrap();
        assert!(off.build().is_err());
    }
}
