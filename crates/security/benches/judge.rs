//! The security check's cost per change set: `cargo bench -p driftback-security --bench judge`.
//!
//! Judges, many times over, the resource changes a change set typically makes: a console form on a
//! database (a dozen attributes, one weakened), a listener's default action, and a whole bucket
//! policy re-sent (statements compared). Prints the time per judged resource change and the
//! time the table takes to load once (the first change set of a process pays it).

use std::time::Instant;

use serde_json::{Value, json};

use driftback_security::Baseline;

fn main() {
    let started = Instant::now();
    let table = Baseline::read_builtin().expect("the built-in table");
    let load = started.elapsed();
    let db_before = json!({"identifier": "orders", "engine": "postgres", "engine_version": "16.3", "instance_class": "db.r6g.large",
        "allocated_storage": 100, "max_allocated_storage": 500, "storage_encrypted": true, "kms_key_id": "arn:aws:kms:us-east-1:1:key/k",
        "deletion_protection": true, "backup_retention_period": 14, "publicly_accessible": false, "multi_az": true,
        "iam_database_authentication_enabled": true, "auto_minor_version_upgrade": true, "copy_tags_to_snapshot": true,
        "enabled_cloudwatch_logs_exports": ["postgresql", "upgrade"], "performance_insights_enabled": true,
        "monitoring_interval": 60, "tags": {"Team": "orders", "Environment": "prod"}});
    let mut db_after = db_before.clone();
    db_after["deletion_protection"] = json!(false);
    db_after["instance_class"] = json!("db.r6g.xlarge");
    let listener_before = json!({"port": 80, "protocol": "HTTP", "load_balancer_arn": "arn:lb",
        "default_action": [{"type": "redirect", "redirect": [{"protocol": "HTTPS", "port": "443", "status_code": "HTTP_301"}]}]});
    let mut listener_after = listener_before.clone();
    listener_after["default_action"] = json!([{"type": "forward", "target_group_arn": "arn:tg"}]);
    let policy = |deny: bool| {
        let mut statements =
            vec![json!({"Sid": "Read", "Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::1:role/reader"},
            "Action": ["s3:GetObject", "s3:ListBucket"], "Resource": ["arn:aws:s3:::b", "arn:aws:s3:::b/*"]})];
        if deny {
            statements.push(json!({"Sid": "TLS", "Effect": "Deny", "Principal": "*", "Action": "s3:*",
                "Resource": ["arn:aws:s3:::b", "arn:aws:s3:::b/*"], "Condition": {"Bool": {"aws:SecureTransport": "false"}}}));
        }
        json!({"bucket": "b", "policy": json!({"Version": "2012-10-17", "Statement": statements}).to_string()})
    };
    let (policy_before, policy_after) = (policy(true), policy(false));
    let cases: [(&str, &str, &Value, &Value); 3] = [
        ("console form on a database", "aws_db_instance", &db_before, &db_after),
        ("a listener's default action", "aws_lb_listener", &listener_before, &listener_after),
        ("a whole bucket policy", "aws_s3_bucket_policy", &policy_before, &policy_after),
    ];
    println!("table: {} entries, {} controls, loaded in {:?}", table.controls.len(), table.ids().len(), load);
    for (what, rtype, before, after) in cases {
        let n = 20_000;
        let started = Instant::now();
        let mut found = 0;
        for _ in 0..n {
            found += table.judge(rtype, Some(before), Some(after)).len();
        }
        let per = started.elapsed().as_secs_f64() / n as f64 * 1e6;
        println!("{what} ({rtype}): {per:.1} µs per judged change, {} finding(s)", found / n);
    }
}
