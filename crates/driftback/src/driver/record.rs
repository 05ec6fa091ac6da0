//! What the knowledge base keeps of a driven change set: its row, the decision with its evidence
//! in the audit log, the field changes in the ownership ledger with each field's owner, and the
//! agent's transcript and tokens when the agent worked on it.

use serde::Serialize;

use driftback_events::ChangeSet;
use driftback_store::{ChangeSetRecord, DecisionRecord, FieldChangeRecord, ReconciliationRecord, Store};

use super::outcome::{AgentReport, Outcome, Scope, Status, scoped};

/// The change set's row. The decision is not in it: it goes to the audit log with its evidence
/// ([`decision_and_ledger`]), so the row does not log it a second time without.
pub fn change_set_record(change_set: &ChangeSet, outcome: &Outcome) -> ChangeSetRecord {
    ChangeSetRecord {
        id: change_set.id.clone(),
        resource_id: change_set.resource_id.clone(),
        address: outcome.addresses.first().cloned(),
        actor: change_set.actor.display_name.clone(),
        via: change_set.actor.via.as_str().to_string(),
        first_event_time: change_set.first_time(),
        last_event_time: change_set.last_time(),
        event_ids: change_set.events.iter().map(|e| e.id.clone()).collect(),
        // `reconciled`, `no-change`, `revert` or `escalated`; `dry-run` is set by the driver.
        status: outcome.status.label().to_string(),
        decision: None,
        rule: outcome.decision.as_ref().map(|d| d.rule.clone()),
        rationale: match &outcome.status {
            Status::Escalated(r) | Status::Revert(r) => Some(r.clone()),
            _ => outcome.decision.as_ref().map(|d| d.rationale.clone()),
        },
        branch: None,
        commit_id: None,
        diff: None,
        notes: outcome.notes.clone(),
        stack: outcome.scope.as_ref().map(|s| s.stack.clone()),
        workspace: outcome.scope.as_ref().map(|s| s.workspace.clone()),
        state_version: outcome.scope.as_ref().and_then(|s| s.state_version.clone()),
    }
}

/// Record the decision with its evidence in the audit log, the field changes in the ledger, and
/// each field's owner by policy.
pub async fn decision_and_ledger(store: &Store, change_set: &ChangeSet, outcome: &Outcome) -> anyhow::Result<()> {
    let Some(decision) = &outcome.decision else { return Ok(()) };
    store
        .record_decision(&DecisionRecord {
            change_set_id: change_set.id.clone(),
            kind: decision.kind.as_str().to_string(),
            rule: Some(decision.rule.clone()),
            evidence: serde_json::to_value(decision)?,
            rationale: Some(decision.rationale.clone()),
        })
        .await?;
    let changes: Vec<FieldChangeRecord> = outcome
        .ledger
        .iter()
        .map(|e| FieldChangeRecord {
            address: scoped(outcome.scope.as_ref(), &e.address),
            attribute_path: e.path.clone(),
            actor: e.actor.clone(),
            event_id: e.event_id.clone(),
            event_time: e.time,
            change_set_id: Some(e.change_set.clone()),
        })
        .collect();
    store.record_field_changes(&changes).await?;
    for f in &decision.fields {
        if let Some(path) = &f.path {
            store.set_field_owner(&scoped(outcome.scope.as_ref(), &f.address), path, &f.owner, Some(&f.rule)).await?;
        }
    }
    Ok(())
}

/// The change sets on the resource `label` names that waited for a person are resolved by `by` (its escalation
/// issue was closed, `note` says how): each gets a `resolved` row in the audit log, so `driftback
/// pending` no longer lists them.
pub async fn resolved(store: &Store, outcome: &Outcome, label: &str, by: &ChangeSet, note: &str) -> anyhow::Result<()> {
    let address = outcome.address_of(label);
    for waiting in store.waiting_for_a_person(10_000).await? {
        let same = waiting.address.as_deref() == Some(address) && Scope::of_record(&waiting) == outcome.scope;
        if !same || waiting.id == by.id {
            continue;
        }
        store
            .record_decision(&DecisionRecord {
                change_set_id: waiting.id.clone(),
                kind: RESOLVED.into(),
                rule: Some("drift-resolved".into()),
                evidence: serde_json::json!({ "by_change_set": by.id, "note": note }),
                rationale: Some(format!("resolved by change set {}: {note}", by.id)),
            })
            .await?;
    }
    Ok(())
}

/// The audit log kind of a decision that stopped waiting because the drift was resolved.
pub const RESOLVED: &str = "resolved";

/// Keep the agent's transcript and tokens, whatever the outcome, when the agent worked on the
/// change set. `record` is the change set's row, with its branch and commit.
pub async fn agent_work(
    store: &Store,
    change_set: &ChangeSet,
    outcome: &Outcome,
    record: &ChangeSetRecord,
) -> anyhow::Result<()> {
    if let Some(agent) = &outcome.agent {
        store.record_reconciliation(&reconciliation_record(change_set, outcome, agent, record)).await?;
    }
    Ok(())
}

/// The store's record of a change set the agent worked on: its transcript (as the trace), intent,
/// motivation, tokens and how it ended.
fn reconciliation_record(
    change_set: &ChangeSet,
    outcome: &Outcome,
    agent: &AgentReport,
    record: &ChangeSetRecord,
) -> ReconciliationRecord {
    ReconciliationRecord {
        change_set_id: change_set.id.clone(),
        trace_summary: serde_json::to_string(&agent.transcript).unwrap_or_default(),
        actor: change_set.actor.display_name.clone(),
        intent: agent.finish.as_ref().map(|f| label(&f.intent)).unwrap_or_else(|| "unknown".into()),
        motivation: agent.finish.as_ref().map(|f| label(&f.motivation)).unwrap_or_else(|| "unknown".into()),
        decision: outcome.decision.as_ref().map(|d| d.kind.as_str().to_string()).unwrap_or_else(|| "escalate".into()),
        patch_diff: record.diff.clone(),
        branch: record.branch.clone(),
        commit_id: record.commit_id.clone(),
        pull_request: None,
        prompt_tokens: agent.usage.prompt,
        completion_tokens: agent.usage.completion,
        model: Some(agent.model.clone()),
        duration_ms: 0,
        outcome: outcome.status.label().to_string(),
    }
}

/// The snake_case name serde gives an enum value.
fn label<T: Serialize>(value: &T) -> String {
    serde_json::to_value(value).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}
