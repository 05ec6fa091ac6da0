//! `driftback serve`: the daemon on the EventBridge -> SQS feed.
//!
//! Messages are recorded in the knowledge base (events deduplicated by eventID, kept events in
//! pending change sets) before they are deleted; a reconcile loop claims change sets whose quiet
//! window has passed and commits each on its own branch of the infrastructure repository, fetched
//! to the latest base first. `/healthz`, `/readyz` and `/metrics` tell operators how it goes.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Args as ClapArgs;
use git2::{BranchType, Repository};

use driftback_events::ChangeSet;
use driftback_feed::{
    Backfill, Ledger, QuietWindow, Reconcile, Reconciled, ReconcilerConfig, Shutdown, SqsConsumer, StoreLedger,
};
use driftback_publish::{Author, GitRepo, branch_name};
use driftback_recipes::Catalog;
use driftback_store::{CHANGE_SET_STATUSES, Store};
use driftback_terraform::{Repo, State};

use crate::agent_glue::{AgentStage, Knowledge};
use crate::config::{Config, ServeConfig};
use crate::delivery::Delivery;
use crate::kb_store::StoreKnowledgeBase;
use crate::pipeline::Status;
use crate::publishing::Publisher;
use crate::reconcile::{change_set_record, load_catalog};

/// The trailer (written by `driftback_publish::message`) that ties a commit to its change set, so a
/// restarted daemon finds work it had already committed and does not commit it twice.
const CHANGE_SET_TRAILER: &str = "Drift-Change-Set";

#[derive(Debug, ClapArgs)]
pub struct Args {
    /// The operations endpoint's address (overrides [serve] listen), e.g. 0.0.0.0:9464.
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,
}

pub fn run(config: &Config, args: &Args) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let result = runtime.block_on(serve(config, args));
    // A reconciliation still running past the shutdown deadline is not waited for: its change set
    // is taken up again when its lease ends.
    runtime.shutdown_timeout(Duration::from_secs(1));
    result
}

/// The repository driftback works in, and the knowledge base next to it.
pub struct Workspace {
    pub repo_dir: PathBuf,
    /// `true` for driftback's own clone of `repo_url`: fetched, reset and pushed to.
    pub owned_clone: bool,
    pub store: Store,
    /// Held while the daemon runs: the working clone is this process's alone.
    _clone_lock: Option<std::fs::File>,
}

impl Workspace {
    /// Clone `repo_url` into `workdir` (once) or open `repo_path`, then open the knowledge base.
    pub async fn prepare(config: &Config) -> anyhow::Result<Workspace> {
        let serve = &config.serve;
        let (repo_dir, owned_clone) = match (&serve.repo_url, &serve.repo_path) {
            (Some(_), Some(_)) => anyhow::bail!(
                "[serve] has both repo_url and repo_path; give one: repo_url to let driftback keep its own \
                 clone, repo_path for a repository mounted in place"
            ),
            (None, None) => anyhow::bail!(
                "[serve] needs the infrastructure repository: repo_url (cloned into workdir) or repo_path \
                 (a mounted working tree), e.g. DRIFTBACK_SERVE__REPO_URL=https://github.com/acme/infra.git"
            ),
            (Some(url), None) => {
                let dir = serve.workdir.clone();
                clone_once(url, &dir, &serve.base_branch)?;
                (dir, true)
            }
            (None, Some(path)) => {
                GitRepo::open_clean(path)?;
                (path.clone(), false)
            }
        };
        let clone_lock = if owned_clone { Some(take_clone(&repo_dir)?) } else { None };
        let store = crate::kb::open_store(&config.store, &repo_dir).await?;
        Ok(Workspace { repo_dir, owned_clone, store, _clone_lock: clone_lock })
    }

    pub fn window(config: &Config) -> QuietWindow {
        QuietWindow { quiet_secs: config.group.quiet_window_secs, max_age_secs: config.serve.max_change_set_age_secs }
    }

    pub fn ledger(&self, config: &Config) -> StoreLedger {
        StoreLedger::new(self.store.clone(), Self::window(config))
    }

