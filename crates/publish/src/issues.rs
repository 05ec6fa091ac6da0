//! Decisions that wait for a person, where the team works: one GitHub issue per resource for its
//! escalations and reverts ([`publish_escalation`]: opened once, updated as later change sets on
//! the resource arrive, labelled with the decision and the rule), closed when the drift is resolved
//! ([`resolve_escalation`]); and the people allowed to answer in it ([`may_decide`]). Where the
//! edit accepting would write can be committed, the resource's thread is a draft pull request
//! holding it instead ([`publish_held_draft`]), found, updated and closed the same way.
//!
//! Issues are found again by the resource's marker in their body among the open issues labelled
//! [`ESCALATION_LABEL`], so a lost store never duplicates them.

use std::future::Future;

use reqwest::Method;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::github::{
    GitHub, GitHubError, MAX_BODY_CHARS, MAX_PAGES, NewPullRequest, PER_PAGE, PullRequest, PullRequestApi,
};
use crate::markdown::{comment_safe, text};
use crate::story::Story;

/// The label every escalation issue carries.
pub const ESCALATION_LABEL: &str = "driftback";

/// An issue as the API returns it (the fields driftback reads).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Issue {
    pub number: u64,
    pub html_url: String,
    /// `open` or `closed`.
    pub state: String,
    pub title: String,
    pub body: Option<String>,
    /// Present when the "issue" is a pull request (the issues API lists both).
    #[serde(default)]
    pub pull_request: Option<Value>,
    /// Its labels (names only).
    #[serde(default)]
    pub labels: Vec<IssueLabel>,
}

/// A label as the issues API returns it (the name is what driftback reads).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IssueLabel {
    pub name: String,
}

/// A new issue.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NewIssue {
    pub title: String,
    pub body: String,
    pub labels: Vec<String>,
}

/// A collaborator's permission on the repository, as GitHub names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Permission {
    Admin,
    Maintain,
    Write,
    Triage,
    Read,
    None,
}

impl Permission {
    /// From the collaborator permission endpoint's answer (`permission`, refined by `role_name`).
    fn from_answer(answer: &Value) -> Permission {
        let role = answer.get("role_name").and_then(Value::as_str).unwrap_or_default();
        match (answer.get("permission").and_then(Value::as_str).unwrap_or_default(), role) {
            ("admin", _) => Permission::Admin,
            ("write", "maintain") => Permission::Maintain,
            ("write", _) => Permission::Write,
            ("read", "triage") => Permission::Triage,
            ("read", _) => Permission::Read,
            _ => Permission::None,
        }
    }

    /// Whether someone with it may decide for the repository's code: write access or more.
    pub fn may_write(self) -> bool {
        matches!(self, Permission::Admin | Permission::Maintain | Permission::Write)
    }
}

/// What the issue service can do, as driftback uses it (comments and labels come from
/// [`PullRequestApi`]: GitHub serves both through the issues endpoints). [`GitHub`] implements it.
pub trait IssueApi: PullRequestApi {
    /// Open issues and pull requests carrying `label`, every page (a pull request has
    /// [`Issue::pull_request`] set, as the issues endpoint lists it).
    fn list_open_threads(&self, label: &str) -> impl Future<Output = Result<Vec<Issue>, GitHubError>> + Send;
    fn create_issue(&self, new: &NewIssue) -> impl Future<Output = Result<Issue, GitHubError>> + Send;
    /// Replace the title and body.
    fn update_issue(
        &self,
        number: u64,
        title: &str,
        body: &str,
    ) -> impl Future<Output = Result<Issue, GitHubError>> + Send;
    /// Close as completed.
    fn close_issue(&self, number: u64) -> impl Future<Output = Result<Issue, GitHubError>> + Send;
    /// Take `label` off the issue; a label it does not carry is not an error.
    fn remove_label(&self, number: u64, label: &str) -> impl Future<Output = Result<(), GitHubError>> + Send;
    /// `user`'s permission on the repository.
    fn permission(&self, user: &str) -> impl Future<Output = Result<Permission, GitHubError>> + Send;
}

