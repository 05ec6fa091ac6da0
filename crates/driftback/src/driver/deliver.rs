//! Delivering a reconciled change set into git: a commit on its own branch from the base (or on
//! top of the open pull request for the same resource), then the push and the pull request that
//! `[publish] mode` asks for. A commit already made for the change set (by a run cut short) is
//! found by its trailer and published instead of committing again.

use std::path::PathBuf;

use anyhow::Context;

use driftback_events::ChangeSet;
use driftback_publish::github::PullRequestAction;
use driftback_publish::issues::IssueAction;
use driftback_publish::notify::{Notice, Notifier};
use driftback_publish::{Author, GitRepo, Oid, branch_name, stack_branch_name};
use driftback_recipes::Plan;
use driftback_store::Store;
use driftback_terraform::{Repo, State};

use super::field_changes::planned_changes;
use super::outcome::Outcome;
use super::patch;
use super::publisher::{self, Publisher};
use super::story::story;
use super::workspace::Workspace;

/// The repository change sets are committed to, and where the commits go.
pub struct Deliverer {
    git: GitRepo,
    /// `None` when `[publish] mode` is `none`: branches stay local.
    publisher: Option<Publisher>,
    branch_prefix: String,
    author: Author,
    /// The base branch's commit change sets are planned on and branch from, and its name.
    base: Oid,
    base_branch: String,
    /// Where decisions that wait for a person are announced (`[notify]`), when configured.
    notifier: Option<Notifier>,
}

/// What committing and publishing one change set did.
#[derive(Debug, Clone)]
pub struct Delivered {
    /// The branch holding the change: the pushed one when published, else the local one.
    pub branch: String,
    pub commit: Oid,
    /// The commit message (with the `Drift-*` trailers).
    pub message: String,
    pub diff: Option<String>,
    pub pushed: bool,
    pub pull_request: Option<(u64, String, PullRequestAction)>,
    /// A person's accept written onto the resource's held draft pull request (which they mark
    /// ready for review and merge).
    pub held_draft: bool,
}

impl Delivered {
    /// "branch", "branch (pushed)" or "branch (pull request #N opened: URL)", for summaries.
    pub fn describe(&self) -> String {
        match (&self.pull_request, self.pushed) {
            (Some((number, url, action)), _) => {
                format!("{} (pull request #{number} {}: {url})", self.branch, verb(action))
            }
            (None, true) => format!("{} (pushed)", self.branch),
            (None, false) => self.branch.clone(),
        }
    }

    /// The note for the change set record, when a pull request was opened or updated.
    pub fn note(&self) -> Option<String> {
        self.pull_request
            .as_ref()
            .map(|(number, url, action)| format!("pull request #{number} {}: {url}", verb(action)))
    }
}

impl Delivered {
    /// What the knowledge base keeps of this delivery for `change_set_id`, whose change the edit
    /// of `by` (this delivery's change set) made too.
    pub(crate) fn covering(&self, change_set_id: &str, by: &str) -> driftback_store::CoveredChangeSet {
        let pull_request = self
            .pull_request
            .as_ref()
            .map(|(number, url, action)| serde_json::json!({"number": number, "url": url, "action": verb(action)}));
        driftback_store::CoveredChangeSet {
            change_set_id: change_set_id.to_string(),
            by_change_set_id: by.to_string(),
            branch: self.branch.clone(),
            commit_id: self.commit.to_string(),
            delivery: serde_json::json!({
                "message": self.message,
                "diff": self.diff,
                "pushed": self.pushed,
                "pull_request": pull_request,
                "held_draft": self.held_draft,
            }),
        }
    }

