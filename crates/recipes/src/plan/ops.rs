//! The operations one call gives by its recipe: the dispatch over the recipe's rule families (set,
//! whole documents, keyed blocks, maps, lists, nested blocks, deletes, attachments and rules).

use serde_json::{Map, Value};

use driftback_events::ApiEvent;
use driftback_terraform::eval::{contains_symbolic, effective_config, value_at_path};
use driftback_terraform::{Address, AttrPath, AttrValue, BlockSpec, Op, Seg};

use crate::document::Unplaced;

use super::convert::{
    convert, fill_template, insert_at, is_empty_json, item_attrs, nested_spec, same_members, with_key,
};
use super::model::PlanError;
use super::planner::{Planner, module_is_shared};
use crate::catalog::{Convert, MapRule, Recipe};
use crate::extract::{as_list, event_value, value_at};

impl Planner<'_> {
    pub(super) fn ops(&mut self, recipe: &Recipe, event: &ApiEvent, address: &Address) -> Result<Vec<Op>, PlanError> {
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
                                params: reason.to_string(),
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
                            params: params.to_string(),
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

/// A block a whole-document call adds, as the provider's schema says to write it; `Err` names what
/// does not fit. Appending keeps an ordered list's meaning only at its end, so an item inserted
/// before the state's blocks is refused unless the blocks are a set.
fn added_block(rtype: &str, added: &crate::document::AddedBlock, examples: &[Value]) -> Result<BlockSpec, Unplaced> {
    use driftback_terraform::schema::{Nesting, Schema};
    let at = &added.block_type;
    let schema = Schema::newest().map_err(|e| Unplaced::NoSchema { at: at.clone(), reason: e.to_string() })?;
    let block = schema
        .resource(rtype)
        .and_then(|r| r.block(at))
        .ok_or_else(|| Unplaced::NotABlockOf { at: at.clone(), rtype: rtype.to_string() })?;
    if !added.at_tail && block.nesting() != Nesting::Set {
        return Err(Unplaced::InsertedBeforeOthers { at: at.clone() });
    }
    crate::document::block_spec(block.body(), &added.value, at, examples)
}

/// Whether the configuration sets this attribute path (dotted, nested blocks by name).
fn configured(config: Option<&Value>, path: &AttrPath) -> bool {
    config.is_some_and(|c| path.to_string().split('.').try_fold(c, |v, step| v.get(step)).is_some_and(|v| !v.is_null()))
}

/// An item's list of objects that the provider's schema makes nested blocks of `block` (a trail's
/// event selector's `data_resource`): one block per object, its members in snake case and checked
/// against the schema. `None` when `attr` is no nested block there.
#[allow(clippy::type_complexity)]
fn nested_blocks_of(
    rtype: &str,
    block: &str,
    attr: &str,
    value: &Value,
) -> Option<Result<Vec<(String, BlockSpec)>, Unplaced>> {
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
