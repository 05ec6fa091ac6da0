//! `driftback serve` against a private repository, end to end: the real daemon on moto's SQS with
//! its store in Postgres clones, fetches and pushes through a loopback git host that answers 401
//! without credentials (`support/git_host.rs`: `git http-backend` behind Basic authentication),
//! with an HTTPS token and with a GitHub App whose installation tokens the stand-in expires within
//! seconds, and over SSH with a deploy key against a loopback `sshd` (`support/sshd.rs`). Each run:
//! the clone is made, the base branch moves, an event arrives, a branch is pushed on top of the
//! moved base. Then the secret (the token, every minted token, the private key) is looked for in
//! the work directory and its `.git/config`, in everything the daemon printed at debug level, and
//! in every row of every table of its database: it must be nowhere.
//!
//! Run through `scripts/postgres.sh scripts/moto.sh`; without them the tests say so and pass,
//! unless DRIFTBACK_REQUIRE_SERVICES is set. The SSH test needs `sshd` and `ssh-keygen`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::json;

mod support;
use support::git_host::GitHost;
use support::private::{app_key_file, app_public_key, files_holding, own_database, postgres_and_moto, rows_holding};
use support::sshd::{keygen, sshd_available, start_sshd, user};
use support::{bare_remote, demo_records, free_port, git, remote_branches, sqs_client, wait_for};

const TOKEN: &str = "ghp_servePrivateLoopbackToken0123456789";
const APP_ID: &str = "4242";
/// The demo's change of the web server's instance type, the one event of each run.
const EVENT_ID: &str = "3f0c1d2e-0000-4000-8000-000000000002";

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

/// A test's directory with the demo project in `remote.git`, which the git host may push to.
fn private_remote() -> (tempfile::TempDir, PathBuf) {
    let root = tempfile::tempdir().unwrap();
    let remote = bare_remote(root.path());
    git(&remote, &["config", "http.receivepack", "true"]);
    (root, remote)
}

/// What one run of the daemon left.
struct Run {
    workdir: PathBuf,
    store_url: String,
    log: String,
}

/// The daemon's environment for the repository at `url`, its clone in `workdir`, its store at
/// `store_url`, reading `queue_url` on moto at `endpoint`; `config` is its configuration file.
fn daemon_env(
    endpoint: &str,
    queue_url: &str,
    url: &str,
    workdir: &Path,
    store_url: &str,
    config: &Path,
) -> Vec<(&'static str, String)> {
    vec![
        ("DRIFTBACK_CONFIG", config.display().to_string()),
        ("DRIFTBACK_FEED__QUEUE_URL", queue_url.to_string()),
        ("DRIFTBACK_FEED__ENDPOINT_URL", endpoint.to_string()),
        ("DRIFTBACK_FEED__REGION", "us-east-1".to_string()),
        ("DRIFTBACK_FEED__WAIT_TIME_SECS", "1".to_string()),
        ("DRIFTBACK_GROUP__QUIET_WINDOW_SECS", "0".to_string()),
        ("DRIFTBACK_SERVE__REPO_URL", url.to_string()),
        ("DRIFTBACK_SERVE__WORKDIR", workdir.display().to_string()),
        ("DRIFTBACK_SERVE__LISTEN", format!("127.0.0.1:{}", free_port())),
        ("DRIFTBACK_SERVE__POLL_MS", "100".to_string()),
        ("DRIFTBACK_STORE__URL", store_url.to_string()),
        ("DRIFTBACK_BACKFILL__ON_START", "false".to_string()),
        ("DRIFTBACK_PUBLISH__MODE", "push".to_string()),
        ("DRIFTBACK_PUBLISH__RETRY_DELAY_MS", "0".to_string()),
    ]
}

/// Where one run happens: Postgres's admin URL and moto's endpoint, the test's directory, the
/// bare remote in it and the URL the daemon reaches it by.
struct Site<'a> {
    database: &'a str,
    endpoint: &'a str,
    root: &'a Path,
    remote: &'a Path,
    url: &'a str,
}

