//! Planning: the one place a change set is planned. Recipes first (the built-in catalog, the
//! configured ones and the learned ones); for what no recipe covers, the LLM agent. Afterwards the
//! same plan is checked (a learned recipe's patch must validate), learned from (a validated agent
//! plan becomes a recipe) and remembered in the knowledge base.

use driftback_agent::{
    AgentResult, Learned, PastReconciliation, RecipeUse, Settings, context, diff_summary, learned_catalog, signature,
    validate,
};
use driftback_events::ChangeSet;
use driftback_recipes::{Catalog, Plan, PlanError};
use driftback_terraform::{Address, Repo, State};

use driftback_agent::KnowledgeBase;

use super::knowledge::Knowledge;
use super::outcome::{AgentReport, Checked, Settled, Status};
use crate::config::AgentConfig;

/// A change set's plan, or why there is none; and what the agent did, when it was asked.
#[derive(Debug)]
pub struct Planned {
    pub plan: Result<Plan, Unplanned>,
    pub agent: Option<AgentReport>,
    /// The plan is the agent's (not a recipe's): it is learned from once it validates.
    pub by_agent: bool,
}

/// Why a change set has no plan.
#[derive(Debug, Clone)]
pub enum Unplanned {
    /// No workspace of the repository manages its resource (why, as the stacks' routing says).
    Unlocated(String),
    /// The recipes refused it, and the agent was not asked (off, or the refusal is not a missing
    /// recipe).
    Recipe(PlanError),
    /// No recipe covers it, and the agent escalated with this reason.
    AgentEscalated { error: PlanError, reason: String },
}

impl std::fmt::Display for Unplanned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unplanned::Unlocated(reason) => f.write_str(reason),
            Unplanned::Recipe(error) => write!(f, "{error}"),
            Unplanned::AgentEscalated { error, reason } => write!(f, "{error}; the LLM agent escalated: {reason}"),
        }
    }
}

/// Recipes, learned recipes and the agent, with the knowledge base behind them.
pub struct Planner {
    /// Whether the learned recipes were read since the planner was made (read at first use).
    fresh: bool,
    /// `Err`: why the agent is off.
    settings: Result<Settings, String>,
    kb: Knowledge,
    base: Catalog,
    /// `base` with the learned recipes in front.
    catalog: Catalog,
    /// Ids of the learned recipes in use.
    learned: Vec<String>,
    learn: bool,
}

