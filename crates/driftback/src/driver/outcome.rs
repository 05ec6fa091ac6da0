//! The values the stages of the road make, and what became of one change set:
//!
//! ```text
//! Planned -> Decided -> Settled -> Checked -> Outcome
//! ```
//!
//! `Planned` (`plan.rs`): the plan, or why there is none. `Decided`
//! ([`driftback_policy::Decided`], or a person's answer in its place): the decision on it.
//! [`Settled`]: what the decision writes, the patch applied and gated. [`Checked`]: the patch
//! checked after it is made, or demoted with the reason. [`Outcome`]: what every command reads,
//! made once from them ([`Outcome::new`]) and never changed after. Each stage is a function of
//! the one before; none changes an earlier one. No stage logic lives here.

use std::path::PathBuf;

use serde::Serialize;
use serde_json::Value;

use driftback_agent::{Finish, TokenUsage};
use driftback_events::ChangeSet;
use driftback_policy::{Decision, LedgerEntry};
use driftback_terraform::{Address, State};

use super::field_changes::PlannedFieldChange;

/// What CloudTrail writes in place of a sensitive parameter: never a value to write or show.
pub const REDACTED: &str = "HIDDEN_DUE_TO_SECURITY_REASONS";

/// The third stage: what a decision writes into the code (`settle` in `settle.rs`). The decided plan
/// applied on a copy and gated, or, for a decision that waits for a person, the held edit shown.
#[derive(Debug, Clone, Default)]
pub struct Settled {
    pub status: Status,
    /// The resources the plan touches.
    pub addresses: Vec<String>,
    pub recipes: Vec<String>,
    /// Why the change set could not be planned, when it could not.
    pub plan_error: Option<String>,
    pub notes: Vec<String>,
    /// New contents of the files the patch changes.
    pub files: Vec<(PathBuf, String)>,
    pub edits: usize,
    /// Resources adopted: address and the attributes the state will know them by.
    pub created: Vec<(Address, serde_json::Map<String, Value>)>,
    /// The field changes the plan makes; for `revert` and `escalate`, those the held edit would.
    pub field_changes: Vec<PlannedFieldChange>,
    /// For `revert` and `escalate`: the unified diff of the held edit.
    pub held_diff: Option<String>,
    /// The held edit's files, when they may be committed as a held draft.
    pub held_files: Vec<(PathBuf, String)>,
    /// Files written besides the plan's edits (a person's `/driftback own`: the policy file).
    pub extra_files: Vec<(PathBuf, String)>,
    /// The part of a split change set that waits for a person, when its other part is written.
    pub held: Option<HeldPart>,
}

/// The fourth stage: the settled patch checked after it is made (a learned recipe's result
/// validated against the calls) and learned from (`Planner::after_patch` in `plan.rs`). A patch that
/// fails the check is not changed: it is demoted, with the reason.
#[derive(Debug, Clone)]
pub struct Checked {
    pub settled: Settled,
    /// What checking and learning add: the validation's proofs, the recipe learned.
    pub notes: Vec<String>,
    /// Why the settled patch is not written after all: the change set is escalated with this.
    pub demoted: Option<String>,
}

impl Checked {
    /// The settled patch, with nothing to check.
    pub fn unchecked(settled: Settled) -> Checked {
        Checked { settled, notes: Vec::new(), demoted: None }
    }

    /// The status the change set ends with: the settled one, or escalated by the demotion.
    pub fn status(&self) -> Status {
        match &self.demoted {
            Some(reason) => Status::Escalated(reason.clone()),
            None => self.settled.status.clone(),
        }
    }
}

/// What the road knows of a change set before it plans: where it is decided and who answered.
#[derive(Debug, Clone, Default)]
pub struct Ground {
    /// Notes that come before the plan's (why a stack adopted the resource).
    pub notes: Vec<String>,
    pub scope: Option<Scope>,
    /// Who answered, when a person's answer decided (`maria in #12`).
    pub answered_by: Option<String>,
}

