//! One change set through plan -> decide -> patch -> validate, on a repository held in memory.

use std::path::PathBuf;

use driftback_events::ChangeSet;
use driftback_policy::{DecideInput, Decision, DecisionKind, LedgerEntry, Policy};
use driftback_recipes::{Catalog, Plan, PlanError};
use driftback_terraform::{Repo, State, StateInstance};
use serde::Serialize;

/// What became of one change set.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    pub status: Status,
    /// The resources it touched (or would have).
    pub addresses: Vec<String>,
    pub decision: Option<Decision>,
    /// New contents of the files it changed.
    #[serde(skip)]
    pub files: Vec<(PathBuf, String)>,
    pub notes: Vec<String>,
    pub recipes: Vec<String>,
    pub edits: usize,
    /// Resources adopted: address and the attributes the state will know them by.
    #[serde(skip)]
    pub created: Vec<(driftback_terraform::Address, serde_json::Map<String, serde_json::Value>)>,
    /// Field changes for the ownership ledger (history for oscillation detection).
    #[serde(skip)]
    pub ledger: Vec<LedgerEntry>,
    /// What the LLM agent did, when it planned (or tried to plan) this change set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<crate::agent_glue::AgentReport>,
    /// The field changes the plan makes (value before and after), for titles and commit summaries.
    #[serde(skip)]
    pub field_changes: Vec<crate::field_changes::PlannedFieldChange>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "status", content = "reason")]
