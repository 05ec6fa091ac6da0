//! The pull request a change set becomes: its title and a body that tells the story (what changed,
//! when and by whom, how the actor was worked out, intent and motivation, the decision and why, the
//! diff, the event ids, and how to revert instead).
//!
//! [`Story`] is a plain struct the caller fills from its own types, so this crate depends on neither
//! the events nor the policy crate. Everything in it that came from an event is escaped
//! ([`crate::markdown`]).

use serde::{Deserialize, Serialize};

use crate::markdown::{cell, code, comment_safe, fenced, text};

/// GitHub refuses bodies above 65,536 characters; the diff is cut to keep well below.
const MAX_DIFF_CHARS: usize = 30_000;
/// Timeline rows shown; the rest are counted.
const MAX_TIMELINE_ROWS: usize = 50;
const MAX_TITLE_CHARS: usize = 200;

/// Everything a pull request (and the commit) says about one change set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Story {
    /// Terraform address of the resource (`aws_instance.web`).
    pub address: String,
    /// Its cloud identifier (`i-0abc...`), when known.
    pub resource_id: Option<String>,
    pub change_set_id: String,
    /// The fields the patch changes, before and after, as displayed values.
    pub changes: Vec<ShownChange>,
    /// The change set's events, oldest first.
    pub timeline: Vec<TimelineEntry>,
    pub actor: ActorInfo,
    pub intent: Option<Reasoned>,
    pub motivation: Option<Reasoned>,
    pub decision: DecisionInfo,
    /// The patch as a unified diff.
    pub diff: String,
    /// Things worth telling the reviewer.
    pub notes: Vec<String>,
    /// The branch the pull request targets.
    pub base_branch: String,
    /// The fields of this resource the change set touches, as the policy names them (`tags.Team`,
    /// `ingress`; `(resource)` for a creation or deletion). An escalation issue keeps them, so only
    /// a later change that covers them closes it.
    #[serde(default)]
    pub fields: Vec<String>,
}

/// One field the patch changes, as a reader is shown it (secrets hidden, long values cut).
/// `None` before: newly set; `None` after: removed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShownChange {
    pub path: String,
    pub before: Option<String>,
    pub after: Option<String>,
}

/// One event of the change set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimelineEntry {
    /// Event time, UTC, as displayed (`2024-05-01 12:00:00Z`).
    pub time: String,
    /// The actor as displayed.
    pub actor: String,
    /// `ec2.amazonaws.com`.
    pub source: String,
    /// `ModifyInstanceAttribute`.
    pub name: String,
    pub event_id: String,
}

/// Who made the change, and how that was worked out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActorInfo {
    /// Display name (`alice`).
    pub name: String,
    /// How the call was made: console, cli, sdk, service, ...
    pub via: String,
    /// Principal ARN, when CloudTrail gave one.
    pub principal: Option<String>,
    /// Kind of actor (person, pipeline, AWS service, agent) or CloudTrail identity type.
    pub kind: Option<String>,
    /// The evidence the attribution rests on, one statement each.
    pub evidence: Vec<String>,
}

/// A classification and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reasoned {
    pub value: String,
    pub reason: Option<String>,
}

/// The policy decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecisionInfo {
    /// reconcile, ignore_changes, revert, escalate.
    pub kind: String,
    pub rule: String,
    pub rationale: String,
}

impl Story {
    /// What changed, in a few words: `instance_type t3.medium -> t3.large` (and `and N more` when
    /// more fields changed), or the API calls when no field change is known.
    pub fn summary(&self) -> String {
        let first = match self.changes.first() {
            Some(change) => change.describe(),
            None => {
                let mut calls: Vec<&str> = Vec::new();
                for entry in &self.timeline {
                    if !calls.contains(&entry.name.as_str()) {
                        calls.push(&entry.name);
                    }
                }
                calls.join(", ")
            }
        };
        let more = self.changes.len().saturating_sub(1);
        let summary = if more > 0 { format!("{first} and {more} more") } else { first };
        one_line(&summary)
    }

    /// `(console, alice)`
    fn by(&self) -> String {
        one_line(&format!("({}, {})", self.actor.via, self.actor.name))
    }

