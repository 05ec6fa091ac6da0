//! A repository of many root modules: which stack and workspace a change set belongs to, and the
//! [`Workspace`] (that root module with the workspace's variable files, and its state) it is
//! reconciled against.
//!
//! The stacks are discovered once per base commit. Every workspace's state is indexed by the
//! identities of its resources; before each change set each state is probed (an S3 HEAD, a file's
//! size and time) and read again only when its version moved, so a change set costs what changed,
//! not the repository. A resource two stacks manage is never guessed: the change set goes to a
//! person, naming both.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, bail};

use driftback_events::ChangeSet;
use driftback_recipes::Catalog;
use driftback_stacks::discover::inferred_workspace;
use driftback_stacks::{
    Discovery, Index, Location, Lookup, Placement, Query, Readers, Stack, StackConfig, StateRead, StateReader, Tree,
    discover, locate, provider_placements, scan_again, usual_account,
};

use super::modules::Modules;
use super::outcome::Scope;
use super::workspace::{Workspace, load_policy};
use crate::config::Config;

/// Where a change set goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// The workspace whose state manages its resource.
    Managed { stack: String, workspace: String },
    /// No state manages it; this workspace is the one place it fits (its account and region, and
    /// resources of the kind it manages there): a new resource is adopted there.
    Adopt { stack: String, workspace: String, why: String },
    /// Nowhere that can be told without guessing: why, for the person who decides.
    Nowhere(String),
}

/// One workspace's state as last read, and the workspace built on it at the current base.
struct Held {
    location: Location,
    /// What the probe said of the version read (`None`: the backend has no cheap probe).
    probe: Option<String>,
    read: Arc<StateRead>,
    built: Option<Workspace>,
}

/// The stacks of the repository at one base commit, their states and the index over them.
pub struct Stacks {
    dir: PathBuf,
    configured: Vec<StackConfig>,
    readers: Readers,
    catalog: Catalog,
    base: Option<String>,
    tree: Tree,
    found: Discovery,
    held: BTreeMap<(String, String), Held>,
    /// Workspaces whose state could not be read at the last refresh, with why.
    unreadable: BTreeMap<(String, String), String>,
    index: Index,
    /// Where each workspace's provider configurations point, as it was indexed with them.
    placed: BTreeMap<(String, String), Placed>,
    /// Module code for each stack's registry, git and archive module calls, mounted once per
    /// built workspace (`None`: not mounted).
    modules: Option<Arc<Modules>>,
}

/// Where one workspace's provider configurations point, and the account most of its state's ARNs
/// name (for a provider that names none): where it can make a new resource.
struct Placed {
    providers: BTreeMap<String, Placement>,
    usual_account: Option<String>,
}

impl Placed {
    fn points_at(&self, account: &str, region: &str) -> bool {
        self.providers.values().any(|p| {
            p.account.as_ref().or(self.usual_account.as_ref()).is_some_and(|a| a == account)
                && p.region.as_deref() == Some(region)
        })
    }
}

/// What a refresh did, for the log and benchmarks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Refreshed {
    pub rescanned: bool,
    pub workspaces: usize,
    /// States read again because their version moved (or could not be probed).
    pub read: usize,
}

/// Whether a repository is read as stacks (root modules with their own states, found by discovery
/// and `[[stack]]`) rather than as one root module with the state file `state_file`: when the
/// configuration names stacks, or when there is no such file (a repository whose states live in
/// backends or beside each root module). `serve` and `reconcile` decide alike.
pub fn routes_to_stacks(config: &Config, state_file: &Path) -> bool {
    !config.stack.is_empty() || !state_file.is_file()
}

impl Stacks {
    /// The stacks of the repository checked out in `dir`, as discovery and `[[stack]]` say.
    pub fn new(config: &Config, dir: &Path, catalog: Catalog) -> Stacks {
        Stacks {
            dir: dir.to_path_buf(),
            configured: config.stack.clone(),
            readers: Readers::new(dir),
            catalog,
            base: None,
            tree: Tree::default(),
            found: Discovery::default(),
            held: BTreeMap::new(),
            unreadable: BTreeMap::new(),
            index: Index::new(),
            placed: BTreeMap::new(),
            modules: None,
        }
    }

    /// Mount each stack's module code with `modules` when its workspace is built.
    pub fn with_modules(mut self, modules: Arc<Modules>) -> Stacks {
        self.modules = Some(modules);
        self
    }