/// What became of one change set: made once from the stages ([`Outcome::new`]) and read by every
/// command, the delivery and the records.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Outcome {
    pub status: Status,
    /// The resources it touched (or would have).
    pub addresses: Vec<String>,
    pub decision: Option<Decision>,
    /// Why the change set could not be planned, when it could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan_error: Option<String>,
    /// New contents of the files it changed.
    #[serde(skip)]
    pub files: Vec<(PathBuf, String)>,
    pub notes: Vec<String>,
    pub recipes: Vec<String>,
    pub edits: usize,
    /// Resources adopted: address and the attributes the state will know them by.
    #[serde(skip)]
    pub created: Vec<(Address, serde_json::Map<String, Value>)>,
    /// Field changes for the ownership ledger (history for oscillation detection).
    #[serde(skip)]
    pub ledger: Vec<LedgerEntry>,
    /// What the LLM agent did, when it planned (or tried to plan) this change set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<AgentReport>,
    /// The field changes the plan makes (value before and after), for titles and commit summaries;
    /// for `revert` and `escalate`, those the held edit would make.
    #[serde(skip)]
    pub field_changes: Vec<PlannedFieldChange>,
    /// For `revert` and `escalate`: the unified diff of the edit accepting would write, computed
    /// and never committed (the person sees it in the escalation issue).
    #[serde(skip)]
    pub held_diff: Option<String>,
    /// The held edit's files when they may be committed as a reconciled patch may (applied, no
    /// redacted value, through the gate): with pull requests on, published as the resource's held
    /// draft pull request instead of an issue. Empty when the edit cannot be written.
    #[serde(skip)]
    pub held_files: Vec<(PathBuf, String)>,
    /// Files written besides the plan's edits (the policy file a person's `/driftback own`
    /// changes): committed with them, on the resource's pull request branch too.
    #[serde(skip)]
    pub extra_files: Vec<(PathBuf, String)>,
    /// Who answered, when this outcome carries a person's decision (`maria in #12`): it is a new
    /// commit even when the change set was committed before.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answered_by: Option<String>,
    /// Where it was decided in a repository of many root modules: the stack, the workspace and
    /// the state's version. Names its branch, its pull request and its row.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<Scope>,
    /// A split decision (`decision.split`) whose independent fields were written (status
    /// `Reconciled`): the part that waits for a person, published as the resource's escalation
    /// issue beside the pull request. `None` when nothing is split.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held: Option<HeldPart>,
}

/// The part of a split change set that waits for a person.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HeldPart {
    /// `Escalated` or `Revert`, with the decision's rationale.
    pub status: Status,
    /// The field changes accepting would make (the held edit's), for the issue's table.
    #[serde(skip)]
    pub field_changes: Vec<PlannedFieldChange>,
}

/// One workspace of one stack, and the version of its state a change set was decided against.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Scope {
    pub stack: String,
    pub workspace: String,
    pub state_version: Option<String>,
}

impl Scope {
    /// How a resource of this workspace is named where resources of every stack meet (pull
    /// request titles, escalation issues, the store's pull request per resource): the same
    /// address in two workspaces is two resources.
    pub fn label(&self, address: &str) -> String {
        format!("{address} in {} ({})", self.stack, self.workspace)
    }

    /// The scope a change set's row records (`None`: one root module and its state file).
    pub fn of_record(record: &driftback_store::ChangeSetRecord) -> Option<Scope> {
        Some(Scope {
            stack: record.stack.clone()?,
            workspace: record.workspace.clone()?,
            state_version: record.state_version.clone(),
        })
    }
}

/// How `address` of the workspace `scope` is named in the ownership ledger and wherever resources
/// of every stack meet: [`Scope::label`], or the address itself without a scope.
pub fn scoped(scope: Option<&Scope>, address: &str) -> String {
    match scope {
        Some(scope) => scope.label(address),
        None => address.to_string(),
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "status", content = "reason")]
pub enum Status {
    /// Written into the code.
    Reconciled,
    /// Nothing to change (the code already says it, or it is a provider default).
    #[default]
    NoChange,
    /// Not codified: the next apply reverts it.
    Revert(String),
    /// A person decides.
    Escalated(String),
}

impl Status {
    pub fn label(&self) -> &'static str {
        match self {
            Status::Reconciled => "reconciled",
            Status::NoChange => "no-change",
            Status::Revert(_) => "revert",
            Status::Escalated(_) => "escalated",
        }
    }
}

impl Outcome {
    /// The outcome of the stages: `ground`, the agent's work (`Planned::agent`), the decision with
    /// its ledger entries (`Decided`), and the checked patch.
    pub fn new(
        ground: Ground,
        agent: Option<AgentReport>,
        decision: Decision,
        ledger: Vec<LedgerEntry>,
        checked: Checked,
    ) -> Outcome {
        let status = checked.status();
        let Checked { settled, notes: checked_notes, demoted } = checked;
        let mut notes = ground.notes;
        notes.extend(settled.notes);
        notes.extend(checked_notes);
        let (files, edits) = match demoted {
            Some(_) => (Vec::new(), 0),
            None => (settled.files, settled.edits),
        };
        Outcome {
            status,
            addresses: settled.addresses,
            decision: Some(decision),
            plan_error: settled.plan_error,
            files,
            notes,
            recipes: settled.recipes,
            edits,
            created: settled.created,
            ledger,
            agent,
            field_changes: settled.field_changes,
            held_diff: settled.held_diff,
            held_files: settled.held_files,
            extra_files: settled.extra_files,
            answered_by: ground.answered_by,
            scope: ground.scope,
            held: settled.held,
        }
    }

