//! People answering in driftback's threads: GitHub's signed webhook deliveries (pull request
//! states recorded in the store) and `/driftback` commands, obeyed only from people with write
//! access. `accept` and `own` drive the change set again with the person's decision through an
//! [`Answerer`] (the daemon's reconciler), so what they decide is written by the normal delivery.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;

use driftback_publish::commands::{Command, CommentCommand};
use driftback_publish::github::PullRequestAction;
use driftback_publish::issues;
use driftback_publish::markdown::{code, text};
use driftback_publish::webhook::{PullRequestChange, PullRequestEvents, SinkError};
use driftback_publish::{GitHub, PullRequestApi, PullRequestState, RetryPolicy};
use driftback_store::{DecisionRecord, Store};

use super::deliver::Delivered;
use super::outcome::{Scope, Status, scoped};
use super::person::{Answer, PERSON_RULE, PersonDecision};
use super::publisher::repository_from_url;
use crate::config::PublishConfig;

/// Drives a change set again with a person's answer (the daemon's reconciler does, between the
/// change sets of its feed). Blocking: called from a blocking thread.
pub trait Answerer: Send + Sync {
    fn answer(&self, change_set_id: &str, person: PersonDecision) -> anyhow::Result<Answered>;
}

/// What driving a change set with a person's answer did.
#[derive(Debug, Clone)]
pub struct Answered {
    /// The resource's address (its escalation issue's).
    pub label: String,
    pub status: Status,
    pub delivered: Option<Delivered>,
    pub notes: Vec<String>,
}

/// GitHub's webhook deliveries: pull request states recorded in the store, and `/driftback`
/// commands answered (with the GitHub API, when a token is set; `accept` and `own` need the
/// daemon's reconciler to write the code).
pub struct StoreSink {
    store: Store,
    api: Option<GitHub>,
    answerer: Option<Arc<dyn Answerer>>,
}

impl PullRequestEvents for StoreSink {
    async fn record(&self, change: PullRequestChange) -> Result<(), SinkError> {
        // A pull request driftback did not open (or not recorded) is not its business.
        self.store.set_pull_request_state(change.number, change.state).await.map_err(|e| e.to_string())?;
        // A held draft merged as it was: the person who merged it accepted its edit.
        let held = change.body.as_deref().filter(|b| issues::is_held_draft(b));
        if let (PullRequestState::Merged, Some(body)) = (change.state, held) {
            accepted_by_merge(&self.store, &change, body).await.map_err(|e| format!("{e:#}"))?;
        }
        Ok(())
    }

    async fn command(&self, request: CommentCommand) -> Result<(), SinkError> {
        let Some(api) = &self.api else {
            tracing::warn!(
                number = request.number,
                "a /driftback command arrived but no GitHub token is set to answer it"
            );
            return Ok(());
        };
        let writes = matches!(request.command, Ok(Command::Accept | Command::Own { .. }));
        if writes && issues::may_decide(api, &request.user).await.map_err(|e| e.to_string())? {
            // Writing the code waits for the reconciler (it may be in the middle of a change set)
            // and pushes: longer than GitHub waits for a delivery's answer (10 s), and a dropped
            // connection must not cut it short. It runs on its own; its reply is the answer.
            let (store, api, answerer) = (self.store.clone(), api.clone(), self.answerer.clone());
            tokio::spawn(async move {
                if let Err(e) = reply(&store, &api, answerer, &request).await {
                    tracing::warn!(number = request.number, error = %e, "a /driftback command could not be answered");
                }
            });
            return Ok(());
        }
        reply(&self.store, api, self.answerer.clone(), &request).await.map_err(|e| e.to_string().into())
    }
}

/// Answer `request` and post the reply in its thread (unless answering posted it already).
async fn reply(
    store: &Store,
    api: &GitHub,
    answerer: Option<Arc<dyn Answerer>>,
    request: &CommentCommand,
) -> anyhow::Result<()> {
    if let Some(reply) = answer(store, api, answerer, request).await? {
        api.comment(request.number, &reply).await?;
    }
    Ok(())
}

