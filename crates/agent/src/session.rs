//! The agent loop: prompt, tool calls, guards, and the outcome with its transcript and tokens.

use std::collections::HashMap;

use async_openai::types::chat::{
    ChatCompletionMessageToolCall, ChatCompletionMessageToolCalls, ChatCompletionRequestAssistantMessage,
    ChatCompletionRequestAssistantMessageContent, ChatCompletionRequestMessage, ChatCompletionRequestSystemMessage,
    ChatCompletionRequestSystemMessageContent, ChatCompletionRequestToolMessage,
    ChatCompletionRequestToolMessageContent, ChatCompletionRequestUserMessage, ChatCompletionRequestUserMessageContent,
    ChatCompletionTool, ChatCompletionTools, FunctionObject,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use driftback_events::ChangeSet;
use driftback_recipes::Plan;
use driftback_terraform::{Repo, State};

use crate::context::{cut, first_prompt, locate};
pub use crate::finish::Finish;
use crate::proof::{Footprint, schema_for};

use crate::kb::{KnowledgeBase, signature};
use crate::llm::Llm;
use crate::settings::Settings;
use crate::tools::{Step, ToolError, Workspace, tool_definitions};
use crate::validate::Validation;

/// Tokens one change set cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenUsage {
    pub prompt: u64,
    pub completion: u64,
    /// Model turns.
    pub rounds: u32,
}

impl TokenUsage {
    pub fn total(&self) -> u64 {
        self.prompt + self.completion
    }
}

/// How a session ended.
#[derive(Debug, Clone)]
pub enum AgentResult {
    /// Validated edits, as a plan for the decide and patch stages.
    Reconciled { plan: Plan, finish: Finish, validation: Validation },
    /// A person decides; nothing is written.
    Escalated { reason: String },
}

/// A session's result, what it cost, and every message exchanged (for the store).
#[derive(Debug, Clone)]
pub struct AgentOutcome {
    pub result: AgentResult,
    pub usage: TokenUsage,
    pub transcript: Vec<Value>,
}

/// Times the same call on the same edits may repeat before the session counts as looping.
const MAX_REPEATS: usize = 3;
/// Finishes refused for a patch that does not validate before the session is escalated.
const MAX_FAILED_FINISHES: u32 = 2;
/// Longest escalation reason kept (the endpoint's or the model's text is cut to it).
const MAX_REASON_CHARS: usize = 2_000;

/// Reconcile one change set no recipe covers. `why` says why the recipes could not.
pub async fn reconcile<K: KnowledgeBase>(
    settings: &Settings,
    kb: &K,
    change_set: &ChangeSet,
    state: &State,
    repo: &Repo,
    why: &str,
) -> AgentOutcome {
    let located = locate(change_set, state, repo);
    let similar = match kb.similar(&signature(change_set, state), settings.similar).await {
        Ok(found) => found,
        Err(e) => {
            tracing::warn!(error = %e, "no similar reconciliations for the prompt");
            Vec::new()
        }
    };
    let prompt = first_prompt(change_set, why, &located, &similar);
    let mut session = Session {
        llm: Llm::new(settings),
        settings,
        messages: vec![
            ChatCompletionRequestMessage::System(ChatCompletionRequestSystemMessage {
                content: ChatCompletionRequestSystemMessageContent::Text(prompt.system),
                name: None,
            }),
            ChatCompletionRequestMessage::User(ChatCompletionRequestUserMessage {
                content: ChatCompletionRequestUserMessageContent::Text(prompt.user),
                name: None,
            }),
        ],
        usage: TokenUsage::default(),
    };
    let mut workspace = Workspace {
        change_set,
        state,
        base: repo,
        work: repo.clone(),
        plan: Plan::default(),
        kb,
        max_chars: settings.max_tool_result_chars,
        schema: schema_for(repo),
        footprint: Footprint::of(change_set, state, schema_for(repo)),
    };
    let result = session.run(&mut workspace).await;
    let mut transcript: Vec<Value> =
        session.messages.iter().map(|m| serde_json::to_value(m).unwrap_or(Value::Null)).collect();
    let end = match &result {
        AgentResult::Reconciled { finish, .. } => format!("reconciled: {}", finish.summary),
        AgentResult::Escalated { reason } => format!("escalated: {reason}"),
    };
    transcript.push(serde_json::json!({"role": "driftback", "content": end}));
    AgentOutcome { result, usage: session.usage, transcript }
}