    /// The delivery [`Delivered::covering`] kept, read back; an error names what is not as it
    /// wrote it.
    pub(crate) fn covered(kept: &driftback_store::CoveredChangeSet) -> anyhow::Result<Delivered> {
        let d = &kept.delivery;
        let bad = |what: &str| {
            anyhow::anyhow!(
                "the knowledge base's record that change set {} was written by change set {} has no readable {what}",
                kept.change_set_id,
                kept.by_change_set_id
            )
        };
        let pull_request = match &d["pull_request"] {
            serde_json::Value::Null => None,
            pr => {
                let action = match pr["action"].as_str() {
                    Some("opened") => PullRequestAction::Created,
                    Some("updated") => PullRequestAction::Updated,
                    _ => return Err(bad("pull request action")),
                };
                let number = pr["number"].as_u64().ok_or_else(|| bad("pull request number"))?;
                let url = pr["url"].as_str().ok_or_else(|| bad("pull request address"))?;
                Some((number, url.to_string(), action))
            }
        };
        Ok(Delivered {
            branch: kept.branch.clone(),
            commit: kept.commit_id.parse().map_err(|_| bad("commit id"))?,
            message: d["message"].as_str().ok_or_else(|| bad("commit message"))?.to_string(),
            diff: match &d["diff"] {
                serde_json::Value::Null => None,
                diff => Some(diff.as_str().ok_or_else(|| bad("diff"))?.to_string()),
            },
            pushed: d["pushed"].as_bool().ok_or_else(|| bad("push"))?,
            pull_request,
            held_draft: d["held_draft"].as_bool().ok_or_else(|| bad("held draft"))?,
        })
    }
}

fn verb(action: &PullRequestAction) -> &'static str {
    match action {
        PullRequestAction::Created => "opened",
        PullRequestAction::Updated => "updated",
    }
}

impl Deliverer {
    /// Commits to `git`, branching from its checked-out commit (see [`Deliverer::set_base`]);
    /// `base_branch` is the branch pull requests target (default: the checked-out branch).
    pub fn new(
        git: GitRepo,
        publisher: Option<Publisher>,
        branch_prefix: &str,
        author: Author,
        base_branch: Option<&str>,
    ) -> anyhow::Result<Deliverer> {
        let base = git.head_commit()?;
        let base_branch = match (base_branch, &publisher) {
            (Some(b), _) => b.to_string(),
            (None, Some(p)) => p.base_branch().to_string(),
            (None, None) => git.head_name(),
        };
        Ok(Deliverer {
            git,
            publisher,
            branch_prefix: branch_prefix.to_string(),
            author,
            base,
            base_branch,
            notifier: None,
        })
    }

    /// Announce escalations and reverts through `notifier` too.
    pub fn with_notifier(mut self, notifier: Option<Notifier>) -> Deliverer {
        self.notifier = notifier;
        self
    }

    /// A decision that waits for a person (escalate, revert): published (with pull requests on)
    /// as the resource's held draft pull request when its held edit can be written
    /// (`outcome.held_files`, `held` the plan it came from), else as the resource's issue, and
    /// announced (with `[notify]`). Returns the note for the change set's record.
    pub async fn escalate(
        &self,
        change_set: &ChangeSet,
        outcome: &Outcome,
        held: &Plan,
        workspace: &Workspace,
        label: &str,
    ) -> anyhow::Result<Option<String>> {
        let held_diff = outcome.held_diff.clone().unwrap_or_default();
        let mut story = story(change_set, outcome, label, held_diff, &self.base_branch);
        let mut published = None;
        if let Some(p) = self.publisher.as_ref().filter(|p| p.drafts_held_edits() && !outcome.held_files.is_empty()) {
            match self
                .held_draft(p, change_set, outcome, held, workspace, label, &story)
                .await
                .with_context(|| format!("publishing the held draft pull request of {label}"))?
            {
                Ok(draft) => published = Some(draft),
                // Fail closed: the edit is shown in an issue, with why it is not committed.
                Err(reason) => story.notes.push(reason),
            }
        }
        let published = match (&self.publisher, published) {
            (_, Some((number, url, action))) => Some((format!("draft pull request #{number}"), url, action)),
            (Some(p), None) => p
                .publish_escalation(&story)
                .await
                .with_context(|| format!("publishing the escalation of {label}"))?
                .map(|(number, url, action)| (format!("issue #{number}"), url, action)),
            (None, None) => None,
        };
        if let Some(notifier) = &self.notifier {
            notifier.notify(Notice {
                address: label.to_string(),
                decision: story.decision.kind.clone(),
                rule: story.decision.rule.clone(),
                actor: format!("{} ({})", story.actor.name, story.actor.via),
                summary: story.summary(),
                change_set_id: change_set.id.clone(),
                link: published.as_ref().map(|(_, url, _)| url.clone()),
            });
        }
        Ok(published.map(|(thread, url, action)| {
            let verb = match action {
                IssueAction::Opened => "opened",
                IssueAction::Updated => "updated",
            };
            format!("{thread} {verb}: {url}")
        }))
    }

