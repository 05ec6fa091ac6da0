//! What Terraform's CLI configuration says about module registries: `host` blocks that override
//! service discovery and `credentials` blocks, from the file `TF_CLI_CONFIG_FILE` names, and
//! tokens from `TF_TOKEN_<host>` variables and `terraform login`'s credentials file.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use hcl_edit::expr::{Expression, ObjectKey};
use hcl_edit::structure::Body;

/// A bearer token. Its `Debug` and `Display` never show it.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl Token {
    pub fn new(token: impl Into<String>) -> Token {
        Token(token.into())
    }
    /// The token itself, for the `Authorization` header only.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CliConfigError {
    #[error("cannot read the Terraform CLI configuration {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("the Terraform CLI configuration {path} does not parse at line {line}: {message}")]
    Parse { path: PathBuf, line: usize, message: String },
    #[error("the Terraform CLI configuration {path}: {what}")]
    Invalid { path: PathBuf, what: String },
}

/// The CLI configuration's registry settings and the tokens the environment gives.
#[derive(Debug, Clone, Default)]
pub struct CliConfig {
    /// Host (lower case) -> service id (`modules.v1`) -> URL: used instead of discovery.
    pub hosts: BTreeMap<String, BTreeMap<String, String>>,
    /// Host (lower case) -> token, from `credentials` blocks and the credentials file.
    credentials: BTreeMap<String, Token>,
    /// Host (lower case) -> token, from `TF_TOKEN_*`: these win over the files.
    env_tokens: BTreeMap<String, Token>,
}

impl CliConfig {
    /// The configuration Terraform would read in this process: the file `TF_CLI_CONFIG_FILE`
    /// names (when set and not empty), `~/.terraform.d/credentials.tfrc.json`, and `TF_TOKEN_*`.
    pub fn from_env() -> Result<CliConfig, CliConfigError> {
        let file = std::env::var_os("TF_CLI_CONFIG_FILE").filter(|v| !v.is_empty()).map(PathBuf::from);
        let home = std::env::var_os("HOME").map(PathBuf::from);
        CliConfig::load(file.as_deref(), home.as_deref(), std::env::vars())
    }

    /// As [`CliConfig::from_env`], from what is given.
    pub fn load(
        file: Option<&Path>,
        home: Option<&Path>,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Result<CliConfig, CliConfigError> {
        let mut config = CliConfig::default();
        if let Some(home) = home {
            let path = home.join(".terraform.d/credentials.tfrc.json");
            if let Ok(text) = std::fs::read_to_string(&path) {
                config.read_credentials_json(&path, &text)?;
            }
        }
        if let Some(path) = file {
            match std::fs::read_to_string(path) {
                Ok(text) => config.read_hcl(path, &text)?,
                // Terraform goes on without a CLI configuration file that is not there.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    tracing::warn!(path = %path.display(), "the Terraform CLI configuration file does not exist; going on without it");
                }
                Err(source) => return Err(CliConfigError::Read { path: path.to_path_buf(), source }),
            }
        }
        for (name, value) in env {
            if let Some(host) = name.strip_prefix("TF_TOKEN_") {
                if !value.is_empty() && !host.is_empty() {
                    // Dots are written as `_`, hyphens as `__` (Terraform's encoding).
                    let host = host.replace("__", "\u{0}").replace('_', ".").replace('\u{0}', "-");
                    config.env_tokens.insert(host.to_ascii_lowercase(), Token::new(value));
                }
            }
        }
        Ok(config)
    }

    /// The token for `host` (lower case, with its port when it has one), if any.
    pub fn token(&self, host: &str) -> Option<&Token> {
        let host = host.to_ascii_lowercase();
        self.env_tokens.get(&host).or_else(|| self.credentials.get(&host))
    }

    /// The URL a `host` block gives for `service` (`modules.v1`).
    pub fn service(&self, host: &str, service: &str) -> Option<&str> {
        self.hosts.get(&host.to_ascii_lowercase()).and_then(|s| s.get(service)).map(String::as_str)
    }

    fn read_credentials_json(&mut self, path: &Path, text: &str) -> Result<(), CliConfigError> {
        let value: serde_json::Value = serde_json::from_str(text).map_err(|e| CliConfigError::Parse {
            path: path.to_path_buf(),
            line: e.line(),
            message: e.to_string(),
        })?;
        for (host, entry) in value.get("credentials").and_then(|c| c.as_object()).into_iter().flatten() {
            if let Some(token) = entry.get("token").and_then(|t| t.as_str()) {
                self.credentials.insert(host.to_ascii_lowercase(), Token::new(token));
            }
        }
        Ok(())
    }

