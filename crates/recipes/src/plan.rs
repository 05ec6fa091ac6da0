//! From a change set to operations on resource addresses, by recipe.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use driftback_events::{ApiEvent, ChangeSet};
use driftback_terraform::eval::{contains_symbolic, effective_config, value_at_path};
use driftback_terraform::render::is_identifier;
use driftback_terraform::{Address, AttrPath, AttrValue, BlockSpec, InstanceKey, Op, Repo, Seg, State};

use crate::catalog::{Catalog, Convert, CreateRule, MapRule, Recipe};
use crate::extract::{as_list, event_value, value_at};

/// The marker CloudTrail writes instead of sensitive values.
pub const REDACTED: &str = "HIDDEN_DUE_TO_SECURITY_REASONS";

/// Operations for one resource.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResourceChange {
    pub address: Address,
    pub ops: Vec<Op>,
    /// The recipes that produced the operations.
    pub recipes: Vec<String>,
    /// True when the resource was created out of band and is being adopted.
    pub created: bool,
}

/// What a change set means for the configuration.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub changes: Vec<ResourceChange>,
    /// Things worth telling the reviewer (values that equal provider default tags, ...).
    pub notes: Vec<String>,
    /// What the same calls do to other resources, which are change sets of their own (one
    /// `CreateTags` on two subnets): an edit that makes exactly these changes to them too (an input
    /// both read) is not a leak.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alongside: Vec<ResourceChange>,
    /// Fields the calls set that can never be written into code (a value CloudTrail redacted, or
    /// a secret): left out of `changes` and held for a person, while the rest of the plan stands.
    /// A plan whose calls set nothing else is refused instead ([`PlanError::Secret`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub secrets: Vec<SecretField>,
}

/// A field of a resource whose new value must never be written: what the policy holds for a
/// person ([`Plan::secrets`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SecretField {
    pub address: Address,
    pub path: AttrPath,
    /// Why it is not written (the text of [`PlanError::Secret`]).
    pub reason: String,
}

impl Plan {
    pub fn is_empty(&self) -> bool {
        self.changes.iter().all(|c| c.ops.is_empty())
    }
}

/// Why a change set cannot be planned by recipe: each is escalated with this text.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlanError {
    #[error("no recipe for {service} {name}")]
    NoRecipe { service: String, name: String },
    #[error("{} changed by {name} is not managed by this Terraform state", resource_said(id))]
    NotManaged { id: String, name: String },
    #[error("{name} names no resource driftback can recognise")]
    NoResource { name: String },
    /// The call is known, but its record does not say which resource it changed.
    #[error(
        "the record of {name} names no {what}: it has no `{key}` in requestParameters or responseElements, and \
         resources[] names none; a person must say which {what} it changed"
    )]
    NoIdentifier { name: String, what: String, key: String },
    #[error("{name} on {id:?} matches several resources in the state ({addresses}); a person must choose")]
    Ambiguous { id: String, name: String, addresses: String },
    #[error(
        "the new value of `{path}` is hidden by CloudTrail ({REDACTED}) or is a secret; it will not be written into code"
    )]
    Secret { path: String },
    #[error("recipe {recipe}: {message}")]
    Recipe { recipe: String, message: String },
    /// The record carries none of the values the recipe reads, in the request or the response: what
    /// the call changed is not in it, and saying "nothing changed" would lose it silently.
    #[error(
        "the record of {name} carries none of the values recipe {recipe} reads ({members}) in requestParameters or \
         responseElements: what the call changed is not in the record; a person must say"
    )]
    NothingRecorded { recipe: String, name: String, members: String },
    /// The call sets something the recipe does not map: writing the rest would lose it silently.
    #[error("{name} also sets {params}, which recipe {recipe} does not map to Terraform; a person (or the agent) must")]
    Unmapped { recipe: String, name: String, params: String },
}

/// A resource as an escalation names it: by what it is when its identifier says so (the SQS queue
/// of an account and region, whatever host its URL names), with the identifier as recorded.
fn resource_said(id: &str) -> String {
    match driftback_terraform::state::Identity::parse(id) {
        Some(identity) => format!("{identity} ({id:?})"),
        None => format!("the resource {id:?}"),
    }
}

/// Plan a change set with the catalog's recipes.
pub fn plan(catalog: &Catalog, change_set: &ChangeSet, state: &State, repo: &Repo) -> Result<Plan, PlanError> {
    let mut planner =
        Planner { catalog, state, repo, events: &change_set.events, plan: Plan::default(), created: BTreeMap::new() };
    for event in &change_set.events {
        match planner.event(event, change_set.resource_id.as_deref()) {
            Ok(()) => {}
            // A resource adopted by import shows any remaining difference in `terraform plan`;
            // calls after its creation that no recipe knows are noted, not fatal.
            Err(PlanError::NoRecipe { service, name }) if !planner.created.is_empty() => {
                planner
                    .plan
                    .notes
                    .push(format!("{service} {name} is not codified; review `terraform plan` after the import"));
            }
            Err(e) => return Err(e),
        }
        // The other resources the call names, planned the same way, apart.
        let others: Vec<String> = driftback_events::resource_ids(event)
            .into_iter()
            .filter(|id| Some(id.as_str()) != change_set.resource_id.as_deref())
            .collect();
        for other in others {
            let mut apart = Planner {
                catalog,
                state,
                repo,
                events: &change_set.events,
                plan: Plan::default(),
                created: BTreeMap::new(),
            };
            if apart.event(event, Some(&other)).is_ok() {
                let own: Vec<&Address> = planner.plan.changes.iter().map(|c| &c.address).collect();
                let extra: Vec<ResourceChange> =
                    apart.plan.changes.into_iter().filter(|c| !own.contains(&&c.address)).collect();
                planner.plan.alongside.extend(extra);
            }
        }
    }
    planner.settle_set_backs();
    // Only secrets: nothing could be written, and the change set is refused as before.
    if planner.plan.is_empty() {
        if let Some(secret) = planner.plan.secrets.first() {
            return Err(PlanError::Secret { path: secret.path.to_string() });
        }
    }
    Ok(planner.plan)
}

struct Planner<'a> {
    catalog: &'a Catalog,
    state: &'a State,
    repo: &'a Repo,
    /// The change set's calls, in order (what an earlier call sent: [`Recipe::from_earlier`]).
    events: &'a [ApiEvent],
    plan: Plan,
    /// Cloud ids of resources adopted in this change set -> their new addresses.
    created: BTreeMap<String, Address>,
}

enum Target {
    Found(Address),
    Missing(String),
}