    /// Bring the stacks and states up to the repository at `base`: discovered again when the base
    /// moved, each state probed and read again when its version moved. A state that cannot be
    /// read is left out (and named when a change set might have been its); a backend that does
    /// not answer stops the refresh so the change set is tried again.
    pub async fn refresh(&mut self, base: &str) -> anyhow::Result<Refreshed> {
        let mut done = Refreshed::default();
        if self.base.as_deref() != Some(base) {
            self.rescan().await?;
            self.base = Some(base.to_string());
            done.rescanned = true;
        }
        let mut wanted: Vec<(String, String, Location)> = Vec::new();
        for stack in &self.found.stacks {
            for ws in &stack.workspaces {
                match locate(stack, &ws.name) {
                    Ok(location) => wanted.push((stack.name.clone(), ws.name.clone(), location)),
                    Err(e) => {
                        self.unreadable.insert((stack.name.clone(), ws.name.clone()), e.to_string());
                    }
                }
            }
        }
        done.workspaces = wanted.len();
        let held = &self.held;
        let readers = &self.readers;
        let reads = futures::future::join_all(wanted.into_iter().map(|(stack, ws, location)| async move {
            let key = (stack, ws);
            let probe = readers.probe(&location).await;
            let current = held.get(&key).filter(|h| h.location == location);
            if let (Ok(Some(now)), Some(h)) = (&probe, current) {
                if h.probe.as_deref() == Some(now.as_str()) {
                    return (key, None);
                }
            }
            let read = readers.read(&location).await;
            (key, Some((location, probe.ok().flatten(), read)))
        }))
        .await;
        let mut keep: BTreeSet<(String, String)> = BTreeSet::new();
        for (key, read) in reads {
            keep.insert(key.clone());
            let Some((location, probe, read)) = read else {
                continue;
            };
            match read {
                Ok(read) => {
                    done.read += 1;
                    self.unreadable.remove(&key);
                    let read = Arc::new(read);
                    if let Some(providers) = self.providers_of(&key) {
                        self.index_workspace(&key, &read, providers);
                    }
                    self.held.insert(key, Held { location, probe, read, built: None });
                }
                Err(e) if e.is_transient() => {
                    return Err(e)
                        .with_context(|| format!("reading the state of stack {}, workspace {}", key.0, key.1));
                }
                Err(e) => {
                    tracing::warn!(stack = key.0, workspace = key.1, error = %e, "a state cannot be read; its resources are not routed");
                    self.unreadable.insert(key.clone(), e.to_string());
                    self.forget(&key);
                }
            }
        }
        let gone: Vec<(String, String)> = self.held.keys().filter(|k| !keep.contains(*k)).cloned().collect();
        for key in gone {
            self.forget(&key);
        }
        Ok(done)
    }

    /// Discover the stacks again (the code moved): workspaces the configuration does not list are
    /// asked of the backend; every held state is indexed again with the new provider placements,
    /// and every workspace is built again from the new code.
    async fn rescan(&mut self) -> anyhow::Result<()> {
        let (dir, configured) = (self.dir.clone(), self.configured.clone());
        // Files whose text did not change keep their parse (an emptied tree on failure only means
        // the next scan parses everything).
        let previous = std::mem::take(&mut self.tree);
        let tree = tokio::task::spawn_blocking(move || scan_again(&dir, &configured, Some(&previous)))
            .await
            .context("scanning the repository for stacks")??;
        let mut found = discover(&tree, &self.configured);
        for stack in found.stacks.iter_mut().filter(|s| !s.workspaces_configured) {
            match self.readers.list_workspaces(stack).await {
                Ok(Some(names)) if !names.is_empty() => {
                    stack.workspaces = names.into_iter().map(|name| inferred_workspace(&tree, stack, name)).collect();
                }
                Ok(_) => {}
                Err(e) if e.is_transient() => {
                    return Err(e).with_context(|| format!("listing the workspaces of stack {}", stack.name));
                }
                Err(e) => tracing::warn!(stack = stack.name, error = %e, "cannot list the stack's workspaces"),
            }
        }
        if found.stacks.is_empty() {
            bail!(
                "no stacks in {}: no directory has a backend or cloud block, a .terraform.lock.hcl or a local state, \
                 and the configuration names none; add a [[stack]] entry (docs/operations.md, \"Stacks and state\")",
                self.dir.display()
            );
        }
        for note in &found.notes {
            tracing::info!(note, "stack discovery");
        }
        self.tree = tree;
        self.found = found;
        self.unreadable.clear();
        // A state is indexed again only when where its providers point changed.
        let held: Vec<((String, String), Arc<StateRead>)> =
            self.held.iter().map(|(k, h)| (k.clone(), h.read.clone())).collect();
        for (key, read) in held {
            match self.providers_of(&key) {
                None => self.forget(&key),
                Some(providers) if self.placed.get(&key).is_some_and(|p| p.providers == providers) => {}
                Some(providers) => self.index_workspace(&key, &read, providers),
            }
        }
        for h in self.held.values_mut() {
            h.built = None;
        }
        Ok(())
    }

