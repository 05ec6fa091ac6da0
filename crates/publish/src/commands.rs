//! The answers people write in driftback's threads: `/driftback explain`, `/driftback revert`,
//! `/driftback accept`, `/driftback own <field> by <actor>`, one per comment line. Parsing is pure; who may answer is checked against
//! the repository's permissions before anything is done ([`crate::issues::may_decide`]).

use serde::{Deserialize, Serialize};

use crate::markdown::code;

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
    /// `actor` owns `field` of the thread's resource: a policy rule and `lifecycle {
    /// ignore_changes }`, proposed as a pull request. Both are checked here (a dotted path; an
    /// actor name, no wildcards; each at most [`MAX_ARG_CHARS`]).
    Own { field: String, actor: String },
}

/// Longest field or actor a command may name.
pub const MAX_ARG_CHARS: usize = 100;

impl Command {
    pub fn as_str(&self) -> &'static str {
        match self {
            Command::Explain => "explain",
            Command::Revert => "revert",
            Command::Accept => "accept",
            Command::Own { .. } => "own",
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
    /// The command, or why the `/driftback` line is none (its text is the reply).
    pub command: Result<Command, NotACommand>,
}

/// A `/driftback` line that is not a command driftback knows: its text is the reply, which lists
/// the commands (or shows how `own` is written).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(rename_all = "snake_case")]
pub enum NotACommand {
    /// An unknown word (at most 30 letters, digits and `-` of it, shown).
    #[error("`/driftback {shown}` is not a command driftback knows. {}", command_help())]
    Unknown { shown: String },
    /// `/driftback own` without a field and an actor.
    #[error("`/driftback own` needs a field and an actor. {OWN_USAGE}")]
    OwnIncomplete,
    /// `/driftback own` whose field or actor is not one (or whose `by` is missing).
    #[error("That `/driftback own` is not understood. {OWN_USAGE}")]
    OwnNotUnderstood,
}

const OWN_USAGE: &str = "Write it as `/driftback own <field> by <actor>`, e.g. `/driftback own desired_capacity by \
                         autoscaling.amazonaws.com`: a dotted attribute path (letters, digits, `_`, `.`) and an actor \
                         name (letters, digits, `_.@+=,:/-`, no wildcards), each at most 100 characters.";

/// What a comment asks: `None` when it has no `/driftback` line; `Some(Err(reply))` when the
/// line is not a command driftback knows (the reply lists the ones it does). The first
/// `/driftback` line counts; text around it is ignored.
pub fn parse(comment: &str) -> Option<Result<Command, NotACommand>> {
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
        "own" => own(rest),
        _ => {
            let shown: String = word.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '-').take(30).collect();
            Err(NotACommand::Unknown { shown })
        }
    })
}

/// `own <field> by <actor>`, nothing more; the reply says what is wrong otherwise.
fn own(rest: &str) -> Result<Command, NotACommand> {
    let words: Vec<&str> = rest.split_whitespace().collect();
    let [_, field, by, actor] = words.as_slice() else {
        return Err(NotACommand::OwnIncomplete);
    };
    let field_ok = field.len() <= MAX_ARG_CHARS
        && field.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        && !field.starts_with('.')
        && !field.ends_with('.')
        && !field.contains("..");
    let actor_ok = actor.len() <= MAX_ARG_CHARS
        && !actor.starts_with("kind:")
        && actor.chars().all(|c| c.is_ascii_alphanumeric() || "_.@+=,:/-".contains(c));
    if !by.eq_ignore_ascii_case("by") || !field_ok || !actor_ok {
        return Err(NotACommand::OwnNotUnderstood);
    }
    Ok(Command::Own { field: field.to_string(), actor: actor.to_string() })
}

/// How the commands are listed in replies.
pub fn command_help() -> String {
    format!(
        "Commands (from people with write access): {} (why it was decided), {} (the code's value stands), \
         {} (write the change into the code), {} (the actor owns the field: a policy rule and \
         `lifecycle {{ ignore_changes }}`).",
        code("/driftback explain"),
        code("/driftback revert"),
        code("/driftback accept"),
        code("/driftback own <field> by <actor>")
    )
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
        let reply = parse("/driftback destroy-everything <script>").unwrap().unwrap_err().to_string();
        assert!(reply.contains("`/driftback destroy-everything`") && !reply.contains("<script>"), "{reply}");
        assert!(reply.contains("/driftback explain"), "{reply}");
        assert_eq!(
            parse("/driftback own desired_capacity by autoscaling.amazonaws.com"),
            Some(Ok(Command::Own { field: "desired_capacity".into(), actor: "autoscaling.amazonaws.com".into() }))
        );
        assert_eq!(
            parse("/driftback OWN tags.Team BY ops-bot"),
            Some(Ok(Command::Own { field: "tags.Team".into(), actor: "ops-bot".into() }))
        );
        for bad in [
            "/driftback own desired_capacity",
            "/driftback own desired_capacity by",
            "/driftback own desired_capacity for ops-bot",
            "/driftback own tags.* by ops-bot",
            "/driftback own ami by *",
            "/driftback own ami by kind:agent",
            "/driftback own ami by ops-bot and more",
            "/driftback own ../../etc by ops-bot",
        ] {
            let reply = parse(bad).unwrap().unwrap_err().to_string();
            assert!(reply.contains("/driftback own <field> by <actor>"), "{bad}: {reply}");
        }
        let long = format!("/driftback own {} by ops-bot", "a".repeat(101));
        assert!(parse(&long).unwrap().is_err());
        let reply = parse("/driftback").unwrap().unwrap_err().to_string();
        assert!(reply.contains("not a command"), "{reply}");
    }
}