    /// The outcome told with other field changes (the values before on a pull request's branch).
    pub fn with_field_changes(&self, field_changes: Vec<PlannedFieldChange>) -> Outcome {
        Outcome { field_changes, ..self.clone() }
    }

    /// What the change set is called in branch names, summaries and pull requests: the first
    /// resource address it touched, else the one resource its calls target (`targets`: of the
    /// types the recipes for them change, so never a namesake of another type), else, when no
    /// resource of those types is found (or no recipe says which types), the one instance the
    /// state knows by its identifier (an `aws_default_security_group` that the rule calls' recipes
    /// do not name), else the cloud identifier, else the change set id. In a workspace of a
    /// stack, the name says which ([`Scope::label`]).
    pub fn label(&self, change_set: &ChangeSet, state: &State, targets: Option<&[Address]>) -> String {
        scoped(self.scope.as_ref(), &self.bare_label(change_set, state, targets))
    }

    fn bare_label(&self, change_set: &ChangeSet, state: &State, targets: Option<&[Address]>) -> String {
        if let Some(address) = self.addresses.first() {
            return address.clone();
        }
        if let Some([one]) = targets {
            return one.to_string();
        }
        let Some(id) = &change_set.resource_id else { return change_set.id.clone() };
        if targets.is_some_and(|t| t.len() > 1) {
            return id.clone();
        }
        match state.find(id, &[], &[]).as_slice() {
            [one] => one.address.to_string(),
            _ => id.clone(),
        }
    }

    /// The address a [`Outcome::label`] names (the label without its stack and workspace).
    pub fn address_of<'a>(&self, label: &'a str) -> &'a str {
        match &self.scope {
            Some(scope) => label.strip_suffix(&scope.label("")).unwrap_or(label),
            None => label,
        }
    }

    /// For a split change set: the outcome as the escalation issue tells it (the held part's
    /// status, field changes and fields; nothing written). `None` when nothing is split.
    pub fn held_view(&self) -> Option<Outcome> {
        let held = self.held.as_ref()?;
        // What the view says is the held part's; its files stay the held edit's.
        let decision = self.decision.as_ref().map(|decision| {
            let waiting: Vec<(&str, &str)> =
                decision.split.iter().flat_map(|s| &s.held).map(|f| (f.address.as_str(), f.path.as_str())).collect();
            let fields = decision
                .fields
                .iter()
                .filter(|f| waiting.iter().any(|(a, p)| *a == f.address && Some(*p) == f.path.as_deref()))
                .cloned()
                .collect();
            Decision { fields, ..decision.clone() }
        });
        Some(Outcome {
            status: held.status.clone(),
            field_changes: held.field_changes.clone(),
            files: Vec::new(),
            extra_files: Vec::new(),
            held: None,
            decision,
            ..self.clone()
        })
    }

    /// Whether this outcome is a person's `/driftback accept` (their decision, `reconcile`): what
    /// it writes goes onto the resource's held draft when there is one.
    pub fn accepts_held(&self) -> bool {
        self.answered_by.is_some()
            && self.decision.as_ref().is_some_and(|d| d.kind == driftback_policy::DecisionKind::Reconcile)
    }

    /// The LLM tokens this change set cost.
    pub fn tokens(&self) -> u64 {
        self.agent.as_ref().map(|a| a.usage.total()).unwrap_or(0)
    }
}

/// What the agent did for one change set: kept with the outcome, for eval and the store.
#[derive(Debug, Clone, Serialize)]
pub struct AgentReport {
    pub model: String,
    pub usage: TokenUsage,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finish: Option<Finish>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub escalation: Option<String>,
    /// Every message exchanged, the last one saying how it ended.
    #[serde(skip)]
    pub transcript: Vec<Value>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decision() -> Decision {
        serde_json::from_value(serde_json::json!({
            "kind": "reconcile", "rule": "default:reconcile", "rationale": "the code follows the cloud"
        }))
        .expect("a decision")
    }

