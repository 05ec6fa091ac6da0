//! The one road of a change set, walked by every command and the daemon alike:
//!
//! ```text
//! attribute -> plan (once) -> history -> decide -> patch -> check and learn -> deliver -> record
//! ```
//!
//! [`Driver::drive`] takes one change set against a [`Workspace`] (repository, state, policy,
//! loaded once). The plan is made once ([`plan::Planner::plan`]) and travels: the ownership
//! history is read for the fields it touches, the policy decides on it, the patch applies the
//! decided plan, a learned recipe's result is validated against the same plan, and delivery on an
//! open pull request's branch applies it again to that branch's files. What differs between the
//! commands is only the [`Delivery`] (none for a dry run and `policy explain`, the scratch copy
//! for `eval`, git for `reconcile` and `serve`) and whether a store is there to record in.
//!
//! The driver is async; the pure stages (attribution, planning by recipe, the decision, the patch)
//! are plain function calls inside it, and git runs in place (each command enters the driver from
//! one runtime: `main`'s, or the daemon's reconcile loop once per change set).

mod answers;
mod deliver;
mod field_changes;
mod history;
mod knowledge;
mod modules;
mod outcome;
mod patch;
mod person;
mod plan;
mod publisher;
mod record;
pub mod security;
mod session;
mod settle;
mod stacks;
mod story;
mod workspace;

use driftback_events::ChangeSet;
use driftback_policy::{DecideInput, Decided, DecisionKind};
use driftback_recipes::{Catalog, Plan};
use driftback_store::{ChangeSetRecord, Store};

pub use answers::{Answered, Answerer, webhook_router};
pub use deliver::{Delivered, Deliverer};
pub use knowledge::{Knowledge, StoreKnowledgeBase, embedder, embedding_text, open_existing_store, open_store};
pub use modules::Modules;
pub use outcome::{Outcome, Status};
pub use person::{PersonDecision, change_set_from_store};
pub use publisher::{Publisher, notifier};
pub use stacks::{Stacks, routes_to_stacks};
pub use workspace::{Workspace, load_catalog, load_policy_file, read_state};

use crate::config::Config;
use history::History;
use outcome::Ground;
use plan::{Planned, Planner, Unplanned};

/// Where a reconciled change set goes.
pub enum Delivery {
    /// Nowhere: a dry run, or `policy explain`. The record says `dry-run`.
    Off,
    /// Into the workspace's repository in memory, so the next change set sees it (`eval`).
    Scratch,
    /// A commit on its own branch, pushed and proposed as `[publish] mode` says.
    Git(Box<Deliverer>),
}

/// One change set, driven.
#[derive(Debug)]
pub struct Driven {
    pub outcome: Outcome,
    /// What the change set is called: its first address, else its resource id, else its id.
    pub label: String,
    /// Its row for the knowledge base, with the branch and commit when delivered.
    pub record: ChangeSetRecord,
    pub delivered: Option<Delivered>,
    /// The same session's change sets whose changes the decided edit makes too (they share the
    /// value's origin), by id.
    pub written_with: Vec<String>,
}

/// Where a change set's siblings (the same actor session's change sets on other resources) are
/// found.
enum Siblings {
    /// Among the change sets driven together: a file's (`reconcile`, `policy explain`), a
    /// scenario's (`eval`).
    Batch(Vec<ChangeSet>),
    /// Among the daemon's queued change sets in the store ([`session::from_store`]).
    Store,
}

