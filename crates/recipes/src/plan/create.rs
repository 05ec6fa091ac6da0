//! Resources made outside Terraform: written with an import block, adopted into a fleet, or
//! as security group rules in the style the code uses.

use serde_json::Value;

use driftback_events::ApiEvent;
use driftback_terraform::eval::effective_config;
use driftback_terraform::{Address, AttrPath, AttrValue, BlockSpec, InstanceKey, Op, Repo, Seg};

use super::convert::{
    convert, fill_template, insert_at, item_attrs, nested_spec, path_and_conversion, text_of, without_final_dot,
};
use super::model::PlanError;
use super::planner::{Planner, module_is_shared};
use super::secret::check_secret;
use crate::catalog::{CreateRule, Recipe};
use crate::extract::{as_list, event_value, value_at};

impl Planner<'_> {
    pub(super) fn create(
        &mut self,
        recipe: &Recipe,
        rule: &CreateRule,
        event: &ApiEvent,
        id: &str,
    ) -> Result<(), PlanError> {
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
                PlanError::Unmapped {
                    recipe: recipe.id.clone(),
                    name: event.raw_name.clone(),
                    params: unplaced.to_string(),
                }
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
    pub(super) fn adopt(
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

    /// One `aws_security_group_rule` per source of each permission the call adds, in the style the
    /// code already uses for this group, each with the provider's composite import id
    /// (`sg-..._ingress_tcp_443_443_10.0.0.0/16`). The rule goes beside the group when the group's
    /// module serves one instance; when its module is shared (called several times, or with
    /// `count`/`for_each`), beside the module call in the root module, so no other instance gains it.
    pub(super) fn permission_rules(
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