/// The reply to a command, after doing what it asks (`None`: the reply was already posted, with
/// the thread's issue closed). Only people with write access are obeyed.
async fn answer(
    store: &Store,
    api: &GitHub,
    answerer: Option<Arc<dyn Answerer>>,
    request: &CommentCommand,
) -> anyhow::Result<Option<String>> {
    let user = &request.user;
    if !issues::may_decide(api, user).await? {
        tracing::info!(user, number = request.number, "a /driftback command from someone without write access refused");
        return Ok(Some(issues::refusal(user)));
    }
    let command = match &request.command {
        Ok(command) => command,
        Err(reply) => return Ok(Some(reply.to_string())),
    };
    let Some(change_set) = latest_change_set(&request.thread_body) else {
        return Ok(Some("This thread names no driftback change set, so there is nothing to answer for.".into()));
    };
    let shown = code(&change_set);
    let person_decision = |kind: &str, extra: serde_json::Value, rationale: String| {
        let mut evidence = serde_json::json!({
            "by": user, "via": "github-comment", "thread": request.number,
            "pull_request": request.on_pull_request,
        });
        if let (Some(e), Some(extra)) = (evidence.as_object_mut(), extra.as_object()) {
            e.extend(extra.clone());
        }
        DecisionRecord {
            change_set_id: change_set.clone(),
            kind: format!("person-{kind}"),
            rule: Some(PERSON_RULE.into()),
            evidence,
            rationale: Some(rationale),
        }
    };
    match command {
        Command::Explain => {
            let decisions = store.decisions(&change_set).await?;
            if decisions.is_empty() {
                return Ok(Some(format!("The knowledge base has no decision for change set {shown}.")));
            }
            let mut reply = format!("Decisions on change set {shown}, oldest first:\n\n");
            for logged in decisions {
                let d = &logged.decision;
                reply.push_str(&format!(
                    "- {}: **{}** by {}: {}\n",
                    logged.recorded_at.format("%Y-%m-%d %H:%M UTC"),
                    text(&d.kind),
                    code(d.rule.as_deref().unwrap_or("-")),
                    text(d.rationale.as_deref().unwrap_or("")),
                ));
            }
            Ok(Some(reply))
        }
        Command::Revert => {
            // The thread may carry several change sets on its resource (a pull request gains a
            // section per later change): the code's value stands for every one of them.
            let rationale = format!("{user} answered `/driftback revert` in #{}", request.number);
            for each in thread_change_sets(&request.thread_body) {
                let mut record = person_decision("revert", serde_json::json!({}), rationale.clone());
                record.change_set_id = each.clone();
                store.record_decision(&record).await?;
                // The ledger learns: the code owns the fields this change set touched.
                code_owns_decided_fields(store, &each, user).await?;
            }
            let row = store.change_set(&change_set).await?;
            let scope = row.as_ref().and_then(Scope::of_record);
            let reply = format!(
                "Recorded: @{} decided that the code's value stands for change set {shown} (audit log). The next \
                 `terraform apply` restores it; run `terraform plan` to see exactly what it will do.",
                text(user)
            );
            // The escalation issue names the resource as the change set's label does.
            let label = row.and_then(|r| r.address).map(|a| scoped(scope.as_ref(), &a));
            close_or_reply(api, request, label.as_deref(), &reply, Closes::Everything).await
        }
        Command::Accept | Command::Own { .. } => {
            let Some(answerer) = answerer else {
                return Ok(Some(format!(
                    "@{} nothing was done: this driftback cannot write the code from a comment (only `driftback \
                     serve`, with its reconciler, can). Merge the change's pull request, or edit the code as the \
                     description's \"What accepting would write\" shows.",
                    text(user)
                )));
            };
            let answer = match command {
                Command::Own { field, actor } => Answer::Own { field: field.clone(), actor: actor.clone() },
                _ => Answer::Accept,
            };
            let person = PersonDecision { user: user.clone(), thread: request.number, answer: answer.clone() };
            let id = change_set.clone();
            let answered = tokio::task::spawn_blocking(move || answerer.answer(&id, person))
                .await
                .context("the reconciler stopped while answering")?;
            let answered = match answered {
                Ok(answered) => answered,
                Err(e) => {
                    tracing::warn!(change_set, error = %format!("{e:#}"), "a person's answer could not be carried out");
                    return Ok(Some(format!(
                        "@{} nothing was written for change set {shown}: {}",
                        text(user),
                        text(&format!("{e:#}"))
                    )));
                }
            };
            let (Status::Reconciled, Some(delivered)) = (&answered.status, &answered.delivered) else {
                let why = match &answered.status {
                    Status::Escalated(reason) | Status::Revert(reason) => reason.clone(),
                    _ => answered.notes.join("; "),
                };
                return Ok(Some(format!(
                    "@{} nothing was written for change set {shown}: {}",
                    text(user),
                    text(if why.is_empty() { "the code already says this" } else { &why })
                )));
            };
            let (what, extra) = match &answer {
                Answer::Own { field, actor } => (
                    format!("decided that {} owns {} of {}", text(actor), code(field), code(&answered.label)),
                    serde_json::json!({"field": field, "owner": actor}),
                ),
                Answer::Accept => (format!("accepted change set {shown}"), serde_json::json!({})),
            };
            let link = match &delivered.pull_request {
                Some((number, url, action)) => {
                    let verb = if *action == PullRequestAction::Created { "opened" } else { "updated" };
                    format!("pull request #{number} {verb}: {url}")
                }
                None => format!("the branch `{}`", delivered.branch),
            };
            let rationale = format!("{user} answered `/driftback {}` in #{}", command.as_str(), request.number);
            let mut record = person_decision(command.as_str(), extra, rationale);
            if let Some(e) = record.evidence.as_object_mut() {
                e.insert("written_by".into(), serde_json::json!(link));
            }
            store.record_decision(&record).await?;
            let mut reply = format!(
                "@{} {what} (audit log). Written into the code through the normal delivery: {link}.",
                text(user)
            );
            if delivered.held_draft {
                // GitHub's REST API cannot take a pull request out of draft (only GraphQL's
                // `markPullRequestReadyForReview` can, docs/publishing.md): the person clicks.
                reply.push_str(
                    " It is the held draft: it is ready to be marked ready for review (\"Ready for review\" at \
                     the bottom of its conversation) and merged; the merge is what puts it into the code.",
                );
            }
            let closes = if matches!(answer, Answer::Accept) { Closes::Issue } else { Closes::Everything };
            close_or_reply(api, request, Some(&answered.label), &reply, closes).await
        }
    }
}

