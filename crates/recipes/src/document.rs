//! Calls that send a resource's whole configuration as one document (CloudFront's
//! `UpdateDistribution`, `UpdateResponseHeadersPolicy`, WAF's `UpdateWebACL`): the document is read
//! against the resource's attributes in the state, member by member, and only what differs is
//! written. Member names become attribute names by the provider's convention (`viewerProtocolPolicy`
//! is `viewer_protocol_policy`, `aCMCertificateArn` is `acm_certificate_arn`), a `{quantity, items}`
//! wrapper is its list, a nested object is a block; where the convention does not hold, the
//! recipe's `renames` say the attribute. A top-level list of blocks that gains items (a web ACL's
//! new `rule`), each told apart from the state's by its key, yields the new items whole, shaped as
//! the configuration writes them, for the planner to check against the provider's schema. A member
//! that names no attribute of the state and is not empty, a list of blocks that loses an item, or
//! one that gains an item below the top level, refuses the whole call: nothing of a document is
//! written unless all of it is understood.

use serde_json::{Map, Value};

use driftback_terraform::render::{AttrValue, BlockSpec};
use driftback_terraform::schema::{BlockSchema, ValueType};
use driftback_terraform::{AttrPath, Seg};

use crate::catalog::{Convert, WholeRule};

/// What a whole-document call changes.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Changes {
    /// Attribute paths (as the code's blocks are ordered) and their new values.
    pub set: Vec<(AttrPath, Value)>,
    /// Top-level blocks the document adds.
    pub added: Vec<AddedBlock>,
}

/// A block a document adds beside the state's blocks of its type.
#[derive(Debug, PartialEq)]
pub(crate) struct AddedBlock {
    pub block_type: String,
    /// The item with attribute names (nested objects are nested blocks or object values; the
    /// planner tells which from the schema).
    pub value: Value,
    /// Whether the document lists it after every block the state has (the only place appending
    /// keeps an ordered list's meaning).
    pub at_tail: bool,
}

/// What a whole-document call changes; or the members it could not place.
pub(crate) fn changes(
    rule: &WholeRule,
    document: &Value,
    state: &Map<String, Value>,
    code: Option<&Value>,
) -> Result<Changes, Vec<String>> {
    let mut walk = Walk { rule, out: Changes::default(), unplaced: Vec::new() };
    match document {
        Value::Object(members) => walk.object(members, state, code, &[], ""),
        _ => walk.unplaced.push(rule.from.clone()),
    }
    if walk.unplaced.is_empty() { Ok(walk.out) } else { Err(walk.unplaced) }
}

struct Walk<'r> {
    rule: &'r WholeRule,
    out: Changes,
    unplaced: Vec<String>,
}

/// Attributes that identify a block among its siblings, in the order tried.
const BLOCK_KEYS: &[&str] = &["path_pattern", "error_code", "origin_id", "name", "priority"];