impl IssueApi for GitHub {
    async fn list_open_threads(&self, label: &str) -> Result<Vec<Issue>, GitHubError> {
        let mut all = Vec::new();
        for page in 1..=MAX_PAGES {
            let query = [
                ("state", "open".to_string()),
                ("labels", label.to_string()),
                ("per_page", PER_PAGE.to_string()),
                ("page", page.to_string()),
            ];
            let url = self.url("issues", &query)?;
            let batch: Vec<Issue> = self.call("the list of open issues", Method::GET, url, None).await?;
            let last = batch.len() < PER_PAGE;
            all.extend(batch);
            if last {
                break;
            }
        }
        Ok(all)
    }

    async fn create_issue(&self, new: &NewIssue) -> Result<Issue, GitHubError> {
        let url = self.url("issues", &[])?;
        let body = serde_json::to_value(new).map_err(|e| GitHubError::Config(e.to_string()))?;
        self.call("an issue", Method::POST, url, Some(&body)).await
    }

    async fn update_issue(&self, number: u64, title: &str, body: &str) -> Result<Issue, GitHubError> {
        let url = self.url(&format!("issues/{number}"), &[])?;
        let payload = json!({ "title": title, "body": body });
        self.call(&format!("the update of issue #{number}"), Method::PATCH, url, Some(&payload)).await
    }

    async fn close_issue(&self, number: u64) -> Result<Issue, GitHubError> {
        let url = self.url(&format!("issues/{number}"), &[])?;
        let payload = json!({ "state": "closed", "state_reason": "completed" });
        self.call(&format!("closing issue #{number}"), Method::PATCH, url, Some(&payload)).await
    }

