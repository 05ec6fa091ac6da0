//! What the daemon's tests against a private repository share: the GitHub App's test key (the
//! publish crate's fixture) for the App stand-in of `git_host.rs`, a Postgres database of a test's
//! own, `driftback serve` with its standard output and error in one log, and searches of files and
//! tables for a secret's text.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use base64::Engine as _;
use sqlx::Connection;

use super::Daemon;

/// The GitHub App private key the publish crate's tests use (PKCS#1 PEM, as GitHub hands it out).
pub fn app_key_file() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../publish/tests/fixtures/app-test-key.pem")
}

/// The public half of [`app_key_file`] (DER RSAPublicKey), as the App stand-in checks JWTs with it.
pub fn app_public_key() -> Vec<u8> {
    let pem = std::fs::read_to_string(app_key_file()).unwrap();
    let b64: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    let der = base64::engine::general_purpose::STANDARD.decode(b64).unwrap();
    let key = ring::signature::RsaKeyPair::from_der(&der).unwrap();
    key.public().as_ref().to_vec()
}

/// `DATABASE_URL` and `DRIFTBACK_TEST_MOTO_ENDPOINT` from `scripts/postgres.sh scripts/moto.sh`;
/// `None` (the test is skipped, with a notice naming `tests`) without them, unless
/// `DRIFTBACK_REQUIRE_SERVICES` says they must be there.
pub fn postgres_and_moto(tests: &str) -> Option<(String, String)> {
    match (std::env::var("DATABASE_URL"), std::env::var("DRIFTBACK_TEST_MOTO_ENDPOINT")) {
        (Ok(database), Ok(endpoint)) => Some((database, endpoint)),
        _ => {
            assert!(
                std::env::var_os("DRIFTBACK_REQUIRE_SERVICES").is_none(),
                "DRIFTBACK_REQUIRE_SERVICES is set but Postgres or moto is not running: run through \
                 scripts/postgres.sh scripts/moto.sh"
            );
            eprintln!("NOTICE: {tests} skipped: run through scripts/postgres.sh scripts/moto.sh");
            None
        }
    }
}

/// A new database `name` on the server of `admin_url`; its URL.
pub async fn own_database(admin_url: &str, name: &str) -> String {
    let mut admin = sqlx::PgConnection::connect(admin_url).await.unwrap();
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE \"{name}\""))).execute(&mut admin).await.unwrap();
    admin.close().await.unwrap();
    format!("{}/{name}", admin_url.rsplit_once('/').unwrap().0)
}

/// For each table of the database at `url` (schema `public`): its name, its number of rows, and
/// how many of them hold `needle` anywhere in their text form.
pub async fn rows_holding(url: &str, needle: &str) -> Vec<(String, i64, i64)> {
    let mut db = sqlx::PgConnection::connect(url).await.unwrap();
    let tables: Vec<(String,)> = sqlx::query_as(
        "SELECT table_name::text FROM information_schema.tables WHERE table_schema = 'public' \
         AND table_type = 'BASE TABLE' ORDER BY 1",
    )
    .fetch_all(&mut db)
    .await
    .unwrap();
    let mut out = Vec::new();
    for (table,) in tables {
        let sql = format!(
            "SELECT count(*), count(*) FILTER (WHERE strpos(t::text, $1) > 0) FROM \"{}\" AS t",
            table.replace('"', "\"\"")
        );
        let (rows, holding): (i64, i64) =
            sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(needle).fetch_one(&mut db).await.unwrap();
        out.push((table, rows, holding));
    }
    db.close().await.unwrap();
    out
}

/// Every file under `dir` (recursively), and whether its bytes hold `needle`.
pub fn files_holding(dir: &Path, needle: &str) -> Vec<(PathBuf, bool)> {
    let mut out = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            if entry.file_type().unwrap().is_dir() {
                dirs.push(path);
            } else if let Ok(bytes) = std::fs::read(&path) {
                let holds = bytes.windows(needle.len()).any(|w| w == needle.as_bytes());
                out.push((path, holds));
            }
        }
    }
    out
}

/// `driftback serve` with `envs` at log level `level`, its standard output and standard error
/// both in `root/serve-RUN.log` (what `Daemon::log` reads).
pub fn start_logged(root: &Path, envs: &[(&str, String)], run: usize, level: &str) -> Daemon {
    let log = root.join(format!("serve-{run}.log"));
    let file = std::fs::File::create(&log).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_driftback"))
        .arg("serve")
        .envs(envs.iter().map(|(k, v)| (*k, v.as_str())))
        .env("DRIFTBACK_LOG", level)
        .stdout(Stdio::from(file.try_clone().unwrap()))
        .stderr(Stdio::from(file))
        .spawn()
        .unwrap();
    Daemon { child, log }
}