impl Planner<'_> {
    fn event(&mut self, event: &ApiEvent, resource_id: Option<&str>) -> Result<(), PlanError> {
        let recipes: Vec<&Recipe> = self.catalog.for_event(&event.source, &event.name).collect();
        if recipes.is_empty() {
            return Err(PlanError::NoRecipe { service: event.source.clone(), name: event.raw_name.clone() });
        }
        let generated_only = recipes.iter().all(|r| r.generated);
        match self.event_with(event, resource_id, recipes) {
            // A generated recipe that cannot plan the call (its resource under another type, a member
            // it does not map) leaves it to the agent, as if no recipe knew it. What must never be
            // written (a secret) or needs a person (several resources match) stays refused.
            Err(PlanError::NotManaged { .. } | PlanError::NoResource { .. } | PlanError::Unmapped { .. })
            | Err(PlanError::Recipe { .. } | PlanError::NothingRecorded { .. })
                if generated_only =>
            {
                Err(PlanError::NoRecipe { service: event.source.clone(), name: event.raw_name.clone() })
            }
            other => other,
        }
    }

    fn event_with(
        &mut self,
        event: &ApiEvent,
        resource_id: Option<&str>,
        recipes: Vec<&Recipe>,
    ) -> Result<(), PlanError> {
        if recipes.iter().all(|r| r.no_op) {
            self.plan.notes.push(format!("{} changes no configuration", event.raw_name));
            return Ok(());
        }
        let mut last_missing = None;
        // Whether any recipe's conditions held: when none did, no recipe knows this form of the
        // call (API Gateway v1's UpdateStage beside v2's), and it goes where unknown calls go.
        let mut applied = false;
        // A recipe whose conditions held but whose identifier the record does not give.
        let mut unnamed: Option<&Recipe> = None;
        let holds = |recipe: &Recipe, event: &ApiEvent| {
            recipe.if_request_is.iter().all(|(path, want)| {
                // Compared as written: `"UPSERT"`, or `true` as "true".
                event_value(event, path).is_some_and(|v| text_of(&v) == *want)
            })
        };
        for recipe in &recipes {
            // Items that each change one resource: a list the call sends, or JSON Patch operations
            // read as members.
            let items = match (&recipe.each, &recipe.patch) {
                (Some(each), _) => Some(event_value(event, each).map(|v| as_list(&v)).unwrap_or_default()),
                (None, Some(patch)) => Some(crate::json_patch::items(patch, event).unwrap_or_default()),
                (None, None) => None,
            };
            if let (Some(items), Some(key)) = (items, &recipe.key) {
                if items.is_empty() {
                    continue;
                }
                // Each item read as a request of its own, which also holds the call's top-level
                // members it does not name itself (Route 53's `hostedZoneId` beside each change).
                let sub = |item: &Value| ApiEvent { request: with_call_members(item, &event.request), ..event.clone() };
                let applies = |item: &Value| {
                    let one = sub(item);
                    holds(recipe, &one)
                        && recipe.if_request_has.iter().all(|path| event_value(&one, path).is_some())
                        && recipe.if_request_lacks.iter().all(|path| event_value(&one, path).is_none())
                };
                if !items.iter().all(applies) {
                    continue;
                }
                if recipe.patch.is_some() {
                    let unread: Vec<String> =
                        items.iter().flat_map(|item| crate::json_patch::unread_members(recipe, item)).collect();
                    if !unread.is_empty() {
                        return Err(PlanError::Unmapped {
                            recipe: recipe.id.clone(),
                            name: event.raw_name.clone(),
                            params: unread.join(", "),
                        });
                    }
                }
                // Every item's resource must be known before anything is planned: all or nothing.
                let mut planned = Vec::new();
                let mut creates = Vec::new();
                for item in items {
                    let sub = sub(&item);
                    let Some(Value::String(id)) = event_value(&sub, key) else {
                        return Err(PlanError::NoResource { name: event.raw_name.clone() });
                    };
                    match self.target(recipe, &id, &sub)? {
                        // A recipe that only creates: already managed, nothing to adopt. One that also
                        // sets (Route 53's UPSERT) changes the records that exist and adopts the others.
                        Target::Found(_) if recipe.create.is_some() && recipe.set.is_empty() => {}
                        Target::Found(address) => {
                            let ops = self.ops(recipe, &sub, &address)?;
                            planned.push((address, ops));
                        }
                        Target::Missing(id) if recipe.create.is_some() => creates.push((sub, id)),
                        Target::Missing(id) => return Err(PlanError::NotManaged { id, name: event.raw_name.clone() }),
                    }
                }
                if let Some(create) = &recipe.create {
                    for (sub, id) in creates {
                        self.create(recipe, create, &sub, &id)?;
                    }
                }
                for (address, ops) in planned {
                    self.push(address, ops, &recipe.id, false);
                }
                return Ok(());
            }
            // The identifier where the API logs it (request, response, resources[]: see
            // `Recipe::identifier`), the change set's resource standing in after the request.
            let in_request = recipe.key.as_deref().and_then(|key| match event_value(event, key) {
                Some(Value::String(s)) => Some(s),
                _ => None,
            });
            let id = match in_request.or_else(|| resource_id.map(str::to_string)).or_else(|| recipe.identifier(event)) {
                Some(id) => id,
                None if recipe.key.is_none() => return Err(PlanError::NoResource { name: event.raw_name.clone() }),
                None => {
                    let conditions_hold = recipe.if_request_has.iter().all(|p| event_value(event, p).is_some())
                        && recipe.if_request_lacks.iter().all(|p| event_value(event, p).is_none())
                        && holds(recipe, event);
                    if conditions_hold && unnamed.is_none() {
                        unnamed = Some(recipe);
                    }
                    continue;
                }
            };
            if recipe.if_request_has.iter().any(|path| event_value(event, path).is_none())
                || recipe.if_request_lacks.iter().any(|path| event_value(event, path).is_some())
                || !holds(recipe, event)
            {
                continue;
            }
            // A record without the members that place the resource (a v2 stage's `apiId`) is the
            // call's other shape (a REST API's `restApiId`): another recipe's, not an unmanaged one.
            if recipe.identity.iter().any(|rule| event_value(event, &rule.from).is_none()) {
                continue;
            }
            applied = true;
            // This form of the call changes no configuration (a policy version kept aside).
            if recipe.no_op {
                self.plan.notes.push(format!("{} changes no configuration", event.raw_name));
                return Ok(());
            }
            if let Some(cond) = &recipe.if_state_has {
                // Compared as identities: a queue URL in another host form names the same queue.
                if !self.state.has(&cond.rtype, &cond.attr, &id) {
                    continue;
                }
            }
            // What an earlier call of the change set sent, read as part of this one.
            let merged;
            let event = match &recipe.from_earlier {
                None => event,
                Some(rule) => {
                    let before = self.events.iter().position(|e| e.id == event.id).unwrap_or(self.events.len());
                    let earlier = self.events[..before].iter().rev().find(|e| {
                        rule.events.contains(&e.name)
                            && rule.matching.iter().all(|(theirs, ours)| {
                                let (a, b) = (event_value(e, theirs), event_value(event, ours));
                                a.is_some() && a.map(|v| text_of(&v)) == b.map(|v| text_of(&v))
                            })
                    });
                    let Some(earlier) = earlier else {
                        return Err(PlanError::Recipe {
                            recipe: recipe.id.clone(),
                            message: format!(
                                "{} names what an earlier {} sent, and no such call is in this change set; a person must \
                                 say what it holds",
                                event.raw_name,
                                rule.events.join(" or ")
                            ),
                        });
                    };
                    merged = ApiEvent { request: with_call_members(&event.request, &earlier.request), ..event.clone() };
                    &merged
                }
            };
            match self.target(recipe, &id, event)? {
                Target::Found(address) => {
                    if recipe.create.is_some() {
                        // Created, yet already managed: nothing to adopt.
                        return Ok(());
                    }
                    let ops = self.ops(recipe, event, &address)?;
                    let ops = self.documents_in_code_form(&address, ops);
                    let ops = self.ids_as_fleet_references(&address, ops);
                    let ops = self.without_ignored(&address, ops);
                    self.push(address, ops, &recipe.id, false);
                    return Ok(());
                }
                Target::Missing(id) => {
                    if let Some(create) = &recipe.create {
                        return self.create(recipe, create, event, &id);
                    }
                    if let Some(adopt) = &recipe.adopt {
                        if self.adopt(recipe, adopt, event, &id)? {
                            return Ok(());
                        }
                    }
                    last_missing = Some(id);
                }
            }
        }
        match last_missing {
            Some(id) => Err(PlanError::NotManaged { id, name: event.raw_name.clone() }),
            None if !applied => match unnamed {
                Some(recipe) => Err(PlanError::NoIdentifier {
                    name: event.raw_name.clone(),
                    what: recipe.resource_noun(),
                    key: recipe.key.clone().unwrap_or_default(),
                }),
                None => Err(PlanError::NoRecipe { service: event.source.clone(), name: event.raw_name.clone() }),
            },
            None => Err(PlanError::NoResource { name: event.raw_name.clone() }),
        }
    }

    fn target(&self, recipe: &Recipe, id: &str, event: &ApiEvent) -> Result<Target, PlanError> {
        // A resource this change set creates, when it is of a type the recipe changes.
        let of_its_types =
            |a: &&Address| recipe.types.iter().any(|t| t == "*" || *t == a.rtype) || recipe.types.is_empty();
        if let Some(address) = self.created.get(id).filter(of_its_types) {
            return Ok(Target::Found(address.clone()));
        }
        if let Some(address) = recipe.types.iter().find_map(|t| self.created.get(&format!("{t}:{id}"))) {
            return Ok(Target::Found(address.clone()));
        }
        let types: Vec<&str> = recipe.types.iter().map(String::as_str).collect();
        let lookup: Vec<&str> = recipe.lookup.iter().map(String::as_str).collect();
        let mut found = self.state.find(id, &types, &lookup);
        if found.is_empty() {
            // Called by name where the resource is known by the ARN of the thing it configures
            // (`rotate-secret --secret-id platform/db`, and the rotation's `secret_id` is the
            // secret's ARN): the ARN and id of the one resource of that name stand for it.
            let named: Vec<_> = self.state.find(id, &[], &["name"]);
            if let [one] = named.as_slice() {
                for alias in ["arn", "id"].iter().filter_map(|a| one.attr_str(a)) {
                    found = self.state.find(alias, &types, &lookup);
                    if !found.is_empty() {
                        break;
                    }
                }
            }
        }
        if !recipe.identity.is_empty() {
            found.retain(|i| {
                recipe.identity.iter().all(|rule| {
                    let (Some(want), Some(have)) = (event_value(event, &rule.from), i.attributes.get(&rule.attr))
                    else {
                        return false;
                    };
                    match (want.as_str(), have.as_str()) {
                        (Some(w), Some(h)) => w.trim_end_matches('.') == h.trim_end_matches('.'),
                        _ => driftback_terraform::patch::values_equal(&want, have),
                    }
                })
            });
        }
        if found.len() > 1 {
            // Prefer what the configuration actually declares.
            found.retain(|i| self.repo.find_resource(&i.address).is_some());
        }
        match found.as_slice() {
            [] => Ok(Target::Missing(id.to_string())),
            [one] => Ok(Target::Found(one.address.clone())),
            many => Err(PlanError::Ambiguous {
                id: id.to_string(),
                name: event.raw_name.clone(),
                addresses: many.iter().map(|i| i.address.to_string()).collect::<Vec<_>>().join(", "),
            }),
        }
    }

    /// Whether an earlier call of the change set set `path` of `address`.
    fn set_earlier(&self, address: &Address, path: &AttrPath) -> bool {
        self.plan
            .changes
            .iter()
            .filter(|c| c.address == *address)
            .flat_map(|c| &c.ops)
            .any(|op| matches!(op, Op::Set { path: p, .. } if p == path))
    }

    /// Several calls of the change set setting one attribute: the last value is what it holds. A
    /// value changed and set back within the change set (the last one is the state's) is nothing to
    /// do: its sets go, and the plan says so; with nothing else, the change set ends with no branch.
    fn settle_set_backs(&mut self) {
        let mut emptied: Vec<Address> = Vec::new();
        for change in &mut self.plan.changes {
            if change.created {
                continue;
            }
            let mut last: BTreeMap<String, usize> = BTreeMap::new();
            let mut count: BTreeMap<String, usize> = BTreeMap::new();
            for (i, op) in change.ops.iter().enumerate() {
                if let Op::Set { path, .. } = op {
                    last.insert(path.to_string(), i);
                    *count.entry(path.to_string()).or_default() += 1;
                }
            }
            let state = self.state.get(&change.address).map(|i| Value::Object(i.attributes.clone()));
            let mut drop: Vec<String> = Vec::new();
            let mut set_back: Vec<String> = Vec::new();
            for (path, n) in &count {
                if *n < 2 {
                    continue;
                }
                let Op::Set { path: at, value: AttrValue::Literal(value) } = &change.ops[last[path]] else {
                    drop.push(path.clone());
                    continue;
                };
                let held = state.as_ref().and_then(|s| value_at_path(s, at));
                if held.is_some_and(|have| driftback_terraform::patch::values_equal(&have, value)) {
                    set_back.push(path.clone());
                } else {
                    drop.push(path.clone());
                }
            }
            let mut i = 0;
            change.ops.retain(|op| {
                let keep = match op {
                    Op::Set { path, .. } => {
                        let p = path.to_string();
                        let superseded = drop.contains(&p) && last.get(&p) != Some(&i);
                        !(set_back.contains(&p) || superseded)
                    }
                    _ => true,
                };
                i += 1;
                keep
            });
            if change.ops.is_empty() && !set_back.is_empty() {
                emptied.push(change.address.clone());
            }
            for path in set_back {
                self.plan.notes.push(format!(
                    "{}: {path} was changed and set back to the value it had within this change set; nothing to do",
                    change.address
                ));
            }
        }
        self.plan.changes.retain(|c| !emptied.contains(&c.address));
    }

    fn push(&mut self, address: Address, ops: Vec<Op>, recipe: &str, created: bool) {
        match self.plan.changes.iter_mut().find(|c| c.address == address) {
            Some(change) => {
                change.ops.extend(ops);
                if !change.recipes.iter().any(|r| r == recipe) {
                    change.recipes.push(recipe.to_string());
                }
            }
            None => self.plan.changes.push(ResourceChange { address, ops, recipes: vec![recipe.to_string()], created }),
        }
    }

    fn ops(&mut self, recipe: &Recipe, event: &ApiEvent, address: &Address) -> Result<Vec<Op>, PlanError> {
        let unmapped = unmapped_parameters(recipe, event);
        if !unmapped.is_empty() {
            return Err(PlanError::Unmapped {
                recipe: recipe.id.clone(),
                name: event.raw_name.clone(),
                params: unmapped.join(", "),
            });
        }
        let err = |message: String| PlanError::Recipe { recipe: recipe.id.clone(), message };
        let parse_path = |p: &str| AttrPath::parse(p).map_err(|e| err(e.to_string()));
        let mut ops = Vec::new();
        let config = effective_config(self.repo, address);
        // Whether the record carried anything the rules read: a call that changed something the
        // record does not show must not end as "nothing changed".
        let mut read_any = false;
        for rule in &recipe.set {
            // The request first; a member it does not carry, from the response where the rule
            // names it there (`layers|response.layers[*].arn`: the result of the call). A rule whose
            // absence means "unset" (a call that replaces the whole entry) reads as written.
            let (found, from_response) = match rule.unset_when_absent {
                true => (event_value(event, &rule.from), false),
                false => request_then_response(event, &rule.from),
            };
            let Some(raw) = found else {
                if rule.unset_when_absent {
                    read_any = true;
                    let path = parse_path(&rule.path)?;
                    if configured(config.as_ref(), &path) {
                        ops.push(Op::Remove { path });
                    }
                }
                continue;
            };
            read_any = true;
            let value = match (&rule.value, raw.as_str().and_then(|s| rule.map.get(s))) {
                (Some(fixed), _) => fixed.clone(),
                (None, Some(mapped)) => mapped.clone(),
                (None, None) => convert(raw, rule.convert),
            };
            let path = parse_path(&rule.path)?;
            if self.held_secret(address, &path, &value) {
                continue;
            }
            // The response echoes the resource after the call, changed or not: a value from there
            // is this call's change only where the state holds another.
            if from_response && !self.differs_from_state(address, &path, &value) {
                continue;
            }
            // Unchanged against the state, unless an earlier call of the change set set it: then
            // this call sets it back, which `settle_set_backs` reads.
            if self.resent_unchanged(address, config.as_ref(), &path, &value) && !self.set_earlier(address, &path) {
                continue;
            }
            if recipe.resends_whole_config && self.provider_computes_unset(address, config.as_ref(), &path) {
                continue;
            }
            if rule.convert == Some(Convert::Json) {
                if let Some(members) = self.json_members(address, config.as_ref(), &path, &value) {
                    ops.extend(members);
                    continue;
                }
            }
            ops.push(Op::Set { path, value: AttrValue::Literal(value) });
        }
        if !read_any && recipe.actions() == ["set"] {
            return Err(PlanError::NothingRecorded {
                recipe: recipe.id.clone(),
                name: event.raw_name.clone(),
                members: recipe.set.iter().map(|r| r.from.clone()).collect::<Vec<_>>().join(", "),
            });
        }
        if let Some(rule) = &recipe.statement {
            let document = self.statement_document(recipe, rule, event, address)?;
            let path = parse_path(&rule.path)?;
            let value = Value::String(document.to_string());
            match self.json_members(address, config.as_ref(), &path, &value) {
                Some(members) => ops.extend(members),
                None => ops.push(Op::Set { path, value: AttrValue::Literal(value) }),
            }
        }
        if let Some(rule) = &recipe.whole {
            let document = event_value(event, &rule.from).unwrap_or(Value::Null);
            let Some(instance) = self.state.get(address) else {
                return Err(err(format!("{address} has no attributes in the state to read `{}` against", rule.from)));
            };
            match crate::document::changes(rule, &document, &instance.attributes, config.as_ref()) {
                Ok(changes) => {
                    for (path, value) in changes.set {
                        if self.held_secret(address, &path, &value) {
                            continue;
                        }
                        ops.push(Op::Set { path, value: AttrValue::Literal(value) });
                    }
                    for added in changes.added {
                        let examples = config
                            .as_ref()
                            .and_then(|c| c.get(&added.block_type))
                            .and_then(Value::as_array)
                            .cloned()
                            .unwrap_or_default();
                        let spec =
                            added_block(&address.rtype, &added, &examples).map_err(|reason| PlanError::Unmapped {
                                recipe: recipe.id.clone(),
                                name: event.raw_name.clone(),
                                params: reason,
                            })?;
                        ops.push(Op::AddBlock { block_type: added.block_type, spec });
                    }
                }
                Err(unplaced) => {
                    return Err(PlanError::Unmapped {
                        recipe: recipe.id.clone(),
                        name: event.raw_name.clone(),
                        params: unplaced.join(", "),
                    });
                }
            }
        }
        if let Some(rule) = &recipe.keyed_blocks {
            let blocks =
                config.as_ref().and_then(|c| c.get(&rule.block)).and_then(Value::as_array).cloned().unwrap_or_default();
            for item in event_value(event, &rule.items).map(|v| as_list(&v)).unwrap_or_default() {
                let Some(key) = value_at(&item, &rule.key) else { continue };
                let index = blocks.iter().position(|b| {
                    b.get(&rule.key_attr).is_some_and(|k| driftback_terraform::patch::values_equal(k, &key))
                });
                let Some(index) = index else {
                    // A block the code does not have yet (a setting enabled, a rule added): added
                    // whole, when the code writes this block type as plain blocks it can hold.
                    // Where `dynamic` blocks make these, the patcher adds an element to their
                    // `for_each` (a map entry in tfvars), or refuses.
                    let mut spec = BlockSpec::default();
                    spec.attrs.push((rule.key_attr.clone(), AttrValue::Literal(key.clone())));
                    for set in &rule.set {
                        let Some(raw) = value_at(&item, &set.from) else { continue };
                        let value = match raw.as_str().and_then(|s| set.map.get(s)) {
                            Some(mapped) => mapped.clone(),
                            None => convert(raw, set.convert),
                        };
                        if set.default.as_ref() == Some(&value) {
                            continue;
                        }
                        let names: Vec<String> = set.path.split('.').map(str::to_string).collect();
                        insert_at(&mut spec, &names, AttrValue::Literal(value));
                    }
                    ops.push(Op::AddBlock { block_type: rule.block.clone(), spec });
                    continue;
                };
                for set in &rule.set {
                    let Some(raw) = value_at(&item, &set.from) else { continue };
                    let value = match raw.as_str().and_then(|s| set.map.get(s)) {
                        Some(mapped) => mapped.clone(),
                        None => convert(raw, set.convert),
                    };
                    let path = parse_path(&format!("{}[{index}].{}", rule.block, set.path))?;
                    if self.held_secret(address, &path, &value) {
                        continue;
                    }
                    if self.resent_unchanged(address, config.as_ref(), &path, &value) {
                        continue;
                    }
                    ops.push(Op::Set { path, value: AttrValue::Literal(value) });
                }
            }
        }
        if let Some(rule) = &recipe.set_named {
            if let (Some(Value::String(name)), Some(value)) =
                (event_value(event, &rule.name), event_value(event, &rule.value))
            {
                let Some(path) = rule.paths.get(&name) else {
                    // An attribute the recipe does not map is refused by name, never dropped.
                    return Err(PlanError::Unmapped {
                        recipe: recipe.id.clone(),
                        name: event.raw_name.clone(),
                        params: format!("{} {name}", rule.name),
                    });
                };
                let path = parse_path(path)?;
                if !self.held_secret(address, &path, &value) {
                    ops.push(Op::Set { path, value: AttrValue::Literal(value) });
                }
            }
        }
        for path in &recipe.remove {
            ops.push(Op::Remove { path: parse_path(path)? });
        }
        for rule in &recipe.remove_when {
            let given = event_value(event, &rule.from);
            let applies = match rule.equals.as_str() {
                // Whatever the value: an argument that conflicts with the one the call sets.
                "*" => given.is_some(),
                want => given.as_ref().and_then(Value::as_str) == Some(want),
            };
            if !applies {
                continue;
            }
            for path in &rule.paths {
                let path = parse_path(path)?;
                if configured(config.as_ref(), &path) {
                    ops.push(Op::Remove { path });
                }
            }
        }
        let defaults = driftback_terraform::eval::provider_default_tags(self.repo);
        for rule in &recipe.map_merge {
            for (key, value) in map_entries(event, rule) {
                if key.starts_with("aws:") {
                    continue;
                }
                if rule.path == "tags" && defaults.get(&key) == Some(&value) {
                    self.plan.notes.push(format!("tag {key} = {value} equals the provider's default tag: no drift"));
                    continue;
                }
                let path = with_key(&parse_path(&rule.path)?, &key);
                if self.held_secret(address, &path, &value) {
                    continue;
                }
                ops.push(Op::Set { path, value: AttrValue::Literal(value) });
            }
        }
        for rule in &recipe.map_remove {
            let keys: Vec<String> = match (&rule.items, &rule.key) {
                (Some(items), Some(key)) => event_value(event, items)
                    .map(|v| {
                        as_list(&v)
                            .iter()
                            .filter_map(|i| value_at(i, key))
                            .filter_map(|k| k.as_str().map(str::to_string))
                            .collect()
                    })
                    .unwrap_or_default(),
                (Some(items), None) => event_value(event, items)
                    .map(|v| as_list(&v).iter().filter_map(|k| k.as_str().map(str::to_string)).collect())
                    .unwrap_or_default(),
                _ => Vec::new(),
            };
            for key in keys {
                ops.push(Op::Remove { path: with_key(&parse_path(&rule.path)?, &key) });
            }
        }
        for rule in &recipe.map_replace {
            let mut entries = Map::new();
            for (key, value) in map_entries(event, rule) {
                if key.starts_with("aws:") {
                    continue;
                }
                if rule.path == "tags" && defaults.get(&key) == Some(&value) {
                    self.plan.notes.push(format!("tag {key} comes from the provider's default_tags"));
                    continue;
                }
                entries.insert(key, value);
            }
            let path = parse_path(&rule.path)?;
            if self.held_secret(address, &path, &Value::Object(entries.clone())) {
                continue;
            }
            ops.push(if entries.is_empty() {
                Op::Remove { path }
            } else {
                Op::Set { path, value: AttrValue::Literal(Value::Object(entries)) }
            });
        }
        ops.extend(self.list_deltas(recipe, event, address)?);
        // Removed first: a block written again (a route with a new target) is removed, then added.
        for rule in &recipe.block_remove {
            for item in event_value(event, &rule.items).map(|v| as_list(&v)).unwrap_or_default() {
                let matching = item_attrs(&item, &rule.attrs).into_iter().filter(|(k, _)| k != "description").collect();
                ops.push(Op::RemoveBlocks { block_type: rule.block.clone(), matching });
            }
        }
        for rule in &recipe.block_add {
            let existing =
                config.as_ref().and_then(|c| c.get(&rule.block)).and_then(Value::as_array).cloned().unwrap_or_default();
            for item in event_value(event, &rule.items).map(|v| as_list(&v)).unwrap_or_default() {
                let attrs = item_attrs(&item, &rule.attrs);
                if let Some(op) = widen_matching_block(&rule.block, &existing, &attrs) {
                    ops.push(op);
                    continue;
                }
                let spec = nested_spec(attrs.into_iter().map(|(k, v)| (k, AttrValue::Literal(v))));
                ops.push(Op::AddBlock { block_type: rule.block.clone(), spec });
            }
        }
        for rule in &recipe.block_replace {
            // A call that leaves the list out leaves those blocks as they are (ModifyRule with new
            // conditions only); an empty list is not a configuration the code can hold.
            let Some(given) = event_value(event, &rule.items) else { continue };
            let items = as_list(&given);
            if items.is_empty() {
                return Err(err(format!("the call gives no `{}` to replace the blocks with", rule.items)));
            }
            // The whole block is written from what the item holds: a member no rule reads would be lost.
            let read: Vec<&str> = rule
                .attrs
                .values()
                .filter_map(|v| v.as_str())
                .flat_map(|v| v.split('|'))
                .map(|p| p.trim().split(['.', '[']).next().unwrap_or_default())
                .chain(rule.implied.iter().map(String::as_str))
                .collect();
            let unread: Vec<String> = items
                .iter()
                .filter_map(Value::as_object)
                .flat_map(|o| {
                    o.keys().filter(move |k| !rule.redundant_with.get(*k).is_some_and(|other| o.contains_key(other)))
                })
                .filter(|k| !read.contains(&k.as_str()))
                .map(|k| format!("{}.{k}", rule.items))
                .collect();
            if !unread.is_empty() {
                return Err(PlanError::Unmapped {
                    recipe: recipe.id.clone(),
                    name: event.raw_name.clone(),
                    params: unread.join(", "),
                });
            }
            // The blocks the state already has, sent again (the console's form sends every action):
            // nothing changed, nothing to write.
            let current = self
                .state
                .get(address)
                .and_then(|i| i.attributes.get(&rule.block))
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let same_as_state = current.len() == items.len()
                && items.iter().zip(&current).all(|(item, have)| {
                    item_attrs(item, &rule.attrs)
                        .iter()
                        .all(|(k, v)| have.get(k).is_some_and(|h| driftback_terraform::patch::values_equal(h, v)))
                });
            if same_as_state {
                continue;
            }
            // The blocks the code has go first (none yet: only the new ones are added).
            if config.as_ref().and_then(|c| c.get(&rule.block)).is_some_and(|b| !is_empty_json(b)) {
                ops.push(Op::RemoveBlocks { block_type: rule.block.clone(), matching: vec![] });
            }
            for item in items {
                let mut inner = Vec::new();
                let mut attrs = Vec::new();
                for (k, v) in item_attrs(&item, &rule.attrs) {
                    match nested_blocks_of(&address.rtype, &rule.block, &k, &v) {
                        Some(blocks) => inner.extend(blocks.map_err(|params| PlanError::Unmapped {
                            recipe: recipe.id.clone(),
                            name: event.raw_name.clone(),
                            params,
                        })?),
                        None => attrs.push((k, self.reference_or_literal(v, address))),
                    }
                }
                let mut spec = nested_spec(attrs);
                spec.blocks.extend(inner);
                ops.push(Op::AddBlock { block_type: rule.block.clone(), spec });
            }
        }
        if let Some(rule) = &recipe.set_keyed {
            let mut unknown = Vec::new();
            for item in event_value(event, &rule.items).map(|v| as_list(&v)).unwrap_or_default() {
                let Some(Value::String(key)) = value_at(&item, &rule.key) else { continue };
                let Some(value) = value_at(&item, &rule.value) else { continue };
                let Some(target) = rule.paths.get(&key) else {
                    unknown.push(key);
                    continue;
                };
                let (path, conv) = match target.split_once(':') {
                    Some((p, "number")) => (p, Some(Convert::Number)),
                    Some((p, "bool")) => (p, Some(Convert::Bool)),
                    _ => (target.as_str(), None),
                };
                let path = parse_path(path)?;
                let value = convert(value, conv);
                if self.held_secret(address, &path, &value) {
                    continue;
                }
                if self.resent_unchanged(address, config.as_ref(), &path, &value)
                    || (recipe.resends_whole_config && self.provider_computes_unset(address, config.as_ref(), &path))
                {
                    continue;
                }
                ops.push(Op::Set { path, value: AttrValue::Literal(value) });
            }
            if !unknown.is_empty() {
                return Err(PlanError::Unmapped {
                    recipe: recipe.id.clone(),
                    name: event.raw_name.clone(),
                    params: unknown.join(", "),
                });
            }
        }
        if recipe.delete {
            ops.push(Op::RemoveResource);
        }
        if let Some(rule) = &recipe.attach {
            // Beside the resource when its module serves one instance; in the root module when the
            // module is shared (a resource written there would appear in every instance).
            let module = if module_is_shared(self.repo, address) { Vec::new() } else { address.module.clone() };
            let near = Address { module: module.clone(), ..Address::resource(&rule.rtype, "new") };
            let mut spec = BlockSpec::default();
            for (attr, from) in &rule.attrs {
                let Some(value) = from.as_str().and_then(|f| event_value(event, f)) else { continue };
                spec.attrs.push((attr.clone(), self.reference_or_literal(value, &near)));
            }
            let import_id = fill_template(&rule.import_id, event);
            let named_by = rule.name.as_deref().unwrap_or("policyArn");
            let text = event_value(event, named_by)
                .and_then(|v| v.as_str().map(str::to_string).or_else(|| v.as_i64().map(|n| n.to_string())))
                .unwrap_or_default();
            // An ARN by its last segment (`AmazonS3ReadOnlyAccess`); other text whole (`10.30.0.0/16`).
            let base = match text.strip_prefix("arn:") {
                Some(_) => text.rsplit('/').next().unwrap_or(&text).to_string(),
                None => text.replace(['.', '/', ':'], "_"),
            };
            let name = self.unique_name(&rule.rtype, &format!("{}_{}", address.name, base));
            let new = Address { module, key: None, ..Address::resource(&rule.rtype, &name) };
            self.push(new, vec![Op::CreateResource { spec, import_id }], &recipe.id, true);
        }
        if let Some(rule) = &recipe.rules {
            // Beside the group when its module serves one instance; in the root module when the
            // module is shared (a rule written there would open every call's group).
            let module = if module_is_shared(self.repo, address) { Vec::new() } else { address.module.clone() };
            let near = Address { module: module.clone(), ..Address::resource(&rule.rtype, "new") };
            for item in event_value(event, &rule.items).map(|v| as_list(&v)).unwrap_or_default() {
                let Some(Value::String(rule_id)) = value_at(&item, &rule.id) else { continue };
                let mut spec = BlockSpec::default();
                for (attr, value) in item_attrs(&item, &rule.attrs) {
                    let v = if attr == "security_group_id" {
                        self.reference_or_literal(value, &near)
                    } else {
                        AttrValue::Literal(value)
                    };
                    spec.attrs.push((attr, v));
                }
                let port = value_at(&item, "fromPort").map(|p| p.to_string()).unwrap_or_default();
                let proto =
                    value_at(&item, "ipProtocol").and_then(|p| p.as_str().map(str::to_string)).unwrap_or_default();
                let base = format!(
                    "{}_{}_{}",
                    address.name,
                    if proto == "-1" { "all" } else { &proto },
                    port.trim_matches('-')
                );
                let name = self.unique_name(&rule.rtype, &base);
                let new = Address { module: module.clone(), key: None, ..Address::resource(&rule.rtype, &name) };
                self.push(new, vec![Op::CreateResource { spec, import_id: rule_id }], &recipe.id, true);
            }
        }
        if let Some(rule) = &recipe.rules_remove {
            let mut removed = 0;
            let ids: Vec<String> = event_value(event, &rule.ids)
                .map(|v| as_list(&v).iter().filter_map(|s| s.as_str().map(str::to_string)).collect())
                .unwrap_or_default();
            let group_id =
                event_value(event, "groupId").and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
            let mut targets: Vec<Address> = ids
                .iter()
                .flat_map(|id| self.state.find(id, &[&rule.rtype], &["id"]))
                .map(|i| i.address.clone())
                .collect();
            if targets.is_empty() {
                for item in event_value(event, &rule.items).map(|v| as_list(&v)).unwrap_or_default() {
                    let mut want = item_attrs(&item, &rule.matching);
                    want.extend(rule.fixed.iter().map(|(k, v)| (k.clone(), v.clone())));
                    for instance in
                        self.state.instances.iter().filter(|i| {
                            i.address.rtype == rule.rtype && i.attr_str("security_group_id") == Some(&group_id)
                        })
                    {
                        let mut wider = None;
                        let matches = want.iter().all(|(k, v)| match instance.attributes.get(k) {
                            // A list attribute (a rule's CIDR blocks) matches when it holds the value.
                            Some(Value::Array(have)) if !v.is_array() => {
                                let holds = have.iter().any(|h| driftback_terraform::patch::values_equal(h, v));
                                if holds && have.len() > 1 {
                                    wider = Some(k.clone());
                                }
                                holds
                            }
                            Some(have) => driftback_terraform::patch::values_equal(have, v),
                            None => false,
                        });
                        if !matches {
                            continue;
                        }
                        if let Some(list) = wider {
                            return Err(err(format!(
                                "{} also allows other sources in {list}; removing it would revoke more than the \
                                 call did",
                                instance.address
                            )));
                        }
                        targets.push(instance.address.clone());
                    }
                }
            }
            for target in targets {
                self.push(target, vec![Op::RemoveResource], &recipe.id, false);
                removed += 1;
            }
            if removed == 0 {
                return Err(err("no managed rule matches the revoked permission".into()));
            }
        }
        if let Some(rule) = &recipe.permission_rules {
            self.permission_rules(recipe, rule, event, address)?;
        }
        Ok(ops)
    }

    /// One `aws_security_group_rule` per source of each permission the call adds, in the style the
    /// code already uses for this group, each with the provider's composite import id
    /// (`sg-..._ingress_tcp_443_443_10.0.0.0/16`). The rule goes beside the group when the group's
    /// module serves one instance; when its module is shared (called several times, or with
    /// `count`/`for_each`), beside the module call in the root module, so no other instance gains it.
    /// The policy document after a statement is added or removed by label: the state's document
    /// (the target's, or for a target not in the state yet, `current`'s), or an empty one.
    fn statement_document(
        &self,
        recipe: &Recipe,
        rule: &crate::catalog::StatementRule,
        event: &ApiEvent,
        address: &Address,
    ) -> Result<Value, PlanError> {
        let err = |message: String| PlanError::Recipe { recipe: recipe.id.clone(), message };
        let id = recipe.key.as_deref().and_then(|k| event_value(event, k)).and_then(|v| v.as_str().map(str::to_string));
        let identity = id.as_deref().and_then(driftback_terraform::state::Identity::parse);
        let text = match self.state.get(address) {
            Some(instance) => instance.attributes.get(&rule.path).cloned(),
            None => rule.current.as_ref().and_then(|current| {
                let found = self.state.find(id.as_deref()?, &[current.rtype.as_str()], &[]);
                found.first().and_then(|i| i.attributes.get(&current.attr).cloned())
            }),
        };
        let mut document = match text {
            Some(Value::String(t)) if !t.trim().is_empty() => serde_json::from_str::<Value>(&t)
                .map_err(|e| err(format!("the state's `{}` is not a JSON document: {e}", rule.path)))?,
            _ => json!({"Version": "2012-10-17", "Statement": []}),
        };
        let Some(Value::String(sid)) = event_value(event, &rule.sid) else {
            return Err(err(format!("the call names no `{}` for the statement", rule.sid)));
        };
        let statements = match document.get_mut("Statement") {
            Some(Value::Array(list)) => list,
            Some(one) => {
                *one = Value::Array(vec![one.take()]);
                one.as_array_mut().expect("just made a list")
            }
            None => {
                document["Statement"] = json!([]);
                document["Statement"].as_array_mut().expect("just made a list")
            }
        };
        let same = |s: &Value| s.get("Sid").and_then(Value::as_str) == Some(sid.as_str());
        if rule.remove {
            statements.retain(|s| !same(s));
            return Ok(document);
        }
        if statements.iter().any(same) {
            return Err(err(format!("the policy already has a statement labelled {sid:?}")));
        }
        let Some(identity) = identity else {
            return Err(err("the call names no resource whose ARN the statement could name".into()));
        };
        let arn = identity.arn();
        let partition = arn.split(':').nth(1).unwrap_or("aws").to_string();
        let one_or_list = |mut items: Vec<Value>| if items.len() == 1 { items.remove(0) } else { Value::Array(items) };
        let list = |path: &Option<String>| path.as_deref().and_then(|p| event_value(event, p)).map(|v| as_list(&v));
        let (Some(accounts), Some(actions)) = (list(&rule.accounts), list(&rule.actions)) else {
            return Err(err("the call names no accounts or no actions for the statement".into()));
        };
        let principals: Vec<Value> = accounts
            .iter()
            .filter_map(Value::as_str)
            .map(|a| Value::String(format!("arn:{partition}:iam::{a}:root")))
            .collect();
        let actions: Vec<Value> = actions
            .iter()
            .filter_map(Value::as_str)
            .map(|a| Value::String(format!("{}{a}", rule.action_prefix)))
            .collect();
        statements.push(json!({
            "Sid": sid,
            "Effect": "Allow",
            "Principal": {"AWS": one_or_list(principals)},
            "Action": one_or_list(actions),
            "Resource": arn,
        }));
        Ok(document)
    }

    fn permission_rules(
        &mut self,
        recipe: &Recipe,
        rule: &crate::catalog::PermissionRulesRule,
        event: &ApiEvent,
        group: &Address,
    ) -> Result<(), PlanError> {
        let err = |message: String| PlanError::Recipe { recipe: recipe.id.clone(), message };
        let group_id = event_value(event, "groupId").and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
        if !group_id.starts_with("sg-") {
            return Err(err("the call names no security group id".into()));
        }
        let in_root = group.module.is_empty() || module_is_shared(self.repo, group);
        let group_ref = if in_root && !group.module.is_empty() {
            module_output_for(self.repo, group).map(AttrValue::Reference)
        } else if group.key.is_none() {
            Some(AttrValue::Reference(format!("{}.id", group.block_name())))
        } else {
            None
        };
        let group_ref = group_ref.unwrap_or_else(|| AttrValue::Literal(Value::String(group_id.clone())));
        let items = event_value(event, &rule.items).map(|v| as_list(&v)).unwrap_or_default();
        if items.is_empty() {
            return Err(err("the call adds no permission".into()));
        }
        for item in items {
            let protocol =
                value_at(&item, "ipProtocol").and_then(|p| p.as_str().map(str::to_string)).unwrap_or_default();
            let (from, to) = if protocol == "-1" {
                (0, 0)
            } else {
                let port = |k: &str| value_at(&item, k).and_then(|p| p.as_i64().or_else(|| p.as_str()?.parse().ok()));
                match (port("fromPort"), port("toPort")) {
                    (Some(f), Some(t)) => (f, t),
                    _ => return Err(err(format!("a {protocol} permission without ports"))),
                }
            };
            // Each source is its own rule in AWS, with its own description.
            let mut sources: Vec<(&str, Value, Option<Value>)> = Vec::new();
            for (list, field, attr) in [
                ("ipRanges", "cidrIp", "cidr_blocks"),
                ("ipv6Ranges", "cidrIpv6", "ipv6_cidr_blocks"),
                ("prefixListIds", "prefixListId", "prefix_list_ids"),
                ("groups", "groupId", "source_security_group_id"),
            ] {
                for source in value_at(&item, &format!("{list}.items")).map(|v| as_list(&v)).unwrap_or_default() {
                    if let Some(v) = source.get(field).filter(|v| v.is_string()) {
                        sources.push((attr, v.clone(), source.get("description").cloned()));
                    }
                }
            }
            if sources.is_empty() {
                return Err(err("a permission with no source this recipe knows".into()));
            }
            for (attr, source, description) in sources {
                let shown = source.as_str().unwrap_or_default().to_string();
                let mut spec = BlockSpec::default();
                spec.attrs.push(("type".into(), AttrValue::Literal(Value::from(rule.direction.clone()))));
                spec.attrs.push(("security_group_id".into(), group_ref.clone()));
                spec.attrs.push(("protocol".into(), AttrValue::Literal(Value::from(protocol.clone()))));
                spec.attrs.push(("from_port".into(), AttrValue::Literal(Value::from(from))));
                spec.attrs.push(("to_port".into(), AttrValue::Literal(Value::from(to))));
                let value = if attr == "source_security_group_id" {
                    self.reference_or_literal(
                        source,
                        &if in_root { Address::resource("x", "x") } else { group.clone() },
                    )
                } else {
                    AttrValue::Literal(Value::Array(vec![source]))
                };
                spec.attrs.push((attr.into(), value));
                if let Some(d) = description.filter(|d| d.as_str().is_some_and(|d| !d.is_empty())) {
                    spec.attrs.push(("description".into(), AttrValue::Literal(d)));
                }
                let proto = if protocol == "-1" { "all".to_string() } else { protocol.to_ascii_lowercase() };
                let import_id = format!("{group_id}_{}_{proto}_{from}_{to}_{shown}", rule.direction);
                let base = format!("{}_{}_{proto}_{from}", group.name, rule.direction);
                let name = self.unique_name("aws_security_group_rule", &base);
                let module = if in_root { Vec::new() } else { group.module.clone() };
                let new = Address { module, key: None, ..Address::resource("aws_security_group_rule", &name) };
                self.push(new, vec![Op::CreateResource { spec, import_id }], &recipe.id, true);
            }
        }
        Ok(())
    }

    /// APIs that take a whole configuration (`PutMetricAlarm`) re-send values that did not change.
    /// A value the configuration leaves unset and the state already holds is one of those: the
    /// provider's default, not drift.
    /// For a JSON document the code builds with `jsonencode({...})` (from literals, or from other
    /// resources: its effective value is then symbolic): one change per member that differs between
    /// the state's document and the new one, so the code keeps its shape and its references. `None` when the code
    /// writes the document as plain text, or either document does not parse.
    fn json_members(
        &self,
        address: &Address,
        config: Option<&Value>,
        path: &AttrPath,
        value: &Value,
    ) -> Option<Vec<Op>> {
        let code = config.and_then(|c| value_at_path(c, path))?;
        let built_in_code = code.as_str().is_some_and(|s| s.starts_with("${jsonencode("))
            || self.written_as(address, path).is_some_and(|source| source.starts_with("jsonencode("));
        if !built_in_code {
            return None;
        }
        let parse = |v: &Value| v.as_str().and_then(|s| serde_json::from_str::<Value>(s).ok());
        let new = parse(value)?;
        let instance = self.state.get(address)?;
        let old = parse(&value_at_path(&Value::Object(instance.attributes.clone()), path)?)?;
        let mut ops = Vec::new();
        json_diff(path, &old, &new, &mut ops);
        Some(ops)
    }

    /// A JSON document set whole (a topic's `Policy` through `SetTopicAttributes`, a domain's
    /// `AccessPolicies`), whatever recipe rule read it: where the code builds it with
    /// `jsonencode({...})`, it changes member by member, so the code keeps its form and references.
    fn documents_in_code_form(&self, address: &Address, ops: Vec<Op>) -> Vec<Op> {
        let is_document =
            |text: &str| matches!(serde_json::from_str::<Value>(text), Ok(Value::Object(_) | Value::Array(_)));
        if !ops.iter().any(|op| matches!(op, Op::Set { path, value: AttrValue::Literal(Value::String(text)) } if path.0.len() == 1 && is_document(text))) {
            return ops;
        }
        let config = effective_config(self.repo, address);
        let mut out = Vec::new();
        for op in ops {
            match &op {
                Op::Set { path, value: AttrValue::Literal(value @ Value::String(text)) }
                    if path.0.len() == 1 && is_document(text) =>
                {
                    match self.json_members(address, config.as_ref(), path, value) {
                        Some(members) => out.extend(members),
                        None => out.push(op),
                    }
                }
                _ => out.push(op),
            }
        }
        out
    }

    /// An argument the code sets as an attribute of one instance of a fleet picked by a computed
    /// key (`target_key_id = aws_kms_key.this[each.value].key_id`), set by the call to what another
    /// instance of that fleet has: the new value is a reference to that instance
    /// (`aws_kms_key.this["app"].key_id`), so the patch changes the key that picks it at its origin
    /// (a map entry) instead of writing an id over the reference.
    fn ids_as_fleet_references(&self, address: &Address, ops: Vec<Op>) -> Vec<Op> {
        ops.into_iter()
            .map(|op| {
                let Op::Set { path, value: AttrValue::Literal(Value::String(id)) } = &op else { return op };
                let Some((rtype, name, attr)) = self.written_as(address, path).as_deref().and_then(picked_from_fleet)
                else {
                    return op;
                };
                let found: Vec<&driftback_terraform::StateInstance> = self
                    .state
                    .find(id, &[rtype.as_str()], &[attr.as_str(), "arn", "id"])
                    .into_iter()
                    .filter(|i| i.address.module == address.module && i.address.name == name && i.address.key.is_some())
                    .collect();
                match found.as_slice() {
                    [one] => Op::Set {
                        path: path.clone(),
                        value: AttrValue::Reference(format!(
                            "{}.{attr}",
                            Address { module: Vec::new(), ..one.address.clone() }
                        )),
                    },
                    _ => op,
                }
            })
            .collect()
    }

    /// [`Recipe::list_delta`]: the list the state holds, with the values an item turns on added at
    /// its end (in the call's order) and those it turns off taken out; written whole when it differs.
    /// An item without its flag or values is refused by name, never guessed.
    fn list_deltas(&self, recipe: &Recipe, event: &ApiEvent, address: &Address) -> Result<Vec<Op>, PlanError> {
        let refuse = |message: String| PlanError::Recipe { recipe: recipe.id.clone(), message };
        let mut ops = Vec::new();
        for rule in &recipe.list_delta {
            let Some(given) = event_value(event, &rule.items) else { continue };
            let path = AttrPath::parse(&rule.path).map_err(|e| refuse(e.to_string()))?;
            let held = self
                .state
                .get(address)
                .and_then(|i| value_at_path(&Value::Object(i.attributes.clone()), &path))
                .unwrap_or(Value::Null);
            let before: Vec<Value> = match held {
                Value::Array(items) => items,
                Value::Null => Vec::new(),
                other => return Err(refuse(format!("{address}: `{path}` is {other} in the state, not a list"))),
            };
            let mut after = before.clone();
            for item in as_list(&given) {
                let on = match value_at(&item, &rule.flag) {
                    Some(Value::Bool(on)) => on,
                    _ => {
                        return Err(refuse(format!(
                            "an item of `{}` has no true or false `{}`",
                            rule.items, rule.flag
                        )));
                    }
                };
                let values = match value_at(&item, &rule.values) {
                    Some(v @ Value::String(_)) => vec![v],
                    Some(Value::Array(values)) if values.iter().all(Value::is_string) => values,
                    _ => {
                        return Err(refuse(format!(
                            "an item of `{}` names no `{}` to turn on or off",
                            rule.items, rule.values
                        )));
                    }
                };
                for value in values {
                    if !on {
                        after.retain(|v| *v != value);
                    } else if !after.contains(&value) {
                        after.push(value);
                    }
                }
            }
            // A list the provider keeps as a set may come back from the state in another order.
            if same_members(&before, &after) {
                continue;
            }
            ops.push(Op::Set { path, value: AttrValue::Literal(Value::Array(after)) });
        }
        Ok(ops)
    }

    /// Changes to arguments the resource's `lifecycle { ignore_changes }` lists are not drift:
    /// Terraform leaves them alone on purpose (an autoscaler owns `desired_count`). Noted, not planned.
    fn without_ignored(&mut self, address: &Address, ops: Vec<Op>) -> Vec<Op> {
        let ignored = driftback_terraform::eval::ignored_changes(self.repo, address);
        if ignored.is_empty() {
            return ops;
        }
        let covers = |path: &AttrPath| ignored.iter().any(|i| driftback_terraform::eval::ignore_covers(i, path));
        let (skipped, kept): (Vec<Op>, Vec<Op>) =
            ops.into_iter().partition(|op| matches!(op, Op::Set { path, .. } | Op::Remove { path } if covers(path)));
        for op in skipped {
            if let Op::Set { path, .. } | Op::Remove { path } = op {
                self.plan.notes.push(format!(
                    "{address}: {path} is in its lifecycle ignore_changes: Terraform leaves it alone, nothing to write"
                ));
            }
        }
        kept
    }

    /// The source text of a top-level argument as the resource's block writes it.
    fn written_as(&self, address: &Address, path: &AttrPath) -> Option<String> {
        let [Seg::Name(name)] = path.0.as_slice() else { return None };
        let location = self.repo.find_resource(address)?;
        let text = self.repo.text(&location.file)?;
        let block = driftback_terraform::edit::find_block(self.repo.body(&location.file)?, &location.sel)?;
        let attr = block.body.get_attribute(name)?;
        Some(driftback_terraform::edit::expr_text(text, &attr.value).trim().to_string())
    }

    /// An argument the configuration leaves out and the provider computes (optional and computed in
    /// the AWS provider's schema, like an Auto Scaling group's `desired_capacity`), re-sent by a call
    /// that sends the whole configuration: Terraform does not manage its value, the next apply keeps
    /// whatever it is now, and writing it would pin what the code leaves to AWS on purpose. Not
    /// drift; the plan says so.
    fn provider_computes_unset(&mut self, address: &Address, config: Option<&Value>, path: &AttrPath) -> bool {
        let (Some(config), [Seg::Name(name)]) = (config, path.0.as_slice()) else { return false };
        if config.get(name).is_some_and(|v| !v.is_null()) {
            return false;
        }
        let computed = driftback_terraform::Schema::newest()
            .ok()
            .and_then(|schema| schema.resource(&address.rtype))
            .and_then(|resource| resource.argument(name))
            .is_some_and(|attribute| attribute.is_computed());
        if computed {
            self.plan.notes.push(format!(
                "{address}: `{name}` is not set by the configuration and the provider computes it, so the next \
                 apply keeps the new value; nothing to write"
            ));
        }
        computed
    }

    /// Whether the state holds a value at `path` and it is not `value` (an attribute the state does
    /// not show cannot be compared, and is not taken as changed).
    fn differs_from_state(&self, address: &Address, path: &AttrPath, value: &Value) -> bool {
        let Some(instance) = self.state.get(address) else { return false };
        value_at_path(&Value::Object(instance.attributes.clone()), path)
            .is_some_and(|have| !driftback_terraform::patch::values_equal(&have, value))
    }

    fn resent_unchanged(&self, address: &Address, config: Option<&Value>, path: &AttrPath, value: &Value) -> bool {
        // Set in the code: unchanged only when the code computes it from another resource (a
        // reference the evaluator leaves symbolic) and the state says that is the value sent.
        // A set (`allow_methods`) the call sends in another order is the same set: rewriting
        // it would only reorder the code.
        let code = config.and_then(|c| value_at_path(c, path));
        if let (Some(Value::Array(have)), Value::Array(new)) = (&code, value) {
            if is_set_attribute(&address.rtype, path) && crate::document::same_members(have, new) {
                return true;
            }
        }
        // Set in the code: unchanged only when the code computes it from another resource (a
        // reference the evaluator leaves symbolic) and the state says that is the value sent. A
        // literal the call sets again is still a change of the field (a scheduled job setting back
        // what an incident changed), for its owner to judge; the patcher writes nothing for it.
        if code.as_ref().is_some_and(|v| !contains_symbolic(v)) {
            return false;
        }
        let Some(instance) = self.state.get(address) else { return false };
        value_at_path(&Value::Object(instance.attributes.clone()), path)
            .is_some_and(|have| driftback_terraform::patch::values_equal(&have, value))
    }

    fn create(&mut self, recipe: &Recipe, rule: &CreateRule, event: &ApiEvent, id: &str) -> Result<(), PlanError> {
        let err = |message: String| PlanError::Recipe { recipe: recipe.id.clone(), message };
        let raw_name = match event_value(event, &rule.name) {
            // A DNS name's final dot is never part of a Terraform name.
            Some(Value::String(name)) => without_final_dot(&name).to_string(),
            Some(Value::Number(n)) => format!("{}_{n}", rule.name),
            _ => return Err(err(format!("the event has no `{}` to name the resource by", rule.name))),
        };
        // The import id: an event path, or a template of them (`{functionName}/{statementId}`);
        // empty for a resource the provider cannot import (written without an import block).
        let complete = crate::catalog::template_paths(&rule.import_id).iter().all(|p| event_value(event, p).is_some());
        let import_id = match (rule.import_id.is_empty(), rule.import_id.contains('{')) {
            (true, _) => Some(Value::String(String::new())),
            (false, true) => Some(Value::String(fill_template(&rule.import_id, event))),
            (false, false) => event_value(event, &rule.import_id),
        };
        let Some(Value::String(import_id)) = import_id.filter(|_| complete || rule.import_id.is_empty()) else {
            return Err(err(format!("the event has no `{}` to import the resource by", rule.import_id)));
        };
        let import_id = as_provider_records(import_id);
        // A resource an AWS service made on its own behalf (an Auto Scaling group's instance, a
        // service-linked role's resources) belongs to that service, not to this code.
        if event.actor.is_aws_service() {
            self.plan.notes.push(format!(
                "{} made a new {} on its own behalf, as an AWS service does; it belongs to that service and is not \
                 adopted",
                event.actor.display_name, rule.rtype
            ));
            return Ok(());
        }
        // What a call answers before the resource exists (an e-mail subscription is "pending
        // confirmation") is not an id Terraform can import. A name the caller chose may hold
        // spaces (an alarm's name): that one is the id.
        let answered = rule.import_id.starts_with("response.") || rule.import_id.contains("{response.");
        if (!rule.import_id.is_empty() && import_id.trim().is_empty())
            || (answered && import_id.contains(char::is_whitespace))
        {
            return Err(err(format!(
                "`{}` is {import_id:?}, not an id Terraform can import yet; adopt it once it exists",
                rule.import_id
            )));
        }
        if let Some(object) = &rule.complete {
            let read: Vec<&str> = rule
                .attrs
                .values()
                .filter_map(|v| v.as_str())
                .map(|v| v.split_once(':').map_or(v, |(p, _)| p))
                .filter_map(|p| p.strip_prefix(&format!("{object}.")))
                .map(|p| p.split(['.', '[']).next().unwrap_or_default())
                .collect();
            if let Some(Value::Object(members)) = event_value(event, object) {
                let unread: Vec<String> = members
                    .iter()
                    .filter(|(k, v)| !read.contains(&k.as_str()) && !v.is_null())
                    .map(|(k, _)| format!("{object}.{k}"))
                    .collect();
                if !unread.is_empty() {
                    return Err(PlanError::Unmapped {
                        recipe: recipe.id.clone(),
                        name: event.raw_name.clone(),
                        params: unread.join(", "),
                    });
                }
            }
        }
        let mut spec = BlockSpec::default();
        // What the call set, by attribute, as values (before any becomes a reference).
        let mut wanted: Vec<(String, Value)> = Vec::new();
        let defaults = driftback_terraform::eval::provider_default_tags(self.repo);
        // What the record does not carry, AWS chose: said in the plan (and so the commit), not guessed.
        let mut not_carried: Vec<String> = Vec::new();
        for (attr, from) in &rule.attrs {
            let Some(from) = from.as_str() else { continue };
            let (path, conv) = path_and_conversion(from);
            let Some(value) = event_value(event, path) else {
                if from != rule.name && attr != "tags" {
                    not_carried.push(attr.clone());
                }
                continue;
            };
            let mut value = convert(value, conv);
            // Tags the provider's `default_tags` already gives (same key, same value) are the
            // provider's to write: in the block too they would show as a change to make.
            if attr == "tags" {
                if let Value::Object(tags) = &mut value {
                    let given: Vec<String> =
                        tags.iter().filter(|(k, v)| defaults.get(*k) == Some(*v)).map(|(k, _)| k.clone()).collect();
                    for key in &given {
                        tags.remove(key);
                    }
                    if !given.is_empty() {
                        self.plan.notes.push(format!(
                            "{} {}: tag{} {} left out, the provider's default_tags give{} {}",
                            rule.rtype,
                            raw_name,
                            if given.len() == 1 { "" } else { "s" },
                            given.join(", "),
                            if given.len() == 1 { "s" } else { "" },
                            if given.len() == 1 { "it" } else { "them" }
                        ));
                    }
                    if tags.is_empty() {
                        continue;
                    }
                }
            }
            check_secret(&rule.rtype, &AttrPath(vec![Seg::Name(attr.clone())]), &value)?;
            let placeholder = Address::resource(&rule.rtype, "new");
            wanted.push((attr.clone(), value.clone()));
            spec.attrs.push((attr.clone(), self.reference_or_literal(value, &placeholder)));
        }
        for (attr, pick) in &rule.keys {
            let items = event_value(event, &pick.items).map(|v| as_list(&v)).unwrap_or_default();
            let chosen = items
                .iter()
                .find(|i| pick.when.iter().all(|(k, v)| value_at(i, k).as_ref().and_then(Value::as_str) == Some(v)));
            // `value = "tags:map"`: converted as an attribute's path says.
            let (path, conv) = path_and_conversion(&pick.value);
            if let Some(value) = chosen.and_then(|i| value_at(i, path)) {
                let value = convert(value, conv);
                wanted.push((attr.clone(), value.clone()));
                spec.attrs.push((attr.clone(), AttrValue::Literal(value)));
            }
        }
        if let Some(whole) = &rule.whole {
            let document = match whole.from.as_str() {
                "" => event.request.clone(),
                from => event_value(event, from).unwrap_or(Value::Null),
            };
            let shaped = crate::document::shaped_new(whole, &document);
            let schema = driftback_terraform::Schema::newest()
                .map_err(|e| err(format!("no provider schema to write a new {} by: {e}", rule.rtype)))?;
            let body = schema
                .resource(&rule.rtype)
                .ok_or_else(|| err(format!("{} is not in the provider's schema", rule.rtype)))?;
            let described = crate::document::new_resource_spec(body, &shaped, &rule.rtype).map_err(|unplaced| {
                PlanError::Unmapped { recipe: recipe.id.clone(), name: event.raw_name.clone(), params: unplaced }
            })?;
            for (attr, value) in described.attrs {
                if !spec.attrs.iter().any(|(a, _)| *a == attr) {
                    if let AttrValue::Literal(v) = &value {
                        wanted.push((attr.clone(), v.clone()));
                    }
                    spec.attrs.push((attr, value));
                }
            }
            spec.blocks.extend(described.blocks);
        }
        for (block_type, items_block) in &rule.blocks {
            for item in event_value(event, &items_block.items).map(|v| as_list(&v)).unwrap_or_default() {
                let attrs = item_attrs(&item, &items_block.attrs).into_iter().map(|(k, v)| (k, AttrValue::Literal(v)));
                spec.blocks.push((block_type.clone(), nested_spec(attrs)));
            }
        }
        // The name first, as people write it; the rest in the rule's order.
        spec.attrs.sort_by_key(|(attr, _)| !matches!(attr.as_str(), "name" | "bucket"));
        let name = self.unique_name(&rule.rtype, &raw_name);
        let mut address = Address::resource(&rule.rtype, &name);
        // Named like the instances of a `for_each` fleet of its type: a new entry of the fleet, when
        // that entry gives the new instance every value the call set (tried on a scratch copy).
        let name_attr = rule.attrs.iter().find(|(_, from)| from.as_str() == Some(rule.name.as_str())).map(|(a, _)| a);
        let op = Op::CreateResource { spec, import_id: import_id.clone() };
        if let Some(fleet) = name_attr
            .and_then(|attr| driftback_terraform::patch::fleet_address(self.repo, &rule.rtype, attr, &raw_name))
        {
            let mut scratch = self.repo.clone();
            if driftback_terraform::patch::apply(&mut scratch, &fleet, &op).is_ok() {
                address = fleet;
            }
        }
        // Named like the next instance of a `count` fleet (a reader added to a module's cluster):
        // that instance, when growing the count gives it every value the call set.
        if address.key.is_none() {
            let name_attr = name_attr.map(String::as_str).unwrap_or_default();
            for next in driftback_terraform::patch::count_fleet_addresses(self.repo, &rule.rtype) {
                let mut scratch = self.repo.clone();
                if driftback_terraform::patch::apply(&mut scratch, &next, &op).is_ok()
                    && self.grown_instance_matches(&scratch, &next, name_attr, &wanted)
                {
                    address = next;
                    break;
                }
            }
        }
        if !not_carried.is_empty() {
            self.plan.notes.push(format!(
                "{address}: the record does not carry {}; AWS chose their values (the service's defaults), which the \
                 import reads: `terraform plan` shows any that differ from the provider's defaults",
                not_carried.join(", ")
            ));
        }
        // What the creating call set that the new block does not write is said, not dropped: the
        // import shows it in `terraform plan`, and a reviewer must know to look.
        let unwritten = unwritten_members(rule, event);
        if !unwritten.is_empty() {
            self.plan.notes.push(format!(
                "{address}: {} also set {}, which the new block does not write; after the import, `terraform plan` \
                 shows them as changes to make or to add to the code",
                event.raw_name,
                unwritten.join(", ")
            ));
        }
        self.created.insert(id.to_string(), address.clone());
        if !import_id.is_empty() {
            self.created.insert(import_id, address.clone());
        }
        self.push(address, vec![op], &recipe.id, true);
        Ok(())
    }

    /// The recipe's resource written beside the one it belongs to (see [`Recipe::adopt`]): `false`
    /// when there is no such resource to stand beside.
    fn adopt(
        &mut self,
        recipe: &Recipe,
        adopt: &crate::catalog::AdoptRule,
        event: &ApiEvent,
        id: &str,
    ) -> Result<bool, PlanError> {
        let err = |message: String| PlanError::Recipe { recipe: recipe.id.clone(), message };
        let Some(rtype) = recipe.types.first() else { return Ok(false) };
        let parent = match self.created.get(id).filter(|a| a.rtype == adopt.beside) {
            Some(created) => created.clone(),
            None => {
                let found = self.state.find(
                    id,
                    &[adopt.beside.as_str()],
                    &recipe.lookup.iter().map(String::as_str).collect::<Vec<_>>(),
                );
                match found.as_slice() {
                    // One managed without a key: a `count`/`for_each` resource's companions follow its
                    // own pattern, which a new literal block would not.
                    [one] if one.address.key.is_none() && self.repo.find_resource(&one.address).is_some() => {
                        let inline = adopt.inline.as_deref().is_some_and(|block| {
                            effective_config(self.repo, &one.address).is_some_and(|c| c.get(block).is_some())
                        });
                        if inline {
                            return Ok(false);
                        }
                        one.address.clone()
                    }
                    // One instance of a fleet (`aws_s3_bucket.this["logs"]`) whose companions of this
                    // type are not a fleet themselves: a block of its own, on that instance.
                    [one]
                        if one.address.key.is_some()
                            && self.repo.find_resource(&one.address).is_some()
                            && !self.state.instances.iter().any(|i| {
                                i.address.rtype == *rtype
                                    && i.address.module == one.address.module
                                    && i.address.key.is_some()
                            }) =>
                    {
                        one.address.clone()
                    }
                    _ => return Ok(false),
                }
            }
        };
        let name = match &parent.key {
            None => parent.name.clone(),
            Some(InstanceKey::Str(k)) => self.unique_name(rtype, k),
            Some(InstanceKey::Int(i)) => self.unique_name(rtype, &format!("{}_{i}", parent.name)),
        };
        let parent_ref = match &parent.key {
            None => parent.block_name(),
            Some(InstanceKey::Str(k)) => format!("{}[{}]", parent.block_name(), driftback_terraform::render::quote(k)),
            Some(InstanceKey::Int(i)) => format!("{}[{i}]", parent.block_name()),
        };
        let address = Address { module: parent.module.clone(), key: None, ..Address::resource(rtype, &name) };
        if self.state.instances.iter().any(|i| i.address.without_key() == address)
            || self.repo.find_resource(&address).is_some()
        {
            return Ok(false);
        }
        let ops = self.ops(recipe, event, &address)?;
        let mut spec = BlockSpec::default();
        spec.attrs.push((adopt.link.clone(), AttrValue::Reference(format!("{parent_ref}.id"))));
        for op in ops {
            let Op::Set { path, value } = op else {
                return Err(err(format!("a new {rtype} can only be written from the values the call sets")));
            };
            let mut names = Vec::new();
            for seg in &path.0 {
                match seg {
                    Seg::Name(n) => names.push(n.clone()),
                    _ => return Err(err(format!("a new {rtype} cannot be written at `{path}`"))),
                }
            }
            insert_at(&mut spec, &names, value);
        }
        self.created.insert(format!("{rtype}:{id}"), address.clone());
        let import_id = as_provider_records(id.to_string());
        self.push(address, vec![Op::CreateResource { spec, import_id }], &recipe.id, true);
        Ok(true)
    }

    /// Whether the instance `address` a grown `count` makes in `scratch` has what the creating call
    /// set (`wanted`): its name attribute written as the call named it, and every other value either
    /// written so (a reference to another resource read through the state), or left to the
    /// provider, which computes it or gave it to every instance of the block already (the state's
    /// value on each). Anything else would show as a change after the import: not this instance.
    fn grown_instance_matches(
        &self,
        scratch: &Repo,
        address: &Address,
        name_attr: &str,
        wanted: &[(String, Value)],
    ) -> bool {
        use driftback_terraform::eval::is_symbolic;
        let Some(config) = effective_config(scratch, address) else { return false };
        let schema = driftback_terraform::Schema::newest().ok().and_then(|s| s.resource(&address.rtype));
        let siblings: Vec<&driftback_terraform::StateInstance> = (0..)
            .map_while(|i| {
                let key = Some(InstanceKey::Int(i));
                (Some(&key) != Some(&address.key)).then(|| self.state.get(&Address { key, ..address.clone() }))?
            })
            .collect();
        let equal = |a: &Value, b: &Value| {
            driftback_terraform::patch::values_equal(a, b)
                || (a.is_string() || b.is_string()) && text_of(a) == text_of(b)
        };
        wanted.iter().all(|(attr, want)| match config.get(attr).filter(|v| !v.is_null()) {
            Some(have) if !is_symbolic(have) => equal(have, want),
            Some(_) if attr == name_attr => false,
            // `aws_rds_cluster.this.engine`: the state's value of that resource in the same module.
            Some(have) => have
                .as_str()
                .and_then(|s| s.strip_prefix("${")?.split('}').next())
                .and_then(|reference| {
                    let mut parts = reference.split('.');
                    let (rtype, name, attribute) = (parts.next()?, parts.next()?, parts.next()?);
                    if parts.next().is_some() || name.contains('[') {
                        return None;
                    }
                    let target =
                        Address { module: address.module.clone(), key: None, ..Address::resource(rtype, name) };
                    self.state.get(&target)?.attributes.get(attribute).cloned()
                })
                .is_some_and(|value| equal(&value, want)),
            None if attr == name_attr => false,
            None => {
                schema.and_then(|r| r.argument(attr)).is_some_and(|a| a.is_computed())
                    || (!siblings.is_empty()
                        && siblings.iter().all(|s| s.attributes.get(attr).is_some_and(|v| equal(v, want))))
            }
        })
    }

    /// A managed resource's id becomes a reference to it (`aws_vpc.main.id`); anything else stays data.
    fn reference_or_literal(&self, value: Value, near: &Address) -> AttrValue {
        if let Value::String(s) = &value {
            if let Some(address) = self.created.get(s) {
                return AttrValue::Reference(format!("{}.id", address.block_name()));
            }
            let found = self.state.find(s, &[], &["id"]);
            if let [one] = found.as_slice() {
                if one.address.module == near.module && one.address.key.is_none() && !one.address.data {
                    return AttrValue::Reference(format!("{}.id", one.address.block_name()));
                }
            }
        }
        AttrValue::Literal(value)
    }

    /// A resource name from cloud text: an identifier not yet used for this type.
    fn unique_name(&self, rtype: &str, raw: &str) -> String {
        let mut base: String = raw
            .rsplit(['/', ':'])
            .next()
            .unwrap_or(raw)
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '_' })
            .collect();
        base = base.trim_matches('_').to_string();
        while base.contains("__") {
            base = base.replace("__", "_");
        }
        if base.is_empty() || !is_identifier(&base) {
            base = format!("r_{base}");
        }
        let taken = |name: &str| {
            self.state.instances.iter().any(|i| i.address.rtype == rtype && i.address.name == name)
                || self.plan.changes.iter().any(|c| c.address.rtype == rtype && c.address.name == name)
                || self
                    .repo
                    .modules()
                    .values()
                    .any(|dir| self.repo.resources_of_type(dir, rtype).iter().any(|(_, n)| n == name))
        };
        let mut name = base.clone();
        let mut n = 2;
        while taken(&name) {
            name = format!("{base}_{n}");
            n += 1;
        }
        name
    }
}

