//! `driftback serve`: the daemon on the EventBridge -> SQS feed (and an organisation trail's log
//! files, announced on the same or another queue by S3 notifications: `[feed] carries`).
//!
//! Messages are recorded in the knowledge base (events deduplicated by eventID, kept events in
//! pending change sets) before they are deleted; a reconcile loop claims change sets whose quiet
//! window has passed and commits each on its own branch of the infrastructure repository, fetched
//! to the latest base first. `/healthz`, `/readyz` and `/metrics` tell operators how it goes.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Args as ClapArgs;

use driftback_events::ChangeSet;
use driftback_feed::{
    Backfill, Ledger, QuietWindow, Reconcile, ReconcileError, Reconciled, ReconcilerConfig, Shutdown, SqsConsumer,
    StoreLedger,
};
use driftback_publish::{Author, PublishError, WorkingClone};
use driftback_store::{Store, StoreError};

use crate::config::{Config, ServeConfig};
use crate::driver::{
    Answered, Answerer, Deliverer, Delivery, Driver, Modules, PersonDecision, Publisher, Stacks, Workspace,
    change_set_from_store, load_catalog, notifier, open_store, routes_to_stacks, webhook_router,
};

#[derive(Debug, ClapArgs)]
pub struct Args {
    /// The operations endpoint's address (overrides [serve] listen), e.g. 0.0.0.0:9464.
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,
}

/// The repository driftback works in, and the knowledge base next to it.
pub struct Site {
    /// driftback's own clone of `repo_url` (fetched, reset and pushed to, locked while the daemon
    /// runs), or a repository mounted in place.
    pub clone: Arc<WorkingClone>,
    pub store: Store,
}

impl Site {
    /// Clone `repo_url` into `workdir` (once) or open `repo_path`, then open the knowledge base.
    pub async fn prepare(config: &Config) -> anyhow::Result<Site> {
        let serve = &config.serve;
        let clone = match (&serve.repo_url, &serve.repo_path) {
            (Some(_), Some(_)) => anyhow::bail!(
                "[serve] has both repo_url and repo_path; give one: repo_url to let driftback keep its own \
                 clone, repo_path for a repository mounted in place"
            ),
            (None, None) => anyhow::bail!(
                "[serve] needs the infrastructure repository: repo_url (cloned into workdir) or repo_path \
                 (a mounted working tree), e.g. DRIFTBACK_SERVE__REPO_URL=https://github.com/acme/infra.git"
            ),
            (Some(url), None) => {
                let access = config.publish.access(url)?;
                WorkingClone::open_or_clone(url, &serve.workdir, &serve.base_branch, &access.credentials)?
            }
            (None, Some(path)) => WorkingClone::mounted(path)?,
        };
        let store = open_store(&config.store, clone.path()).await?;
        Ok(Site { clone: Arc::new(clone), store })
    }

    pub fn window(config: &Config) -> QuietWindow {
        QuietWindow { quiet_secs: config.group.quiet_window_secs, max_age_secs: config.serve.max_change_set_age_secs }
    }

    pub fn ledger(&self, config: &Config) -> StoreLedger {
        StoreLedger::new(self.store.clone(), Self::window(config))
    }