/// The long-lived part of the road: the planner with its knowledge base, the store, the delivery.
pub struct Driver {
    planner: Planner,
    store: Option<Store>,
    delivery: Delivery,
    history: History,
    /// Whether the driver writes the change set's row itself (`reconcile`), or its caller completes
    /// a row it holds (the daemon's reconcile loop).
    records_rows: bool,
    /// Where the same session's change sets on other resources are found ([`session`]), and how
    /// close in time they must be.
    siblings: Siblings,
    sibling_window: chrono::Duration,
    /// Without a store: change sets whose change a sibling's delivered edit already made, with the
    /// sibling's id and delivery, which stand for theirs. With one, the store keeps them
    /// ([`Store::record_covered`]), so a restarted daemon finds them.
    covered: std::collections::HashMap<String, (String, Delivered)>,
    /// The recipes' plans of siblings, by workspace (with its state's version) and change set
    /// (`None`: no recipe plan). Valid while the workspace's code and state are unchanged: cleared
    /// when a reconciled change set's edit becomes the code (`eval`), when the state gains
    /// resources, and when the daemon's base commit moves ([`Driver::at_code`]).
    sibling_plans: std::collections::HashMap<(Option<String>, String), Option<Plan>>,
    /// The commit the daemon's workspaces were last read at.
    code: Option<String>,
}

impl Driver {
    /// A driver planning with `catalog` (and the learned recipes and the agent, as `[agent]` says),
    /// recording in `store` when there is one.
    pub fn new(config: &Config, catalog: Catalog, store: Option<Store>, delivery: Delivery) -> anyhow::Result<Driver> {
        let knowledge = Knowledge::new(store.as_ref(), &config.embed)?;
        let planner = Planner::new(&config.agent, catalog, knowledge)?;
        let sibling_window =
            chrono::Duration::seconds(i64::try_from(config.group.quiet_window_secs).unwrap_or(i64::MAX / 1000));
        Ok(Driver {
            planner,
            store,
            delivery,
            history: History::default(),
            records_rows: true,
            siblings: Siblings::Batch(Vec::new()),
            sibling_window,
            covered: Default::default(),
            sibling_plans: Default::default(),
            code: None,
        })
    }

    /// The change sets driven together (a file's, a scenario's): the same session's change sets
    /// among them on other resources plan alongside each other.
    pub fn set_batch(&mut self, batch: Vec<ChangeSet>) {
        self.siblings = Siblings::Batch(batch);
        self.covered.clear();
        self.sibling_plans.clear();
    }

    /// The change sets are the daemon's, one at a time: each one's siblings are the same session's
    /// change sets in the store's queue (pending, claimed or done), as a batch would have them.
    pub fn siblings_from_store(mut self) -> Driver {
        self.siblings = Siblings::Store;
        self
    }

    /// The caller completes each change set's row (the daemon's feed does, with its claim).
    pub fn rows_recorded_by_caller(mut self) -> Driver {
        self.records_rows = false;
        self
    }

    /// Why the LLM agent is off, when it is.
    pub fn agent_off_reason(&self) -> Option<&str> {
        self.planner.off_reason()
    }

    /// The git delivery, to move its base after the clone was refreshed.
    pub fn deliverer_mut(&mut self) -> Option<&mut Deliverer> {
        match &mut self.delivery {
            Delivery::Git(d) => Some(d),
            _ => None,
        }
    }

    /// End the run: what is waiting to be announced is sent.
    pub async fn close(self) {
        if let Delivery::Git(deliverer) = self.delivery {
            deliverer.close().await;
        }
    }

    /// Start a new run: the ownership history of earlier change sets comes from the store alone.
    pub fn new_run(&mut self) {
        self.history = History::default();
    }

    /// The workspaces driven next are read at `commit` (the daemon's base): the siblings' plans
    /// made at another commit are dropped.
    pub fn at_code(&mut self, commit: &str) {
        if self.code.as_deref() != Some(commit) {
            self.sibling_plans.clear();
            self.code = Some(commit.to_string());
        }
    }

    /// Drive one change set from its events to its commit and its records.
    pub async fn drive(&mut self, workspace: &mut Workspace, change_set: &ChangeSet) -> anyhow::Result<Driven> {
        self.drive_with(workspace, change_set, None).await
    }