/// Parameters of the call that sit beside the ones a recipe's `set` rules read (in the same object
/// of the request: `attributes.RedrivePolicy` beside `attributes.VisibilityTimeout`) but that no rule
/// of the recipe reads, that are not its key and that the recipe does not list in `ignore`. An
/// attribute bag is where a call changes several settings at once; one the recipe does not know
/// must not be dropped without a word.
fn unmapped_parameters(recipe: &Recipe, event: &ApiEvent) -> Vec<String> {
    // The whole request is the document: its members are placed (or refused) one by one.
    if recipe.whole.as_ref().is_some_and(|w| w.from.is_empty()) {
        return Vec::new();
    }
    // Request plumbing beyond `is_transport_key`.
    const NOT_CONFIGURATION: &[&str] = &["dryRun"];
    let plain = |p: &str| !p.starts_with("response.") && !p.contains('[');
    let read: Vec<&str> = recipe.read_paths().into_iter().chain(request_map_paths(recipe)).collect();
    let mut parents: Vec<&str> = recipe
        .set
        .iter()
        .flat_map(|r| r.from.split('|').map(str::trim))
        .filter(|p| plain(p))
        .filter_map(|p| p.rsplit_once('.').map(|(parent, _)| parent))
        .collect();
    // A recipe that only sets attributes reads the whole request: its top level is a bag too
    // (`ModifyInstanceAttribute` carries one `{"value": ...}` member per attribute it changes).
    let only_sets = matches!(recipe.actions()[..], ["set"] | ["whole"] | ["set", "whole"]) || sets_and_deltas(recipe);
    if only_sets && recipe.each.is_none() && recipe.patch.is_none() {
        parents.push("");
    }
    parents.sort_unstable();
    parents.dedup();
    let mut out = Vec::new();
    for parent in parents {
        let Some(Value::Object(bag)) = event_value(event, parent) else { continue };
        for (name, value) in &bag {
            let path = if parent.is_empty() { name.clone() } else { format!("{parent}.{name}") };
            // XML namespaces (S3 logs its XML bodies' attributes) and request plumbing.
            if name == "xmlns"
                || name.starts_with("xmlns:")
                || NOT_CONFIGURATION.contains(&name.as_str())
                || driftback_events::is_transport_key(name)
                || (parent.is_empty() && driftback_events::is_identifier_key(name))
            {
                continue;
            }
            let covered = read
                .iter()
                .any(|r| *r == path || r.starts_with(&format!("{path}.")) || r.starts_with(&format!("{path}[")));
            if !covered && !value.is_null() {
                out.push(name.clone());
            }
        }
    }
    out
}