    /// The reconciler, on the runtime this is called from (it reads and writes the knowledge base
    /// from its blocking thread through that runtime).
    pub fn reconciler(&self, config: &Config) -> anyhow::Result<GitReconciler> {
        let runtime = tokio::runtime::Handle::try_current()
            .context("the reconciler needs a tokio runtime to reach the knowledge base")?;
        let mut publish = config.publish.clone();
        publish.base_branch.get_or_insert_with(|| config.serve.base_branch.clone());
        let git = GitRepo::open_clean(&self.repo_dir)?;
        let publisher = Publisher::from_config(&publish, &git, &self.repo_dir)?;
        if publisher.is_none() {
            tracing::warn!(
                repository = %self.repo_dir.display(),
                "[publish] mode is none: branches stay in this repository; set DRIFTBACK_PUBLISH__MODE=push \
                 (or pull-request) to push them"
            );
        }
        let catalog = load_catalog(config, &self.repo_dir)?;
        let (embedder, spec) = crate::kb::embedder(&config.embed)?;
        let knowledge = Knowledge::Store(StoreKnowledgeBase::new(self.store.clone(), embedder, spec));
        let agent = AgentStage::new(runtime.clone(), &config.agent, catalog.clone(), knowledge)?;
        if let Some(reason) = agent.off_reason() {
            tracing::info!("{reason}; change sets no recipe covers are escalated");
        }
        Ok(GitReconciler {
            runtime,
            store: self.store.clone(),
            publisher,
            agent: std::sync::Mutex::new(agent),
            repo_dir: self.repo_dir.clone(),
            owned_clone: self.owned_clone,
            catalog,
            config: config.clone(),
            serve: config.serve.clone(),
            branch_prefix: config.publish.branch_prefix.clone(),
            author: Author { name: config.publish.author_name.clone(), email: config.publish.author_email.clone() },
        })
    }
}

pub fn reconciler_config(serve: &ServeConfig) -> ReconcilerConfig {
    let mut config = ReconcilerConfig { lease_secs: serve.lease_secs, poll_ms: serve.poll_ms, ..Default::default() };
    if let Some(replica) = &serve.replica {
        config.replica = replica.clone();
    }
    config
}

async fn serve(config: &Config, args: &Args) -> anyhow::Result<()> {
    let metrics = metrics_exporter_prometheus::PrometheusBuilder::new()
        .set_buckets(driftback_feed::metrics::DURATION_BUCKETS)?
        .install_recorder()
        .context("installing the metrics recorder")?;
    driftback_feed::metrics::describe();

    let workspace = Workspace::prepare(config).await?;
    let ledger = workspace.ledger(config);
    let reconciler = Arc::new(workspace.reconciler(config)?);
    let wake = Arc::new(tokio::sync::Notify::new());
    let consumer = SqsConsumer::new(config.feed.clone()).await?.with_wakeup(wake.clone());
    let shutdown = Shutdown::new();
    listen_for_signals(shutdown.clone())?;

    let probes: Vec<driftback_feed::Probe> = vec![
        ("store", {
            let ledger = ledger.clone();
            Arc::new(move || {
                let ledger = ledger.clone();
                Box::pin(async move { ledger.ping().await.map_err(|e| e.to_string()) })
            })
        }),
        ("queue", {
            let consumer = consumer.clone();
            Arc::new(move || {
                let consumer = consumer.clone();
                Box::pin(async move { consumer.probe().await.map_err(|e| e.to_string()) })
            })
        }),
    ];
    let listen = args.listen.clone().unwrap_or_else(|| config.serve.listen.clone());
    let mut router = driftback_feed::ops_router(metrics, probes);
    let mut routes = "/healthz /readyz /metrics".to_string();
    if std::env::var_os(&config.publish.webhook_secret_env).is_some_and(|v| !v.is_empty()) {
        router = router.merge(crate::publishing::webhook_router(&config.publish, workspace.store.clone())?);
        routes.push_str(&format!(" {}", driftback_publish::webhook::WEBHOOK_PATH));
    } else {
        tracing::info!(
            variable = config.publish.webhook_secret_env,
            "no webhook secret in the environment: the GitHub pull request webhook is not served"
        );
    }
    let (bound, ops) = driftback_feed::serve_ops(&listen, router, shutdown.clone()).await?;
    tracing::info!(
        listen = %bound,
        queue = consumer.queue_url(),
        repository = %workspace.repo_dir.display(),
        routes,
        "serving"
    );

    if config.backfill.on_start {
        backfill_gap(config, &ledger, &shutdown).await;
    }

    let mut tasks = tokio::task::JoinSet::new();
    tasks.spawn({
        let (consumer, ledger, filter, shutdown) =
            (consumer.clone(), ledger.clone(), config.filter.clone(), shutdown.clone());
        async move { consumer.run(ledger, filter, shutdown).await.map_err(anyhow::Error::from) }
    });
    tasks.spawn({
        let (ledger, shutdown) = (ledger.clone(), shutdown.clone());
        let reconcile_config = reconciler_config(&config.serve);
        async move {
            driftback_feed::run_reconciler(ledger, reconciler, reconcile_config, wake, shutdown)
                .await
                .map_err(anyhow::Error::from)
        }
    });
    tasks.spawn(advance_checkpoint_while_running(config.clone(), ledger.clone(), shutdown.clone()));

    // Run until a signal, or until a task fails for good.
    let mut failure = None;
    tokio::select! {
        _ = shutdown.wait() => {}
        Some(done) = tasks.join_next() => {
            failure = task_failure(done);
            shutdown.trigger();
        }
    }
    let deadline = Duration::from_secs(config.serve.shutdown_deadline_secs);
    tracing::info!(deadline_secs = deadline.as_secs(), "shutting down: no new work; finishing what is in hand");
    let finished = tokio::time::timeout(deadline, async {
        while let Some(done) = tasks.join_next().await {
            if let Some(e) = task_failure(done) {
                failure.get_or_insert(e);
            }
        }
    })
    .await;
    if finished.is_err() {
        tracing::warn!(
            deadline_secs = deadline.as_secs(),
            "deadline passed with work in hand: undeleted messages reappear on the queue, claimed change sets \
             are taken up again when their lease ends"
        );
    }
    let _ = tokio::time::timeout(Duration::from_secs(2), ops).await;
    workspace.store.close().await;
    match failure {
        Some(e) => Err(e),
        None => {
            tracing::info!("stopped");
            Ok(())
        }
    }
}

