//! `driftback backfill` against an in-test HTTP server that speaks CloudTrail's JSON protocol
//! (LookupEvents: request and response shapes, NextToken pagination, ThrottlingException).

use std::process::{Command, Output};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use chrono::{DateTime, Duration, Utc};
use serde_json::{Value, json};

mod support;
use support::{bare_remote, demo_dir, git};

const BIN: &str = env!("CARGO_BIN_EXE_driftback");
/// The operation, as current SDKs name it and with the long prefix older ones use; CloudTrail
/// accepts both.
const TARGETS: &[&str] =
    &["CloudTrail_20131101.LookupEvents", "com.amazonaws.cloudtrail.v20131101.CloudTrail_20131101.LookupEvents"];

/// The trail the server holds: the demo's records moved to the last few hours, and failed calls
/// enough to need several pages.
fn trail(now: DateTime<Utc>) -> Vec<Value> {
    let text = std::fs::read_to_string(demo_dir().join("events.json")).unwrap();
    let demo: Value = serde_json::from_str(&text).unwrap();
    let records = demo["Records"].as_array().unwrap();
    let first: DateTime<Utc> = records[0]["eventTime"].as_str().unwrap().parse().unwrap();
    let shift = (now - Duration::hours(3)) - first;
    let mut out: Vec<Value> = records
        .iter()
        .map(|r| {
            let mut r = r.clone();
            let t: DateTime<Utc> = r["eventTime"].as_str().unwrap().parse().unwrap();
            r["eventTime"] = json!((t + shift).format("%Y-%m-%dT%H:%M:%SZ").to_string());
            r
        })
        .collect();
    for i in 0..130 {
        out.push(json!({
            "eventVersion": "1.09", "eventID": format!("failed-{i:04}"),
            "eventTime": (now - Duration::minutes(200) + Duration::seconds(i * 60)).format("%Y-%m-%dT%H:%M:%SZ").to_string(),
            "eventSource": "ec2.amazonaws.com", "eventName": "TerminateInstances", "awsRegion": "us-east-1",
            "errorCode": "Client.UnauthorizedOperation", "readOnly": false, "eventType": "AwsApiCall",
            "userIdentity": {"type": "IAMUser", "arn": "arn:aws:iam::123456789012:user/mallory", "userName": "mallory"},
            "requestParameters": {"instancesSet": {"items": [{"instanceId": "i-0123"}]}}
        }));
    }
    out
}

#[derive(Default)]
struct Seen {
    requests: Vec<(Instant, Value)>,
    throttled: bool,
}

#[derive(Clone)]
struct Server {
    trail: Arc<Vec<Value>>,
    seen: Arc<Mutex<Seen>>,
}

fn error(status: StatusCode, kind: &str, message: &str) -> axum::response::Response {
    (status, [("content-type", "application/x-amz-json-1.1")], json!({"__type": kind, "message": message}).to_string())
        .into_response()
}

async fn lookup_events(State(server): State<Server>, headers: HeaderMap, body: String) -> axum::response::Response {
    let target = headers.get("x-amz-target").and_then(|v| v.to_str().ok()).unwrap_or_default();
    if !TARGETS.contains(&target) || !headers.contains_key("authorization") {
        return error(StatusCode::BAD_REQUEST, "UnknownOperationException", "unknown X-Amz-Target or unsigned request");
    }
    let request: Value = serde_json::from_str(&body).unwrap();
    {
        let mut seen = server.seen.lock().unwrap();
        seen.requests.push((Instant::now(), request.clone()));
        // The second request is throttled once, as CloudTrail does past 2 requests a second.
        if seen.requests.len() == 2 && !seen.throttled {
            seen.throttled = true;
            return error(StatusCode::BAD_REQUEST, "ThrottlingException", "Rate exceeded");
        }
    }
    let secs = |key: &str| request[key].as_f64().map(|s| DateTime::from_timestamp_millis((s * 1000.0) as i64).unwrap());
    let (start, end) = (secs("StartTime").unwrap(), secs("EndTime").unwrap());
    let max = request["MaxResults"].as_u64().unwrap_or(50) as usize;
    if max > 50 {
        return error(StatusCode::BAD_REQUEST, "InvalidMaxResultsException", "MaxResults is at most 50");
    }
    let writes_only = request["LookupAttributes"]
        .as_array()
        .is_some_and(|a| a.iter().any(|x| x["AttributeKey"] == "ReadOnly" && x["AttributeValue"] == "false"));
    let mut matching: Vec<&Value> = server
        .trail
        .iter()
        .filter(|r| {
            let t: DateTime<Utc> = r["eventTime"].as_str().unwrap().parse().unwrap();
            t >= start && t <= end && !(writes_only && r["readOnly"] == true)
        })
        .collect();
    // Newest first, as LookupEvents answers.
    matching.sort_by(|a, b| b["eventTime"].as_str().cmp(&a["eventTime"].as_str()));
    let offset: usize = request["NextToken"].as_str().map(|t| t.parse().unwrap()).unwrap_or(0);
    let page: Vec<Value> = matching
        .iter()
        .skip(offset)
        .take(max)
        .map(|r| {
            let t: DateTime<Utc> = r["eventTime"].as_str().unwrap().parse().unwrap();
            json!({"EventId": r["eventID"], "EventName": r["eventName"], "ReadOnly": "false",
                   "EventTime": t.timestamp() as f64, "EventSource": r["eventSource"], "Resources": [],
                   "CloudTrailEvent": r.to_string()})
        })
        .collect();
    let mut response = json!({"Events": page});
    if offset + max < matching.len() {
        response["NextToken"] = json!((offset + max).to_string());
    }
    (StatusCode::OK, [("content-type", "application/x-amz-json-1.1")], response.to_string()).into_response()
}