/// An import id as the provider records the resource: a queue URL on whatever host the record
/// printed becomes the regional URL (`Identity::import_id`). An ARN stays an ARN (a resource
/// imported by ARN says so), and what no identity knows stays as recorded.
fn as_provider_records(import_id: String) -> String {
    if import_id.starts_with("arn:") {
        return import_id;
    }
    match driftback_terraform::state::Identity::parse(&import_id) {
        Some(identity) => identity.import_id(),
        None => import_id,
    }
}

/// The value a rule reads, and whether it came from the response: the request's forms of `from`
/// (`|`-separated) first, then its `response.` forms. Only a rule that names the response reads it:
/// a response echoes the whole resource (an RDS instance, a function), and its other values are no
/// change this call made.
fn request_then_response(event: &ApiEvent, from: &str) -> (Option<Value>, bool) {
    let (response, request): (Vec<&str>, Vec<&str>) =
        from.split('|').map(str::trim).partition(|p| p.starts_with("response."));
    if let Some(value) = request.iter().find_map(|p| event_value(event, p)) {
        return (Some(value), false);
    }
    (response.iter().find_map(|p| event_value(event, p)), true)
}

/// A recipe that sets attributes and also changes a map or a list by what the call adds and
/// removes (a node group's `labels.addOrUpdateLabels`, a cluster's `logging.clusterLogging`) reads
/// the whole request too: a member beside them that no rule reads (`taints`) refuses it by name.
fn sets_and_deltas(recipe: &Recipe) -> bool {
    let actions = recipe.actions();
    actions.contains(&"set")
        && actions.len() > 1
        && actions.iter().all(|a| ["set", "map_merge", "map_remove", "list_delta"].contains(a))
}

