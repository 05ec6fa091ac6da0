//! The security baseline on a plan: each resource's values before (the state) and after (the state
//! with the plan's operations applied), judged by `driftback_security`. What the calls do not carry
//! is read from the state, so the same weakening is found whatever call, console form, whole
//! document or creation set the value.

use serde_json::{Map, Value};

use driftback_recipes::Plan;
use driftback_security::{Baseline, FindingKind};
use driftback_terraform::{Address, AttrValue, BlockSpec, Op, Seg, State, StateInstance};

/// A control the policy file accepts being weakened on some resources: an owner said so. Every use
/// is written into the decision's evidence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accept {
    /// The control id (`RDS.8`).
    pub control: String,
    /// Resource addresses, `*` as a wildcard (`aws_db_instance.scratch`, `module.dev.*`).
    pub addresses: Vec<String>,
    /// Who accepted it.
    pub by: String,
    pub reason: String,
}

impl Accept {
    pub fn covers(&self, control: &str, address: &str) -> bool {
        self.control == control && self.addresses.iter().any(|a| glob(a, address))
    }

    /// As [`Accept::covers`], for an instance named with its key or by its block.
    pub fn covers_instance(&self, control: &str, address: &Address) -> bool {
        self.covers(control, &address.to_string()) || self.covers(control, &address.without_key().to_string())
    }
}

/// One control a plan would weaken on one resource.
#[derive(Debug, Clone, PartialEq)]
pub struct Weakening {
    pub address: Address,
    pub control: String,
    /// The resource's top-level attributes the control reads.
    pub attributes: Vec<String>,
    /// For the reviewer: the control, the change, what it protects.
    pub text: String,
    /// The policy file's accept that lets it be written, if any.
    pub accepted_by: Option<String>,
}

/// The weakenings a plan's resulting values make, resource by resource.
pub fn weakenings(plan: &Plan, state: Option<&State>, accepts: &[Accept]) -> Vec<Weakening> {
    let baseline = Baseline::builtin();
    let mut out = Vec::new();
    // What the plan deletes, as the state knows it: what is deleted with a resource it names goes
    // with it.
    let removed: Vec<(&Address, Value)> = plan
        .changes
        .iter()
        .filter(|c| c.ops.iter().any(|op| matches!(op, Op::RemoveResource)))
        .filter_map(|c| state?.get(&c.address).map(|i| (&c.address, Value::Object(i.attributes.clone()))))
        .collect();
    for change in &plan.changes {
        let rtype = change.address.rtype.as_str();
        if change.ops.is_empty() || !baseline.covers(rtype) {
            continue;
        }
        let before: Option<Value> = state
            .and_then(|s| s.get(&change.address))
            .map(|i| Value::Object(i.attributes.clone()))
            .or_else(|| (!change.created).then(|| Value::Object(Map::new())))
            .map(|b| opened_documents(b, &change.ops));
        let after = resulting(before.clone(), &change.ops);
        // A new instance of a fleet (`count`, `for_each`) is judged against an instance the fleet
        // already has: what they share is no weakening; a resource on its own, against nothing.
        let before = if change.ops.iter().any(|op| matches!(op, Op::CreateResource { .. })) {
            state.and_then(|s| fleet_peer(s, &change.address)).map(|i| Value::Object(i.attributes.clone()))
        } else {
            before
        };
        // What controls read from other resources (a CIS alarm's metric filter), from the state.
        let others = |t: &str| state.map(|s| s.values_of_type(t)).unwrap_or_default();
        let (before, after) = (
            before.map(|b| driftback_security::with_links(rtype, &b, &others)),
            after.map(|a| driftback_security::with_links(rtype, &a, &others)),
        );
        for finding in baseline.judge(rtype, before.as_ref(), after.as_ref()) {
            // An empty before (the state does not know the resource) cannot have passed a control.
            if before.as_ref().is_some_and(|b| b.as_object().is_some_and(Map::is_empty))
                && !matches!(finding.kind, FindingKind::CreatedWeak)
            {
                continue;
            }
            if finding.kind == FindingKind::Deleted
                && before.as_ref().is_some_and(|b| {
                    removed.iter().any(|(other, theirs)| {
                        **other != change.address && driftback_security::names_resource(b, theirs)
                    })
                })
            {
                continue;
            }
            let address = change.address.to_string();
            let accepted_by = accepts
                .iter()
                .find(|a| a.covers_instance(&finding.control.id, &change.address))
                .map(|a| format!("{} accepted {} on {address}: {}", a.by, finding.control.id, a.reason));
            out.push(Weakening {
                address: change.address.clone(),
                control: finding.control.id.clone(),
                attributes: finding.attributes.clone(),
                text: finding.describe(),
                accepted_by,
            });
        }
    }
    out
}

