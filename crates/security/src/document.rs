//! Policy documents (IAM, bucket, queue, topic, key, Lambda, repository) compared as statements:
//! effect, principal, action, resource and condition, never as text.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::value::{Verdict, is_missing, is_symbolic};

/// Condition keys that can narrow who a `*` principal is. One narrows a statement only when its
/// operator requires a match and its values pin it down (`narrows`).
const NARROWING_KEYS: [&str; 11] = [
    "aws:sourcearn",
    "aws:sourceaccount",
    "aws:sourceowner",
    "aws:sourcevpc",
    "aws:sourcevpce",
    "aws:sourceip",
    "aws:principalorgid",
    "aws:principalaccount",
    "aws:principalarn",
    "aws:sourceorgid",
    // AWS managed keys' policies let `*` use the key through a service for one account.
    "kms:calleraccount",
];

/// Keys whose values are ARNs: the account field is what must be pinned.
const ARN_KEYS: [&str; 2] = ["aws:sourcearn", "aws:principalarn"];

/// Operators that require the key to match one of the values (set prefixes removed).
const MATCHING_OPERATORS: [&str; 6] =
    ["stringequals", "stringequalsignorecase", "stringlike", "arnequals", "arnlike", "ipaddress"];

/// One statement, normalised: lower-cased actions, principals as `KIND:value`, conditions as
/// `operator|key|values` items.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Statement {
    pub allow: bool,
    /// `*` for everyone; `AWS:arn...`, `Service:...`, `Federated:...`; empty: an identity policy's
    /// statement (the principal is whoever holds the policy).
    pub principals: BTreeSet<String>,
    pub not_principal: bool,
    pub actions: BTreeSet<String>,
    pub not_action: bool,
    pub resources: BTreeSet<String>,
    pub not_resource: bool,
    pub conditions: BTreeSet<String>,
}

/// The statements of a policy document given as JSON text or as an object; `None` when it is not
/// one (or not computable).
pub fn statements(doc: &Value) -> Option<Vec<Statement>> {
    let parsed = match doc {
        Value::String(text) => serde_json::from_str::<Value>(text).ok()?,
        Value::Object(_) => doc.clone(),
        _ => return None,
    };
    let list = match parsed.get("Statement")? {
        Value::Array(items) => items.clone(),
        one @ Value::Object(_) => vec![one.clone()],
        _ => return None,
    };
    list.iter().map(statement).collect()
}

fn statement(st: &Value) -> Option<Statement> {
    let allow = match st.get("Effect").and_then(Value::as_str) {
        Some(e) if e.eq_ignore_ascii_case("allow") => true,
        Some(e) if e.eq_ignore_ascii_case("deny") => false,
        _ => return None,
    };
    let (principal, not_principal) = either(st, "Principal", "NotPrincipal");
    let (action, not_action) = either(st, "Action", "NotAction");
    let (resource, not_resource) = either(st, "Resource", "NotResource");
    Some(Statement {
        allow,
        principals: principals(principal),
        not_principal,
        actions: strings(action).into_iter().map(|a| a.to_ascii_lowercase()).collect(),
        not_action,
        resources: strings(resource).into_iter().collect(),
        not_resource,
        conditions: conditions(st.get("Condition")),
    })
}

fn either<'a>(st: &'a Value, key: &str, not_key: &str) -> (Option<&'a Value>, bool) {
    match st.get(key) {
        Some(v) => (Some(v), false),
        None => (st.get(not_key), st.get(not_key).is_some()),
    }
}

fn strings(value: Option<&Value>) -> Vec<String> {
    match value {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(items)) => items.iter().filter_map(|i| i.as_str().map(str::to_string)).collect(),
        _ => vec![],
    }
}

fn principals(value: Option<&Value>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    match value {
        Some(Value::String(s)) if s == "*" => {
            out.insert("*".to_string());
        }
        Some(Value::Object(map)) => {
            for (kind, v) in map {
                for p in strings(Some(v)) {
                    if p == "*" && kind == "AWS" {
                        out.insert("*".to_string());
                    } else {
                        out.insert(format!("{kind}:{}", account_root(&p)));
                    }
                }
            }
        }
        _ => {}
    }
    out
}

/// `123456789012` and `arn:aws:iam::123456789012:root` name the same principal.
fn account_root(p: &str) -> String {
    if p.len() == 12 && p.bytes().all(|b| b.is_ascii_digit()) {
        format!("arn:aws:iam::{p}:root")
    } else {
        p.to_string()
    }
}