/// The request paths a recipe's map and list rules read.
fn request_map_paths(recipe: &Recipe) -> impl Iterator<Item = &str> {
    let maps = recipe.map_merge.iter().chain(&recipe.map_remove).chain(&recipe.map_replace);
    maps.flat_map(|m| m.items.as_deref().into_iter().chain(m.object.as_deref()))
        .chain(recipe.list_delta.iter().map(|l| l.items.as_str()))
}

/// Whether two lists hold the same values, in any order (a list the provider keeps as a set).
fn same_members(a: &[Value], b: &[Value]) -> bool {
    a.len() == b.len() && a.iter().all(|v| b.contains(v))
}

/// The list attributes of a block that name where traffic comes from or goes to.
const SOURCE_LISTS: &[&str] = &["cidr_blocks", "ipv6_cidr_blocks", "security_groups", "prefix_list_ids"];

/// A new block that differs from an existing one only by more sources of one kind (a CIDR added to
/// the same ports, protocol and description) widens that block's list instead: the rules are the
/// same in AWS, and the list may come from one variable or module input that several blocks share.
fn widen_matching_block(block: &str, existing: &[Value], attrs: &[(String, Value)]) -> Option<Op> {
    let get = |k: &str| attrs.iter().find(|(a, _)| a == k).map(|(_, v)| v);
    let lists: Vec<&str> = SOURCE_LISTS.iter().copied().filter(|k| get(k).is_some()).collect();
    let [list] = lists.as_slice() else { return None };
    let added = get(list)?.as_array()?;
    let same = |b: &Value, k: &str| match (b.get(k), get(k)) {
        (Some(have), Some(want)) => driftback_terraform::patch::values_equal(have, want),
        (None | Some(Value::Null), None) => true,
        _ => false,
    };
    let (index, current) = existing.iter().enumerate().find(|(_, b)| {
        ["from_port", "to_port", "protocol"].iter().all(|k| same(b, k))
            && (get("description").is_none() || same(b, "description"))
            && SOURCE_LISTS
                .iter()
                .filter(|k| *k != list)
                .all(|k| b.get(*k).is_none_or(|v| v.as_array().is_some_and(|a| a.is_empty()) || v.is_null()))
    })?;
    let have = current.get(*list)?.as_array()?;
    if have.iter().any(contains_symbolic) {
        return None;
    }
    let mut widened = have.clone();
    widened.extend(added.iter().filter(|v| !have.contains(v)).cloned());
    let path = AttrPath(vec![Seg::Name(block.to_string()), Seg::Index(index), Seg::Name(list.to_string())]);
    Some(Op::Set { path, value: AttrValue::Literal(Value::Array(widened)) })
}