    fn written() -> Settled {
        Settled {
            status: Status::Reconciled,
            addresses: vec!["aws_instance.web".into()],
            recipes: vec!["learned-ec2-x".into()],
            notes: vec!["planned".into()],
            files: vec![(PathBuf::from("main.tf"), "resource \"aws_instance\" \"web\" {}\n".into())],
            edits: 1,
            ..Settled::default()
        }
    }

    fn ground() -> Ground {
        Ground { notes: vec!["adopted".into()], ..Ground::default() }
    }

    #[test]
    fn a_demoted_patch_is_escalated_with_its_reason_and_writes_nothing() {
        let settled = written();
        let checked = Checked {
            settled: settled.clone(),
            notes: vec!["proof: x".into()],
            demoted: Some("the learned recipe does not validate".into()),
        };
        assert_eq!(checked.status(), Status::Escalated("the learned recipe does not validate".into()));
        // The settled stage is not changed by the demotion.
        assert_eq!(checked.settled.status, Status::Reconciled);
        let outcome = Outcome::new(ground(), None, decision(), Vec::new(), checked);
        assert_eq!(outcome.status, Status::Escalated("the learned recipe does not validate".into()));
        assert!(outcome.files.is_empty());
        assert_eq!(outcome.edits, 0);
        assert_eq!(outcome.notes, ["adopted", "planned", "proof: x"]);
        assert_eq!(outcome.addresses, settled.addresses);
    }

    #[test]
    fn a_kept_patch_is_the_settled_one() {
        let outcome = Outcome::new(ground(), None, decision(), Vec::new(), Checked::unchecked(written()));
        assert_eq!(outcome.status, Status::Reconciled);
        assert_eq!(outcome.files.len(), 1);
        assert_eq!(outcome.edits, 1);
        assert_eq!(outcome.notes, ["adopted", "planned"]);
        assert_eq!(outcome.decision.as_ref().map(|d| d.rule.as_str()), Some("default:reconcile"));
    }

    use driftback_events::{GroupConfig, group, normalize};
    use serde_json::json;

    /// A ModifyDBInstance on `orders`, and a state where the DB parameter group of the same name is
    /// the only instance whose `id` is `orders` (the instance's `id` is its resource id).
    fn namesakes() -> (ChangeSet, State) {
        let event = normalize(&json!({
            "eventID": "e1", "eventTime": "2026-11-27T11:40:51Z", "eventSource": "rds.amazonaws.com",
            "eventName": "ModifyDBInstance",
            "userIdentity": {"type": "IAMUser", "arn": "arn:aws:iam::123456789012:user/alice", "userName": "alice"},
            "requestParameters": {"dBInstanceIdentifier": "orders", "cACertificateIdentifier": "rds-ca-ecc384-g1"}
        }))
        .unwrap();
        let change_set = group(vec![event], &GroupConfig::default()).remove(0);
        let state = json!({"version": 4, "terraform_version": "1.9.5", "serial": 1, "lineage": "x", "outputs": {},
        "resources": [
            {"mode": "managed", "type": "aws_db_parameter_group", "name": "orders",
             "instances": [{"attributes": {"id": "orders", "name": "orders"}}]},
            {"mode": "managed", "type": "aws_db_instance", "name": "orders",
             "instances": [{"attributes": {"id": "db-ABCDEFGHIJ", "identifier": "orders"}}]}
        ]});
        (change_set, State::parse(&state.to_string(), "terraform.tfstate").unwrap())
    }

    #[test]
    fn an_unplanned_change_set_is_filed_under_its_target_never_a_namesake() {
        let (change_set, state) = namesakes();
        let outcome = Outcome::default();
        let instance = Address::parse("aws_db_instance.orders").unwrap();
        assert_eq!(outcome.label(&change_set, &state, Some(std::slice::from_ref(&instance))), "aws_db_instance.orders");
        // Several resources of the calls' types match: the identifier, not one of them.
        let two = [instance.clone(), Address::parse("aws_db_instance.other").unwrap()];
        assert_eq!(outcome.label(&change_set, &state, Some(&two)), "orders");
        // Nothing says which types the calls change: the one instance the state knows by the id.
        assert_eq!(outcome.label(&change_set, &state, None), "aws_db_parameter_group.orders");
        // A planned change names its own address first.
        let planned = Outcome { addresses: vec!["aws_db_instance.orders".into()], ..Outcome::default() };
        assert_eq!(planned.label(&change_set, &state, Some(&[])), "aws_db_instance.orders");
    }
}
