//! Throughput of the feed's front: parse + normalise + filter + group CloudTrail records, on one
//! thread, over a generated trail whose mix is documented in docs/benchmarks.md; then the same work
//! by a straightforward Python script (json module), in the same run, for the ratio.
//!
//!   cargo bench -p driftback-feed --bench intake [-- RECORDS]
//!
//! The trail is written to a temporary file that both read; parsing starts from the bytes in
//! memory (file reading is not timed in either).

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use driftback_events::{FilterConfig, GroupConfig, group};
use driftback_feed::Intake;

const ACCOUNT: &str = "123456789012";

/// A small deterministic generator (xorshift), so every run measures the same trail.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

struct Actor {
    identity: String,
    user_agent: &'static str,
    console: bool,
}

fn actors() -> Vec<Actor> {
    let mut out = Vec::new();
    for i in 0..20 {
        out.push(Actor {
            identity: format!(
                r#"{{"type":"IAMUser","principalId":"AIDA{i:016}","arn":"arn:aws:iam::{ACCOUNT}:user/dev{i}","accountId":"{ACCOUNT}","accessKeyId":"AKIA{i:016}","userName":"dev{i}"}}"#
            ),
            user_agent: "aws-cli/2.15.30 md/awscrt#0.19.19 ua/2.0 os/linux#6.5.0 md/arch#x86_64 lang/python#3.11.8 md/command#ec2.modify-instance-attribute",
            console: false,
        });
    }
    for i in 0..15 {
        out.push(Actor {
            identity: format!(
                r#"{{"type":"AssumedRole","principalId":"AROA{i:016}:person{i}@example.com","arn":"arn:aws:sts::{ACCOUNT}:assumed-role/AWSReservedSSO_Admin_0123abcd/person{i}@example.com","accountId":"{ACCOUNT}","accessKeyId":"ASIA{i:016}","sessionContext":{{"sessionIssuer":{{"type":"Role","principalId":"AROA{i:016}","arn":"arn:aws:iam::{ACCOUNT}:role/aws-reserved/sso.amazonaws.com/AWSReservedSSO_Admin_0123abcd","accountId":"{ACCOUNT}","userName":"AWSReservedSSO_Admin_0123abcd"}},"attributes":{{"creationDate":"2026-11-01T08:00:00Z","mfaAuthenticated":"false"}}}}}}"#
            ),
            user_agent: "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15",
            console: true,
        });
    }
    for i in 0..5 {
        out.push(Actor {
            identity: format!(
                r#"{{"type":"AssumedRole","principalId":"AROA{i:016}:ops-bot","arn":"arn:aws:sts::{ACCOUNT}:assumed-role/ops-automation/ops-bot-{i}","accountId":"{ACCOUNT}","accessKeyId":"ASIA{i:016}","sessionContext":{{"sessionIssuer":{{"type":"Role","principalId":"AROA{i:016}","arn":"arn:aws:iam::{ACCOUNT}:role/ops-automation","accountId":"{ACCOUNT}","userName":"ops-automation"}},"attributes":{{"creationDate":"2026-11-01T08:00:00Z","mfaAuthenticated":"false"}}}}}}"#
            ),
            user_agent: "Boto3/1.34.69 md/Botocore#1.34.69 ua/2.0 os/linux#5.10 md/arch#x86_64 lang/python#3.12.2 cfg/retry-mode#legacy Botocore/1.34.69",
            console: false,
        });
    }
    out
}

const TERRAFORM_IDENTITY: &str = r#"{"type":"AssumedRole","principalId":"AROATERRAFORM:apply-381","arn":"arn:aws:sts::123456789012:assumed-role/terraform-ci/apply-381","accountId":"123456789012","accessKeyId":"ASIATERRAFORM","sessionContext":{"sessionIssuer":{"type":"Role","principalId":"AROATERRAFORM","arn":"arn:aws:iam::123456789012:role/terraform-ci","accountId":"123456789012","userName":"terraform-ci"},"attributes":{"creationDate":"2026-11-01T08:00:00Z","mfaAuthenticated":"false"}}}"#;
const TERRAFORM_UA: &str = "APN/1.0 HashiCorp/1.0 Terraform/1.9.5 (+https://www.terraform.io) terraform-provider-aws/5.70.0 (+https://registry.terraform.io/providers/hashicorp/aws) aws-sdk-go-v2/1.32.2 os/linux lang/go#1.22.7 md/GOOS#linux md/GOARCH#amd64 api/ec2#1.179.2";