    /// Commit the held edit on the resource's held draft branch (a new one from the base, or on
    /// top of the open draft's, where the held plan is applied again and gated again), push it,
    /// and open or update the draft. `Ok(Err(reason))`: the edit cannot be written on the draft's
    /// branch, nothing was committed, and the escalation goes to an issue saying why.
    #[allow(clippy::too_many_arguments)]
    async fn held_draft(
        &self,
        p: &Publisher,
        change_set: &ChangeSet,
        outcome: &Outcome,
        held: &Plan,
        workspace: &Workspace,
        label: &str,
        story: &driftback_publish::story::Story,
    ) -> anyhow::Result<Result<(u64, String, IssueAction), String>> {
        let git = &self.git;
        let existing = p.open_held_draft(label).await?;
        // A split change set's written part has the change set's branch already.
        let local_branch = match outcome.decision.as_ref().is_some_and(|d| d.split.is_some()) {
            true => format!("{}-held", self.branch_for(change_set, outcome, label)),
            false => self.branch_for(change_set, outcome, label),
        };
        let mut story = story.clone();
        let (parent, files, branch) = match &existing {
            None => (self.base, outcome.held_files.clone(), local_branch.clone()),
            Some(draft) => {
                let head = &draft.pull_request.head.branch;
                let Some((tip, tree)) = p.branch_files(git, head)? else {
                    anyhow::bail!(
                        "the branch {head} of held draft pull request #{} is not on the remote; restore it, or close \
                         the draft so that the next change opens a new one",
                        draft.pull_request.number
                    );
                };
                let on_branch = workspace.repo.with_files_like(tree);
                let files = match patch::writable(&on_branch, held, workspace.schema) {
                    Ok(files) => files,
                    Err(reason) => {
                        return Ok(Err(format!(
                            "the held edit is not added to draft pull request #{}: on its branch {reason}",
                            draft.pull_request.number
                        )));
                    }
                };
                // What the draft holds now, against the base: its earlier held edits and this one.
                let after = patch::with_files(&on_branch, &files);
                let mut changed: Vec<(&std::path::Path, Option<&str>, &str)> = Vec::new();
                let terraform = |p: &std::path::Path| {
                    let name = p.to_string_lossy();
                    [".tf", ".tfvars", ".tf.json", ".tfvars.json"].iter().any(|e| name.ends_with(e))
                };
                for (path, now) in after.files().filter(|(p, _)| terraform(p)) {
                    let was = workspace.repo.text(path);
                    if was != Some(now) {
                        changed.push((path.as_path(), was, now));
                    }
                }
                if let Ok(diff) = driftback_publish::unified_diff(&changed) {
                    story.diff = diff;
                }
                if !files.is_empty() {
                    let there = outcome.with_field_changes(planned_changes(held, &workspace.state, &on_branch));
                    let shown = super::story::story(change_set, &there, label, String::new(), &self.base_branch);
                    story.changes = shown.changes;
                }
                (tip, files, head.clone())
            }
        };
        let commit = if files.is_empty() {
            None
        } else {
            let message = driftback_publish::message::commit_message(&story);
            match git.find_committed(&local_branch, &change_set.id)? {
                Some(commit) => Some(commit),
                None => {
                    let changes: Vec<(PathBuf, Option<String>)> =
                        files.iter().map(|(p, t)| (p.clone(), Some(t.clone()))).collect();
                    Some(git.commit_on_branch(parent, &local_branch, &changes, &message, &self.author)?.1)
                }
            }
        };
        Ok(Ok(p.publish_held_draft(git, commit, &branch, &story, existing.as_ref()).await?))
    }