fn conditions(value: Option<&Value>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let Some(Value::Object(ops)) = value else { return out };
    for (op, keys) in ops {
        let Value::Object(keys) = keys else { continue };
        for (key, values) in keys {
            let mut vs: Vec<String> = match values {
                Value::Array(items) => items.iter().map(scalar_text).collect(),
                one => vec![scalar_text(one)],
            };
            vs.sort();
            out.insert(format!("{}|{}|{}", op.to_ascii_lowercase(), key.to_ascii_lowercase(), vs.join(",")));
        }
    }
    out
}

fn scalar_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.to_ascii_lowercase(),
        other => other.to_string(),
    }
}

/// The condition keys a statement tests (`aws:securetransport`).
fn condition_keys(st: &Statement) -> BTreeSet<&str> {
    st.conditions.iter().filter_map(|c| c.split('|').nth(1)).collect()
}

/// Judge a policy document with `pass`, or `Unknown` when it cannot be read.
pub(crate) fn on_policy(value: &Value, pass: impl Fn(&[Statement]) -> bool) -> Verdict {
    if is_missing(value) {
        return Verdict::from_bool(pass(&[]));
    }
    if is_symbolic(value) {
        return Verdict::Unknown;
    }
    match statements(value) {
        Some(list) => Verdict::from_bool(pass(&list)),
        None => Verdict::Unknown,
    }
}

/// An Allow that lets everyone in (`*`), with no condition that narrows who.
pub fn is_public(list: &[Statement]) -> bool {
    list.iter().any(|st| st.allow && (st.principals.contains("*") || st.not_principal) && !narrowed(&st.conditions))
}

/// Whether a statement's `Condition` block (as the document spells it) narrows who a `*` principal
/// is: see `narrows`.
pub fn condition_narrows(condition: Option<&Value>) -> bool {
    narrowed(&conditions(condition))
}

fn narrowed(conditions: &BTreeSet<String>) -> bool {
    conditions.iter().any(|c| narrows(c))
}

/// One `operator|key|values` item narrows who may act when its key names the caller's account,
/// organisation, network, ARN or source, its operator requires a match (not `...IfExists`, which an
/// absent key passes, nor a negated one), and every value pins it: no wildcard in an account,
/// organisation, VPC or endpoint id, none in an ARN's account field (an ARN without an account, as S3
/// writes them, must have none at all), no source range that is the whole internet.
fn narrows(condition: &str) -> bool {
    let mut parts = condition.splitn(3, '|');
    let (Some(op), Some(key), Some(values)) = (parts.next(), parts.next(), parts.next()) else { return false };
    if !NARROWING_KEYS.contains(&key) {
        return false;
    }
    let op = op.trim_start_matches("forallvalues:").trim_start_matches("foranyvalue:");
    if !MATCHING_OPERATORS.contains(&op) {
        return false;
    }
    let wild = |v: &str| v.contains('*') || v.contains('?');
    let values: Vec<&str> = values.split(',').collect();
    !values.is_empty()
        && values.iter().all(|v| {
            if v.is_empty() {
                return false;
            }
            if ARN_KEYS.contains(&key) {
                let account = v.split(':').nth(4).unwrap_or("");
                if account.is_empty() { !wild(v) } else { !wild(account) }
            } else if key == "aws:sourceip" {
                !matches!(*v, "0.0.0.0/0" | "::/0") && !wild(v)
            } else {
                !wild(v)
            }
        })
}

/// An Allow of every action on every resource.
pub fn grants_admin(list: &[Statement]) -> bool {
    list.iter().any(|st| {
        st.allow
            && !st.not_action
            && st.actions.iter().any(|a| a == "*" || a == "*:*")
            && (st.resources.contains("*") || st.resources.is_empty() && !st.not_resource)
    })
}

/// A Deny of requests made without TLS (`aws:SecureTransport` false).
pub fn requires_tls(list: &[Statement]) -> bool {
    list.iter().any(|st| {
        !st.allow
            && st.conditions.iter().any(|c| {
                let mut parts = c.split('|');
                let (op, key, values) = (parts.next(), parts.next(), parts.next());
                op.is_some_and(|o| o.starts_with("bool"))
                    && key == Some("aws:securetransport")
                    && values.is_some_and(|v| v.split(',').any(|v| v == "false"))
            })
    })
}

