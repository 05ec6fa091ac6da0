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
    Discovery, Index, Location, Lookup, Query, Readers, Stack, StackConfig, StateRead, StateReader, Tree, discover,
    locate, provider_placements, scan,
};

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
}

/// What a refresh did, for the log and benchmarks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Refreshed {
    pub rescanned: bool,
    pub workspaces: usize,
    /// States read again because their version moved (or could not be probed).
    pub read: usize,
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
        }
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
                    self.index_workspace(&key, &read);
                    self.held.insert(key, Held { location, probe, read, built: None });
                }
                Err(e) if e.is_transient() => {
                    return Err(e)
                        .with_context(|| format!("reading the state of stack {}, workspace {}", key.0, key.1));
                }
                Err(e) => {
                    tracing::warn!(stack = key.0, workspace = key.1, error = %e, "a state cannot be read; its resources are not routed");
                    self.unreadable.insert(key.clone(), e.to_string());
                    self.held.remove(&key);
                    self.index.remove(&key.0, &key.1);
                }
            }
        }
        let gone: Vec<(String, String)> = self.held.keys().filter(|k| !keep.contains(*k)).cloned().collect();
        for key in gone {
            self.held.remove(&key);
            self.index.remove(&key.0, &key.1);
        }
        Ok(done)
    }

    /// Discover the stacks again (the code moved): workspaces the configuration does not list are
    /// asked of the backend; every held state is indexed again with the new provider placements,
    /// and every workspace is built again from the new code.
    async fn rescan(&mut self) -> anyhow::Result<()> {
        let (dir, configured) = (self.dir.clone(), self.configured.clone());
        let tree = tokio::task::spawn_blocking(move || scan(&dir, &configured))
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
        let held: Vec<((String, String), Arc<StateRead>)> =
            self.held.iter().map(|(k, h)| (k.clone(), h.read.clone())).collect();
        for (key, read) in held {
            self.index_workspace(&key, &read);
        }
        for h in self.held.values_mut() {
            h.built = None;
        }
        Ok(())
    }

    fn index_workspace(&mut self, (stack, ws): &(String, String), read: &StateRead) {
        let Some(found) = self.found.stacks.iter().find(|s| &s.name == stack) else { return };
        let providers = provider_placements(&self.tree.repo, found, ws);
        self.index.add(stack, ws, read, &providers);
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
        let mut types: Vec<&str> = Vec::new();
        for event in &change_set.events {
            for recipe in self.catalog.for_event(&event.source, &event.name) {
                types.extend(recipe.types.iter().map(String::as_str));
            }
        }
        types.sort_unstable();
        types.dedup();
        match self.index.lookup(&Query { id, types: &types, account, region }) {
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

    /// A resource no state manages: the workspace that manages resources in the same account and
    /// region, and among several, the one that manages resources of the types its calls make.
    fn adoption(&self, id: &str, account: Option<&str>, region: Option<&str>, types: &[&str]) -> Route {
        let unreadable = if self.unreadable.is_empty() {
            String::new()
        } else {
            let names: Vec<String> = self.unreadable.iter().map(|((s, w), e)| format!("{s}/{w}: {e}")).collect();
            format!("; and these states could not be read, so one of them may manage it: {}", names.join("; "))
        };
        if !self.unreadable.is_empty() {
            return Route::Nowhere(format!("no readable state manages {id}{unreadable}"));
        }
        let (Some(account), Some(region)) = (account, region) else {
            return Route::Nowhere(format!("no state manages {id}, and the calls do not say which account and region"));
        };
        let at = self.index.workspaces_at(account, region);
        let name = |(s, w): &(String, String)| format!("{s}/{w}");
        let of_kind: Vec<&(String, String)> =
            at.iter().filter(|(_, held)| types.iter().any(|t| held.contains(*t))).map(|(k, _)| k).collect();
        let (chosen, why) = match (at.len(), of_kind.as_slice()) {
            (0, _) => {
                return Route::Nowhere(format!(
                    "no state manages {id}, and no stack manages anything in account {account}, region {region}: \
                     a person decides where it belongs"
                ));
            }
            (1, _) => {
                let only = at.keys().next().cloned().unwrap_or_default();
                let why = format!("the only stack with resources in account {account}, region {region}");
                (only, why)
            }
            (_, [one]) => {
                let why = format!(
                    "the only stack in account {account}, region {region} that manages {}",
                    types.iter().filter(|t| at[*one].contains(**t)).cloned().collect::<Vec<_>>().join(", ")
                );
                ((*one).clone(), why)
            }
            _ => {
                let names: Vec<String> = at.keys().map(name).collect();
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
    pub fn workspace(&mut self, config: &Config, stack: &str, workspace: &str) -> anyhow::Result<Workspace> {
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
        let built = Workspace::of_stack(config, &self.dir, repo, held.read.state.clone(), scope)?;
        if let Some(h) = self.held.get_mut(&key) {
            h.built = Some(built.clone());
        }
        Ok(built)
    }

    /// The workspace `change_set` is reconciled against, or an unlocated one saying why there is
    /// none (the change set is then decided on its calls alone, and goes to a person).
    pub fn workspace_for(&mut self, config: &Config, change_set: &ChangeSet) -> anyhow::Result<Workspace> {
        match self.route(change_set) {
            Route::Managed { stack, workspace } => self.workspace(config, &stack, &workspace),
            Route::Adopt { stack, workspace, why } => {
                let mut built = self.workspace(config, &stack, &workspace)?;
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
