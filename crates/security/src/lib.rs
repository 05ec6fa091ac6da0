//! The security baseline: the controls of AWS Security Hub's reference (Foundational Security Best
//! Practices and the CIS AWS Foundations Benchmark) that a Terraform attribute expresses, as data
//! (`data/controls/*.toml`, format in `data/FORMAT.md`), and the judge that says whether a change
//! to a resource's values weakens one of them.
//!
//! The judge reads resulting values, not call names: the same entry holds whatever call, console
//! form, whole document or creation set the value. A resource's values are given as the state and
//! the effective configuration shape them (arguments by name, nested blocks as lists of objects).
//! A change weakens a control when the value before passed and the value after fails; a value the
//! code does not let us compute after the change is not taken as passing.
//!
//! Pure: values in, findings out. Callers: the policy (on a plan's resulting values, with the
//! state for what the calls do not carry), the driver's gate on every patch, and `driftback eval`.

mod cidr;
mod doc;
mod document;
mod links;
mod predicate;
mod table;
mod tls;
mod trail;
mod value;

use std::fmt;
use std::sync::OnceLock;

use serde_json::Value;

pub use doc::markdown;
pub use document::{Statement, condition_narrows, statements, widenings};
pub use links::{linked_types, with_links};
pub use predicate::{Predicate, Test, resolve, same};
pub use table::{Baseline, ChangeTest, Control, Example, Missing, Severity, TableError};
pub use value::Verdict;

use value::is_missing;

/// What a change does to one control.
#[derive(Debug, Clone, PartialEq)]
pub enum FindingKind {
    /// The value passed before and fails after.
    Weakened,
    /// A policy document grants more than before (each way, one sentence).
    Widened(Vec<String>),
    /// The value passed before and cannot be computed after (a reference, an unknown function):
    /// not verified, so held.
    Unverifiable,
    /// The resource a control requires is deleted.
    Deleted,
    /// A resource created out of band sets a value that fails the control.
    CreatedWeak,
}

/// One control a change weakens.
#[derive(Debug, Clone)]
pub struct Finding<'a> {
    pub control: &'a Control,
    pub kind: FindingKind,
    /// The value at the control's path before and after (`None`: not set, or no resource).
    pub before: Option<Value>,
    pub after: Option<Value>,
    /// The resource's top-level attributes the control reads: the fields to hold.
    pub attributes: Vec<String>,
}

impl Finding<'_> {
    /// One line for the reviewer: the control, what changed, and what it protects.
    pub fn describe(&self) -> String {
        let c = self.control;
        let shown = |v: &Option<Value>| v.as_ref().map(short).unwrap_or_else(|| "unset".into());
        let what = match &self.kind {
            FindingKind::Weakened => format!("{} {} -> {}", c.path, shown(&self.before), shown(&self.after)),
            FindingKind::Widened(ways) => format!("{} {}", c.path, ways.join("; ")),
            FindingKind::Unverifiable => format!(
                "{} {} -> {}, which cannot be evaluated from the code (not verified)",
                c.path,
                shown(&self.before),
                shown(&self.after)
            ),
            FindingKind::Deleted => "the resource it requires is deleted".into(),
            FindingKind::CreatedWeak => {
                format!("{} = {} on a resource created outside Terraform", c.path, shown(&self.after))
            }
        };
        format!("{} ({}): {}: {what}; it protects {}", c.id, c.severity.as_str(), c.title, c.protects)
    }
}

impl fmt::Display for Finding<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe())
    }
}

fn short(v: &Value) -> String {
    let text = match v {
        Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    };
    if text.chars().count() > 120 { format!("{}...", text.chars().take(117).collect::<String>()) } else { text }
}