/// A held draft pull request merged as it was: `person-accept` in the audit log for the change set
/// it names last, with who merged it, and the ownership ledger learns that the code (Terraform)
/// owns the fields decided on, by that person's decision, as after `/driftback revert`'s opposite:
/// the code now says the cloud's value, and an apply keeps it.
async fn accepted_by_merge(store: &Store, change: &PullRequestChange, body: &str) -> anyhow::Result<()> {
    let Some(change_set) = latest_change_set(body) else {
        tracing::warn!(number = change.number, "a merged held draft names no change set; nothing recorded");
        return Ok(());
    };
    let by = change.merged_by.clone().unwrap_or_else(|| "unknown".into());
    let record = DecisionRecord {
        change_set_id: change_set.clone(),
        kind: "person-accept".into(),
        rule: Some(PERSON_RULE.into()),
        evidence: serde_json::json!({
            "by": by, "via": "github-merge", "thread": change.number, "pull_request": true,
            "merge_commit": change.merge_commit_sha, "written_by": change.html_url,
        }),
        rationale: Some(format!("{by} merged held draft pull request #{}", change.number)),
    };
    store.record_decision(&record).await?;
    code_owns_decided_fields(store, &change_set, &by).await?;
    tracing::info!(number = change.number, change_set, by, "a merged held draft recorded as a person's accept");
    Ok(())
}