    /// The reconciler, on the runtime this is called from (the reconcile loop enters it once per
    /// change set from a blocking thread).
    pub fn reconciler(&self, config: &Config) -> anyhow::Result<GitReconciler> {
        let runtime = tokio::runtime::Handle::try_current()
            .context("the reconciler needs a tokio runtime to reach the knowledge base")?;
        let mut publish = config.publish.clone();
        publish.base_branch.get_or_insert_with(|| config.serve.base_branch.clone());
        let git = self.clone.repo()?;
        let repo_dir = self.clone.path();
        let publisher = Publisher::from_config(&publish, &git, repo_dir)?;
        if publisher.is_none() {
            tracing::warn!(
                repository = %repo_dir.display(),
                "[publish] mode is none: branches stay in this repository; set DRIFTBACK_PUBLISH__MODE=push \
                 (or pull-request) to push them"
            );
        }
        let author = Author { name: config.publish.author_name.clone(), email: config.publish.author_email.clone() };
        let deliverer =
            Deliverer::new(git, publisher, &config.publish.branch_prefix, author, Some(&config.serve.base_branch))?
                .with_notifier(notifier(&config.notify, &config.publish));
        let catalog = load_catalog(config, repo_dir)?;
        let modules = Arc::new(Modules::new(config)?);
        let stacks = if routes_to_stacks(config, &repo_dir.join(&config.serve.state_path)) {
            tracing::info!(
                configured = config.stack.len(),
                "change sets are routed to the stack and workspace whose state manages their resource"
            );
            Some(tokio::sync::Mutex::new(Stacks::new(config, repo_dir, catalog.clone()).with_modules(modules.clone())))
        } else {
            None
        };
        let driver = Driver::new(config, catalog, Some(self.store.clone()), Delivery::Git(Box::new(deliverer)))?
            .rows_recorded_by_caller()
            .siblings_from_store();
        if let Some(reason) = driver.agent_off_reason() {
            tracing::info!("{reason}; change sets no recipe covers are escalated");
        }
        Ok(GitReconciler {
            runtime,
            driver: tokio::sync::Mutex::new(driver),
            clone: self.clone.clone(),
            config: config.clone(),
            loaded: std::sync::Mutex::new(None),
            stacks,
            store: self.store.clone(),
            modules,
        })
    }
}

pub fn reconciler_config(serve: &ServeConfig) -> ReconcilerConfig {
    let mut config = ReconcilerConfig {
        lease_secs: serve.lease_secs,
        poll_ms: serve.poll_ms,
        max_attempts: serve.max_attempts,
        ..Default::default()
    };
    if let Some(replica) = &serve.replica {
        config.replica = replica.clone();
    }
    config
}