fn task_failure(done: Result<anyhow::Result<()>, tokio::task::JoinError>) -> Option<anyhow::Error> {
    match done {
        Ok(Ok(())) => None,
        Ok(Err(e)) => Some(e),
        Err(e) => Some(anyhow::anyhow!("a task panicked: {e}")),
    }
}

fn listen_for_signals(shutdown: Shutdown) -> anyhow::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).context("listening for SIGTERM")?;
    let mut int = signal(SignalKind::interrupt()).context("listening for SIGINT")?;
    tokio::spawn(async move {
        let name = tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
        };
        tracing::info!(signal = name, "shutdown requested");
        shutdown.trigger();
    });
    Ok(())
}

/// At start-up: backfill from the last checkpoint to now, so the time the daemon was down is
/// covered. Without a checkpoint (first start) there is nothing to catch up on. A failure is logged,
/// not fatal: the queue still works.
async fn backfill_gap(config: &Config, ledger: &StoreLedger, shutdown: &Shutdown) {
    let result = async {
        let backfill = Backfill::new(config.backfill.clone()).await?;
        let Some(since) = ledger.checkpoint(&backfill.checkpoint_name()).await? else {
            tracing::info!(region = backfill.region(), "no CloudTrail checkpoint yet: nothing to backfill");
            return Ok::<_, driftback_feed::FeedError>(());
        };
        let now = chrono::Utc::now();
        let oldest = now - chrono::Duration::days(driftback_feed::LOOKUP_EVENTS_MAX_AGE_DAYS);
        let since = since.max(oldest);
        tracing::info!(since = %since.to_rfc3339(), region = backfill.region(), "backfilling from the checkpoint");
        let report = backfill.run(ledger, &config.filter, since..now, shutdown, |_| {}).await?;
        tracing::info!(pages = report.pages, events = report.events, new = report.new_events, "backfill done");
        Ok(())
    }
    .await;
    if let Err(e) = result {
        tracing::warn!(error = %e, "start-up backfill failed; the queue is consumed anyway");
    }
}

/// While the feed runs, move the CloudTrail checkpoint to "now minus the delivery margin".
async fn advance_checkpoint_while_running(
    config: Config,
    ledger: StoreLedger,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    let region = match &config.backfill.region {
        Some(region) => region.clone(),
        None => match std::env::var("AWS_REGION").or_else(|_| std::env::var("AWS_DEFAULT_REGION")) {
            Ok(region) => region,
            Err(_) => return Ok(()),
        },
    };
    let name = driftback_feed::checkpoint_name(&region);
    let every = Duration::from_secs(config.serve.checkpoint_interval_secs.max(1));
    let margin = chrono::Duration::seconds(config.serve.checkpoint_margin_secs as i64);
    loop {
        tokio::select! {
            _ = shutdown.wait() => return Ok(()),
            _ = tokio::time::sleep(every) => {}
        }
        if let Err(e) = ledger.advance_checkpoint(&name, chrono::Utc::now() - margin).await {
            tracing::warn!(error = %e, "could not move the CloudTrail checkpoint");
        }
    }
}

