//! A real OpenSSH server on loopback for tests of SSH deploy keys: started from the system's
//! `sshd` with a host key of its own and one authorized client key, as the current user (shared by
//! the publish crate's tests and the daemon's).

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::Duration;

/// The running server; stopped when dropped.
pub struct Sshd {
    child: Child,
    pub port: u16,
    /// The server's key as a known_hosts line (`[127.0.0.1]:PORT TYPE KEY`).
    pub host_key_line: String,
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A new ed25519 key pair without a passphrase at `path` (and `path.pub`).
pub fn keygen(path: &Path) {
    let out = Command::new("ssh-keygen").args(["-q", "-t", "ed25519", "-N", "", "-f"]).arg(path).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

pub fn sshd_path() -> Option<PathBuf> {
    ["/usr/sbin/sshd", "/usr/bin/sshd"].iter().map(PathBuf::from).find(|p| p.exists())
}

/// Whether `sshd` and `ssh-keygen` are installed.
pub fn sshd_available() -> bool {
    sshd_path().is_some() && Command::new("ssh-keygen").arg("-?").output().is_ok()
}

/// Start sshd on a free loopback port, its files in `dir`, letting in the key `client_pub` as the
/// current user; `None` when sshd is not installed.
pub fn start_sshd(dir: &Path, client_pub: &Path) -> Option<Sshd> {
    let sshd = sshd_path()?;
    let host_key = dir.join("host_ed25519");
    keygen(&host_key);
    let authorized = dir.join("authorized_keys");
    std::fs::copy(client_pub, &authorized).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let config = dir.join("sshd_config");
    std::fs::write(
        &config,
        format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {}\nAuthorizedKeysFile {}\nStrictModes no\n\
             PasswordAuthentication no\nKbdInteractiveAuthentication no\nPubkeyAuthentication yes\n\
             PermitRootLogin prohibit-password\nUsePAM no\nPidFile {}\n",
            host_key.display(),
            authorized.display(),
            dir.join("sshd.pid").display()
        ),
    )
    .unwrap();
    std::fs::create_dir_all("/run/sshd").ok();
    let child = Command::new(sshd).arg("-D").arg("-e").arg("-f").arg(&config).spawn().unwrap();
    // Wait until it accepts connections.
    for _ in 0..100 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let public = std::fs::read_to_string(host_key.with_extension("pub")).unwrap();
    let mut fields = public.split_whitespace();
    let host_key_line = format!("[127.0.0.1]:{port} {} {}\n", fields.next().unwrap(), fields.next().unwrap());
    Some(Sshd { child, port, host_key_line })
}

/// The current user's name (the user sshd lets in).
pub fn user() -> String {
    String::from_utf8(Command::new("id").arg("-un").output().unwrap().stdout).unwrap().trim().to_string()
}