    /// The branch a change set's commit goes on: `driftback/<address>-<change set>`, or with its
    /// stack and workspace in a repository of stacks.
    fn branch_for(&self, change_set: &ChangeSet, outcome: &Outcome, label: &str) -> String {
        match &outcome.scope {
            Some(scope) => stack_branch_name(
                &self.branch_prefix,
                &scope.stack,
                &scope.workspace,
                outcome.address_of(label),
                &change_set.id,
            ),
            None => branch_name(&self.branch_prefix, label, &change_set.id),
        }
    }

    /// After a later change set on `label` was written into the code (`delivered`), or found the
    /// code already saying it (`None`: the drifted value returned): its open escalation issue is
    /// closed when `covered`, the fields that change set touched, covers every field the issue
    /// waits on. A change to other fields of the resource leaves the issue open.
    pub async fn resolve(
        &self,
        label: &str,
        covered: &[String],
        delivered: Option<&Delivered>,
    ) -> anyhow::Result<Option<String>> {
        let Some(p) = &self.publisher else { return Ok(None) };
        let why = match delivered {
            Some(delivered) => {
                let by = match &delivered.pull_request {
                    Some((number, url, _)) => format!("pull request #{number} ({url})"),
                    None => format!("the branch `{}`", delivered.branch),
                };
                format!("A later change to the fields waiting here was written into the code by {by}; closing.")
            }
            None => "The fields waiting here are back to what the code says (a later change set found nothing \
                     to write); closing."
                .to_string(),
        };
        let closed = p
            .resolve_escalation_if_covered(label, covered, &why)
            .await
            .with_context(|| format!("closing the escalation of {label}"))?;
        Ok((!closed.is_empty()).then(|| closed.iter().map(|c| c.describe()).collect::<Vec<_>>().join(", ")))
    }