pub async fn run(config: &Config, args: &Args) -> anyhow::Result<()> {
    let metrics = metrics_exporter_prometheus::PrometheusBuilder::new()
        .set_buckets(driftback_feed::metrics::DURATION_BUCKETS)?
        .install_recorder()
        .context("installing the metrics recorder")?;
    driftback_feed::metrics::describe();

    let site = Site::prepare(config).await?;
    let ledger = site.ledger(config);
    let reconciler = Arc::new(site.reconciler(config)?);
    let wake = Arc::new(tokio::sync::Notify::new());
    let consumer = SqsConsumer::new(config.feed.clone()).await?.with_wakeup(wake.clone());
    let shutdown = Shutdown::new();
    listen_for_signals(shutdown.clone())?;

    let probes: Vec<driftback_feed::Probe> = vec![
        ("store", {
            let ledger = ledger.clone();
            Arc::new(move || {
                let ledger = ledger.clone();
                Box::pin(async move { ledger.ping().await.map_err(driftback_feed::ProbeError::from) })
            })
        }),
        ("queue", {
            let consumer = consumer.clone();
            Arc::new(move || {
                let consumer = consumer.clone();
                Box::pin(async move { consumer.probe().await.map_err(driftback_feed::ProbeError::from) })
            })
        }),
    ];
    let listen = args.listen.clone().unwrap_or_else(|| config.serve.listen.clone());
    let mut router = driftback_feed::ops_router(metrics, probes);
    let mut routes = "/healthz /readyz /metrics".to_string();
    let mut webhook = None;
    if config.publish.webhook_secret()?.is_some() {
        let remote = config.publish.remote_url.as_deref().or(config.serve.repo_url.as_deref());
        let answerer: Arc<dyn Answerer> = reconciler.clone();
        let hooks = webhook_router(&config.publish, remote, site.store.clone(), Some(answerer))?;
        match &config.serve.webhook_listen {
            // On a listener of its own: exposed to GitHub while metrics and probes stay inside.
            Some(addr) => {
                let (bound, task) = driftback_feed::serve_ops(addr, hooks, shutdown.clone()).await?;
                tracing::info!(listen = %bound, route = driftback_publish::webhook::WEBHOOK_PATH, "serving the GitHub webhook");
                webhook = Some(task);
            }
            None => {
                router = router.merge(hooks);
                routes.push_str(&format!(" {}", driftback_publish::webhook::WEBHOOK_PATH));
            }
        }
    } else {
        tracing::info!(
            variable = config.publish.webhook_secret_env,
            "no webhook secret (publish.webhook_secret_file or the environment): the GitHub pull request webhook is not served"
        );
    }
    let (bound, ops) = driftback_feed::serve_ops(&listen, router, shutdown.clone()).await?;
    tracing::info!(
        listen = %bound,
        queue = consumer.queue_url(),
        carries = consumer.carries().as_str(),
        repository = %site.clone.path().display(),
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
    if let Some(webhook) = webhook {
        let _ = tokio::time::timeout(Duration::from_secs(2), webhook).await;
    }
    site.store.close().await;
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

/// Reconciles change sets into branches of the repository: the driver, entered once per change
/// set from the reconcile loop's blocking thread.
pub struct GitReconciler {
    runtime: tokio::runtime::Handle,
    /// One change set at a time: the reconcile loop runs them in turn.
    driver: tokio::sync::Mutex<Driver>,
    /// Fetched and reset to the base branch before each change set (when it is driftback's own).
    clone: Arc<WorkingClone>,
    config: Config,
    /// The workspace read at the last base commit: change sets on the same commit reuse its parsed
    /// repository, state and policy (all three are files of that commit) instead of reading and
    /// parsing them again.
    loaded: std::sync::Mutex<Option<(String, Workspace)>>,
    /// In a repository of many root modules: the stacks, their states and the index routing each
    /// change set to the workspace that manages its resource (`None`: one root module and its
    /// state file, `[serve] state_path`).
    stacks: Option<tokio::sync::Mutex<Stacks>>,
    /// Where a person's answer finds the change set it answers, and records the new outcome.
    store: Store,
    /// Module code for registry, git and archive module calls, fetched once per base commit.
    modules: Arc<Modules>,
}

impl GitReconciler {
    /// The workspace at `base`: the one already read when the base has not moved, else read now.
    /// The module code it calls is mounted then too (fetched, or from `.terraform/modules`).
    async fn workspace_at(&self, base: &str) -> anyhow::Result<Workspace> {
        {
            let loaded = self.loaded.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            if let Some((commit, workspace)) = loaded.as_ref() {
                if commit == base {
                    return Ok(workspace.clone());
                }
            }
        }
        let dir = self.clone.path();
        let mut workspace = Workspace::load(&self.config, dir, Some(&dir.join(&self.config.serve.state_path)))?;
        self.modules.attach(&mut workspace, dir).await;
        tracing::debug!(base, "read the repository, its state, its policy and its modules at the base commit");
        let mut loaded = self.loaded.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        *loaded = Some((base.to_string(), workspace.clone()));
        Ok(workspace)
    }

    async fn drive(&self, change_set: &ChangeSet) -> anyhow::Result<Reconciled> {
        let driven = self.drive_with(change_set, None).await?;
        Ok(Reconciled { tokens: driven.outcome.tokens(), record: driven.record })
    }

    /// One change set on the latest base, with a person's answer when there is one.
    async fn drive_with(
        &self,
        change_set: &ChangeSet,
        person: Option<&PersonDecision>,
    ) -> anyhow::Result<crate::driver::Driven> {
        let mut driver = self.driver.lock().await;
        let base = self.clone.refresh()?;
        if let Some(deliverer) = driver.deliverer_mut() {
            deliverer.set_base(base);
        }
        // The repository, its state and its policy as the base commit has them; with stacks, the
        // workspace whose state manages the change set's resource.
        let mut workspace = match &self.stacks {
            Some(stacks) => {
                let mut stacks = stacks.lock().await;
                let refreshed = stacks.refresh(&base.to_string()).await?;
                tracing::debug!(
                    rescanned = refreshed.rescanned,
                    workspaces = refreshed.workspaces,
                    states_read = refreshed.read,
                    indexed = stacks.indexed(),
                    "stacks refreshed"
                );
                stacks.workspace_for(&self.config, change_set).await?
            }
            None => self.workspace_at(&base.to_string()).await?,
        };
        // Earlier change sets' field changes are in the knowledge base: each change set is a run.
        driver.new_run();
        driver.at_code(&base.to_string());
        match person {
            Some(person) => driver.drive_answered(&mut workspace, change_set, person).await,
            None => driver.drive(&mut workspace, change_set).await,
        }
    }

    /// A person's answer: the change set as the knowledge base has it, driven again with their
    /// decision, its new outcome recorded.
    async fn answer_async(&self, change_set_id: &str, person: &PersonDecision) -> anyhow::Result<Answered> {
        let change_set = change_set_from_store(&self.store, change_set_id).await?;
        let driven = self.drive_with(&change_set, Some(person)).await?;
        // The feed completes the rows of the change sets it claims; this one is the answer's.
        self.store.record_change_set(&driven.record).await?;
        Ok(Answered {
            label: driven.label,
            status: driven.outcome.status,
            delivered: driven.delivered,
            notes: driven.outcome.notes,
        })
    }
}

impl Answerer for GitReconciler {
    fn answer(&self, change_set_id: &str, person: PersonDecision) -> anyhow::Result<Answered> {
        self.runtime.block_on(self.answer_async(change_set_id, &person))
    }
}

impl Reconcile for GitReconciler {
    fn reconcile(&self, change_set: &ChangeSet) -> Result<Reconciled, ReconcileError> {
        self.runtime.block_on(self.drive(change_set)).map_err(|e| classify(&e))
    }
}

/// Whether trying a change set again can help, by the type of what failed: the knowledge base or
/// git said so themselves (a store refusing a value it will always refuse, a corrupt object); any
/// other failure (the repository's state or policy unreadable, a network call) is retried, so a
/// person's fix is picked up.
fn classify(error: &anyhow::Error) -> ReconcileError {
    let transient = error
        .chain()
        .find_map(|cause| {
            (cause.downcast_ref::<StoreError>().map(StoreError::is_transient))
                .or_else(|| cause.downcast_ref::<PublishError>().map(PublishError::is_transient))
        })
        .unwrap_or(true);
    ReconcileError { transient, message: format!("{error:#}") }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::{Path, PathBuf};

    #[test]
    fn failures_are_retried_unless_the_store_or_git_says_retrying_cannot_help() {
        let refused = anyhow::Error::from(StoreError::Data("a value the store will always refuse".into()))
            .context("recording the decision and field changes in the knowledge base");
        let verdict = classify(&refused);
        assert!(!verdict.transient, "{verdict:?}");
        assert!(verdict.message.contains("always refuse"), "the cause is kept: {verdict:?}");
        let unreachable = anyhow::Error::from(StoreError::Unavailable {
            target: "postgres://db".into(),
            attempts: 3,
            waited: Duration::from_secs(1),
            source: sqlx::Error::PoolTimedOut,
        });
        assert!(classify(&unreachable).transient);
        // Anything else (a state file being fixed, a policy being edited) is tried again.
        assert!(classify(&anyhow::anyhow!("cannot read the Terraform state")).transient);
        // Failures that would hit every change set alike are retried (within [serve] max_attempts):
        // an expired token, a full disk.
        let expired = anyhow::Error::from(PublishError::Auth {
            url: "https://github.com/acme/infra.git".into(),
            message: "401 Bad credentials".into(),
            configure: "check the token".into(),
        })
        .context("pushing driftback/abc");
        assert!(classify(&expired).transient);
        let full = anyhow::Error::from(PublishError::Io {
            action: "writing",
            path: "work/main.tf".into(),
            source: std::io::Error::from(std::io::ErrorKind::StorageFull),
        });
        assert!(classify(&full).transient);
        // A change that conflicts with the base needs a new plan.
        let conflict = anyhow::Error::from(PublishError::RebaseConflict {
            branch: "driftback/abc".into(),
            onto: "main".into(),
            paths: "main.tf".into(),
        });
        assert!(!classify(&conflict).transient);
    }
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
        let site = runtime.block_on(Site::prepare(&config)).unwrap();
        let reconciler = site.reconciler(&config).unwrap();
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