impl Baseline {
    /// The built-in table, read once.
    pub fn builtin() -> &'static Baseline {
        static BUILTIN: OnceLock<Baseline> = OnceLock::new();
        BUILTIN.get_or_init(|| Baseline::read_builtin().expect("data/controls is checked by the crate's tests"))
    }

    /// Whether any control judges this resource type.
    pub fn covers(&self, rtype: &str) -> bool {
        self.controls.iter().any(|c| c.resources.iter().any(|r| r == rtype))
    }

    /// The distinct control ids, sorted.
    pub fn ids(&self) -> Vec<&str> {
        let mut ids: Vec<&str> = self.controls.iter().map(|c| c.id.as_str()).collect();
        ids.sort();
        ids.dedup();
        ids
    }

    /// The controls a change to one resource of type `rtype` weakens. `before`/`after`: the
    /// resource's values; `None` before: created; `None` after: deleted.
    pub fn judge(&self, rtype: &str, before: Option<&Value>, after: Option<&Value>) -> Vec<Finding<'_>> {
        self.controls
            .iter()
            .filter(|c| c.resources.iter().any(|r| r == rtype))
            .filter_map(|c| judge_one(c, before, after))
            .collect()
    }
}

fn judge_one<'a>(c: &'a Control, before: Option<&Value>, after: Option<&Value>) -> Option<Finding<'a>> {
    let at = |v: &Value| -> Option<Value> {
        let found: Vec<Value> = resolve(v, &c.path).into_iter().filter(|x| !is_missing(x)).collect();
        match found.len() {
            0 => None,
            1 => found.into_iter().next(),
            _ => Some(Value::Array(found)),
        }
    };
    let finding = |kind, b: Option<Value>, a: Option<Value>| Finding {
        control: c,
        kind,
        before: b,
        after: a,
        attributes: attributes(c),
    };
    match (before, after) {
        (Some(b), Some(a)) => {
            let relevant = |v: &Value| {
                let mut out = vec![at(v)];
                out.extend(c.when.iter().map(|w| Some(Value::Array(resolve(v, &w.path)))));
                out
            };
            if relevant(b) == relevant(a) {
                return None;
            }
            let (vb, va) = (at(b), at(a));
            if let Some(ChangeTest::CidrsNotWidened) = c.change {
                if !applies(c, a) {
                    return None;
                }
                let ways = cidr::widenings(&resolve(b, &c.path), &resolve(a, &c.path));
                return (!ways.is_empty()).then(|| finding(FindingKind::Widened(ways), vb, va));
            }
            if let Some(ChangeTest::PolicyNotWidened) = c.change {
                if !applies(c, a) {
                    return None;
                }
                let before_doc = match &vb {
                    None => Vec::new(),
                    Some(doc) => statements(doc)?,
                };
                let after_doc = match &va {
                    None => Vec::new(),
                    Some(doc) if value::is_symbolic(doc) => {
                        return Some(finding(FindingKind::Unverifiable, vb, va));
                    }
                    Some(doc) => match statements(doc) {
                        Some(list) => list,
                        None => return Some(finding(FindingKind::Unverifiable, vb, va)),
                    },
                };
                let ways = widenings(&before_doc, &after_doc);
                return (!ways.is_empty()).then(|| finding(FindingKind::Widened(ways), vb, va));
            }
            match (status(c, b), status(c, a)) {
                (Verdict::Pass, Verdict::Fail) => Some(finding(FindingKind::Weakened, vb, va)),
                (Verdict::Pass, Verdict::Unknown) => Some(finding(FindingKind::Unverifiable, vb, va)),
                _ if c.change == Some(ChangeTest::TlsMinimumNotLowered) && applies(c, a) => {
                    let (Some(Value::String(was)), Some(Value::String(now))) = (&vb, &va) else { return None };
                    let why = tls::lowered(was, now)?;
                    Some(finding(FindingKind::Widened(vec![why]), vb, va))
                }
                _ if c.change == Some(ChangeTest::ManagementEventsNotReduced) && applies(c, a) => {
                    let why = trail::reduced(&resolve(b, &c.path), &resolve(a, &c.path))?;
                    Some(finding(FindingKind::Widened(vec![why]), vb, va))
                }
                _ => None,
            }
        }
        (None, Some(a)) => {
            // Only a value the creation sets explicitly: what a record does not carry may be set
            // elsewhere (a split resource) or by a default nobody chose.
            let value = at(a)?;
            if c.holds.is_none() || !applies(c, a) {
                return None;
            }
            (status(c, a) == Verdict::Fail).then(|| finding(FindingKind::CreatedWeak, None, Some(value)))
        }
        (Some(b), None) => {
            if !c.on_delete || when_verdict(c, b) == Verdict::Fail {
                return None;
            }
            (status(c, b) == Verdict::Pass).then(|| finding(FindingKind::Deleted, at(b), None))
        }
        (None, None) => None,
    }
}