    fn read_hcl(&mut self, path: &Path, text: &str) -> Result<(), CliConfigError> {
        let invalid = |what: String| CliConfigError::Invalid { path: path.to_path_buf(), what };
        let body: Body = hcl_edit::parser::parse_body(text).map_err(|e| CliConfigError::Parse {
            path: path.to_path_buf(),
            line: e.location().line(),
            message: e.message().to_string(),
        })?;
        for block in body.blocks() {
            let label = block.labels.first().map(|l| hcl_edit::structure::BlockLabel::as_str(l).to_ascii_lowercase());
            match block.ident.as_str() {
                "host" => {
                    let host = label.ok_or_else(|| invalid("a host block has no host name label".into()))?;
                    let Some(services) = block.body.get_attribute("services") else { continue };
                    let Expression::Object(object) = &services.value else {
                        return Err(invalid(format!(
                            "host {host:?}: services must be an object of service ids to URLs"
                        )));
                    };
                    let entry = self.hosts.entry(host.clone()).or_default();
                    for (key, value) in object.iter() {
                        let id = match key {
                            ObjectKey::Ident(i) => i.as_str().to_string(),
                            ObjectKey::Expression(Expression::String(s)) => s.as_str().to_string(),
                            ObjectKey::Expression(_) => continue,
                        };
                        match value.expr() {
                            Expression::String(url) => {
                                entry.insert(id, url.as_str().to_string());
                            }
                            _ => {
                                return Err(invalid(format!("host {host:?}: the service {id:?} must be a URL string")));
                            }
                        }
                    }
                }
                "credentials" => {
                    let host = label.ok_or_else(|| invalid("a credentials block has no host name label".into()))?;
                    match block.body.get_attribute("token").map(|a| &a.value) {
                        Some(Expression::String(token)) => {
                            self.credentials.insert(host, Token::new(token.as_str()));
                        }
                        Some(_) => return Err(invalid(format!("credentials {host:?}: token must be a string"))),
                        None => {}
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_blocks_credentials_and_env_tokens() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("terraform.rc");
        std::fs::write(
            &file,
            "plugin_cache_dir = \"/tmp/x\"\nhost \"Registry.Example.Test\" {\n  services = {\n    \"modules.v1\" = \"http://127.0.0.1:9/v1/modules/\"\n  }\n}\ncredentials \"registry.example.test\" {\n  token = \"from-file\"\n}\ncredentials \"app.terraform.io\" {\n  token = \"hcp\"\n}\n",
        )
        .unwrap();
        std::fs::create_dir_all(dir.path().join(".terraform.d")).unwrap();
        std::fs::write(
            dir.path().join(".terraform.d/credentials.tfrc.json"),
            r#"{"credentials": {"tfe.my-corp.example": {"token": "login"}, "app.terraform.io": {"token": "older"}}}"#,
        )
        .unwrap();
        let env = [
            ("TF_TOKEN_registry_example_test".to_string(), "from-env".to_string()),
            ("TF_TOKEN_other__host_example".to_string(), "hyphen".to_string()),
            ("PATH".to_string(), "/bin".to_string()),
        ];
        let config = CliConfig::load(Some(&file), Some(dir.path()), env).unwrap();
        assert_eq!(config.service("registry.example.test", "modules.v1"), Some("http://127.0.0.1:9/v1/modules/"));
        assert_eq!(config.service("registry.example.test", "providers.v1"), None);
        assert_eq!(config.token("registry.example.test").map(Token::expose), Some("from-env"));
        assert_eq!(
            config.token("APP.terraform.io").map(Token::expose),
            Some("hcp"),
            "the CLI file wins over login's file"
        );
        assert_eq!(config.token("tfe.my-corp.example").map(Token::expose), Some("login"));
        assert_eq!(config.token("other-host.example").map(Token::expose), Some("hyphen"));
        assert_eq!(config.token("nobody.example"), None);
        assert!(!format!("{config:?}").contains("from-env"), "tokens never print");
    }

    #[test]
    fn bad_configurations_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("bad.rc");
        std::fs::write(&file, "host \"x.example\" {\n  services = \"nope\"\n}\n").unwrap();
        let err = CliConfig::load(Some(&file), None, []).unwrap_err().to_string();
        assert!(err.contains("bad.rc") && err.contains("services must be an object"), "{err}");
        std::fs::write(&file, "host \"x\" {\n").unwrap();
        let err = CliConfig::load(Some(&file), None, []).unwrap_err().to_string();
        assert!(err.contains("does not parse"), "{err}");
        // A file that is not there is passed over, as Terraform does; one that cannot be read is not.
        let missing = CliConfig::load(Some(&dir.path().join("missing.rc")), None, []).unwrap();
        assert!(missing.hosts.is_empty());
        let err = CliConfig::load(Some(dir.path()), None, []).unwrap_err().to_string();
        assert!(err.contains("cannot read the Terraform CLI configuration"), "{err}");
    }
}
