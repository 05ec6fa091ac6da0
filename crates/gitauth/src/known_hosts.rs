//! Checking an SSH remote's host key against OpenSSH known_hosts files, as `ssh` does with
//! `StrictHostKeyChecking yes`: a host with no line is refused, a host whose key differs from every
//! line for it is refused, `@revoked` keys are refused. Host names hashed by `ssh-keyscan -H` are
//! not read (their lines are skipped): write the lines with `ssh-keyscan HOST`.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD};
use sha2::{Digest, Sha256};

/// Why a host key is not accepted. Every refusal names the host, the key's type and fingerprint
/// (as `ssh-keygen -l` prints it) and the file to put the host's line in.
#[derive(Debug, thiserror::Error)]
pub enum HostKeyError {
    #[error(
        "known_hosts file {path} cannot be read ({reason}); set {setting} to a file holding the host's lines (`ssh-keyscan HOST`)"
    )]
    Unreadable { path: String, reason: String, setting: String },
    #[error(
        "{host} is not in the known_hosts file {path}: it offered the {kind} key {fingerprint}. If that is a fingerprint the host publishes, add its line to {path} (`{scan}`); refusing to connect"
    )]
    Unknown { host: String, kind: String, fingerprint: String, path: String, scan: String },
    #[error(
        "{host}'s host key ({kind} {fingerprint}) matches none of its lines in {path}: the host changed its key or the connection is intercepted; refusing to connect. If the host announced a new key with this fingerprint, replace its line in {path} (`{scan}`)"
    )]
    Mismatch { host: String, kind: String, fingerprint: String, path: String, scan: String },
    #[error("{host}'s host key ({kind} {fingerprint}) is marked @revoked in {path}; refusing to connect")]
    Revoked { host: String, kind: String, fingerprint: String, path: String },
    #[error("{host} sent no raw host key to check against the known_hosts files; refusing to connect")]
    NoKey { host: String },
}

/// The known_hosts files a connection's host key is checked against, and the setting that names
/// them (for errors).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnownHosts {
    /// The files, read in order; lines of all of them count.
    pub files: Vec<PathBuf>,
    /// Whether a file that cannot be read is an error (a configured file) or passed over (the
    /// defaults, `~/.ssh/known_hosts` and `/etc/ssh/ssh_known_hosts`, as `ssh` passes them over).
    pub required: bool,
    /// The setting naming the files, as the operator writes it (`[publish.ssh] known_hosts_file`).
    pub setting: String,
}

impl KnownHosts {
    /// One configured file, which must be readable.
    pub fn file(path: impl Into<PathBuf>, setting: impl Into<String>) -> KnownHosts {
        KnownHosts { files: vec![path.into()], required: true, setting: setting.into() }
    }

    /// Check the raw host key `blob` (the SSH wire encoding, as in a known_hosts line's base64)
    /// that `host`:`port` presented.
    pub fn check(&self, host: &str, port: u16, blob: &[u8]) -> Result<(), HostKeyError> {
        let mut text = String::new();
        let mut readable = Vec::new();
        for path in &self.files {
            match std::fs::read_to_string(path) {
                Ok(t) => {
                    text.push_str(&t);
                    text.push('\n');
                    readable.push(path);
                }
                Err(e) if self.required => {
                    return Err(HostKeyError::Unreadable {
                        path: path.display().to_string(),
                        reason: e.to_string(),
                        setting: self.setting.clone(),
                    });
                }
                Err(_) => {}
            }
        }
        // Where a missing line goes: the first file that exists, else the first named.
        let shown = readable.first().copied().or(self.files.first()).map(|p| p.display().to_string());
        check_text(&text, shown.as_deref().unwrap_or("~/.ssh/known_hosts"), host, port, blob)
    }
}

/// Check `blob` presented by `host`:`port` against the known_hosts file at `path`.
pub fn check(path: &Path, setting: &str, host: &str, port: u16, blob: &[u8]) -> Result<(), HostKeyError> {
    KnownHosts::file(path, setting).check(host, port, blob)
}