struct Session<'s> {
    llm: Llm,
    settings: &'s Settings,
    messages: Vec<ChatCompletionRequestMessage>,
    usage: TokenUsage,
}

impl Session<'_> {
    async fn run<K: KnowledgeBase>(&mut self, workspace: &mut Workspace<'_, K>) -> AgentResult {
        let escalate = |reason: String| AgentResult::Escalated { reason };
        let tools = tools();
        let mut malformed = 0u32;
        let mut failed_finishes = 0u32;
        let mut repeats: HashMap<(String, String, usize), usize> = HashMap::new();
        loop {
            if self.usage.rounds >= self.settings.max_rounds {
                return escalate(format!(
                    "the agent used all {} rounds without finishing; the transcript is kept",
                    self.settings.max_rounds
                ));
            }
            // What is sent is counted here, whatever the endpoint reports: an estimate of one
            // token per 4 bytes of the request's JSON (messages and tools).
            let sent = estimate_tokens(&self.messages, &tools);
            if self.usage.total() + sent > self.settings.max_tokens {
                return escalate(format!(
                    "the agent would spend {} tokens with the next request, over the budget of {} per change set",
                    self.usage.total() + sent,
                    self.settings.max_tokens
                ));
            }
            let response = match self.llm.complete(&self.messages, &tools).await {
                Ok(r) => r,
                Err(e) => return escalate(cut(&e.to_string(), MAX_REASON_CHARS)),
            };
            self.usage.rounds += 1;
            let Some(choice) = response.choices.into_iter().next() else {
                return escalate("the LLM endpoint answered with no choice".into());
            };
            let message = choice.message;
            let received = serde_json::to_string(&message).map(|t| t.len().div_ceil(4) as u64).unwrap_or(0);
            let (reported_prompt, reported_completion) = response
                .usage
                .as_ref()
                .map(|u| (u64::from(u.prompt_tokens), u64::from(u.completion_tokens)))
                .unwrap_or_default();
            self.usage.prompt += reported_prompt.max(sent);
            self.usage.completion += reported_completion.max(received);
            let calls = message.tool_calls.clone().unwrap_or_default();
            // What goes back to the endpoint in later requests is bounded like every tool result.
            let max = self.settings.max_tool_result_chars;
            let echoed: Vec<ChatCompletionMessageToolCalls> = calls
                .iter()
                .cloned()
                .map(|mut call| {
                    if let ChatCompletionMessageToolCalls::Function(f) = &mut call {
                        f.function.name = cut(&f.function.name, 80);
                        f.function.arguments = cut(&f.function.arguments, max);
                    }
                    call
                })
                .collect();
            self.messages.push(ChatCompletionRequestMessage::Assistant(ChatCompletionRequestAssistantMessage {
                content: message
                    .content
                    .as_deref()
                    .map(|c| ChatCompletionRequestAssistantMessageContent::Text(cut(c, max))),
                tool_calls: (!echoed.is_empty()).then_some(echoed),
                ..Default::default()
            }));
            if calls.is_empty() {
                malformed += 1;
                if malformed >= self.settings.max_malformed {
                    return escalate(format!(
                        "the model answered {malformed} times in a row without a valid tool call"
                    ));
                }
                self.messages.push(user("Answer only with tool calls: edit and validate, then finish or escalate."));
                continue;
            }
            let cap = self.settings.max_tool_calls_per_turn;
            let over_cap = calls.len() > cap;
            if over_cap {
                // The turn is answered, but only its first calls are carried out; it counts as one
                // malformed answer.
                malformed += 1;
                if malformed >= self.settings.max_malformed {
                    return escalate(format!(
                        "the model made {malformed} malformed answers in a row; last: {} tool calls in one turn, at most {cap} are carried out",
                        calls.len()
                    ));
                }
            }
            for (n, call) in calls.into_iter().enumerate() {
                let (id, name, arguments) = match call {
                    ChatCompletionMessageToolCalls::Function(ChatCompletionMessageToolCall { id, function }) => {
                        (id, function.name, function.arguments)
                    }
                    ChatCompletionMessageToolCalls::Custom(custom) => {
                        (custom.id, custom.custom_tool.name, custom.custom_tool.input)
                    }
                };
                if n >= cap {
                    self.messages
                        .push(tool(&id, &format!("error: not carried out: at most {cap} tool calls per turn")));
                    continue;
                }
                let name = cut(&name, 80);
                let key =
                    (name.clone(), normalise(&arguments), workspace.plan.changes.iter().map(|c| c.ops.len()).sum());
                let seen = repeats.entry(key).or_default();
                *seen += 1;
                if *seen >= MAX_REPEATS {
                    return escalate(format!(
                        "the model called {name} {MAX_REPEATS} times with the same arguments on the same edits"
                    ));
                }
                let reply = match workspace.call(&name, &arguments).await {
                    Ok(Step::Result(text)) => {
                        // A turn over the cap stays malformed whatever its calls do.
                        if !over_cap {
                            malformed = 0;
                        }
                        text
                    }
                    Ok(Step::Escalate(reason)) => {
                        self.messages.push(tool(&id, "escalated"));
                        return escalate(format!("the agent escalated: {}", cut(&reason, MAX_REASON_CHARS)));
                    }
                    Ok(Step::Finish(finish)) => {
                        let validation = workspace.validation();
                        if validation.ok {
                            self.messages.push(tool(&id, "finished"));
                            let mut plan = workspace.plan.clone();
                            plan.notes.extend(validation.proofs.iter().map(|p| format!("proof: {p}")));
                            return AgentResult::Reconciled { plan, finish, validation };
                        }
                        failed_finishes += 1;
                        if failed_finishes >= MAX_FAILED_FINISHES {
                            self.messages.push(tool(&id, "refused: the patch does not validate"));
                            return escalate(cut(
                                &format!("the agent's patch does not validate: {}", validation.problems.join("; ")),
                                MAX_REASON_CHARS,
                            ));
                        }
                        format!(
                            "error: cannot finish, the patch does not validate: {}. Fix the edits or escalate.",
                            validation.problems.join("; ")
                        )
                    }
                    Err(ToolError::Refused(why)) => {
                        if !over_cap {
                            malformed = 0;
                        }
                        format!("error: {why}")
                    }
                    Err(ToolError::Malformed(why)) => {
                        malformed += 1;
                        if malformed >= self.settings.max_malformed {
                            self.messages
                                .push(tool(&id, &cut(&format!("error: {why}"), self.settings.max_tool_result_chars)));
                            return escalate(cut(
                                &format!("the model made {malformed} malformed tool calls in a row; last: {why}"),
                                MAX_REASON_CHARS,
                            ));
                        }
                        format!("error: {why}")
                    }
                };
                self.messages.push(tool(&id, &cut(&reply, self.settings.max_tool_result_chars)));
            }
        }
    }
}

