//! A value set back after its pull request opened (issue 30): the daemon sets it back on the open
//! pull request's branch, and closes the pull request once it has nothing left to write. Against
//! moto's SQS, a bare remote and the GitHub stand-in, through `driftback serve`.
//!
//! Run through `scripts/moto.sh` (as `scripts/test.sh` does). Without it the test says so and
//! passes, unless DRIFTBACK_REQUIRE_SERVICES is set (CI), where it fails.

#[path = "../../publish/tests/it/github_server.rs"]
#[allow(dead_code)]
mod github_server;

use serde_json::{Value, json};

mod support;
use support::{Daemon, bare_remote, demo_records, free_port, git, moto_endpoint, sqs_client, wait_for};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_value_set_back_is_set_back_on_its_open_pull_request_which_closes_when_nothing_is_left() {
    let Some(endpoint) = moto_endpoint("SQS tests") else { return };
    let github = github_server::GitHubStandIn::start().await;
    let root = tempfile::tempdir().unwrap();
    let remote = bare_remote(root.path());
    let sqs = sqs_client(&endpoint).await;
    let suffix = format!("{}-{}", std::process::id(), free_port());
    let queue_url = sqs.create_queue().queue_name(format!("back-{suffix}")).send().await.unwrap().queue_url.unwrap();
    let send = async |record: &Value| {
        let envelope = json!({"version": "0", "id": "e", "detail-type": "AWS API Call via CloudTrail",
                              "source": "aws.ec2", "account": "123456789012", "region": "us-east-1",
                              "resources": [], "detail": record});
        sqs.send_message().queue_url(&queue_url).message_body(envelope.to_string()).send().await.unwrap();
    };
    // alice changes the web server's type and tags it (the demo's records).
    let records = demo_records();
    let typed = records.iter().find(|r| r["eventName"] == "ModifyInstanceAttribute").unwrap().clone();
    let tagged = records.iter().find(|r| r["eventName"] == "CreateTags").unwrap().clone();
    send(&typed).await;
    send(&tagged).await;

    let workdir = root.path().join("work");
    let envs = vec![
        ("DRIFTBACK_FEED__QUEUE_URL", queue_url.clone()),
        ("DRIFTBACK_FEED__ENDPOINT_URL", endpoint.clone()),
        ("DRIFTBACK_FEED__REGION", "us-east-1".to_string()),
        ("DRIFTBACK_FEED__WAIT_TIME_SECS", "1".to_string()),
        ("DRIFTBACK_SERVE__REPO_URL", remote.display().to_string()),
        ("DRIFTBACK_SERVE__WORKDIR", workdir.display().to_string()),
        ("DRIFTBACK_SERVE__LISTEN", format!("127.0.0.1:{}", free_port())),
        ("DRIFTBACK_SERVE__POLL_MS", "100".to_string()),
        ("DRIFTBACK_BACKFILL__ON_START", "false".to_string()),
        ("DRIFTBACK_PUBLISH__MODE", "pull-request".to_string()),
        ("DRIFTBACK_PUBLISH__API_URL", github.base_url.clone()),
        ("DRIFTBACK_PUBLISH__REPOSITORY", "acme/infra".to_string()),
        ("DRIFTBACK_PUBLISH__RETRY_DELAY_MS", "0".to_string()),
        ("GITHUB_TOKEN", github_server::TOKEN.to_string()),
    ];
    let mut daemon = Daemon::start(root.path(), &envs, 1);
    let web_pr = || {
        let pulls = github.inner.lock().unwrap().pulls.clone();
        pulls.into_iter().find(|p| p["head"]["ref"].as_str().unwrap().contains("aws_instance.web"))
    };
    let store_path = workdir.join(".git/driftback/kb.sqlite");
    // Done with a field's change once the change set that carries it has its row.
    let recorded = async |path: &str| {
        let Ok(store) = driftback_store::Store::open_sqlite(&store_path).await else { return false };
        let since = chrono::DateTime::UNIX_EPOCH;
        let history = store.field_history("aws_instance.web", path, since, 10).await.unwrap_or_default();
        let mut done = !history.is_empty();
        for change in &history {
            let id = change.change_set_id.clone().unwrap_or_default();
            done &= store.change_set(&id).await.is_ok_and(|row| row.is_some());
        }
        store.close().await;
        done
    };
    wait_for("the web server's pull request with its type and tag", &mut daemon, async || {
        web_pr().is_some() && recorded("instance_type").await && recorded("tags.CostCenter").await
    })
    .await;
    let pr = web_pr().unwrap();
    let number = pr["number"].as_u64().unwrap();
    let branch = pr["head"]["ref"].as_str().unwrap().to_string();
    let main_tf = |rev: &str| git(&remote, &["show", &format!("{rev}:main.tf")]);
    let written = main_tf(&branch);
    assert!(written.contains("instance_type = \"t3.large\"") && written.contains("cc-4411"), "{written}");
    let tip = |b: &str| git(&remote, &["rev-parse", b]).trim().to_string();
    let first_tip = tip(&branch);

    // Two hours later she sets the type back to what the code says: the base code needs nothing,
    // the pull request's branch gets the type back and keeps the tag, and stays open.
    let mut back = typed.clone();
    back["eventID"] = json!("3f0c1d2e-0000-4000-8000-0000000000b1");
    back["eventTime"] = json!("2024-05-02T13:00:00Z");
    back["requestParameters"]["instanceType"]["value"] = json!("t3.medium");
    send(&back).await;
    wait_for("the type set back on the pull request's branch", &mut daemon, async || tip(&branch) != first_tip).await;
    let written = main_tf(&branch);
    assert!(written.contains("instance_type = \"t3.medium\"") && written.contains("cc-4411"), "{written}");
    let diff = git(&remote, &["diff", "main", &branch]);
    assert!(!diff.contains("instance_type"), "the branch no longer changes the type:\n{diff}");
    let now = web_pr().unwrap();
    assert_eq!(now["state"], "open", "{now}");
    assert!(now["body"].as_str().unwrap().contains("`cs-"), "{now}");

    // Then she removes the tag: the pull request has nothing left to write and is closed,
    // unmerged, saying why; the store no longer knows it as open.
    let mut untagged = tagged.clone();
    untagged["eventID"] = json!("3f0c1d2e-0000-4000-8000-0000000000b2");
    untagged["eventName"] = json!("DeleteTags");
    untagged["eventTime"] = json!("2024-05-02T14:00:00Z");
    send(&untagged).await;
    wait_for("the pull request closed", &mut daemon, async || web_pr().unwrap()["state"] == "closed").await;
    let closed = web_pr().unwrap();
    assert_ne!(closed["merged"], true, "{closed}");
    let said: Vec<String> =
        github.inner.lock().unwrap().comments.iter().filter(|(n, _)| *n == number).map(|(_, t)| t.clone()).collect();
    assert!(said.iter().any(|c| c.contains("nothing left to write") && c.contains("cs-")), "{said:?}");
    let store = driftback_store::Store::open_sqlite(&store_path).await.unwrap();
    assert!(store.open_pull_request("aws_instance.web").await.unwrap().is_none(), "closed in the store");
    store.close().await;
    // Nothing was opened for the set-backs themselves.
    assert_eq!(github.inner.lock().unwrap().pulls.len(), 1, "{:?}", github.inner.lock().unwrap().pulls);
    let status = daemon.terminate();
    assert!(status.success(), "{}", daemon.log());
}
