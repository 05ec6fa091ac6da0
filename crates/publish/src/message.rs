//! Commit messages: a one-line conventional summary, the story in brief, and `Drift-*` trailers
//! that tools can read back (`git log --format='%(trailers:key=Drift-Event-Id)'`).

use crate::story::Story;

/// Longest summary line; longer ones are cut with `…`.
const MAX_SUMMARY_CHARS: usize = 100;

/// The commit message for a change set:
///
/// ```text
/// drift(aws_instance.web): instance_type t3.medium -> t3.large (console, alice)
///
/// alice (console) changed aws_instance.web outside Terraform: ModifyInstanceAttribute.
///
/// Decision: reconcile (default: reconcile ordinary changes)
/// <rationale>
///
/// Drift-Change-Set: cs-...
/// Drift-Event-Id: ...
/// Drift-Actor: arn:aws:iam::123456789012:user/alice
/// Drift-Decision: reconcile
/// ```
pub fn commit_message(story: &Story) -> String {
    let summary = format!(
        "drift({}): {} ({}, {})",
        single(&story.address),
        story.summary(),
        single(&story.actor.via),
        single(&story.actor.name)
    );
    let mut message = cut(&summary, MAX_SUMMARY_CHARS);
    message.push_str("\n\n");
    let mut calls: Vec<&str> = Vec::new();
    for entry in &story.timeline {
        if !calls.contains(&entry.name.as_str()) {
            calls.push(&entry.name);
        }
    }
    message.push_str(&format!(
        "{} ({}) changed {} outside Terraform: {}.\n",
        single(&story.actor.name),
        single(&story.actor.via),
        single(&story.address),
        single(&calls.join(", "))
    ));
    for change in &story.changes {
        let before = change.before.as_deref().map(single).unwrap_or_else(|| "(not set)".into());
        let after = change.after.as_deref().map(single).unwrap_or_else(|| "(removed)".into());
        message.push_str(&format!("- {}: {before} -> {after}\n", single(&change.path)));
    }
    message.push_str(&format!(
        "\nDecision: {} ({})\n{}\n",
        single(&story.decision.kind),
        single(&story.decision.rule),
        single(&story.decision.rationale)
    ));
    for note in &story.notes {
        message.push_str(&format!("- {}\n", single(note)));
    }
    message.push('\n');
    message.push_str(&format!("Drift-Change-Set: {}\n", single(&story.change_set_id)));
    for entry in &story.timeline {
        message.push_str(&format!("Drift-Event-Id: {}\n", single(&entry.event_id)));
    }
    let actor = story.actor.principal.as_deref().unwrap_or(&story.actor.name);
    message.push_str(&format!("Drift-Actor: {}\n", single(actor)));
    message.push_str(&format!("Drift-Decision: {}\n", single(&story.decision.kind)));
    message
}

/// One line: a trailer or summary value never spans lines, whatever the event said.
fn single(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max - 1).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::story::{ActorInfo, DecisionInfo, FieldChange, TimelineEntry};

    #[test]
    fn trailers_are_single_lines_at_the_end() {
        let story = Story {
            address: "aws_instance.web".into(),
            resource_id: None,
            change_set_id: "cs-1".into(),
            changes: vec![FieldChange {
                path: "instance_type".into(),
                before: Some("t3.medium".into()),
                after: Some("t3.large".into()),
            }],
            timeline: vec![TimelineEntry {
                time: "t".into(),
                actor: "alice".into(),
                source: "ec2.amazonaws.com".into(),
                name: "ModifyInstanceAttribute".into(),
                event_id: "e-1\nDrift-Decision: injected".into(),
            }],
            actor: ActorInfo {
                name: "alice".into(),
                via: "console".into(),
                principal: Some("arn:aws:iam::123456789012:user/alice".into()),
                kind: None,
                evidence: vec![],
            },
            intent: None,
            motivation: None,
            decision: DecisionInfo { kind: "reconcile".into(), rule: "default".into(), rationale: "why".into() },
            diff: String::new(),
            notes: vec![],
            base_branch: "main".into(),
        };
        let message = commit_message(&story);
        let first = message.lines().next().unwrap();
        assert_eq!(first, "drift(aws_instance.web): instance_type t3.medium -> t3.large (console, alice)");
        let trailers: Vec<&str> = message.trim_end().rsplit("\n\n").next().unwrap().lines().collect();
        assert_eq!(
            trailers,
            [
                "Drift-Change-Set: cs-1",
                "Drift-Event-Id: e-1 Drift-Decision: injected",
                "Drift-Actor: arn:aws:iam::123456789012:user/alice",
                "Drift-Decision: reconcile",
            ]
        );
    }
}