    /// Drive a change set again with a person's answer in place of the policy's decision
    /// ([`person::overrule`]): what they decided is written through the same delivery.
    pub async fn drive_answered(
        &mut self,
        workspace: &mut Workspace,
        change_set: &ChangeSet,
        person: &PersonDecision,
    ) -> anyhow::Result<Driven> {
        self.drive_with(workspace, change_set, Some(person)).await
    }

    async fn drive_with(
        &mut self,
        workspace: &mut Workspace,
        change_set: &ChangeSet,
        person: Option<&PersonDecision>,
    ) -> anyhow::Result<Driven> {
        let started = std::time::Instant::now();
        let unlocated = workspace
            .unlocated
            .clone()
            .or_else(|| modules::unfetched(workspace, self.planner.targets(change_set, &workspace.state).as_deref()));
        let mut planned = match unlocated {
            Some(reason) => Planned { plan: Err(Unplanned::Unlocated(reason)), agent: None, by_agent: false },
            None => self.planner.plan(change_set, &workspace.state, &workspace.repo).await,
        };
        let siblings = match &mut planned.plan {
            Ok(plan) if person.is_none() => self.plan_siblings_alongside(change_set, plan, workspace).await?,
            _ => Vec::new(),
        };
        let unplanned = planned.plan.as_ref().err().map(ToString::to_string);
        let plan = planned.plan.as_ref().map_err(|_| unplanned.as_deref().unwrap_or_default());
        let decided = self.decide(change_set, plan, workspace).await?;
        let decided = match person {
            Some(person) => person::overrule(decided, person),
            None => decided,
        };
        let ground = Ground {
            notes: workspace
                .adopted_because
                .iter()
                .map(|why| format!("no state manages this resource; it goes to this stack as {why}"))
                .collect(),
            scope: workspace.scope.clone(),
            answered_by: person.map(|p| format!("{} in #{}", p.user, p.thread)),
        };
        let (settled, after, written_with) = settle::settle(&planned, &decided, workspace, person, &siblings);
        let after = after.unwrap_or_else(|| workspace.repo.clone());
        let checked =
            self.planner.after_patch(change_set, (&workspace.state, &workspace.repo, &after), &planned, settled).await;
        let outcome = Outcome::new(ground, planned.agent, decided.decision, decided.ledger, checked);
        self.history.push(change_set, &outcome.ledger);

        let targets = self.planner.targets(change_set, &workspace.state);
        let label = outcome.label(change_set, &workspace.state, targets.as_deref());
        let mut record = record::change_set_record(change_set, &outcome);
        // What was decided is in the knowledge base before anything is published: a person or a
        // bot may answer a pull request the moment it opens (merge a held draft, `/driftback
        // revert`), and the answer reads the decision and the fields it owns. A delivery that fails
        // is tried again with the same decision, which the audit log keeps once.
        if let Some(store) = &self.store {
            record::decision_and_ledger(store, change_set, &outcome)
                .await
                .map_err(|e| e.context("recording the decision and field changes in the knowledge base"))?;
        }
        let mut delivered = None;
        if outcome.status == Status::Reconciled {
            match &self.delivery {
                Delivery::Off => record.status = "dry-run".into(),
                Delivery::Scratch => {
                    workspace.repo = after;
                    self.sibling_plans.clear();
                }
                Delivery::Git(deliverer) => {
                    let covered = match person {
                        None => covered_by(self.store.as_ref(), &mut self.covered, &change_set.id).await?,
                        // A person's answer is written as they decided, whatever a sibling wrote.
                        Some(_) => None,
                    };
                    let done = match covered {
                        // A sibling's edit already made this change: its branch stands for this one.
                        Some((by, done)) => {
                            record.notes.push(format!(
                                "already written on {} by change set {by} of the same session, whose edit makes this \
                                 change too",
                                done.branch
                            ));
                            done
                        }
                        None => {
                            deliverer
                                .deliver(
                                    self.store.as_ref(),
                                    change_set,
                                    &outcome,
                                    &decided.plan,
                                    (&workspace.repo, &workspace.state),
                                    &label,
                                )
                                .await?
                        }
                    };
                    cover(self.store.as_ref(), &mut self.covered, &written_with, &change_set.id, &done).await?;
                    record.branch = Some(done.branch.clone());
                    record.commit_id = Some(done.commit.to_string());
                    record.diff = done.diff.clone();
                    record.notes.extend(done.note());
                    delivered = Some(done);
                }
            }
        }
        if let (Delivery::Git(deliverer), Status::NoChange) = (&self.delivery, &outcome.status) {
            // The cloud says what the base code says again: an open pull request that writes the
            // earlier value is set back too, or closed when that leaves it nothing to write.
            let written = match outcome.decision.as_ref().map(|d| d.kind) {
                Some(DecisionKind::Reconcile) => Some(&decided.plan),
                Some(DecisionKind::Escalate) => Some(&decided.held),
                _ => None,
            };
            if let Some(plan) = written.filter(|_| person.is_none()) {
                let repo_state = (&workspace.repo, &*workspace.state);
                let note =
                    deliverer.set_back(self.store.as_ref(), change_set, &outcome, plan, repo_state, &label).await?;
                record.notes.extend(note);
            }
        }
        if let Delivery::Git(deliverer) = &self.delivery {
            let covered = story::fields_of(&outcome, &label);
            let note = match (&outcome.status, &delivered) {
                (Status::Escalated(_) | Status::Revert(_), _) => {
                    deliverer.escalate(change_set, &outcome, &decided.held, workspace, &label).await?
                }
                // Split: the written part went to the pull request; the rest waits in the issue
                // (or the held draft).
                (Status::Reconciled, Some(_)) if outcome.held.is_some() => match outcome.held_view() {
                    Some(waiting) => deliverer.escalate(change_set, &waiting, &decided.held, workspace, &label).await?,
                    None => None,
                },
                // A person's answer is closed by the thread that carried it, with its own reply.
                (Status::Reconciled, Some(done)) if person.is_none() => {
                    deliverer.resolve(&label, &covered, Some(done)).await?
                }
                // The drifted value came back: nothing to write, and nothing left to decide.
                (Status::NoChange, _) if outcome.decision.is_some() => {
                    deliverer.resolve(&label, &covered, None).await?
                }
                _ => None,
            };
            if let (Some(note), Some(store)) = (&note, &self.store) {
                if matches!(outcome.status, Status::Reconciled | Status::NoChange) && outcome.held.is_none() {
                    record::resolved(store, &outcome, &label, change_set, note)
                        .await
                        .map_err(|e| e.context("recording the resolved escalation in the knowledge base"))?;
                }
            }
            record.notes.extend(note);
        }
        if patch::remember_created(&mut workspace.state, &outcome) {
            // The state gained resources: siblings' plans read against it may differ now.
            self.sibling_plans.clear();
        }
        if let Some(store) = &self.store {
            if self.records_rows {
                store.record_change_set(&record).await?;
            }
            record::agent_work(store, change_set, &outcome, &record)
                .await
                .map_err(|e| e.context("recording the agent's work in the knowledge base"))?;
        }
        tracing::debug!(change_set = %change_set.id, ms = started.elapsed().as_millis() as u64, "driven");
        Ok(Driven { outcome, label, record, delivered, written_with })
    }

