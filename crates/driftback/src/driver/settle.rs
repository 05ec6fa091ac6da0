//! The third stage of the road: a decision on a plan becomes what is written ([`Settled`]). Pure:
//! the decided plan is applied to a copy of the repository and gated, the held edit of a decision
//! that waits for a person is shown, and a person's `/driftback own` adds its policy rule. Each
//! step returns a new value; none changes what an earlier one settled.

use driftback_policy::{Decided, Decision, DecisionKind};
use driftback_recipes::Plan;
use driftback_terraform::Repo;

use super::field_changes;
use super::outcome::{self, HeldPart, Settled, Status};
use super::patch;
use super::person::{self, Answer, PersonDecision};
use super::plan::Planned;
use super::security;
use super::session;
use super::workspace::Workspace;

/// The status of a decision that waits for a person: `revert` or `escalate`, with its rationale.
fn waiting(decision: &Decision) -> Status {
    match decision.kind {
        DecisionKind::Revert => Status::Revert(decision.rationale.clone()),
        _ => Status::Escalated(decision.rationale.clone()),
    }
}

/// What `decided` (made on `planned`) writes into `workspace`'s code, and the repository with the
/// patch applied when there is one. `person`: the answer that decided it, whose `/driftback own`
/// also writes the policy file.
/// `siblings`: the same session's change sets whose changes the plan makes alongside; those the
/// written edit changes too are named in the notes, and their ids returned.
pub fn settle(
    planned: &Planned,
    decided: &Decided,
    workspace: &Workspace,
    person: Option<&PersonDecision>,
    siblings: &[session::Sibling],
) -> (Settled, Option<Repo>, Vec<String>) {
    let (settled, after) = settle_decision(planned, decided, workspace);
    let settled = match person {
        Some(PersonDecision { answer: Answer::Own { field, actor }, user, thread }) => {
            own_in_policy(settled, workspace, field, actor, &format!("{user} answered in #{thread}"))
        }
        _ => settled,
    };
    let Some(after) = after else { return (settled, None, Vec::new()) };
    let (notes, written_with) = siblings_written(siblings, &workspace.repo, &after);
    let settled =
        if notes.is_empty() { settled } else { Settled { notes: [settled.notes, notes].concat(), ..settled } };
    (settled, Some(after), written_with)
}

/// Which siblings' resources the written edit changed too: a note for each, and their change
/// sets' ids.
fn siblings_written(siblings: &[session::Sibling], before: &Repo, after: &Repo) -> (Vec<String>, Vec<String>) {
    let mut notes = Vec::new();
    let mut written_for = Vec::new();
    for sibling in siblings {
        let changed: Vec<String> = sibling
            .addresses
            .iter()
            .filter(|a| {
                driftback_terraform::eval::effective_config(before, a)
                    != driftback_terraform::eval::effective_config(after, a)
            })
            .map(|a| a.to_string())
            .collect();
        if !changed.is_empty() {
            notes.push(format!(
                "the edit also makes change set {} of the same session, on {}: they share the value's origin",
                sibling.id,
                changed.join(", ")
            ));
            written_for.push(sibling.id.clone());
        }
    }
    (notes, written_for)
}

