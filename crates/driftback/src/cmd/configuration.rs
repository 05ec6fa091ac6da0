//! `driftback config`: the effective configuration (file, then DRIFTBACK_* variables, then the
//! defaults) as TOML, with passwords in URLs hidden. Loading it is the check: an unknown key or a
//! bad value fails with the key's name before anything runs.

use crate::config::Config;

pub fn run(config: &Config) -> anyhow::Result<()> {
    let mut config = config.clone();
    if let Some(url) = &config.store.url {
        config.store.url = Some(without_password(url));
    }
    print!("{}", toml::to_string_pretty(&config)?);
    Ok(())
}

/// `scheme://user:secret@host/...` as `scheme://user:***@host/...`; anything else unchanged.
fn without_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_string() };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let Some(at) = rest[..authority_end].rfind('@') else { return url.to_string() };
    let userinfo = &rest[..at];
    match userinfo.split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}:***{}", &rest[at..]),
        None => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_in_urls_are_hidden() {
        assert_eq!(without_password("postgres://kb:s3cr3t@db:5432/kb"), "postgres://kb:***@db:5432/kb");
        assert_eq!(without_password("postgres://kb@db/kb"), "postgres://kb@db/kb");
        assert_eq!(without_password("sqlite:/var/lib/kb.sqlite"), "sqlite:/var/lib/kb.sqlite");
        assert_eq!(without_password("postgres://db/kb?x=a@b"), "postgres://db/kb?x=a@b");
    }
}