    /// Where the providers of `stack`/`workspace` point at the current commit (`None`: the
    /// stack is gone).
    fn providers_of(&self, (stack, ws): &(String, String)) -> Option<BTreeMap<String, Placement>> {
        let found = self.found.stacks.iter().find(|s| &s.name == stack)?;
        Some(provider_placements(&self.tree.repo, found, ws))
    }

    fn index_workspace(&mut self, key: &(String, String), read: &StateRead, providers: BTreeMap<String, Placement>) {
        self.index.add(&key.0, &key.1, read, &providers);
        self.placed.insert(key.clone(), Placed { providers, usual_account: usual_account(read) });
    }

    /// Forget a workspace (its state is gone or unreadable, or its stack is).
    fn forget(&mut self, key: &(String, String)) {
        self.held.remove(key);
        self.index.remove(&key.0, &key.1);
        self.placed.remove(key);
    }

    /// Where `change_set` goes: the workspace whose state manages its resource (narrowed by the
    /// resource types the catalog's recipes for its calls name, and by where the calls were
    /// made), else the one workspace a new resource fits, else nowhere, saying why.
    pub fn route(&self, change_set: &ChangeSet) -> Route {
        let Some(id) = change_set.resource_id.as_deref() else {
            return Route::Nowhere(
                "the calls name no resource driftback recognises, so no stack can be chosen for them".into(),
            );
        };
        let first = change_set.events.first();
        let account = first.map(|e| e.account.as_str()).filter(|a| !a.is_empty());
        let region = first.map(|e| e.region.as_str()).filter(|r| !r.is_empty());
        // In the catalog's order: the recipes for a separate resource (`aws_s3_bucket_versioning`)
        // come before those for the inline block of its parent (`aws_s3_bucket`).
        let mut types: Vec<&str> = Vec::new();
        for event in &change_set.events {
            for recipe in self.catalog.for_event(&event.source, &event.name) {
                for t in &recipe.types {
                    if !types.contains(&t.as_str()) {
                        types.push(t);
                    }
                }
            }
        }
        let mut found = self.index.lookup(&Query { id, types: &types, account, region });
        if matches!(found, Lookup::Ambiguous(_)) && types.len() > 1 {
            // The bucket in one stack and its versioning resource in another are two resources:
            // the field belongs to the separate one, as Terraform's split S3 resources say.
            for t in &types {
                match self.index.lookup(&Query { id, types: &[t], account, region }) {
                    Lookup::Unmanaged => continue,
                    narrowed @ Lookup::Managed(_) => found = narrowed,
                    Lookup::Ambiguous(_) => {}
                }
                break;
            }
        }
        match found {
            Lookup::Managed(instances) => {
                let m = instances[0];
                Route::Managed { stack: m.stack.clone(), workspace: m.workspace.clone() }
            }
            Lookup::Ambiguous(groups) => {
                let owners: Vec<String> = groups
                    .iter()
                    .map(|g| {
                        let addresses: Vec<String> = g.iter().map(|m| m.address.to_string()).collect();
                        format!("stack {} workspace {} ({})", g[0].stack, g[0].workspace, addresses.join(", "))
                    })
                    .collect();
                Route::Nowhere(format!(
                    "{id} is managed by more than one stack: {}; driftback does not guess which code to change \
                     (remove it from all but one state, or name the resource types apart)",
                    owners.join("; ")
                ))
            }
            Lookup::Unmanaged => self.adoption(id, account, region, &types),
        }
    }