    async fn remove_label(&self, number: u64, label: &str) -> Result<(), GitHubError> {
        let mut url = self.url(&format!("issues/{number}/labels"), &[])?;
        // One path segment, percent-encoded (labels hold `:` and may hold `/`).
        url.path_segments_mut().map_err(|()| GitHubError::Config("the API URL cannot take a path".into()))?.push(label);
        match self.call::<Value>(&format!("removing a label of #{number}"), Method::DELETE, url, None).await {
            Ok(_) | Err(GitHubError::NotFound { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }

    async fn permission(&self, user: &str) -> Result<Permission, GitHubError> {
        if user.is_empty()
            || !user.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '[' || c == ']')
        {
            return Ok(Permission::None);
        }
        let url = self.url(&format!("collaborators/{user}/permission"), &[])?;
        match self.call::<Value>(&format!("the permission of {user}"), Method::GET, url, None).await {
            Ok(answer) => Ok(Permission::from_answer(&answer)),
            // Not a collaborator (GitHub answers 404 for users outside the repository).
            Err(GitHubError::NotFound { .. }) => Ok(Permission::None),
            Err(e) => Err(e),
        }
    }
}

/// The marker that identifies a resource's escalation issue among the open ones.
pub fn escalation_marker(address: &str) -> String {
    format!("<!-- driftback:escalation {} -->", comment_safe(address))
}

/// Whether the escalation issue was opened or an open one was updated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IssueAction {
    Opened,
    Updated,
}

/// The labels of an escalation: the common one, the decision kind and the rule.
pub fn escalation_labels(story: &Story, extra: &[String]) -> Vec<String> {
    let mut labels = vec![ESCALATION_LABEL.to_string(), format!("decision:{}", story.decision.kind)];
    if !story.decision.rule.is_empty() {
        let rule: String = story.decision.rule.chars().filter(|c| !c.is_control()).take(40).collect();
        labels.push(format!("rule:{rule}"));
    }
    for label in extra {
        if !labels.contains(label) {
            labels.push(label.clone());
        }
    }
    labels
}

/// The hidden line that keeps the fields an escalation issue waits on (JSON, made comment-safe).
pub fn fields_marker(fields: &[String]) -> String {
    let json = serde_json::to_string(fields).unwrap_or_else(|_| "[]".into());
    format!("<!-- driftback:fields {} -->", comment_safe(&json))
}

/// The fields an escalation issue's body waits on (empty when it names none).
pub fn marker_fields(body: &str) -> Vec<String> {
    const HEAD: &str = "<!-- driftback:fields ";
    body.lines()
        .find_map(|l| l.trim().strip_prefix(HEAD)?.strip_suffix(" -->").map(str::to_string))
        .map(|json| json.replace("%3E", ">").replace("%2D", "-").replace("%25", "%"))
        .and_then(|json| serde_json::from_str::<Vec<String>>(&json).ok())
        .unwrap_or_default()
}

/// Whether the change to `covered` (policy paths of one resource) covers every field in `waiting`:
/// each is the same path, inside one of them, or holds one (`tags` covers `tags.Team`). Nothing
/// waiting is never covered: an issue that names no field is closed by a person, not by a guess.
pub fn covers(covered: &[String], waiting: &[String]) -> bool {
    let inside = |inner: &str, outer: &str| {
        inner == outer || inner.strip_prefix(outer).is_some_and(|rest| rest.starts_with(['.', '[']))
    };
    !waiting.is_empty() && waiting.iter().all(|w| covered.iter().any(|c| inside(w, c) || inside(c, w)))
}

/// Labels driftback sets from a decision, which a later decision replaces.
fn is_decision_label(label: &str) -> bool {
    label.starts_with("decision:") || label.starts_with("rule:")
}

/// Open the issue for `story`'s resource, or update the open one: the title and body follow the
/// latest change set (the body keeps the marker, and the fields every change set published in it
/// waits on), a comment tells what arrived, so the thread is the resource's timeline, and the
/// decision and rule labels of an earlier decision are replaced.
pub async fn publish_escalation<A: IssueApi>(
    api: &A,
    story: &Story,
    extra_labels: &[String],
) -> Result<(Issue, IssueAction), GitHubError> {
    let marker = escalation_marker(&story.address);
    let labels = escalation_labels(story, extra_labels);
    if let Some(open) = find_open(api, &story.address).await? {
        let mut fields = marker_fields(open.body.as_deref().unwrap_or_default());
        for field in &story.fields {
            if !fields.contains(field) {
                fields.push(field.clone());
            }
        }
        let body = format!("{marker}\n{}\n{}", fields_marker(&fields), bounded(&story.escalation_body()));
        let updated = api.update_issue(open.number, &story.escalation_title(), &body).await?;
        api.comment(open.number, &story.escalation_comment()).await?;
        for stale in open.labels.iter().filter(|l| is_decision_label(&l.name) && !labels.contains(&l.name)) {
            api.remove_label(open.number, &stale.name).await?;
        }
        api.add_labels(open.number, &labels).await?;
        return Ok((updated, IssueAction::Updated));
    }
    let body = format!("{marker}\n{}\n{}", fields_marker(&story.fields), bounded(&story.escalation_body()));
    let new = NewIssue { title: story.escalation_title(), body, labels };
    Ok((api.create_issue(&new).await?, IssueAction::Opened))
}

/// A thread driftback closed because what it waited on was decided or resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Closed {
    pub number: u64,
    /// A held draft pull request (else an escalation issue).
    pub draft: bool,
}

impl Closed {
    /// `escalation issue #4 closed`, `held draft pull request #5 closed`.
    pub fn describe(&self) -> String {
        match self.draft {
            true => format!("held draft pull request #{} closed", self.number),
            false => format!("escalation issue #{} closed", self.number),
        }
    }
}

/// Close what waits for a person on `address`: its open escalation issue and its held draft pull
/// request (closed without merging), each with a comment saying why (`why` is markdown the caller
/// wrote, not event text).
pub async fn resolve_escalation<A: IssueApi>(api: &A, address: &str, why: &str) -> Result<Vec<Closed>, GitHubError> {
    let mut closed = Vec::new();
    for open in find_waiting(api, address).await? {
        closed.push(close_thread(api, &open, why).await?);
    }
    Ok(closed)
}

