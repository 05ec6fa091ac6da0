//! Decisions that wait for a person, against the GitHub stand-in: one issue per resource, updated
//! by later change sets and closed when resolved; commands from comments, obeyed only from people
//! with write access; and notifications to a chat webhook, grouped and retried.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::http::StatusCode;
use driftback_publish::commands::{Command, CommentCommand};
use driftback_publish::issues::{
    Closed, IssueAction, accepted_body, escalation_marker, find_open_draft, is_held_draft, marker_fields, may_decide,
    publish_escalation, publish_held_draft, resolve_escalation, resolve_if_covered,
};
use driftback_publish::notify::{Notice, Notifier, NotifyFormat};
use driftback_publish::webhook::{PullRequestChange, PullRequestEvents, SinkError};
use driftback_publish::{GitHub, RetryPolicy, Secret};
use serde_json::{Value, json};

use crate::github_server::{GitHubStandIn, TOKEN};
use crate::story;
use crate::webhook::deliver;

fn no_wait() -> RetryPolicy {
    RetryPolicy { attempts: 3, first_delay: Duration::ZERO, max_delay: Duration::ZERO }
}

fn escalated(name: &str) -> driftback_publish::story::Story {
    let mut s = story(name);
    s.decision.kind = "escalate".into();
    s.decision.rule = "security-weakening".into();
    s.decision.rationale = "a security weakening needs a person".into();
    s
}

#[tokio::test]
async fn an_escalation_opens_one_issue_per_resource_updates_it_and_closes_it_when_resolved() {
    let server = GitHubStandIn::start().await;
    let api = GitHub::new(&server.base_url, "acme/infra", Secret::new(TOKEN), no_wait()).unwrap();
    let mut first = escalated("console-instance-type");
    first.fields = vec!["instance_type".into()];

    let (issue, action) = publish_escalation(&api, &first, &["ops".to_string()]).await.unwrap();
    assert_eq!(action, IssueAction::Opened);
    let body = issue.body.clone().unwrap();
    assert!(body.starts_with(&escalation_marker(&first.address)), "{body}");
    assert!(body.contains("**escalate** by the rule `security-weakening`"), "{body}");
    assert!(body.contains("## What accepting would write") && body.contains("/driftback accept"), "{body}");
    assert!(body.contains(&format!("terraform plan -target={}", first.address)), "{body}");
    assert_eq!(
        server.inner.lock().unwrap().labels[&issue.number],
        ["driftback", "decision:escalate", "rule:security-weakening", "ops"]
    );

    // A later change set on the same resource updates that issue and comments; no second issue.
    let mut later = first.clone();
    later.change_set_id = "cs-later".into();
    later.decision.kind = "revert".into();
    later.decision.rule = "api-instance-types".into();
    later.fields = vec!["tags.Team".into()];
    let (again, action) = publish_escalation(&api, &later, &[]).await.unwrap();
    assert_eq!((again.number, action), (issue.number, IssueAction::Updated));
    assert_eq!(server.inner.lock().unwrap().issues.len(), 1);
    let body = again.body.unwrap();
    assert!(body.contains("`cs-later`"));
    // The revert says what the next apply sets back.
    assert!(
        body.contains("## What the next apply restores") && body.contains("`instance_type` back to `t3.medium`"),
        "{body}"
    );
    // The issue waits on the fields of both change sets.
    assert_eq!(marker_fields(&body), ["instance_type", "tags.Team"]);
    let comments = server.inner.lock().unwrap().comments.clone();
    assert!(comments.iter().any(|(n, c)| *n == issue.number && c.contains("A later change on")), "{comments:?}");
    // The earlier decision's labels are taken off (DELETE, the label percent-encoded in the path);
    // the others stay.
    assert_eq!(
        server.inner.lock().unwrap().labels[&issue.number],
        ["driftback", "ops", "decision:revert", "rule:api-instance-types"]
    );
    assert!(server.requests().iter().any(|r| r.method == "DELETE"
        && r.path == format!("/repos/acme/infra/issues/{}/labels/rule:security-weakening", issue.number)));

    // A later change that writes only part of what the issue waits on does not close it.
    let partial = vec!["instance_type".to_string()];
    assert_eq!(resolve_if_covered(&api, &first.address, &partial, "covered?").await.unwrap(), []);
    let state =
        server.inner.lock().unwrap().issues.iter().find(|i| i["number"] == issue.number).unwrap()["state"].clone();
    assert_eq!(state, "open");

    // Another resource gets its own issue.
    let mut other = first.clone();
    other.address = "aws_instance.db".into();
    let (second, _) = publish_escalation(&api, &other, &[]).await.unwrap();
    assert_ne!(second.number, issue.number);

    // Resolved: closed with the reason; resolving again finds nothing open.
    let closed = resolve_escalation(&api, &first.address, "The change was written into the code by #9.").await.unwrap();
    assert_eq!(closed, [Closed { number: issue.number, draft: false }]);
    let state =
        server.inner.lock().unwrap().issues.iter().find(|i| i["number"] == issue.number).unwrap()["state"].clone();
    assert_eq!(state, "closed");
    assert_eq!(resolve_escalation(&api, &first.address, "again").await.unwrap(), []);
    // The other resource's issue is still open.
    let open = driftback_publish::issues::find_open(&api, "aws_instance.db").await.unwrap();
    assert_eq!(open.map(|i| i.number), Some(second.number));
}

