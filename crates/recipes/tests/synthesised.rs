//! Every attribute-setting recipe, built-in or generated, planned on a call synthesised from its
//! shape: the identifying member names a resource of the recipe's type in a fixture state, each
//! member a `set` rule reads carries a new value of the type the provider's schema gives the
//! attribute, and the plan must set exactly that attribute to exactly that value. A mapping to the
//! wrong member, to an attribute of another type, or one the planner drops fails here.

use std::collections::BTreeMap;
use std::path::PathBuf;

use driftback_events::{GroupConfig, group, normalize};
use driftback_recipes::{Calls, Catalog, Recipe, plan};
use driftback_terraform::schema::{Schema, ValueType};
use driftback_terraform::{AttrValue, Op, Repo, State};
use serde_json::{Map, Value, json};

/// Recipes this test can synthesise a call for: attributes set from top-level members of one
/// resource found by its key (the other actions have their own tests in plan.rs).
fn simple(recipe: &Recipe) -> bool {
    recipe.key.is_some()
        && !recipe.set.is_empty()
        && recipe.types.len() == 1
        && recipe.each.is_none()
        && recipe.create.is_none()
        && recipe.adopt.is_none()
        && recipe.keyed_blocks.is_none()
        && recipe.set_keyed.is_none()
        && recipe.if_state_has.is_none()
        && recipe.if_request_has.is_empty()
        && recipe.if_request_is.is_empty()
        && recipe.from_earlier.is_none()
        && recipe.whole.is_none()
        && recipe.remove.is_empty()
        && recipe.remove_when.is_empty()
        && recipe.map_merge.is_empty()
        && recipe.block_add.is_empty()
        && recipe.set.iter().all(|s| s.map.is_empty() && s.value.is_none() && !s.from.contains(['.', '[', '|']))
        && !recipe.key.as_deref().unwrap_or_default().contains(['.', '['])
        && !recipe.set.iter().any(|s| s.path.contains(['.', '[']))
}

/// A new value for an attribute of this type, and the request member's value that sets it.
fn new_value(ty: &ValueType, i: usize) -> Option<(Value, Value)> {
    Some(match ty {
        ValueType::String => (json!(format!("new-{i}")), json!(format!("new-{i}"))),
        ValueType::Number => (json!(40 + i), json!(40 + i)),
        ValueType::Bool => (json!(true), json!(true)),
        ValueType::List(inner) | ValueType::Set(inner) if **inner == ValueType::String => {
            (json!([format!("new-{i}")]), json!([format!("new-{i}")]))
        }
        ValueType::Map(inner) if **inner == ValueType::String => {
            (json!({"k": format!("new-{i}")}), json!({"k": format!("new-{i}")}))
        }
        _ => return None,
    })
}

/// The old value: of the same type, different from the new one.
fn old_value(ty: &ValueType) -> Value {
    match ty {
        ValueType::String => json!("old"),
        ValueType::Number => json!(1),
        ValueType::Bool => json!(false),
        ValueType::List(_) | ValueType::Set(_) => json!(["old"]),
        ValueType::Map(_) => json!({"k": "old"}),
        _ => Value::Null,
    }
}

