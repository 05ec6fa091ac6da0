//! The pull request flow against the GitHub stand-in: create with labels and draft, find by head
//! and by resource, update and comment, read the merge state; and end to end with a bare remote.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use driftback_publish::github::{
    PullRequestAction, PullRequestOptions, PullRequestState, find_open_for_resource, open_or_update,
};
use driftback_publish::message::commit_message;
use driftback_publish::{
    Author, Credentials, GitHub, GitHubError, GitRepo, PullRequestApi, Remote, RetryPolicy, Secret,
};

use crate::github_server::{GitHubStandIn, TOKEN};
use crate::webhook::{Recorder, closed_payload, deliver, serve};
use crate::{Setup, git, story};

fn no_wait() -> RetryPolicy {
    RetryPolicy { attempts: 3, first_delay: Duration::ZERO, max_delay: Duration::ZERO }
}

fn client(server: &GitHubStandIn, token: &str) -> GitHub {
    GitHub::new(&server.base_url, "acme/infra", Secret::new(token), no_wait()).unwrap()
}

#[tokio::test]
async fn a_new_pull_request_is_created_with_its_labels_then_updated_and_commented() {
    let server = GitHubStandIn::start().await;
    let api = client(&server, TOKEN);
    let story = story("console-instance-type");
    let options = PullRequestOptions { labels: vec!["drift".into(), "driftback".into()], draft: true };

    let (pr, action) =
        open_or_update(&api, None, &story, "driftback/aws_instance.web-5e1f0c2a", "c1", &options).await.unwrap();
    assert_eq!(action, PullRequestAction::Created);
    assert_eq!(pr.number, 1);
    assert!(pr.draft);
    let requests = server.requests();
    let create = requests.iter().find(|r| r.method == "POST" && r.path == "/repos/acme/infra/pulls").unwrap();
    assert_eq!(create.body["title"], story.title());
    assert_eq!(create.body["body"], story.body());
    assert_eq!(create.body["base"], "main");
    assert_eq!(create.body["draft"], true);
    assert_eq!(server.inner.lock().unwrap().labels[&1], ["drift", "driftback"]);

    // Found again by head, and by the resource's marker when the caller has no record.
    let by_head = api.find_open_by_head("driftback/aws_instance.web-5e1f0c2a").await.unwrap().unwrap();
    assert_eq!(by_head.number, 1);
    assert!(api.find_open_by_head("driftback/other").await.unwrap().is_none());
    let found = find_open_for_resource(&api, None, "aws_instance.web", "main").await.unwrap().unwrap();
    assert_eq!(found.number, 1);
    assert!(find_open_for_resource(&api, None, "aws_instance.db", "main").await.unwrap().is_none());

    // A later change set on the same resource updates this pull request instead of opening another.
    let mut later = story.clone();
    later.change_set_id = "cs-later".into();
    later.changes[0].before = Some("t3.large".into());
    later.changes[0].after = Some("t3.xlarge".into());
    let (updated, action) =
        open_or_update(&api, Some(&found), &later, &found.head.branch, "c2c2c2c2c2c2", &options).await.unwrap();
    assert_eq!(action, PullRequestAction::Updated);
    assert_eq!(updated.number, 1);
    assert_eq!(updated.title, later.title());
    let body = updated.body.unwrap();
    assert!(body.starts_with(&story.body()), "the first story stays");
    assert!(body.contains("## Later change: instance\\_type t3.large -&gt; t3.xlarge and 1 more"), "{body}");
    assert_eq!(server.inner.lock().unwrap().pulls.len(), 1, "no second pull request");
    let comments = server.inner.lock().unwrap().comments.clone();
    assert_eq!(comments.len(), 1);
    assert_eq!(comments[0].0, 1);
    assert!(comments[0].1.contains("`c2c2c2c2c2`") && !comments[0].1.contains("cs-later"), "{}", comments[0].1);

    // The merge is read back.
    assert_eq!(api.get(1).await.unwrap().lifecycle(), PullRequestState::Open);
    // A draft is marked ready (in GitHub's interface) before it can be merged.
    server.mark_ready(1);
    server.merge(1);
    let merged = api.get(1).await.unwrap();
    assert_eq!(merged.lifecycle(), PullRequestState::Merged);
    assert_eq!(merged.merged_by.map(|u| u.login).as_deref(), Some("maria"));
    assert!(find_open_for_resource(&api, Some(1), "aws_instance.web", "main").await.unwrap().is_none());
}

#[tokio::test]
async fn errors_say_what_to_fix_and_server_errors_are_retried() {
    let server = GitHubStandIn::start().await;
    let err = client(&server, "wrong").list_open("main").await.unwrap_err();
    assert!(matches!(err, GitHubError::Unauthorized { .. }), "{err}");
    assert!(!err.to_string().contains("wrong"), "the token is not in the message");
    assert!(err.to_string().contains("publish.token_env"), "{err}");

    let api = client(&server, TOKEN);
    server.inner.lock().unwrap().fail_next = 2;
    assert!(api.list_open("main").await.unwrap().is_empty(), "two 502s, then an answer");
    server.inner.lock().unwrap().fail_next = 5;
    let err = api.list_open("main").await.unwrap_err();
    assert!(matches!(err, GitHubError::Unavailable { attempts: 3, .. }), "{err}");
    server.inner.lock().unwrap().fail_next = 0;

    let story = story("console-instance-type");
    let options = PullRequestOptions::default();
    open_or_update(&api, None, &story, "driftback/x", "c", &options).await.unwrap();
    // A second create for the same head is GitHub's 422, surfaced with its message.
    let new = driftback_publish::github::NewPullRequest {
        title: "t".into(),
        head: "driftback/x".into(),
        base: "main".into(),
        body: "b".into(),
        draft: false,
    };
    let err = api.create(&new).await.unwrap_err();
    assert!(err.to_string().contains("A pull request already exists"), "{err}");
    // open_or_update finds that pull request by its head instead of failing.
    let (again, _) = open_or_update(&api, None, &story, "driftback/x", "c", &options).await.unwrap();
    assert_eq!(again.number, 1);
}