    /// A resource no state manages: the workspace whose provider configuration points at the
    /// calls' account and region, and among several, the one that already manages resources of
    /// the types the calls make there.
    fn adoption(&self, id: &str, account: Option<&str>, region: Option<&str>, types: &[&str]) -> Route {
        if !self.unreadable.is_empty() {
            let names: Vec<String> = self.unreadable.iter().map(|((s, w), e)| format!("{s}/{w}: {e}")).collect();
            return Route::Nowhere(format!(
                "no readable state manages {id}, and these states could not be read, so one of them may: {}",
                names.join("; ")
            ));
        }
        let (Some(account), Some(region)) = (account, region) else {
            return Route::Nowhere(format!("no state manages {id}, and the calls do not say which account and region"));
        };
        let fits: Vec<&(String, String)> =
            self.placed.iter().filter(|(_, placed)| placed.points_at(account, region)).map(|(k, _)| k).collect();
        let managing = self.index.workspaces_at(account, region);
        let of_kind: Vec<&(String, String)> = fits
            .iter()
            .copied()
            .filter(|k| managing.get(*k).is_some_and(|held| types.iter().any(|t| held.contains(*t))))
            .collect();
        let name = |(s, w): &(String, String)| format!("{s}/{w}");
        let (chosen, why) = match (fits.as_slice(), of_kind.as_slice()) {
            ([], _) => {
                // A global service (IAM, CloudFront, Route 53) logs its calls in one region, not where
                // the stack's provider points: the one stack managing that kind in the account.
                let global: Vec<((String, String), Vec<&str>)> = self
                    .index
                    .regionless_at(account)
                    .into_iter()
                    .map(|(k, held)| (k, types.iter().copied().filter(|t| held.contains(*t)).collect::<Vec<_>>()))
                    .filter(|(_, kinds)| !kinds.is_empty())
                    .collect();
                match global.as_slice() {
                    [(one, kinds)] => (
                        one.clone(),
                        format!("the only stack in account {account} that manages {} (no region)", kinds.join(", ")),
                    ),
                    _ => {
                        return Route::Nowhere(format!(
                            "no state manages {id}, and no stack's provider is configured for account {account}, \
                             region {region}: a person decides where it belongs"
                        ));
                    }
                }
            }
            ([only], _) => {
                ((*only).clone(), format!("the only stack whose provider is in account {account}, region {region}"))
            }
            (_, [one]) => {
                let kinds: Vec<&str> = types.iter().copied().filter(|t| managing[*one].contains(*t)).collect();
                let why =
                    format!("the only stack in account {account}, region {region} that manages {}", kinds.join(", "));
                ((*one).clone(), why)
            }
            _ => {
                let names: Vec<String> = fits.iter().map(|k| name(k)).collect();
                return Route::Nowhere(format!(
                    "no state manages {id}, and more than one stack could take it (account {account}, region \
                     {region}): {}; a person decides where it belongs",
                    names.join(", ")
                ));
            }
        };
        Route::Adopt { stack: chosen.0, workspace: chosen.1, why }
    }

    /// The workspace `stack`/`workspace` at the current base with its current state: built once
    /// per base and state version.
    pub async fn workspace(&mut self, config: &Config, stack: &str, workspace: &str) -> anyhow::Result<Workspace> {
        let key = (stack.to_string(), workspace.to_string());
        let Some(held) = self.held.get(&key) else {
            bail!("stack {stack}, workspace {workspace}: its state is not read");
        };
        if let Some(built) = &held.built {
            return Ok(built.clone());
        }
        let found = self
            .found
            .stacks
            .iter()
            .find(|s| s.name == stack)
            .with_context(|| format!("stack {stack} is not in the repository at this commit"))?;
        let repo = root_module(&self.tree, found, workspace)?;
        let scope = Scope {
            stack: stack.to_string(),
            workspace: workspace.to_string(),
            state_version: Some(held.read.version.to_string()),
        };
        let mut built = Workspace::of_stack(config, &self.dir, repo, Arc::clone(&held.read.state), scope)?;
        if let Some(modules) = &self.modules {
            modules.attach(&mut built, &self.dir).await;
        }
        if let Some(h) = self.held.get_mut(&key) {
            h.built = Some(built.clone());
        }
        Ok(built)
    }