pub enum Status {
    /// Written into the code.
    Reconciled,
    /// Nothing to change (the code already says it, or it is a provider default).
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

/// What CloudTrail writes in place of a sensitive parameter: never a value to write or show.
pub(crate) const REDACTED: &str = "HIDDEN_DUE_TO_SECURITY_REASONS";

/// Plan, decide and patch one change set against `repo` (which is not modified). `history` is the
/// ownership ledger so far (earlier change sets and runs), for oscillation detection.
pub fn process(
    catalog: &Catalog,
    state: &State,
    repo: &Repo,
    change_set: &ChangeSet,
    policy: &Policy,
    history: &[LedgerEntry],
) -> Outcome {
    process_with(catalog, state, repo, change_set, policy, history, None)
}

/// The LLM agent's plan for a change set no recipe covers (`Err`: it escalated, with the reason).
pub type AgentFallback<'a> = &'a mut dyn FnMut(&PlanError) -> (Result<Plan, String>, crate::agent_glue::AgentReport);

/// [`process`], asking `agent` for a plan when no recipe covers the change set.
pub fn process_with(
    catalog: &Catalog,
    state: &State,
    repo: &Repo,
    change_set: &ChangeSet,
    policy: &Policy,
    history: &[LedgerEntry],
    agent: Option<AgentFallback<'_>>,
) -> Outcome {
    let mut outcome = Outcome {
        status: Status::NoChange,
        addresses: vec![],
        decision: None,
        files: vec![],
        notes: vec![],
        recipes: vec![],
        edits: 0,
        created: vec![],
        ledger: vec![],
        agent: None,
        field_changes: vec![],
    };
    let attribution = driftback_attribute::attribute(change_set, &policy.actors);
    let planned = match (driftback_recipes::plan(catalog, change_set, state, repo), agent) {
        (Ok(plan), _) => Ok(plan),
        (Err(e @ PlanError::NoRecipe { .. }), Some(agent)) => {
            let (plan, report) = agent(&e);
            outcome.agent = Some(report);
            match plan {
                Ok(plan) => {
                    outcome.notes.push("planned by the LLM agent".into());
                    Ok(plan)
                }
                Err(reason) => Err(format!("{e}; the LLM agent escalated: {reason}")),
            }
        }
        (Err(e), _) => Err(e.to_string()),
    };
    let plan_error = planned.as_ref().err().cloned();
    let plan_input = match (&planned, &plan_error) {
        (Ok(plan), _) => Ok(plan),
        (Err(_), Some(reason)) => Err(reason.as_str()),
        (Err(_), None) => Err("the change set could not be planned"),
    };
    let decided = policy.decide(&DecideInput {
        change_set,
        attribution: &attribution,
        plan: plan_input,
        repo: Some(repo),
        history,
    });
    let decision: Decision = decided.decision;
    outcome.ledger = decided.ledger;
    outcome.decision = Some(decision.clone());
    let Ok(planned) = planned else {
        // Whatever the policy says, nothing can be written without a plan.
        outcome.status = match decision.kind {
            DecisionKind::Revert => Status::Revert(decision.rationale.clone()),
            _ => Status::Escalated(decision.rationale.clone()),
        };
        return outcome;
    };
    outcome.addresses = planned.changes.iter().map(|c| c.address.to_string()).collect();
    outcome.recipes = planned.changes.iter().flat_map(|c| c.recipes.clone()).collect();
    outcome.notes.extend(planned.notes.clone());
    let plan: Plan = decided.plan;
    match decision.kind {
        DecisionKind::Escalate => {
            outcome.status = Status::Escalated(decision.rationale.clone());
            return outcome;
        }
        DecisionKind::Revert => {
            outcome.status = Status::Revert(decision.rationale.clone());
            return outcome;
        }
        DecisionKind::Reconcile | DecisionKind::IgnoreChanges => {}
    }
    if plan.is_empty() {
        return outcome;
    }
    outcome.created = created_resources(&plan);
    outcome.field_changes = crate::field_changes::planned_changes(&plan, state, repo);
    match patch(repo, &plan) {
        Ok((files, notes, edits)) => {
            if files.iter().any(|(_, text)| text.contains(REDACTED)) {
                outcome.status = Status::Escalated("the patch would write a value CloudTrail redacted".into());
                return outcome;
            }
            outcome.notes.extend(notes);
            outcome.edits = edits;
            outcome.status = if files.is_empty() { Status::NoChange } else { Status::Reconciled };
            outcome.files = files;
        }
        Err(reason) => outcome.status = Status::Escalated(reason),
    }
    outcome
}

fn created_resources(plan: &Plan) -> Vec<(driftback_terraform::Address, serde_json::Map<String, serde_json::Value>)> {
    use driftback_terraform::{AttrValue, Op};
    let mut out = Vec::new();
    for change in &plan.changes {
        for op in &change.ops {
            if let Op::CreateResource { spec, import_id } = op {
                let mut attributes = serde_json::Map::new();
                attributes.insert("id".into(), serde_json::Value::String(import_id.clone()));
                for (k, v) in &spec.attrs {
                    if let AttrValue::Literal(v) = v {
                        attributes.insert(k.clone(), v.clone());
                    }
                }
                if import_id.starts_with("arn:") {
                    attributes.insert("arn".into(), serde_json::Value::String(import_id.clone()));
                }
                out.push((change.address.clone(), attributes));
            }
        }
    }
    out
}

/// Changed files, notes, and the number of operations applied.
type Patched = (Vec<(PathBuf, String)>, Vec<String>, usize);

fn patch(repo: &Repo, plan: &Plan) -> Result<Patched, String> {
    let mut work = repo.clone();
    let mut notes = Vec::new();
    let mut touched: Vec<PathBuf> = Vec::new();
    let mut edits = 0;
    for change in &plan.changes {
        for op in &change.ops {
            let applied =
                driftback_terraform::patch::apply(&mut work, &change.address, op).map_err(|e| e.to_string())?;
            notes.extend(applied.notes);
            for file in applied.files {
                if !touched.contains(&file) {
                    touched.push(file);
                }
            }
            edits += 1;
        }
    }
    let files: Vec<(PathBuf, String)> = touched
        .into_iter()
        .filter(|f| repo.text(f) != work.text(f))
        .map(|f| {
            let text = work.text(&f).unwrap_or_default().to_string();
            (f, text)
        })
        .collect();
    for (file, text) in &files {
        driftback_terraform::edit::parse(text)
            .map_err(|e| format!("{} would not parse after the edit: {e}", file.display()))?;
    }
    Ok((files, notes, edits))
}

/// After a reconciled change set, the resources it adopted become known to the state, so later
/// change sets on them (tags added a few minutes after the creation) find them.
pub fn remember_created(state: &mut State, outcome: &Outcome) {
    if outcome.status != Status::Reconciled {
        return;
    }
    let mut instances = state.instances.clone();
    for (address, attributes) in &outcome.created {
        if state.get(address).is_none() {
            instances.push(StateInstance { address: address.clone(), attributes: attributes.clone() });
        }
    }
    *state = State::from_instances(instances);
}