/// What a person's answer closes besides replying.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Closes {
    /// The resource's escalation issue and its held draft (`revert`, `own`: the held edit is not
    /// what was decided).
    Everything,
    /// The escalation issue only (`accept`: the held draft carries what was accepted).
    Issue,
}

/// Post `reply` where the command was written and close what waits on the resource with it: one
/// comment when the command came from a thread it closes. `None`: nothing is left to post.
async fn close_or_reply(
    api: &GitHub,
    request: &CommentCommand,
    address: Option<&str>,
    reply: &str,
    closes: Closes,
) -> anyhow::Result<Option<String>> {
    let closed: Vec<u64> = match (address, closes) {
        (Some(address), Closes::Everything) => {
            issues::resolve_escalation(api, address, reply).await?.iter().map(|c| c.number).collect()
        }
        (Some(address), Closes::Issue) => issues::resolve_issue(api, address, reply).await?.into_iter().collect(),
        (None, _) => vec![],
    };
    Ok(if closed.contains(&request.number) { None } else { Some(reply.to_string()) })
}

/// The ownership ledger learns that the code (Terraform) owns the fields the policy decided on for
/// `change_set`, by `person`'s decision.
async fn code_owns_decided_fields(store: &Store, change_set: &str, person: &str) -> anyhow::Result<()> {
    let scope = store.change_set(change_set).await?.as_ref().and_then(Scope::of_record);
    for (address, path) in decided_fields(store, change_set).await? {
        let key = scoped(scope.as_ref(), &address);
        store.set_field_owner(&key, &path, "terraform", Some(&format!("{PERSON_RULE}:{person}"))).await?;
    }
    Ok(())
}

/// The fields the policy decided on for `change_set` (its latest decision in the audit log), as
/// (address, path).
async fn decided_fields(store: &Store, change_set: &str) -> anyhow::Result<Vec<(String, String)>> {
    let decisions = store.decisions(change_set).await?;
    let Some(last) = decisions.iter().rev().find(|d| !d.decision.kind.starts_with("person-")) else {
        return Ok(vec![]);
    };
    let fields: Vec<driftback_policy::FieldDecision> =
        serde_json::from_value(last.decision.evidence["fields"].clone()).unwrap_or_default();
    Ok(fields.into_iter().filter_map(|f| f.path.map(|p| (f.address, p))).collect())
}

/// The last change set id the thread's body names (``Change set `cs-...` ``): the one the latest
/// update is about.
fn latest_change_set(body: &str) -> Option<String> {
    thread_change_sets(body).pop()
}

/// Every change set id the thread's body names (``Change set `cs-...` ``), once each, in the order
/// of their last mention: the last is the one the latest update is about.
fn thread_change_sets(body: &str) -> Vec<String> {
    let mut named: Vec<String> = Vec::new();
    for (at, m) in body.match_indices("Change set `") {
        let rest = &body[at + m.len()..];
        let Some(end) = rest.find('`') else { continue };
        let id = &rest[..end];
        let valid = !id.is_empty() && id.len() <= 128 && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
        if valid {
            named.retain(|known| known != id);
            named.push(id.to_string());
        }
    }
    named
}

