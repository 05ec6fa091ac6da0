//! Rules: what a rule matches (resource type, address, attribute path, actor, intent, motivation,
//! kind of change, API) and what it decides.

use serde_json::Value;

use driftback_attribute::{ActorInfo, ActorKind, Intent, Motivation, glob_match};

use crate::change::{ChangeKind, path_and_ancestors};
use crate::decision::{DecisionKind, RuleMatch};

/// A policy rule. Every matcher that is set must hold (lists match any of their items); a rule
/// with no matchers matches every change.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    /// Unique; built-in rules are named `default:...`.
    pub name: String,
    pub description: String,
    pub matcher: Matcher,
    pub effect: Effect,
    /// Checked when the policy loads.
    pub examples: Vec<Example>,
}

/// What a rule applies to. Empty lists match anything.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Matcher {
    /// Globs over the resource type (`aws_iam_*`).
    pub resource_types: Vec<String>,
    /// Globs over the resource address, with or without its instance key.
    pub addresses: Vec<String>,
    /// Globs over the dotted attribute path; a pattern also covers what is nested under the path
    /// it matches (`tags` covers `tags.Team`). Whole-resource changes have no path and do not match.
    pub attributes: Vec<String>,
    /// Paths this rule leaves alone, same syntax (`tags`, `tags_all`).
    pub except_attributes: Vec<String>,
    /// Actor patterns: globs over the actor's names and ARNs, or `kind:<kind>`.
    pub actors: Vec<String>,
    pub actor_kinds: Vec<ActorKind>,
    pub intents: Vec<Intent>,
    pub motivations: Vec<Motivation>,
    pub changes: Vec<ChangeKind>,
    /// Globs over `service:EventName` of any call in the change set (`ec2:AuthorizeSecurityGroup*`).
    pub apis: Vec<String>,
}

/// What a matching rule decides.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Always this decision.
    Decide(DecisionKind),
    /// The field belongs to `owners` (actor patterns, or `terraform` for the code): a change by an
    /// owner gets `owner_decision`, a change by anyone else gets `others`.
    Own { owners: Vec<String>, owner_decision: DecisionKind, others: DecisionKind },
    /// The value must stay within bounds; a value outside gets `decision`, one inside does not
    /// match. Values that are not literals (references) cannot be checked and do not match.
    Bounds { min: Option<f64>, max: Option<f64>, allowed: Vec<Value>, decision: DecisionKind },
    /// The field must not change out of band: any change gets `decision`.
    Immutable(DecisionKind),
}

/// A change as a rule sees it.
#[derive(Debug, Clone, Copy)]
pub struct Subject<'a> {
    pub rtype: Option<&'a str>,
    /// The address, and the address without instance key.
    pub address: Option<(&'a str, &'a str)>,
    pub path: Option<&'a str>,
    pub change: Option<ChangeKind>,
    pub value: Option<&'a Value>,
    pub actor: &'a ActorInfo,
    pub intent: Intent,
    pub motivation: Motivation,
    /// `service:EventName` of the change set's calls.
    pub apis: &'a [String],
}

/// A rule's example: a change, and the decision the rule must give it (or `None`: must not match).
#[derive(Debug, Clone, PartialEq)]
pub struct Example {
    pub address: String,
    pub attribute: Option<String>,
    pub change: ChangeKind,
    pub value: Option<Value>,
    pub actor: String,
    pub actor_kind: ActorKind,
    pub intent: Intent,
    pub motivation: Motivation,
    pub api: Option<String>,
    pub expect: Option<DecisionKind>,
}

impl Matcher {
    fn holds(&self, s: &Subject<'_>) -> bool {
        let any = |patterns: &[String], text: Option<&str>| {
            patterns.is_empty() || text.is_some_and(|t| patterns.iter().any(|p| glob_match(p, t)))
        };
        let path_hits = |patterns: &[String]| {
            s.path.is_some_and(|p| path_and_ancestors(p).iter().any(|x| patterns.iter().any(|pat| glob_match(pat, x))))
        };
        any(&self.resource_types, s.rtype)
            && (self.addresses.is_empty()
                || s.address.is_some_and(|(full, bare)| {
                    self.addresses.iter().any(|p| glob_match(p, full) || glob_match(p, bare))
                }))
            && (self.attributes.is_empty() || path_hits(&self.attributes))
            && (self.except_attributes.is_empty() || !path_hits(&self.except_attributes))
            && (self.actors.is_empty() || self.actors.iter().any(|p| s.actor.matches(p)))
            && (self.actor_kinds.is_empty() || self.actor_kinds.contains(&s.actor.kind))
            && (self.intents.is_empty() || self.intents.contains(&s.intent))
            && (self.motivations.is_empty() || self.motivations.contains(&s.motivation))
            && (self.changes.is_empty() || s.change.is_some_and(|c| self.changes.contains(&c)))
            && (self.apis.is_empty() || s.apis.iter().any(|a| self.apis.iter().any(|p| glob_match(p, a))))
    }