fn settle_decision(planned: &Planned, decided: &Decided, workspace: &Workspace) -> (Settled, Option<Repo>) {
    let decision = &decided.decision;
    let plan = match &planned.plan {
        Ok(plan) => plan,
        // Whatever the policy says, nothing can be written without a plan.
        Err(reason) => {
            return (
                Settled { status: waiting(decision), plan_error: Some(reason.to_string()), ..Settled::default() },
                None,
            );
        }
    };
    let mut notes = Vec::new();
    if planned.by_agent {
        notes.push("planned by the LLM agent".to_string());
    }
    notes.extend(plan.notes.clone());
    let named = Settled {
        addresses: plan.changes.iter().map(|c| c.address.to_string()).collect(),
        recipes: plan.changes.iter().flat_map(|c| c.recipes.clone()).collect(),
        ..Settled::default()
    };
    match (decision.kind, &decision.split) {
        (DecisionKind::Escalate | DecisionKind::Revert, None) => {
            let shown = show_held(&decided.held, workspace);
            notes.extend(shown.notes);
            let status = if shown.writes_nothing && decision.kind == DecisionKind::Escalate {
                // Nothing for a person to decide: the cloud says what the code says again. (A
                // revert is kept: it may undo a change an open pull request codifies, which the
                // reviewer should hear of.)
                Status::NoChange
            } else {
                waiting(decision)
            };
            let settled = Settled {
                status,
                notes,
                field_changes: shown.field_changes,
                held_diff: shown.diff,
                held_files: shown.files,
                ..named
            };
            (settled, None)
        }
        // Split: the held part is shown as an escalation is, and the independent fields are
        // written like a reconciliation.
        (DecisionKind::Escalate | DecisionKind::Revert, Some(split)) => {
            let shown = show_held(&decided.held, workspace);
            notes.push(split.describe());
            notes.extend(shown.notes);
            for f in decision.fields.iter().filter(|f| f.rule == driftback_policy::defaults::SECRET_VALUE) {
                notes.push(format!(
                    "accepting cannot write `{}` of {}: its value is hidden by CloudTrail or is a secret, and a redacted \
                     value can never be written; set it where the secret lives (a secret store, a variable), or say who \
                     owns it with `/driftback own {} by <actor>`",
                    f.path.as_deref().unwrap_or_default(),
                    f.address,
                    f.path.as_deref().unwrap_or_default(),
                ));
            }
            let written = write(&decided.plan, workspace, decision.rule == person::PERSON_RULE);
            notes.extend(written.notes);
            let settled = Settled { notes, created: written.created, ..named };
            let settled = match written.result {
                // The independent fields are written; the rest waits for a person.
                Ok(applied) if !applied.files.is_empty() => Settled {
                    status: Status::Reconciled,
                    files: applied.files,
                    edits: applied.edits,
                    field_changes: written.field_changes,
                    held_diff: shown.diff,
                    held_files: shown.files,
                    held: Some(HeldPart { status: waiting(decision), field_changes: shown.field_changes }),
                    ..settled
                },
                // The written part changes nothing: the change set waits as a whole.
                Ok(applied) => Settled {
                    status: waiting(decision),
                    edits: applied.edits,
                    field_changes: shown.field_changes,
                    held_diff: shown.diff,
                    held_files: shown.files,
                    ..settled
                },
                // The written part cannot be written: the change set waits as a whole, saying why
                // (no held edit is offered beside a patch that failed).
                Err(refused) => Settled { status: refused, field_changes: written.field_changes, ..settled },
            };
            (settled, written.after)
        }
        (DecisionKind::Reconcile | DecisionKind::IgnoreChanges, _) => {
            // A person's answer decided it: the security gate is theirs to pass.
            let written = write(&decided.plan, workspace, decision.rule == person::PERSON_RULE);
            notes.extend(written.notes);
            let settled = Settled { notes, created: written.created, field_changes: written.field_changes, ..named };
            let settled = match written.result {
                Ok(applied) => Settled {
                    status: if applied.files.is_empty() { Status::NoChange } else { Status::Reconciled },
                    files: applied.files,
                    edits: applied.edits,
                    ..settled
                },
                Err(refused) => Settled { status: refused, ..settled },
            };
            (settled, written.after)
        }
    }
}

/// The decided plan applied on a copy and gated.
struct Write {
    /// The files and the number of edits; `Err`: why the patch is not written.
    result: Result<patch::Patched, Status>,
    /// The patch engine's notes, when the patch is written.
    notes: Vec<String>,
    created: Vec<(driftback_terraform::Address, serde_json::Map<String, serde_json::Value>)>,
    field_changes: Vec<field_changes::PlannedFieldChange>,
    /// The repository with the patch applied, when it passed every check.
    after: Option<Repo>,
}

/// Apply the decided plan on a copy and gate it: redacted values, the provider's schema and
/// Terraform's rules, and (unless a person decided) the security baseline.
fn write(decided: &Plan, workspace: &Workspace, by_person: bool) -> Write {
    let mut written = Write {
        result: Ok(patch::Patched::default()),
        notes: Vec::new(),
        created: Vec::new(),
        field_changes: Vec::new(),
        after: None,
    };
    if decided.is_empty() {
        return written;
    }
    written.created = patch::created_resources(decided);
    written.field_changes = field_changes::planned_changes(decided, &workspace.state, &workspace.repo);
    written.result = match patch::apply(&workspace.repo, decided) {
        Ok(mut patched) => {
            let after = patch::with_files(&workspace.repo, &patched.files);
            match refusal(&patched, &after, workspace, by_person) {
                Some(reason) => Err(Status::Escalated(reason)),
                None => {
                    written.after = Some(after);
                    written.notes = std::mem::take(&mut patched.notes);
                    Ok(patched)
                }
            }
        }
        Err(reason) => Err(Status::Escalated(reason)),
    };
    written
}

/// Why an applied patch is not written, when it is not.
fn refusal(patched: &patch::Patched, after: &Repo, workspace: &Workspace, by_person: bool) -> Option<String> {
    if patched.files.iter().any(|(_, text)| text.contains(outcome::REDACTED)) {
        return Some("the patch would write a value CloudTrail redacted".into());
    }
    // Fail closed: what the patch adds must exist on its resource type in the provider, and must
    // not take over what separate resources manage.
    let problems = patch::gate(&workspace.repo, &patched.files, workspace.schema);
    if !problems.is_empty() {
        return Some(format!(
            "the patch is not written: it fails the checks made before a commit (AWS provider {} schema, Terraform's rules): {}",
            workspace.schema.provider_version(),
            problems.join("; ")
        ));
    }
    // Fail closed on security too: whatever road the edit came by, the code it writes must not
    // weaken a control the policy did not hold or accept.
    if workspace.policy.judges_security() && !by_person {
        let weakened =
            security::weakenings(&workspace.repo, after, &workspace.state, workspace.schema, &workspace.policy.accepts);
        if !weakened.is_empty() {
            return Some(format!(
                "the patch is not written: the code it writes weakens security controls, and a person decides whether \
                 the security floor is lowered: {}",
                weakened.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
            ));
        }
    }
    None
}

