//! The decision types: what happens to a change, which rule said so, and why. Serialisable for the
//! audit log, the commit message and the pull request body.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use driftback_attribute::Attribution;

use crate::change::ChangeKind;
pub use crate::kind::DecisionKind;
use crate::ledger::Oscillation;

/// One rule that matched, with what it would decide.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuleMatch {
    /// The rule's name; built-in rules are named `default:...`.
    pub rule: String,
    pub decision: DecisionKind,
    /// Why the rule gives this decision here.
    pub reason: String,
    /// Who owns the field by this rule, when the rule says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
}

/// The decision on one field (or one whole-resource change) of a change set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FieldDecision {
    pub address: String,
    /// Dotted attribute path (`tags.Team`, `ingress[1].from_port`); `None` for a resource created or
    /// deleted as a whole.
    pub path: Option<String>,
    pub change: ChangeKind,
    /// The new value, when it is a literal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
    pub kind: DecisionKind,
    /// The rule that decided (the strictest match).
    pub rule: String,
    /// Who owns the field by policy (`terraform` unless a rule names an owner).
    pub owner: String,
    /// Every rule that matched, strictest first.
    pub matched: Vec<RuleMatch>,
}

/// A decision on a change set, with the rule that made it, the evidence and the rationale.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    pub kind: DecisionKind,
    /// The rule that decided.
    pub rule: String,
    /// One or two sentences for the reviewer.
    pub rationale: String,
    /// Facts the decision rests on: who the actor is, what the change is for, which rules matched.
    #[serde(default)]
    pub evidence: Vec<String>,
    /// Actor, intent and motivation of the change set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attribution: Option<Attribution>,
    /// Per field, when the change set could be planned.
    #[serde(default)]
    pub fields: Vec<FieldDecision>,
    /// Rules that matched the change set as a whole (security checks on the calls themselves).
    #[serde(default)]
    pub matched: Vec<RuleMatch>,
    /// Fields that two actors are setting back and forth.
    #[serde(default)]
    pub oscillations: Vec<Oscillation>,
    /// For `revert` and `escalate`: when the fields that wait for a person are independent of the
    /// others, which fields are written into the code and which are held (docs/policy.md,
    /// "Split decisions"). `None`: the whole change set waits (or is written) together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<Split>,
}

/// A change set split in two: the fields written into the code, and those held for a person.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Split {
    /// The fields written, as `address path` (`aws_db_instance.main allocated_storage`), with the
    /// decision each gets (`reconcile` or `ignore_changes`).
    pub codified: Vec<SplitField>,
    /// The fields held for a person, each with why.
    pub held: Vec<SplitField>,
}

/// One field of a split change set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SplitField {
    pub address: String,
    pub path: String,
    pub kind: DecisionKind,
    /// The rule that decided the field itself.
    pub rule: String,
    /// Why it is on its side: the rule that decided it, or the field it depends on and how.
    pub why: String,
}

impl Split {
    /// The decision the written part gets: the strictest of its fields' (`reconcile` or
    /// `ignore_changes`).
    pub fn codified_kind(&self) -> DecisionKind {
        self.codified.iter().map(|f| f.kind).max().unwrap_or(DecisionKind::Reconcile)
    }

    /// The fields held, as `path` (or `address path` when several resources are involved).
    pub fn held_paths(&self) -> Vec<&str> {
        self.held.iter().map(|f| f.path.as_str()).collect()
    }

    /// One paragraph saying what was split and why, for the commit, the pull request and the
    /// escalation issue alike.
    pub fn describe(&self) -> String {
        let name = |f: &SplitField| format!("`{}` of {}", f.path, f.address);
        let written: Vec<String> = self.codified.iter().map(name).collect();
        let held: Vec<String> = self.held.iter().map(|f| format!("{} ({})", name(f), f.why)).collect();
        format!(
            "split: {} written into the code; held for a person: {}. The held fields do not depend on the written \
             ones (not the same argument or nested block, no policy rule relating them, no resource created or \
             deleted, no check on the calls themselves), so each part is decided on its own.",
            written.join(", "),
            held.join("; ")
        )
    }
}

impl Decision {
    /// A decision with no attribution or field detail (the stage could not get that far).
    pub fn new(kind: DecisionKind, rule: impl Into<String>, rationale: impl Into<String>) -> Decision {
        Decision {
            kind,
            rule: rule.into(),
            rationale: rationale.into(),
            evidence: vec![],
            attribution: None,
            fields: vec![],
            matched: vec![],
            oscillations: vec![],
            split: None,
        }
    }
}
