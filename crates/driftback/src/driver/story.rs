//! The story of a reconciled change set, as commit messages and pull requests tell it: the
//! timeline, the actor with the evidence, intent, motivation, the decision, and each field's value
//! before and after (secrets and redacted values never shown).

use driftback_events::ChangeSet;
use driftback_publish::story::{ActorInfo, DecisionInfo, Reasoned, ShownChange, Story, TimelineEntry};
use driftback_terraform::AttrValue;

use super::outcome::{Outcome, REDACTED};

/// The pull request's story, from the change set and what the pipeline made of it.
pub fn story(change_set: &ChangeSet, outcome: &Outcome, label: &str, diff: String, base_branch: &str) -> Story {
    let address = outcome.address_of(label);
    let actor = &change_set.actor;
    let mut evidence = vec![format!("CloudTrail identity type {:?}", actor.identity_type)];
    if let Some(issuer) = &actor.session_issuer {
        evidence.push(format!("a session of the role {issuer}"));
    }
    if let Some(session) = &actor.session_name {
        evidence.push(format!("session name {session}"));
    }
    if let Some(source) = &actor.source_identity {
        evidence.push(format!("source identity {source}"));
    }
    if let Some(by) = &actor.invoked_by {
        evidence.push(format!("invoked by {by}"));
    }
    evidence.push(format!("the user agent and identity say it came through the {}", actor.via.as_str()));
    let decision = match &outcome.decision {
        // The written part of a split decision: its own decision, the rationale saying what waits.
        Some(d) if outcome.held.is_some() && d.split.is_some() => {
            let split = d.split.as_ref().expect("checked");
            let held: Vec<String> = split.held.iter().map(|f| format!("`{}`", f.path)).collect();
            DecisionInfo {
                kind: split.codified_kind().as_str().into(),
                rule: split.codified.first().map(|f| f.rule.clone()).unwrap_or_else(|| d.rule.clone()),
                rationale: format!(
                    "The fields below are written into the code; {} of the same change wait(s) for a person in the \
                     resource's escalation issue ({} by the rule {}): {}",
                    held.join(", "),
                    d.kind.as_str(),
                    d.rule,
                    d.rationale
                ),
            }
        }
        Some(d) => DecisionInfo { kind: d.kind.as_str().into(), rule: d.rule.clone(), rationale: d.rationale.clone() },
        None => DecisionInfo { kind: "reconcile".into(), rule: "default".into(), rationale: String::new() },
    };
    let attribution = outcome.decision.as_ref().and_then(|d| d.attribution.as_ref());
    if let Some(a) = attribution {
        evidence.splice(0..0, a.actor.evidence.iter().cloned());
    }
    let reasoned = |value: &str, evidence: &[String]| Reasoned {
        value: value.to_string(),
        reason: (!evidence.is_empty()).then(|| evidence.join("; ")),
    };
    Story {
        address: label.to_string(),
        resource_id: change_set.resource_id.clone(),
        change_set_id: change_set.id.clone(),
        changes: outcome
            .field_changes
            .iter()
            .filter(|c| c.address == address)
            .map(|c| ShownChange {
                path: c.path.clone(),
                before: c.before.as_ref().map(|v| shown_value(&c.path, v)),
                after: c.after.as_ref().map(|v| match v {
                    AttrValue::Literal(v) => shown_value(&c.path, v),
                    AttrValue::Reference(r) => escaped(r),
                }),
            })
            .collect(),
        timeline: change_set
            .events
            .iter()
            .map(|e| TimelineEntry {
                time: e.time.format("%Y-%m-%d %H:%M:%SZ").to_string(),
                actor: e.actor.display_name.clone(),
                source: e.source.clone(),
                name: e.raw_name.clone(),
                event_id: e.id.clone(),
            })
            .collect(),
        actor: ActorInfo {
            name: actor.display_name.clone(),
            via: actor.via.as_str().into(),
            principal: actor.principal_arn.clone(),
            kind: attribution.map(|a| a.actor.kind.as_str().to_string()),
            evidence,
        },
        intent: attribution.map(|a| reasoned(a.intent.value.as_str(), &a.intent.evidence)),
        motivation: attribution.map(|a| reasoned(a.motivation.value.as_str(), &a.motivation.evidence)),
        decision,
        diff,
        notes: outcome.notes.clone(),
        base_branch: base_branch.to_string(),
        fields: fields_of(outcome, label),
    }
}

