//! Decisions per second with a growing ownership ledger: `cargo bench -p driftback-policy --bench decide`.
//!
//! 5,000 change sets by four actors over 200 fields of 50 resources, each decided against the
//! ledger so far (the history a long `reconcile` run or a daemon builds up), with a policy file of
//! bounds, owners and motivation rules in front of the defaults. Prints the time per decision for
//! the first and the last thousand, so growth with the ledger shows.

use std::time::Instant;

use serde_json::json;

use driftback_attribute::attribute;
use driftback_events::{GroupConfig, group, normalize};
use driftback_policy::{DecideInput, LedgerEntry, Policy};
use driftback_recipes::{Plan, ResourceChange};
use driftback_terraform::{Address, AttrPath, AttrValue, Op};

const POLICY: &str = r#"
[[rule]]
name = "bounds"
resource_type = "aws_autoscaling_group"
attribute = ["min_size", "max_size"]
min = 1
max = 100
[[rule]]
name = "bot-owns-timeouts"
resource_type = "aws_sqs_queue"
attribute = "visibility_timeout_seconds"
owner = "ops-bot"
[[rule]]
name = "scheduled"
motivation = "scheduled"
decision = "revert"
"#;

fn main() {
    let policy = Policy::from_toml(POLICY, "bench.toml").expect("bench policy");
    let actors = ["alice", "bob", "carol", "dave"];
    let n = 5_000;
    let mut history: Vec<LedgerEntry> = Vec::new();
    let mut batches: Vec<f64> = Vec::new();
    let mut escalated = 0;
    let started = Instant::now();
    let mut batch_start = Instant::now();
    for i in 0..n {
        let actor = actors[i % actors.len()];
        let minute = i as i64;
        let time = chrono::DateTime::<chrono::Utc>::from_timestamp(1_711_000_000 + minute * 60, 0).unwrap();
        let event = normalize(&json!({
            "eventID": format!("e{i}"), "eventTime": time.to_rfc3339(), "eventSource": "autoscaling.amazonaws.com",
            "eventName": "UpdateAutoScalingGroup", "userAgent": "aws-cli/2.15",
            "userIdentity": {"type": "IAMUser", "arn": format!("arn:aws:iam::1:user/{actor}"), "userName": actor},
            "requestParameters": {"autoScalingGroupName": format!("g{}", i % 50), "maxSize": i % 90}
        }))
        .unwrap();
        let change_set = group(vec![event], &GroupConfig::default()).remove(0);
        let attrs = ["max_size", "min_size", "desired_capacity", "health_check_grace_period"];
        let plan = Plan {
            changes: vec![ResourceChange {
                address: Address::resource("aws_autoscaling_group", &format!("g{}", i % 50)),
                ops: vec![Op::Set {
                    path: AttrPath::parse(attrs[(i / 50) % attrs.len()]).unwrap(),
                    value: AttrValue::Literal(json!(i % 90)),
                }],
                recipes: vec!["autoscaling-update-group".into()],
                created: false,
            }],
            ..Plan::default()
        };
        let attribution = attribute(&change_set, &policy.actors);
        let decided = policy.decide(&DecideInput {
            change_set: &change_set,
            attribution: &attribution,
            plan: Ok(&plan),
            repo: None,
            history: &history,
            state: None,
        });
        if decided.decision.kind == driftback_policy::DecisionKind::Escalate {
            escalated += 1;
        }
        history.extend(decided.ledger);
        if (i + 1) % 1000 == 0 {
            batches.push(batch_start.elapsed().as_secs_f64() * 1e6 / 1000.0);
            batch_start = Instant::now();
        }
    }
    let total = started.elapsed();
    println!(
        "{n} decisions in {:.1} ms ({:.1} us each), {escalated} escalated, ledger {} entries",
        total.as_secs_f64() * 1e3,
        total.as_secs_f64() * 1e6 / n as f64,
        history.len()
    );
    for (k, us) in batches.iter().enumerate() {
        println!("  decisions {}..{}: {us:.1} us each", k * 1000 + 1, (k + 1) * 1000);
    }
}
