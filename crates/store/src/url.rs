//! Store URLs: which backend a URL names, and how to show one without its password.

use std::path::PathBuf;

use crate::StoreError;

/// The database a store URL names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    /// `sqlite:PATH` (also `sqlite://PATH`): a file.
    Sqlite(PathBuf),
    /// `postgres://...` or `postgresql://...`, as given.
    Postgres(String),
}

pub(crate) fn parse(url: &str) -> Result<Target, StoreError> {
    let bad = |reason: &str| StoreError::Url { url: redact_url(url), reason: reason.to_owned() };
    let url = url.trim();
    if let Some(rest) = url.strip_prefix("sqlite:") {
        let path = rest.strip_prefix("//").unwrap_or(rest);
        // Query parameters (sqlx's `?mode=rwc`) are not ours to honour; refuse rather than ignore.
        if path.contains('?') {
            return Err(bad("SQLite URLs take a path only, without ?options"));
        }
        if path.is_empty() {
            return Err(bad("the SQLite file path is empty"));
        }
        return Ok(Target::Sqlite(PathBuf::from(path)));
    }
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        return Ok(Target::Postgres(url.to_owned()));
    }
    if url.is_empty() {
        return Err(bad("it is empty"));
    }
    Err(bad("unknown scheme"))
}

/// `url` with passwords (between `user:` and `@`, and `password=` parameters) replaced by `***`,
/// for messages and logs.
pub fn redact_url(url: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (url, None),
    };
    let mut out = redact_userinfo(base);
    if let Some(query) = query {
        let params: Vec<String> = query
            .split('&')
            .map(|p| match p.split_once('=') {
                Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=***"),
                _ => p.to_owned(),
            })
            .collect();
        out.push('?');
        out.push_str(&params.join("&"));
    }
    out
}

fn redact_userinfo(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else { return url.to_owned() };
    let rest = &url[scheme_end + 3..];
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let Some(at) = rest[..authority_end].rfind('@') else { return url.to_owned() };
    let Some(colon) = rest[..at].find(':') else { return url.to_owned() };
    format!("{}://{}:***{}", &url[..scheme_end], &rest[..colon], &rest[at..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backends_from_urls() {
        assert_eq!(parse("sqlite:kb.sqlite").unwrap(), Target::Sqlite("kb.sqlite".into()));
        assert_eq!(parse("sqlite:///var/lib/kb.sqlite").unwrap(), Target::Sqlite("/var/lib/kb.sqlite".into()));
        assert_eq!(parse("postgres://u@h/db").unwrap(), Target::Postgres("postgres://u@h/db".into()));
        assert_eq!(parse("postgresql://u@h/db").unwrap(), Target::Postgres("postgresql://u@h/db".into()));
        for bad in ["", "sqlite:", "mysql://u:secret@h/db", "kb.sqlite", "sqlite:kb?mode=ro"] {
            let err = parse(bad).unwrap_err().to_string();
            assert!(err.contains("sqlite:PATH") && !err.contains("secret"), "{bad}: {err}");
        }
    }

    #[test]
    fn passwords_are_redacted() {
        assert_eq!(redact_url("postgres://app:s3cr%40t@db:5432/kb"), "postgres://app:***@db:5432/kb");
        assert_eq!(redact_url("postgres://app@db/kb"), "postgres://app@db/kb");
        assert_eq!(
            redact_url("postgres://db/kb?sslmode=require&password=x"),
            "postgres://db/kb?sslmode=require&password=***"
        );
        assert_eq!(redact_url("sqlite:kb.sqlite"), "sqlite:kb.sqlite");
    }
}