/// Clone `url` into `dir` unless `dir` already holds the clone.
fn clone_once(url: &str, dir: &Path, base_branch: &str) -> anyhow::Result<()> {
    if dir.join(".git").exists() {
        let repo = Repository::open(dir).with_context(|| format!("opening the working clone {}", dir.display()))?;
        let origin = repo.find_remote("origin").ok().and_then(|r| r.url().ok().map(str::to_string));
        anyhow::ensure!(
            origin.as_deref() == Some(url),
            "{} is a clone of {}, not of {url}; point [serve] workdir at an empty directory",
            dir.display(),
            origin.unwrap_or_else(|| "nothing".into())
        );
        return Ok(());
    }
    if dir.exists() && std::fs::read_dir(dir)?.next().is_some() {
        anyhow::bail!("[serve] workdir {} is not empty and not a clone; give an empty or new directory", dir.display());
    }
    tracing::info!(url, dir = %dir.display(), "cloning the infrastructure repository");
    git2::build::RepoBuilder::new()
        .branch(base_branch)
        .clone(url, dir)
        .with_context(|| format!("cloning {url} (branch {base_branch}) into {}", dir.display()))?;
    Ok(())
}

/// Take the working clone for this process (an exclusive lock held while it runs), then clear the
/// git lock files a predecessor killed in the middle of a git operation left behind: with the clone
/// ours alone, nothing else can be holding them, and git refuses to work while they exist.
fn take_clone(dir: &Path) -> anyhow::Result<std::fs::File> {
    let git_dir = dir.join(".git");
    let path = git_dir.join("driftback-serve.lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .with_context(|| format!("creating {}", path.display()))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => anyhow::bail!(
            "another driftback serve is using the working clone {}; give each replica its own [serve] workdir",
            dir.display()
        ),
        Err(std::fs::TryLockError::Error(e)) => {
            return Err(e).with_context(|| format!("locking {}", path.display()));
        }
    }
    let mut stale = Vec::new();
    for name in ["index.lock", "HEAD.lock", "ORIG_HEAD.lock", "config.lock", "packed-refs.lock"] {
        stale.push(git_dir.join(name));
    }
    let mut dirs = vec![git_dir.join("refs")];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = entry.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|e| e == "lock") {
                stale.push(p);
            }
        }
    }
    for lock in stale.into_iter().filter(|p| p.exists()) {
        tracing::warn!(lock = %lock.display(), "removing a git lock left by a driftback that stopped mid-operation");
        std::fs::remove_file(&lock).with_context(|| format!("removing the stale git lock {}", lock.display()))?;
    }
    Ok(file)
}

/// Reconciles change sets into branches of the repository (runs on a blocking thread).
pub struct GitReconciler {
    /// For the knowledge base (ownership history before deciding, audit log and ledger after).
    runtime: tokio::runtime::Handle,
    store: Store,
    /// `[publish] mode`: push, and open one pull request per resource; `None` keeps branches local.
    publisher: Option<Publisher>,
    /// The pipeline with the LLM agent as the fallback for what no recipe covers, as in
    /// `driftback reconcile` (one change set at a time: the reconcile loop runs them in turn).
    agent: std::sync::Mutex<AgentStage>,
    config: Config,
    repo_dir: PathBuf,
    owned_clone: bool,
    catalog: Catalog,
    serve: ServeConfig,
    branch_prefix: String,
    author: Author,
}

impl GitReconciler {
    /// Fetch the base branch and reset the clone to it; returns the base commit.
    fn refresh(&self) -> Result<git2::Oid, String> {
        let repo = Repository::open(&self.repo_dir).map_err(|e| format!("opening {}: {e}", self.repo_dir.display()))?;
        if !self.owned_clone {
            return GitRepo::open_clean(&self.repo_dir).and_then(|g| g.head_commit()).map_err(|e| e.to_string());
        }
        let base = &self.serve.base_branch;
        let mut origin = repo.find_remote("origin").map_err(|e| format!("the clone has no origin: {e}"))?;
        origin
            .fetch(&[format!("+refs/heads/{base}:refs/remotes/origin/{base}")], None, None)
            .map_err(|e| format!("fetching {base} from origin: {e}"))?;
        let tip = repo
            .refname_to_id(&format!("refs/remotes/origin/{base}"))
            .map_err(|e| format!("origin has no branch {base}: {e}"))?;
        let object = repo.find_object(tip, None).map_err(|e| e.to_string())?;
        repo.reset(&object, git2::ResetType::Hard, None).map_err(|e| format!("resetting the clone to {base}: {e}"))?;
        Ok(tip)
    }

