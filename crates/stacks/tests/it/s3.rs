//! States in moto's S3: workspaces under `env:/`, the backend completed by a partial
//! configuration file, a stack in a second account, ETags as version identity, listing
//! workspaces, and the errors people meet (no such workspace, no such bucket).

use aws_sdk_s3::primitives::ByteStream;
use serde_json::json;

use driftback_stacks::{Index, Lookup, Query, ReadError, Readers, StateReader, StateVersion, discover, locate, scan};

use crate::fixture::{self, NETWORK_ACCOUNT, state};

fn moto_endpoint() -> Option<String> {
    match std::env::var("DRIFTBACK_TEST_MOTO_ENDPOINT") {
        Ok(endpoint) => Some(endpoint),
        Err(_) if std::env::var_os("DRIFTBACK_REQUIRE_SERVICES").is_some() => {
            panic!("DRIFTBACK_REQUIRE_SERVICES is set but moto is not running: run through scripts/moto.sh")
        }
        Err(_) => {
            eprintln!("NOTICE: S3 state tests skipped: moto is not running (run `scripts/moto.sh cargo test`)");
            None
        }
    }
}

pub async fn client(endpoint: &str) -> aws_sdk_s3::Client {
    let sdk = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .region(aws_sdk_s3::config::Region::new("us-east-1"))
        .load()
        .await;
    let config = aws_sdk_s3::config::Builder::from(&sdk).endpoint_url(endpoint).force_path_style(true).build();
    aws_sdk_s3::Client::from_conf(config)
}

pub async fn put(client: &aws_sdk_s3::Client, bucket: &str, key: &str, body: String) {
    client.put_object().bucket(bucket).key(key).body(ByteStream::from(body.into_bytes())).send().await.unwrap();
}

fn queue(name: &str, region: &str) -> serde_json::Value {
    json!({"id": format!("https://sqs.{region}.amazonaws.com/111111111111/{name}"), "name": name,
           "arn": format!("arn:aws:sqs:{region}:111111111111:{name}")})
}

#[tokio::test(flavor = "multi_thread")]
async fn states_in_s3_by_workspace_with_partial_backend_configuration() {
    let Some(endpoint) = moto_endpoint() else { return };
    let repo = fixture::Repo::write(&endpoint);
    let s3 = client(&endpoint).await;
    for bucket in [&repo.app_bucket, &repo.network_bucket] {
        s3.create_bucket().bucket(bucket).send().await.unwrap();
    }
    let flow_logs = json!({"id": "acme-flow-logs", "bucket": "acme-flow-logs", "arn": "arn:aws:s3:::acme-flow-logs"});
    put(
        &s3,
        &repo.app_bucket,
        "env:/prod/app/terraform.tfstate",
        state(
            "app-prod",
            12,
            &[
                ("aws_sqs_queue", "this", queue("jobs-prod", "eu-west-1")),
                ("aws_s3_bucket", "flow_logs", flow_logs.clone()),
            ],
        ),
    )
    .await;
    put(
        &s3,
        &repo.app_bucket,
        "env:/staging/app/terraform.tfstate",
        state("app-staging", 3, &[("aws_sqs_queue", "this", queue("jobs-staging", "eu-central-1"))]),
    )
    .await;
    put(
        &s3,
        &repo.network_bucket,
        "network.tfstate",
        state(
            "network",
            40,
            &[
                (
                    "aws_vpc",
                    "main",
                    json!({"id": "vpc-0a1", "arn": format!("arn:aws:ec2:us-east-1:{NETWORK_ACCOUNT}:vpc/vpc-0a1")}),
                ),
                ("aws_route_table", "main", json!({"id": "rtb-0b2", "vpc_id": "vpc-0a1"})),
                ("aws_s3_bucket", "flow_logs", flow_logs),
            ],
        ),
    )
    .await;

    let tree = scan(repo.path(), &repo.config).unwrap();
    let found = discover(&tree, &repo.config);
    let readers = Readers::new(repo.path());
    let mut index = Index::new();
    let mut versions = Vec::new();
    for stack in found.stacks.iter().filter(|s| s.backend == "s3") {
        for ws in &stack.workspaces {
            let location = locate(stack, &ws.name).unwrap();
            let read = readers.read(&location).await.unwrap_or_else(|e| panic!("{}/{}: {e}", stack.name, ws.name));
            let StateVersion::S3 { etag, .. } = &read.version else { panic!("{:?}", read.version) };
            assert!(!etag.is_empty() && !etag.contains('"'), "{etag}");
            versions.push((stack.name.clone(), ws.name.clone(), read.serial, read.version.clone()));
            index.add(
                &stack.name,
                &ws.name,
                &read,
                &driftback_stacks::provider_placements(&tree.repo, stack, &ws.name),
            );
        }
    }
    let serials: Vec<(String, String, Option<u64>)> =
        versions.iter().map(|(s, w, n, _)| (s.clone(), w.clone(), *n)).collect();
    assert_eq!(
        serials,
        [
            ("app".to_string(), "prod".to_string(), Some(12)),
            ("app".into(), "staging".into(), Some(3)),
            ("network".into(), "default".into(), Some(40))
        ]
    );

    let q = |id| Query { id, ..Query::default() };
    let Lookup::Managed(prod) = index.lookup(&q("jobs-prod")) else { panic!() };
    assert_eq!((prod[0].workspace.as_str(), prod[0].address.to_string()), ("prod", "aws_sqs_queue.this".to_string()));
    // A resource without an ARN: account and region from the stack's provider (the role it assumes).
    let Lookup::Managed(rtb) = index.lookup(&q("rtb-0b2")) else { panic!() };
    assert_eq!(rtb[0].stack, "network");
    assert_eq!(rtb[0].placement.account.as_deref(), Some(NETWORK_ACCOUNT));
    assert_eq!(rtb[0].placement.region.as_deref(), Some("us-east-1"));
    // Two stacks manage the same bucket: ambiguous, with both candidates.
    let Lookup::Ambiguous(groups) =
        index.lookup(&Query { id: "acme-flow-logs", types: &["aws_s3_bucket"], ..Query::default() })
    else {
        panic!("expected ambiguous")
    };
    let owners: Vec<String> = groups.iter().map(|g| format!("{}/{}", g[0].stack, g[0].workspace)).collect();
    assert_eq!(owners, ["app/prod", "network/default"]);

    // A new state version has a new ETag: callers re-read only what changed.
    let app = &found.stacks[0];
    put(
        &s3,
        &repo.app_bucket,
        "env:/prod/app/terraform.tfstate",
        state("app-prod", 13, &[("aws_sqs_queue", "this", queue("jobs-prod", "eu-west-1"))]),
    )
    .await;
    let prod_at = locate(app, "prod").unwrap();
    assert_ne!(readers.probe(&prod_at).await.unwrap(), Some(versions[0].3.to_string()), "a HEAD sees the new ETag");
    let again = readers.read(&prod_at).await.unwrap();
    assert_ne!(again.version, versions[0].3);
    assert_eq!(readers.probe(&prod_at).await.unwrap(), Some(again.version.to_string()));
    assert_eq!(again.serial, Some(13));
    let staging_again = readers.read(&locate(app, "staging").unwrap()).await.unwrap();
    assert_eq!(staging_again.version, versions[1].3, "an unchanged object keeps its ETag");

    // Without [[stack.workspace]] entries, the bucket tells which workspaces exist.
    let mut bare = repo.config.clone();
    bare[0].workspaces.clear();
    let listed = discover(&tree, &bare);
    assert_eq!(readers.list_workspaces(&listed.stacks[0]).await.unwrap(), Some(vec!["prod".into(), "staging".into()]));

    // The errors name what is wrong.
    let err = readers.read(&locate(app, "qa").unwrap()).await.unwrap_err();
    assert!(matches!(err, ReadError::Missing { .. }), "{err:?}");
    assert!(
        err.to_string().contains("env:/qa/app/terraform.tfstate") && err.to_string().contains("no such workspace"),
        "{err}"
    );
    let mut wrong = repo.config.clone();
    wrong[1].settings.insert("bucket".into(), json!("acme-no-such-bucket"));
    let network = discover(&tree, &wrong).stacks.remove(2);
    let err = readers.read(&locate(&network, "default").unwrap()).await.unwrap_err();
    assert!(matches!(err, ReadError::NoBucket { .. }), "{err:?}");
    assert!(err.to_string().contains("acme-no-such-bucket"), "{err}");
}

