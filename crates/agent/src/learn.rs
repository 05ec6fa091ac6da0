//! From a validated LLM reconciliation to a recipe in the catalog's format, and back into the
//! planner, so the next change of that kind costs no tokens.

use serde_json::Value;

use driftback_events::{ApiEvent, ChangeSet};
use driftback_recipes::{Catalog, IdentityRule, Plan, Recipe};
use driftback_terraform::{AttrValue, Op, Repo, Seg, State};

use crate::kb::{KbError, KnowledgeBase, LearnedRecipe, RecipeUse, signature};
use crate::proof::Rule;
use crate::validate::validate;

/// What [`learn`] did: the recipe it stored, or why there is none.
#[derive(Debug)]
pub enum Learned {
    Stored(Box<LearnedRecipe>),
    NotGeneralised(NotGeneralised),
}

/// Why a reconciliation is not generalised into a recipe ([`generalise`]).
#[derive(Debug, thiserror::Error)]
pub enum NotGeneralised {
    #[error("the reconciliation changed {0} resources; only one is generalised")]
    ManyResources(usize),
    #[error("{0} kinds of call without a recipe; one is generalised at a time")]
    ManyCalls(usize),
    #[error("{0}")]
    Patch(#[from] driftback_terraform::patch::PatchError),
    #[error("the reconciliation does not validate: {}", .0.join("; "))]
    Invalid(Vec<String>),
    #[error("`{0}` is a map entry; map edits are not generalised")]
    MapEntry(String),
    #[error("`{0}` has no proof")]
    Unproven(String),
    #[error("`{path}` is proven by {members} members; one is generalised")]
    ManyMembers { path: String, members: usize },
    #[error("`{0}` drops a trailing dot, which no recipe conversion does")]
    TrailingDot(String),
    #[error("`{0}` is a removal, which is not generalised")]
    Removal(String),
    #[error("`{0}`: the recorded value is not text")]
    NotText(String),
    #[error("{0}")]
    Rule(serde_json::Error),
    #[error("{0} is not generalised into a recipe")]
    Edit(String),
    #[error("no edit comes from the call without a recipe")]
    NoEdit,
    #[error("{0} is not in the state")]
    NotInState(String),
    #[error("no request parameter identifies {0}")]
    Unidentified(String),
    #[error("the request does not carry {attr} of {address}, part of its identity")]
    IdentityNotCarried { attr: String, address: String },
    #[error(
        "part {unheld:?} of {address}'s identifier is held by no attribute, so a recipe could not tell it from its \
         neighbours"
    )]
    IdentityUnheld { unheld: String, address: String },
    #[error("{0}")]
    Catalog(driftback_recipes::CatalogError),
    #[error("the recipe does not replay: {0}")]
    NoReplay(driftback_recipes::PlanError),
    #[error("the generalised recipe does not reproduce the agent's edits")]
    NotReproduced,
}

/// Generalise a validated reconciliation of `change_set` (the `plan` the agent produced) into a
/// recipe, check that the recipe reproduces the agent's edits, and store it in the knowledge base.
pub async fn learn<K: KnowledgeBase>(
    kb: &K,
    catalog: &Catalog,
    change_set: &ChangeSet,
    state: &State,
    repo: &Repo,
    plan: &Plan,
) -> Result<Learned, KbError> {
    let recipe = match generalise(catalog, change_set, state, repo, plan) {
        Ok(recipe) => recipe,
        Err(why) => return Ok(Learned::NotGeneralised(why)),
    };
    let learned = LearnedRecipe {
        recipe,
        signature: signature(change_set, state),
        learned_from: change_set.id.clone(),
        uses: 0,
        successes: 0,
        failures: 0,
        demoted: None,
    };
    kb.store_recipe(&learned).await?;
    Ok(Learned::Stored(Box::new(learned)))
}

/// The catalog the planner uses: `base` (built-in and configured recipes, which win), then every
/// learned recipe that has not been demoted.
pub fn learned_catalog(base: &Catalog, learned: &[LearnedRecipe]) -> Catalog {
    let mut catalog = base.clone();
    for l in learned.iter().filter(|l| l.demoted.is_none()) {
        if !catalog.recipes.iter().any(|r| r.id == l.recipe.id) {
            catalog.recipes.push(l.recipe.clone());
        }
    }
    catalog
}

/// Demote the learned recipe `id` because a pull request of its patch was closed without merging.
pub async fn demote_for_closed_pull_request<K: KnowledgeBase>(
    kb: &K,
    id: &str,
    pull_request: &str,
) -> Result<(), KbError> {
    kb.record_recipe_use(id, &RecipeUse::PullRequestClosed(pull_request.to_string())).await
}

/// A recipe as one `[[recipe]]` entry of a catalog file, without empty fields.
pub fn recipe_toml(recipe: &Recipe) -> String {
    let Ok(toml::Value::Table(mut table)) = toml::Value::try_from(recipe) else { return String::new() };
    table.retain(|_, v| match v {
        toml::Value::Array(a) => !a.is_empty(),
        toml::Value::Boolean(b) => *b,
        _ => true,
    });
    let mut root = toml::Table::new();
    root.insert("recipe".into(), toml::Value::Array(vec![toml::Value::Table(table)]));
    toml::to_string(&root).unwrap_or_default()
}