#[tokio::test]
async fn only_people_with_write_access_may_decide() {
    let server = GitHubStandIn::start().await;
    {
        let mut inner = server.inner.lock().unwrap();
        inner.permissions.insert("maria".into(), "write".into());
        inner.permissions.insert("ops-lead".into(), "admin".into());
        inner.permissions.insert("reviewer".into(), "read".into());
    }
    let api = GitHub::new(&server.base_url, "acme/infra", Secret::new(TOKEN), no_wait()).unwrap();
    assert!(may_decide(&api, "maria").await.unwrap());
    assert!(may_decide(&api, "ops-lead").await.unwrap());
    assert!(!may_decide(&api, "reviewer").await.unwrap());
    assert!(!may_decide(&api, "stranger").await.unwrap(), "not a collaborator (404)");
    assert!(!may_decide(&api, "../../admin").await.unwrap(), "not a login: never asked");
    assert!(!server.requests().iter().any(|r| r.path.contains("..")));
}

#[derive(Default)]
struct Commands(Mutex<Vec<CommentCommand>>);

impl PullRequestEvents for Commands {
    async fn record(&self, _: PullRequestChange) -> Result<(), SinkError> {
        Ok(())
    }
    async fn command(&self, command: CommentCommand) -> Result<(), SinkError> {
        self.0.lock().unwrap().push(command);
        Ok(())
    }
}

fn comment_payload(user: &str, kind: &str, body: &str, on_pull_request: bool) -> Value {
    let mut issue = json!({"number": 12, "title": "drift (escalate): aws_instance.web", "state": "open",
        "body": "<!-- driftback:escalation aws_instance.web -->\nbody"});
    if on_pull_request {
        issue["pull_request"] = json!({"url": "https://api.github.example/repos/acme/infra/pulls/12"});
    }
    json!({"action": "created", "issue": issue,
        "comment": {"id": 1, "body": body, "user": {"login": user, "type": kind}},
        "repository": {"full_name": "acme/infra"}, "sender": {"login": user, "type": kind}})
}

#[tokio::test]
async fn comment_commands_reach_the_sink_signed_and_from_people_only() {
    let sink = Arc::new(Commands::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}{}", listener.local_addr().unwrap(), driftback_publish::webhook::WEBHOOK_PATH);
    let app = driftback_publish::webhook::router(Secret::new("s"), sink.clone());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let (status, _) =
        deliver(&url, "issue_comment", &comment_payload("maria", "User", "/driftback accept", false), Some("s")).await;
    assert_eq!(status, 200);
    // Unsigned: refused. A bot (driftback's own replies): ignored. No command: ignored.
    assert_eq!(
        deliver(&url, "issue_comment", &comment_payload("eve", "User", "/driftback accept", false), None).await.0,
        401
    );
    assert_eq!(
        deliver(&url, "issue_comment", &comment_payload("driftback-bot", "Bot", "/driftback accept", false), Some("s"))
            .await
            .0,
        202
    );
    assert_eq!(
        deliver(&url, "issue_comment", &comment_payload("maria", "User", "thanks!", true), Some("s")).await.0,
        202
    );
    let (status, _) =
        deliver(&url, "issue_comment", &comment_payload("maria", "User", "/driftback nuke", true), Some("s")).await;
    assert_eq!(status, 200);
    let got = sink.0.lock().unwrap().clone();
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!((got[0].number, got[0].user.as_str(), &got[0].command), (12, "maria", &Ok(Command::Accept)));
    assert!(!got[0].on_pull_request && got[1].on_pull_request);
    assert!(got[0].thread_body.contains("driftback:escalation aws_instance.web"));
    assert!(got[1].command.as_ref().unwrap_err().to_string().contains("not a command"), "{got:?}");
}