    /// The workspace `change_set` is reconciled against, or an unlocated one saying why there is
    /// none (the change set is then decided on its calls alone, and goes to a person).
    pub async fn workspace_for(&mut self, config: &Config, change_set: &ChangeSet) -> anyhow::Result<Workspace> {
        match self.route(change_set) {
            Route::Managed { stack, workspace } => self.workspace(config, &stack, &workspace).await,
            Route::Adopt { stack, workspace, why } => {
                let mut built = self.workspace(config, &stack, &workspace).await?;
                tracing::info!(change_set = change_set.id, stack, workspace, why, "a new resource's stack");
                built.adopted_because = Some(why);
                Ok(built)
            }
            Route::Nowhere(reason) => Workspace::unlocated(load_policy(config, &self.dir)?, &reason),
        }
    }

    /// How many resource instances the index holds.
    pub fn indexed(&self) -> usize {
        self.index.len()
    }
}

/// The root module of `stack` as workspace `workspace` evaluates it: its own directory and the
/// modules it calls, with the variable files of every workspace of the stack (the others' are
/// held unchanged by every patch).
fn root_module(tree: &Tree, stack: &Stack, workspace: &str) -> anyhow::Result<driftback_terraform::Repo> {
    let mut repo = tree.repo.root_module(&stack.dir);
    for file in stack.workspaces.iter().flat_map(|w| w.tfvars.iter()) {
        if repo.text(file).is_none() {
            let text = tree.repo.text(file).with_context(|| {
                format!("stack {}: the variable file {} is not in the repository", stack.name, file.display())
            })?;
            repo.set_file(file, text.to_string());
        }
    }
    let own = stack.workspace(workspace).map(|w| w.tfvars.clone()).unwrap_or_default();
    repo.set_workspace(workspace, own)?;
    let others: Vec<(String, Vec<PathBuf>)> =
        stack.workspaces.iter().filter(|w| w.name != workspace).map(|w| (w.name.clone(), w.tfvars.clone())).collect();
    repo.set_other_workspaces(others)?;
    Ok(repo)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    const APP: &str = "111111111111";
    const NETWORK: &str = "222222222222";

    fn write(root: &Path, path: &str, text: &str) {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn state(serial: u64, resources: &[(&str, &str, Value)]) -> String {
        let resources: Vec<Value> = resources
            .iter()
            .map(|(t, n, attrs)| {
                json!({"mode": "managed", "type": t, "name": n,
                       "provider": "provider[\"registry.terraform.io/hashicorp/aws\"]",
                       "instances": [{"schema_version": 0, "attributes": attrs}]})
            })
            .collect();
        json!({"version": 4, "serial": serial, "lineage": "l", "resources": resources}).to_string()
    }

    fn queue(name: &str, region: &str) -> Value {
        let url = format!("https://sqs.{region}.amazonaws.com/{APP}/{name}");
        json!({"id": url, "url": url, "name": name, "arn": format!("arn:aws:sqs:{region}:{APP}:{name}")})
    }

    fn bucket(name: &str) -> Value {
        json!({"id": name, "bucket": name, "arn": format!("arn:aws:s3:::{name}")})
    }

    /// `network` (local state, account 222 by its provider's role); `storage` (account 111) with
    /// the buckets; `app` in two local workspaces with their own tfvars, whose prod manages the
    /// policy and the versioning of storage's `acme-logs`; storage and app's prod both claim the
    /// bucket `acme-shared`.
    fn repository(root: &Path) {
        write(
            root,
            "network/main.tf",
            &format!(
                "provider \"aws\" {{\n  region = \"us-east-1\"\n  assume_role {{\n    role_arn = \"arn:aws:iam::{NETWORK}:role/terraform\"\n  }}\n}}\n\nresource \"aws_vpc\" \"main\" {{\n  cidr_block = \"10.0.0.0/16\"\n}}\n"
            ),
        );
        write(
            root,
            "network/terraform.tfstate",
            &state(
                1,
                &[(
                    "aws_vpc",
                    "main",
                    json!({"id": "vpc-1", "arn": format!("arn:aws:ec2:us-east-1:{NETWORK}:vpc/vpc-1")}),
                )],
            ),
        );
        let provider = format!(
            "provider \"aws\" {{\n  region              = \"eu-west-1\"\n  allowed_account_ids = [\"{APP}\"]\n}}\n"
        );
        write(
            root,
            "storage/main.tf",
            &format!("{provider}\nresource \"aws_s3_bucket\" \"logs\" {{\n  bucket = \"acme-logs\"\n}}\n"),
        );
        write(
            root,
            "storage/terraform.tfstate",
            &state(
                5,
                &[
                    ("aws_s3_bucket", "logs", bucket("acme-logs")),
                    ("aws_s3_bucket", "shared", bucket("acme-shared")),
                    (
                        "aws_iam_role",
                        "replication",
                        json!({"id": "s3-replication", "name": "s3-replication",
                               "arn": format!("arn:aws:iam::{APP}:role/s3-replication")}),
                    ),
                ],
            ),
        );
        write(
            root,
            "app/main.tf",
            &format!(
                "variable \"region\" {{\n  default = \"eu-west-1\"\n}}\n\nprovider \"aws\" {{\n  region              = var.region\n  allowed_account_ids = [\"{APP}\"]\n}}\n\nmodule \"queue\" {{\n  source = \"../modules/queue\"\n  name   = \"jobs-${{terraform.workspace}}\"\n}}\n"
            ),
        );
        write(
            root,
            "modules/queue/main.tf",
            "variable \"name\" {}\n\nresource \"aws_sqs_queue\" \"this\" {\n  name = var.name\n}\n",
        );
        write(root, "app/prod.tfvars", "region = \"eu-west-1\"\n");
        write(root, "app/staging.tfvars", "region = \"eu-central-1\"\n");
        write(
            root,
            "app/terraform.tfstate.d/prod/terraform.tfstate",
            &state(
                7,
                &[
                    ("aws_sqs_queue", "this", queue("jobs-prod", "eu-west-1")),
                    ("aws_s3_bucket_policy", "logs", json!({"id": "acme-logs", "bucket": "acme-logs"})),
                    ("aws_s3_bucket_versioning", "logs", json!({"id": "acme-logs", "bucket": "acme-logs"})),
                    ("aws_s3_bucket", "shared", bucket("acme-shared")),
                ],
            ),
        );
        write(
            root,
            "app/terraform.tfstate.d/staging/terraform.tfstate",
            &state(2, &[("aws_sqs_queue", "this", queue("jobs-staging", "eu-central-1"))]),
        );
    }

    fn change_set(account: &str, region: &str, source: &str, name: &str, request: Value) -> ChangeSet {
        let record = json!({
            "eventVersion": "1.09", "eventID": format!("e-{name}-{region}"), "eventTime": "2026-11-20T10:00:00Z",
            "eventSource": source, "eventName": name, "awsRegion": region, "recipientAccountId": account,
            "userIdentity": {"type": "IAMUser", "arn": format!("arn:aws:iam::{account}:user/alice"),
                             "accountId": account, "userName": "alice"},
            "sourceIPAddress": "203.0.113.10", "userAgent": "aws-cli/2.15.30",
            "requestParameters": request, "responseElements": null, "readOnly": false,
            "eventType": "AwsApiCall", "managementEvent": true
        });
        let event = driftback_events::normalize(&record).unwrap();
        driftback_events::group(vec![event], &Default::default()).remove(0)
    }

    fn sqs(account: &str, region: &str, name: &str, queue: &str) -> ChangeSet {
        let url = format!("https://sqs.{region}.amazonaws.com/{account}/{queue}");
        let request = match name {
            "CreateQueue" => json!({"queueName": queue}),
            _ => json!({"queueUrl": url, "attributes": {"VisibilityTimeout": "60"}}),
        };
        change_set(account, region, "sqs.amazonaws.com", name, request)
    }

    fn s3(name: &str, bucket: &str) -> ChangeSet {
        change_set(
            APP,
            "eu-west-1",
            "s3.amazonaws.com",
            name,
            json!({"bucketName": bucket, "Host": "s3.amazonaws.com"}),
        )
    }

    async fn stacks(root: &Path) -> Stacks {
        let config = Config {
            stack: vec![StackConfig {
                path: "app".into(),
                workspaces: ["prod", "staging"]
                    .map(|w| driftback_stacks::WorkspaceConfig {
                        name: w.into(),
                        tfvars: vec![format!("app/{w}.tfvars").into()],
                        ..Default::default()
                    })
                    .to_vec(),
                ..Default::default()
            }],
            ..Config::default()
        };
        let mut stacks = Stacks::new(&config, root, Catalog::builtin());
        stacks.refresh("base-1").await.unwrap();
        stacks
    }

    fn managed(stack: &str, workspace: &str) -> Route {
        Route::Managed { stack: stack.into(), workspace: workspace.into() }
    }

    #[tokio::test]
    async fn change_sets_go_to_the_workspace_whose_state_manages_their_resource() {
        let dir = tempfile::tempdir().unwrap();
        repository(dir.path());
        let stacks = stacks(dir.path()).await;
        assert_eq!(stacks.indexed(), 9);
        assert_eq!(stacks.route(&sqs(APP, "eu-west-1", "SetQueueAttributes", "jobs-prod")), managed("app", "prod"));
        assert_eq!(
            stacks.route(&sqs(APP, "eu-central-1", "SetQueueAttributes", "jobs-staging")),
            managed("app", "staging")
        );
        assert_eq!(
            stacks.route(&change_set(
                NETWORK,
                "us-east-1",
                "ec2.amazonaws.com",
                "ModifyVpcAttribute",
                json!({"vpcId": "vpc-1", "enableDnsHostnames": {"value": true}}),
            )),
            managed("network", "default")
        );
        // One bucket name, resources in two stacks: the call's resource type tells them apart,
        // and a separate resource (`aws_s3_bucket_versioning`) is preferred to its parent's block.
        assert_eq!(stacks.route(&s3("PutBucketPolicy", "acme-logs")), managed("app", "prod"));
        assert_eq!(stacks.route(&s3("PutBucketVersioning", "acme-logs")), managed("app", "prod"));
        assert_eq!(stacks.route(&s3("PutBucketTagging", "acme-logs")), managed("storage", "default"));
        // Two stacks manage the same bucket: never guessed.
        let route = stacks.route(&s3("PutBucketTagging", "acme-shared"));
        let Route::Nowhere(why) = route else { panic!("{route:?}") };
        assert!(why.contains("more than one stack") && why.contains("app") && why.contains("storage"), "{why}");
    }

    #[tokio::test]
    async fn a_new_resource_is_adopted_where_its_account_and_region_fit_else_a_person_decides() {
        let dir = tempfile::tempdir().unwrap();
        repository(dir.path());
        let stacks = stacks(dir.path()).await;
        let route = stacks.route(&sqs(APP, "eu-central-1", "CreateQueue", "new-q"));
        let Route::Adopt { stack, workspace, why } = route else { panic!("{route:?}") };
        assert_eq!((stack.as_str(), workspace.as_str()), ("app", "staging"));
        assert!(why.contains("eu-central-1"), "{why}");
        // Two stacks' providers are in eu-west-1: the one that already manages queues there.
        let route = stacks.route(&sqs(APP, "eu-west-1", "CreateQueue", "new-q"));
        let Route::Adopt { stack, workspace, why } = route else { panic!("{route:?}") };
        assert_eq!((stack.as_str(), workspace.as_str()), ("app", "prod"));
        assert!(why.contains("manages aws_sqs_queue"), "{why}");
        // Both manage buckets there: a person decides.
        let create_bucket = change_set(
            APP,
            "eu-west-1",
            "s3.amazonaws.com",
            "CreateBucket",
            json!({"bucketName": "acme-new", "Host": "acme-new.s3.eu-west-1.amazonaws.com"}),
        );
        let route = stacks.route(&create_bucket);
        let Route::Nowhere(why) = route else { panic!("{route:?}") };
        assert!(
            why.contains("more than one stack could take it") && why.contains("app/prod, storage/default"),
            "{why}"
        );
        // IAM logs its calls in us-east-1, where no provider points: the one stack managing roles in
        // the account takes a new role.
        let create_role = change_set(
            APP,
            "us-east-1",
            "iam.amazonaws.com",
            "CreateRole",
            json!({"roleName": "ci-deployer", "assumeRolePolicyDocument": "{}"}),
        );
        let route = stacks.route(&create_role);
        let Route::Adopt { stack, why, .. } = route else { panic!("{route:?}") };
        assert_eq!(stack, "storage");
        assert!(why.contains("manages aws_iam_role (no region)"), "{why}");
        let Route::Nowhere(why) = stacks.route(&sqs(APP, "ap-south-1", "CreateQueue", "far")) else { panic!() };
        assert!(why.contains("no stack's provider is configured for account 111111111111, region ap-south-1"), "{why}");
        let Route::Nowhere(why) = stacks.route(&sqs("333333333333", "eu-west-1", "CreateQueue", "x")) else { panic!() };
        assert!(why.contains("333333333333"), "{why}");
    }

    #[tokio::test]
    async fn a_state_is_read_again_only_when_its_version_moves() {
        let dir = tempfile::tempdir().unwrap();
        repository(dir.path());
        let mut stacks = stacks(dir.path()).await;
        let again = stacks.refresh("base-1").await.unwrap();
        assert_eq!(again, Refreshed { rescanned: false, workspaces: 4, read: 0 });
        // Someone applied in staging: only that state is read, and its new resource is routed.
        std::thread::sleep(std::time::Duration::from_millis(20));
        write(
            dir.path(),
            "app/terraform.tfstate.d/staging/terraform.tfstate",
            &state(
                3,
                &[
                    ("aws_sqs_queue", "this", queue("jobs-staging", "eu-central-1")),
                    ("aws_sqs_queue", "dlq", queue("dlq-staging", "eu-central-1")),
                ],
            ),
        );
        let moved = stacks.refresh("base-1").await.unwrap();
        assert_eq!(moved, Refreshed { rescanned: false, workspaces: 4, read: 1 });
        assert_eq!(stacks.indexed(), 10);
        assert_eq!(
            stacks.route(&sqs(APP, "eu-central-1", "SetQueueAttributes", "dlq-staging")),
            managed("app", "staging")
        );
        let workspace = stacks.workspace(&Config::default(), "app", "staging").await.unwrap();
        let scope = workspace.scope.clone().unwrap();
        assert_eq!((scope.stack.as_str(), scope.workspace.as_str()), ("app", "staging"));
        assert_eq!(scope.state_version.as_deref(), Some("serial 3 lineage l"));
        assert_eq!(workspace.repo.root_dir(), Path::new("app"));
        assert_eq!(workspace.repo.workspace(), "staging");
        assert_eq!(workspace.repo.var_files(), [PathBuf::from("app/staging.tfvars")]);
        assert_eq!(workspace.repo.module_dir("module.queue"), Some(&PathBuf::from("modules/queue")));
        // A new base commit: the stacks are found again, the states are not read again.
        let rebased = stacks.refresh("base-2").await.unwrap();
        assert_eq!(rebased, Refreshed { rescanned: true, workspaces: 4, read: 0 });
        // A commit moves staging's provider to another region: a queue made there now has a home.
        let far = sqs(APP, "eu-north-1", "CreateQueue", "far-q");
        assert!(matches!(stacks.route(&far), Route::Nowhere(_)));
        write(dir.path(), "app/staging.tfvars", "region = \"eu-north-1\"\n");
        let moved = stacks.refresh("base-3").await.unwrap();
        assert_eq!(moved, Refreshed { rescanned: true, workspaces: 4, read: 0 });
        let route = stacks.route(&far);
        assert!(
            matches!(&route, Route::Adopt { stack, workspace, .. } if stack == "app" && workspace == "staging"),
            "{route:?}"
        );
        let workspace = stacks.workspace(&Config::default(), "app", "staging").await.unwrap();
        assert_eq!(workspace.repo.text(Path::new("app/staging.tfvars")), Some("region = \"eu-north-1\"\n"));
    }

    #[tokio::test]
    async fn a_state_that_cannot_be_read_keeps_new_resources_from_being_placed() {
        let dir = tempfile::tempdir().unwrap();
        repository(dir.path());
        write(dir.path(), "app/terraform.tfstate.d/staging/terraform.tfstate", "{ not a state");
        let stacks = stacks(dir.path()).await;
        // What the readable states manage is still routed ...
        assert_eq!(stacks.route(&sqs(APP, "eu-west-1", "SetQueueAttributes", "jobs-prod")), managed("app", "prod"));
        // ... but a resource none of them manages might be the unreadable one's.
        let Route::Nowhere(why) = stacks.route(&sqs(APP, "eu-central-1", "SetQueueAttributes", "jobs-staging")) else {
            panic!()
        };
        assert!(why.contains("app/staging") && why.contains("could not be read"), "{why}");
    }
}