    /// A branch already holding this change set's commit (from before a crash), if any.
    fn already_committed(&self, repo: &Repository, branch: &str, change_set: &str) -> Option<(String, git2::Oid)> {
        let trailer = format!("{CHANGE_SET_TRAILER}: {change_set}");
        let candidates = [(branch.to_string(), BranchType::Local), (format!("origin/{branch}"), BranchType::Remote)];
        for (name, kind) in candidates {
            if let Ok(found) = repo.find_branch(&name, kind) {
                if let Ok(commit) = found.get().peel_to_commit() {
                    if commit.message().unwrap_or_default().lines().any(|l| l == trailer) {
                        return Some((branch.to_string(), commit.id()));
                    }
                }
            }
        }
        None
    }
}

impl Reconcile for GitReconciler {
    fn reconcile(&self, change_set: &ChangeSet) -> Result<Reconciled, String> {
        let base = self.refresh()?;
        let state_path = self.repo_dir.join(&self.serve.state_path);
        let state_text = std::fs::read_to_string(&state_path)
            .map_err(|e| format!("cannot read the Terraform state {}: {e}", state_path.display()))?;
        let state = State::parse(&state_text, &state_path.display().to_string()).map_err(|e| e.to_string())?;
        let repo = Repo::load(&self.repo_dir).map_err(|e| e.to_string())?;
        // The policy lives in the repository: read it from the commit being built on.
        let policy = crate::policy_cmd::load_policy(&self.config, &self.repo_dir).map_err(|e| format!("{e:#}"))?;
        // Earlier changes of the same fields, for oscillation detection, as `driftback reconcile` does.
        let history = self
            .runtime
            .block_on(crate::ownership::load_history(
                &self.store,
                &self.catalog,
                &state,
                &repo,
                &policy,
                std::slice::from_ref(change_set),
            ))
            .map_err(|e| format!("reading the ownership history from the knowledge base: {e:#}"))?;
        let outcome = self
            .agent
            .lock()
            .map_err(|_| "an earlier reconciliation panicked with the agent in hand; restart driftback".to_string())?
            .process(&state, &repo, change_set, &policy, &history);
        let label = outcome
            .addresses
            .first()
            .cloned()
            .or_else(|| change_set.resource_id.clone())
            .unwrap_or_else(|| change_set.id.clone());
        let mut record = change_set_record(change_set, &outcome);
        if !CHANGE_SET_STATUSES.contains(&record.status.as_str()) {
            // The knowledge base has no `revert` status yet: it is escalated, with the reason kept.
            record.rationale = Some(format!("{}: {}", record.status, record.rationale.unwrap_or_default()));
            record.status = "escalated".into();
        }
        if outcome.status == Status::Reconciled {
            let git = GitRepo::open_clean(&self.repo_dir).map_err(|e| e.to_string())?;
            let raw = Repository::open(&self.repo_dir).map_err(|e| e.to_string())?;
            let wanted = branch_name(&self.branch_prefix, &label, &change_set.id);
            let committed = match self.already_committed(&raw, &wanted, &change_set.id) {
                Some((branch, commit)) => {
                    tracing::info!(change_set = change_set.id, branch, "already committed before a restart");
                    if raw.find_branch(&branch, BranchType::Local).is_err() {
                        let found = raw.find_commit(commit).map_err(|e| e.to_string())?;
                        raw.branch(&branch, &found, false).map_err(|e| e.to_string())?;
                    }
                    Some(commit)
                }
                None => None,
            };
            let delivery = Delivery {
                runtime: &self.runtime,
                git: &git,
                store: Some(&self.store),
                publisher: self.publisher.as_ref(),
                catalog: &self.catalog,
                state: &state,
                policy: &policy,
                ledger: &history,
                branch_prefix: &self.branch_prefix,
                author: &self.author,
                base,
                base_branch: &self.serve.base_branch,
            };
            let delivered = delivery.deliver(change_set, &outcome, &label, committed).map_err(|e| format!("{e:#}"))?;
            record.branch = Some(delivered.branch.clone());
            record.commit_id = Some(delivered.commit.to_string());
            record.diff = delivered.diff.clone();
            record.notes.extend(delivered.note());
        }
        // The decision with its evidence goes to the audit log, the field changes to the ownership
        // ledger; the change set row (recorded by the feed on completion) then carries no decision,
        // so it is not logged a second time without evidence.
        self.runtime
            .block_on(crate::ownership::record(&self.store, change_set, &outcome))
            .map_err(|e| format!("recording the decision and field changes in the knowledge base: {e:#}"))?;
        record.decision = None;
        self.runtime
            .block_on(crate::agent_glue::record_agent_work(&self.store, change_set, &outcome, &record))
            .map_err(|e| format!("recording the agent's work in the knowledge base: {e:#}"))?;
        let tokens = outcome.agent.as_ref().map(|a| a.usage.total()).unwrap_or(0);
        Ok(Reconciled { record, tokens })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn git(dir: &Path, args: &[&str]) -> String {
        let out = Command::new("git").arg("-C").arg(dir).args(args).output().expect("git runs");
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    }

    /// A bare remote with the demo project, and a working repository to push new base commits from.
    fn remote(root: &Path) -> (PathBuf, PathBuf) {
        let src = root.join("src");
        std::fs::create_dir_all(&src).unwrap();
        let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("demo/project");
        for name in ["main.tf", "terraform.tfstate"] {
            std::fs::copy(demo.join(name), src.join(name)).unwrap();
        }
        git(&src, &["init", "-q", "-b", "main"]);
        git(&src, &["add", "."]);
        git(&src, &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "init"]);
        let bare = root.join("remote.git");
        let out = Command::new("git").args(["clone", "-q", "--bare"]).arg(&src).arg(&bare).output().unwrap();
        assert!(out.status.success());
        git(&src, &["remote", "add", "origin", bare.to_str().unwrap()]);
        (bare, src)
    }

