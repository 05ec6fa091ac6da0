//! The stacks layer against real components: a git repository on disk, moto's S3 (through
//! `scripts/moto.sh`, which exports DRIFTBACK_TEST_MOTO_ENDPOINT), and a stand-in for the HCP
//! Terraform API speaking its JSON:API format. All in one test binary.

mod fixture;
mod hcp;
mod hcp_server;
mod s3;

use driftback_stacks::{Lookup, Query};

#[test]
fn discovery_finds_root_modules_workspaces_and_their_tfvars() {
    let repo = fixture::Repo::write("http://127.0.0.1:1");
    let tree = driftback_stacks::scan(repo.path(), &repo.config).unwrap();
    let found = driftback_stacks::discover(&tree, &repo.config);
    let summary: Vec<(String, String, Vec<String>)> = found
        .stacks
        .iter()
        .map(|s| (s.name.clone(), s.backend.clone(), s.workspaces.iter().map(|w| w.name.clone()).collect()))
        .collect();
    assert_eq!(
        summary,
        [
            ("app".to_string(), "s3".to_string(), vec!["prod".to_string(), "staging".to_string()]),
            ("legacy".into(), "local".into(), vec!["default".into(), "blue".into()]),
            ("network".into(), "s3".into(), vec!["default".into()]),
        ],
        "modules/queue (called by app, with a lock file of its own) and modules/unused are not stacks; notes: {:?}",
        found.notes
    );
    let app = &found.stacks[0];
    assert_eq!(app.found_by, ["backend \"s3\" block (app/main.tf:2)", "configuration"]);
    assert_eq!(app.workspace("prod").unwrap().tfvars, [std::path::PathBuf::from("envs/prod/prod.tfvars")]);
    // The partial configuration file completes the empty backend block.
    assert_eq!(
        driftback_stacks::locate(app, "prod").unwrap().to_string(),
        "s3://".to_string() + &repo.app_bucket + "/env:/prod/app/terraform.tfstate (us-east-1) at http://127.0.0.1:1"
    );
    let network = &found.stacks[2];
    assert_eq!(network.found_by, ["backend \"s3\" block (network/main.tf:2)", "lock file", "configuration"]);
    // The second account: the provider assumes a role there.
    let placements = driftback_stacks::provider_placements(&tree.repo, network, "default");
    assert_eq!(placements[""].account.as_deref(), Some(fixture::NETWORK_ACCOUNT));
    // Each workspace's variables decide its region.
    let staging = driftback_stacks::provider_placements(&tree.repo, app, "staging");
    assert_eq!(staging[""].region.as_deref(), Some("eu-central-1"));
    let prod = driftback_stacks::provider_placements(&tree.repo, app, "prod");
    assert_eq!(prod[""].region.as_deref(), Some("eu-west-1"));
    assert!(found.notes.iter().any(|n| n.contains("secret_key is ignored")), "{:?}", found.notes);
}

#[tokio::test(flavor = "multi_thread")]
async fn local_states_index_and_the_ambiguous_case() {
    let repo = fixture::Repo::write("http://127.0.0.1:1");
    let tree = driftback_stacks::scan(repo.path(), &repo.config).unwrap();
    let found = driftback_stacks::discover(&tree, &repo.config);
    let legacy = found.stacks.iter().find(|s| s.name == "legacy").unwrap();
    let readers = driftback_stacks::Readers::new(repo.path());
    let mut index = driftback_stacks::Index::new();
    for ws in ["default", "blue"] {
        let location = driftback_stacks::locate(legacy, ws).unwrap();
        let read = driftback_stacks::StateReader::read(&readers, &location).await.unwrap();
        assert_eq!(read.version, driftback_stacks::StateVersion::Serial { serial: 4, lineage: format!("legacy-{ws}") });
        index.add("legacy", ws, &read, &driftback_stacks::provider_placements(&tree.repo, legacy, ws));
    }
    // Both workspaces manage the same bucket: reported, never guessed.
    let Lookup::Ambiguous(groups) = index.lookup(&Query { id: "acme-shared-assets", ..Query::default() }) else {
        panic!("expected ambiguous")
    };
    let owners: Vec<String> = groups.iter().map(|g| format!("{}/{}", g[0].stack, g[0].workspace)).collect();
    assert_eq!(owners, ["legacy/blue", "legacy/default"]);
    let Lookup::Managed(found) = index.lookup(&Query { id: "legacy-default-q", ..Query::default() }) else { panic!() };
    assert_eq!(found[0].address.to_string(), "aws_sqs_queue.q");
    assert_eq!(found[0].placement.region.as_deref(), Some("eu-west-1"), "from the queue's ARN");
    let missing = driftback_stacks::locate(legacy, "green").unwrap();
    let err = driftback_stacks::StateReader::read(&readers, &missing).await.unwrap_err();
    assert!(err.to_string().contains("terraform.tfstate.d/green/terraform.tfstate"), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_show_json_export_named_by_the_configuration() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("dns")).unwrap();
    std::fs::write(
        dir.path().join("dns/main.tf"),
        "resource \"aws_route53_zone\" \"main\" {\n  name = \"acme.example\"\n}\n",
    )
    .unwrap();
    let export = serde_json::json!({"format_version": "1.0", "terraform_version": "1.9.5", "values": {"root_module": {
        "resources": [{"address": "aws_route53_zone.main", "mode": "managed", "type": "aws_route53_zone", "name": "main",
                       "provider_name": "registry.terraform.io/hashicorp/aws",
                       "values": {"id": "Z0123", "name": "acme.example", "arn": "arn:aws:route53:::hostedzone/Z0123"}}]}}});
    std::fs::write(dir.path().join("dns/state.json"), export.to_string()).unwrap();
    let config = vec![driftback_stacks::StackConfig {
        path: "dns".into(),
        backend: Some("show-json".into()),
        state_file: Some("dns/state.json".into()),
        ..Default::default()
    }];
    let tree = driftback_stacks::scan(dir.path(), &config).unwrap();
    let found = driftback_stacks::discover(&tree, &config);
    assert_eq!(found.stacks.len(), 1, "the configuration declares what discovery cannot see");
    let location = driftback_stacks::locate(&found.stacks[0], "default").unwrap();
    assert_eq!(location.to_string(), "terraform show -json export dns/state.json");
    let readers = driftback_stacks::Readers::new(dir.path());
    let read = driftback_stacks::StateReader::read(&readers, &location).await.unwrap();
    assert!(
        matches!(read.version, driftback_stacks::StateVersion::Digest(ref d) if d.len() == 32),
        "{:?}",
        read.version
    );
    let mut index = driftback_stacks::Index::new();
    index.add("dns", "default", &read, &Default::default());
    let Lookup::Managed(zone) = index.lookup(&Query { id: "Z0123", ..Query::default() }) else { panic!() };
    assert_eq!(zone[0].address.to_string(), "aws_route53_zone.main");
    assert_eq!(zone[0].placement.region, None, "a global resource: its ARN has no region");
}