/// What accepting a decision that waits for a person would write, computed on a copy and never
/// committed.
#[derive(Default)]
struct Shown {
    field_changes: Vec<field_changes::PlannedFieldChange>,
    /// The unified diff of the held edit.
    diff: Option<String>,
    /// The held edit's files, when they pass the gate a reconciled patch passes.
    files: Vec<(std::path::PathBuf, String)>,
    /// Why there is no held edit to show or commit, when there is none.
    notes: Vec<String>,
    /// Accepting would change nothing: the code on the base already says what the cloud says
    /// (the drifted value returned).
    writes_nothing: bool,
}

/// For a decision that waits for a person: what accepting would write (the field changes and the
/// diff of the held edit).
fn show_held(held: &Plan, workspace: &Workspace) -> Shown {
    if held.is_empty() {
        return Shown::default();
    }
    let mut shown = Shown {
        field_changes: field_changes::planned_changes(held, &workspace.state, &workspace.repo),
        ..Shown::default()
    };
    match patch::apply(&workspace.repo, held) {
        Ok(patched) if patched.files.iter().any(|(_, text)| text.contains(outcome::REDACTED)) => {
            shown
                .notes
                .push("accepting cannot be written as it stands: it would write a value CloudTrail redacted".into());
        }
        Ok(patched) if patched.files.is_empty() => {
            shown.notes.push("the code already says what the cloud says: accepting would write nothing".into());
            shown.writes_nothing = true;
        }
        Ok(patched) => {
            let files: Vec<(&std::path::Path, Option<&str>, &str)> = patched
                .files
                .iter()
                .map(|(path, text)| (path.as_path(), workspace.repo.text(path), text.as_str()))
                .collect();
            match driftback_publish::unified_diff(&files) {
                Ok(diff) => shown.diff = Some(diff),
                Err(e) => tracing::warn!(error = %e, "the held edit's diff could not be made"),
            }
            // Committed into a held draft only when it passes the gate a reconciled patch passes.
            let problems = patch::gate(&workspace.repo, &patched.files, workspace.schema);
            if problems.is_empty() && shown.diff.is_some() {
                shown.files = patched.files;
            } else if !problems.is_empty() {
                shown.notes.push(format!(
                    "accepting cannot be written as it stands: it fails the checks made before a commit (AWS \
                     provider {} schema, Terraform's rules): {}",
                    workspace.schema.provider_version(),
                    problems.join("; ")
                ));
            }
        }
        Err(reason) => shown.notes.push(format!("accepting cannot be written as it stands: {reason}")),
    }
    shown
}

/// A person's `/driftback own`: the policy file gains the rule that `actor` owns `field` of the
/// change set's resource, next to the `lifecycle { ignore_changes }` edit. The file is checked by
/// loading it; when it cannot take the rule (or the resource or the file is unknown) nothing is
/// written and the change set is escalated saying why.
fn own_in_policy(settled: Settled, workspace: &Workspace, field: &str, actor: &str, why: &str) -> Settled {
    if matches!(settled.status, Status::Escalated(_) | Status::Revert(_)) {
        return settled;
    }
    let refuse = |settled: Settled, reason: String| Settled {
        status: Status::Escalated(reason),
        files: Vec::new(),
        extra_files: Vec::new(),
        ..settled
    };
    let Some(address) = settled.addresses.first().cloned() else {
        return refuse(settled, "the change set names no resource of this repository to own a field of".into());
    };
    let Some((on_disk, in_repo)) = &workspace.policy_file else {
        return refuse(settled, "the policy file is configured outside the repository ([policy] file)".into());
    };
    let text = match std::fs::read_to_string(on_disk) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return refuse(settled, format!("cannot read the policy file {}: {e}", on_disk.display())),
    };
    let bare = driftback_terraform::Address::parse(&address).map(|a| a.without_key().to_string()).unwrap_or(address);
    match driftback_policy::add_ownership_rule(&text, &in_repo.display().to_string(), &bare, field, actor, why) {
        Ok(edited) => {
            let mut extra_files = settled.extra_files.clone();
            extra_files.push((in_repo.clone(), edited));
            let mut notes = settled.notes.clone();
            notes.push(format!("the policy file {} gains a rule: {actor} owns {field}", in_repo.display()));
            Settled { status: Status::Reconciled, extra_files, notes, ..settled }
        }
        Err(e) => refuse(settled, format!("{e}")),
    }
}
