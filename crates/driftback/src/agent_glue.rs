//! The LLM agent in the pipeline: the fallback for change sets no recipe covers, the check on every
//! use of a learned recipe, learning from validated reconciliations, and the knowledge base behind
//! it (in memory for `eval`, the store for `reconcile`).

use std::path::PathBuf;
use std::time::Instant;

use serde::Serialize;
use serde_json::Value;

use driftback_agent::{
    AgentResult, Finish, InMemoryKnowledgeBase, KbError, KnowledgeBase, Learned, LearnedRecipe, PastReconciliation,
    RecipeUse, Settings, TokenUsage, context, learned_catalog, signature, validate,
};
use driftback_embed::ChangeSignature;
use driftback_events::ChangeSet;
use driftback_policy::{LedgerEntry, Policy};
use driftback_recipes::{Catalog, Plan, PlanError};
use driftback_terraform::{Repo, State};

use crate::config::AgentConfig;
use crate::kb_store::StoreKnowledgeBase;
use crate::pipeline::{self, Outcome, Status};

/// What the agent did for one change set: kept with the outcome, for eval and the store.
#[derive(Debug, Clone, Serialize)]
pub struct AgentReport {
    pub model: String,
    pub usage: TokenUsage,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finish: Option<Finish>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub escalation: Option<String>,
    /// Every message exchanged, the last one saying how it ended.
    #[serde(skip)]
    pub transcript: Vec<Value>,
}

/// Where learned recipes and past reconciliations live.
pub enum Knowledge {
    /// For one run (`eval`): what is learned in one scenario serves the next.
    Memory(InMemoryKnowledgeBase),
    /// The store of the repository (`reconcile`).
    Store(StoreKnowledgeBase),
}

impl KnowledgeBase for Knowledge {
    async fn similar(&self, signature: &ChangeSignature, limit: usize) -> Result<Vec<PastReconciliation>, KbError> {
        match self {
            Knowledge::Memory(kb) => kb.similar(signature, limit).await,
            Knowledge::Store(kb) => kb.similar(signature, limit).await,
        }
    }
    async fn record_reconciliation(&self, past: &PastReconciliation) -> Result<(), KbError> {
        match self {
            Knowledge::Memory(kb) => kb.record_reconciliation(past).await,
            Knowledge::Store(kb) => kb.record_reconciliation(past).await,
        }
    }
    async fn store_recipe(&self, recipe: &LearnedRecipe) -> Result<(), KbError> {
        match self {
            Knowledge::Memory(kb) => kb.store_recipe(recipe).await,
            Knowledge::Store(kb) => kb.store_recipe(recipe).await,
        }
    }
    async fn recipes(&self) -> Result<Vec<LearnedRecipe>, KbError> {
        match self {
            Knowledge::Memory(kb) => kb.recipes().await,
            Knowledge::Store(kb) => kb.recipes().await,
        }
    }
    async fn record_recipe_use(&self, id: &str, usage: &RecipeUse) -> Result<(), KbError> {
        match self {
            Knowledge::Memory(kb) => kb.record_recipe_use(id, usage).await,
            Knowledge::Store(kb) => kb.record_recipe_use(id, usage).await,
        }
    }
}

/// The pipeline with the agent and the learned recipes in it.
pub struct AgentStage {
    /// Drives the agent's and the knowledge base's calls: a multi-threaded runtime's, called from
    /// outside it (a blocking thread).
    runtime: tokio::runtime::Handle,
    /// Whether the learned recipes were read since the stage was made (they are read at first use,
    /// from the thread that processes).
    fresh: bool,
    /// `Err`: why the agent is off.
    settings: Result<Settings, String>,
    kb: Knowledge,
    base: Catalog,
    catalog: Catalog,
    learned: Vec<String>,
    learn: bool,
}