    /// The summaries of this change, most detailed first: the first change in full, then without
    /// its old value, then its path alone, then a count. Each whole: a value is never cut.
    fn summaries(&self) -> Vec<String> {
        let more = self.changes.len().saturating_sub(1);
        let and_more = if more > 0 { format!(" and {more} more") } else { String::new() };
        let mut out = vec![self.summary()];
        match self.changes.first() {
            Some(change) => {
                if let (Some(_), Some(after)) = (&change.before, &change.after) {
                    out.push(format!("{} -> {after}{and_more}", change.path));
                }
                let verb = if change.after.is_some() { "changed" } else { "removed" };
                out.push(format!("{} {verb}{and_more}", change.path));
                out.push(match self.changes.len() {
                    1 => "1 field changed".to_string(),
                    n => format!("{n} fields changed"),
                });
            }
            None => {
                let calls: std::collections::BTreeSet<&str> = self.timeline.iter().map(|e| e.name.as_str()).collect();
                out.push(match calls.len() {
                    1 => "1 call".to_string(),
                    n => format!("{n} calls"),
                });
            }
        }
        out.into_iter().map(|s| one_line(&s)).collect()
    }

    /// `head`, the most detailed summary that fits, and `tail`, in at most `max` characters. When
    /// no summary fits with the tail, the tail goes; only when even the shortest line is too long
    /// (a hostile address) is the line cut.
    pub fn summary_line(&self, head: &str, tail: &str, max: usize) -> String {
        let summaries = self.summaries();
        let fits =
            |tail: &str| summaries.iter().map(|s| format!("{head}{s}{tail}")).find(|line| line.chars().count() <= max);
        fits(tail)
            .or_else(|| fits(""))
            .unwrap_or_else(|| truncate(&format!("{head}{}", summaries.last().cloned().unwrap_or_default()), max))
    }

    /// The pull request title: `drift: aws_instance.web instance_type t3.medium -> t3.large (console, alice)`.
    pub fn title(&self) -> String {
        self.summary_line(&format!("drift: {} ", one_line(&self.address)), &format!(" {}", self.by()), MAX_TITLE_CHARS)
    }

    /// The marker that identifies the resource's pull request among the open ones.
    pub fn marker(&self) -> String {
        resource_marker(&self.address)
    }

    /// The pull request body.
    pub fn body(&self) -> String {
        let mut out = String::new();
        out.push_str(&self.marker());
        out.push('\n');
        out.push_str(&self.sections("##"));
        out
    }

    /// A section appended to an open pull request's body when a later change set on the same
    /// resource is added to its branch.
    pub fn update_section(&self) -> String {
        format!("\n---\n\n## Later change: {}\n\n{}", text(&self.summary()), self.sections("###"))
    }

    /// The comment left on the open pull request when a later change set is added to it.
    pub fn update_comment(&self, commit: &str) -> String {
        let events: Vec<String> = self.timeline.iter().map(|e| code(&e.event_id)).collect();
        format!(
            "driftback added {} to this branch for a later change on {}: {} by {} ({}).\n\nDecision: **{}**. Events: {}. The description now has a section for it.\n",
            code(&short(commit)),
            code(&self.address),
            text(&self.summary()),
            text(&self.actor.name),
            text(&self.actor.via),
            text(&self.decision.kind),
            events.join(", "),
        )
    }

