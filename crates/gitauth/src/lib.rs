//! SSH for git remotes, shared by the crates that talk to git hosts (publish: the working clone
//! and pushes; modules: git module sources), so both check host keys and offer keys the same way.
//!
//! - [`known_hosts`]: a remote's host key checked against OpenSSH known_hosts files, as `ssh`
//!   does with `StrictHostKeyChecking yes`; refusals name the host, the key's fingerprint and the
//!   file to add it to.
//! - [`ssh`]: the identities a connection offers (a configured key, or what `ssh` would use: the
//!   agent, then `~/.ssh/id_ed25519` and `~/.ssh/id_rsa`), and installing them and the host key
//!   check on git2's callbacks.
//! - [`Secret`]: a credential that is never printed.
//!
//! Key files and passphrases never appear in errors, logs or `Debug` output.

pub mod known_hosts;
mod secret;
pub mod ssh;

pub use known_hosts::{HostKeyError, KnownHosts};
pub use secret::Secret;
pub use ssh::{DefaultIdentities, Refusal, SshAuth, SshCredentials, SshKey};