/// Another instance of the same resource block (a fleet's), if the state has one.
pub fn fleet_peer<'s>(state: &'s State, address: &Address) -> Option<&'s StateInstance> {
    address.key.as_ref()?;
    let block = address.without_key();
    state.instances.iter().find(|i| i.address != *address && i.address.without_key() == block)
}

/// `values` with each JSON document an operation reaches into (`container_definitions[0].image`)
/// parsed from its text, so the operation applies to its members; before and after are both
/// judged in that form.
fn opened_documents(mut values: Value, ops: &[Op]) -> Value {
    for op in ops {
        let path = match op {
            Op::Set { path, .. } | Op::Remove { path } => path,
            _ => continue,
        };
        let (Some(Seg::Name(name)), true) = (path.0.first(), path.0.len() > 1) else { continue };
        let Some(slot) = values.get_mut(name.as_str()) else { continue };
        if let Value::String(text) = slot {
            if let Ok(parsed @ (Value::Object(_) | Value::Array(_))) = serde_json::from_str::<Value>(text) {
                *slot = parsed;
            }
        }
    }
    values
}

/// The values after `ops`, from the values before (`None`: no resource yet).
fn resulting(before: Option<Value>, ops: &[Op]) -> Option<Value> {
    let mut values = before;
    for op in ops {
        match op {
            Op::CreateResource { spec, .. } => values = Some(spec_value(spec)),
            Op::RemoveResource => values = None,
            Op::Set { path, value } => {
                let v = values.get_or_insert_with(|| Value::Object(Map::new()));
                set(v, &path.0, attr_value(value));
            }
            Op::Remove { path } => {
                if let Some(v) = values.as_mut() {
                    remove(v, &path.0);
                }
            }
            Op::AddBlock { block_type, spec } => {
                let v = values.get_or_insert_with(|| Value::Object(Map::new()));
                let segs: Vec<Seg> = block_type.split('.').map(|s| Seg::Name(s.to_string())).collect();
                let (last, parent) = segs.split_last().expect("a block type has a name");
                let Some(Value::Object(map)) = entry(v, parent) else { continue };
                let name = match last {
                    Seg::Name(n) | Seg::Key(n) => n.clone(),
                    Seg::Index(_) => continue,
                };
                match map.entry(name).or_insert_with(|| Value::Array(vec![])) {
                    Value::Array(items) => items.push(spec_value(spec)),
                    other => *other = Value::Array(vec![spec_value(spec)]),
                }
            }
            Op::RemoveBlocks { block_type, matching } => {
                if let Some(Value::Object(map)) = values.as_mut() {
                    if let Some(Value::Array(items)) = map.get_mut(block_type) {
                        items.retain(|item| {
                            !matching.iter().all(|(k, want)| item.get(k).is_some_and(|v| loosely_equal(v, want)))
                        });
                    }
                }
            }
            Op::IgnoreChanges { .. } => {}
        }
    }
    values
}

fn attr_value(value: &AttrValue) -> Value {
    match value {
        AttrValue::Literal(v) => v.clone(),
        // A reference the state cannot resolve here: symbolic, as the evaluator leaves it.
        AttrValue::Reference(r) => Value::String(format!("${{{r}}}")),
    }
}