    fn sections(&self, h: &str) -> String {
        let mut out = String::new();
        // What changed.
        let resource = match &self.resource_id {
            Some(id) => format!("{} ({})", code(&self.address), code(id)),
            None => code(&self.address),
        };
        out.push_str(&format!(
            "{resource} was changed outside Terraform by {} ({}). This pull request writes the change into the code, so the next `terraform apply` keeps it instead of undoing it.\n\n",
            text(&self.actor.name),
            text(&self.actor.via)
        ));
        out.push_str(&self.fields_table());
        out.push_str(&self.timeline_section(h));
        out.push_str(&self.who_section(h));
        out.push_str(&format!("{h} Decision\n\n"));
        out.push_str(&format!(
            "**{}** by the rule {}: {}\n",
            text(&self.decision.kind),
            code(&self.decision.rule),
            text(&self.decision.rationale)
        ));
        for note in &self.notes {
            out.push_str(&format!("- {}\n", text(note)));
        }
        out.push('\n');

        out.push_str(&format!("{h} Diff\n\n"));
        if self.diff.len() > MAX_DIFF_CHARS {
            let cut = truncate_at_line(&self.diff, MAX_DIFF_CHARS);
            out.push_str(&fenced("diff", cut));
            out.push_str(&format!(
                "\nThe diff is cut at {} of {} characters; the full change is in this pull request's commits.\n",
                cut.len(),
                self.diff.len()
            ));
        } else {
            out.push_str(&fenced("diff", &self.diff));
        }
        out.push('\n');

        out.push_str(&format!("{h} Events\n\nChange set {}; CloudTrail event ids:\n\n", code(&self.change_set_id)));
        for entry in &self.timeline {
            out.push_str(&format!("- {}\n", code(&entry.event_id)));
        }
        out.push('\n');

        out.push_str(&format!("{h} To revert instead\n\n"));
        out.push_str(&format!(
            "Close this pull request without merging. The code on {} then still describes the resource as it was",
            code(&self.base_branch)
        ));
        let reverts = self.restores();
        if reverts.is_empty() {
            out.push_str(", so the next `terraform apply` undoes the change");
        } else {
            out.push_str(&format!(", so the next `terraform apply` sets {}", reverts.join(", ")));
        }
        out.push_str(
            ": run `terraform plan` first to see exactly what it will do. driftback has recorded these events and will not propose them again.\n",
        );
        out
    }

    fn timeline_section(&self, h: &str) -> String {
        let mut out = String::new();
        out.push_str(&format!("{h} Timeline\n\n| time (UTC) | actor | API call |\n|---|---|---|\n"));
        for entry in self.timeline.iter().take(MAX_TIMELINE_ROWS) {
            out.push_str(&format!(
                "| {} | {} | {} {} |\n",
                text(&entry.time),
                text(&entry.actor),
                cell(&entry.source),
                cell(&entry.name)
            ));
        }
        if self.timeline.len() > MAX_TIMELINE_ROWS {
            out.push_str(&format!("\n…and {} more events (ids below).\n", self.timeline.len() - MAX_TIMELINE_ROWS));
        }
        out.push('\n');

        out
    }

    fn who_section(&self, h: &str) -> String {
        let mut out = String::new();
        out.push_str(&format!("{h} Who made the change\n\n"));
        out.push_str(&format!("- Actor: {} via {}\n", text(&self.actor.name), text(&self.actor.via)));
        if let Some(principal) = &self.actor.principal {
            out.push_str(&format!("- Principal: {}\n", code(principal)));
        }
        if let Some(kind) = &self.actor.kind {
            out.push_str(&format!("- Kind: {}\n", text(kind)));
        }
        if !self.actor.evidence.is_empty() {
            out.push_str("- How this was worked out:\n");
            for evidence in &self.actor.evidence {
                out.push_str(&format!("  - {}\n", text(evidence)));
            }
        }
        out.push('\n');

        out.push_str(&format!("{h} Intent and motivation\n\n"));
        out.push_str(&format!("- Intent: {}\n", reasoned(self.intent.as_ref())));
        out.push_str(&format!("- Motivation: {}\n\n", reasoned(self.motivation.as_ref())));

        out
    }

    /// What the next apply sets back, field by field (`` `instance_type` back to `t3.medium` ``).
    fn restores(&self) -> Vec<String> {
        self.changes
            .iter()
            .map(|c| match &c.before {
                Some(before) => format!("{} back to {}", code(&c.path), code(before)),
                None => format!("{} unset", code(&c.path)),
            })
            .collect()
    }

    fn fields_table(&self) -> String {
        let mut out = String::new();
        if !self.changes.is_empty() {
            out.push_str("| field | before | after |\n|---|---|---|\n");
            for change in &self.changes {
                out.push_str(&format!(
                    "| {} | {} | {} |\n",
                    cell(&change.path),
                    change.before.as_deref().map(cell).unwrap_or_else(|| "*(not set)*".into()),
                    change.after.as_deref().map(cell).unwrap_or_else(|| "*(removed)*".into()),
                ));
            }
            out.push('\n');
        }
        out
    }