/// Close the open escalation issue of `address` only (a person's accept writes the held draft's
/// edit, which stays open to be merged). Returns its number.
pub async fn resolve_issue<A: IssueApi>(api: &A, address: &str, why: &str) -> Result<Option<u64>, GitHubError> {
    let Some(open) = find_open(api, address).await? else { return Ok(None) };
    Ok(Some(close_thread(api, &open, why).await?.number))
}

/// Close what waits on `address` (its issue, its held draft) only when `covered` (the fields a
/// later change set wrote, or found already as the code says) covers every field it waits on
/// ([`covers`]).
pub async fn resolve_if_covered<A: IssueApi>(
    api: &A,
    address: &str,
    covered: &[String],
    why: &str,
) -> Result<Vec<Closed>, GitHubError> {
    let mut closed = Vec::new();
    for open in find_waiting(api, address).await? {
        if covers(covered, &marker_fields(open.body.as_deref().unwrap_or_default())) {
            closed.push(close_thread(api, &open, why).await?);
        }
    }
    Ok(closed)
}

async fn close_thread<A: IssueApi>(api: &A, open: &Issue, why: &str) -> Result<Closed, GitHubError> {
    api.comment(open.number, why).await?;
    let draft = open.pull_request.is_some();
    if draft {
        api.close(open.number).await?;
    } else {
        api.close_issue(open.number).await?;
    }
    Ok(Closed { number: open.number, draft })
}

/// The open threads (issue, held draft pull request) carrying the escalation marker of `address`.
async fn find_waiting<A: IssueApi>(api: &A, address: &str) -> Result<Vec<Issue>, GitHubError> {
    let marker = escalation_marker(address);
    let open = api.list_open_threads(ESCALATION_LABEL).await?;
    Ok(open.into_iter().filter(|i| i.body.as_deref().is_some_and(|b| b.lines().any(|l| l.trim() == marker))).collect())
}

/// The open escalation issue of `address`.
pub async fn find_open<A: IssueApi>(api: &A, address: &str) -> Result<Option<Issue>, GitHubError> {
    Ok(find_waiting(api, address).await?.into_iter().find(|i| i.pull_request.is_none()))
}

/// The open held draft pull request of `address` (as the issues endpoint lists it: its number,
/// body and labels; [`PullRequestApi::get`] gives its branch).
pub async fn find_open_draft<A: IssueApi>(api: &A, address: &str) -> Result<Option<Issue>, GitHubError> {
    Ok(find_waiting(api, address).await?.into_iter().find(|i| i.pull_request.is_some()))
}

/// Open the held draft pull request for `story`'s resource from the pushed branch `head`, or, when
/// `existing` is the resource's open held draft (whose branch `commit` was pushed onto), update it
/// as [`publish_escalation`] updates an issue: title and body follow the latest change set (the
/// fields waited on are the union), a comment names the commit added, the decision and rule labels
/// are replaced. The body is the escalation issue's, saying the edit is held in this draft.
pub async fn publish_held_draft<A: IssueApi>(
    api: &A,
    existing: Option<&Issue>,
    story: &Story,
    head: &str,
    commit: Option<&str>,
    extra_labels: &[String],
) -> Result<(PullRequest, IssueAction), GitHubError> {
    let marker = escalation_marker(&story.address);
    let labels = escalation_labels(story, extra_labels);
    if let Some(open) = existing {
        let mut fields = marker_fields(open.body.as_deref().unwrap_or_default());
        for field in &story.fields {
            if !fields.contains(field) {
                fields.push(field.clone());
            }
        }
        let body = format!("{marker}\n{}\n{}", fields_marker(&fields), bounded(&story.held_draft_body()));
        let updated = api.update(open.number, &story.escalation_title(), &body).await?;
        api.comment(open.number, &story.held_draft_comment(commit)).await?;
        for stale in open.labels.iter().filter(|l| is_decision_label(&l.name) && !labels.contains(&l.name)) {
            api.remove_label(open.number, &stale.name).await?;
        }
        api.add_labels(open.number, &labels).await?;
        return Ok((updated, IssueAction::Updated));
    }
    // A draft for this very branch may exist when an earlier run stopped before it was found again.
    let pr = match api.find_open_by_head(head).await? {
        Some(pr) => pr,
        None => {
            let body = format!("{marker}\n{}\n{}", fields_marker(&story.fields), bounded(&story.held_draft_body()));
            let new = NewPullRequest {
                title: story.escalation_title(),
                head: head.to_string(),
                base: story.base_branch.clone(),
                body,
                draft: true,
            };
            api.create(&new).await?
        }
    };
    api.add_labels(pr.number, &labels).await?;
    Ok((pr, IssueAction::Opened))
}