/// The fields of the resource `label` names ([`Outcome::label`]) the change set touches, as the
/// policy named them (`(resource)` for a creation or deletion); of a split change set that was
/// written, only the written ones.
pub fn fields_of(outcome: &Outcome, label: &str) -> Vec<String> {
    let address = outcome.address_of(label);
    let mut out: Vec<String> = Vec::new();
    let waiting: Vec<(&str, &str)> = match (&outcome.held, outcome.decision.as_ref().and_then(|d| d.split.as_ref())) {
        (Some(_), Some(split)) => split.held.iter().map(|f| (f.address.as_str(), f.path.as_str())).collect(),
        _ => Vec::new(),
    };
    let written = |f: &&driftback_policy::FieldDecision| {
        !waiting.iter().any(|(a, p)| *a == f.address && Some(*p) == f.path.as_deref())
    };
    for f in outcome.decision.iter().flat_map(|d| &d.fields).filter(|f| f.address == address).filter(written) {
        let field = f.path.clone().unwrap_or_else(|| RESOURCE.to_string());
        if !out.contains(&field) {
            out.push(field);
        }
    }
    out
}

/// How a creation or deletion of the whole resource is named among its fields.
pub const RESOURCE: &str = "(resource)";

/// Shown instead of a value that is secret or that CloudTrail redacted.
const HIDDEN: &str = "(hidden)";
/// Longest value shown; longer ones are cut with `…`.
const MAX_VALUE_CHARS: usize = 60;

/// Words in an attribute path that mark its value as a secret.
const SECRET_WORDS: &[&str] =
    &["password", "secret", "token", "private_key", "key_material", "credential", "passphrase", "auth"];

/// A value as a pull request title, commit summary or table shows it: strings bare, anything else
/// as compact JSON, control characters escaped, cut to [`MAX_VALUE_CHARS`]; secrets (by the
/// attribute's name) and redacted values are never shown.
fn shown_value(path: &str, value: &serde_json::Value) -> String {
    let lower = path.to_ascii_lowercase();
    if SECRET_WORDS.iter().any(|w| lower.contains(w)) {
        return HIDDEN.to_string();
    }
    let text = match value {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    if text.contains(REDACTED) {
        return HIDDEN.to_string();
    }
    escaped(&text)
}

fn escaped(text: &str) -> String {
    let mut out = String::new();
    for (count, c) in text.chars().enumerate() {
        if count == MAX_VALUE_CHARS {
            out.push('…');
            break;
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shown_values_hide_secrets_and_redactions_and_escape_the_rest() {
        assert_eq!(shown_value("instance_type", &"t3.large".into()), "t3.large");
        assert_eq!(shown_value("desired_capacity", &3.into()), "3");
        assert_eq!(shown_value("master_password", &"hunter2".into()), HIDDEN);
        assert_eq!(shown_value("environment.variables.API_TOKEN", &"abc".into()), HIDDEN);
        assert_eq!(shown_value("description", &"x HIDDEN_DUE_TO_SECURITY_REASONS".into()), HIDDEN);
        assert_eq!(shown_value("description", &"a\nb".into()), "a\\nb");
        let long = shown_value("description", &"x".repeat(500).into());
        assert_eq!(long.chars().count(), MAX_VALUE_CHARS + 1, "{long}");
        assert!(long.ends_with('…'));
    }
}