/// The daemon on the private repository at `site.url` (configuration file text `config`, environment
/// `extra` besides): it clones and is ready; `before_event` runs; a teammate moves `main` on the
/// remote; the demo's instance-type change arrives on the queue; a branch is pushed. The daemon
/// logs at debug level; it is stopped with SIGTERM and must exit cleanly.
fn serve_once(
    rt: &tokio::runtime::Runtime,
    site: &Site,
    config: &str,
    extra: Vec<(&'static str, String)>,
    before_event: impl FnOnce(),
) -> Run {
    let Site { database, endpoint, root, remote, url } = *site;
    let name = format!("private_{}_{}", std::process::id(), free_port());
    let store_url = rt.block_on(own_database(database, &name));
    let sqs = rt.block_on(sqs_client(endpoint));
    let queue_url = rt.block_on(sqs.create_queue().queue_name(&name).send()).unwrap().queue_url.unwrap();
    let config_file = root.join("driftback.toml");
    std::fs::write(&config_file, config).unwrap();
    let workdir = root.join("work");
    let mut envs = daemon_env(endpoint, &queue_url, url, &workdir, &store_url, &config_file);
    envs.extend(extra);
    let listen = envs.iter().find(|(k, _)| *k == "DRIFTBACK_SERVE__LISTEN").unwrap().1.clone();
    let mut daemon = support::private::start_logged(root, &envs, 1, "debug");
    let http = reqwest::Client::new();
    rt.block_on(wait_for(
        "the clone and /readyz",
        &mut daemon,
        async || matches!(http.get(format!("http://{listen}/readyz")).send().await, Ok(r) if r.status().is_success()),
    ));
    assert_eq!(git(&workdir, &["remote", "get-url", "origin"]).trim(), url, "origin is the URL as given");

    before_event();
    // A teammate moves the base: the daemon must fetch it (through the host) before it branches.
    let teammate = root.join("teammate");
    git(root, &["clone", "-q", remote.to_str().unwrap(), teammate.to_str().unwrap()]);
    std::fs::write(teammate.join("README.md"), "# infrastructure\n").unwrap();
    git(&teammate, &["add", "README.md"]);
    git(&teammate, &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "readme"]);
    git(&teammate, &["push", "-q", "origin", "main"]);
    let moved = git(remote, &["rev-parse", "main"]).trim().to_string();

    let record = demo_records().into_iter().find(|r| r["eventID"] == EVENT_ID).unwrap();
    let envelope = json!({"version": "0", "id": "e", "detail-type": "AWS API Call via CloudTrail",
                          "source": "aws.ec2", "account": "123456789012", "region": "us-east-1",
                          "resources": [], "detail": record});
    rt.block_on(sqs.send_message().queue_url(&queue_url).message_body(envelope.to_string()).send()).unwrap();
    rt.block_on(wait_for("a pushed branch", &mut daemon, async || !remote_branches(remote).is_empty()));
    let status = daemon.terminate();
    assert!(status.success(), "exit {status:?}:\n{}", daemon.log());

    let branches = remote_branches(remote);
    assert_eq!(branches.len(), 1, "{branches:?}");
    let branch = branches[0].clone();
    assert!(branch.contains("aws_instance.web"), "{branch}");
    let diff = git(remote, &["diff", &moved, &branch]);
    assert!(diff.contains("+  instance_type = \"t3.large\""), "{diff}");
    assert_eq!(git(remote, &["rev-parse", &format!("{branch}^")]).trim(), moved, "the branch starts at the moved base");
    Run { workdir, store_url, log: daemon.log() }
}