/// The body of a held draft `/driftback accept` turned into the resource's pull request: the
/// escalation and fields markers taken out, so it is no longer found as waiting for a person (a
/// merge is then an ordinary one) and later changes to the resource can go onto its branch.
pub fn accepted_body(body: &str) -> String {
    body.lines()
        .filter(|l| {
            let l = l.trim();
            !(l.starts_with("<!-- driftback:escalation ") || l.starts_with("<!-- driftback:fields "))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether a pull request's body is a held draft's (it carries an escalation marker).
pub fn is_held_draft(body: &str) -> bool {
    body.lines().any(|l| l.trim().starts_with("<!-- driftback:escalation "))
}

/// Whether `user` may answer for the repository (write access or more), asked of GitHub.
pub async fn may_decide<A: IssueApi>(api: &A, user: &str) -> Result<bool, GitHubError> {
    Ok(api.permission(user).await?.may_write())
}

fn bounded(body: &str) -> String {
    if body.chars().count() <= MAX_BODY_CHARS {
        return body.to_string();
    }
    let cut: String = body.chars().take(MAX_BODY_CHARS - 200).collect();
    format!("{cut}\n\n*The rest is in the change set's record (`driftback kb`).*")
}

/// The reply to a command from someone without write access.
pub fn refusal(user: &str) -> String {
    format!(
        "@{} only people with write access to this repository can answer for its code; nothing was done.",
        text(user)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permissions_follow_githubs_answer() {
        let p = |v: Value| Permission::from_answer(&v);
        assert_eq!(p(json!({"permission": "admin", "role_name": "admin"})), Permission::Admin);
        assert_eq!(p(json!({"permission": "write", "role_name": "maintain"})), Permission::Maintain);
        assert_eq!(p(json!({"permission": "write", "role_name": "write"})), Permission::Write);
        assert_eq!(p(json!({"permission": "read", "role_name": "triage"})), Permission::Triage);
        assert_eq!(p(json!({"permission": "read"})), Permission::Read);
        assert_eq!(p(json!({"permission": "none"})), Permission::None);
        assert!(Permission::Maintain.may_write() && !Permission::Triage.may_write());
    }

    #[test]
    fn fields_survive_their_marker_and_coverage_is_by_path() {
        let fields = vec!["tags.Team".to_string(), "ingress".into(), "x-->y%2D".into()];
        let body = format!("<!-- driftback:escalation a -->\n{}\nbody", fields_marker(&fields));
        assert_eq!(body.matches("-->").count(), 2, "{body}");
        assert_eq!(marker_fields(&body), fields);
        assert_eq!(marker_fields("no marker"), Vec::<String>::new());
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert!(covers(&s(&["tags"]), &s(&["tags.Team"])));
        assert!(covers(&s(&["ingress[0].cidr_blocks", "tags.Owner"]), &s(&["ingress"])));
        assert!(!covers(&s(&["tags.Owner"]), &s(&["ingress"])), "a tag does not cover the ingress rule");
        assert!(!covers(&s(&["tagsx"]), &s(&["tags"])));
        assert!(!covers(&s(&["instance_type"]), &s(&["instance_type", "ami"])), "every field must be covered");
        assert!(!covers(&s(&["instance_type"]), &[]), "nothing named: never closed by a guess");
    }

    #[test]
    fn the_marker_cannot_be_closed_by_an_address() {
        let marker = escalation_marker("aws_s3_bucket.x --> <script>");
        assert_eq!(marker.matches("-->").count(), 1, "{marker}");
    }
}