/// The recipe that would have planned `plan` for the one call no recipe covers. Only what is
/// proven is generalised: the plan must validate, each value's `from` is its proof's member (of the
/// call without a recipe) with the proof's conversion rule, and the resource is found by the full
/// identity the call carries.
pub fn generalise(
    catalog: &Catalog,
    change_set: &ChangeSet,
    state: &State,
    repo: &Repo,
    plan: &Plan,
) -> Result<Recipe, NotGeneralised> {
    let [change] = plan.changes.as_slice() else {
        return Err(NotGeneralised::ManyResources(plan.changes.len()));
    };
    let uncovered: Vec<&ApiEvent> =
        change_set.events.iter().filter(|e| catalog.for_event(&e.source, &e.name).next().is_none()).collect();
    let mut kinds: Vec<(&str, &str)> = uncovered.iter().map(|e| (e.source.as_str(), e.name.as_str())).collect();
    kinds.dedup();
    let (Some(event), [_]) = (uncovered.last(), kinds.as_slice()) else {
        return Err(NotGeneralised::ManyCalls(kinds.len()));
    };
    let mut after = repo.clone();
    for op in &change.ops {
        driftback_terraform::patch::apply(&mut after, &change.address, op)?;
    }
    let validation = validate(repo, &after, state, change_set, plan);
    if !validation.ok {
        return Err(NotGeneralised::Invalid(validation.problems));
    }
    let address = &change.address;
    let mut recipe = Recipe {
        id: recipe_id(event, &address.rtype),
        source: event.source.clone(),
        events: vec![event.name.clone()],
        types: vec![address.rtype.clone()],
        ..Recipe::default()
    };
    let mut expected = Vec::new();
    for op in &change.ops {
        match op {
            Op::Set { path, value: AttrValue::Literal(value) } if !value.is_object() && !value.is_array() => {
                if path.0.iter().any(|s| matches!(s, Seg::Key(_))) {
                    return Err(NotGeneralised::MapEntry(path.to_string()));
                }
                let proof = validation
                    .proofs
                    .iter()
                    .find(|p| p.address == address.to_string() && p.path == path.to_string())
                    .ok_or_else(|| NotGeneralised::Unproven(path.to_string()))?;
                let [member] = proof.members.as_slice() else {
                    return Err(NotGeneralised::ManyMembers { path: path.to_string(), members: proof.members.len() });
                };
                if member.event_id != event.id {
                    // Set by a call a recipe covers: that recipe plans it.
                    continue;
                }
                let mut rule = serde_json::json!({"path": path.to_string(), "from": member.path});
                match member.rule {
                    Rule::Same => {}
                    Rule::Number => rule["convert"] = "number".into(),
                    Rule::Bool => rule["convert"] = "bool".into(),
                    Rule::String => rule["convert"] = "string".into(),
                    Rule::WithoutTrailingDot => {
                        return Err(NotGeneralised::TrailingDot(path.to_string()));
                    }
                    Rule::Removed => return Err(NotGeneralised::Removal(path.to_string())),
                    Rule::Enabled => {
                        let Value::String(recorded) = &member.recorded else {
                            return Err(NotGeneralised::NotText(path.to_string()));
                        };
                        rule["map"] = serde_json::json!({ recorded.clone(): value });
                    }
                }
                recipe.set.push(serde_json::from_value(rule).map_err(NotGeneralised::Rule)?);
                expected.push(op.clone());
            }
            Op::RemoveResource if event.name.starts_with("Delete") => {
                recipe.delete = true;
                expected.push(op.clone());
            }
            other => return Err(NotGeneralised::Edit(describe(other))),
        }
    }
    if expected.is_empty() {
        return Err(NotGeneralised::NoEdit);
    }
    locate_rule(&mut recipe, event, change_set, state, address)?;
    // The recipe must reproduce what the agent did, through the real planner, or it is not kept.
    let text = recipe_toml(&recipe);
    let single = Catalog::from_toml(&text, "learned recipe").map_err(NotGeneralised::Catalog)?;
    let one = ChangeSet { events: vec![(*event).clone()], ..change_set.clone() };
    let replay = driftback_recipes::plan(&single, &one, state, repo).map_err(NotGeneralised::NoReplay)?;
    match replay.changes.as_slice() {
        [c] if &c.address == address && c.ops == expected => Ok(recipe),
        _ => Err(NotGeneralised::NotReproduced),
    }
}