/// The changes that turn JSON document `old` into `new`, member by member (lists as a whole).
fn json_diff(path: &AttrPath, old: &Value, new: &Value, ops: &mut Vec<Op>) {
    match (old, new) {
        (Value::Object(o), Value::Object(n)) => {
            for (key, nv) in n {
                match o.get(key) {
                    Some(ov) => json_diff(&with_key(path, key), ov, nv, ops),
                    // A member sent empty that the document leaves out (the console's `"mountPoints": []`)
                    // changes nothing.
                    None if is_empty_json(nv) => {}
                    None => ops.push(Op::Set { path: with_key(path, key), value: AttrValue::Literal(nv.clone()) }),
                }
            }
            for key in o.keys().filter(|k| !n.contains_key(*k)) {
                if !is_empty_json(&o[key]) {
                    ops.push(Op::Remove { path: with_key(path, key) });
                }
            }
        }
        // Lists of the same length change item by item (one container of several).
        (Value::Array(o), Value::Array(n)) if o.len() == n.len() => {
            for (i, (ov, nv)) in o.iter().zip(n).enumerate() {
                json_diff(&with_index(path, i), ov, nv, ops);
            }
        }
        // A list that gained or lost items (a statement, an action): item by item where it can.
        (Value::Array(o), Value::Array(n)) if list_edits(path, o, n, ops) => {}
        _ if driftback_terraform::patch::values_equal(old, new) => {}
        _ => ops.push(Op::Set { path: path.clone(), value: AttrValue::Literal(new.clone()) }),
    }
}

/// The edits that turn list `old` into `new` while the items both keep stay as the code writes
/// them: items are matched as a longest common subsequence; between two kept items, an item of each
/// side is one item changed in place, the old side's extra items are removed, and the new side's
/// extra items are added. Added only at the end, where the code can append them; `false` (and no
/// ops) when a new item goes anywhere else.
fn list_edits(path: &AttrPath, old: &[Value], new: &[Value], ops: &mut Vec<Op>) -> bool {
    use driftback_terraform::patch::values_equal;
    let (m, k) = (old.len(), new.len());
    let mut common = vec![vec![0usize; k + 1]; m + 1];
    for i in (0..m).rev() {
        for j in (0..k).rev() {
            common[i][j] = if values_equal(&old[i], &new[j]) {
                common[i + 1][j + 1] + 1
            } else {
                common[i + 1][j].max(common[i][j + 1])
            };
        }
    }
    let (mut changed, mut removed, mut added) = (Vec::new(), Vec::new(), Vec::new());
    let (mut gap_old, mut gap_new) = (Vec::new(), Vec::new());
    let mut close_gap = |gap_old: &mut Vec<usize>, gap_new: &mut Vec<usize>| {
        let paired = gap_old.len().min(gap_new.len());
        changed.extend(gap_old.iter().copied().zip(gap_new.iter().copied()).take(paired));
        removed.extend(gap_old.drain(..).skip(paired));
        added.extend(gap_new.drain(..).skip(paired));
    };
    let (mut i, mut j) = (0, 0);
    while i < m && j < k {
        if values_equal(&old[i], &new[j]) {
            close_gap(&mut gap_old, &mut gap_new);
            (i, j) = (i + 1, j + 1);
        } else if common[i + 1][j] >= common[i][j + 1] {
            gap_old.push(i);
            i += 1;
        } else {
            gap_new.push(j);
            j += 1;
        }
    }
    gap_old.extend(i..m);
    gap_new.extend(j..k);
    close_gap(&mut gap_old, &mut gap_new);
    // New items only at the end: after the edits in place and the removals, the list is `new`
    // without them, so each goes at its own index.
    if added.iter().enumerate().any(|(n, &at)| at != k - added.len() + n) {
        return false;
    }
    for (o, n) in changed {
        json_diff(&with_index(path, o), &old[o], &new[n], ops);
    }
    for o in removed.into_iter().rev() {
        ops.push(Op::Remove { path: with_index(path, o) });
    }
    for n in added {
        ops.push(Op::Set { path: with_index(path, n), value: AttrValue::Literal(new[n].clone()) });
    }
    true
}

/// `TYPE.NAME[INDEX].ATTR` with an index computed from something (`each.value`, `var.x`), not a
/// literal: (TYPE, NAME, ATTR).
fn picked_from_fleet(source: &str) -> Option<(String, String, String)> {
    let word = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    let (head, rest) = source.split_once('[')?;
    let (index, attr) = rest.rsplit_once("].")?;
    let (rtype, name) = head.split_once('.')?;
    let literal = index.starts_with('"') || index.parse::<i64>().is_ok();
    let computed = !literal && !index.is_empty() && !index.contains(['[', ']']);
    (word(rtype) && word(name) && word(attr) && computed && rtype.contains('_'))
        .then(|| (rtype.to_string(), name.to_string(), attr.to_string()))
}

fn with_index(path: &AttrPath, index: usize) -> AttrPath {
    let mut segs = path.0.clone();
    segs.push(Seg::Index(index));
    AttrPath(segs)
}

fn is_empty_json(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Array(items) => items.is_empty(),
        Value::Object(members) => members.is_empty(),
        _ => false,
    }
}

fn with_key(path: &AttrPath, key: &str) -> AttrPath {
    let mut segs = path.0.clone();
    segs.push(Seg::Key(key.to_string()));
    AttrPath(segs)
}

fn map_entries(event: &ApiEvent, rule: &MapRule) -> Vec<(String, Value)> {
    if let Some(object) = &rule.object {
        return match event_value(event, object) {
            Some(Value::Object(map)) => map.into_iter().collect(),
            _ => Vec::new(),
        };
    }
    let (Some(items), Some(key), Some(value)) = (&rule.items, &rule.key, &rule.value) else { return Vec::new() };
    event_value(event, items)
        .map(|v| as_list(&v))
        .unwrap_or_default()
        .iter()
        .filter_map(|item| {
            let k = value_at(item, key)?.as_str()?.to_string();
            let v = value_at(item, value).unwrap_or(Value::String(String::new()));
            Some((k, v))
        })
        .collect()
}