/// One record of the documented mix.
fn record(rng: &mut Rng, actors: &[Actor], n: usize, out: &mut String) {
    let actor = &actors[rng.below(actors.len() as u64) as usize];
    // A day of activity, with bursts: times cluster around 300 burst starts.
    let burst = rng.below(300) * 288;
    let secs = burst + rng.below(240);
    let time = format!("2026-11-21T{:02}:{:02}:{:02}Z", secs / 3600 % 24, secs / 60 % 60, secs % 60);
    let instance = format!("i-0{:016x}", rng.below(800));
    let group = format!("sg-0{:016x}", rng.below(400));
    let bucket = format!("acme-data-{}", rng.below(300));
    let queue = format!("https://sqs.us-east-1.amazonaws.com/{ACCOUNT}/jobs-{}", rng.below(300));
    let roll = rng.below(100);
    let (identity, ua, console) = if (85..95).contains(&roll) {
        (TERRAFORM_IDENTITY.to_string(), TERRAFORM_UA, false)
    } else {
        (actor.identity.clone(), actor.user_agent, actor.console)
    };
    let (source, name, read_only, request, response, extra) = match roll {
        // 60 % read-only calls.
        0..=19 => ("ec2.amazonaws.com", "DescribeInstances", true, format!(r#"{{"instancesSet":{{"items":[{{"instanceId":"{instance}"}}]}},"filterSet":{{}}}}"#), "null".to_string(), ""),
        20..=34 => ("ec2.amazonaws.com", "DescribeSecurityGroups", true, format!(r#"{{"securityGroupSet":{{}},"securityGroupIdSet":{{"items":[{{"groupId":"{group}"}}]}},"filterSet":{{}}}}"#), "null".to_string(), ""),
        35..=49 => ("s3.amazonaws.com", "GetBucketPolicy", true, format!(r#"{{"bucketName":"{bucket}","Host":"{bucket}.s3.amazonaws.com","policy":""}}"#), "null".to_string(), ""),
        50..=59 => ("sqs.amazonaws.com", "GetQueueAttributes", true, format!(r#"{{"queueUrl":"{queue}","attributeNames":["All"]}}"#), "null".to_string(), ""),
        // 8 % failed writes.
        60..=67 => ("ec2.amazonaws.com", "TerminateInstances", false, format!(r#"{{"instancesSet":{{"items":[{{"instanceId":"{instance}"}}]}}}}"#), "null".to_string(), r#","errorCode":"Client.UnauthorizedOperation","errorMessage":"You are not authorized to perform this operation.""#),
        // 7 % data events.
        68..=74 => ("s3.amazonaws.com", "PutObject", false, format!(r#"{{"bucketName":"{bucket}","Host":"{bucket}.s3.amazonaws.com","key":"reports/2026/11/21/part-{n:06}.parquet"}}"#), "null".to_string(), r#","resources":[{"type":"AWS::S3::Object","ARN":"arn:aws:s3:::bucket/key"}]"#),
        // 25 % writes: 15 % out of band (75..84 and 95..99), 10 % Terraform's own (85..94).
        75..=77 | 85..=87 => ("ec2.amazonaws.com", "ModifyInstanceAttribute", false, format!(r#"{{"instanceId":"{instance}","instanceType":{{"value":"t3.large"}}}}"#), r#"{"requestId":"6f3a","_return":true}"#.to_string(), ""),
        78..=80 | 88..=90 => ("ec2.amazonaws.com", "CreateTags", false, format!(r#"{{"resourcesSet":{{"items":[{{"resourceId":"{instance}"}}]}},"tagSet":{{"items":[{{"key":"CostCenter","value":"cc-{}"}}]}}}}"#, rng.below(9000)), r#"{"requestId":"6f3b","_return":true}"#.to_string(), ""),
        81..=82 | 91..=92 => ("ec2.amazonaws.com", "AuthorizeSecurityGroupIngress", false, format!(r#"{{"groupId":"{group}","ipPermissions":{{"items":[{{"ipProtocol":"tcp","fromPort":443,"toPort":443,"ipRanges":{{"items":[{{"cidrIp":"10.0.0.0/8"}}]}}}}]}}}}"#), r#"{"requestId":"6f3c","_return":true,"securityGroupRuleSet":{"items":[{"groupId":"sg","securityGroupRuleId":"sgr-1","isEgress":false,"ipProtocol":"tcp","fromPort":443,"toPort":443,"cidrIpv4":"10.0.0.0/8"}]}}"#.to_string(), ""),
        83 | 93 => ("sqs.amazonaws.com", "SetQueueAttributes", false, format!(r#"{{"queueUrl":"{queue}","attributes":{{"VisibilityTimeout":"120"}}}}"#), "null".to_string(), ""),
        _ => ("s3.amazonaws.com", "PutBucketTagging", false, format!(r#"{{"bucketName":"{bucket}","Host":"{bucket}.s3.amazonaws.com","tagging":"","Tagging":{{"TagSet":{{"Tag":{{"Key":"Owner","Value":"data"}}}}}}}}"#), "null".to_string(), ""),
    };
    // Data events (S3 object calls) say so in both flags.
    let (management, category) = if name == "PutObject" { (false, "Data") } else { (true, "Management") };
    let console_flag = if console { r#","sessionCredentialFromConsole":"true""# } else { "" };
    let _ = write!(
        out,
        r#"{{"eventVersion":"1.09","userIdentity":{identity},"eventTime":"{time}","eventSource":"{source}","eventName":"{name}","awsRegion":"us-east-1","sourceIPAddress":"203.0.113.{}","userAgent":"{ua}","requestParameters":{request},"responseElements":{response},"requestID":"{:08x}-{:04x}-4000-8000-{:012x}","eventID":"{:08x}-{:04x}-4000-9000-{:012x}","readOnly":{read_only},"eventType":"AwsApiCall","managementEvent":{management},"recipientAccountId":"{ACCOUNT}","eventCategory":"{category}","tlsDetails":{{"tlsVersion":"TLSv1.3","cipherSuite":"TLS_AES_128_GCM_SHA256","clientProvidedHostHeader":"{}.us-east-1.amazonaws.com"}}{console_flag}{extra}}}"#,
        rng.below(254) + 1,
        rng.next() as u32,
        rng.next() as u16,
        rng.next() & 0xffff_ffff_ffff,
        n as u32,
        rng.next() as u16,
        rng.next() & 0xffff_ffff_ffff,
        source.trim_end_matches(".amazonaws.com"),
    );
}

fn trail(records: usize) -> String {
    let actors = actors();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut out = String::with_capacity(records * 1400);
    out.push_str("{\"Records\":[\n");
    for n in 0..records {
        if n > 0 {
            out.push_str(",\n");
        }
        record(&mut rng, &actors, n, &mut out);
    }
    out.push_str("\n]}\n");
    out
}

struct Run {
    elapsed: Duration,
    /// Time spent reading + triaging (parse, filter, normalise what is kept), and grouping.
    phases: [Duration; 2],
    kept: usize,
    dropped: usize,
    change_sets: usize,
}

/// The daemon's own path: `Intake::from_text` reads the trail the way it reads an SQS message body
/// (every record checked, each event triaged, drift candidates normalised, dropped ones summarised
/// for the ledger with their record text), then the drift candidates are grouped.
fn rust_pipeline(text: &str) -> Run {
    let filter = FilterConfig { iac_principals: vec!["terraform-ci".into()] };
    let start = Instant::now();
    let intake = Intake::from_text(text, "bench", &filter);
    assert!(intake.bad.is_empty(), "bad input in the trail: {:?}", intake.bad.first().map(|b| &b.reason));
    let kept: Vec<_> = intake.kept().cloned().collect();
    let triaged = start.elapsed();
    let (n, dropped) = (kept.len(), intake.events.len() - kept.len());
    let sets = group(kept, &GroupConfig::default());
    let elapsed = start.elapsed();
    Run { elapsed, phases: [triaged, elapsed - triaged], kept: n, dropped, change_sets: sets.len() }
}

fn main() {
    let records: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(200_000);
    let text = trail(records);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("trail.json");
    std::fs::write(&path, &text).expect("writing the trail");
    println!(
        "trail: {records} records, {:.1} MB ({} bytes a record on average)",
        text.len() as f64 / 1e6,
        text.len() / records
    );

    let text = std::fs::read_to_string(&path).unwrap();
    let mut runs: Vec<Run> = (0..5).map(|_| rust_pipeline(&text)).collect();
    runs.sort_by_key(|r| r.elapsed);
    let median = &runs[runs.len() / 2];
    let rust_rate = records as f64 / median.elapsed.as_secs_f64();
    println!(
        "rust:   {:>9.0} records/s  (median of 5: {:.3} s; kept {}, dropped {}, change sets {})",
        rust_rate,
        median.elapsed.as_secs_f64(),
        median.kept,
        median.dropped,
        median.change_sets
    );
    let [triage, grouping] = median.phases;
    println!("        read + normalise + filter {:.3} s, group {:.3} s", triage.as_secs_f64(), grouping.as_secs_f64());

    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/intake.py");
    match Command::new("python3").arg(&script).arg(&path).output() {
        Ok(out) if out.status.success() => {
            let report = String::from_utf8_lossy(&out.stdout);
            print!("python: {report}");
            let seconds: Option<f64> = report.split_whitespace().find_map(|w| w.strip_suffix("s;")?.parse().ok());
            if let Some(seconds) = seconds {
                let python_rate = records as f64 / seconds;
                println!("ratio:  {:.1}x (rust / python)", rust_rate / python_rate);
            }
        }
        Ok(out) => eprintln!("python script failed: {}", String::from_utf8_lossy(&out.stderr)),
        Err(e) => eprintln!("python3 not found ({e}); no ratio"),
    }
}