/// How the planner finds the resource: by the change set's identifier (default), through `lookup`
/// when the state knows the resource by another attribute, or by a request path (`key`); and, when
/// the resource's id is composite (`ZONE_name_TYPE`), by every part of it the request carries
/// (`identity`), so that a recipe learned on one record is never applied to its neighbour.
fn locate_rule(
    recipe: &mut Recipe,
    event: &ApiEvent,
    change_set: &ChangeSet,
    state: &State,
    address: &driftback_terraform::Address,
) -> Result<(), NotGeneralised> {
    let instance = state.get(address).ok_or_else(|| NotGeneralised::NotInState(address.to_string()))?;
    let matching_attr = |id: &str| -> Option<String> {
        ["id", "arn"]
            .iter()
            .find(|a| instance.attr_str(a) == Some(id))
            .map(|a| a.to_string())
            .or_else(|| instance.attributes.iter().find(|(_, v)| v.as_str() == Some(id)).map(|(k, _)| k.clone()))
    };
    let mut located = None;
    if let Some(id) = &change_set.resource_id {
        if let Some(attr) = matching_attr(id) {
            if attr != "id" && attr != "arn" {
                recipe.lookup = vec![attr.clone()];
            }
            located = Some(attr);
        }
    }
    if located.is_none() {
        for (path, leaf) in string_leaves(&event.request, String::new()) {
            if let Some(attr) = matching_attr(&leaf) {
                recipe.key = Some(path);
                if attr != "id" && attr != "arn" {
                    recipe.lookup = vec![attr.clone()];
                }
                located = Some(attr);
                break;
            }
        }
    }
    let Some(located) = located else {
        return Err(NotGeneralised::Unidentified(address.to_string()));
    };
    if located == "id" || located == "arn" {
        // Found by its whole identifier: nothing else can match.
        return Ok(());
    }
    // Found by part of its identity (a record by its zone): every other part of a composite id,
    // by the attribute that holds it and the request member that spells it. A part no attribute
    // holds, or no member spells, refuses the recipe: it could land on a neighbour.
    let id = instance.attr_str("id").unwrap_or_default();
    if id.split(crate::proof::ID_SEPARATORS).filter(|p| !p.is_empty()).count() < 2 {
        return Ok(());
    }
    let mut holders: Vec<(&String, &str)> = instance
        .attributes
        .iter()
        .filter(|(k, _)| *k != "id" && *k != "arn")
        .filter_map(|(k, v)| v.as_str().map(|v| (k, v.trim_end_matches('.'))))
        .filter(|(_, v)| !v.is_empty() && id.contains(v))
        .collect();
    holders.sort_by_key(|(_, v)| std::cmp::Reverse(v.len()));
    let leaves = string_leaves(&event.request, String::new());
    let mut rest = id.to_string();
    for (attr, value) in holders {
        if !rest.contains(value) {
            continue;
        }
        rest = rest.replacen(value, "", 1);
        if recipe.lookup.contains(attr) {
            continue;
        }
        let Some((from, _)) = leaves.iter().find(|(_, l)| l.trim_end_matches('.') == value) else {
            return Err(NotGeneralised::IdentityNotCarried { attr: attr.clone(), address: address.to_string() });
        };
        if !recipe.identity.iter().any(|r| &r.attr == attr) {
            recipe.identity.push(IdentityRule { attr: attr.clone(), from: from.clone() });
        }
    }
    let unheld = rest.trim_matches(crate::proof::ID_SEPARATORS);
    if !unheld.is_empty() {
        return Err(NotGeneralised::IdentityUnheld { unheld: unheld.to_string(), address: address.to_string() });
    }
    Ok(())
}

fn recipe_id(event: &ApiEvent, rtype: &str) -> String {
    let mut kebab = String::new();
    for (i, c) in event.name.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            kebab.push('-');
        }
        if c.is_ascii_alphanumeric() {
            kebab.push(c.to_ascii_lowercase());
        }
    }
    let rtype: String = rtype.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
    format!("learned-{}-{kebab}-{rtype}", event.service())
}

fn describe(op: &Op) -> String {
    match op {
        Op::Set { path, value: AttrValue::Reference(_) } => format!("a reference at `{path}`"),
        Op::Set { path, .. } => format!("a list or object value at `{path}`"),
        Op::Remove { path } => format!("removing `{path}` (it depends on what the request left out)"),
        Op::AddBlock { block_type, .. } => format!("adding a `{block_type}` block"),
        Op::RemoveBlocks { block_type, .. } => format!("removing `{block_type}` blocks"),
        Op::IgnoreChanges { .. } => "ignore_changes".into(),
        Op::RemoveResource => "removing a resource on a call that is not a Delete".into(),
        Op::CreateResource { .. } => "adding a resource".into(),
    }
}

fn string_leaves(request: &Value, prefix: String) -> Vec<(String, String)> {
    let mut out = Vec::new();
    walk(request, prefix, &mut |path, leaf| {
        if let Value::String(s) = leaf {
            out.push((path.to_string(), s.clone()));
        }
    });
    out
}

fn walk(value: &Value, prefix: String, visit: &mut dyn FnMut(&str, &Value)) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                if driftback_events::is_transport_key(k) {
                    continue;
                }
                walk(v, if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") }, visit);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                walk(v, format!("{prefix}[{i}]"), visit);
            }
        }
        Value::Null => {}
        leaf => visit(&prefix, leaf),
    }
}