/// `assume_role` in the backend: the state bucket belongs to the second account and is read with
/// the role's credentials, asked of STS (moto's) with the ambient ones.
#[tokio::test(flavor = "multi_thread")]
async fn a_state_in_another_account_through_assume_role() {
    let Some(endpoint) = moto_endpoint() else { return };
    let role = format!("arn:aws:iam::{NETWORK_ACCOUNT}:role/state-reader");
    let sdk = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .region(aws_sdk_s3::config::Region::new("us-east-1"))
        .endpoint_url(&endpoint)
        .load()
        .await;
    let provider =
        aws_config::sts::AssumeRoleProvider::builder(&role).configure(&sdk).session_name("seed").build().await;
    let as_role = aws_sdk_s3::Client::from_conf(
        aws_sdk_s3::config::Builder::from(&sdk).credentials_provider(provider).force_path_style(true).build(),
    );
    let bucket = format!("acme-network-state-{}", std::process::id());
    as_role.create_bucket().bucket(&bucket).send().await.unwrap();
    put(&as_role, &bucket, "network.tfstate", state("net", 5, &[("aws_vpc", "main", json!({"id": "vpc-9"}))])).await;

    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("network")).unwrap();
    std::fs::write(
        dir.path().join("network/main.tf"),
        format!(
            "terraform {{\n  backend \"s3\" {{\n    bucket = \"{bucket}\"\n    key = \"network.tfstate\"\n    region = \"us-east-1\"\n    use_path_style = true\n    assume_role {{\n      role_arn = \"{role}\"\n    }}\n  }}\n}}\n"
        ),
    )
    .unwrap();
    let endpoints = json!({"endpoints": {"s3": endpoint, "sts": endpoint}});
    let config = vec![driftback_stacks::StackConfig {
        path: "network".into(),
        settings: endpoints.as_object().unwrap().clone(),
        ..Default::default()
    }];
    let tree = scan(dir.path(), &config).unwrap();
    let network = discover(&tree, &config).stacks.remove(0);
    let location = locate(&network, "default").unwrap();
    assert!(location.to_string().ends_with(&format!("as {role}")), "{location}");
    let readers = Readers::new(dir.path());
    let read = readers.read(&location).await.unwrap();
    assert_eq!(read.serial, Some(5));
    // The read goes through the role: with STS out of reach, it fails, naming the credentials.
    let mut unreachable = config.clone();
    unreachable[0].settings.insert("endpoints".into(), json!({"s3": endpoint, "sts": "http://127.0.0.1:9"}));
    let cut_off = discover(&scan(dir.path(), &unreachable).unwrap(), &unreachable).stacks.remove(0);
    let err = readers.read(&locate(&cut_off, "default").unwrap()).await.unwrap_err();
    assert!(matches!(err, ReadError::NoCredentials { .. } | ReadError::Unavailable { .. }), "{err:?}");
}