fn when_verdict(c: &Control, attrs: &Value) -> Verdict {
    c.when.iter().fold(Verdict::Pass, |acc, w| match (acc, w.eval(std::slice::from_ref(attrs))) {
        (Verdict::Fail, _) | (_, Verdict::Fail) => Verdict::Fail,
        (Verdict::Unknown, _) | (_, Verdict::Unknown) => Verdict::Unknown,
        _ => Verdict::Pass,
    })
}

/// Whether the entry applies to these values: `when` does not fail (what cannot be computed is
/// taken as applying).
fn applies(c: &Control, attrs: &Value) -> bool {
    when_verdict(c, attrs) != Verdict::Fail
}

/// Whether the resource's values pass the control: where it does not apply, they pass.
fn status(c: &Control, attrs: &Value) -> Verdict {
    if !applies(c, attrs) {
        return Verdict::Pass;
    }
    let Some(holds) = &c.holds else { return Verdict::Pass };
    let values: Vec<Value> = if c.path.is_empty() {
        vec![attrs.clone()]
    } else {
        resolve(attrs, &c.path).into_iter().filter(|v| !is_missing(v)).collect()
    };
    if values.is_empty() {
        return match c.missing {
            Missing::Fails => Verdict::Fail,
            Missing::Passes => Verdict::Pass,
            Missing::Unknown => Verdict::Unknown,
        };
    }
    holds.eval(&values)
}

/// The top-level attributes a control reads: its path's, its `when`s', and with no path those its
/// predicate reads.
fn attributes(c: &Control) -> Vec<String> {
    let mut out = Vec::new();
    let mut add = |path: &str| {
        if let Some(first) = path.split('.').next().filter(|f| !f.is_empty()) {
            if !out.iter().any(|o| o == first) {
                out.push(first.to_string());
            }
        }
    };
    add(&c.path);
    if c.path.is_empty() {
        if let Some(holds) = &c.holds {
            predicate_paths(holds, &mut add);
        }
    }
    for w in &c.when {
        predicate_paths(w, &mut add);
    }
    for with in &c.held_with {
        add(with);
    }
    out
}

fn predicate_paths(p: &Predicate, add: &mut dyn FnMut(&str)) {
    if !p.path.is_empty() {
        add(&p.path);
        return;
    }
    match &p.test {
        Test::All(ps) | Test::Any(ps) => ps.iter().for_each(|q| predicate_paths(q, add)),
        Test::Not(q) | Test::Some(q) => predicate_paths(q, add),
        _ => {}
    }
}

