//! The answers people write in driftback's threads: `/driftback explain`, `/driftback revert`,
//! `/driftback accept`, one per comment line. Parsing is pure; who may answer is checked against
//! the repository's permissions before anything is done ([`crate::issues::may_decide`]).

use serde::{Deserialize, Serialize};

/// One answer from a comment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Command {
    /// Say why the decision was taken (what the record holds).
    Explain,
    /// The code's value stands: the next apply restores it. Recorded as the person's decision.
    Revert,
    /// The change stands: it should be written into the code. Recorded as the person's decision.
    Accept,
}

impl Command {
    pub fn as_str(&self) -> &'static str {
        match self {
            Command::Explain => "explain",
            Command::Revert => "revert",
            Command::Accept => "accept",
        }
    }
}

/// A comment with a command in it, as the webhook received it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommentCommand {
    /// The issue or pull request number.
    pub number: u64,
    /// Whether the thread is a pull request.
    pub on_pull_request: bool,
    /// The thread's body (where driftback's resource or escalation marker is).
    pub thread_body: String,
    /// The commenter's login.
    pub user: String,
    /// The command, or the reply for a `/driftback` line that is none.
    pub command: Result<Command, String>,
}

/// What a comment asks: `None` when it has no `/driftback` line; `Some(Err(reply))` when the
/// line is not a command driftback knows (the reply lists the ones it does). The first
/// `/driftback` line counts; text around it is ignored.
pub fn parse(comment: &str) -> Option<Result<Command, String>> {
    let line = comment.lines().map(str::trim).find(|l| l.starts_with("/driftback"))?;
    let rest = line["/driftback".len()..].trim();
    // `/driftbacker` is not ours.
    if !line["/driftback".len()..].is_empty() && !line["/driftback".len()..].starts_with(char::is_whitespace) {
        return None;
    }
    let word = rest.split_whitespace().next().unwrap_or_default().to_ascii_lowercase();
    Some(match word.as_str() {
        "explain" | "why" => Ok(Command::Explain),
        "revert" => Ok(Command::Revert),
        "accept" => Ok(Command::Accept),
        _ => {
            let shown: String = word.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '-').take(30).collect();
            Err(format!("`/driftback {shown}` is not a command driftback knows. {}", crate::issues::command_help()))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_read_from_their_line() {
        assert_eq!(parse("/driftback accept"), Some(Ok(Command::Accept)));
        assert_eq!(parse("Looks right to me.\n\n  /driftback Revert please\n"), Some(Ok(Command::Revert)));
        assert_eq!(parse("/driftback why"), Some(Ok(Command::Explain)));
        assert_eq!(parse("no command here"), None);
        assert_eq!(parse("/driftbacker accept"), None);
        assert_eq!(parse("see `/driftback` docs"), None);
        let reply = parse("/driftback destroy-everything <script>").unwrap().unwrap_err();
        assert!(reply.contains("`/driftback destroy-everything`") && !reply.contains("<script>"), "{reply}");
        assert!(reply.contains("/driftback explain"), "{reply}");
        let reply = parse("/driftback").unwrap().unwrap_err();
        assert!(reply.contains("not a command"), "{reply}");
    }
}