impl Walk<'_> {
    fn object(
        &mut self,
        members: &Map<String, Value>,
        state: &Map<String, Value>,
        code: Option<&Value>,
        path: &[Seg],
        parent: &str,
    ) {
        // A `{quantity, items, ...}` wrapper's other members belong to the object that holds it
        // (`allowedMethods.cachedMethods` is the behaviour's `cached_methods`).
        let mut all: Vec<(String, Value)> = members.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        for (name, value) in members {
            let Value::Object(inner) = value else { continue };
            let attr = self.attribute(parent, name);
            let is_list = state.get(&attr).is_some_and(|s| !is_single_block(s));
            if inner.contains_key("quantity") && is_list {
                for (k, v) in inner.iter().filter(|(k, _)| !matches!(k.as_str(), "quantity" | "items")) {
                    if !members.contains_key(k) {
                        all.push((k.clone(), v.clone()));
                    }
                }
            }
        }
        for (name, value) in all {
            if self.rule.skip.iter().any(|s| *s == name || *s == format!("{parent}.{name}")) {
                continue;
            }
            let attr = self.attribute(parent, &name);
            let at = [path, &[Seg::Name(attr.clone())]].concat();
            let mut value = value;
            if let (Some(flag), Value::Object(members)) = (self.rule.presence.get(&name), &mut value) {
                let has = state.get(&attr).is_some_and(|b| !is_empty(b));
                match (members.remove(flag).and_then(|v| v.as_bool()), has) {
                    (Some(false), true) => {
                        self.unplaced.push(format!("{} (turned off)", describe(&at)));
                        continue;
                    }
                    (Some(false), false) => continue,
                    _ => {}
                }
            }
            match state.get(&attr) {
                Some(have) => self.value(&value, have, code.and_then(|c| c.get(&attr)), &at, &name),
                None if is_empty(&value) => {}
                None => self.unplaced.push(describe(&at)),
            }
        }
    }

    fn value(&mut self, value: &Value, have: &Value, code: Option<&Value>, path: &[Seg], camel: &str) {
        match have {
            Value::Array(blocks) if is_single_block(have) || blocks.iter().any(Value::is_object) => {
                self.blocks(value, blocks, code, path, camel)
            }
            Value::Array(_) => {
                let items = list_items(value);
                if !have.as_array().is_some_and(|have| same_members(&items, have)) {
                    self.out.set.push((AttrPath(path.to_vec()), Value::Array(items)));
                }
            }
            Value::Object(_) => {
                if !driftback_terraform::patch::values_equal(value, have) {
                    self.out.set.push((AttrPath(path.to_vec()), value.clone()));
                }
            }
            _ => {
                if value.is_object() || value.is_array() {
                    if !is_empty(value) {
                        self.unplaced.push(describe(path));
                    }
                } else if !scalars_equal(value, have) {
                    self.out.set.push((AttrPath(path.to_vec()), value.clone()));
                }
            }
        }
    }

    fn blocks(&mut self, value: &Value, blocks: &[Value], code: Option<&Value>, path: &[Seg], camel: &str) {
        let items: Vec<Value> = match value {
            // `{quantity, items}` wraps a list of blocks; an object with other members beside its
            // `quantity` is one block that holds a list (a geo restriction's locations).
            Value::Object(o) if o.contains_key("quantity") && o.keys().all(|k| k == "quantity" || k == "items") => {
                list_items(value)
            }
            Value::Object(_) => vec![value.clone()],
            Value::Array(items) => items.clone(),
            _ => {
                self.unplaced.push(describe(path));
                return;
            }
        };
        if blocks.is_empty() {
            if !items.iter().all(is_empty) {
                self.unplaced.push(format!("{} (a block the state does not have)", describe(path)));
            }
            return;
        }
        let code_blocks: Vec<Value> = match code {
            Some(Value::Array(c)) => c.clone(),
            Some(c @ Value::Object(_)) => vec![c.clone()],
            _ => Vec::new(),
        };
        let key = BLOCK_KEYS.iter().find(|k| blocks[0].get(**k).is_some()).copied();
        // Items are told apart by their key: an item whose key no state block has is new, which
        // only a top-level list that keeps every block the state has may be.
        let keys: Vec<Option<Value>> = items
            .iter()
            .map(|item| {
                let (k, Value::Object(members)) = (key?, item) else { return None };
                members.iter().find(|(name, _)| self.attribute(camel, name) == k).map(|(_, v)| v.clone())
            })
            .collect();
        let new: Vec<bool> = keys
            .iter()
            .map(|v| {
                v.as_ref().is_some_and(|v| {
                    !blocks.iter().any(|b| key.and_then(|k| b.get(k)).is_some_and(|b| scalars_equal(v, b)))
                })
            })
            .collect();
        let added = new.iter().filter(|n| **n).count();
        if items.len() != blocks.len() + added || (added > 0 && path.len() != 1) {
            self.unplaced.push(format!("{} ({} blocks, the state has {})", describe(path), items.len(), blocks.len()));
            return;
        }
        let kept = items.len() - added;
        for (i, item) in items.iter().enumerate() {
            let Value::Object(members) = item else {
                self.unplaced.push(describe(path));
                continue;
            };
            if new[i] {
                let Seg::Name(block_type) = &path[0] else { continue };
                let shaped = self.shaped(item, camel);
                self.out.added.push(AddedBlock { block_type: block_type.clone(), value: shaped, at_tail: i >= kept });
                continue;
            }
            // The block of the state and of the code this item is: by its key where blocks have one.
            let key_value = keys[i].clone();
            let find = |list: &[Value]| match (key, &key_value) {
                (Some(k), Some(v)) => list.iter().position(|b| b.get(k).is_some_and(|b| scalars_equal(v, b))),
                _ => Some(i).filter(|i| *i < list.len()),
            };
            let Some(j) = find(blocks) else {
                self.unplaced.push(format!("{} (an item the state does not have)", describe(path)));
                continue;
            };
            let Value::Object(state_block) = &blocks[j] else { continue };
            let in_code = find(&code_blocks);
            let mut at = path.to_vec();
            if blocks.len() > 1 {
                at.push(Seg::Index(in_code.unwrap_or(j)));
            }
            let code_block = in_code.and_then(|k| code_blocks.get(k));
            self.object(members, state_block, code_block, &at, camel);
        }
    }

    /// A new item as the configuration writes it: members by attribute name (members skipped as
    /// `parent.member` left out: a bare skipped name means the document's own member, and an item
    /// needs its `name`), `{quantity, items}` wrappers as their lists.
    fn shaped(&self, value: &Value, parent: &str) -> Value {
        match value {
            Value::Object(o) if o.contains_key("quantity") && o.keys().all(|k| k == "quantity" || k == "items") => {
                Value::Array(list_items(value).iter().map(|v| self.shaped(v, parent)).collect())
            }
            Value::Object(members) => Value::Object(
                members
                    .iter()
                    .filter(|(name, _)| !self.rule.skip.iter().any(|s| *s == format!("{parent}.{name}")))
                    .map(|(name, v)| (self.attribute(parent, name), self.shaped(v, name)))
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.iter().map(|v| self.shaped(v, parent)).collect()),
            other => other.clone(),
        }
    }

    /// The attribute a member names: the recipe's rename (`parent.member` or `member`), else the
    /// member in snake case.
    fn attribute(&self, parent: &str, name: &str) -> String {
        let scoped = format!("{parent}.{name}");
        self.rule
            .renames
            .get(&scoped)
            .or_else(|| self.rule.renames.get(name))
            .cloned()
            .unwrap_or_else(|| snake_case(name))
    }
}

