//! Credentials for a private repository, the same for clone, fetch and push: a token, and a GitHub
//! App's installation tokens minted again before they expire, against a loopback git host that
//! answers 401 without them (`git http-backend` behind Basic authentication). No credential
//! appears in the clone's `.git`, in the logs or in an error.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use driftback_publish::{
    AppSettings, AppTokens, Author, Credentials, PublishError, Remote, RetryPolicy, Secret, Token, WorkingClone,
};

use crate::git_host::GitHost;
use crate::{Setup, git};

const TOKEN: &str = "ghp_loopbackSecretToken0123456789";
const APP_ID: &str = "4242";

fn no_wait() -> RetryPolicy {
    RetryPolicy { attempts: 1, first_delay: Duration::ZERO, max_delay: Duration::ZERO }
}

fn token(value: &str) -> Credentials {
    Credentials::Token { username: "x-access-token".into(), token: Token::Fixed(Secret::new(value)) }
}

/// Everything every test in this binary logs, at every level.
pub fn logs() -> Arc<Mutex<Vec<u8>>> {
    static LOGS: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    LOGS.get_or_init(|| {
        let buffer = Arc::new(Mutex::new(Vec::new()));
        struct Capture(Arc<Mutex<Vec<u8>>>);
        impl Write for Capture {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(b);
                Ok(b.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let writer = buffer.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_writer(move || Capture(writer.clone()))
            .finish();
        tracing::subscriber::set_global_default(subscriber).expect("no other subscriber in this binary");
        buffer
    })
    .clone()
}

pub fn logged() -> String {
    String::from_utf8_lossy(&logs().lock().unwrap()).into_owned()
}

/// Every file under `dir`, as bytes, with its path.
fn files_under(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if let Ok(bytes) = std::fs::read(&path) {
                out.push((path, bytes));
            }
        }
    }
    out
}

fn assert_nowhere_on_disk(dir: &Path, secret: &str) {
    let files = files_under(dir);
    assert!(files.iter().any(|(p, _)| p.ends_with("config")), "the walk saw the clone's .git/config");
    for (path, bytes) in files {
        assert!(!bytes.windows(secret.len()).any(|w| w == secret.as_bytes()), "{} holds the token", path.display());
    }
}

/// A private host serving the setup's bare remote (pushes allowed), and its URL.
fn private_host(setup: &Setup, app: Option<(Vec<u8>, String)>, token_life: Duration) -> (GitHost, String) {
    git(&setup.remote, &["config", "http.receivepack", "true"]);
    let host = GitHost::start(setup.dir.path().to_path_buf(), app, token_life);
    let url = host.url("remote.git");
    (host, url)
}

/// Commit a change on a local branch of the clone and push it through `remote`.
fn push_a_change(clone: &WorkingClone, remote: &Remote, branch: &str) -> Result<git2::Oid, PublishError> {
    let repo = clone.repo().unwrap();
    let base = repo.head_commit().unwrap();
    let changes = vec![(PathBuf::from("extra.tf"), Some(format!("# {branch}\n")))];
    let (local, commit) =
        repo.commit_on_branch(base, branch, &changes, "drift: add extra.tf", &Author::default()).unwrap();
    assert_eq!(local, branch);
    remote.push_change(&repo, commit, branch, "main", &mut |_| Ok(())).map(|p| p.commit)
}

fn key_file() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/app-test-key.pem")
}

/// The fixture key's public half, as the App stand-in checks JWTs with it.
fn public_key() -> Vec<u8> {
    let pem = std::fs::read_to_string(key_file()).unwrap();
    let b64: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    use base64::Engine as _;
    let der = base64::engine::general_purpose::STANDARD.decode(b64).unwrap();
    let key = ring::signature::RsaKeyPair::from_der(&der).unwrap();
    key.public().as_ref().to_vec()
}

fn app_settings(api_url: String, app_id: &str, refresh_before: Duration) -> AppSettings {
    AppSettings { app_id: app_id.into(), installation_id: 77, private_key_file: key_file(), api_url, refresh_before }
}

#[test]
fn a_token_clones_fetches_and_pushes_through_a_host_that_asks_for_it_and_is_stored_nowhere() {
    logs();
    let setup = Setup::create();
    let (host, url) = private_host(&setup, None, Duration::ZERO);
    host.accept(TOKEN);
    let dir = setup.dir.path().join("clone");

    let clone = WorkingClone::open_or_clone(&url, &dir, "main", &token(TOKEN)).unwrap();
    assert_eq!(git(&dir, &["remote", "get-url", "origin"]), url, "origin is the URL as given, with no token");
    // Someone moves the base; the fetch through the host brings the clone to it.
    setup.teammate_pushes("main", "main", "main.tf", "# moved\n");
    let tip = clone.refresh().unwrap();
    assert_eq!(tip.to_string(), git(&setup.remote, &["rev-parse", "main"]));
    assert_eq!(std::fs::read_to_string(dir.join("main.tf")).unwrap(), "# moved\n");

    let remote = Remote::new(&url, token(TOKEN), no_wait()).unwrap();
    let pushed = push_a_change(&clone, &remote, "driftback/with-token").unwrap();
    assert_eq!(git(&setup.remote, &["rev-parse", "driftback/with-token"]), pushed.to_string());

    // The host asked (401) before it served: the credentials went through the callback.
    let (refused, served) = host
        .seen(|s| (s.git.iter().filter(|(_, c)| *c == 401).count(), s.git.iter().filter(|(_, c)| *c == 200).count()));
    assert!(refused >= 1 && served >= 3, "401s {refused}, 200s {served}");
    assert_nowhere_on_disk(&dir.join(".git"), TOKEN);
    let logs = logged();
    assert!(logs.contains("cloning the infrastructure repository"), "the logs were captured");
    assert!(!logs.contains(TOKEN), "the token is in the logs");
}