/// How `after` is wider than `before`, one sentence each: a (principal, action, resource) no Allow
/// granted before, a condition an Allow no longer has, a Deny gone or narrowed. Empty: not wider.
///
/// A `*` statement whose conditions keep it inside the policy's own trust boundary (`within_trust`)
/// grants nothing to another account, so it is not a new grant; it still widens when it drops a
/// condition an Allow had.
pub fn widenings(before: &[Statement], after: &[Statement]) -> Vec<String> {
    let mut out = Vec::new();
    let trusted = trusted_accounts(before, after);
    for st in after.iter().filter(|s| s.allow) {
        if st.not_action || st.not_resource || st.not_principal {
            // A negated element grants all but what it names: only the very same statement is no wider.
            if !before.iter().any(|b| b == st) {
                out.push(format!(
                    "an Allow with NotAction/NotResource/NotPrincipal ({}) that was not there",
                    describe(st)
                ));
            }
            continue;
        }
        let principals: Vec<&str> =
            if st.principals.is_empty() { vec![""] } else { st.principals.iter().map(String::as_str).collect() };
        for p in &principals {
            for a in &st.actions {
                for r in resources_or_any(st) {
                    let covering: Vec<&Statement> = before
                        .iter()
                        .filter(|b| b.allow && !b.not_action && !b.not_resource && !b.not_principal)
                        .filter(|b| covers_principal(b, p) && b.actions.iter().any(|x| glob(x, a)))
                        .filter(|b| resources_or_any(b).iter().any(|x| glob(x, r)))
                        .collect();
                    if covering.is_empty() {
                        if !(*p == "*" && within_trust(st, &trusted)) {
                            out.push(format!("allows {a} on {r}{} (no Allow granted it before)", to_whom(p)));
                        }
                    } else if !covering.iter().any(|b| b.conditions.is_subset(&st.conditions)) {
                        let dropped: BTreeSet<&str> = covering
                            .iter()
                            .flat_map(|b| b.conditions.iter())
                            .filter(|c| !st.conditions.contains(*c))
                            .filter_map(|c| c.split('|').nth(1))
                            .collect();
                        out.push(format!(
                            "allows {a} on {r}{} without the condition {} it had",
                            to_whom(p),
                            dropped.into_iter().collect::<Vec<_>>().join(", ")
                        ));
                    }
                }
            }
        }
    }
    for deny in before.iter().filter(|s| !s.allow) {
        let kept = after.iter().filter(|s| !s.allow).any(|a| {
            a == deny
                || (!a.not_action && !deny.not_action && !a.not_resource && !deny.not_resource)
                    && a.not_principal == deny.not_principal
                    && deny.actions.iter().all(|x| a.actions.iter().any(|y| glob(y, x)))
                    && resources_or_any(deny).iter().all(|x| resources_or_any(a).iter().any(|y| glob(y, x)))
                    && deny.principals.iter().all(|p| covers_principal(a, p))
                    && a.conditions.is_subset(&deny.conditions)
        });
        if !kept {
            out.push(format!("removes or narrows the Deny {}", describe(deny)));
        }
    }
    out.dedup();
    out
}

/// The accounts a policy already trusts: those of its principals before and those that own the
/// resources it names (an ARN's account field).
fn trusted_accounts(before: &[Statement], after: &[Statement]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for st in before.iter().filter(|s| s.allow && !s.not_principal) {
        for p in &st.principals {
            if let Some(account) = p.strip_prefix("AWS:").and_then(arn_account) {
                out.insert(account);
            }
        }
    }
    for st in before.iter().chain(after) {
        out.extend(st.resources.iter().filter_map(|r| arn_account(r)));
    }
    out
}

/// The account field of an ARN, when it names one (no wildcard).
fn arn_account(arn: &str) -> Option<String> {
    let account = arn.split(':').nth(4)?;
    (account.len() == 12 && account.bytes().all(|b| b.is_ascii_digit())).then(|| account.to_string())
}