    fn change_sets() -> Vec<ChangeSet> {
        let batch =
            driftback_events::read_file(&Path::new(env!("CARGO_MANIFEST_DIR")).join("demo/events.json")).unwrap();
        let kept: Vec<_> = batch
            .events
            .into_iter()
            .map(|(e, _)| e)
            .filter(|e| driftback_events::classify(e, &Default::default()) == driftback_events::Disposition::Keep)
            .collect();
        driftback_events::group(kept, &Default::default())
    }

    #[test]
    fn a_change_set_committed_before_a_crash_is_not_committed_again_and_branches_start_from_the_latest_base() {
        let root = tempfile::tempdir().unwrap();
        let (bare, src) = remote(root.path());
        let mut config = Config::default();
        config.serve.repo_url = Some(bare.display().to_string());
        config.serve.workdir = root.path().join("work");
        config.publish.mode = crate::config::PublishMode::Push;
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        let _entered = runtime.enter();
        let workspace = runtime.block_on(Workspace::prepare(&config)).unwrap();
        let reconciler = workspace.reconciler(&config).unwrap();
        let sets = change_sets();
        let web = sets.iter().find(|s| s.events.iter().any(|e| e.name == "ModifyInstanceAttribute")).unwrap();

        let first = reconciler.reconcile(web).unwrap().record;
        // The daemon died before recording the outcome: the change set is claimed and reconciled again.
        let again = reconciler.reconcile(web).unwrap().record;
        assert_eq!(first.status, "reconciled");
        assert_eq!((again.branch.clone(), again.commit_id.clone()), (first.branch.clone(), first.commit_id.clone()));
        let branches = git(&bare, &["for-each-ref", "--format=%(refname:short)", "refs/heads/driftback/"]);
        assert_eq!(branches.lines().count(), 1, "{branches}");
        let branch = first.branch.unwrap();
        assert!(git(&bare, &["log", "-1", "--format=%B", &branch]).contains(&format!("Drift-Change-Set: {}", web.id)));

        // Someone merges into main: the next change set's branch starts from the new tip.
        std::fs::write(src.join("README.md"), "infra\n").unwrap();
        git(&src, &["add", "README.md"]);
        git(&src, &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "docs"]);
        git(&src, &["push", "-q", "origin", "main"]);
        let tip = git(&bare, &["rev-parse", "main"]);
        let other = sets
            .iter()
            .filter(|s| s.id != web.id)
            .map(|s| reconciler.reconcile(s).unwrap().record)
            .find(|r| r.status == "reconciled")
            .expect("another reconciled change set");
        let parent = git(&bare, &["rev-parse", &format!("{}^", other.branch.unwrap())]);
        assert_eq!(parent, tip);
    }
}