/// Tokens of a request as counted locally: one per 4 bytes of its JSON (messages and tools), an
/// over-estimate for English and JSON with the common tokenizers, so the budget is never under-spent
/// by trusting what the endpoint reports.
fn estimate_tokens(messages: &[ChatCompletionRequestMessage], tools: &[ChatCompletionTools]) -> u64 {
    let bytes = serde_json::to_string(messages).map(|t| t.len()).unwrap_or(0)
        + serde_json::to_string(tools).map(|t| t.len()).unwrap_or(0);
    bytes.div_ceil(4) as u64
}

fn tools() -> Vec<ChatCompletionTools> {
    tool_definitions()
        .into_iter()
        .map(|(name, description, parameters)| {
            ChatCompletionTools::Function(ChatCompletionTool {
                function: FunctionObject {
                    name: name.into(),
                    description: Some(description.into()),
                    parameters: Some(parameters),
                    strict: None,
                },
            })
        })
        .collect()
}

fn tool(id: &str, content: &str) -> ChatCompletionRequestMessage {
    ChatCompletionRequestMessage::Tool(ChatCompletionRequestToolMessage {
        content: ChatCompletionRequestToolMessageContent::Text(content.to_string()),
        tool_call_id: id.to_string(),
    })
}

fn user(content: &str) -> ChatCompletionRequestMessage {
    ChatCompletionRequestMessage::User(ChatCompletionRequestUserMessage {
        content: ChatCompletionRequestUserMessageContent::Text(content.to_string()),
        name: None,
    })
}

/// Arguments compared by meaning, not by spacing or key order.
fn normalise(arguments: &str) -> String {
    serde_json::from_str::<Value>(arguments).map(|v| v.to_string()).unwrap_or_else(|_| arguments.trim().to_string())
}
