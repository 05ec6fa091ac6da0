//! Logs: JSON lines for the daemon when not on a terminal, a human format otherwise.

use std::io::IsTerminal;

/// `DRIFTBACK_LOG` sets the filter (default `warn`, `info` for the daemon); `DRIFTBACK_LOG_FORMAT`
/// is `json`, `human` or unset (JSON for the daemon when stderr is not a terminal). Returns whether
/// the logs are JSON lines.
pub fn init(daemon: bool) -> bool {
    let default = if daemon { "info" } else { "warn" };
    let filter = tracing_subscriber::EnvFilter::try_from_env("DRIFTBACK_LOG").unwrap_or_else(|_| default.into());
    let json = match std::env::var("DRIFTBACK_LOG_FORMAT").as_deref() {
        Ok("json") => true,
        Ok("human") => false,
        _ => daemon && !std::io::stderr().is_terminal(),
    };
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    if json {
        builder.json().flatten_event(true).with_current_span(false).init();
    } else {
        builder.init();
    }
    json
}

/// The error that ends the process, in the log format: one JSON line like every other (written
/// directly, so no filter hides it), or `error: ...` for people.
pub fn fatal(json: bool, error: &anyhow::Error) {
    if json {
        let line = serde_json::json!({
            "timestamp": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
            "level": "ERROR",
            "message": "driftback stopped on an error",
            "error": format!("{error:#}"),
        });
        eprintln!("{line}");
    } else {
        eprintln!("error: {error:#}");
    }
}