#[tokio::test]
async fn many_open_pull_requests_are_read_page_by_page() {
    let server = GitHubStandIn::start().await;
    let api = client(&server, TOKEN);
    let mut s = story("console-instance-type");
    for i in 0..120 {
        s.address = format!("aws_instance.n{i}");
        open_or_update(&api, None, &s, &format!("driftback/n{i}"), "c", &PullRequestOptions::default()).await.unwrap();
    }
    let found = find_open_for_resource(&api, None, "aws_instance.n115", "main").await.unwrap().unwrap();
    assert_eq!(found.head.branch, "driftback/n115");
    let pages: Vec<String> = server
        .requests()
        .iter()
        .filter(|r| r.method == "GET" && r.query.contains("per_page=100"))
        .map(|r| r.query.clone())
        .collect();
    assert_eq!(pages.len(), 2, "{pages:?}");
}

/// A change set becomes a pushed branch and a pull request with its story; a second change on the
/// same resource lands on that branch and updates that pull request; the merge is recorded through
/// the webhook.
#[tokio::test]
async fn end_to_end_change_sets_become_one_pull_request_per_resource_and_the_merge_is_recorded() {
    let setup = Setup::create();
    let server = GitHubStandIn::start().await;
    let api = client(&server, TOKEN);
    let remote = Remote::new(&setup.remote_url(), Credentials::None, no_wait()).unwrap();
    let repo = GitRepo::open_clean(&setup.work).unwrap();
    let base = repo.head_commit().unwrap();
    let options = PullRequestOptions { labels: vec!["drift".into()], draft: false };

    // As the binary does: a change on a resource with an open pull request is planned on that
    // pull request's branch and committed on top of it; otherwise on the base.
    let publish = async |story: &driftback_publish::story::Story, edit: &dyn Fn(&str) -> String, local: &str| {
        let existing = find_open_for_resource(&api, None, &story.address, "main").await.unwrap();
        let (head, parent) = match &existing {
            Some(pr) => (pr.head.branch.clone(), remote.fetch_branch(&repo, &pr.head.branch).unwrap().unwrap()),
            None => (local.to_string(), base),
        };
        let before = repo.files_at(parent).unwrap()[&PathBuf::from("main.tf")].clone();
        let changes = vec![(PathBuf::from("main.tf"), Some(edit(&before)))];
        let (_, commit) =
            repo.commit_on_branch(parent, local, &changes, &commit_message(story), &Author::default()).unwrap();
        let pushed = remote.push_change(&repo, commit, &head, "main", &mut |_: &[_]| Ok(())).unwrap();
        assert_eq!(pushed.rebased_onto, None, "planned on the branch tip: a fast-forward");
        open_or_update(&api, existing.as_ref(), story, &head, &pushed.commit.to_string(), &options).await.unwrap()
    };

    let first = story("console-instance-type");
    let (pr, action) =
        publish(&first, &|t| t.replace("t3.medium", "t3.large"), "driftback/aws_instance.web-5e1f0c2a").await;
    assert_eq!(action, PullRequestAction::Created);
    assert_eq!(pr.body.as_deref(), Some(first.body().as_str()));
    let message = git(&setup.remote, &["log", "-1", "--format=%B", "driftback/aws_instance.web-5e1f0c2a"]);
    assert!(message.contains("Drift-Event-Id: 3f0c1d2e-0000-4000-8000-000000000002"), "{message}");
    assert!(message.contains("Drift-Decision: reconcile"), "{message}");

    let mut second = first.clone();
    second.change_set_id = "cs-second".into();
    second.changes = vec![driftback_publish::story::ShownChange {
        path: "ami".into(),
        before: Some("ami-123".into()),
        after: Some("ami-456".into()),
    }];
    let (updated, action) =
        publish(&second, &|t| t.replace("ami-123", "ami-456"), "driftback/aws_instance.web-second").await;
    assert_eq!(action, PullRequestAction::Updated);
    assert_eq!(updated.number, pr.number);
    let on_branch = setup.remote_file("driftback/aws_instance.web-5e1f0c2a", "main.tf");
    assert!(on_branch.contains("t3.large") && on_branch.contains("ami-456"), "{on_branch}");
    assert!(git(&setup.remote, &["branch", "--list", "driftback/aws_instance.web-second"]).is_empty());
    assert_eq!(git(&setup.remote, &["rev-list", "--count", "main..driftback/aws_instance.web-5e1f0c2a"]), "2");
    assert_eq!(server.inner.lock().unwrap().comments.len(), 1);

    // Merged on GitHub: the webhook delivery is recorded, and polling reads the same state.
    let merged = server.merge(pr.number);
    let recorder = Arc::new(Recorder::default());
    let hook = serve("s3cret", recorder.clone()).await;
    let (status, _) = deliver(&hook, "pull_request", &closed_payload(&merged), Some("s3cret")).await;
    assert_eq!(status, 200);
    let recorded = recorder.0.lock().unwrap().clone();
    assert_eq!(recorded[0].number, pr.number);
    assert_eq!(recorded[0].state, PullRequestState::Merged);
    assert_eq!(recorded[0].head_branch, "driftback/aws_instance.web-5e1f0c2a");
    assert_eq!(api.get(pr.number).await.unwrap().lifecycle(), PullRequestState::Merged);
}