fn spec_value(spec: &BlockSpec) -> Value {
    let mut map: Map<String, Value> = spec.attrs.iter().map(|(k, v)| (k.clone(), attr_value(v))).collect();
    for (name, block) in &spec.blocks {
        match map.entry(name.clone()).or_insert_with(|| Value::Array(vec![])) {
            Value::Array(items) => items.push(spec_value(block)),
            other => *other = Value::Array(vec![spec_value(block)]),
        }
    }
    Value::Object(map)
}

/// The value at `segs`, made on the way: a name steps into an object (into the first item of a
/// nested block's list, made when there is none).
fn entry<'v>(value: &'v mut Value, segs: &[Seg]) -> Option<&'v mut Value> {
    let mut current = value;
    for seg in segs {
        current = step(current, seg)?;
    }
    Some(current)
}

fn step<'v>(value: &'v mut Value, seg: &Seg) -> Option<&'v mut Value> {
    match seg {
        Seg::Name(n) | Seg::Key(n) => {
            if let Value::Array(items) = value {
                if items.is_empty() {
                    items.push(Value::Object(Map::new()));
                }
                return step(&mut items[0], seg);
            }
            if !value.is_object() {
                *value = Value::Object(Map::new());
            }
            let map = value.as_object_mut()?;
            Some(map.entry(n.clone()).or_insert(Value::Null))
        }
        Seg::Index(i) => match value {
            Value::Array(items) => {
                while items.len() <= *i {
                    items.push(Value::Object(Map::new()));
                }
                items.get_mut(*i)
            }
            Value::Object(_) if *i == 0 => Some(value),
            _ => None,
        },
    }
}

fn set(value: &mut Value, segs: &[Seg], new: Value) {
    if let Some(slot) = entry(value, segs) {
        *slot = new;
    }
}

fn remove(value: &mut Value, segs: &[Seg]) {
    let Some((last, parent)) = segs.split_last() else { return };
    let Some(holder) = entry(value, parent) else { return };
    let holder = match holder {
        Value::Array(items) if !matches!(last, Seg::Index(_)) => match items.first_mut() {
            Some(first) => first,
            None => return,
        },
        other => other,
    };
    match (holder, last) {
        (Value::Object(map), Seg::Name(n) | Seg::Key(n)) => {
            map.remove(n);
        }
        (Value::Array(items), Seg::Index(i)) if *i < items.len() => {
            items.remove(*i);
        }
        _ => {}
    }
}

fn loosely_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| loosely_equal(p, q)),
        _ => driftback_security::same(a, b),
    }
}

/// A glob with `*` only (addresses).
fn glob(pattern: &str, text: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == text,
        Some((head, tail)) => {
            text.len() >= head.len() && text.starts_with(head) && glob_rest(tail, &text[head.len()..])
        }
    }
}