/// A statement whose pinning conditions (`narrows`) keep the caller inside the policy's trust
/// boundary: its accounts all trusted (`aws:SourceAccount`, `aws:PrincipalAccount`, `aws:SourceOwner`,
/// `kms:CallerAccount`, or the account of `aws:SourceArn`/`aws:PrincipalArn`), its organisation
/// (`aws:PrincipalOrgID`, `aws:SourceOrgID`) or its network (`aws:SourceVpc`, `aws:SourceVpce`).
/// Conditions all apply at once, so one such pin is enough. A source IP range is no boundary.
fn within_trust(st: &Statement, trusted: &BTreeSet<String>) -> bool {
    st.conditions.iter().filter(|c| narrows(c)).any(|c| {
        let mut parts = c.splitn(3, '|');
        let (_, Some(key), Some(values)) = (parts.next(), parts.next(), parts.next()) else { return false };
        let values = values.split(',');
        match key {
            "aws:sourceaccount" | "aws:principalaccount" | "aws:sourceowner" | "kms:calleraccount" => {
                values.into_iter().all(|v| trusted.contains(v))
            }
            "aws:sourcearn" | "aws:principalarn" => {
                values.into_iter().all(|v| arn_account(v).is_some_and(|a| trusted.contains(&a)))
            }
            "aws:principalorgid" | "aws:sourceorgid" | "aws:sourcevpc" | "aws:sourcevpce" => true,
            _ => false,
        }
    })
}

fn resources_or_any(st: &Statement) -> Vec<&str> {
    if st.resources.is_empty() { vec!["*"] } else { st.resources.iter().map(String::as_str).collect() }
}

fn covers_principal(st: &Statement, p: &str) -> bool {
    if st.principals.is_empty() {
        return p.is_empty();
    }
    st.principals.iter().any(|x| x == "*" || x == p || glob(x, p))
}

fn to_whom(p: &str) -> String {
    match p {
        "" => String::new(),
        "*" => " to everyone (*)".into(),
        other => format!(" to {other}"),
    }
}

fn describe(st: &Statement) -> String {
    let mut parts = vec![st.actions.iter().cloned().collect::<Vec<_>>().join(", ")];
    if !st.resources.is_empty() {
        parts.push(format!("on {}", st.resources.iter().cloned().collect::<Vec<_>>().join(", ")));
    }
    if !st.conditions.is_empty() {
        let keys: Vec<&str> = condition_keys(st).into_iter().collect();
        parts.push(format!("when {}", keys.join(", ")));
    }
    parts.join(" ")
}

