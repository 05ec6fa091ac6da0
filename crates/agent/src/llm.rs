//! One chat-completions request, with a timeout per attempt and retries with exponential backoff.

use async_openai::Client;
use async_openai::config::OpenAIConfig;
use async_openai::error::OpenAIError;
use async_openai::middleware::ReqwestService;
use async_openai::types::chat::{
    ChatCompletionRequestMessage, ChatCompletionTools, CreateChatCompletionRequest, CreateChatCompletionResponse,
};

use crate::settings::Settings;

/// Why the endpoint gave no usable answer. Every variant ends the session in escalation.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LlmError {
    #[error("the LLM endpoint did not answer within {seconds} s ({attempts} attempts)")]
    Timeout { seconds: u64, attempts: u32 },
    #[error("the LLM endpoint could not be reached after {attempts} attempts: {message}")]
    Unreachable { attempts: u32, message: String },
    #[error("the LLM endpoint refused the request: {0}")]
    Refused(String),
    #[error("the LLM endpoint's answer is not a chat completion: {0}")]
    Malformed(String),
}

pub(crate) struct Llm {
    client: Client<OpenAIConfig>,
    settings: Settings,
}

impl Llm {
    pub fn new(settings: &Settings) -> Llm {
        let config = OpenAIConfig::new()
            .with_api_base(settings.base_url.trim_end_matches('/'))
            .with_api_key(settings.api_key.clone());
        // The client's default transport retries 429 and 5xx three more times on its own; ours are
        // the only retries (`retries`), so a plain transport without that layer.
        let client = Client::with_config(config).with_http_service(ReqwestService::default());
        Llm { client, settings: settings.clone() }
    }

    pub async fn complete(
        &self,
        messages: &[ChatCompletionRequestMessage],
        tools: &[ChatCompletionTools],
    ) -> Result<CreateChatCompletionResponse, LlmError> {
        let request = CreateChatCompletionRequest {
            model: self.settings.model.clone(),
            messages: messages.to_vec(),
            tools: Some(tools.to_vec()),
            temperature: Some(self.settings.temperature),
            max_completion_tokens: Some(self.settings.max_completion_tokens),
            ..Default::default()
        };
        let attempts = self.settings.retries + 1;
        let mut last = LlmError::Unreachable { attempts, message: "no attempt made".into() };
        for attempt in 0..attempts {
            if attempt > 0 {
                let wait = self.settings.backoff.saturating_mul(1 << (attempt - 1).min(10));
                tracing::warn!(attempt, wait_ms = wait.as_millis() as u64, error = %last, "retrying the LLM request");
                tokio::time::sleep(wait).await;
            }
            match tokio::time::timeout(self.settings.timeout, self.client.chat().create(request.clone())).await {
                Ok(Ok(response)) => return Ok(response),
                Ok(Err(e)) => match classify(e, attempts) {
                    Attempt::Retry(e) => last = e,
                    Attempt::Stop(e) => return Err(e),
                },
                Err(_) => last = LlmError::Timeout { seconds: self.settings.timeout.as_secs(), attempts },
            }
        }
        Err(last)
    }
}

enum Attempt {
    Retry(LlmError),
    Stop(LlmError),
}

/// Longest text of the endpoint's kept in an error (a 5 MB error body is not stored).
const MAX_ERROR_CHARS: usize = 500;

fn classify(error: OpenAIError, attempts: u32) -> Attempt {
    let text = |e: &dyn std::fmt::Display| crate::context::cut(&e.to_string(), MAX_ERROR_CHARS);
    match error {
        OpenAIError::Reqwest(e) => Attempt::Retry(LlmError::Unreachable { attempts, message: text(&e) }),
        OpenAIError::ApiError(e) if e.status_code.as_u16() == 429 || e.status_code.is_server_error() => {
            Attempt::Retry(LlmError::Unreachable { attempts, message: text(&e) })
        }
        OpenAIError::ApiError(e) => Attempt::Stop(LlmError::Refused(text(&e))),
        OpenAIError::JSONDeserialize(e, _) => Attempt::Stop(LlmError::Malformed(text(&e))),
        other => Attempt::Stop(LlmError::Refused(text(&other))),
    }
}