    /// Whether the rule can only match a specific field or resource (so it does not apply to a
    /// change set that could not be planned).
    pub fn needs_field(&self) -> bool {
        !(self.resource_types.is_empty()
            && self.addresses.is_empty()
            && self.attributes.is_empty()
            && self.except_attributes.is_empty()
            && self.changes.is_empty())
    }
}

impl Rule {
    /// What this rule decides for a subject, if it matches.
    pub fn evaluate(&self, s: &Subject<'_>) -> Option<RuleMatch> {
        if !self.matcher.holds(s) {
            return None;
        }
        let at = match (s.address, s.path) {
            (Some((a, _)), Some(p)) => format!("{a}.{p}"),
            (Some((a, _)), None) => a.to_string(),
            _ => "the change set".to_string(),
        };
        let (decision, reason, owner) = match &self.effect {
            Effect::Decide(d) => (*d, self.reason_or(&format!("rule {} applies to {at}", self.name)), None),
            Effect::Own { owners, owner_decision, others } => {
                let owner = owners.join(", ");
                let by_owner = owners.iter().any(|o| o != "terraform" && s.actor.matches(o));
                if by_owner {
                    let reason = format!("{} owns {at}; this change is theirs to make", s.actor.id);
                    (*owner_decision, reason, Some(owner))
                } else {
                    let reason = format!("{at} is owned by {owner}, not {}", s.actor.id);
                    (*others, reason, Some(owner))
                }
            }
            Effect::Bounds { min, max, allowed, decision } => {
                let value = s.value?;
                let why = out_of_bounds(value, *min, *max, allowed)?;
                (*decision, format!("{at} = {value} {why}"), None)
            }
            Effect::Immutable(d) => {
                (*d, format!("{at} is immutable outside Terraform ({})", self.reason_or("policy")), None)
            }
        };
        Some(RuleMatch { rule: self.name.clone(), decision, reason, owner })
    }

    /// Whether the rule's matchers hold for a subject, whatever its value and effect: the fields a
    /// rule is about (a bound over `min_size`, `max_size` and `desired_capacity`).
    pub(crate) fn covers(&self, s: &Subject<'_>) -> bool {
        self.matcher.holds(s)
    }

    fn reason_or(&self, fallback: &str) -> String {
        if self.description.is_empty() { fallback.to_string() } else { self.description.clone() }
    }
}

/// Why a value is outside the bounds, if it is.
fn out_of_bounds(value: &Value, min: Option<f64>, max: Option<f64>, allowed: &[Value]) -> Option<String> {
    if !allowed.is_empty() && !allowed.iter().any(|a| same_value(a, value)) {
        let list: Vec<String> = allowed.iter().map(Value::to_string).collect();
        return Some(format!("is not one of the allowed values [{}]", list.join(", ")));
    }
    let number = match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.parse::<f64>().ok(),
        _ => None,
    };
    if min.is_some() || max.is_some() {
        let Some(n) = number else {
            return Some("is not a number, and the policy bounds it".to_string());
        };
        if let Some(min) = min.filter(|m| n < *m) {
            return Some(format!("is below the minimum {min}"));
        }
        if let Some(max) = max.filter(|m| n > *m) {
            return Some(format!("is above the maximum {max}"));
        }
    }
    None
}

/// Numbers by value (`10` equals `10.0` and `"10"`), everything else exactly.
fn same_value(a: &Value, b: &Value) -> bool {
    let num = |v: &Value| match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.parse::<f64>().ok(),
        _ => None,
    };
    match (a, b) {
        (Value::Number(_), _) | (_, Value::Number(_)) => num(a).is_some() && num(a) == num(b),
        _ => a == b,
    }
}