/// Attribute values of one item: `[*]` paths give lists, absent values are left out.
fn item_attrs(item: &Value, attrs: &Map<String, Value>) -> Vec<(String, Value)> {
    let mut out: Vec<(String, Value)> = attrs
        .iter()
        .filter_map(|(attr, from)| {
            // `a | b`: the first of several paths that has a value.
            let value = from.as_str()?.split('|').find_map(|from| value_at(item, from.trim()))?;
            Some((attr.clone(), value))
        })
        .collect();
    // "All traffic" rules have no ports in the request; Terraform wants 0.
    let all = out.iter().any(|(k, v)| (k == "protocol" || k == "ip_protocol") && v == "-1");
    if all {
        for port in ["from_port", "to_port"] {
            if attrs.contains_key(port) && !out.iter().any(|(k, _)| k == port) {
                out.push((port.to_string(), Value::from(0)));
            }
        }
    }
    out
}

/// A `create` rule's event path and its conversion suffix: `tags:map`, `port:number`, `ttl:bool`,
/// `value:dns`, `name:dns_name`; a path without one converts nothing.
fn path_and_conversion(from: &str) -> (&str, Option<Convert>) {
    match from.split_once(':') {
        Some((p, "number")) => (p, Some(Convert::Number)),
        Some((p, "bool")) => (p, Some(Convert::Bool)),
        Some((p, "map")) => (p, Some(Convert::KeyValueMap)),
        Some((p, "dns")) => (p, Some(Convert::DnsText)),
        Some((p, "dns_name")) => (p, Some(Convert::DnsName)),
        _ => (from, None),
    }
}

/// A block a whole-document call adds, as the provider's schema says to write it; `Err` names what
/// does not fit. Appending keeps an ordered list's meaning only at its end, so an item inserted
/// before the state's blocks is refused unless the blocks are a set.
fn added_block(rtype: &str, added: &crate::document::AddedBlock, examples: &[Value]) -> Result<BlockSpec, String> {
    use driftback_terraform::schema::{Nesting, Schema};
    let at = &added.block_type;
    let schema = Schema::newest().map_err(|e| format!("{at} (no provider schema: {e})"))?;
    let block = schema
        .resource(rtype)
        .and_then(|r| r.block(at))
        .ok_or_else(|| format!("{at} (not a block of {rtype} in the provider's schema)"))?;
    if !added.at_tail && block.nesting() != Nesting::Set {
        return Err(format!("{at} (a block inserted before others in an ordered list)"));
    }
    crate::document::block_spec(block.body(), &added.value, at, examples)
}

/// Whether the attribute at `path` (nested blocks by name) is a set in the AWS provider's schema.
fn is_set_attribute(rtype: &str, path: &AttrPath) -> bool {
    use driftback_terraform::schema::{Found, Schema, Step, ValueType};
    let names: Vec<&str> =
        path.0.iter().filter_map(|s| if let Seg::Name(n) = s { Some(n.as_str()) } else { None }).collect();
    let Some((last, blocks)) = names.split_last() else { return false };
    let steps: Vec<Step<'_>> = blocks.iter().map(|b| Step::Block(b)).chain([Step::Attribute(last)]).collect();
    let Ok(schema) = Schema::newest() else { return false };
    matches!(schema.lookup(rtype, &steps), Ok(Found::Argument(a)) if matches!(a.value_type(), ValueType::Set(_)))
}

/// An item of a list the recipe reads `each` of, with the call's top-level members it lacks.
fn with_call_members(item: &Value, request: &Value) -> Value {
    match (item, request) {
        (Value::Object(item), Value::Object(call)) => {
            let mut merged = item.clone();
            for (k, v) in call {
                merged.entry(k.clone()).or_insert_with(|| v.clone());
            }
            Value::Object(merged)
        }
        _ => item.clone(),
    }
}

/// A scalar as text, for comparing values one call sends as a string and another as a number.
fn text_of(value: &Value) -> String {
    value.as_str().map(str::to_string).unwrap_or_else(|| value.to_string())
}

/// A DNS name as Terraform writes it: without the final dot Route 53 logs.
fn without_final_dot(name: &str) -> &str {
    name.strip_suffix('.').unwrap_or(name)
}

/// A DNS record value as Terraform writes it (see [`Convert::DnsText`]).
fn dns_text(value: &str) -> String {
    match value.strip_prefix('"').and_then(|v| v.strip_suffix('"')) {
        Some(inner) => inner.replace("\" \"", "\"\""),
        None => value.to_string(),
    }
}

pub(crate) fn convert(value: Value, convert: Option<Convert>) -> Value {
    match (convert, &value) {
        (Some(Convert::DnsText), Value::String(s)) => Value::String(dns_text(s)),
        (Some(Convert::DnsName), Value::String(s)) => Value::String(without_final_dot(s).to_string()),
        (Some(Convert::DnsText), Value::Array(items)) => Value::Array(
            items.iter().map(|v| v.as_str().map_or_else(|| v.clone(), |s| Value::String(dns_text(s)))).collect(),
        ),
        (Some(Convert::Number), Value::String(s)) => s
            .trim()
            .parse::<i64>()
            .map(Value::from)
            .or_else(|_| s.trim().parse::<f64>().map(Value::from))
            .unwrap_or(value),
        (Some(Convert::Bool), Value::String(s)) => match s.to_ascii_lowercase().as_str() {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            _ => value,
        },
        (Some(Convert::String), Value::Number(n)) => Value::String(n.to_string()),
        // `[{"name": "InstanceId", "value": "i-1"}]` (CloudWatch dimensions) -> `{"InstanceId": "i-1"}`.
        (Some(Convert::NameValueMap), Value::Array(items)) => {
            // CloudTrail writes `name`/`value`, some SDK shapes `Name`/`Value`.
            let field = |item: &Value, lower: &str, upper: &str| item.get(lower).or_else(|| item.get(upper)).cloned();
            let pairs: Option<Map<String, Value>> = items
                .iter()
                .map(|i| Some((field(i, "name", "Name")?.as_str()?.to_string(), field(i, "value", "Value")?)))
                .collect();
            pairs.map(Value::Object).unwrap_or(value)
        }
        (Some(Convert::String), Value::Bool(b)) => Value::String(b.to_string()),
        // `[{"key": "Team", "value": "orders"}]` (tags of most create calls) -> `{"Team": "orders"}`.
        (Some(Convert::KeyValueMap), Value::Array(items)) => {
            let field = |item: &Value, lower: &str, upper: &str| item.get(lower).or_else(|| item.get(upper)).cloned();
            let pairs: Option<Map<String, Value>> = items
                .iter()
                .map(|i| Some((field(i, "key", "Key")?.as_str()?.to_string(), field(i, "value", "Value")?)))
                .collect();
            pairs.map(Value::Object).unwrap_or(value)
        }
        // A policy CloudTrail logs parsed (S3's `bucketPolicy`): the document as JSON text.
        (Some(Convert::Json), Value::Object(_) | Value::Array(_)) => Value::String(value.to_string()),
        // Whole numbers CloudTrail writes as floats (80.0) stay whole.
        (Some(Convert::Number), Value::Number(n)) => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 9e15 => Value::from(f as i64),
            _ => value,
        },
        _ => value,
    }
}

fn contains_redacted(value: &Value) -> bool {
    match value {
        Value::String(s) => s.contains(REDACTED),
        Value::Array(items) => items.iter().any(contains_redacted),
        Value::Object(map) => map.values().any(contains_redacted),
        _ => false,
    }
}

/// The request members of a creating call (and of the attribute bags it reads from) that the
/// create rule writes nowhere.
fn unwritten_members(rule: &CreateRule, event: &ApiEvent) -> Vec<String> {
    // A request written whole leaves out only what its rule skips on purpose.
    if rule.whole.as_ref().is_some_and(|w| w.from.is_empty()) {
        return Vec::new();
    }
    let mut read: Vec<&str> = vec![rule.name.as_str(), rule.import_id.as_str()];
    read.extend(rule.attrs.values().filter_map(Value::as_str).flat_map(|p| path_and_conversion(p).0.split('|')));
    read.extend(rule.blocks.values().map(|b| b.items.as_str()));
    read.extend(rule.keys.values().map(|k| k.items.as_str()));
    let covered = |path: &str| {
        read.iter().any(|r| *r == path || r.starts_with(&format!("{path}.")) || r.starts_with(&format!("{path}[")))
    };
    let Some(request) = event.request.as_object() else { return Vec::new() };
    let mut out = Vec::new();
    for (key, value) in request {
        if driftback_events::is_transport_key(key) || value.is_null() {
            continue;
        }
        if !covered(key) {
            out.push(key.clone());
            continue;
        }
        // An attribute bag some rule reads from (`attributes.VisibilityTimeout`): each member.
        if let Some(bag) = value.as_object().filter(|_| read.iter().any(|r| r.starts_with(&format!("{key}.")))) {
            for inner in bag.keys().filter(|k| !driftback_events::is_transport_key(k)) {
                let path = format!("{key}.{inner}");
                if !covered(&path) {
                    out.push(path);
                }
            }
        }
    }
    out
}

impl Planner<'_> {
    /// Whether `value` must never be written at `path` of `address` (a redacted value, a secret):
    /// then it is held in the plan's `secrets` and the caller leaves the field out.
    fn held_secret(&mut self, address: &Address, path: &AttrPath, value: &Value) -> bool {
        match check_secret(&address.rtype, path, value) {
            Ok(()) => false,
            Err(e) => {
                let held = SecretField { address: address.clone(), path: path.clone(), reason: e.to_string() };
                if !self.plan.secrets.contains(&held) {
                    self.plan.secrets.push(held);
                }
                true
            }
        }
    }
}

/// Whether `value`, to be written at `path` of a `resource_type` resource, is a secret: an error
/// naming where when it is. Secrecy is decided by the two sources that know it, never by how an
/// attribute is named (`metadata_options.http_tokens` is the IMDSv2 setting, not a token):
/// - CloudTrail hid the value ([`REDACTED`]), anywhere in it;
/// - the provider's schema marks the attribute sensitive (`aws_db_instance.password`,
///   `aws_ssm_parameter.value`), or an attribute it lies inside, or one inside the value (a `user`
///   block of `aws_mq_broker` carries a `password`), in any bundled provider version;
/// - one narrow rule for documents, [`secret_inside`].
fn check_secret(resource_type: &str, path: &AttrPath, value: &Value) -> Result<(), PlanError> {
    if contains_redacted(value) {
        return Err(PlanError::Secret { path: path.to_string() });
    }
    if let Some(inner) = sensitive_value(resource_type, path, value) {
        return Err(PlanError::Secret { path: inner });
    }
    if let Some(inner) = secret_inside(value) {
        return Err(PlanError::Secret { path: format!("{path} ({inner})") });
    }
    Ok(())
}

/// Where `value` holds something at an attribute the provider marks sensitive: `path` itself, or
/// `path.rest` for a sensitive member inside it. Any bundled provider version's mark counts (the
/// value is a secret whatever provider the repository runs). Empty values (null, "", [], {}) are
/// not secrets: clearing a password writes nothing secret. If the bundled schema cannot be read,
/// every value is held (the binary's own data is broken; nothing is guessed).
fn sensitive_value(resource_type: &str, path: &AttrPath, value: &Value) -> Option<String> {
    for version in driftback_terraform::Schema::bundled_versions() {
        let Ok(schema) = driftback_terraform::Schema::version(version) else {
            return holds_something(value).then(|| path.to_string());
        };
        for rest in schema.sensitive_within(resource_type, path) {
            let mut found = Vec::new();
            values_at(value, rest, &mut found);
            if found.iter().any(|v| holds_something(v)) {
                return Some(match rest.is_empty() {
                    true => path.to_string(),
                    false => format!("{path}.{}", rest.join(".")),
                });
            }
        }
    }
    None
}

/// Whether a value carries anything: not null, `""`, or a list or object of only those.
fn holds_something(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::String(s) => !s.is_empty(),
        Value::Array(items) => items.iter().any(holds_something),
        Value::Object(members) => members.values().any(holds_something),
        _ => true,
    }
}

/// The values at the names `rest` below `value`, through the elements of lists and sets (a block
/// written several times); `value` itself when `rest` is empty.
fn values_at<'v>(value: &'v Value, rest: &[String], out: &mut Vec<&'v Value>) {
    match (value, rest.split_first()) {
        (_, None) => out.push(value),
        (Value::Array(items), Some(_)) => items.iter().for_each(|i| values_at(i, rest, out)),
        (Value::Object(members), Some((name, below))) => {
            if let Some(member) = members.get(name) {
                values_at(member, below, out);
            }
        }
        _ => {}
    }
}

/// The one rule that reads a name: an environment variable given in clear inside a document (a
/// container definition's `"environment": [{"name": "DB_PASSWORD", "value": "..."}]`, which AWS
/// Batch's and CodeBuild's documents share) whose name says it is a credential. Answers the name.
///
/// Why a name here and nowhere else: the document is one attribute to the provider
/// (`container_definitions` is a JSON string it does not mark sensitive), and ECS does not treat
/// environment values as sensitive, so CloudTrail logs them in clear; neither source can speak. The
/// name is the user's own label for the value, not a schema name whose meaning is known: `DB_PASSWORD`
/// is how people say "this is a password", and AWS's guidance for such values is the definition's
/// `secrets` (a Secrets Manager or Parameter Store reference), which this rule does not touch.
/// Writing one into code would copy a live credential into the repository's history for good;
/// holding a harmless one costs a person one look. The name is read by whole words
/// ([`credential_name`]): `PWD` (a working directory) and `TOKENIZER_PATH` are not credentials.
/// An entry with a `type` other than `PLAINTEXT` (CodeBuild's `PARAMETER_STORE`, `SECRETS_MANAGER`)
/// holds a reference, not the value.
fn secret_inside(value: &Value) -> Option<String> {
    match value {
        Value::Object(members) => members.iter().find_map(|(key, member)| {
            let environment =
                matches!(key.to_ascii_lowercase().replace('_', "").as_str(), "environment" | "environmentvariables");
            let named = |entry: &Value| {
                let entry = entry.as_object()?;
                let name = entry.get("name")?.as_str()?;
                let given = entry.get("value")?.as_str().is_some_and(|v| !v.is_empty());
                let plain =
                    entry.get("type").and_then(Value::as_str).is_none_or(|t| t.eq_ignore_ascii_case("PLAINTEXT"));
                (given && plain && credential_name(name)).then(|| name.to_string())
            };
            match (environment, member) {
                (true, Value::Array(entries)) => entries.iter().find_map(named).or_else(|| secret_inside(member)),
                _ => secret_inside(member),
            }
        }),
        Value::Array(items) => items.iter().find_map(secret_inside),
        // A JSON document given as text.
        Value::String(text) if text.trim_start().starts_with(['{', '[']) => {
            serde_json::from_str::<Value>(text).ok().as_ref().and_then(secret_inside)
        }
        _ => None,
    }
}