/// The webhook router for the daemon to mount (`POST /webhooks/github`), with the secret from the
/// environment variable `publish.webhook_secret_env`. With a token in `publish.token_env` and the
/// repository known (`publish.repository`, or the HTTPS `remote_url`), `/driftback` commands in
/// comments are answered.
pub fn webhook_router(
    config: &PublishConfig,
    remote_url: Option<&str>,
    store: Store,
    answerer: Option<Arc<dyn Answerer>>,
) -> anyhow::Result<axum::Router> {
    let secret = config.webhook_secret()?.with_context(|| {
        format!(
            "the pull request webhook needs its secret: set the environment variable {} (publish.webhook_secret_env) \
             or publish.webhook_secret_file",
            config.webhook_secret_env
        )
    })?;
    let token = match remote_url {
        Some(url) => config.access(url)?.api_token,
        None => config.access("")?.api_token,
    };
    let repository = config.repository.clone().or_else(|| remote_url.and_then(repository_from_url));
    let api = match (token, repository) {
        (Some(token), Some(repository)) => {
            let retry = RetryPolicy {
                attempts: config.retry_attempts.max(1),
                first_delay: Duration::from_millis(config.retry_delay_ms),
                max_delay: Duration::from_secs(30),
            };
            Some(GitHub::new(&config.api_url, &repository, token, retry)?)
        }
        _ => None,
    };
    Ok(driftback_publish::webhook::router(secret, Arc::new(StoreSink { store, api, answerer })))
}

#[cfg(test)]
mod tests {
    use super::*;
    use driftback_publish::Secret;
    use driftback_store::PullRequestRecord;

    #[tokio::test]
    async fn a_signed_merge_delivery_is_recorded_in_the_store() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_sqlite(&dir.path().join("kb.sqlite")).await.unwrap();
        let record = PullRequestRecord {
            number: 4,
            address: "aws_instance.web".into(),
            branch: "driftback/aws_instance.web-1".into(),
            url: "https://github.example/acme/infra/pull/4".into(),
            state: PullRequestState::Open,
            head_commit: "abc".into(),
        };
        store.record_pull_request(&record).await.unwrap();
        let config =
            PublishConfig { webhook_secret_env: "DRIFTBACK_TEST_WEBHOOK_SECRET_UNSET".into(), ..Default::default() };
        assert!(webhook_router(&config, None, store.clone(), None).is_err(), "no secret, no router");

        let router = driftback_publish::webhook::router(
            Secret::new("s"),
            std::sync::Arc::new(StoreSink { store: store.clone(), api: None, answerer: None }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}{}", listener.local_addr().unwrap(), driftback_publish::webhook::WEBHOOK_PATH);
        tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
        let body = serde_json::json!({
            "action": "closed",
            "pull_request": {
                "number": 4, "html_url": record.url, "state": "closed", "title": "t", "body": null,
                "merged": true, "merged_at": "2024-05-02T09:30:00Z", "merge_commit_sha": "def",
                "head": {"ref": record.branch, "sha": "abc"}, "base": {"ref": "main", "sha": "0"}
            }
        })
        .to_string();
        let status = reqwest::Client::new()
            .post(&url)
            .header("x-github-event", "pull_request")
            .header("x-hub-signature-256", driftback_publish::webhook::signature(&Secret::new("s"), body.as_bytes()))
            .body(body)
            .send()
            .await
            .unwrap()
            .status();
        assert_eq!(status, 200);
        assert!(store.open_pull_request("aws_instance.web").await.unwrap().is_none(), "no longer open");
    }
}

#[cfg(test)]
mod change_set_tests {
    use super::{latest_change_set, thread_change_sets};

    #[test]
    fn the_thread_names_its_latest_change_set() {
        let body = "Change set `cs-1111`.\n...\nA later change. Change set `cs-2222`; ...";
        assert_eq!(latest_change_set(body).as_deref(), Some("cs-2222"));
        assert_eq!(latest_change_set("Change set `not valid!`"), None);
        assert_eq!(latest_change_set("nothing here"), None);
    }

    #[test]
    fn the_thread_names_every_change_set_it_carries_once() {
        let body = "Change set `cs-1111`.\nA later change. Change set `cs-2222`; Change set `bad id`\n\
                    Change set `cs-1111` again.";
        assert_eq!(thread_change_sets(body), ["cs-2222", "cs-1111"]);
        assert!(thread_change_sets("Change set `unterminated").is_empty());
    }
}