#[test]
fn without_the_token_or_with_a_wrong_one_the_error_names_the_remote_and_what_to_configure() {
    logs();
    let setup = Setup::create();
    let (host, url) = private_host(&setup, None, Duration::ZERO);
    host.accept(TOKEN);
    let dir = setup.dir.path().join("clone");

    let err = WorkingClone::open_or_clone(&url, &dir, "main", &Credentials::None).unwrap_err();
    let message = err.to_string();
    assert!(matches!(err, PublishError::Auth { .. }), "{message}");
    assert!(
        message.contains(&url) && message.contains("publish.token_env") && message.contains("[publish.app]"),
        "{message}"
    );
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "the failed clone is removed");

    let wrong = "ghp_wrongTokenValue987654321";
    let err = WorkingClone::open_or_clone(&url, &dir, "main", &token(wrong)).unwrap_err();
    let message = err.to_string();
    assert!(matches!(err, PublishError::Auth { .. }) && message.contains(&url), "{message}");
    assert!(!message.contains(wrong) && !format!("{err:?}").contains(wrong), "{message}");

    // A clone made with the token; a push with a wrong one is refused for good, naming the remote.
    let clone = WorkingClone::open_or_clone(&url, &dir, "main", &token(TOKEN)).unwrap();
    let remote = Remote::new(&url, token(wrong), no_wait()).unwrap();
    let err = push_a_change(&clone, &remote, "driftback/wrong").unwrap_err();
    let message = err.to_string();
    assert!(matches!(err, PublishError::Auth { .. }) && message.contains(&url), "{message}");
    assert!(!message.contains(wrong), "{message}");
    assert!(!logged().contains(wrong));
}

#[test]
fn a_github_app_token_is_minted_for_git_and_minted_again_before_it_expires() {
    logs();
    let setup = Setup::create();
    let life = Duration::from_secs(3);
    let (host, url) = private_host(&setup, Some((public_key(), APP_ID.into())), life);
    let app = Arc::new(AppTokens::new(&app_settings(host.api_url(), APP_ID, Duration::from_secs(1))).unwrap());
    let credentials = Credentials::Token { username: "x-access-token".into(), token: Token::App(app.clone()) };
    let dir = setup.dir.path().join("clone");

    let clone = WorkingClone::open_or_clone(&url, &dir, "main", &credentials).unwrap();
    assert_eq!(host.seen(|s| s.minted.len()), 1);
    let claims = host.seen(|s| s.minted[0].1.clone());
    assert_eq!(claims["iss"], APP_ID);
    let (iat, exp) = (claims["iat"].as_i64().unwrap(), claims["exp"].as_i64().unwrap());
    assert!(exp > iat && exp - iat <= 600, "{claims}");

    // The first token dies at the host; the fetch and the push get a new one, unasked.
    std::thread::sleep(life + Duration::from_millis(500));
    setup.teammate_pushes("main", "main", "main.tf", "# moved\n");
    let tip = clone.refresh().unwrap();
    assert_eq!(tip.to_string(), git(&setup.remote, &["rev-parse", "main"]));
    assert_eq!(host.seen(|s| s.minted.len()), 2, "a new token for the fetch");
    let remote = Remote::new(&url, credentials.clone(), no_wait()).unwrap();
    push_a_change(&clone, &remote, "driftback/with-app").unwrap();
    assert!(git(&setup.remote, &["branch", "--list", "driftback/with-app"]).contains("with-app"));
    assert!(host.seen(|s| s.refused_mints.is_empty()));

    // The API client asks the same source and gets the token git holds (no mint while it is fresh).
    let minted = host.seen(|s| s.minted.iter().map(|(t, _)| t.clone()).collect::<Vec<_>>());
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let api_token = runtime.block_on(Token::App(app.clone()).get()).unwrap();
    assert_eq!(api_token.expose(), minted.last().unwrap());
    assert_eq!(host.seen(|s| s.minted.len()), minted.len());

    let logs = logged();
    assert!(logs.contains("minted a GitHub App installation token"));
    for token in &minted {
        assert_nowhere_on_disk(&dir.join(".git"), token);
        assert!(!logs.contains(token.as_str()), "a minted token is in the logs");
    }
    assert!(!format!("{app:?}").contains("PRIVATE"));
}

#[test]
fn an_app_github_refuses_is_named_with_the_setting_to_check() {
    logs();
    let setup = Setup::create();
    let (host, url) = private_host(&setup, Some((public_key(), APP_ID.into())), Duration::from_secs(60));
    // Signed by the right key, but for another App.
    let app = AppTokens::new(&app_settings(host.api_url(), "999", Duration::from_secs(1))).unwrap();
    let credentials = Credentials::Token { username: "x-access-token".into(), token: Token::App(Arc::new(app)) };
    let err = WorkingClone::open_or_clone(&url, &setup.dir.path().join("clone"), "main", &credentials).unwrap_err();
    let message = err.to_string();
    assert!(
        message.contains(&url) && message.contains("publish.app.app_id") && message.contains("HTTP 401"),
        "{message}"
    );
    assert_eq!(host.seen(|s| s.refused_mints.len()), 1);
    assert_eq!(host.seen(|s| s.minted.len()), 0);

    // A PKCS#8 copy of the key is read as well as GitHub's PKCS#1 file.
    let pkcs8 = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/app-test-key.pkcs8.pem");
    let settings =
        AppSettings { private_key_file: pkcs8, ..app_settings(host.api_url(), APP_ID, Duration::from_secs(1)) };
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(AppTokens::new(&settings).unwrap().token()).unwrap();
    assert_eq!(host.seen(|s| s.minted.len()), 1);
}
