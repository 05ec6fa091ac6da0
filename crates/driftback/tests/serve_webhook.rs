//! The GitHub webhook on its own listener (`[serve] webhook_listen`), through the real
//! `driftback serve` on moto's SQS with pull requests on the GitHub stand-in: signed
//! `pull_request` and `issue_comment` deliveries to the webhook's address are accepted and acted
//! on, a bad or missing signature is refused with 401, and the operations address (probes and
//! metrics, which stay inside the cluster) does not route the webhook, nor the webhook's address
//! the metrics.
//!
//! Run through scripts/moto.sh; without it the test says so and passes, unless
//! DRIFTBACK_REQUIRE_SERVICES is set.

#[path = "../../publish/tests/it/github_server.rs"]
#[allow(dead_code)]
mod github_server;

use driftback_publish::Secret;
use driftback_publish::webhook::{WEBHOOK_PATH, signature};
use serde_json::{Value, json};

mod support;
use support::{Daemon, bare_remote, demo_records, free_port, moto_endpoint, sqs_client, wait_for};

const SECRET: &str = "webhook-listener-test-secret";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_webhook_listener_takes_signed_deliveries_refuses_bad_ones_and_is_apart_from_the_metrics() {
    let Some(endpoint) = moto_endpoint("webhook listener test") else { return };
    let github = github_server::GitHubStandIn::start().await;
    let root = tempfile::tempdir().unwrap();
    let remote = bare_remote(root.path());
    let sqs = sqs_client(&endpoint).await;
    let name = format!("hook-{}-{}", std::process::id(), free_port());
    let queue_url = sqs.create_queue().queue_name(&name).send().await.unwrap().queue_url.unwrap();
    for record in demo_records() {
        let service = record["eventSource"].as_str().unwrap().split('.').next().unwrap().to_string();
        let envelope = json!({"version": "0", "id": "e", "detail-type": "AWS API Call via CloudTrail",
                              "source": format!("aws.{service}"), "account": "123456789012",
                              "region": "us-east-1", "resources": [], "detail": record});
        sqs.send_message().queue_url(&queue_url).message_body(envelope.to_string()).send().await.unwrap();
    }

    let workdir = root.path().join("work");
    let (ops, hook) = (format!("127.0.0.1:{}", free_port()), format!("127.0.0.1:{}", free_port()));
    let envs = vec![
        ("DRIFTBACK_FEED__QUEUE_URL", queue_url.clone()),
        ("DRIFTBACK_FEED__ENDPOINT_URL", endpoint.clone()),
        ("DRIFTBACK_FEED__REGION", "us-east-1".to_string()),
        ("DRIFTBACK_FEED__WAIT_TIME_SECS", "1".to_string()),
        ("DRIFTBACK_SERVE__REPO_URL", remote.display().to_string()),
        ("DRIFTBACK_SERVE__WORKDIR", workdir.display().to_string()),
        ("DRIFTBACK_SERVE__LISTEN", ops.clone()),
        ("DRIFTBACK_SERVE__WEBHOOK_LISTEN", hook.clone()),
        ("DRIFTBACK_SERVE__POLL_MS", "100".to_string()),
        ("DRIFTBACK_BACKFILL__ON_START", "false".to_string()),
        ("DRIFTBACK_PUBLISH__MODE", "pull-request".to_string()),
        ("DRIFTBACK_PUBLISH__API_URL", github.base_url.clone()),
        ("DRIFTBACK_PUBLISH__REPOSITORY", "acme/infra".to_string()),
        ("DRIFTBACK_PUBLISH__RETRY_DELAY_MS", "0".to_string()),
        ("GITHUB_TOKEN", github_server::TOKEN.to_string()),
        ("DRIFTBACK_WEBHOOK_SECRET", SECRET.to_string()),
    ];
    let mut daemon = Daemon::start(root.path(), &envs, 1);
    // Three reconciliations and the security group's held draft.
    wait_for("four pull requests", &mut daemon, async || github.inner.lock().unwrap().pulls.len() >= 4).await;
    let log = daemon.log();
    assert!(log.contains("serving the GitHub webhook") && log.contains(&hook), "{log}");

    let http = reqwest::Client::new();
    let post = |address: &str, event: &str, body: &str, signed_with: Option<&str>| {
        let mut request = http
            .post(format!("http://{address}{WEBHOOK_PATH}"))
            .header("X-GitHub-Event", event)
            .header("Content-Type", "application/json")
            .body(body.to_string());
        if let Some(secret) = signed_with {
            request = request.header("X-Hub-Signature-256", signature(&Secret::new(secret), body.as_bytes()));
        }
        request.send()
    };

    // A merge of the web server's pull request, as GitHub delivers it.
    let pulls = github.inner.lock().unwrap().pulls.clone();
    let web = pulls.iter().find(|p| p["head"]["ref"].as_str().unwrap().contains("aws_instance.web")).unwrap();
    let number = web["number"].as_u64().unwrap();
    let store = driftback_store::Store::open_sqlite(&workdir.join(".git/driftback/kb.sqlite")).await.unwrap();
    assert_eq!(store.open_pull_request("aws_instance.web").await.unwrap().map(|p| p.number), Some(number));
    let merged = github.merge(number);
    let closed = json!({"action": "closed", "number": number, "pull_request": merged,
                        "sender": {"login": "maria", "type": "User"}})
    .to_string();

    // Not on the operations address, signed or not; no metrics on the webhook's.
    let answer = post(&ops, "pull_request", &closed, Some(SECRET)).await.unwrap();
    assert_eq!(answer.status(), 404, "{}", answer.text().await.unwrap());
    assert_eq!(http.get(format!("http://{ops}/metrics")).send().await.unwrap().status(), 200);
    assert_eq!(http.get(format!("http://{hook}/metrics")).send().await.unwrap().status(), 404);
    assert_eq!(http.get(format!("http://{hook}/readyz")).send().await.unwrap().status(), 404);
    // A wrong secret and no signature are refused, and change nothing.
    let answer = post(&hook, "pull_request", &closed, Some("not the secret")).await.unwrap();
    assert_eq!(answer.status(), 401, "{}", answer.text().await.unwrap());
    assert_eq!(post(&hook, "pull_request", &closed, None).await.unwrap().status(), 401);
    assert!(store.open_pull_request("aws_instance.web").await.unwrap().is_some(), "nothing recorded");
    // Signed: accepted, and the store learns the merge.
    let answer = post(&hook, "pull_request", &closed, Some(SECRET)).await.unwrap();
    assert_eq!(answer.status(), 200, "{}", answer.text().await.unwrap());
    assert!(store.open_pull_request("aws_instance.web").await.unwrap().is_none(), "recorded as merged");

    // A reader's `/driftback accept` on the held draft, as GitHub delivers a comment on a pull
    // request (the thread as an issue with `pull_request`): answered in the thread.
    github.inner.lock().unwrap().permissions.insert("visitor".into(), "read".into());
    let draft = pulls.iter().find(|p| p["draft"] == true).expect("the held draft").clone();
    let draft_number = draft["number"].as_u64().unwrap();
    let mut thread: Value = draft.clone();
    thread["pull_request"] = json!({"url": draft["url"].clone()});
    let comment = json!({"action": "created", "issue": thread,
        "comment": {"id": 1, "body": "/driftback accept", "user": {"login": "visitor", "type": "User"}},
        "sender": {"login": "visitor", "type": "User"}})
    .to_string();
    assert_eq!(post(&hook, "issue_comment", &comment, Some("not the secret")).await.unwrap().status(), 401);
    assert_eq!(post(&ops, "issue_comment", &comment, Some(SECRET)).await.unwrap().status(), 404);
    let replies = || -> Vec<String> {
        let inner = github.inner.lock().unwrap();
        inner.comments.iter().filter(|(n, _)| *n == draft_number).map(|(_, t)| t.clone()).collect()
    };
    assert!(replies().iter().all(|r| !r.contains("only people with write access")), "{:?}", replies());
    let answer = post(&hook, "issue_comment", &comment, Some(SECRET)).await.unwrap();
    assert_eq!(answer.status(), 200, "{}", answer.text().await.unwrap());
    assert!(replies().iter().any(|r| r.contains("only people with write access")), "{:?}", replies());

    store.close().await;
    let status = daemon.terminate();
    assert!(status.success(), "exit {status:?}:\n{}", daemon.log());
}