fn glob_rest(pattern: &str, text: &str) -> bool {
    if pattern.is_empty() {
        return true;
    }
    (0..=text.len()).filter(|i| text.is_char_boundary(*i)).any(|i| glob(pattern, &text[i..]))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use driftback_recipes::ResourceChange;
    use driftback_terraform::AttrPath;

    fn state(address: &str, attributes: Value) -> State {
        State::from_instances(vec![StateInstance {
            address: Address::parse(address).unwrap(),
            attributes: attributes.as_object().unwrap().clone(),
        }])
    }

    fn plan(address: &str, ops: Vec<Op>) -> Plan {
        Plan {
            changes: vec![ResourceChange {
                address: Address::parse(address).unwrap(),
                ops,
                recipes: vec![],
                created: false,
            }],
            ..Default::default()
        }
    }

    fn set_op(path: &str, value: Value) -> Op {
        Op::Set { path: AttrPath::parse(path).unwrap(), value: AttrValue::Literal(value) }
    }

    #[test]
    fn the_resulting_value_is_judged_with_what_the_call_does_not_carry_read_from_the_state() {
        let st = state(
            "aws_lb_listener.http",
            json!({"protocol": "HTTP", "port": 80,
                   "default_action": [{"type": "redirect", "redirect": [{"protocol": "HTTPS", "port": "443", "status_code": "HTTP_301"}]}]}),
        );
        // The call replaces the default action only; the protocol comes from the state.
        let forward = plan(
            "aws_lb_listener.http",
            vec![set_op("default_action", json!([{"type": "forward", "target_group_arn": "arn:tg"}]))],
        );
        let found = weakenings(&forward, Some(&st), &[]);
        assert_eq!(found.iter().map(|w| w.control.as_str()).collect::<Vec<_>>(), ["ELB.1"], "{found:?}");
        assert!(found[0].attributes.contains(&"default_action".to_string()), "{found:?}");
        // The same listener's port changed: nothing weakened.
        let port = plan("aws_lb_listener.http", vec![set_op("port", json!(8080))]);
        assert!(weakenings(&port, Some(&st), &[]).is_empty());
    }

    #[test]
    fn nested_block_paths_set_into_the_state_shape() {
        let st = state(
            "aws_s3_bucket_versioning.logs",
            json!({"bucket": "logs", "versioning_configuration": [{"status": "Enabled"}]}),
        );
        let suspend =
            plan("aws_s3_bucket_versioning.logs", vec![set_op("versioning_configuration.status", json!("Suspended"))]);
        let found = weakenings(&suspend, Some(&st), &[]);
        assert!(
            found.iter().any(|w| w.control == "S3.14" && w.attributes == ["versioning_configuration"]),
            "{found:?}"
        );
        let enable =
            plan("aws_s3_bucket_versioning.logs", vec![set_op("versioning_configuration.status", json!("Enabled"))]);
        assert!(weakenings(&enable, Some(&st), &[]).is_empty());
    }

    #[test]
    fn an_accept_in_the_policy_file_names_who_accepted() {
        let st = state("aws_db_instance.scratch", json!({"engine": "postgres", "deletion_protection": true}));
        let off = plan("aws_db_instance.scratch", vec![set_op("deletion_protection", json!(false))]);
        let accept = Accept {
            control: "RDS.8".into(),
            addresses: vec!["aws_db_instance.scr*".into()],
            by: "dba-team".into(),
            reason: "a scratch database".into(),
        };
        let found = weakenings(&off, Some(&st), std::slice::from_ref(&accept));
        let rds8 = found.iter().find(|w| w.control == "RDS.8").expect("RDS.8 found");
        assert_eq!(
            rds8.accepted_by.as_deref(),
            Some("dba-team accepted RDS.8 on aws_db_instance.scratch: a scratch database")
        );
        let other = Accept { addresses: vec!["aws_db_instance.prod".into()], ..accept };
        let found = weakenings(&off, Some(&st), &[other]);
        assert!(found.iter().find(|w| w.control == "RDS.8").is_some_and(|w| w.accepted_by.is_none()));
    }

    #[test]
    fn an_edit_inside_a_json_document_is_judged_on_the_document() {
        let definitions = json!([{"name": "api", "image": "api:1",
            "logConfiguration": {"logDriver": "awslogs", "options": {"awslogs-group": "/ecs/api"}}}]);
        let st = state(
            "aws_ecs_task_definition.api",
            json!({"family": "api", "container_definitions": definitions.to_string()}),
        );
        let remove = Op::Remove { path: AttrPath::parse("container_definitions[0].logConfiguration").unwrap() };
        let found = weakenings(&plan("aws_ecs_task_definition.api", vec![remove]), Some(&st), &[]);
        assert!(found.iter().any(|w| w.control == "ECS.9"), "{found:?}");
        let image = plan("aws_ecs_task_definition.api", vec![set_op("container_definitions[0].image", json!("api:2"))]);
        assert!(weakenings(&image, Some(&st), &[]).is_empty());
    }

    #[test]
    fn globs_match_addresses() {
        assert!(glob("module.dev.*", "module.dev.aws_db_instance.x"));
        assert!(glob("aws_db_instance.a*b", "aws_db_instance.axxb"));
        assert!(!glob("aws_db_instance.a*b", "aws_db_instance.axxc"));
        assert!(glob("aws_db_instance.x", "aws_db_instance.x"));
    }
}