    /// The policy's decision on `change_set` with its plan (or why it has none): who made it, and
    /// the ownership history of the fields the plan touches.
    async fn decide(
        &self,
        change_set: &ChangeSet,
        plan: Result<&Plan, &str>,
        workspace: &Workspace,
    ) -> anyhow::Result<Decided> {
        let attribution = driftback_attribute::attribute(change_set, &workspace.policy.actors);
        let history = self
            .history
            .before(
                self.store.as_ref(),
                change_set,
                plan.ok(),
                workspace.policy.oscillation_window_secs,
                workspace.scope.as_ref(),
            )
            .await
            .map_err(|e| e.context("reading the ownership history from the knowledge base"))?;
        Ok(workspace.policy.decide(&DecideInput {
            change_set,
            attribution: &attribution,
            plan,
            repo: workspace.unlocated.is_none().then_some(&workspace.repo),
            history: &history,
            state: Some(workspace.state.as_ref()),
        }))
    }

    /// Plan the same session's change sets on other resources ([`session::siblings`]) with the
    /// recipes, decide each as if alone, and add those the policy would write whole (no split, no
    /// escalation) to `plan.alongside`. Returns them.
    async fn plan_siblings_alongside(
        &mut self,
        change_set: &ChangeSet,
        plan: &mut Plan,
        workspace: &Workspace,
    ) -> anyhow::Result<Vec<session::Sibling>> {
        let mut added = Vec::new();
        let workspace_key = workspace
            .scope
            .as_ref()
            .map(|s| format!("{}/{}@{}", s.stack, s.workspace, s.state_version.as_deref().unwrap_or_default()));
        let read;
        let siblings = match (&self.siblings, &self.store) {
            (Siblings::Batch(batch), _) => session::siblings(change_set, batch, self.sibling_window),
            (Siblings::Store, Some(store)) => {
                read = session::from_store(store, change_set, self.sibling_window).await?;
                read.iter().collect()
            }
            (Siblings::Store, None) => Vec::new(),
        };
        for sibling in siblings {
            let cached = self
                .sibling_plans
                .entry((workspace_key.clone(), sibling.id.clone()))
                .or_insert_with(|| self.planner.recipe_plan(sibling, &workspace.state, &workspace.repo));
            let Some(sibling_plan) = cached.clone() else { continue };
            let decided = self.decide(sibling, Ok(&sibling_plan), workspace).await?;
            if decided.decision.kind != DecisionKind::Reconcile || !decided.held.is_empty() {
                continue;
            }
            let mut addresses = Vec::new();
            for change in decided.plan.changes {
                let known = plan.changes.iter().chain(&plan.alongside).any(|c| c.address == change.address);
                if !known && !change.created && !change.ops.is_empty() {
                    addresses.push(change.address.clone());
                    plan.alongside.push(change);
                }
            }
            if !addresses.is_empty() {
                added.push(session::Sibling { id: sibling.id.clone(), addresses });
            }
        }
        Ok(added)
    }
}