impl AgentStage {
    /// Checks the `[agent]` settings; the learned recipes are read at the first change set.
    pub fn new(
        runtime: tokio::runtime::Handle,
        config: &AgentConfig,
        base: Catalog,
        kb: Knowledge,
    ) -> anyhow::Result<AgentStage> {
        let settings = config.settings()?;
        Ok(AgentStage {
            runtime,
            fresh: false,
            settings,
            kb,
            catalog: base.clone(),
            base,
            learned: Vec::new(),
            learn: config.learn,
        })
    }

    /// Why the agent is off, when it is.
    pub fn off_reason(&self) -> Option<&str> {
        self.settings.as_ref().err().map(String::as_str)
    }

    /// The learned recipes in use now.
    fn refresh(&mut self) {
        self.fresh = true;
        let learned = self.runtime.block_on(self.kb.recipes()).unwrap_or_else(|e| {
            tracing::warn!(error = %e, "learned recipes are not available");
            Vec::new()
        });
        self.learned = learned.iter().filter(|l| l.demoted.is_none()).map(|l| l.recipe.id.clone()).collect();
        self.catalog = learned_catalog(&self.base, &learned);
    }

    /// [`pipeline::process`], with the agent as the fallback, learned recipes checked, and what
    /// was learned kept.
    pub fn process(
        &mut self,
        state: &State,
        repo: &Repo,
        change_set: &ChangeSet,
        policy: &Policy,
        history: &[LedgerEntry],
    ) -> Outcome {
        let started = Instant::now();
        if !self.fresh {
            self.refresh();
        }
        let runtime = self.runtime.clone();
        let mut agent_plan: Option<Plan> = None;
        let kb = &self.kb;
        let mut outcome = match &self.settings {
            Ok(settings) => {
                let mut fallback = |e: &PlanError| {
                    let out = runtime.block_on(driftback_agent::reconcile(
                        settings,
                        kb,
                        change_set,
                        state,
                        repo,
                        &e.to_string(),
                    ));
                    let mut report = AgentReport {
                        model: settings.model.clone(),
                        usage: out.usage,
                        finish: None,
                        escalation: None,
                        transcript: out.transcript,
                    };
                    let plan = match out.result {
                        AgentResult::Reconciled { plan, finish, .. } => {
                            report.finish = Some(finish);
                            agent_plan = Some(plan.clone());
                            Ok(plan)
                        }
                        AgentResult::Escalated { reason } => {
                            report.escalation = Some(reason.clone());
                            Err(reason)
                        }
                    };
                    (plan, report)
                };
                pipeline::process_with(&self.catalog, state, repo, change_set, policy, history, Some(&mut fallback))
            }
            Err(_) => pipeline::process(&self.catalog, state, repo, change_set, policy, history),
        };
        let after = patched(repo, &outcome);
        self.check_learned_recipes(state, repo, &after, change_set, &mut outcome);
        if outcome.status == Status::Reconciled {
            if let (Some(plan), true) = (&agent_plan, self.learn) {
                let learned =
                    runtime.block_on(driftback_agent::learn(&self.kb, &self.catalog, change_set, state, repo, plan));
                match learned {
                    Ok(Learned::Stored(recipe)) => {
                        outcome
                            .notes
                            .push(format!("learned recipe {} for the next change like this", recipe.recipe.id));
                        self.refresh();
                    }
                    Ok(Learned::NotGeneralised(why)) => outcome.notes.push(format!("no recipe learned: {why}")),
                    Err(e) => tracing::warn!(error = %e, "the learned recipe was not stored"),
                }
            }
            let tokens = outcome.agent.as_ref().map(|a| a.usage.total()).unwrap_or(0);
            let past = PastReconciliation {
                change_set_id: change_set.id.clone(),
                signature: signature(change_set, state),
                summary: trace_text(change_set),
                patch: driftback_agent::diff_summary(repo, &after),
                outcome: "reconciled".into(),
                planned_by: if outcome.recipes.is_empty() { "agent".into() } else { outcome.recipes.join(", ") },
                tokens,
            };
            if let Err(e) = self.runtime.block_on(self.kb.record_reconciliation(&past)) {
                tracing::warn!(error = %e, "the reconciliation was not remembered");
            }
        }
        tracing::debug!(change_set = %change_set.id, ms = started.elapsed().as_millis() as u64, "processed");
        outcome
    }