/// As [`check`], on a file's text (`path` names it in errors).
pub fn check_text(text: &str, path: &str, host: &str, port: u16, blob: &[u8]) -> Result<(), HostKeyError> {
    let name = if port == 22 { host.to_ascii_lowercase() } else { format!("[{}]:{port}", host.to_ascii_lowercase()) };
    let mut known = false;
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
        let mut fields = line.split_whitespace();
        let Some(mut first) = fields.next() else { continue };
        let mut revoked = false;
        if first.starts_with('@') {
            match first {
                "@revoked" => revoked = true,
                // Certificate authorities are not supported: such lines do not vouch for a key.
                _ => continue,
            }
            let Some(next) = fields.next() else { continue };
            first = next;
        }
        let (Some(_kind), Some(key)) = (fields.next(), fields.next()) else { continue };
        if !matches_host(first, &name) {
            continue;
        }
        let Ok(key) = STANDARD.decode(key) else { continue };
        if revoked {
            if key == blob {
                return Err(HostKeyError::Revoked {
                    host: name,
                    kind: key_kind(blob),
                    fingerprint: fingerprint(blob),
                    path: path.to_string(),
                });
            }
            continue;
        }
        known = true;
        if key == blob {
            return Ok(());
        }
    }
    let scan = if port == 22 { format!("ssh-keyscan {host}") } else { format!("ssh-keyscan -p {port} {host}") };
    let (kind, fingerprint, path) = (key_kind(blob), fingerprint(blob), path.to_string());
    if known {
        Err(HostKeyError::Mismatch { host: name, kind, fingerprint, path, scan })
    } else {
        Err(HostKeyError::Unknown { host: name, kind, fingerprint, path, scan })
    }
}

/// A key's fingerprint as OpenSSH prints it: `SHA256:` and the unpadded base64 of the SHA-256 of
/// its wire encoding.
pub fn fingerprint(blob: &[u8]) -> String {
    format!("SHA256:{}", STANDARD_NO_PAD.encode(Sha256::digest(blob)))
}

/// Whether a known_hosts host field (comma-separated patterns, `*` and `?` wildcards, `!` negation)
/// names `name`. Hashed names (`|1|...`) never match.
fn matches_host(field: &str, name: &str) -> bool {
    let mut matched = false;
    for pattern in field.split(',') {
        let pattern = pattern.to_ascii_lowercase();
        if let Some(negated) = pattern.strip_prefix('!') {
            if glob(negated, name) {
                return false;
            }
        } else if !pattern.starts_with('|') && glob(&pattern, name) {
            matched = true;
        }
    }
    matched
}

/// Whether `pattern` (`*` any run, `?` one character) matches all of `text`.
pub fn glob(pattern: &str, text: &str) -> bool {
    fn go(p: &[u8], t: &[u8]) -> bool {
        match (p.first(), t.first()) {
            (None, None) => true,
            (Some(b'*'), _) => go(&p[1..], t) || (!t.is_empty() && go(p, &t[1..])),
            (Some(b'?'), Some(_)) => go(&p[1..], &t[1..]),
            (Some(a), Some(b)) if a == b => go(&p[1..], &t[1..]),
            _ => false,
        }
    }
    go(pattern.as_bytes(), text.as_bytes())
}

/// The key type a wire-encoded key names (its first string), for messages.
fn key_kind(blob: &[u8]) -> String {
    let len = blob.get(..4).map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize).unwrap_or(0);
    blob.get(4..4 + len).and_then(|k| std::str::from_utf8(k).ok()).unwrap_or("unknown type").to_string()
}

/// The port of an SSH URL (`ssh://user@host:2222/path`), 22 for the scp-like form and by default.
pub fn port_of(url: &str) -> u16 {
    let Some(rest) = url.strip_prefix("ssh://").or_else(|| url.strip_prefix("SSH://")) else { return 22 };
    let authority = rest.split('/').next().unwrap_or("");
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let port = if host.starts_with('[') {
        host.rsplit_once("]:").map(|(_, p)| p)
    } else {
        host.rsplit_once(':').map(|(_, p)| p)
    };
    port.and_then(|p| p.parse().ok()).unwrap_or(22)
}