/// The sibling whose delivered edit already made `change_set_id`'s change, with its delivery: as
/// the store keeps it, or taken from `memory` without a store.
async fn covered_by(
    store: Option<&Store>,
    memory: &mut std::collections::HashMap<String, (String, Delivered)>,
    change_set_id: &str,
) -> anyhow::Result<Option<(String, Delivered)>> {
    let Some(store) = store else { return Ok(memory.remove(change_set_id)) };
    let kept = store
        .covered_change_set(change_set_id)
        .await
        .map_err(|e| anyhow::Error::from(e).context("reading the covered change sets from the knowledge base"))?;
    kept.map(|kept| Ok((kept.by_change_set_id.clone(), Delivered::covered(&kept)?))).transpose()
}

/// Remember that `by`'s delivery `done` made the changes of the change sets `ids` too: in the store,
/// or in `memory` without one.
async fn cover(
    store: Option<&Store>,
    memory: &mut std::collections::HashMap<String, (String, Delivered)>,
    ids: &[String],
    by: &str,
    done: &Delivered,
) -> anyhow::Result<()> {
    match store {
        Some(_) if ids.is_empty() => Ok(()),
        Some(store) => {
            let covered: Vec<_> = ids.iter().map(|id| done.covering(id, by)).collect();
            store
                .record_covered(&covered)
                .await
                .map_err(|e| anyhow::Error::from(e).context("recording the covered change sets in the knowledge base"))
        }
        None => {
            for id in ids {
                memory.insert(id.clone(), (by.to_string(), done.clone()));
            }
            Ok(())
        }
    }
}
