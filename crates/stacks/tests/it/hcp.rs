//! HCP Terraform through the stand-in: a `cloud` block by workspace name, by tags (listed through
//! pagination), the `remote` backend's prefix, the token kept to the API host, and the errors.

use std::sync::Arc;

use driftback_stacks::read::hcp::{EnvLookup, HcpReader};
use driftback_stacks::{ReadError, StackConfig, StateReader, StateVersion, discover, locate, scan};
use serde_json::json;

use crate::fixture::state;
use crate::hcp_server::{HcpStandIn, HcpWorkspace, TOKEN};

fn workspace(id: &str, name: &str, tags: &[&str], state: Option<(&str, u64, String)>) -> HcpWorkspace {
    HcpWorkspace {
        id: id.into(),
        name: name.into(),
        tags: tags.iter().map(|t| t.to_string()).collect(),
        state: state.map(|(sv, serial, text)| (sv.into(), serial, text)),
    }
}

fn repo(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

#[tokio::test(flavor = "multi_thread")]
async fn hcp_states_by_name_tags_and_prefix() {
    let dns = state("dns", 9, &[("aws_route53_zone", "main", json!({"id": "Z123", "name": "acme.example"}))]);
    let server = HcpStandIn::start(
        "acme",
        vec![
            workspace("ws-dns1", "dns", &["platform"], Some(("sv-dns9", 9, dns))),
            workspace("ws-api1", "api-prod", &["api", "prod"], Some(("sv-api3", 3, state("api", 3, &[])))),
            workspace("ws-api2", "api-staging", &["api", "staging"], Some(("sv-api7", 7, state("api-s", 7, &[])))),
            workspace("ws-new1", "api-qa", &["api", "qa"], None),
        ],
    )
    .await;
    let dir = repo(&[
        (
            "dns/main.tf",
            "terraform {\n  cloud {\n    hostname     = \"tfe.acme.example\"\n    organization = \"acme\"\n    workspaces {\n      name = \"dns\"\n    }\n  }\n}\n",
        ),
        (
            "api/main.tf",
            "terraform {\n  cloud {\n    hostname     = \"tfe.acme.example\"\n    organization = \"acme\"\n    workspaces {\n      tags = [\"api\"]\n    }\n  }\n}\n",
        ),
        (
            "legacy-api/main.tf",
            "terraform {\n  backend \"remote\" {\n    hostname     = \"tfe.acme.example\"\n    organization = \"acme\"\n    workspaces {\n      prefix = \"api-\"\n    }\n  }\n}\n",
        ),
    ]);
    let endpoint = json!({"endpoint": server.base_url});
    let config: Vec<StackConfig> = ["dns", "api", "legacy-api"]
        .iter()
        .map(|p| StackConfig { path: p.into(), settings: endpoint.as_object().unwrap().clone(), ..Default::default() })
        .collect();
    let tree = scan(dir.path(), &config).unwrap();
    let found = discover(&tree, &config);
    let names: Vec<&str> = found.stacks.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["api", "dns", "legacy-api"]);
    let (api, dns, legacy) = (&found.stacks[0], &found.stacks[1], &found.stacks[2]);
    assert_eq!(dns.workspaces.iter().map(|w| w.name.as_str()).collect::<Vec<_>>(), ["dns"]);

    let env = |token: Option<&'static str>| -> EnvLookup {
        Arc::new(move |name: &str| (name == "TF_TOKEN_tfe_acme_example").then(|| token.map(str::to_string)).flatten())
    };
    let reader = HcpReader::new(env(Some(TOKEN)), None);
    let location = locate(dns, "dns").unwrap();
    assert_eq!(location.to_string(), "tfe.acme.example/acme/dns");
    let read = reader.read(&location).await.unwrap();
    assert_eq!(read.version, StateVersion::Hcp { id: "sv-dns9".into(), serial: Some(9) });
    assert_eq!(read.state.instances[0].address.to_string(), "aws_route53_zone.main");
    let requests = server.requests();
    let paths: Vec<(&str, &str)> = requests.iter().map(|r| (r.host, r.path.as_str())).collect();
    assert_eq!(
        paths,
        [
            ("api", "/api/v2/organizations/acme/workspaces/dns"),
            ("api", "/api/v2/workspaces/ws-dns1/current-state-version"),
            ("archivist", "/v1/object/sv-dns9")
        ]
    );
    assert!(requests[..2].iter().all(|r| r.authorization.as_deref() == Some(&format!("Bearer {TOKEN}"))));
    assert_eq!(requests[2].authorization, None, "the pre-signed download on another host gets no token");
    // The probe asks for the current state version and downloads nothing.
    assert_eq!(reader.probe(&location).await.unwrap().as_deref(), Some("state version sv-dns9"));
    let after: Vec<String> = server.requests()[3..].iter().map(|r| format!("{} {}", r.host, r.path)).collect();
    assert_eq!(
        after,
        ["api /api/v2/organizations/acme/workspaces/dns", "api /api/v2/workspaces/ws-dns1/current-state-version"]
    );

    // Tags: every workspace carrying them, across pages (the stand-in serves one a page).
    let readers = driftback_stacks::Readers { hcp: reader.clone(), ..driftback_stacks::Readers::new(dir.path()) };
    let tagged = readers.list_workspaces(api).await.unwrap().unwrap();
    assert_eq!(tagged, ["api-prod", "api-qa", "api-staging"]);
    assert!(
        server
            .requests()
            .iter()
            .any(|r| r.query.contains("search%5Btags%5D=api") && r.query.contains("page%5Bnumber%5D=3"))
    );
    let staging = reader.read(&locate(api, "api-staging").unwrap()).await.unwrap();
    assert_eq!(staging.version, StateVersion::Hcp { id: "sv-api7".into(), serial: Some(7) });
    // The remote backend's prefix: CLI workspace `prod` is HCP workspace `api-prod`.
    assert_eq!(readers.list_workspaces(legacy).await.unwrap().unwrap(), ["prod", "qa", "staging"]);
    let prod = reader.read(&locate(legacy, "prod").unwrap()).await.unwrap();
    assert_eq!(prod.lineage.as_deref(), Some("api"));

    // What goes wrong, said plainly.
    let err = reader.read(&locate(legacy, "qa").unwrap()).await.unwrap_err();
    assert!(err.to_string().contains("no state yet"), "{err}");
    let err = reader.read(&locate(api, "api-nope").unwrap()).await.unwrap_err();
    assert!(matches!(err, ReadError::Missing { .. }) && err.to_string().contains("no such workspace"), "{err}");
    let err = HcpReader::new(env(None), None).read(&location).await.unwrap_err();
    assert!(err.to_string().contains("TF_TOKEN_tfe_acme_example"), "{err}");
    let err = HcpReader::new(env(Some("wrong")), None).read(&location).await.unwrap_err();
    assert!(matches!(err, ReadError::Denied { .. }) && err.to_string().contains("rejected"), "{err}");
}
