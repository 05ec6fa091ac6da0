//! Commit messages: a one-line conventional summary, the story in brief, and `Drift-*` trailers
//! that tools can read back (`git log --format='%(trailers:key=Drift-Event-Id)'`), as driftback
//! does with [`trailers`] and [`change_set_of`].

use crate::story::Story;

/// The trailer that ties a commit to its change set: a restarted daemon finds work it had already
/// committed by it ([`crate::GitRepo::find_committed`]).
pub const CHANGE_SET_TRAILER: &str = "Drift-Change-Set";
/// One trailer per CloudTrail event of the change set, in timeline order.
pub const EVENT_ID_TRAILER: &str = "Drift-Event-Id";
/// Who made the change: the principal's ARN when known, else the actor's name.
pub const ACTOR_TRAILER: &str = "Drift-Actor";
/// The policy's decision (`reconcile`, ...).
pub const DECISION_TRAILER: &str = "Drift-Decision";

/// Longest summary line: a longer one says less (see [`Story::summary_line`]), it never cuts a value.
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
    let mut message = story.summary_line(
        &format!("drift({}): ", single(&story.address)),
        &format!(" ({}, {})", single(&story.actor.via), single(&story.actor.name)),
        MAX_SUMMARY_CHARS,
    );
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
    if matches!(story.decision.kind.as_str(), "escalate" | "revert") {
        // Only a held draft commits a decision that waits: say so where git shows it.
        message.push_str(
            "\nHeld for a person: this commit is on a draft pull request and reaches the code only when someone \
             with write access merges it (or answers /driftback accept).\n",
        );
        let address = single(&story.address).replace('`', "");
        message.push_str(&format!(
            "To keep the code's value instead, close the draft; `terraform plan -target={address}` shows the apply \
             that restores it.\n"
        ));
    }
    message.push('\n');
    message.push_str(&format!("{CHANGE_SET_TRAILER}: {}\n", single(&story.change_set_id)));
    for entry in &story.timeline {
        message.push_str(&format!("{EVENT_ID_TRAILER}: {}\n", single(&entry.event_id)));
    }
    let actor = story.actor.principal.as_deref().unwrap_or(&story.actor.name);
    message.push_str(&format!("{ACTOR_TRAILER}: {}\n", single(actor)));
    message.push_str(&format!("{DECISION_TRAILER}: {}\n", single(&story.decision.kind)));
    message
}

/// The trailers of a commit message, in order: the lines of its last paragraph, when that paragraph
/// is not the summary and every line of it is a `Key: value` trailer (keys are letters, digits and
/// `-`; values are trimmed). A message whose last paragraph holds anything else has no trailers, so text in the body
/// can never pass for one.
pub fn trailers(message: &str) -> Vec<(&str, &str)> {
    let message = message.trim_end();
    let Some((_, last)) = message.rsplit_once("\n\n") else { return Vec::new() };
    let mut found = Vec::new();
    for line in last.lines() {
        let Some((key, value)) = line.split_once(':') else { return Vec::new() };
        if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
            return Vec::new();
        }
        found.push((key, value.trim()));
    }
    found
}

/// The change set a commit message was written for: the value of its [`CHANGE_SET_TRAILER`].
pub fn change_set_of(message: &str) -> Option<&str> {
    trailers(message).into_iter().find(|(key, _)| key.eq_ignore_ascii_case(CHANGE_SET_TRAILER)).map(|(_, value)| value)
}

/// One line: a trailer or summary value never spans lines, whatever the event said.
pub(crate) fn single(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::story::{ActorInfo, DecisionInfo, ShownChange, TimelineEntry};

    fn story() -> Story {
        Story {
            address: "aws_instance.web".into(),
            resource_id: None,
            change_set_id: "cs-1".into(),
            changes: vec![ShownChange {
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
            fields: vec![],
        }
    }

    #[test]
    fn trailers_are_single_lines_at_the_end() {
        let message = commit_message(&story());
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

    #[test]
    fn a_long_subject_says_less_and_never_cuts_a_value() {
        let subject = |story: &Story| commit_message(story).lines().next().unwrap().to_string();
        let mut story = story();
        story.changes[0] = ShownChange {
            path: "alarm_description".into(),
            before: Some("CPU above 90 percent, page on-call".into()),
            after: Some("CPU above 80 percent, page on-call".into()),
        };
        // The old value goes first, the actor stays.
        assert_eq!(
            subject(&story),
            "drift(aws_instance.web): alarm_description -> CPU above 80 percent, page on-call (console, alice)"
        );
        // Longer still: the path alone, then without the actor; never `…`.
        story.changes[0].after = Some("x".repeat(90));
        story.changes.push(story.changes[0].clone());
        assert_eq!(subject(&story), "drift(aws_instance.web): alarm_description changed and 1 more (console, alice)");
        story.actor.name = "a".repeat(80);
        assert_eq!(subject(&story), "drift(aws_instance.web): alarm_description changed and 1 more");
        // Only a line that cannot fit at all (a hostile address) is cut.
        story.address = "x".repeat(300);
        let hostile = subject(&story);
        assert_eq!(hostile.chars().count(), MAX_SUMMARY_CHARS, "{hostile}");
        assert!(hostile.ends_with('…'));
    }

    #[test]
    fn trailers_read_back_what_the_message_writes() {
        let mut story = story();
        story.timeline.push(TimelineEntry { event_id: "e-2".into(), ..story.timeline[0].clone() });
        // Body text that looks like a trailer is not one: only the last paragraph counts.
        story.decision.rationale = "Drift-Change-Set: cs-forged".into();
        story.notes = vec!["Drift-Change-Set: cs-forged".into()];
        let message = commit_message(&story);
        assert_eq!(
            trailers(&message),
            [
                (CHANGE_SET_TRAILER, "cs-1"),
                (EVENT_ID_TRAILER, "e-1 Drift-Decision: injected"),
                (EVENT_ID_TRAILER, "e-2"),
                (ACTOR_TRAILER, "arn:aws:iam::123456789012:user/alice"),
                (DECISION_TRAILER, "reconcile"),
            ]
        );
        assert_eq!(change_set_of(&message), Some("cs-1"));

        // An id with spaces or line breaks in it reads back as the one line it was written as.
        story.change_set_id = "cs-2\nDrift-Change-Set: cs-3".into();
        assert_eq!(change_set_of(&commit_message(&story)), Some("cs-2 Drift-Change-Set: cs-3"));
        // An empty value is still a trailer, and the ones after it are still read.
        story.decision.kind = String::new();
        let message = commit_message(&story);
        assert_eq!(trailers(&message).last(), Some(&(DECISION_TRAILER, "")));
        assert_eq!(change_set_of(&message), Some("cs-2 Drift-Change-Set: cs-3"));
    }

    #[test]
    fn a_message_without_a_trailer_block_has_no_trailers() {
        assert!(trailers("Drift-Change-Set: cs-1").is_empty(), "the summary is never a trailer");
        assert!(trailers("summary\n\nbody\n").is_empty());
        assert!(trailers("summary\n\nDrift-Change-Set: cs-1\nnot a trailer\n").is_empty());
        assert!(trailers("summary\n\nDrift Change Set: cs-1\n").is_empty());
        assert_eq!(change_set_of("summary\n\nDrift-Change-Set: cs-1\n\nbody after\n"), None);
        assert_eq!(change_set_of("summary\n\nbody\n\nSigned-off-by: a\ndrift-change-set:  cs-9 \n"), Some("cs-9"));
    }
}