fn backfill(envs: &[(&str, String)], args: &[&str]) -> Output {
    Command::new(BIN).arg("backfill").args(args).envs(envs.iter().map(|(k, v)| (*k, v.as_str()))).output().unwrap()
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backfill_pages_through_lookup_events_at_the_rate_limit_and_reconciles_once() {
    let now = Utc::now();
    let server = Server { trail: Arc::new(trail(now)), seen: Arc::default() };
    let app = axum::Router::new().route("/", axum::routing::post(lookup_events)).with_state(server.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let root = tempfile::tempdir().unwrap();
    let remote = bare_remote(root.path());
    let envs = vec![
        ("DRIFTBACK_BACKFILL__ENDPOINT_URL", endpoint),
        ("DRIFTBACK_BACKFILL__REGION", "us-east-1".to_string()),
        ("DRIFTBACK_BACKFILL__SLICE_SECS", "7200".to_string()),
        ("DRIFTBACK_SERVE__REPO_URL", remote.display().to_string()),
        ("DRIFTBACK_SERVE__WORKDIR", root.path().join("work").display().to_string()),
        ("DRIFTBACK_PUBLISH__MODE", "push".to_string()),
        ("AWS_ACCESS_KEY_ID", "testing".to_string()),
        ("AWS_SECRET_ACCESS_KEY", "testing".to_string()),
    ];

    let out = tokio::task::spawn_blocking({
        let envs = envs.clone();
        move || backfill(&envs, &["--since", "4h"])
    })
    .await
    .unwrap();
    let report = text(&out);
    assert!(out.status.success(), "{report}");
    assert!(report.contains("events: 138 (138 new, 0 already recorded)"), "{report}");
    assert!(report.contains("(1 throttled and retried)"), "{report}");
    assert!(report.contains("change sets reconciled: "), "{report}");

    {
        let seen = server.seen.lock().unwrap();
        let requests = &seen.requests;
        // Two slices of two hours, each two pages of at most 50 (the read-only DescribeInstances is
        // not asked for), plus the throttled attempt.
        assert_eq!(requests.len(), 5, "{:?}", requests.iter().map(|r| &r.1).collect::<Vec<_>>());
        assert!(requests.iter().all(|(_, r)| r["MaxResults"] == 50));
        assert!(requests.iter().any(|(_, r)| r["NextToken"] == "50"), "pagination follows NextToken");
        assert!(requests.iter().all(|(_, r)| r["LookupAttributes"][0]["AttributeKey"] == "ReadOnly"));
        for pair in requests.windows(2) {
            let gap = pair[1].0 - pair[0].0;
            assert!(gap >= std::time::Duration::from_millis(400), "requests {gap:?} apart: above 2 a second");
        }
    }
    let branches = git(&remote, &["for-each-ref", "--format=%(refname:short)", "refs/heads/driftback/"]);
    assert_eq!(branches.lines().count(), 3, "{branches}\n{report}");

    // Again over the same range: everything is already recorded, nothing is committed twice, and
    // without --since the checkpoint is the start.
    let again = tokio::task::spawn_blocking({
        let envs = envs.clone();
        move || backfill(&envs, &["--since", "4h"])
    })
    .await
    .unwrap();
    assert!(again.status.success(), "{}", text(&again));
    assert!(text(&again).contains("(0 new, 138 already recorded)"), "{}", text(&again));
    assert!(text(&again).contains("change sets reconciled: 0"), "{}", text(&again));
    let from_checkpoint = tokio::task::spawn_blocking({
        let envs = envs.clone();
        move || backfill(&envs, &[])
    })
    .await
    .unwrap();
    assert!(from_checkpoint.status.success(), "{}", text(&from_checkpoint));
    let branches_after = git(&remote, &["for-each-ref", "--format=%(refname:short)", "refs/heads/driftback/"]);
    assert_eq!(branches_after, branches);

    let too_old = backfill(&envs, &["--since", "100d"]);
    assert!(!too_old.status.success());
    assert!(text(&too_old).contains("more than 90 days ago"), "{}", text(&too_old));
}