/// `secret` is in none of the files under each of `dirs` (which must include the clone's
/// `.git/config`), not in the daemon's output, and in no row of its database (which has rows).
fn assert_nowhere(rt: &tokio::runtime::Runtime, run: &Run, dirs: &[&Path], secret: &str) {
    // The searches find what is there: the event's id in the store, the code in the clone (its
    // working tree stays at the base; the change is in compressed objects).
    let event = rt.block_on(rows_holding(&run.store_url, EVENT_ID));
    assert!(event.iter().any(|(t, _, n)| t == "events" && *n == 1), "{event:?}");
    let code = files_holding(&run.workdir, "resource \"aws_instance\" \"web\"");
    assert!(code.iter().any(|(p, holds)| *holds && p.ends_with("main.tf")), "the code is in the clone");
    let mut saw_config = false;
    for dir in dirs {
        for (path, holds) in files_holding(dir, secret) {
            saw_config |= path == run.workdir.join(".git/config");
            assert!(!holds, "{} holds the secret", path.display());
        }
    }
    assert!(saw_config, "the search saw the clone's .git/config");
    assert!(!run.log.contains(secret), "the daemon printed the secret");
    let tables = rt.block_on(rows_holding(&run.store_url, secret));
    let rows: i64 = tables.iter().map(|(_, rows, _)| rows).sum();
    assert!(rows > 0 && tables.iter().any(|(t, n, _)| t == "events" && *n == 1), "{tables:?}");
    let holding: Vec<_> = tables.iter().filter(|(_, _, n)| *n > 0).collect();
    assert!(holding.is_empty(), "rows hold the secret: {holding:?}");
}

/// The git requests the host answered, with these statuses.
fn answered(host: &GitHost, status: u16, path_has: &str) -> usize {
    host.seen(|s| s.git.iter().filter(|(p, c)| *c == status && p.contains(path_has)).count())
}

#[test]
fn serve_clones_fetches_and_pushes_a_private_repository_with_a_token_it_keeps_off_disk_logs_and_store() {
    let Some((database, endpoint)) = postgres_and_moto("private repository (token) test") else { return };
    let rt = runtime();
    let (root, remote) = private_remote();
    let host = GitHost::start(root.path().to_path_buf(), None, Duration::ZERO);
    host.accept(TOKEN);
    let url = host.url("remote.git");

    // Without the token the daemon stops at the clone, naming the remote and what to configure,
    // and leaves no half-made clone. (Its log files stay in the test's directory and are searched
    // for the token with the rest.)
    let workdir = root.path().join("refused");
    let empty = root.path().join("empty.toml");
    std::fs::write(&empty, "").unwrap();
    let refused = |url: &str, run: usize| {
        let envs = daemon_env(&endpoint, "http://127.0.0.1:1/q", url, &workdir, &database, &empty);
        let mut refused = support::private::start_logged(root.path(), &envs, run, "debug");
        let start = Instant::now();
        let status = loop {
            if let Some(status) = refused.child.try_wait().unwrap() {
                break status;
            }
            assert!(start.elapsed() < Duration::from_secs(60), "still running:\n{}", refused.log());
            std::thread::sleep(Duration::from_millis(100));
        };
        let said = refused.log();
        assert!(!status.success(), "{said}");
        assert!(said.contains("publish.token_env"), "{said}");
        assert!(!workdir.join(".git").exists(), "a failed clone is removed");
        said
    };
    assert!(refused(&url, 0).contains(&url));
    assert!(answered(&host, 401, "") >= 1);
    // The token in the URL instead is refused before anything is cloned or logged with it.
    let seen = host.seen(|s| s.git.len());
    let said = refused(&url.replace("http://", &format!("http://x-access-token:{TOKEN}@")), 10);
    assert!(said.contains("x-access-token:***@") && !said.contains(TOKEN), "{said}");
    assert_eq!(host.seen(|s| s.git.len()), seen, "nothing asked of the host");

    let site = Site { database: &database, endpoint: &endpoint, root: root.path(), remote: &remote, url: &url };
    let run = serve_once(&rt, &site, "", vec![("GITHUB_TOKEN", TOKEN.to_string())], || {});
    // The clone, the fetch and the push all went through the host, with the credentials given
    // after a 401 challenge.
    assert!(answered(&host, 200, "git-upload-pack") >= 2, "clone and fetch: {:?}", host.seen(|s| s.git.clone()));
    assert!(answered(&host, 200, "git-receive-pack") >= 1, "push: {:?}", host.seen(|s| s.git.clone()));
    assert!(run.log.contains("cloning the infrastructure repository"), "{}", run.log);
    assert_nowhere(&rt, &run, &[root.path()], TOKEN);
}