/// IAM's wildcard match: `*` any run, `?` one character, without regard to case.
fn glob(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) =
        (pattern.to_ascii_lowercase().chars().collect(), text.to_ascii_lowercase().chars().collect());
    let (mut pi, mut ti, mut star, mut mark) = (0, 0, None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn doc(statements: Value) -> Vec<Statement> {
        super::statements(&json!({"Version": "2012-10-17", "Statement": statements}).to_string().into()).unwrap()
    }

    const TLS_DENY: &str = r#"{"Effect": "Deny", "Principal": "*", "Action": "s3:*", "Resource": ["arn:aws:s3:::b", "arn:aws:s3:::b/*"], "Condition": {"Bool": {"aws:SecureTransport": "false"}}}"#;

    #[test]
    fn public_means_everyone_without_a_narrowing_condition() {
        let open =
            doc(json!([{"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "sqs:SendMessage", "Resource": "*"}]));
        assert!(is_public(&open));
        let narrowed =
            doc(json!([{"Effect": "Allow", "Principal": {"Service": "sns.amazonaws.com"}, "Action": "sqs:SendMessage",
            "Resource": "*"}, {"Effect": "Allow", "Principal": "*", "Action": "sqs:SendMessage", "Resource": "*",
            "Condition": {"ArnEquals": {"aws:SourceArn": "arn:aws:sns:us-east-1:1:t"}}}]));
        assert!(!is_public(&narrowed));
        let denied = doc(json!([serde_json::from_str::<Value>(TLS_DENY).unwrap()]));
        assert!(!is_public(&denied));
        assert!(requires_tls(&denied));
    }

    #[test]
    fn a_condition_narrows_only_when_its_values_pin_the_caller() {
        let star = |condition: Value| {
            doc(json!([{"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "kms:Decrypt", "Resource": "*",
                "Condition": condition}]))
        };
        // Pinned: one account, one organisation, one endpoint, an ARN in a named account, AWS managed keys' form.
        for narrowing in [
            json!({"StringEquals": {"aws:SourceAccount": "123456789012"}}),
            json!({"StringEquals": {"aws:PrincipalOrgID": "o-7k2m4x9q1z"}}),
            json!({"StringEquals": {"aws:SourceVpce": "vpce-0f3a8c2e6d1b47925"}}),
            json!({"ArnLike": {"aws:SourceArn": "arn:aws:sns:us-west-2:123456789012:pay-*"}}),
            json!({"ArnLike": {"aws:SourceArn": "arn:aws:s3:::reports-bucket"}}),
            json!({"StringEquals": {"kms:CallerAccount": "123456789012", "kms:ViaService": "ec2.us-west-2.amazonaws.com"}}),
            json!({"IpAddress": {"aws:SourceIp": ["203.0.113.0/24"]}}),
            json!({"ForAnyValue:StringEquals": {"aws:PrincipalAccount": ["111122223333", "444455556666"]}}),
        ] {
            assert!(!is_public(&star(narrowing.clone())), "{narrowing}");
        }
        // Not pinned: a key that says nothing of the caller, a wildcard account, an open range,
        // IfExists (an absent key passes), a negated operator, a bucket ARN pattern without an account.
        for open in [
            json!({"Bool": {"aws:SecureTransport": "true"}}),
            json!({"StringEquals": {"kms:ViaService": "s3.us-west-2.amazonaws.com"}}),
            json!({"ArnLike": {"aws:PrincipalArn": "arn:aws:iam::*:role/pay-stack-*"}}),
            json!({"StringLike": {"aws:SourceAccount": "*"}}),
            json!({"StringLike": {"aws:PrincipalOrgID": "o-*"}}),
            json!({"IpAddress": {"aws:SourceIp": "0.0.0.0/0"}}),
            json!({"StringEqualsIfExists": {"aws:SourceAccount": "123456789012"}}),
            json!({"StringNotEquals": {"aws:SourceAccount": "999999999999"}}),
            json!({"ArnLike": {"aws:SourceArn": "arn:aws:s3:::*"}}),
            json!({"StringEquals": {"aws:SourceVpce": ["vpce-1", "*"]}}),
        ] {
            assert!(is_public(&star(open.clone())), "{open}");
        }
        assert!(condition_narrows(Some(&json!({"StringEquals": {"aws:SourceAccount": "123456789012"}}))));
        assert!(!condition_narrows(Some(&json!({"StringLike": {"aws:SourceAccount": "12345678901?"}}))));
        assert!(!condition_narrows(None));
    }

    #[test]
    fn admin_is_every_action_on_every_resource() {
        assert!(grants_admin(&doc(json!([{"Effect": "Allow", "Action": "*", "Resource": "*"}]))));
        assert!(!grants_admin(&doc(json!([{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]))));
        assert!(!grants_admin(&doc(json!([{"Effect": "Deny", "Action": "*", "Resource": "*"}]))));
    }

    #[test]
    fn widening_is_a_new_grant_a_dropped_condition_or_a_removed_deny() {
        let reader = json!({"Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::1:role/reader"}, "Action": ["s3:GetObject"],
            "Resource": "arn:aws:s3:::b/*"});
        let deny: Value = serde_json::from_str(TLS_DENY).unwrap();
        let before = doc(json!([reader, deny]));
        // The same document with its statements reordered and a Sid added is no wider.
        let mut same = json!([deny, reader]);
        same[0]["Sid"] = json!("DenyInsecure");
        assert!(widenings(&before, &doc(same)).is_empty());
        // Dropping the TLS deny widens.
        let w = widenings(&before, &doc(json!([reader])));
        assert!(w.iter().any(|x| x.contains("removes or narrows the Deny")), "{w:?}");
        // A new action, a new principal, a wildcard: each widens.
        let mut more = reader.clone();
        more["Action"] = json!(["s3:GetObject", "s3:PutObject"]);
        let w = widenings(&before, &doc(json!([more, deny])));
        assert_eq!(
            w,
            vec![
                "allows s3:putobject on arn:aws:s3:::b/* to AWS:arn:aws:iam::1:role/reader (no Allow granted it before)"
            ]
        );
        let mut everyone = reader.clone();
        everyone["Principal"] = json!("*");
        assert!(!widenings(&before, &doc(json!([everyone, deny]))).is_empty());
        // Narrowing (fewer actions, an added condition, an added deny) does not widen.
        let mut narrower = reader.clone();
        narrower["Condition"] = json!({"StringEquals": {"aws:SourceVpce": "vpce-1"}});
        let extra_deny = json!({"Effect": "Deny", "Principal": "*", "Action": "s3:DeleteObject", "Resource": "*"});
        assert!(widenings(&before, &doc(json!([narrower, deny, extra_deny]))).is_empty());
        // An Allow losing its condition widens.
        let conditioned = doc(json!([narrower]));
        let w = widenings(&conditioned, &doc(json!([reader])));
        assert!(w[0].contains("without the condition aws:sourcevpce"), "{w:?}");
    }

    #[test]
    fn a_star_grant_pinned_inside_the_trust_boundary_is_no_new_grant() {
        let admin = json!({"Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::111122223333:root"}, "Action": "kms:*", "Resource": "*"});
        let before = doc(json!([admin]));
        let pinned = |condition: Value| {
            doc(json!([admin, {"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "kms:Decrypt", "Resource": "*",
                "Condition": condition}]))
        };
        // The key's own account, its organisation, its network: inside.
        for inside in [
            json!({"StringEquals": {"kms:CallerAccount": "111122223333", "kms:ViaService": "ec2.us-east-1.amazonaws.com"}}),
            json!({"StringEquals": {"aws:PrincipalOrgID": "o-a1b2c3d4e5"}}),
            json!({"StringEquals": {"aws:SourceVpce": "vpce-1a2b3c4d"}}),
            json!({"ArnLike": {"aws:PrincipalArn": "arn:aws:iam::111122223333:role/deploy-*"}}),
        ] {
            assert!(widenings(&before, &pinned(inside.clone())).is_empty(), "{inside}");
        }
        // Another account, a wildcard account, an address range, no pin at all: a new grant.
        for outside in [
            json!({"StringEquals": {"aws:SourceAccount": "444455556666"}}),
            json!({"ArnLike": {"aws:PrincipalArn": "arn:aws:iam::*:role/deploy-*"}}),
            json!({"IpAddress": {"aws:SourceIp": "203.0.113.0/24"}}),
            json!({"Bool": {"aws:SecureTransport": "true"}}),
        ] {
            let w = widenings(&before, &pinned(outside.clone()));
            assert_eq!(w, vec!["allows kms:decrypt on * to everyone (*) (no Allow granted it before)"], "{outside}");
        }
        // A named principal in another account is a new grant, and so is the resource owner's account
        // when only the resource ARN names it and a pin names another.
        let vendor = doc(
            json!([admin, {"Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::444455556666:root"}, "Action": "kms:*", "Resource": "*"}]),
        );
        assert!(!widenings(&before, &vendor).is_empty());
        let queue = json!({"Effect": "Allow", "Principal": {"Service": "sns.amazonaws.com"}, "Action": "sqs:SendMessage",
            "Resource": "arn:aws:sqs:us-east-1:111122223333:q"});
        let own_topics = json!({"Effect": "Allow", "Principal": "*", "Action": "sqs:SendMessage", "Resource": "arn:aws:sqs:us-east-1:111122223333:q",
            "Condition": {"ArnLike": {"aws:SourceArn": "arn:aws:sns:us-east-1:111122223333:orders-*"}}});
        assert!(widenings(&doc(json!([queue])), &doc(json!([own_topics]))).is_empty());
        let mut their_topics = own_topics.clone();
        their_topics["Condition"] =
            json!({"ArnLike": {"aws:SourceArn": "arn:aws:sns:us-east-1:444455556666:orders-*"}});
        assert!(!widenings(&doc(json!([queue])), &doc(json!([their_topics]))).is_empty());
        // A pinned grant that loses its pin widens.
        let was_pinned = pinned(json!({"StringEquals": {"aws:PrincipalOrgID": "o-a1b2c3d4e5"}}));
        let w = widenings(&was_pinned, &pinned(json!({"Bool": {"aws:SecureTransport": "true"}})));
        assert!(w.iter().any(|x| x.contains("without the condition aws:principalorgid")), "{w:?}");
    }

    #[test]
    fn wildcards_match_as_iam_matches_them() {
        assert!(glob("s3:Get*", "s3:getobject"));
        assert!(glob("*", "anything"));
        assert!(!glob("s3:Get*", "s3:*"));
        assert!(glob("arn:aws:s3:::b/*", "arn:aws:s3:::b/x/y"));
        assert!(!glob("arn:aws:s3:::b/*", "arn:aws:s3:::c/x"));
    }
}