#[test]
fn every_attribute_setting_recipe_sets_what_its_synthesised_call_carries() {
    let catalog = Catalog::builtin();
    let schema = Schema::newest().unwrap();
    let calls = Calls::builtin();
    let (mut checked, mut generated) = (0, 0);
    for recipe in catalog.recipes.iter().filter(|r| simple(r)) {
        let rtype = &recipe.types[0];
        let resource = schema.resource(rtype).unwrap_or_else(|| panic!("{}: no resource type {rtype}", recipe.id));
        let key = recipe.key.clone().unwrap();
        let lookup = recipe.lookup.first().cloned().unwrap_or_else(|| "id".into());
        // The fixture: the resource in the state (found by its key) and in the code (old values).
        let mut attributes = Map::new();
        attributes.insert("id".into(), json!("the-resource"));
        attributes.insert(lookup.clone(), json!("the-resource"));
        let mut request = Map::new();
        // A key with alternatives (`streamName|streamARN`): the call carries the first.
        request.insert(key.split('|').next().unwrap_or(key.as_str()).to_string(), json!("the-resource"));
        for rule in &recipe.identity {
            attributes.insert(rule.attr.clone(), json!(format!("parent-{}", rule.attr)));
            request.insert(rule.from.clone(), json!(format!("parent-{}", rule.attr)));
        }
        let mut code = String::new();
        let mut want = BTreeMap::new();
        for (i, rule) in recipe.set.iter().enumerate() {
            let attr = resource
                .argument(&rule.path)
                .unwrap_or_else(|| panic!("{}: {rtype} has no argument {}", recipe.id, rule.path));
            let ty = attr.value_type();
            // The converter the recipe names must fit the attribute's type.
            let convert = format!("{:?}", rule.convert).to_lowercase();
            match ty {
                ValueType::Number => assert!(convert.contains("number"), "{}: {} is a number", recipe.id, rule.path),
                ValueType::Bool => assert!(convert.contains("bool"), "{}: {} is a bool", recipe.id, rule.path),
                _ => assert!(
                    !convert.contains("number") && !convert.contains("bool"),
                    "{}: {} is not a number or bool",
                    recipe.id,
                    rule.path
                ),
            }
            let Some((value, member)) = new_value(ty, i) else { continue };
            let old = old_value(ty);
            attributes.insert(rule.path.clone(), old.clone());
            code.push_str(&format!(
                "  {} = {}\n",
                rule.path,
                driftback_terraform::AttrValue::Literal(old).render("  ").unwrap()
            ));
            request.insert(rule.from.clone(), member);
            want.insert(rule.path.clone(), value);
        }
        if want.is_empty() {
            continue;
        }
        let state = State::parse(
            &json!({"version": 4, "terraform_version": "1.9.5", "serial": 1, "lineage": "x", "outputs": {},
                "resources": [{"mode": "managed", "type": rtype, "name": "r",
                    "provider": "provider[\"registry.terraform.io/hashicorp/aws\"]",
                    "instances": [{"schema_version": 0, "attributes": attributes}]}]})
            .to_string(),
            "terraform.tfstate",
        )
        .unwrap();
        let repo = Repo::from_files(
            [(PathBuf::from("main.tf"), format!("resource \"{rtype}\" \"r\" {{\n{code}}}\n"))].into_iter().collect(),
        );
        let event = recipe.events[0].clone();
        // The synthesised members exist in the call as CloudTrail logs it.
        let call = calls.check_event(&recipe.source, &event).unwrap_or_else(|e| panic!("{}: {e}", recipe.id));
        for member in request.keys() {
            assert!(call.has_member(member), "{}: {} {event} has no member {member}", recipe.id, recipe.source);
        }
        let record = json!({
            "eventID": "e1", "eventTime": "2024-03-01T10:00:00Z", "eventSource": recipe.source, "eventName": event,
            "userIdentity": {"type": "IAMUser", "arn": "arn:aws:iam::123456789012:user/alice", "userName": "alice"},
            "requestParameters": request
        });
        let change_set = group(vec![normalize(&record).unwrap()], &GroupConfig::default()).remove(0);
        // As a hand-written recipe, so a refusal shows its reason instead of falling back to the agent.
        let only = Catalog { recipes: vec![Recipe { generated: false, ..recipe.clone() }] };
        let planned =
            plan(&only, &change_set, &state, &repo).unwrap_or_else(|e| panic!("{} on {record}: {e}", recipe.id));
        let sets: BTreeMap<String, Value> = planned
            .changes
            .iter()
            .flat_map(|c| c.ops.iter())
            .filter_map(|op| match op {
                Op::Set { path, value: AttrValue::Literal(v) } => Some((path.to_string(), v.clone())),
                _ => None,
            })
            .collect();
        // An argument the provider marks sensitive is held for a person, never written.
        let mut sets = sets;
        for secret in &planned.secrets {
            let path = secret.path.to_string();
            let sensitive = ["5.100.0", "6.25.0"]
                .iter()
                .any(|v| Schema::version(v).is_ok_and(|s| s.is_sensitive(rtype, &secret.path)));
            assert!(sensitive, "{} holds {path}, which no bundled provider version marks sensitive", recipe.id);
            if let Some(value) = want.get(&path) {
                sets.insert(path, value.clone());
            }
        }
        assert_eq!(sets, want, "{} on {record}", recipe.id);
        assert!(planned.changes.iter().all(|c| c.address.to_string() == format!("{rtype}.r")), "{}", recipe.id);
        checked += 1;
        generated += usize::from(recipe.generated);
    }
    // Most generated recipes are of this shape; a generator that stops producing them fails here.
    eprintln!("{checked} recipes checked, {generated} of them generated");
    assert!(generated >= 200, "only {generated} generated recipes checked");
    assert!(checked > generated, "no built-in recipe checked");
}

/// Every attribute a recipe writes exists on its resource types in every supported provider
/// version: a recipe can only write what the schema gate would accept.
#[test]
fn every_path_a_recipe_writes_exists_in_the_provider_schema() {
    let catalog = Catalog::builtin();
    for version in Schema::bundled_versions() {
        let schema = Schema::version(version).unwrap();
        for recipe in &catalog.recipes {
            let mut paths: Vec<String> = recipe.set.iter().map(|s| s.path.clone()).collect();
            paths.extend(recipe.remove.iter().cloned());
            if let Some(named) = &recipe.set_named {
                paths.extend(named.paths.values().cloned());
            }
            if let Some(keyed) = &recipe.keyed_blocks {
                paths.extend(keyed.set.iter().map(|s| format!("{}.{}", keyed.block, s.path)));
            }
            for rtype in recipe.types.iter().filter(|t| *t != "*") {
                for path in &paths {
                    let parsed = driftback_terraform::AttrPath::parse(path).unwrap();
                    schema
                        .check_path(rtype, &parsed)
                        .unwrap_or_else(|e| panic!("{} ({version}): {rtype}.{path}: {e}", recipe.id));
                }
            }
        }
    }
}