/// Whether an environment variable's name says it holds a credential. The name is read as words
/// (split at `_`, `-`, `.` and lower-to-upper case changes), and its last word says what the value
/// is: PASSWORD, PASSWD, PASSPHRASE, SECRET, TOKEN, CREDENTIAL(S), APIKEY, or KEY after PRIVATE,
/// API, SECRET, SIGNING or ENCRYPTION (`SSH_PRIVATE_KEY`, `AWS_SECRET_ACCESS_KEY`). A name about a
/// credential that is not one is not: `SECRET_ARN`, `PASSWORD_MIN_LENGTH`, `DB_PASSWORD_FILE` (a
/// path), `AWS_ACCESS_KEY_ID`, `KMS_KEY`, and `PWD` or `TOKENIZER_PATH` share no word.
fn credential_name(name: &str) -> bool {
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut previous_lower = false;
    for c in name.chars() {
        let boundary = matches!(c, '_' | '-' | '.') || (c.is_ascii_uppercase() && previous_lower);
        if boundary && !word.is_empty() {
            words.push(std::mem::take(&mut word));
        }
        if c.is_ascii_alphanumeric() {
            word.push(c.to_ascii_uppercase());
        }
        previous_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
    }
    if !word.is_empty() {
        words.push(word);
    }
    let Some((last, before)) = words.split_last() else { return false };
    let credential = ["PASSWORD", "PASSWD", "PASSPHRASE", "SECRET", "TOKEN", "CREDENTIAL", "CREDENTIALS", "APIKEY"];
    credential.contains(&last.as_str())
        || (last == "KEY"
            && before.iter().any(|w| matches!(w.as_str(), "PRIVATE" | "API" | "SECRET" | "SIGNING" | "ENCRYPTION")))
}

fn fill_template(template: &str, event: &ApiEvent) -> String {
    let mut out = String::new();
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        let Some(end) = rest[start..].find('}') else { break };
        let key = &rest[start + 1..start + end];
        let (path, dns) = match key.strip_suffix(":dns") {
            Some(path) => (path, true),
            None => (key, false),
        };
        if let Some(v) = event_value(event, path) {
            let text = text_of(&v);
            match dns {
                true => out.push_str(&without_final_dot(&text).to_ascii_lowercase()),
                false => out.push_str(&text),
            }
        }
        rest = &rest[start + end + 1..];
    }
    out.push_str(rest);
    out
}

/// Whether the module holding `address` serves more than one instance: its directory is called
/// from several places, or its call has `count` or `for_each`.
fn module_is_shared(repo: &Repo, address: &Address) -> bool {
    let path = address.module_path();
    let Some(dir) = repo.module_dir(&path) else { return true };
    if repo.modules().values().filter(|d| *d == dir).count() > 1 {
        return true;
    }
    address.module.iter().any(|step| step.key.is_some())
}

/// `module.NAME.OUTPUT` for an output of the group's module whose value is the group's id, when
/// the group sits in a module the root calls directly.
fn module_output_for(repo: &Repo, group: &Address) -> Option<String> {
    let [step] = group.module.as_slice() else { return None };
    let dir = repo.module_dir(&group.module_path())?;
    let wanted = format!("aws_security_group.{}.id", group.name);
    for (file, body) in repo.parsed_tf_in(dir) {
        let text = repo.text(file)?;
        for output in body.get_blocks("output") {
            let value = output.body.get_attribute("value")?;
            if driftback_terraform::edit::expr_text(text, &value.value).trim() == wanted {
                let name = output.labels.first().map(driftback_terraform::edit::label_str)?;
                return Some(format!("module.{}.{name}", step.name));
            }
        }
    }
    None
}

/// Put `value` at `names` in `spec`: the last name an attribute, the others nested blocks (made
/// once, reused by later paths).
/// Whether the configuration sets this attribute path (dotted, nested blocks by name).
fn configured(config: Option<&Value>, path: &AttrPath) -> bool {
    config.is_some_and(|c| path.to_string().split('.').try_fold(c, |v, step| v.get(step)).is_some_and(|v| !v.is_null()))
}

/// A block from attribute paths: `path_pattern.values` is `values` in a nested `path_pattern`.
/// An item's list of objects that the provider's schema makes nested blocks of `block` (a trail's
/// event selector's `data_resource`): one block per object, its members in snake case and checked
/// against the schema. `None` when `attr` is no nested block there.
#[allow(clippy::type_complexity)]
fn nested_blocks_of(
    rtype: &str,
    block: &str,
    attr: &str,
    value: &Value,
) -> Option<Result<Vec<(String, BlockSpec)>, String>> {
    let items = value.as_array().filter(|items| !items.is_empty() && items.iter().all(Value::is_object))?;
    let schema = driftback_terraform::Schema::newest().ok()?;
    let nested = schema.resource(rtype)?.block(block)?.body().block(attr)?;
    let mut out = Vec::new();
    for item in items {
        let shaped = snake_keys(item);
        match crate::document::block_spec(nested.body(), &shaped, &format!("{block}.{attr}"), &[]) {
            Ok(spec) => out.push((attr.to_string(), spec)),
            Err(e) => return Some(Err(e)),
        }
    }
    Some(Ok(out))
}

fn snake_keys(value: &Value) -> Value {
    match value {
        Value::Object(members) => {
            Value::Object(members.iter().map(|(k, v)| (crate::document::snake_case(k), snake_keys(v))).collect())
        }
        Value::Array(items) => Value::Array(items.iter().map(snake_keys).collect()),
        other => other.clone(),
    }
}

fn nested_spec(attrs: impl IntoIterator<Item = (String, AttrValue)>) -> BlockSpec {
    let mut spec = BlockSpec::default();
    for (attr, value) in attrs {
        let names: Vec<String> = attr.split('.').map(str::to_string).collect();
        insert_at(&mut spec, &names, value);
    }
    spec
}

fn insert_at(spec: &mut BlockSpec, names: &[String], value: AttrValue) {
    match names {
        [] => {}
        [attr] => spec.attrs.push((attr.clone(), value)),
        [block, rest @ ..] => {
            let nested = match spec.blocks.iter().position(|(b, _)| b == block) {
                Some(i) => &mut spec.blocks[i].1,
                None => {
                    spec.blocks.push((block.clone(), BlockSpec::default()));
                    &mut spec.blocks.last_mut().expect("just pushed").1
                }
            };
            insert_at(nested, rest, value);
        }
    }
}

#[cfg(test)]
mod secret_tests {
    use serde_json::json;

    use super::*;

    fn secret(resource_type: &str, path: &str, value: Value) -> Option<String> {
        match check_secret(resource_type, &AttrPath::parse(path).expect(path), &value) {
            Ok(()) => None,
            Err(PlanError::Secret { path }) => Some(path),
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn the_provider_schema_decides_which_attributes_are_secrets() {
        let held = |t: &str, p: &str, v: Value| secret(t, p, v).is_some();
        assert!(held("aws_db_instance", "password", json!("hunter2-hunter2")));
        assert!(held("aws_ssm_parameter", "value", json!("on")));
        assert!(held("aws_rds_cluster", "master_password", json!("x")));
        assert!(held("aws_elasticache_replication_group", "auth_token", json!("a-long-token-value")));
        assert!(held("aws_vpn_connection", "tunnel1_preshared_key", json!("psk")));
        // Sensitive though nothing in the name says so.
        assert!(held("aws_api_gateway_api_key", "value", json!("k")));
        assert!(held("aws_transfer_server", "host_key", json!("-----BEGIN")));
        // A member of a sensitive map.
        assert!(held("aws_glue_connection", r#"connection_properties["PASSWORD"]"#, json!("p")));
        // Named like secrets; not secrets.
        assert!(!held("aws_instance", "metadata_options.http_tokens", json!("optional")));
        assert!(!held("aws_instance", "metadata_options[0].http_tokens", json!("required")));
        assert!(!held("aws_launch_template", "metadata_options.http_tokens", json!("optional")));
        assert!(!held("aws_cognito_user_pool_client", "access_token_validity", json!(60)));
        assert!(!held("aws_db_instance", "manage_master_user_password", json!(true)));
        assert!(!held("aws_secretsmanager_secret", "name", json!("prod/db/password")));
        assert!(!held("aws_secretsmanager_secret", "recovery_window_in_days", json!(7)));
        assert!(!held("aws_instance", r#"tags["api_token"]"#, json!("none")));
        assert!(!held("aws_lambda_function", r#"environment.variables["TOKEN_TTL"]"#, json!("60")));
        // Clearing a secret writes nothing secret.
        assert!(!held("aws_db_instance", "password", json!("")));
        assert!(!held("aws_db_instance", "password", Value::Null));
    }

    #[test]
    fn a_value_carrying_a_sensitive_member_is_held_at_that_member() {
        let user = json!([{"username": "admin", "password": "hunter2-hunter2", "console_access": true}]);
        assert_eq!(secret("aws_mq_broker", "user", user).as_deref(), Some("user.password"));
        assert_eq!(secret("aws_mq_broker", "user", json!([{"username": "admin", "groups": ["ops"]}])), None);
        assert_eq!(secret("aws_mq_broker", "user", json!([{"username": "admin", "password": ""}])), None);
        let options = json!({"master_user_options": {"master_user_name": "admin", "master_user_password": "pw"}});
        assert_eq!(
            secret("aws_opensearch_domain", "advanced_security_options", options).as_deref(),
            Some("advanced_security_options.master_user_options.master_user_password")
        );
        // A whole resource's values (a creation): its sensitive arguments among them.
        let props = json!({"USERNAME": "u", "PASSWORD": "p"});
        assert_eq!(
            secret("aws_glue_connection", "connection_properties", props).as_deref(),
            Some("connection_properties")
        );
    }

    #[test]
    fn a_value_cloudtrail_hid_is_held_wherever_it_is() {
        assert!(secret("aws_instance", r#"tags["Name"]"#, json!(REDACTED)).is_some());
        assert!(secret("aws_lambda_function", "environment.variables", json!({"A": "1", "KEY": REDACTED})).is_some());
        assert!(secret("aws_not_a_type", "anything", json!([{"x": REDACTED}])).is_some());
    }

    #[test]
    fn only_credential_named_environment_entries_in_clear_are_secrets_inside_documents() {
        let definitions = |environment: Value| {
            Value::String(json!([{"name": "api", "image": "api:1", "environment": environment}]).to_string())
        };
        let at = |v: Value| secret("aws_ecs_task_definition", "container_definitions", v);
        let held =
            at(definitions(json!([{"name": "LOG_LEVEL", "value": "info"}, {"name": "DB_PASSWORD", "value": "x"}])));
        assert_eq!(held.as_deref(), Some("container_definitions (DB_PASSWORD)"));
        // A name about a credential that is not one, and names that merely contain a word.
        for name in
            ["PWD", "TOKENIZER_PATH", "SECRET_ARN", "DB_PASSWORD_FILE", "PASSWORD_MIN_LENGTH", "AWS_ACCESS_KEY_ID"]
        {
            assert_eq!(at(definitions(json!([{"name": name, "value": "v"}]))), None, "{name}");
        }
        // The definition's `secrets` are references, a CodeBuild entry typed as one is too.
        let refs =
            json!([{"name": "api", "secrets": [{"name": "DB_PASSWORD", "valueFrom": "arn:aws:ssm:::parameter/db"}]}]);
        assert_eq!(at(refs), None);
        let codebuild = json!({"environmentVariables": [{"name": "GITHUB_TOKEN", "value": "/ci/github", "type": "PARAMETER_STORE"}]});
        assert_eq!(secret("aws_codebuild_project", "environment", codebuild), None);
        let plain = json!({"environmentVariables": [{"name": "GITHUB_TOKEN", "value": "ghp_x", "type": "PLAINTEXT"}]});
        assert!(secret("aws_codebuild_project", "environment", plain).is_some());
        // Members of other documents are names of things: a policy's condition key, a state machine's field.
        let policy = json!({"Statement": [{"Condition": {"StringEquals": {"secretsmanager:SecretId": "db"}}}]});
        assert_eq!(secret("aws_iam_policy", "policy", Value::String(policy.to_string())), None);
        assert_eq!(secret("aws_sfn_state_machine", "definition", json!({"States": {"A": {"apiToken": "t"}}})), None);
    }

    #[test]
    fn credential_names_are_read_by_their_last_word() {
        for name in ["DB_PASSWORD", "dbPassword", "STRIPE_API_KEY", "apiKey", "APIKEY", "GITHUB_TOKEN", "JWT_SECRET"] {
            assert!(credential_name(name), "{name}");
        }
        for name in ["SSH_PRIVATE_KEY", "AWS_SECRET_ACCESS_KEY", "signing-key", "db.passphrase", "GOOGLE_CREDENTIALS"] {
            assert!(credential_name(name), "{name}");
        }
        for name in ["PWD", "TOKENIZER_PATH", "HTTP_TOKENS", "KMS_KEY", "API_KEY_ID", "SECRET_NAME", "", "_"] {
            assert!(!credential_name(name), "{name}");
        }
    }
}

#[cfg(test)]
mod document_tests {
    use serde_json::json;

    use super::*;

    fn diff(old: Value, new: Value) -> Vec<String> {
        let mut ops = Vec::new();
        json_diff(&AttrPath::parse("policy").unwrap(), &old, &new, &mut ops);
        ops.iter()
            .map(|op| match op {
                Op::Set { path, value: AttrValue::Literal(v) } => format!("set {path} = {v}"),
                Op::Remove { path } => format!("remove {path}"),
                other => format!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn a_list_that_loses_an_item_keeps_the_others_where_the_code_writes_them() {
        let ops = diff(json!({"Action": ["a", "b", "c"]}), json!({"Action": ["a", "c"]}));
        assert_eq!(ops, ["remove policy[\"Action\"][1]"]);
    }

    #[test]
    fn a_new_item_at_the_end_is_added_and_a_changed_one_is_changed_in_place() {
        let old = json!({"Statement": [{"Sid": "A", "Action": "x"}, {"Sid": "B", "Action": "y"}]});
        let new = json!({"Statement": [{"Sid": "A", "Action": "x"}, {"Sid": "B", "Action": "z"}, {"Sid": "C"}]});
        assert_eq!(
            diff(old, new),
            ["set policy[\"Statement\"][1][\"Action\"] = \"z\"", "set policy[\"Statement\"][2] = {\"Sid\":\"C\"}"]
        );
    }

    #[test]
    fn removals_go_from_the_end_so_each_index_is_still_the_item_meant() {
        let ops = diff(json!(["a", "b", "c", "d"]), json!(["b", "d"]));
        assert_eq!(ops, ["remove policy[2]", "remove policy[0]"]);
    }

    #[test]
    fn a_new_item_in_the_middle_rewrites_the_list_whole() {
        let ops = diff(json!(["a", "c"]), json!(["a", "b", "c"]));
        assert_eq!(ops, ["set policy = [\"a\",\"b\",\"c\"]"]);
    }
}
