//! A person's answer "this actor owns this field" as a rule of the policy file: appended as text
//! (the file's comments and layout are kept), then the whole file is loaded again, its examples
//! run, so an edit that would not load is never proposed.

use crate::file::PolicyError;
use crate::policy::Policy;

/// Longest field path and actor name a person may give.
pub const MAX_OWN_CHARS: usize = 100;

/// Why an ownership answer cannot become a rule.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum OwnError {
    #[error(
        "the field {0:?} is not a dotted attribute path (letters, digits, `_`, `.`; at most 100 characters), e.g. `desired_capacity` or `tags.Team`"
    )]
    Field(String),
    #[error(
        "the actor {0:?} is not an actor name (letters, digits and `_.@+=,:/-`; at most 100 characters; no wildcards), e.g. `ops-bot` or `autoscaling.amazonaws.com`"
    )]
    Actor(String),
    #[error("the resource address {0:?} cannot be written as a rule")]
    Address(String),
    #[error("the policy file with the new rule does not load: {0}")]
    Policy(#[from] PolicyError),
}

/// Whether `field` may name a field in an ownership answer (no glob characters, no indices).
pub fn valid_field(field: &str) -> bool {
    !field.is_empty()
        && field.len() <= MAX_OWN_CHARS
        && field.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        && !field.starts_with('.')
        && !field.ends_with('.')
        && !field.contains("..")
}

/// Whether `actor` may name the owner in an ownership answer (a name, not a pattern or a kind).
pub fn valid_actor(actor: &str) -> bool {
    !actor.is_empty()
        && actor.len() <= MAX_OWN_CHARS
        && !actor.starts_with("kind:")
        && actor.chars().all(|c| c.is_ascii_alphanumeric() || "_.@+=,:/-".contains(c))
}

/// The rule's name for `actor` owning `field` of `address`: `own:<address>:<field>`, unique in
/// `policy` (a numeric suffix when taken).
fn rule_name(policy: &Policy, address: &str, field: &str) -> String {
    let base = format!("own:{address}:{field}");
    let taken = |name: &str| policy.rules.iter().any(|r| r.name == name);
    if !taken(&base) {
        return base;
    }
    (2..).map(|n| format!("{base}-{n}")).find(|n| !taken(n)).unwrap_or(base)
}

/// `text` (the policy file's, empty when there is none) with a rule saying `actor` owns `field`
/// of `address`: its changes get `ignore_changes`, anyone else's are escalated; with an example
/// that checks it. `file` names the file in errors; `why` is a comment line above the rule
/// (who decided, where). Returns the new text, which loads.
pub fn add_ownership_rule(
    text: &str,
    file: &str,
    address: &str,
    field: &str,
    actor: &str,
    why: &str,
) -> Result<String, OwnError> {
    if !valid_field(field) {
        return Err(OwnError::Field(field.chars().take(MAX_OWN_CHARS).collect()));
    }
    if !valid_actor(actor) {
        return Err(OwnError::Actor(actor.chars().take(MAX_OWN_CHARS).collect()));
    }
    // Globs in an address (`[`, `*`, `?`) would match more than the resource: refused.
    if address.is_empty() || address.contains(['[', ']', '*', '?', '\n']) {
        return Err(OwnError::Address(address.to_string()));
    }
    let current = if text.trim().is_empty() { Policy::defaults() } else { Policy::from_toml(text, file)? };
    let name = rule_name(&current, address, field);
    let quoted = |s: &str| toml::Value::String(s.to_string()).to_string();
    let comment: String = why.chars().filter(|c| !c.is_control()).take(200).collect();
    let mut out = text.to_string();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    if !out.is_empty() {
        out.push('\n');
    }
    out.push_str(&format!("# {comment}\n"));
    out.push_str(&format!(
        "[[rule]]\nname = {}\ndescription = {}\naddress = {}\nattribute = {}\nowner = {}\nowner_decision = \"ignore_changes\"\n",
        quoted(&name),
        quoted(&format!("{actor} owns {field} of {address}: its changes are left to it, anyone else's wait for a person")),
        quoted(address),
        quoted(field),
        quoted(actor),
    ));
    out.push_str(&format!(
        "\n  [[rule.example]]\n  address = {}\n  attribute = {}\n  actor = {}\n  expect = \"ignore_changes\"\n",
        quoted(address),
        quoted(field),
        quoted(actor),
    ));
    // Loading runs every example, the new rule's too: it must give `ignore_changes` to the owner.
    let loaded = Policy::from_toml(&out, file)?;
    // The new rule is the file's last and decides as written.
    let rule = loaded.rules[..loaded.file_rules].last().filter(|r| r.name == name);
    if rule.is_none() {
        return Err(OwnError::Policy(PolicyError::Invalid {
            file: file.to_string(),
            location: format!("rule {name:?}"),
            field: "name".into(),
            message: "the appended rule was not read back as the file's last rule".into(),
        }));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ownership_answer_becomes_a_rule_that_loads_and_keeps_the_file() {
        let text = "# our rules\n[settings]\noscillation_window = \"24h\"\n";
        let out = add_ownership_rule(
            text,
            ".driftback/policy.toml",
            "aws_sqs_queue.jobs",
            "visibility_timeout_seconds",
            "ops-bot",
            "maria answered in #12",
        )
        .unwrap();
        assert!(out.starts_with(text), "{out}");
        let policy = Policy::from_toml(&out, "p").unwrap();
        let rule = policy.rules.iter().find(|r| r.name == "own:aws_sqs_queue.jobs:visibility_timeout_seconds").unwrap();
        assert_eq!(rule.matcher.attributes, ["visibility_timeout_seconds"]);
        assert_eq!(policy.oscillation_window_secs, 24 * 3600, "the file's settings are kept");
        // Twice: a second rule with its own name, and the file still loads.
        let again =
            add_ownership_rule(&out, "p", "aws_sqs_queue.jobs", "visibility_timeout_seconds", "ops-bot", "x").unwrap();
        assert!(again.contains("own:aws_sqs_queue.jobs:visibility_timeout_seconds-2"), "{again}");
        // No file yet: the rule alone.
        let fresh = add_ownership_rule("", "p", "aws_instance.web", "tags.Team", "alice", "x").unwrap();
        assert!(fresh.starts_with("# x\n[[rule]]"), "{fresh}");
    }

    #[test]
    fn what_a_comment_says_is_checked_before_it_is_written() {
        let add = |address: &str, field: &str, actor: &str| add_ownership_rule("", "p", address, field, actor, "x");
        assert!(matches!(add("aws_instance.web", "tags.*", "alice"), Err(OwnError::Field(_))));
        assert!(matches!(add("aws_instance.web", "a\"\nb", "alice"), Err(OwnError::Field(_))));
        assert!(matches!(add("aws_instance.web", "instance_type", "*"), Err(OwnError::Actor(_))));
        assert!(matches!(add("aws_instance.web", "instance_type", "kind:agent"), Err(OwnError::Actor(_))));
        assert!(matches!(add("aws_instance.web[\"a\"]", "instance_type", "alice"), Err(OwnError::Address(_))));
        let long = "a".repeat(101);
        assert!(matches!(add("aws_instance.web", &long, "alice"), Err(OwnError::Field(_))));
        // A file that does not load is not edited.
        let broken = add_ownership_rule("[[rule]]\nname = 1\n", "p", "aws_instance.web", "ami", "alice", "x");
        assert!(matches!(broken, Err(OwnError::Policy(_))), "{broken:?}");
    }
}