    /// The escalation issue's title: `drift waits for a person: aws_db_instance.main
    /// storage 20 -> 50 (console, alice)`.
    pub fn escalation_title(&self) -> String {
        let head = format!("drift ({}): {} ", one_line(&self.decision.kind), one_line(&self.address));
        self.summary_line(&head, &format!(" {}", self.by()), MAX_TITLE_CHARS)
    }

    /// The escalation issue's body (after its marker): what changed, the timeline, who and why,
    /// the rule that fired, the edit accepting would make, how to restore the code's value, and
    /// the commands people can answer with.
    pub fn escalation_body(&self) -> String {
        self.waiting_body(false)
    }

    /// The held draft pull request's body (after its markers): the escalation issue's story, with
    /// the edit held in the draft's commits and how to accept it (mark ready, merge) or not.
    pub fn held_draft_body(&self) -> String {
        self.waiting_body(true)
    }

    fn waiting_body(&self, draft: bool) -> String {
        let mut out = String::new();
        if draft {
            out.push_str(
                "**Held for a person.** This draft pull request holds the edit accepting would write; nothing \
                 reaches the code until someone with write access decides. To accept: mark it ready for review \
                 and merge it (or answer `/driftback accept`). To keep the code's value: close it (or answer \
                 `/driftback revert`).\n\n",
            );
        }
        let resource = match &self.resource_id {
            Some(id) => format!("{} ({})", code(&self.address), code(id)),
            None => code(&self.address),
        };
        out.push_str(&format!(
            "{resource} was changed outside Terraform by {} ({}), and driftback did not write it into the code: the decision is **{}** by the rule {}: {}\n\n",
            text(&self.actor.name),
            text(&self.actor.via),
            text(&self.decision.kind),
            code(&self.decision.rule),
            text(&self.decision.rationale)
        ));
        out.push_str(&self.fields_table());
        out.push_str(&self.timeline_section("##"));
        out.push_str(&self.who_section("##"));
        for note in &self.notes {
            out.push_str(&format!("- {}\n", text(note)));
        }
        if !self.notes.is_empty() {
            out.push('\n');
        }
        out.push_str(match draft {
            true => "## What accepting would write (this draft's diff)\n\n",
            false => "## What accepting would write\n\n",
        });
        if self.diff.trim().is_empty() {
            out.push_str(
                "No edit was computed for this change (the decision stopped it first, or no edit expresses it).\n\n",
            );
        } else {
            out.push_str(&fenced("diff", truncate_at_line(&self.diff, MAX_DIFF_CHARS)));
            out.push('\n');
        }
        let restores = self.restores();
        if self.decision.kind == "revert" {
            out.push_str("## What the next apply restores\n\n");
            if restores.is_empty() {
                out.push_str("The next `terraform apply` sets the resource back to what the code says.\n\n");
            } else {
                out.push_str("The next `terraform apply` sets:\n\n");
                for restore in &restores {
                    out.push_str(&format!("- {restore}\n"));
                }
                out.push('\n');
            }
        } else {
            out.push_str("## To keep the code's value\n\n");
        }
        if draft {
            out.push_str("Close this draft without merging. ");
        }
        out.push_str(&format!(
            "Run `terraform plan -target={addr}` on {base}: it shows the apply that restores what the code says",
            addr = one_line(&self.address).replace(['`', '\n'], ""),
            base = code(&self.base_branch)
        ));
        if !restores.is_empty() {
            out.push_str(&format!(" ({})", restores.join(", ")));
        }
        out.push_str(".\n\n## Answer here\n\n");
        out.push_str(&crate::commands::command_help());
        out.push_str(&format!("\n\nChange set {}.\n", code(&self.change_set_id)));
        out
    }

