//! Logs: JSON lines for the daemon when not on a terminal, a human format otherwise.

use std::io::IsTerminal;

/// `DRIFTBACK_LOG` sets the filter (default `warn`, `info` for the daemon); `DRIFTBACK_LOG_FORMAT`
/// is `json`, `human` or unset (JSON for the daemon when stderr is not a terminal).
pub fn init(daemon: bool) {
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
}
