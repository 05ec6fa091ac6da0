//! The planner: each call of a change set to its recipe and resource, the operations it gives
//! settled against the state and the code.

use std::collections::BTreeMap;

use serde_json::Value;

use driftback_events::ApiEvent;
use driftback_terraform::eval::{contains_symbolic, value_at_path};
use driftback_terraform::render::is_identifier;
use driftback_terraform::{Address, AttrPath, AttrValue, Op, Repo, Seg, State};

use super::convert::text_of;
use super::model::{Plan, PlanError, ResourceChange};
use crate::catalog::{Catalog, Recipe};
use crate::extract::{as_list, event_value};

pub(super) struct Planner<'a> {
    pub(super) catalog: &'a Catalog,
    pub(super) state: &'a State,
    pub(super) repo: &'a Repo,
    /// The change set's calls, in order (what an earlier call sent: [`Recipe::from_earlier`]).
    pub(super) events: &'a [ApiEvent],
    pub(super) plan: Plan,
    /// Cloud ids of resources adopted in this change set -> their new addresses.
    pub(super) created: BTreeMap<String, Address>,
}

pub(super) enum Target {
    Found(Address),
    Missing(String),
}

impl Planner<'_> {
    pub(super) fn event(&mut self, event: &ApiEvent, resource_id: Option<&str>) -> Result<(), PlanError> {
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
    pub(super) fn set_earlier(&self, address: &Address, path: &AttrPath) -> bool {
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
    pub(super) fn settle_set_backs(&mut self) {
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

    pub(super) fn push(&mut self, address: Address, ops: Vec<Op>, recipe: &str, created: bool) {
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
    pub(super) fn written_as(&self, address: &Address, path: &AttrPath) -> Option<String> {
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
    pub(super) fn provider_computes_unset(
        &mut self,
        address: &Address,
        config: Option<&Value>,
        path: &AttrPath,
    ) -> bool {
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
    pub(super) fn differs_from_state(&self, address: &Address, path: &AttrPath, value: &Value) -> bool {
        let Some(instance) = self.state.get(address) else { return false };
        value_at_path(&Value::Object(instance.attributes.clone()), path)
            .is_some_and(|have| !driftback_terraform::patch::values_equal(&have, value))
    }

    pub(super) fn resent_unchanged(
        &self,
        address: &Address,
        config: Option<&Value>,
        path: &AttrPath,
        value: &Value,
    ) -> bool {
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

    /// A managed resource's id becomes a reference to it (`aws_vpc.main.id`); anything else stays data.
    pub(super) fn reference_or_literal(&self, value: Value, near: &Address) -> AttrValue {
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
    pub(super) fn unique_name(&self, rtype: &str, raw: &str) -> String {
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

/// Whether the module holding `address` serves more than one instance: its directory is called
/// from several places, or its call has `count` or `for_each`.
pub(super) fn module_is_shared(repo: &Repo, address: &Address) -> bool {
    let path = address.module_path();
    let Some(dir) = repo.module_dir(&path) else { return true };
    if repo.modules().values().filter(|d| *d == dir).count() > 1 {
        return true;
    }
    address.module.iter().any(|step| step.key.is_some())
}
