//! The decide stage: whether an out-of-band change is written into code, and why.
//!
//! Pure: a change set, its attribution and its plan in; a [`Decision`] (with rule, evidence and
//! rationale), the plan to apply and the ledger entries out. No I/O: the binary reads the policy
//! file and hands its text to [`Policy::from_toml`].
//!
//! A [`Policy`] is the repository's policy file (`.driftback/policy.toml`; format in
//! `docs/policy.md`) followed by the built-in safe defaults ([`Policy::defaults`]): reconcile
//! ordinary changes, escalate security-weakening ones, leave fields that well-known AWS services own
//! to those services, and escalate changes to VPC, IAM and network-boundary fields. Rules match a
//! field by resource type, address, attribute path, actor, intent, motivation, kind of change and
//! API; the strictest matching decision wins (reconcile < ignore_changes < revert < escalate). Two
//! actors setting one field back and forth within the window is an oscillation ([`find_oscillation`]),
//! escalated instead of reconciled again.

mod baseline;
mod change;
mod decision;
pub mod defaults;
mod file;
mod kind;
mod ledger;
mod own;
mod policy;
mod rule;
mod security;
mod split;

pub use baseline::{Accept, Weakening, fleet_peer, weakenings};
pub use change::{ChangeKind, FieldChange, field_changes, path_text};
pub use decision::{Decision, DecisionKind, FieldDecision, RuleMatch, Split, SplitField};
pub use file::PolicyError;
pub use ledger::{LedgerEntry, Oscillation, find_oscillation};
pub use own::{MAX_OWN_CHARS, OwnError, add_ownership_rule, valid_actor, valid_field};
pub use policy::{DEFAULT_OSCILLATION_WINDOW_SECS, DecideInput, Decided, ExampleResult, NO_PLAN, Policy};
pub use rule::{Effect, Example, Matcher, Rule};
pub use security::{SecurityCheck, SecurityCondition, SecurityExample, SecurityTable, security_weakening};

#[cfg(test)]
mod tests;