#[test]
fn serve_mints_github_app_tokens_again_when_they_expire_mid_run_and_keeps_them_nowhere() {
    let Some((database, endpoint)) = postgres_and_moto("private repository (GitHub App) test") else { return };
    let rt = runtime();
    let (root, remote) = private_remote();
    // Tokens live four seconds; the daemon mints the next one when less than one is left.
    let life = Duration::from_secs(4);
    let host = GitHost::start(root.path().to_path_buf(), Some((app_public_key(), APP_ID.into())), life);
    let url = host.url("remote.git");
    let config = format!(
        "[publish.app]\napp_id = \"{APP_ID}\"\ninstallation_id = 77\nprivate_key_file = \"{}\"\nrefresh_before_secs = 1\n",
        app_key_file().display()
    );
    let site = Site { database: &database, endpoint: &endpoint, root: root.path(), remote: &remote, url: &url };
    let run = serve_once(
        &rt,
        &site,
        &config,
        vec![("DRIFTBACK_PUBLISH__API_URL", host.api_url())],
        // The clone's token dies at the host before the event arrives.
        || std::thread::sleep(life + Duration::from_millis(500)),
    );
    let minted: Vec<String> = host.seen(|s| s.minted.iter().map(|(t, _)| t.clone()).collect());
    assert!(minted.len() >= 2, "a token for the clone and a new one after it expired: {minted:?}");
    assert!(host.seen(|s| s.refused_mints.is_empty()), "{:?}", host.seen(|s| s.refused_mints.clone()));
    for (_, claims) in host.seen(|s| s.minted.clone()) {
        assert_eq!(claims["iss"], APP_ID, "{claims}");
    }
    assert!(answered(&host, 200, "git-receive-pack") >= 1, "push: {:?}", host.seen(|s| s.git.clone()));
    assert!(run.log.contains("minted a GitHub App installation token"), "{}", run.log);
    for token in &minted {
        assert_nowhere(&rt, &run, &[root.path()], token);
    }
}

#[test]
fn serve_clones_fetches_and_pushes_over_ssh_with_a_deploy_key_it_keeps_nowhere() {
    let Some((database, endpoint)) = postgres_and_moto("private repository (SSH) test") else { return };
    if !sshd_available() {
        assert!(
            std::env::var_os("DRIFTBACK_REQUIRE_SERVICES").is_none(),
            "needs sshd and ssh-keygen (apt-get install openssh-server)"
        );
        eprintln!("NOTICE: SSH serve test skipped: needs sshd and ssh-keygen (apt-get install openssh-server)");
        return;
    }
    let rt = runtime();
    let (root, remote) = private_remote();
    let keys = tempfile::tempdir().unwrap();
    let key = keys.path().join("deploy_key");
    keygen(&key);
    let sshd = start_sshd(keys.path(), &key.with_extension("pub")).unwrap();
    let known_hosts = keys.path().join("known_hosts");
    std::fs::write(&known_hosts, &sshd.host_key_line).unwrap();
    let url = format!("ssh://{}@127.0.0.1:{}{}", user(), sshd.port, remote.display());
    let config = format!(
        "[publish.ssh]\nprivate_key_file = \"{}\"\nknown_hosts_file = \"{}\"\nusername = \"{}\"\n",
        key.display(),
        known_hosts.display(),
        user()
    );
    let site = Site { database: &database, endpoint: &endpoint, root: root.path(), remote: &remote, url: &url };
    let run = serve_once(&rt, &site, &config, vec![], || {});
    assert!(run.log.contains("cloning the infrastructure repository"), "{}", run.log);
    // The key's secret lines: each is nowhere outside the key's own directory.
    let private = std::fs::read_to_string(&key).unwrap();
    let lines: Vec<&str> = private.lines().filter(|l| !l.starts_with("-----") && l.len() >= 40).collect();
    assert!(!lines.is_empty(), "{private}");
    for line in lines {
        assert_nowhere(&rt, &run, &[root.path()], line);
    }
}
