//! What the agent loop may spend and where it talks to.

use std::time::Duration;

/// The LLM endpoint and the agent's limits. Built by the binary from its `[agent]` section.
#[derive(Clone)]
pub struct Settings {
    /// An OpenAI-compatible API base, e.g. `https://api.openai.com/v1`.
    pub base_url: String,
    pub model: String,
    /// Never printed: `Debug` shows only whether it is set.
    pub api_key: String,
    pub temperature: f32,
    /// Model turns (each may call several tools) before the change set is escalated.
    pub max_rounds: u32,
    /// Prompt plus completion tokens one change set may spend.
    pub max_tokens: u64,
    /// Upper bound on one completion's tokens.
    pub max_completion_tokens: u32,
    /// For one HTTP request to the endpoint.
    pub timeout: Duration,
    /// Further attempts after a failed request (transport error, timeout, HTTP 429 or 5xx).
    pub retries: u32,
    /// Wait before the first retry; doubled for each next one.
    pub backoff: Duration,
    /// Past reconciliations put in the first prompt.
    pub similar: usize,
    /// Tool results longer than this are cut, with a note saying so.
    pub max_tool_result_chars: usize,
    /// Malformed answers in a row (bad JSON, unknown tool, invalid arguments, no tool call, too
    /// many calls in one turn) that end the session: the `max_malformed`-th escalates.
    pub max_malformed: u32,
    /// Tool calls carried out per model turn; the rest are answered with an error.
    pub max_tool_calls_per_turn: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            base_url: "https://api.openai.com/v1".into(),
            model: "gpt-4.1-mini".into(),
            api_key: String::new(),
            temperature: 0.0,
            max_rounds: 12,
            max_tokens: 60_000,
            max_completion_tokens: 2_000,
            timeout: Duration::from_secs(60),
            retries: 2,
            backoff: Duration::from_millis(500),
            similar: 3,
            max_tool_result_chars: 4_000,
            max_malformed: 3,
            max_tool_calls_per_turn: 8,
        }
    }
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Settings")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &if self.api_key.is_empty() { "(not set)" } else { "(set)" })
            .field("temperature", &self.temperature)
            .field("max_rounds", &self.max_rounds)
            .field("max_tokens", &self.max_tokens)
            .field("timeout", &self.timeout)
            .field("retries", &self.retries)
            .finish_non_exhaustive()
    }
}