    /// A learned recipe's patch must validate like the agent's did, or the recipe is demoted and
    /// the change set escalated.
    fn check_learned_recipes(
        &mut self,
        state: &State,
        repo: &Repo,
        after: &Repo,
        change_set: &ChangeSet,
        outcome: &mut Outcome,
    ) {
        let mut used: Vec<String> = outcome.recipes.iter().filter(|r| self.learned.contains(r)).cloned().collect();
        used.dedup();
        if used.is_empty() || outcome.status != Status::Reconciled {
            return;
        }
        let problems = match driftback_recipes::plan(&self.catalog, change_set, state, repo) {
            Ok(plan) => validate(repo, after, state, change_set, &plan).problems,
            Err(e) => vec![e.to_string()],
        };
        let usage =
            if problems.is_empty() { RecipeUse::Validated } else { RecipeUse::FailedValidation(problems.join("; ")) };
        for id in &used {
            if let Err(e) = self.runtime.block_on(self.kb.record_recipe_use(id, &usage)) {
                tracing::warn!(error = %e, recipe = %id, "the recipe's use was not counted");
            }
        }
        if !problems.is_empty() {
            outcome.status = Status::Escalated(format!(
                "the learned recipe {} produced a patch that does not validate ({}); it is demoted",
                used.join(", "),
                problems.join("; ")
            ));
            outcome.files.clear();
            outcome.edits = 0;
            self.refresh();
        }
    }
}

fn patched(repo: &Repo, outcome: &Outcome) -> Repo {
    let mut after = repo.clone();
    for (file, text) in &outcome.files {
        after.set_file(&PathBuf::from(file), text.clone());
    }
    after
}

fn trace_text(change_set: &ChangeSet) -> String {
    context::trace_summary(change_set)
        .iter()
        .map(|c| format!("{} {} {}", c.time, c.call, c.params))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Keep the agent's transcript and tokens in the store, whatever the outcome, when the agent worked
/// on the change set. `record` is the change set's record, with its branch and commit.
pub async fn record_agent_work(
    store: &driftback_store::Store,
    change_set: &ChangeSet,
    outcome: &Outcome,
    record: &driftback_store::ChangeSetRecord,
) -> anyhow::Result<()> {
    if let Some(agent) = &outcome.agent {
        store.record_reconciliation(&reconciliation_record(change_set, outcome, agent, record)).await?;
    }
    Ok(())
}

/// The store's record of a change set the agent worked on: its transcript (as the trace), intent,
/// motivation, tokens and how it ended.
pub fn reconciliation_record(
    change_set: &ChangeSet,
    outcome: &Outcome,
    agent: &AgentReport,
    record: &driftback_store::ChangeSetRecord,
) -> driftback_store::ReconciliationRecord {
    driftback_store::ReconciliationRecord {
        change_set_id: change_set.id.clone(),
        trace_summary: serde_json::to_string(&agent.transcript).unwrap_or_default(),
        actor: change_set.actor.display_name.clone(),
        intent: agent.finish.as_ref().map(|f| label(&f.intent)).unwrap_or_else(|| "unknown".into()),
        motivation: agent.finish.as_ref().map(|f| label(&f.motivation)).unwrap_or_else(|| "unknown".into()),
        decision: outcome.decision.as_ref().map(|d| d.kind.as_str().to_string()).unwrap_or_else(|| "escalate".into()),
        patch_diff: record.diff.clone(),
        branch: record.branch.clone(),
        commit_id: record.commit_id.clone(),
        pull_request: None,
        prompt_tokens: agent.usage.prompt,
        completion_tokens: agent.usage.completion,
        model: Some(agent.model.clone()),
        duration_ms: 0,
        outcome: outcome.status.label().to_string(),
    }
}

/// The snake_case name serde gives an enum value.
fn label<T: Serialize>(value: &T) -> String {
    serde_json::to_value(value).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}
