//! Telling people that decisions wait for them: escalations and reverts posted to a chat webhook in
//! the Slack-compatible incoming-webhook format (`{"text": ...}`), or to any endpoint as JSON.
//! Notices arriving within a grouping window become one message, so a burst of drift is one post;
//! a post that fails is retried with backoff, and one that keeps failing is logged and counted,
//! never blocking reconciliation. Notices carry displayed values only (the story hides secrets).

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::RetryPolicy;

/// How many notices one message lists; the rest are counted.
const MAX_LISTED: usize = 20;

/// The payload format of the endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NotifyFormat {
    /// Slack's incoming webhooks (and the chat tools that accept their format): `{"text": ...}`.
    #[default]
    Slack,
    /// `{"source": "driftback", "notices": [...]}`.
    Json,
}

/// One decision that waits for a person.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Notice {
    pub address: String,
    /// `escalate` or `revert`.
    pub decision: String,
    pub rule: String,
    /// Who made the change, as displayed.
    pub actor: String,
    /// What changed, in a few words.
    pub summary: String,
    pub change_set_id: String,
    /// Where people answer (the escalation issue), when it was published.
    pub link: Option<String>,
}

/// Posts grouped notices in the background. Dropping it (or [`Notifier::close`]) sends what is
/// waiting.
#[derive(Debug)]
pub struct Notifier {
    tx: Option<mpsc::UnboundedSender<Notice>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Notifier {
    /// Start posting to `url` in `format`, grouping notices that arrive within `group` of the first.
    pub fn start(url: String, format: NotifyFormat, group: Duration, retry: RetryPolicy) -> Notifier {
        let (tx, rx) = mpsc::unbounded_channel();
        let client = reqwest::Client::builder()
            .user_agent(concat!("driftback/", env!("CARGO_PKG_VERSION")))
            .timeout(Duration::from_secs(15))
            .build()
            .expect("a client with a timeout builds");
        let task = tokio::spawn(run(rx, client, url, format, group, retry));
        Notifier { tx: Some(tx), task: Some(task) }
    }

    /// Queue a notice; it is posted with the others of its window.
    pub fn notify(&self, notice: Notice) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(notice);
        }
    }

    /// Post what is waiting now and stop (for one-shot commands, before they exit).
    pub async fn close(mut self) {
        self.tx.take();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

async fn run(
    mut rx: mpsc::UnboundedReceiver<Notice>,
    client: reqwest::Client,
    url: String,
    format: NotifyFormat,
    group: Duration,
    retry: RetryPolicy,
) {
    while let Some(first) = rx.recv().await {
        let mut notices = vec![first];
        let window = tokio::time::sleep(group);
        tokio::pin!(window);
        loop {
            tokio::select! {
                _ = &mut window => break,
                next = rx.recv() => match next {
                    Some(n) => notices.push(n),
                    // Closed: post what was gathered now.
                    None => break,
                },
            }
        }
        let payload = payload(format, &notices);
        if let Err(e) = post(&client, &url, &payload, retry).await {
            tracing::error!(error = %e, notices = notices.len(), "the notification was not delivered");
            metrics::counter!("driftback_notifications_lost_total").increment(notices.len() as u64);
        }
    }
}

/// Why a notice was not delivered.
#[derive(Debug, thiserror::Error)]
enum PostError {
    /// A refusal the endpoint will repeat (a bad URL, a revoked hook): not retried.
    #[error("the webhook refused the message: HTTP {0}")]
    Refused(reqwest::StatusCode),
    /// Every attempt failed; the last failure.
    #[error("{last}, after {attempts} attempts")]
    GaveUp { last: String, attempts: u32 },
}

async fn post(client: &reqwest::Client, url: &str, payload: &Value, retry: RetryPolicy) -> Result<(), PostError> {
    let mut failures = 0;
    loop {
        let message = match client.post(url).json(payload).send().await {
            Ok(r) if r.status().is_success() => return Ok(()),
            Ok(r) if r.status().is_client_error() && r.status().as_u16() != 429 => {
                return Err(PostError::Refused(r.status()));
            }
            Ok(r) => format!("HTTP {}", r.status()),
            Err(e) => e.without_url().to_string(),
        };
        failures += 1;
        if failures >= retry.attempts.max(1) {
            return Err(PostError::GaveUp { last: message, attempts: failures });
        }
        tokio::time::sleep(retry.delay(failures)).await;
    }
}

/// Slack's mrkdwn treats these three as control characters in text.
fn slack_escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// The message for `notices` in `format`.
pub fn payload(format: NotifyFormat, notices: &[Notice]) -> Value {
    match format {
        NotifyFormat::Json => json!({
            "source": "driftback",
            "kind": "decisions-waiting",
            "count": notices.len(),
            "notices": notices,
        }),
        NotifyFormat::Slack => {
            let head = match notices.len() {
                1 => "driftback: 1 change made outside Terraform waits for a person".to_string(),
                n => format!("driftback: {n} changes made outside Terraform wait for a person"),
            };
            let mut lines = vec![head];
            for n in notices.iter().take(MAX_LISTED) {
                let what = format!(
                    "• *{}* `{}`: {} by {} (rule `{}`)",
                    slack_escape(&n.decision),
                    slack_escape(&n.address).replace('`', "'"),
                    slack_escape(&n.summary),
                    slack_escape(&n.actor),
                    slack_escape(&n.rule).replace('`', "'"),
                );
                lines.push(match &n.link {
                    Some(link) if link.starts_with("https://") || link.starts_with("http://") => {
                        format!("{what} <{}|answer>", link.replace(['|', '>', '<'], ""))
                    }
                    _ => what,
                });
            }
            if notices.len() > MAX_LISTED {
                lines.push(format!("…and {} more (`driftback pending` lists them all)", notices.len() - MAX_LISTED));
            }
            json!({ "text": lines.join("\n") })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn notice(i: usize) -> Notice {
        Notice {
            address: format!("aws_db_instance.db_{i}"),
            decision: "escalate".into(),
            rule: "security-weakening".into(),
            actor: "alice <@channel>".into(),
            summary: "publicly_accessible false -> true".into(),
            change_set_id: format!("cs-{i}"),
            link: Some(format!("https://github.example/acme/infra/issues/{i}")),
        }
    }

    #[test]
    fn slack_text_escapes_what_people_wrote_and_counts_past_the_list() {
        let text = payload(NotifyFormat::Slack, &[notice(1)])["text"].as_str().unwrap().to_string();
        assert!(text.starts_with("driftback: 1 change made outside Terraform waits"), "{text}");
        assert!(text.contains("alice &lt;@channel&gt;") && !text.contains("<@channel>"), "{text}");
        assert!(text.contains("<https://github.example/acme/infra/issues/1|answer>"), "{text}");
        let many: Vec<Notice> = (0..25).map(notice).collect();
        let text = payload(NotifyFormat::Slack, &many)["text"].as_str().unwrap().to_string();
        assert!(text.contains("25 changes") && text.contains("…and 5 more"), "{text}");
        assert_eq!(text.lines().count(), 1 + MAX_LISTED + 1);
    }

    #[test]
    fn json_lists_every_notice() {
        let body = payload(NotifyFormat::Json, &[notice(1), notice(2)]);
        assert_eq!(body["count"], 2);
        assert_eq!(body["notices"][1]["address"], "aws_db_instance.db_2");
    }
}