/// A chat webhook on loopback: records each message, answers 500 to the first `fail` posts.
async fn chat_sink(fail: usize) -> (String, Arc<Mutex<Vec<Value>>>) {
    let posts = Arc::new(Mutex::new(Vec::new()));
    let failures = Arc::new(Mutex::new(fail));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/services/T000/B000/XXXX", listener.local_addr().unwrap());
    let app = axum::Router::new().route(
        "/services/T000/B000/XXXX",
        axum::routing::post({
            let (posts, failures) = (posts.clone(), failures.clone());
            move |Json(body): Json<Value>| async move {
                let mut left = failures.lock().unwrap();
                if *left > 0 {
                    *left -= 1;
                    return StatusCode::INTERNAL_SERVER_ERROR;
                }
                posts.lock().unwrap().push(body);
                StatusCode::OK
            }
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, posts)
}

fn notice(i: usize) -> Notice {
    Notice {
        address: format!("aws_security_group.app_{i}"),
        decision: "escalate".into(),
        rule: "security-weakening".into(),
        actor: "alice".into(),
        summary: "ingress 0.0.0.0/0:22 added".into(),
        change_set_id: format!("cs-{i}"),
        link: Some(format!("https://github.example/acme/infra/issues/{i}")),
    }
}

#[tokio::test]
async fn a_burst_of_escalations_is_one_message_and_a_failed_post_is_retried() {
    let (url, posts) = chat_sink(1).await;
    let notifier = Notifier::start(url, NotifyFormat::Slack, Duration::from_millis(300), no_wait());
    for i in 0..3 {
        notifier.notify(notice(i));
    }
    tokio::time::sleep(Duration::from_millis(800)).await;
    notifier.notify(notice(3));
    notifier.close().await;
    let posts = posts.lock().unwrap().clone();
    assert_eq!(posts.len(), 2, "{posts:?}");
    let first = posts[0]["text"].as_str().unwrap();
    assert!(first.starts_with("driftback: 3 changes"), "{first}");
    assert!(first.contains("aws_security_group.app_2") && !first.contains("app_3"), "{first}");
    assert!(posts[1]["text"].as_str().unwrap().contains("1 change made outside Terraform waits"));
    // No token or secret of any kind in the payload: only what the notice holds.
    let keys: Vec<&String> = posts[0].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["text"]);

    let (url, posts) = chat_sink(0).await;
    let notifier = Notifier::start(url, NotifyFormat::Json, Duration::from_millis(50), no_wait());
    notifier.notify(notice(7));
    notifier.close().await;
    let posts = posts.lock().unwrap().clone();
    assert_eq!(posts[0]["notices"][0]["change_set_id"], "cs-7");
}

#[tokio::test]
async fn a_held_edit_is_a_draft_pull_request_updated_per_resource_and_closed_when_resolved() {
    let server = GitHubStandIn::start().await;
    let api = GitHub::new(&server.base_url, "acme/infra", Secret::new(TOKEN), no_wait()).unwrap();
    let mut first = escalated("console-instance-type");
    first.fields = vec!["instance_type".into()];
    first.diff =
        "diff --git a/main.tf b/main.tf\n-  instance_type = \"t3.medium\"\n+  instance_type = \"t3.large\"\n".into();
    let head = "driftback/aws_instance.web-cs-1";

    let (pr, action) = publish_held_draft(&api, None, &first, head, Some("abc1234567"), &["ops".into()]).await.unwrap();
    assert_eq!(action, IssueAction::Opened);
    assert!(pr.draft, "the answer says draft: {pr:?}");
    // GitHub's wire format: `draft: true` in the POST, and the pull request object says it.
    let posted = server.requests().into_iter().find(|r| r.method == "POST" && r.path.ends_with("/pulls")).unwrap();
    assert_eq!(posted.body["draft"], true, "{:?}", posted.body);
    assert_eq!((posted.body["head"].as_str(), posted.body["base"].as_str()), (Some(head), Some("main")));
    let body = pr.body.clone().unwrap();
    assert!(body.starts_with(&escalation_marker(&first.address)), "{body}");
    assert!(!body.contains("<!-- driftback:resource "), "reconciliations must not land on a held draft: {body}");
    assert!(body.contains("**Held for a person.**") && body.contains("mark it ready for review"), "{body}");
    assert!(body.contains("**escalate** by the rule `security-weakening`"), "{body}");
    assert!(body.contains("+  instance_type = \"t3.large\""), "{body}");
    assert!(body.contains("## Timeline") && body.contains("/driftback accept"), "{body}");
    assert_eq!(
        server.inner.lock().unwrap().labels[&pr.number],
        ["driftback", "decision:escalate", "rule:security-weakening", "ops"]
    );
    // It is the resource's held draft, not its issue.
    let found = find_open_draft(&api, &first.address).await.unwrap().expect("found by its marker");
    assert_eq!(found.number, pr.number);
    assert!(driftback_publish::issues::find_open(&api, &first.address).await.unwrap().is_none());

    // A later change set on the resource updates the draft: title, body (fields united), comment
    // naming the commit, the decision's labels replaced; no second pull request.
    let mut later = first.clone();
    later.change_set_id = "cs-later".into();
    later.decision.kind = "revert".into();
    later.decision.rule = "api-instance-types".into();
    later.fields = vec!["tags.Team".into()];
    let (again, action) = publish_held_draft(&api, Some(&found), &later, head, Some("def9876543"), &[]).await.unwrap();
    assert_eq!((again.number, action), (pr.number, IssueAction::Updated));
    assert_eq!(server.inner.lock().unwrap().pulls.len(), 1);
    let body = again.body.unwrap();
    assert_eq!(marker_fields(&body), ["instance_type", "tags.Team"]);
    assert!(body.contains("`cs-later`") && body.contains("## What the next apply restores"), "{body}");
    let comments = server.inner.lock().unwrap().comments.clone();
    assert!(
        comments.iter().any(|(n, c)| *n == pr.number && c.contains("A later change on") && c.contains("`def9876543`")),
        "{comments:?}"
    );
    assert_eq!(
        server.inner.lock().unwrap().labels[&pr.number],
        ["driftback", "ops", "decision:revert", "rule:api-instance-types"]
    );

    // A change covering only part of what it waits on leaves it open; one covering all closes it
    // without merging (PATCH .../pulls/N, state closed), with the reason.
    let partial = vec!["instance_type".to_string()];
    assert_eq!(resolve_if_covered(&api, &first.address, &partial, "partly").await.unwrap(), []);
    let all = vec!["instance_type".to_string(), "tags".to_string()];
    let closed = resolve_if_covered(&api, &first.address, &all, "Written by #9; closing.").await.unwrap();
    assert_eq!(closed, [Closed { number: pr.number, draft: true }]);
    assert_eq!(closed[0].describe(), format!("held draft pull request #{} closed", pr.number));
    assert!(server.requests().iter().any(|r| r.method == "PATCH"
        && r.path == format!("/repos/acme/infra/pulls/{}", pr.number)
        && r.body == json!({"state": "closed"})));
    let state = server.inner.lock().unwrap().pulls[0]["state"].clone();
    assert_eq!(state, "closed");
    assert!(find_open_draft(&api, &first.address).await.unwrap().is_none());

    // Accepted, a draft's body loses the markers that keep it waiting.
    let accepted = accepted_body(&body);
    assert!(!is_held_draft(&accepted) && is_held_draft(&body));
    assert!(!accepted.contains("driftback:fields") && accepted.contains("`cs-later`"), "{accepted}");
}
