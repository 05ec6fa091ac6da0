//! Checking an SSH remote's host key against an OpenSSH known_hosts file, as `ssh` does with
//! `StrictHostKeyChecking yes`: a host with no line is refused, a host whose key differs from every
//! line for it is refused, `@revoked` keys are refused. Host names hashed by `ssh-keyscan -H` are
//! not read (their lines are skipped): write the lines with `ssh-keyscan HOST`.

use std::path::Path;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

/// Why a host key is not accepted.
#[derive(Debug, thiserror::Error)]
pub enum HostKeyError {
    #[error(
        "known_hosts file {path} cannot be read ({reason}); set [publish.ssh] known_hosts_file to the output of `ssh-keyscan HOST`"
    )]
    Unreadable { path: String, reason: String },
    #[error(
        "{host} is not in the known_hosts file {path}; add its key (`ssh-keyscan {host}`, checked against the host's published fingerprints)"
    )]
    Unknown { host: String, path: String },
    #[error(
        "{host}'s host key ({kind}) matches none of its lines in {path}: the host changed its key or the connection is intercepted; refusing to connect"
    )]
    Mismatch { host: String, kind: String, path: String },
    #[error("{host}'s host key is marked @revoked in {path}; refusing to connect")]
    Revoked { host: String, path: String },
}

/// Check the raw host key `blob` (the SSH wire encoding, as in a known_hosts line's base64)
/// `host`:`port` presented against the known_hosts file at `path`.
pub fn check(path: &Path, host: &str, port: u16, blob: &[u8]) -> Result<(), HostKeyError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| HostKeyError::Unreadable { path: path.display().to_string(), reason: e.to_string() })?;
    check_text(&text, &path.display().to_string(), host, port, blob)
}

/// As [`check`], on the file's text (`path` names it in errors).
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
                return Err(HostKeyError::Revoked { host: name, path: path.to_string() });
            }
            continue;
        }
        known = true;
        if key == blob {
            return Ok(());
        }
    }
    if known {
        Err(HostKeyError::Mismatch { host: name, kind: key_kind(blob), path: path.to_string() })
    } else {
        Err(HostKeyError::Unknown { host: name, path: path.to_string() })
    }
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

fn glob(pattern: &str, text: &str) -> bool {
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
    fn the_key_on_the_hosts_line_is_accepted_and_any_other_refused() {
        let text = format!("# comment\n{}{}", line("github.com,140.82.121.4", 1), line("other.example", 2));
        assert!(check_text(&text, "kh", "github.com", 22, &blob(1)).is_ok());
        assert!(check_text(&text, "kh", "GitHub.com", 22, &blob(1)).is_ok());
        let err = check_text(&text, "kh", "github.com", 22, &blob(2)).unwrap_err();
        assert!(matches!(err, HostKeyError::Mismatch { .. }), "{err}");
        assert!(err.to_string().contains("ssh-ed25519"), "{err}");
        let err = check_text(&text, "kh", "gitlab.com", 22, &blob(1)).unwrap_err();
        assert!(matches!(err, HostKeyError::Unknown { .. }) && err.to_string().contains("ssh-keyscan gitlab.com"));
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
    fn ports_are_read_from_ssh_urls() {
        assert_eq!(port_of("ssh://git@git.internal:2222/acme/infra.git"), 2222);
        assert_eq!(port_of("ssh://git@github.com/acme/infra.git"), 22);
        assert_eq!(port_of("git@github.com:acme/infra.git"), 22);
        assert_eq!(port_of("ssh://[::1]:2200/x.git"), 2200);
    }

    #[test]
    fn an_unreadable_file_says_what_to_set() {
        let err = check(Path::new("/nonexistent/known_hosts"), "h", 22, &blob(1)).unwrap_err().to_string();
        assert!(err.contains("/nonexistent/known_hosts") && err.contains("known_hosts_file"), "{err}");
    }
}