/// Whether a resource's values name another resource (a string attribute equal to its `id` or
/// `arn`): a public access block names its bucket. A resource deleted together with the one it
/// names goes with it; its deletion weakens nothing that remains.
pub fn names_resource(values: &Value, other: &Value) -> bool {
    let keys: Vec<&str> =
        ["id", "arn"].iter().filter_map(|k| other.get(*k).and_then(Value::as_str)).filter(|s| !s.is_empty()).collect();
    let Some(map) = values.as_object() else { return false };
    map.iter().any(|(k, v)| k != "id" && k != "arn" && v.as_str().is_some_and(|s| keys.contains(&s)))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const TABLE: &str = r#"
[[control]]
id = "RDS.8"
standards = ["fsbp"]
severity = "low"
title = "RDS DB instances should have deletion protection enabled"
protects = "the database from deletion"
resources = ["aws_db_instance"]
path = "deletion_protection"
holds = { equals = true }
missing = "fails"
  [[control.example]]
  weakens = true
  before = "deletion_protection = true"
  after = "deletion_protection = false"

[[control]]
id = "ELB.1"
standards = ["fsbp"]
severity = "medium"
title = "Application Load Balancer should be configured to redirect all HTTP requests to HTTPS"
protects = "traffic from being sent in clear text"
resources = ["aws_lb_listener"]
path = "default_action"
when = [{ path = "protocol", equals = "HTTP" }]
holds = { some = { all = [{ path = "type", equals = "redirect" }, { path = "redirect.protocol", equals = "HTTPS" }] } }
  [[control.example]]
  weakens = false
  after = "protocol = \"HTTP\""

[[control]]
id = "CloudWatch.1"
standards = ["cis-1.2"]
severity = "low"
title = "A log metric filter and alarm should exist for usage of the root user"
protects = "the alert when the root user is used"
resources = ["aws_cloudwatch_log_metric_filter"]
when = [{ path = "pattern", matches = "userIdentity\\.type\\s*=\\s*\"?Root" }]
on_delete = true
  [[control.example]]
  weakens = true
  before = "pattern = \"x\""

[[control]]
id = "S3.5"
standards = ["fsbp"]
severity = "medium"
title = "S3 general purpose buckets should require requests to use SSL"
protects = "data in transit"
resources = ["aws_s3_bucket_policy"]
path = "policy"
change = "policy_not_widened"
  [[control.example]]
  weakens = true
  before = "policy = \"{}\""
"#;

    fn table() -> Baseline {
        Baseline::from_files([("test.toml", TABLE)]).unwrap()
    }

    fn ids(findings: &[Finding<'_>]) -> Vec<String> {
        findings.iter().map(|f| format!("{}:{:?}", f.control.id, f.kind)).collect()
    }

    #[test]
    fn a_value_that_passed_and_now_fails_weakens_and_the_reverse_does_not() {
        let t = table();
        let on = json!({"deletion_protection": true, "instance_class": "db.t3.micro"});
        let off = json!({"deletion_protection": false, "instance_class": "db.t3.micro"});
        assert_eq!(ids(&t.judge("aws_db_instance", Some(&on), Some(&off))), ["RDS.8:Weakened"]);
        assert!(t.judge("aws_db_instance", Some(&off), Some(&on)).is_empty());
        // Unset is the provider's default, false: removing the argument weakens too.
        let unset = json!({"instance_class": "db.t3.micro"});
        assert_eq!(ids(&t.judge("aws_db_instance", Some(&on), Some(&unset))), ["RDS.8:Weakened"]);
        // A change elsewhere on the resource judges nothing.
        let bigger = json!({"deletion_protection": true, "instance_class": "db.t3.large"});
        assert!(t.judge("aws_db_instance", Some(&on), Some(&bigger)).is_empty());
        // Another resource type is not judged by this entry.
        assert!(t.judge("aws_rds_cluster", Some(&on), Some(&off)).is_empty());
        let f = &t.judge("aws_db_instance", Some(&on), Some(&off))[0];
        assert_eq!(f.attributes, ["deletion_protection"]);
        assert!(f.describe().starts_with("RDS.8 (low): RDS DB instances should have deletion protection enabled: deletion_protection true -> false"), "{}", f.describe());
    }

    #[test]
    fn a_value_that_cannot_be_computed_is_not_verified() {
        let t = table();
        let on = json!({"deletion_protection": true});
        let symbolic = json!({"deletion_protection": "${var.protect}"});
        assert_eq!(ids(&t.judge("aws_db_instance", Some(&on), Some(&symbolic))), ["RDS.8:Unverifiable"]);
    }

    #[test]
    fn applicability_is_judged_on_the_values_too() {
        let t = table();
        let redirect = json!([{"type": "redirect", "redirect": [{"protocol": "HTTPS", "port": "443"}]}]);
        let forward = json!([{"type": "forward", "target_group_arn": "arn:tg"}]);
        let http_redirect = json!({"protocol": "HTTP", "port": 80, "default_action": redirect});
        let http_forward = json!({"protocol": "HTTP", "port": 80, "default_action": forward});
        let https_forward = json!({"protocol": "HTTPS", "port": 443, "default_action": forward});
        assert_eq!(ids(&t.judge("aws_lb_listener", Some(&http_redirect), Some(&http_forward))), ["ELB.1:Weakened"]);
        // An HTTPS listener forwards: the control does not apply.
        assert!(t.judge("aws_lb_listener", Some(&https_forward), Some(&https_forward)).is_empty());
        // Turning an HTTPS listener into a plain HTTP one that forwards weakens.
        assert_eq!(ids(&t.judge("aws_lb_listener", Some(&https_forward), Some(&http_forward))), ["ELB.1:Weakened"]);
        // Created with a forward on HTTP: a weak adoption; with a redirect: fine.
        assert_eq!(ids(&t.judge("aws_lb_listener", None, Some(&http_forward))), ["ELB.1:CreatedWeak"]);
        assert!(t.judge("aws_lb_listener", None, Some(&http_redirect)).is_empty());
    }

    #[test]
    fn deleting_what_a_control_requires_weakens() {
        let t = table();
        let root = json!({"name": "root-usage", "pattern": "{ $.userIdentity.type = \"Root\" && $.eventType != \"AwsServiceEvent\" }"});
        let other = json!({"name": "errors", "pattern": "ERROR"});
        assert_eq!(ids(&t.judge("aws_cloudwatch_log_metric_filter", Some(&root), None)), ["CloudWatch.1:Deleted"]);
        assert!(t.judge("aws_cloudwatch_log_metric_filter", Some(&other), None).is_empty());
        assert!(t.judge("aws_db_instance", Some(&json!({"deletion_protection": true})), None).is_empty());
    }

    #[test]
    fn policies_are_compared_as_statements() {
        let t = table();
        let deny = json!({"Effect": "Deny", "Principal": "*", "Action": "s3:*", "Resource": "arn:aws:s3:::b/*",
            "Condition": {"Bool": {"aws:SecureTransport": "false"}}});
        let read = json!({"Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::1:role/r"}, "Action": "s3:GetObject",
            "Resource": "arn:aws:s3:::b/*"});
        let doc = |sts: Value| json!({"policy": json!({"Version": "2012-10-17", "Statement": sts}).to_string()});
        let before = doc(json!([read, deny]));
        let found = t
            .judge("aws_s3_bucket_policy", Some(&before), Some(&doc(json!([read]))))
            .into_iter()
            .map(|f| f.kind)
            .collect::<Vec<_>>();
        assert!(matches!(&found[..], [FindingKind::Widened(w)] if w[0].contains("Deny")), "{found:?}");
        // Pretty-printed and reordered: the same statements, no finding.
        let reordered = json!({"policy": serde_json::to_string_pretty(&json!({"Version": "2012-10-17", "Statement": [deny, read]})).unwrap()});
        assert!(t.judge("aws_s3_bucket_policy", Some(&before), Some(&reordered)).is_empty());
        // Text that is not a document cannot be verified.
        let broken = json!({"policy": "${data.aws_iam_policy_document.p.json}"});
        assert_eq!(ids(&t.judge("aws_s3_bucket_policy", Some(&before), Some(&broken))), ["S3.5:Unverifiable"]);
    }

    #[test]
    fn a_bad_entry_is_refused_with_its_file_and_id() {
        let bad = "[[control]]\nid = \"X.1\"\nseverity = \"low\"\ntitle = \"t\"\nprotects = \"p\"\nresources = [\"aws_sqs_queue\"]\n";
        let e = Baseline::from_files([("x.toml", bad)]).unwrap_err().to_string();
        assert_eq!(e, "x.toml: control X.1: needs `holds`, `change` or `on_delete = true`");
        let unknown = TABLE.replace("missing = \"fails\"", "missing = \"fails\"\nseverty = \"low\"");
        assert!(Baseline::from_files([("y.toml", unknown.as_str())]).unwrap_err().to_string().starts_with("y.toml: "));
    }
}