    /// A change set that finds the base code already saying the cloud's values may find the
    /// resource's open pull request saying something else: the value was set back before the pull
    /// request merged, and merging it would now change the cloud. `plan` (what the change set
    /// writes) is applied on that pull request's branch. When the branch then writes nothing its
    /// base does not say, the pull request is closed with a comment; otherwise the set-back is
    /// committed on its branch and the pull request updated. Returns the note for the change set's
    /// record (`None`: no open pull request, or its branch already agrees).
    pub async fn set_back(
        &self,
        store: Option<&Store>,
        change_set: &ChangeSet,
        outcome: &Outcome,
        plan: &Plan,
        (repo, state): (&Repo, &State),
        label: &str,
    ) -> anyhow::Result<Option<String>> {
        let Some(p) = &self.publisher else { return Ok(None) };
        if plan.changes.is_empty() {
            return Ok(None);
        }
        let Some(pr) = p.open_pull_request(store, label).await? else { return Ok(None) };
        let git = &self.git;
        let Some((tip, tree)) = p.branch_files(git, &pr.head.branch)? else { return Ok(None) };
        let on_branch = repo.with_files_like(tree.clone());
        let patched = match patch::apply(&on_branch, plan) {
            Ok(patched) => patched,
            Err(e) => {
                return Ok(Some(format!(
                    "pull request #{} may still write a value that was set back: the set-back cannot be written on                      its branch ({e}); a reviewer should close or fix it",
                    pr.number
                )));
            }
        };
        if patched.files.is_empty() {
            return Ok(None);
        }
        let there = outcome.with_field_changes(planned_changes(plan, state, &on_branch));
        let mut story = super::story::story(change_set, &there, label, String::new(), &self.base_branch);
        let mut after = tree;
        after.extend(patched.files.iter().cloned());
        let forked_from = git.merge_base(tip, self.base)?;
        if git.files_at(forked_from)? == after {
            let why = format!(
                "{} by {} ({}) in change set `{}`: the cloud is back to what `{}` says, so this pull request has                  nothing left to write, and merging it would change the cloud on the next apply. Closing it                  without merging.\n",
                driftback_publish::markdown::text(&story.summary()),
                driftback_publish::markdown::text(&story.actor.name),
                driftback_publish::markdown::text(&story.actor.via),
                change_set.id,
                self.base_branch,
            );
            p.close_pull_request(store, pr.number, &why)
                .await
                .with_context(|| format!("closing pull request #{} of {label}", pr.number))?;
            return Ok(Some(format!("pull request #{} closed: the value it writes was set back", pr.number)));
        }
        let local_branch = self.branch_for(change_set, outcome, label);
        let message = driftback_publish::message::commit_message(&story);
        let commit = match git.find_committed(&local_branch, &change_set.id)? {
            Some(commit) => commit,
            None => {
                let changes: Vec<(PathBuf, Option<String>)> =
                    patched.files.iter().map(|(p, t)| (p.clone(), Some(t.clone()))).collect();
                git.commit_on_branch(tip, &local_branch, &changes, &message, &self.author)?.1
            }
        };
        story.diff = git.diff_of(commit).unwrap_or_default();
        let published = p
            .publish(git, commit, &pr.head.branch, &story, Some(&pr))
            .await
            .with_context(|| format!("writing the set-back onto pull request #{} of {label}", pr.number))?;
        if let Some(store) = store {
            publisher::record_pull_request(store, label, &published).await?;
        }
        Ok(Some(format!("pull request #{} updated: a value it wrote was set back", pr.number)))
    }

    /// Send what the notifier holds before the process ends.
    pub async fn close(self) {
        if let Some(notifier) = self.notifier {
            notifier.close().await;
        }
    }

    /// The base commit the next change sets are planned on (after the clone was refreshed).
    pub fn set_base(&mut self, base: Oid) {
        self.base = base;
    }