/// The host of an SSH URL, `ssh://user@HOST:port/path` or scp-like `user@HOST:path`, lower case
/// and without brackets; `None` for anything else.
pub fn host_of(url: &str) -> Option<String> {
    let lower = url.to_ascii_lowercase();
    let authority = match lower.strip_prefix("ssh://") {
        Some(rest) => rest.split('/').next().unwrap_or(""),
        None if !lower.contains("://") => lower.split_once(':').map(|(a, _)| a).filter(|a| !a.contains('/'))?,
        None => return None,
    };
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = match host.strip_prefix('[') {
        Some(inner) => inner.split(']').next().unwrap_or(""),
        None if lower.starts_with("ssh://") => host.split(':').next().unwrap_or(""),
        None => host,
    };
    (!host.is_empty()).then(|| host.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A wire-encoded key: string "ssh-ed25519", string of 32 key bytes.
    fn blob(fill: u8) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&11u32.to_be_bytes());
        b.extend_from_slice(b"ssh-ed25519");
        b.extend_from_slice(&32u32.to_be_bytes());
        b.extend_from_slice(&[fill; 32]);
        b
    }

    fn line(hosts: &str, fill: u8) -> String {
        format!("{hosts} ssh-ed25519 {}\n", STANDARD.encode(blob(fill)))
    }

    #[test]
    fn the_key_on_the_hosts_line_is_accepted_and_any_other_refused_naming_its_fingerprint() {
        let text = format!("# comment\n{}{}", line("github.com,140.82.121.4", 1), line("other.example", 2));
        assert!(check_text(&text, "kh", "github.com", 22, &blob(1)).is_ok());
        assert!(check_text(&text, "kh", "GitHub.com", 22, &blob(1)).is_ok());
        let err = check_text(&text, "kh", "github.com", 22, &blob(2)).unwrap_err();
        assert!(matches!(err, HostKeyError::Mismatch { .. }), "{err}");
        let text_of = err.to_string();
        assert!(text_of.contains("ssh-ed25519") && text_of.contains(&fingerprint(&blob(2))), "{err}");
        let err = check_text(&text, "kh", "gitlab.com", 22, &blob(1)).unwrap_err().to_string();
        assert!(err.contains("ssh-keyscan gitlab.com") && err.contains("add its line to kh"), "{err}");
        assert!(err.contains(&fingerprint(&blob(1))), "{err}");
        let err = check_text(&text, "kh", "git.internal", 2222, &blob(1)).unwrap_err().to_string();
        assert!(err.starts_with("[git.internal]:2222 ") && err.contains("ssh-keyscan -p 2222 git.internal"), "{err}");
    }

    #[test]
    fn fingerprints_are_openssh_s() {
        // The fingerprint `ssh-keygen -l` prints for this public key.
        let key = "AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl";
        assert_eq!(fingerprint(&STANDARD.decode(key).unwrap()), "SHA256:+DiY3wvvV6TuJJhbpZisF/zLDA0zPMSvHdkr4UvCOqU");
    }

    #[test]
    fn ports_wildcards_negation_revocation_and_hashed_names() {
        let text = format!(
            "{}{}{}@revoked * ssh-ed25519 {}\n",
            line("[git.internal]:2222", 3),
            line("*.corp.example,!bad.corp.example", 4),
            line("|1|c2FsdA==|aGFzaA== ", 5),
            STANDARD.encode(blob(6))
        );
        assert!(check_text(&text, "kh", "git.internal", 2222, &blob(3)).is_ok());
        assert!(matches!(check_text(&text, "kh", "git.internal", 22, &blob(3)), Err(HostKeyError::Unknown { .. })));
        assert!(check_text(&text, "kh", "git.corp.example", 22, &blob(4)).is_ok());
        assert!(matches!(check_text(&text, "kh", "bad.corp.example", 22, &blob(4)), Err(HostKeyError::Unknown { .. })));
        assert!(matches!(check_text(&text, "kh", "git.corp.example", 22, &blob(6)), Err(HostKeyError::Revoked { .. })));
    }

    #[test]
    fn ports_and_hosts_are_read_from_ssh_urls() {
        assert_eq!(port_of("ssh://git@git.internal:2222/acme/infra.git"), 2222);
        assert_eq!(port_of("ssh://git@github.com/acme/infra.git"), 22);
        assert_eq!(port_of("git@github.com:acme/infra.git"), 22);
        assert_eq!(port_of("ssh://[::1]:2200/x.git"), 2200);
        assert_eq!(host_of("ssh://git@Git.Internal:2222/acme/infra.git").as_deref(), Some("git.internal"));
        assert_eq!(host_of("git@github.com:acme/infra.git").as_deref(), Some("github.com"));
        assert_eq!(host_of("github.com:acme/infra.git").as_deref(), Some("github.com"));
        assert_eq!(host_of("ssh://[::1]:2200/x.git").as_deref(), Some("::1"));
        assert_eq!(host_of("https://github.com/acme/infra.git"), None);
        assert_eq!(host_of("/srv/git/infra.git"), None);
    }

    #[test]
    fn a_configured_file_must_be_readable_and_default_files_may_be_missing() {
        let err = check(Path::new("/nonexistent/known_hosts"), "[publish.ssh] known_hosts_file", "h", 22, &blob(1))
            .unwrap_err()
            .to_string();
        assert!(err.contains("/nonexistent/known_hosts") && err.contains("[publish.ssh] known_hosts_file"), "{err}");
        let dir = std::env::temp_dir().join(format!("gitauth-kh-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let present = dir.join("known_hosts");
        std::fs::write(&present, line("h", 7)).unwrap();
        let defaults = KnownHosts {
            files: vec![dir.join("missing"), present.clone()],
            required: false,
            setting: "[[modules.ssh]] known_hosts_file".into(),
        };
        assert!(defaults.check("h", 22, &blob(7)).is_ok());
        let err = defaults.check("other", 22, &blob(7)).unwrap_err().to_string();
        assert!(err.contains(&format!("add its line to {}", present.display())), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