/// A document that describes a new resource whole, as the configuration writes it: the members
/// `skip` names left out (bare at the top level, `parent.member` below), the rest by attribute name.
pub(crate) fn shaped_new(rule: &WholeRule, document: &Value) -> Value {
    let walk = Walk { rule, out: Changes::default(), unplaced: Vec::new() };
    match document {
        Value::Object(members) => Value::Object(
            members
                .iter()
                .filter(|(name, v)| !rule.skip.iter().any(|s| s == *name) && !v.is_null())
                .map(|(name, v)| (walk.attribute("", name), walk.shaped(v, name)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Why a new block cannot be written from what a call sent: the member it stops at (`at`, a dotted
/// path from the block) and what does not fit; the block would not validate. Its text is what a
/// refusal names ([`crate::PlanError::Unmapped`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum Unplaced {
    #[error("{at} is not an object")]
    NotAnObject { at: String },
    #[error("{at} (not an object)")]
    ItemNotAnObject { at: String },
    #[error("{at} (not a {expected})")]
    WrongType { at: String, expected: String },
    #[error("{at} ({count} blocks, at most {max} allowed)")]
    TooManyBlocks { at: String, count: usize, max: u32 },
    #[error("{at} (not in the provider's schema)")]
    NotInSchema { at: String },
    #[error("{at} (required, and the call does not send it)")]
    MissingArgument { at: String },
    #[error("{at} (a required block the call does not send)")]
    MissingBlock { at: String },
    #[error("{at} (a list mixing objects and values)")]
    MixedList { at: String },
    #[error("{at} (the configuration writes no such value to copy the syntax of)")]
    NoExample { at: String },
    #[error("{at} (the configuration writes it both as blocks and as a value)")]
    WrittenBothWays { at: String },
    #[error("{at} (no provider schema: {reason})")]
    NoSchema { at: String, reason: String },
    #[error("{at} (not a block of {rtype} in the provider's schema)")]
    NotABlockOf { at: String, rtype: String },
    #[error("{at} (a block inserted before others in an ordered list)")]
    InsertedBeforeOthers { at: String },
}

/// A new block's body from its shaped item, member by member against the provider's schema of the
/// block (`body`): an argument takes the value as written (its type must admit it), a nested block
/// takes an object (one block) or a list of objects; `at` names the block in messages. An `any`
/// argument holding objects (the schema data's stand-in for a nested schema too deep to generate)
/// is written as `examples`, the blocks of this type the configuration already has, write it:
/// blocks where they use blocks, `name = value` where they do, and nothing they do not show. A
/// member the schema does not have, a value of the wrong kind, or a required argument or block the
/// item lacks refuses the block: it would not validate.
pub(crate) fn block_spec(
    body: &BlockSchema,
    value: &Value,
    at: &str,
    examples: &[Value],
) -> Result<BlockSpec, Unplaced> {
    spec_of(body, value, at, examples, false)
}

/// A new resource's body from a document that describes it whole (an adoption: the configuration
/// has no block of its type to copy the syntax of). Where the schema data stands in `any` for a
/// nested schema too deep to generate, its objects are written as the nested blocks they are in
/// the provider, and its scalars and lists of scalars as arguments.
pub(crate) fn new_resource_spec(body: &BlockSchema, value: &Value, at: &str) -> Result<BlockSpec, Unplaced> {
    spec_of(body, value, at, &[], true)
}

fn spec_of(
    body: &BlockSchema,
    value: &Value,
    at: &str,
    examples: &[Value],
    fresh: bool,
) -> Result<BlockSpec, Unplaced> {
    let Value::Object(members) = value else { return Err(Unplaced::NotAnObject { at: at.to_string() }) };
    let mut spec = BlockSpec::default();
    for (name, v) in members {
        let here = format!("{at}.{name}");
        if v.is_null() || matches!(v, Value::Array(items) if items.is_empty()) {
            continue;
        }
        if let Some(argument) = body.argument(name) {
            if !argument.value_type().admits(v) {
                return Err(Unplaced::WrongType { at: here, expected: format!("{:?}", argument.value_type()) });
            }
            if *argument.value_type() == ValueType::Any && holds_objects(v) {
                match fresh {
                    true => nested_blocks(&mut spec, name, v, &here)?,
                    false => spec_by_example(&mut spec, name, v, &members_of(examples, name), &here)?,
                }
                continue;
            }
            spec.attrs.push((name.clone(), AttrValue::Literal(as_type(argument.value_type(), v))));
        } else if let Some(block) = body.block(name) {
            let items = match v {
                Value::Array(items) => items.clone(),
                one => vec![one.clone()],
            };
            if block.max_items().is_some_and(|max| items.len() > max as usize) {
                return Err(Unplaced::TooManyBlocks {
                    at: here,
                    count: items.len(),
                    max: block.max_items().unwrap_or(0),
                });
            }
            let examples = members_of(examples, name);
            for item in &items {
                spec.blocks.push((name.clone(), spec_of(block.body(), item, &here, &examples, fresh)?));
            }
        } else {
            return Err(Unplaced::NotInSchema { at: here });
        }
    }
    let has = |name: &str| spec.attrs.iter().any(|(a, _)| a == name) || spec.blocks.iter().any(|(b, _)| b == name);
    if let Some((missing, _)) = body.arguments().find(|(n, a)| a.is_required() && !has(n)) {
        return Err(Unplaced::MissingArgument { at: format!("{at}.{missing}") });
    }
    if let Some((missing, _)) = body.blocks().find(|(n, b)| b.min_items() > 0 && !has(n)) {
        return Err(Unplaced::MissingBlock { at: format!("{at}.{missing}") });
    }
    Ok(spec)
}

/// A scalar the document sends as text (`"503"`, CloudFront's response codes) in the argument's
/// own type, as the code writes it.
fn as_type(value_type: &ValueType, value: &Value) -> Value {
    let conversion = match value_type {
        ValueType::Number => Some(Convert::Number),
        ValueType::Bool => Some(Convert::Bool),
        _ => None,
    };
    crate::plan::convert(value.clone(), conversion)
}

/// `name`'s values in the example blocks: each block of a block list, or an attribute's value.
fn members_of(examples: &[Value], name: &str) -> Vec<Value> {
    let mut out = Vec::new();
    for example in examples {
        match example.get(name) {
            Some(Value::Array(items)) if items.iter().all(Value::is_object) && !items.is_empty() => {
                out.extend(items.iter().cloned().map(json_block))
            }
            Some(other) => out.push(other.clone()),
            None => {}
        }
    }
    out
}

/// A block as [`members_of`] hands it on: marked, so an object attribute is not taken for one.
fn json_block(item: Value) -> Value {
    serde_json::json!({ BLOCK_MARK: item })
}

/// The key [`json_block`] wraps a block in (not a valid attribute name, so never a real member).
const BLOCK_MARK: &str = "<block>";

fn holds_objects(v: &Value) -> bool {
    match v {
        Value::Object(_) => true,
        Value::Array(items) => !items.is_empty() && items.iter().all(Value::is_object),
        _ => false,
    }
}

/// Write `name = v` into `spec` the way the example values show it.
/// Objects as nested blocks (a list of them as repeated blocks), anything else as an argument.
fn nested_blocks(spec: &mut BlockSpec, name: &str, v: &Value, at: &str) -> Result<(), Unplaced> {
    let items = match v {
        Value::Array(items) if items.iter().all(Value::is_object) => items.clone(),
        one @ Value::Object(_) => vec![one.clone()],
        _ => return Err(Unplaced::MixedList { at: at.to_string() }),
    };
    for item in &items {
        let Value::Object(members) = item else { continue };
        let mut nested = BlockSpec::default();
        for (member, value) in members {
            if value.is_null() {
                continue;
            }
            if holds_objects(value) {
                nested_blocks(&mut nested, member, value, &format!("{at}.{member}"))?;
            } else {
                nested.attrs.push((member.clone(), AttrValue::Literal(value.clone())));
            }
        }
        spec.blocks.push((name.to_string(), nested));
    }
    Ok(())
}

fn spec_by_example(spec: &mut BlockSpec, name: &str, v: &Value, examples: &[Value], at: &str) -> Result<(), Unplaced> {
    let blocks: Vec<Value> = examples.iter().filter_map(|e| e.get(BLOCK_MARK).cloned()).collect();
    let as_block = !blocks.is_empty();
    let as_attribute = examples.iter().any(|e| e.get(BLOCK_MARK).is_none());
    match (v, as_block, as_attribute) {
        (_, false, false) => Err(Unplaced::NoExample { at: at.to_string() }),
        (_, true, true) => Err(Unplaced::WrittenBothWays { at: at.to_string() }),
        (Value::Object(_) | Value::Array(_), true, false) => {
            let items = match v {
                Value::Array(items) => items.clone(),
                one => vec![one.clone()],
            };
            for item in &items {
                let Value::Object(members) = item else { return Err(Unplaced::ItemNotAnObject { at: at.to_string() }) };
                let mut nested = BlockSpec::default();
                for (member, value) in members {
                    if value.is_null() {
                        continue;
                    }
                    let here = format!("{at}.{member}");
                    let seen = members_of(&blocks, member);
                    if holds_objects(value) {
                        spec_by_example(&mut nested, member, value, &seen, &here)?;
                    } else if seen.iter().any(|e| e.get(BLOCK_MARK).is_none() && !holds_objects(e)) {
                        nested.attrs.push((member.clone(), AttrValue::Literal(value.clone())));
                    } else {
                        return Err(Unplaced::NoExample { at: here });
                    }
                }
                spec.blocks.push((name.to_string(), nested));
            }
            Ok(())
        }
        _ => {
            spec.attrs.push((name.to_string(), AttrValue::Literal(v.clone())));
            Ok(())
        }
    }
}

/// `viewerProtocolPolicy` -> `viewer_protocol_policy`; acronyms stay one word, whatever case their
/// first letter was lowered to: `aCMCertificateArn` -> `acm_certificate_arn`, `isIPV6Enabled` ->
/// `is_ipv6_enabled`, `errorCachingMinTTL` -> `error_caching_min_ttl`.
pub(crate) fn snake_case(name: &str) -> String {
    let mut chars: Vec<char> = name.chars().collect();
    if let Some(first) = chars.first_mut() {
        *first = first.to_ascii_uppercase();
    }
    let mut out = String::new();
    for i in 0..chars.len() {
        let c = chars[i];
        let prev = i.checked_sub(1).map(|p| chars[p]);
        let next = chars.get(i + 1).copied();
        let boundary = c.is_ascii_uppercase()
            && i > 0
            && (prev.is_some_and(|p| p.is_ascii_lowercase())
                || (prev.is_some_and(|p| p.is_ascii_uppercase() || p.is_ascii_digit())
                    && next.is_some_and(|n| n.is_ascii_lowercase())));
        if boundary {
            out.push('_');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

fn is_single_block(value: &Value) -> bool {
    matches!(value, Value::Array(items) if items.len() == 1 && items[0].is_object())
}

fn list_items(value: &Value) -> Vec<Value> {
    match value {
        Value::Object(o) => match o.get("items") {
            Some(Value::Array(items)) => items.clone(),
            Some(other) => vec![other.clone()],
            None => Vec::new(),
        },
        Value::Array(items) => items.clone(),
        Value::Null => Vec::new(),
        other => vec![other.clone()],
    }
}

/// Nothing set: null, false, zero, an empty string, list or wrapper, or an object of such.
fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(items) => items.iter().all(is_empty),
        Value::Object(members) => members.values().all(is_empty),
    }
}

fn scalars_equal(a: &Value, b: &Value) -> bool {
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    };
    driftback_terraform::patch::values_equal(a, b) || text(a) == text(b)
}

/// The same values, whatever their order (sets of scalars).
pub(crate) fn same_members(a: &[Value], b: &[Value]) -> bool {
    let key = |v: &[Value]| {
        let mut k: Vec<String> = v.iter().map(Value::to_string).collect();
        k.sort();
        k
    };
    key(a) == key(b)
}

fn describe(path: &[Seg]) -> String {
    AttrPath(path.to_vec()).to_string()
}

#[cfg(test)]
mod tests {
    use super::{changes, snake_case};
    use crate::catalog::WholeRule;
    use serde_json::{Value, json};

    fn rule() -> WholeRule {
        WholeRule {
            from: "distributionConfig".into(),
            renames: [("cacheBehaviors", "ordered_cache_behavior"), ("logging", "logging_config")]
                .map(|(a, b)| (a.into(), b.into()))
                .into(),
            skip: vec!["callerReference".into()],
            presence: [("logging".to_string(), "enabled".to_string())].into(),
        }
    }

    fn state() -> serde_json::Map<String, Value> {
        json!({
            "price_class": "PriceClass_100", "enabled": true, "aliases": ["a.example.com", "b.example.com"],
            "logging_config": [],
            "ordered_cache_behavior": [
                {"path_pattern": "/assets/*", "compress": true, "allowed_methods": ["GET", "HEAD"], "cached_methods": ["GET", "HEAD"]},
                {"path_pattern": "/downloads/*", "compress": false, "allowed_methods": ["GET", "HEAD"], "cached_methods": ["GET", "HEAD"]}
            ]
        })
        .as_object()
        .cloned()
        .unwrap()
    }

    fn document(compress: bool) -> Value {
        json!({"callerReference": "x", "priceClass": "PriceClass_All", "enabled": true,
               "aliases": {"quantity": 2, "items": ["b.example.com", "a.example.com"]},
               "logging": {"enabled": false, "includeCookies": false, "bucket": "", "prefix": ""},
               "cacheBehaviors": {"quantity": 2, "items": [
                 {"pathPattern": "/downloads/*", "compress": compress, "allowedMethods": {"quantity": 2, "items": ["HEAD", "GET"],
                   "cachedMethods": {"quantity": 2, "items": ["HEAD", "GET"]}}},
                 {"pathPattern": "/assets/*", "compress": true, "allowedMethods": {"quantity": 2, "items": ["GET", "HEAD"],
                   "cachedMethods": {"quantity": 2, "items": ["GET", "HEAD"]}}}]}})
    }

    #[test]
    fn only_what_differs_is_written_with_blocks_found_by_their_key() {
        // The code writes the behaviours in the state's order; the document sends them the other way round.
        let code = json!({"ordered_cache_behavior": [{"path_pattern": "/assets/*"}, {"path_pattern": "/downloads/*"}]});
        let got = changes(&rule(), &document(true), &state(), Some(&code)).unwrap();
        assert!(got.added.is_empty());
        let mut got: Vec<(String, Value)> = got.set.into_iter().map(|(p, v)| (p.to_string(), v)).collect();
        got.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            got,
            vec![
                ("ordered_cache_behavior[1].compress".to_string(), json!(true)),
                ("price_class".to_string(), json!("PriceClass_All")),
            ]
        );
    }

    #[test]
    fn a_member_no_attribute_takes_or_a_block_added_refuses_the_document() {
        let mut unknown = document(false);
        unknown["anycastIpListId"] = json!("ip-list-1");
        let err = changes(&rule(), &unknown, &state(), None).unwrap_err();
        assert_eq!(err, vec!["anycast_ip_list_id".to_string()]);
        // Logging turned off where the state has it on: a removal the document only implies.
        let mut logs = state();
        logs.insert("logging_config".into(), json!([{"bucket": "logs.s3.amazonaws.com", "prefix": "cdn/"}]));
        let err = changes(&rule(), &document(false), &logs, None).unwrap_err();
        assert_eq!(err, vec!["logging_config (turned off)".to_string()]);
        // A behaviour gone: a removal is never inferred.
        let mut removed = document(false);
        removed["cacheBehaviors"]["items"].as_array_mut().unwrap().pop();
        let err = changes(&rule(), &removed, &state(), None).unwrap_err();
        assert!(err[0].contains("ordered_cache_behavior (1 blocks, the state has 2)"), "{err:?}");
        // A keyed item added below the top level is refused: only a resource's own blocks gain one.
        let mut nested = state();
        nested["ordered_cache_behavior"][0]["route_rules"] = json!([{"name": "a"}]);
        let mut deep = document(false);
        deep["cacheBehaviors"]["items"][1]["routeRules"] = json!([{"name": "a"}, {"name": "b"}]);
        let err = changes(&rule(), &deep, &nested, None).unwrap_err();
        assert!(err[0].contains("].route_rules (2 blocks, the state has 1)"), "{err:?}");
    }

    #[test]
    fn a_top_level_block_added_beside_the_states_comes_whole_and_says_where_it_was_listed() {
        let mut added = document(true);
        let behaviours = added["cacheBehaviors"]["items"].as_array_mut().unwrap();
        behaviours.push(json!({"pathPattern": "/api/*", "compress": false, "callerReference": "kept: only the document's own is skipped",
                               "allowedMethods": {"quantity": 2, "items": ["GET", "HEAD"]}}));
        let got = changes(&rule(), &added, &state(), None).unwrap();
        assert_eq!(got.set.len(), 2, "the kept blocks are still read member by member: {got:?}");
        assert_eq!(got.added.len(), 1);
        let new = &got.added[0];
        assert_eq!(new.block_type, "ordered_cache_behavior");
        assert!(new.at_tail);
        assert_eq!(
            new.value,
            json!({"path_pattern": "/api/*", "compress": false, "caller_reference": "kept: only the document's own is skipped",
                   "allowed_methods": ["GET", "HEAD"]})
        );
        // Listed first, before the state's blocks: not at the tail.
        let mut first = document(true);
        first["cacheBehaviors"]["items"].as_array_mut().unwrap().insert(0, json!({"pathPattern": "/api/*"}));
        let got = changes(&rule(), &first, &state(), None).unwrap();
        assert!(!got.added[0].at_tail);
    }

    /// A web ACL's rule, as the configuration's own rule blocks read (blocks are lists of objects).
    fn rule_written_as_blocks() -> Value {
        json!({"name": "common", "priority": 1,
               "override_action": [{"none": [{}]}],
               "statement": [{"managed_rule_group_statement": [{"name": "AWSManagedRulesCommonRuleSet", "vendor_name": "AWS"}]}],
               "visibility_config": [{"cloudwatch_metrics_enabled": true, "metric_name": "common", "sampled_requests_enabled": true}]})
    }

    fn new_rule() -> Value {
        json!({"name": "bad-inputs", "priority": 2,
               "override_action": {"none": {}},
               "statement": {"managed_rule_group_statement": {"name": "AWSManagedRulesKnownBadInputsRuleSet", "vendor_name": "AWS"}},
               "visibility_config": {"cloudwatch_metrics_enabled": true, "metric_name": "bad-inputs", "sampled_requests_enabled": true}})
    }

    fn rendered(value: &Value, examples: &[Value]) -> Result<String, String> {
        let schema = driftback_terraform::Schema::newest().unwrap();
        let rule = schema.resource("aws_wafv2_web_acl").unwrap().block("rule").unwrap();
        let spec = super::block_spec(rule.body(), value, "rule", examples).map_err(|e| e.to_string())?;
        Ok(driftback_terraform::render::render_block_body(&spec, "").unwrap())
    }

    #[test]
    fn a_new_block_is_written_by_the_schema_and_an_untyped_member_as_the_code_writes_it() {
        let text = rendered(&new_rule(), &[rule_written_as_blocks()]).unwrap();
        assert_eq!(
            text,
            "name     = \"bad-inputs\"\npriority = 2\n\noverride_action {\n  none {}\n}\n\nstatement {\n  \
             managed_rule_group_statement {\n    name        = \"AWSManagedRulesKnownBadInputsRuleSet\"\n    \
             vendor_name = \"AWS\"\n  }\n}\n\nvisibility_config {\n  cloudwatch_metrics_enabled = true\n  \
             metric_name                = \"bad-inputs\"\n  sampled_requests_enabled   = true\n}\n"
        );
        // The schema data types `statement` as `any`: with no rule in the code to show its syntax,
        // nothing is guessed.
        let err = rendered(&new_rule(), &[]).unwrap_err();
        assert!(err.contains("rule.statement (the configuration writes no such value"), "{err}");
        // Nor is a kind of statement the code never writes.
        let mut rate = new_rule();
        rate["statement"] = json!({"rate_based_statement": {"limit": 100, "aggregate_key_type": "IP"}});
        let err = rendered(&rate, &[rule_written_as_blocks()]).unwrap_err();
        assert!(err.contains("rule.statement.rate_based_statement"), "{err}");
    }

    #[test]
    fn a_new_block_the_schema_does_not_admit_is_refused_with_the_member_named() {
        let examples = [rule_written_as_blocks()];
        let mut unknown = new_rule();
        unknown["shiny"] = json!(true);
        assert_eq!(rendered(&unknown, &examples).unwrap_err(), "rule.shiny (not in the provider's schema)");
        let mut no_priority = new_rule();
        no_priority.as_object_mut().unwrap().remove("priority");
        assert!(rendered(&no_priority, &examples).unwrap_err().contains("rule.priority (required"));
        // A number the document sends as text is written as the number it is.
        let mut text = new_rule();
        text["priority"] = json!("2");
        assert!(rendered(&text, &examples).unwrap().contains("priority = 2\n"));
        let mut wrong = new_rule();
        wrong["priority"] = json!("second");
        assert!(rendered(&wrong, &examples).unwrap_err().starts_with("rule.priority (not a"));
        let mut twice = new_rule();
        twice["visibility_config"] = json!([new_rule()["visibility_config"], new_rule()["visibility_config"]]);
        assert!(rendered(&twice, &examples).unwrap_err().contains("at most 1 allowed"));
    }

    #[test]
    fn member_names_become_attribute_names() {
        for (camel, snake) in [
            ("viewerProtocolPolicy", "viewer_protocol_policy"),
            ("aCMCertificateArn", "acm_certificate_arn"),
            ("sSLSupportMethod", "ssl_support_method"),
            ("isIPV6Enabled", "is_ipv6_enabled"),
            ("errorCachingMinTTL", "error_caching_min_ttl"),
            ("webACLId", "web_acl_id"),
            ("hTTPSPort", "https_port"),
            ("defaultTTL", "default_ttl"),
            ("compress", "compress"),
            ("functionARN", "function_arn"),
        ] {
            assert_eq!(snake_case(camel), snake, "{camel}");
        }
    }
}