    /// The comment added to an open held draft when a later change set on the resource arrives:
    /// the escalation comment, and the commit added to its branch (`None`: the branch already
    /// held this edit).
    pub fn held_draft_comment(&self, commit: Option<&str>) -> String {
        let added = match commit {
            Some(commit) => format!("driftback added {} to this draft's branch.", code(&short(commit))),
            None => "The draft's branch already holds this edit; no commit was added.".to_string(),
        };
        format!("{}\n{added}\n", self.escalation_comment())
    }

    /// The comment added to an open escalation issue when a later change set on the resource arrives.
    pub fn escalation_comment(&self) -> String {
        format!(
            "A later change on {}: {} by {} ({}). Decision: **{}** by the rule {}: {}. Change set {}; the description now tells this one.\n",
            code(&self.address),
            text(&self.summary()),
            text(&self.actor.name),
            text(&self.actor.via),
            text(&self.decision.kind),
            code(&self.decision.rule),
            text(&self.decision.rationale),
            code(&self.change_set_id),
        )
    }
}

impl ShownChange {
    fn describe(&self) -> String {
        match (&self.before, &self.after) {
            (Some(before), Some(after)) => format!("{} {before} -> {after}", self.path),
            (None, Some(after)) => format!("{} set to {after}", self.path),
            (Some(_), None) | (None, None) => format!("{} removed", self.path),
        }
    }
}

/// The hidden line that marks the pull request of a resource.
pub fn resource_marker(address: &str) -> String {
    format!("<!-- driftback:resource {} -->", comment_safe(address))
}

fn reasoned(value: Option<&Reasoned>) -> String {
    match value {
        None => "unknown (nothing in the events says)".to_string(),
        Some(Reasoned { value, reason: None }) => text(value),
        Some(Reasoned { value, reason: Some(reason) }) => format!("{} ({})", text(value), text(reason)),
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max - 1).collect();
    out.push('…');
    out
}

fn truncate_at_line(s: &str, max: usize) -> &str {
    let mut end = max.min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    match s[..end].rfind('\n') {
        Some(newline) => &s[..=newline],
        None => &s[..end],
    }
}

fn short(commit: &str) -> String {
    commit.chars().take(10).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn story() -> Story {
        Story {
            address: "aws_instance.web".into(),
            resource_id: Some("i-0abc".into()),
            change_set_id: "cs-1".into(),
            changes: vec![ShownChange {
                path: "instance_type".into(),
                before: Some("t3.medium".into()),
                after: Some("t3.large".into()),
            }],
            timeline: vec![TimelineEntry {
                time: "2024-05-01 12:00:00Z".into(),
                actor: "alice".into(),
                source: "ec2.amazonaws.com".into(),
                name: "ModifyInstanceAttribute".into(),
                event_id: "e-1".into(),
            }],
            actor: ActorInfo {
                name: "alice".into(),
                via: "console".into(),
                principal: None,
                kind: None,
                evidence: vec![],
            },
            intent: None,
            motivation: None,
            decision: DecisionInfo { kind: "reconcile".into(), rule: "r".into(), rationale: "why".into() },
            diff: "+a\n".into(),
            notes: vec![],
            base_branch: "main".into(),
            fields: vec!["instance_type".into()],
        }
    }

    #[test]
    fn titles_say_what_changed_and_who() {
        let mut s = story();
        assert_eq!(s.title(), "drift: aws_instance.web instance_type t3.medium -> t3.large (console, alice)");
        s.changes.push(ShownChange { path: "tags.Team".into(), before: None, after: Some("web".into()) });
        assert_eq!(
            s.title(),
            "drift: aws_instance.web instance_type t3.medium -> t3.large and 1 more (console, alice)"
        );
        s.changes.clear();
        assert_eq!(s.title(), "drift: aws_instance.web ModifyInstanceAttribute (console, alice)");
        s.actor.name = "x\ny".repeat(200);
        let title = s.title();
        assert!(title.chars().count() <= MAX_TITLE_CHARS && !title.contains('\n'), "{title}");
    }

    #[test]
    fn a_long_diff_is_cut_at_a_line_and_says_so() {
        let mut s = story();
        s.diff = "+0123456789\n".repeat(5000);
        let body = s.body();
        assert!(body.len() < 60_000);
        assert!(body.contains("The diff is cut at"), "{}", &body[body.len() - 500..]);
    }
}