    /// Commit a reconciled outcome and publish it. `plan` is the decided plan the outcome's files
    /// came from: on an open pull request's branch it is applied again to that branch's files.
    pub async fn deliver(
        &self,
        store: Option<&Store>,
        change_set: &ChangeSet,
        outcome: &Outcome,
        plan: &Plan,
        (repo, state): (&Repo, &State),
        label: &str,
    ) -> anyhow::Result<Delivered> {
        let git = &self.git;
        let mut story = story(change_set, outcome, label, String::new(), &self.base_branch);
        // A person's accept goes onto the resource's held draft, which holds the edit they accept:
        // it becomes the resource's pull request (its escalation markers taken out), for them to
        // mark ready and merge.
        let held_draft = match &self.publisher {
            Some(p) if outcome.accepts_held() => p.open_held_draft(label).await?,
            _ => None,
        };
        // One open pull request per resource: a later change goes on top of its branch.
        let existing = match (&self.publisher, &held_draft) {
            (_, Some(draft)) => {
                let mut pr = draft.pull_request.clone();
                pr.body = pr.body.as_deref().map(driftback_publish::issues::accepted_body);
                Some(pr)
            }
            (Some(p), None) => p.open_pull_request(store, label).await?,
            (None, None) => None,
        };
        let local_branch = self.branch_for(change_set, outcome, label);
        let mut parent = self.base;
        let mut files = outcome.files.clone();
        let mut branch = local_branch.clone();
        if let (Some(p), Some(pr)) = (&self.publisher, &existing) {
            if let Some((tip, tree)) = p.branch_files(git, &pr.head.branch)? {
                let on_branch = repo.with_files_like(tree);
                if let Ok(patched) = patch::apply(&on_branch, plan) {
                    if !patched.files.is_empty() {
                        // The values before are the branch's, where the earlier change is.
                        let there = outcome.with_field_changes(planned_changes(plan, state, &on_branch));
                        story = super::story::story(change_set, &there, label, String::new(), &self.base_branch);
                    }
                    // On a held draft that already holds the edit, the commit records the person's
                    // decision on its branch (no file changes).
                    if !patched.files.is_empty() || held_draft.is_some() {
                        parent = tip;
                        files = patched.files;
                        branch = pr.head.branch.clone();
                    }
                }
            }
        }
        files.extend(outcome.extra_files.iter().cloned());
        let message = driftback_publish::message::commit_message(&story);
        // A person's answer is a new decision on the change set: never the commit made before it.
        let committed = match &outcome.answered_by {
            Some(_) => None,
            None => git.find_committed(&local_branch, &change_set.id)?,
        };
        let (local_branch, commit) = match committed {
            Some(commit) => {
                tracing::info!(change_set = change_set.id, branch = local_branch, "already committed before a restart");
                (local_branch, commit)
            }
            None => {
                let changes: Vec<(PathBuf, Option<String>)> =
                    files.iter().map(|(p, t)| (p.clone(), Some(t.clone()))).collect();
                // The message carries `Drift-Change-Set: <id>`, by which a restarted run finds it;
                // a branch name already taken gets a numeric suffix.
                git.commit_on_branch(parent, &local_branch, &changes, &message, &self.author)?
            }
        };
        let diff = git.diff_of(commit).ok();
        let Some(p) = &self.publisher else {
            return Ok(Delivered {
                branch: local_branch,
                commit,
                message,
                diff,
                pushed: false,
                pull_request: None,
                held_draft: false,
            });
        };
        story.diff = diff.clone().unwrap_or_default();
        let on_held_draft = held_draft.as_ref().is_some_and(|d| d.pull_request.head.branch == branch);
        let published = p
            .publish(git, commit, &branch, &story, existing.as_ref())
            .await
            .with_context(|| format!("publishing the change to {label}"))?;
        if let Some(store) = store {
            publisher::record_pull_request(store, label, &published).await?;
        }
        Ok(Delivered {
            branch: published.branch,
            commit: published.commit,
            message,
            diff,
            pushed: true,
            pull_request: published.pull_request,
            held_draft: on_held_draft,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_covering_delivery_is_read_back_as_it_was() {
        let commit: Oid = "0123456789abcdef0123456789abcdef01234567".parse().unwrap();
        let opened = Delivered {
            branch: "driftback/aws_subnet.a-1".into(),
            commit,
            message: "drift: tags\n\nDrift-Change-Set: cs-a".into(),
            diff: Some("--- a/main.tf\n+++ b/main.tf\n".into()),
            pushed: true,
            pull_request: Some((7, "https://github.com/acme/infra/pull/7".into(), PullRequestAction::Updated)),
            held_draft: false,
        };
        let local = Delivered { diff: None, pushed: false, pull_request: None, held_draft: true, ..opened.clone() };
        for delivered in [opened, local] {
            let kept = delivered.covering("cs-b", "cs-a");
            assert_eq!((kept.change_set_id.as_str(), kept.by_change_set_id.as_str()), ("cs-b", "cs-a"));
            let back = Delivered::covered(&kept).unwrap();
            assert_eq!(format!("{back:?}"), format!("{delivered:?}"));
        }
        let broken = Delivered::covered(&local_kept()).unwrap_err().to_string();
        assert!(broken.contains("commit id") && broken.contains("change set cs-b"), "{broken}");
    }

    fn local_kept() -> driftback_store::CoveredChangeSet {
        driftback_store::CoveredChangeSet {
            change_set_id: "cs-b".into(),
            by_change_set_id: "cs-a".into(),
            branch: "driftback/x".into(),
            commit_id: "not a commit".into(),
            delivery: serde_json::json!({"message": "m", "diff": null, "pushed": false, "pull_request": null,
                                          "held_draft": false}),
        }
    }
}