impl Planner {
    /// Checks the `[agent]` settings; the learned recipes are read at the first change set.
    pub fn new(config: &AgentConfig, base: Catalog, kb: Knowledge) -> anyhow::Result<Planner> {
        let settings = config.settings()?;
        Ok(Planner {
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

    async fn refresh(&mut self) {
        self.fresh = true;
        let learned = self.kb.recipes().await.unwrap_or_else(|e| {
            tracing::warn!(error = %e, "learned recipes are not available");
            Vec::new()
        });
        self.learned = learned.iter().filter(|l| l.demoted.is_none()).map(|l| l.recipe.id.clone()).collect();
        self.catalog = learned_catalog(&self.base, &learned);
    }

    /// The recipes' plan of `change_set` (learned ones included), without the agent.
    pub fn recipe_plan(&self, change_set: &ChangeSet, state: &State, repo: &Repo) -> Option<Plan> {
        driftback_recipes::plan(&self.catalog, change_set, state, repo).ok()
    }

    /// The managed resources the change set's calls change, of the types the recipes for them
    /// change (never a namesake of another type); `None` when no such recipe knows its calls.
    pub fn targets(&self, change_set: &ChangeSet, state: &State) -> Option<Vec<Address>> {
        driftback_recipes::targets(&self.catalog, change_set, state)
    }

    /// Plan `change_set` against `repo` and `state`: a recipe's plan, else the agent's.
    pub async fn plan(&mut self, change_set: &ChangeSet, state: &State, repo: &Repo) -> Planned {
        if !self.fresh {
            self.refresh().await;
        }
        let error = match driftback_recipes::plan(&self.catalog, change_set, state, repo) {
            Ok(plan) => return Planned { plan: Ok(plan), agent: None, by_agent: false },
            Err(e @ PlanError::NoRecipe { .. }) => e,
            Err(e) => return Planned { plan: Err(Unplanned::Recipe(e)), agent: None, by_agent: false },
        };
        let Ok(settings) = &self.settings else {
            return Planned { plan: Err(Unplanned::Recipe(error)), agent: None, by_agent: false };
        };
        let out = driftback_agent::reconcile(settings, &self.kb, change_set, state, repo, &error.to_string()).await;
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
                Ok(plan)
            }
            AgentResult::Escalated { reason } => {
                report.escalation = Some(reason.clone());
                Err(Unplanned::AgentEscalated { error, reason })
            }
        };
        let by_agent = plan.is_ok();
        Planned { plan, agent: Some(report), by_agent }
    }

    /// After the patch: a learned recipe's result must validate against the calls like the agent's
    /// did, or the recipe is demoted and so is the change set (escalated, with the reason); a
    /// validated agent plan is generalised into a recipe; a reconciliation is remembered for the
    /// agent's searches. `planned` is what [`Planner::plan`] made, `settled` what its decision
    /// wrote, `after` the repository with the patch applied.
    pub async fn after_patch(
        &mut self,
        change_set: &ChangeSet,
        (state, repo, after): (&State, &Repo, &Repo),
        planned: &Planned,
        settled: Settled,
    ) -> Checked {
        let Ok(plan) = &planned.plan else { return Checked::unchecked(settled) };
        let (mut notes, demoted) = self.check_learned_recipes(change_set, state, repo, after, plan, &settled).await;
        if demoted.is_some() || settled.status != Status::Reconciled {
            return Checked { settled, notes, demoted };
        }
        if planned.by_agent && self.learn {
            match driftback_agent::learn(&self.kb, &self.catalog, change_set, state, repo, plan).await {
                Ok(Learned::Stored(recipe)) => {
                    notes.push(format!("learned recipe {} for the next change like this", recipe.recipe.id));
                    self.refresh().await;
                }
                Ok(Learned::NotGeneralised(why)) => notes.push(format!("no recipe learned: {why}")),
                Err(e) => driftback_feed::metrics::knowledge_write_lost("learned_recipe", &e),
            }
        }
        let past = PastReconciliation {
            change_set_id: change_set.id.clone(),
            signature: signature(change_set, state),
            summary: trace_text(change_set),
            patch: diff_summary(repo, after),
            outcome: "reconciled".into(),
            planned_by: if settled.recipes.is_empty() { "agent".into() } else { settled.recipes.join(", ") },
            tokens: planned.agent.as_ref().map(|a| a.usage.total()).unwrap_or(0),
        };
        if let Err(e) = self.kb.record_reconciliation(&past).await {
            driftback_feed::metrics::knowledge_write_lost("reconciliation", &e);
        }
        Checked { settled, notes, demoted: None }
    }

    /// A learned recipe's result validated against the calls: the proofs for the notes, and why
    /// the patch is demoted when it does not validate (the recipe is demoted too).
    async fn check_learned_recipes(
        &mut self,
        change_set: &ChangeSet,
        state: &State,
        repo: &Repo,
        after: &Repo,
        plan: &Plan,
        settled: &Settled,
    ) -> (Vec<String>, Option<String>) {
        let mut used: Vec<String> = settled.recipes.iter().filter(|r| self.learned.contains(r)).cloned().collect();
        used.dedup();
        if used.is_empty() || settled.status != Status::Reconciled {
            return (Vec::new(), None);
        }
        let validation = validate(repo, after, state, change_set, plan);
        // The commit and the story list every edit with its proof, as for the agent's own plans.
        let notes = validation.proofs.iter().map(|p| format!("proof: {p}")).collect();
        let problems = validation.problems;
        let usage =
            if problems.is_empty() { RecipeUse::Validated } else { RecipeUse::FailedValidation(problems.join("; ")) };
        for id in &used {
            if let Err(e) = self.kb.record_recipe_use(id, &usage).await {
                driftback_feed::metrics::knowledge_write_lost("recipe_use", &e);
            }
        }
        if problems.is_empty() {
            return (notes, None);
        }
        self.refresh().await;
        let reason = format!(
            "the learned recipe {} produced a patch that does not validate ({}); it is demoted",
            used.join(", "),
            problems.join("; ")
        );
        (notes, Some(reason))
    }
}

fn trace_text(change_set: &ChangeSet) -> String {
    context::trace_summary(change_set)
        .iter()
        .map(|c| format!("{} {} {}", c.time, c.call, c.params))
        .collect::<Vec<_>>()
        .join("\n")
}
