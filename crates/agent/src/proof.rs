//! Proofs: every value an edit writes is the value of the call member that sets that attribute,
//! converted by a known rule and of the type the provider schema gives the attribute; and the
//! change set's footprint, the resources the calls identify (and the types they create), outside
//! which nothing may change. The agent's tools, `validate` and every use of a learned recipe apply
//! the same rules.

use std::fmt;

use serde::Serialize;
use serde_json::Value;

use driftback_events::{ApiEvent, ChangeSet, resource_ids};
use driftback_terraform::schema::{BlockSchema, ValueType, locked_aws_version, required_aws_version};
use driftback_terraform::{Address, AttrPath, Repo, Schema, Seg, State};

/// How a recorded value becomes the configuration's value.
/// Why a value (or a removal) is not proven by the recorded calls, or not an attribute the
/// provider schema lets be set: the reason the agent's tool answers with and validation reports.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Unproven {
    #[error("`{rtype}` is not a resource type of AWS provider {version}")]
    UnknownType { rtype: String, version: String },
    #[error("`{path}` is not an argument of `{rtype}` in the provider schema")]
    NotAnArgument { path: String, rtype: String },
    #[error("`{path}` does not fit the provider schema of `{rtype}`")]
    NotInSchema { path: String, rtype: String },
    /// `expected`: the schema's type with its article (`a number`).
    #[error("`{attr}` is {expected} in the provider schema; {value} is not")]
    WrongType { attr: String, expected: String, value: String },
    #[error("the key {key:?} of `{attr}` does not appear in the recorded calls")]
    KeyNotRecorded { key: String, attr: String },
    /// The member that records the value may not prove it (`why`: it belongs to another resource).
    #[error("the value {value} is the call's `{member}`, which {why}")]
    Inadmissible { value: String, member: String, why: String },
    /// `entry`: `["key"]` for a map entry, else empty.
    #[error("the value {value} is the call's `{member}`, which does not set `{attr}`{entry}")]
    OtherMember { value: String, member: String, attr: String, entry: String },
    #[error("the value {0} does not appear in the recorded calls")]
    NotRecorded(String),
    /// What the members say about the value at `path` of `address`.
    #[error("{address}.{path}: {why}")]
    At { address: String, path: String, why: Box<Unproven> },
    #[error("{address}.{path}: an empty value proves nothing; only values the calls set are written")]
    Empty { address: String, path: String },
    #[error("{address}.{path}: {reference} is not TYPE.NAME.ATTRIBUTE")]
    NotAReference { address: String, path: String, reference: String },
    #[error("{address}.{path}: the state has no value for {reference}, so it cannot be checked")]
    NoStateValue { address: String, path: String, reference: String },
    #[error("{why} (the value of {reference})")]
    Referenced { why: Box<Unproven>, reference: String },
    /// `named`: `, and no removing call names the key "k"` for a map entry, else empty.
    #[error(
        "{address}.{path}: no recorded call removes it (no member that sets it was sent empty{named}); only what the \
         calls remove is removed"
    )]
    NotRemoved { address: String, path: String, named: String },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Rule {
    /// The same JSON value.
    Same,
    /// A numeric string as a number (`"300"` -> `300`).
    Number,
    /// `"true"`/`"false"` as a bool.
    Bool,
    /// `Enabled` -> true, `Disabled`/`Suspended` -> false.
    Enabled,
    /// A number or bool as its text.
    String,
    /// A DNS name without its trailing dot (`www.example.com.` -> `www.example.com`).
    WithoutTrailingDot,
    /// The attribute is removed: the member that sets it was sent empty, or the call removes the
    /// map entry it names.
    Removed,
}

impl Rule {
    fn as_str(self) -> &'static str {
        match self {
            Rule::Same => "as recorded",
            Rule::Number => "as a number",
            Rule::Bool => "as a bool",
            Rule::Enabled => "Enabled/Disabled as a bool",
            Rule::String => "as text",
            Rule::WithoutTrailingDot => "without the trailing dot",
            Rule::Removed => "which removes it",
        }
    }
}

/// One recorded member a value is taken from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Member {
    /// `route53:ChangeResourceRecordSets`.
    pub call: String,
    pub event_id: String,
    /// The member's path in the call as recipes read it: request paths bare
    /// (`changeBatch.changes[0].resourceRecordSet.tTL`), response paths under `response.`.
    pub path: String,
    /// The recorded value.
    pub recorded: Value,
    pub rule: Rule,
}

/// Why an edit is right: the attribute, the value written, and the members it comes from (one
/// per scalar; a list or object has one per leaf).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Proof {
    pub address: String,
    pub path: String,
    /// The value written (a reference's text for a reference).
    pub value: Value,
    pub members: Vec<Member>,
}

impl fmt::Display for Proof {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let value = crate::context::cut(&self.value.to_string(), 120);
        let from: Vec<String> = self
            .members
            .iter()
            .map(|m| format!("{} {} = {} ({})", m.call, m.path, m.recorded, m.rule.as_str()))
            .collect();
        write!(f, "{}.{} = {value} <- {}", self.address, self.path, from.join(", "))
    }
}

/// Member names that only wrap the value they hold (`enableDnsHostnames.value`, `tagSet.items`).
const WRAPPERS: &[&str] = &["value", "values", "items", "item", "member", "members"];
/// Separators of composite identifiers (`ZONE_name_TYPE`, `cluster/service`).
pub(crate) const ID_SEPARATORS: &[char] = &['_', ':', '/', ',', '|'];

/// Whether `id` is a composite of at least two of `values` joined by separators
/// (`ZONE__dmarc.example.com_TXT` from `ZONE`, `_dmarc.example.com.` and `TXT`): each value whole,
/// between separators or the ends, a DNS name's trailing dot ignored.
pub(crate) fn composite_of(id: &str, values: &[&str]) -> bool {
    let bytes = id.as_bytes();
    let boundary = |i: usize| i == 0 || i == bytes.len() || ID_SEPARATORS.contains(&(bytes[i - 1] as char));
    let mut candidates: Vec<&str> =
        values.iter().map(|v| v.trim_end_matches('.')).filter(|v| !v.is_empty() && id.contains(*v)).collect();
    candidates.sort_unstable();
    candidates.dedup();
    // The most values that can spell `id` up to each position, if any can.
    let mut most: Vec<Option<usize>> = vec![None; bytes.len() + 1];
    most[0] = Some(0);
    for i in 0..bytes.len() {
        let Some(here) = most[i] else { continue };
        if ID_SEPARATORS.contains(&(bytes[i] as char)) {
            most[i + 1] = most[i + 1].max(Some(here));
        }
        if !boundary(i) {
            continue;
        }
        for v in &candidates {
            let end = i + v.len();
            if id[i..].starts_with(v) && (end == bytes.len() || ID_SEPARATORS.contains(&(bytes[end] as char))) {
                most[end] = most[end].max(Some(here + 1));
            }
        }
    }
    most[bytes.len()].is_some_and(|n| n >= 2)
}
/// Verbs of calls that create something.
const CREATING: &[&str] = &[
    "Create",
    "Put",
    "Run",
    "Allocate",
    "Register",
    "Import",
    "Copy",
    "Change",
    "Add",
    "Associate",
    "Attach",
    "Request",
];
/// Verbs of calls that delete something.
const DELETING: &[&str] = &["Delete", "Terminate", "Remove", "Deregister", "Release", "Disassociate", "Detach"];
/// Verbs of calls that remove entries (tags, settings) from what they name.
const REMOVING: &[&str] =
    &["Delete", "Terminate", "Remove", "Deregister", "Release", "Disassociate", "Detach", "Untag", "Unset"];

/// One scalar of a recorded call.
#[derive(Debug, Clone)]
struct Leaf {
    event: usize,
    /// As recipes read it (`response.` prefix for response members).
    path: String,
    /// The named segments of the path, outermost first (indexes left out).
    names: Vec<String>,
    value: Value,
    /// String values of the other scalars of the object that holds it (a tag's key beside its value).
    siblings: Vec<String>,
    /// The managed instances the innermost list item around the member identifies (the record
    /// a `changes[1]` item names): the member may prove values of those only. Empty when no item
    /// around it identifies one (a top-level member, a tag item).
    owners: Vec<Address>,
}

/// The recorded calls, walked once: every scalar with its path.
pub(crate) struct Evidence<'a> {
    change_set: &'a ChangeSet,
    leaves: Vec<Leaf>,
}

impl<'a> Evidence<'a> {
    /// The calls of `change_set`, each member tied to the instances of `state` its list item names.
    pub fn new(change_set: &'a ChangeSet, state: &State) -> Evidence<'a> {
        let mut leaves = Vec::new();
        for (i, event) in change_set.events.iter().enumerate() {
            let start = leaves.len();
            walk(&event.request, i, String::new(), Vec::new(), &[], &mut leaves);
            walk(&event.response, i, "response".into(), Vec::new(), &[], &mut leaves);
            assign_owners(&mut leaves[start..], state);
        }
        Evidence { change_set, leaves }
    }

    fn event(&self, leaf: &Leaf) -> &ApiEvent {
        &self.change_set.events[leaf.event]
    }

    fn member(&self, leaf: &Leaf, rule: Rule) -> Member {
        let event = self.event(leaf);
        Member {
            call: format!("{}:{}", event.service(), event.raw_name),
            event_id: event.id.clone(),
            path: leaf.path.clone(),
            recorded: leaf.value.clone(),
            rule,
        }
    }

    /// Whether any recorded value or object key spells `text` exactly.
    pub fn spells_text(&self, text: &str) -> bool {
        self.leaves.iter().any(|l| l.value.as_str() == Some(text) || l.names.last().is_some_and(|n| n == text))
    }

    /// The members `value` of the attribute named `attr` (a map entry's `key` when given) is
    /// taken from, among those `admit` lets prove values of the edited resource, or why there are
    /// none.
    fn prove(
        &self,
        admit: &Admit<'_>,
        attr: &str,
        key: Option<&str>,
        value: &Value,
        vtype: &ValueType,
    ) -> Result<Vec<Member>, Unproven> {
        if !fits(vtype, value) {
            return Err(Unproven::WrongType { attr: attr.to_string(), expected: article(vtype), value: short(value) });
        }
        match value {
            Value::Null => Ok(Vec::new()),
            Value::Array(items) => {
                let element = match vtype {
                    ValueType::List(e) | ValueType::Set(e) => e.as_ref().clone(),
                    _ => ValueType::Any,
                };
                let mut out = Vec::new();
                for item in items {
                    out.extend(self.prove(admit, attr, key, item, &element)?);
                }
                Ok(out)
            }
            Value::Object(map) => {
                let element = match vtype {
                    ValueType::Map(e) => Some(e.as_ref().clone()),
                    _ => None,
                };
                let mut out = Vec::new();
                for (k, v) in map {
                    match &element {
                        // A map's keys are data: each must be recorded, each value is its entry.
                        Some(e) => {
                            if !self.spells_text(k) {
                                return Err(Unproven::KeyNotRecorded { key: k.clone(), attr: attr.to_string() });
                            }
                            out.extend(self.prove(admit, attr, Some(k), v, e)?);
                        }
                        None => out.extend(self.prove(admit, k, None, v, &ValueType::Any)?),
                    }
                }
                Ok(out)
            }
            scalar => {
                let mut elsewhere = None;
                let mut other = None;
                for leaf in &self.leaves {
                    let Some(rule) = conversion(&leaf.value, scalar) else { continue };
                    if sets(attr, key, leaf) {
                        match admit.refusal(leaf) {
                            None => return Ok(vec![self.member(leaf, rule)]),
                            Some(why) => {
                                other.get_or_insert((leaf, why));
                            }
                        }
                    }
                    elsewhere.get_or_insert(leaf);
                }
                Err(match (other, elsewhere) {
                    (Some((leaf, why)), _) => {
                        Unproven::Inadmissible { value: short(scalar), member: leaf.path.clone(), why }
                    }
                    (None, Some(leaf)) => Unproven::OtherMember {
                        value: short(scalar),
                        member: leaf.path.clone(),
                        attr: attr.to_string(),
                        entry: key.map(|k| format!("[{k:?}]")).unwrap_or_default(),
                    },
                    (None, None) => Unproven::NotRecorded(short(scalar)),
                })
            }
        }
    }
}

fn walk(value: &Value, event: usize, path: String, names: Vec<String>, siblings: &[String], out: &mut Vec<Leaf>) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            let strings: Vec<String> = map
                .iter()
                .filter(|(k, _)| !driftback_events::is_transport_key(k))
                .filter_map(|(_, v)| v.as_str().map(str::to_string))
                .collect();
            for (k, v) in map {
                if driftback_events::is_transport_key(k) {
                    continue;
                }
                let mut names = names.clone();
                names.push(k.clone());
                let child = if path.is_empty() { k.clone() } else { format!("{path}.{k}") };
                walk(v, event, child, names, &strings, out);
            }
        }
        Value::Array(items) if !items.is_empty() => {
            for (i, v) in items.iter().enumerate() {
                walk(v, event, format!("{path}[{i}]"), names.clone(), &[], out);
            }
        }
        // Scalars, and members sent empty (null, [], {}): those can only prove a removal.
        leaf => {
            if names.is_empty() {
                return;
            }
            let own = leaf.as_str();
            let siblings = siblings.iter().filter(|s| Some(s.as_str()) != own).cloned().collect();
            out.push(Leaf { event, path, names, value: leaf.clone(), siblings, owners: Vec::new() })
        }
    }
}

/// Ties each member of one call to the instances its innermost identifying list item names: an
/// item identifies an instance by the instance's id or ARN among the item's values, or by every
/// part of a composite id (`ZONE_name_TYPE`) among the item's values and the call's values outside
/// any list, at least one of them the item's.
fn assign_owners(leaves: &mut [Leaf], state: &State) {
    let text = |l: &Leaf| l.value.as_str().map(|s| s.trim_end_matches('.').to_string());
    let context: Vec<String> = leaves.iter().filter(|l| !l.path.contains('[')).filter_map(text).collect();
    let mut by_item: std::collections::HashMap<String, Vec<Address>> = std::collections::HashMap::new();
    for i in 0..leaves.len() {
        let mut owners = Vec::new();
        for item in list_items(&leaves[i].path) {
            let found = by_item.entry(item.to_string()).or_insert_with(|| {
                let inside: Vec<String> = leaves.iter().filter(|l| within(&l.path, item)).filter_map(text).collect();
                identified_by(&inside, &context, state)
            });
            if !found.is_empty() {
                owners = found.clone();
                break;
            }
        }
        leaves[i].owners = owners;
    }
}

/// The list items around a member's path, innermost first (`a.b[1].c[0].d` -> `a.b[1].c[0]`,
/// `a.b[1]`).
fn list_items(path: &str) -> Vec<&str> {
    path.match_indices(']').map(|(i, _)| &path[..=i]).rev().collect()
}

fn within(path: &str, item: &str) -> bool {
    path.strip_prefix(item).is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
}

fn identified_by(inside: &[String], context: &[String], state: &State) -> Vec<Address> {
    let mut out: Vec<Address> = Vec::new();
    for s in inside {
        for instance in state.find(s, &[], &[]) {
            if !out.contains(&instance.address) {
                out.push(instance.address.clone());
            }
        }
    }
    let all: Vec<&str> = inside.iter().chain(context).map(String::as_str).collect();
    let outside: Vec<&str> = context.iter().map(String::as_str).collect();
    for instance in state.instances.iter().filter(|i| !i.address.data) {
        let Some(id) = instance.attr_str("id") else { continue };
        if composite_of(id, &all) && !composite_of(id, &outside) && !out.contains(&instance.address) {
            out.push(instance.address.clone());
        }
    }
    out
}

/// Which recorded members may prove a value of one attribute of one resource: those of the list
/// item that names the resource (or of no identifying item), and none inside the call's settings
/// for another of the resource's nested blocks (`aliasTarget.hostedZoneId` never proves a
/// record's own `zone_id`).
pub(crate) struct Admit<'s> {
    address: &'s Address,
    path: &'s AttrPath,
    /// The resource type's nested blocks and object arguments the attribute is not inside.
    foreign: Vec<String>,
}

impl<'s> Admit<'s> {
    pub(crate) fn new(schema: &Schema, address: &'s Address, path: &'s AttrPath) -> Admit<'s> {
        let own = match path.0.first() {
            Some(Seg::Name(n)) => n.as_str(),
            _ => "",
        };
        let foreign = schema
            .resource(&address.rtype)
            .map(|body| {
                let blocks = body.blocks().map(|(n, _)| n);
                let objects = body.arguments().filter(|(_, a)| a.fields().is_some()).map(|(n, _)| n);
                blocks.chain(objects).filter(|n| *n != own).map(squash).filter(|n| n.len() >= 4).collect()
            })
            .unwrap_or_default();
        Admit { address, path, foreign }
    }

    /// Why `leaf` may not prove a value of this attribute, if it may not.
    fn refusal(&self, leaf: &Leaf) -> Option<String> {
        let mine = |o: &Address| o == self.address || (self.address.key.is_none() && o.without_key() == *self.address);
        if !leaf.owners.is_empty() && !leaf.owners.iter().any(mine) {
            let owners: Vec<String> = leaf.owners.iter().map(|o| o.to_string()).collect();
            return Some(format!("belongs to the item for {}, not {}", owners.join(", "), self.address));
        }
        let enclosing = &leaf.names[..leaf.names.len().saturating_sub(1)];
        for name in enclosing {
            let name = squash(name);
            if let Some(block) = self.foreign.iter().find(|b| name.starts_with(b.as_str())) {
                return Some(format!(
                    "sits in the call's settings for `{block}`, another block of {} than `{}`",
                    self.address.rtype, self.path
                ));
            }
        }
        None
    }
}

/// Whether the recorded member `leaf` is the one that sets attribute `attr` (entry `key` of it).
fn sets(attr: &str, key: Option<&str>, leaf: &Leaf) -> bool {
    let mut names: &[String] = &leaf.names;
    if let Some(key) = key {
        // Either the member is the entry itself (`attributes.VisibilityTimeout`), or it sits beside
        // the key (`tagSet.items[0].value` beside `key = "Team"`).
        match names.split_last() {
            Some((last, rest)) if last == key => names = rest,
            _ if leaf.siblings.iter().any(|s| s == key) => {}
            _ => return false,
        }
    }
    let Some((last, rest)) = names.split_last() else { return false };
    if same_name(attr, last) {
        return true;
    }
    // Wrappers hold the value of the member around them.
    if WRAPPERS.contains(&last.to_ascii_lowercase().as_str()) {
        if let Some(outer) = rest.iter().rev().find(|n| !WRAPPERS.contains(&n.to_ascii_lowercase().as_str())) {
            return same_name(attr, outer);
        }
    }
    false
}

/// Names equal once case and separators are ignored (`map_public_ip_on_launch` and
/// `mapPublicIpOnLaunch`, `ttl` and `tTL`), or one the other's prefix or suffix of at least three
/// letters (`records` and `resourceRecords`, `tags` and `tagSet`).
fn same_name(a: &str, b: &str) -> bool {
    let (a, b) = (squash(a), squash(b));
    if a.is_empty() || b.is_empty() {
        return false;
    }
    let (short, long) = if a.len() <= b.len() { (&a, &b) } else { (&b, &a) };
    short == long || (short.len() >= 3 && (long.starts_with(short.as_str()) || long.ends_with(short.as_str())))
}

pub(crate) fn squash(s: &str) -> String {
    s.chars().filter(|c| c.is_ascii_alphanumeric()).collect::<String>().to_ascii_lowercase()
}

/// The rule that turns `recorded` into `want`, if one does.
pub(crate) fn conversion(recorded: &Value, want: &Value) -> Option<Rule> {
    match (recorded, want) {
        (Value::String(r), Value::String(w)) if r == w => Some(Rule::Same),
        (Value::String(r), Value::String(w))
            if !w.is_empty() && r.strip_suffix('.') == Some(w.as_str()) && r.contains('.') =>
        {
            Some(Rule::WithoutTrailingDot)
        }
        (Value::Bool(r), Value::Bool(w)) if r == w => Some(Rule::Same),
        (Value::Number(r), Value::Number(w)) if r.as_f64().is_some() && r.as_f64() == w.as_f64() => Some(Rule::Same),
        (Value::String(r), Value::Number(w)) => (r.trim().parse::<f64>().ok().is_some()
            && r.trim().parse::<f64>().ok() == w.as_f64())
        .then_some(Rule::Number),
        (Value::String(r), Value::Bool(w)) => match r.to_ascii_lowercase().as_str() {
            "true" | "false" => (r.eq_ignore_ascii_case(&w.to_string())).then_some(Rule::Bool),
            "enabled" => w.then_some(Rule::Enabled),
            "disabled" | "suspended" => (!w).then_some(Rule::Enabled),
            _ => None,
        },
        (Value::Number(r), Value::String(w)) => (&r.to_string() == w).then_some(Rule::String),
        (Value::Bool(r), Value::String(w)) => (&r.to_string() == w).then_some(Rule::String),
        _ => None,
    }
}

/// Whether `value`, as JSON, is of the schema type exactly (no conversion by Terraform: the proof's
/// rule is the only conversion).
fn fits(t: &ValueType, value: &Value) -> bool {
    match (t, value) {
        (_, Value::Null) | (ValueType::Any, _) => true,
        (ValueType::String, Value::String(_)) => true,
        (ValueType::Number, Value::Number(_)) => true,
        (ValueType::Bool, Value::Bool(_)) => true,
        (ValueType::List(e) | ValueType::Set(e), Value::Array(items)) => items.iter().all(|i| fits(e, i)),
        (ValueType::Map(e), Value::Object(m)) => m.values().all(|i| fits(e, i)),
        (ValueType::Object, Value::Object(_)) => true,
        _ => false,
    }
}

fn article(t: &ValueType) -> String {
    match t {
        ValueType::Any | ValueType::Object => format!("an {t}"),
        _ => format!("a {t}"),
    }
}

fn short(value: &Value) -> String {
    crate::context::cut(&value.to_string(), 80)
}

/// What the schema says about the attribute at `path` of `rtype`: its type (blocks and their
/// elements as objects), or why the path is not an attribute that can be set.
pub(crate) fn attribute_type(schema: &Schema, rtype: &str, path: &AttrPath) -> Result<ValueType, Unproven> {
    let resource = schema.resource(rtype).ok_or_else(|| Unproven::UnknownType {
        rtype: rtype.to_string(),
        version: schema.provider_version().to_string(),
    })?;
    let mut body: &BlockSchema = resource;
    let mut current: Option<ValueType> = None;
    for seg in &path.0 {
        match (seg, &current) {
            (Seg::Name(n), None) => {
                if let Some(block) = body.block(n) {
                    body = block.body();
                    continue;
                }
                let Some(attr) = body.argument(n) else {
                    return Err(Unproven::NotAnArgument { path: path.to_string(), rtype: rtype.to_string() });
                };
                match attr.fields() {
                    Some(fields) if !matches!(attr.value_type(), ValueType::Object) => {
                        // A list or set of objects: the next name is a field after an index.
                        current = Some(attr.value_type().clone());
                        body = fields;
                    }
                    Some(fields) => body = fields,
                    None => current = Some(attr.value_type().clone()),
                }
            }
            (Seg::Index(_), Some(ValueType::List(e) | ValueType::Set(e))) => {
                current = Some(e.as_ref().clone());
                if matches!(current, Some(ValueType::Object)) {
                    current = None;
                }
            }
            (Seg::Index(_), None) => {}
            (Seg::Key(_), Some(ValueType::Map(e))) => current = Some(e.as_ref().clone()),
            (Seg::Key(_) | Seg::Name(_), Some(ValueType::Any)) => {}
            _ => return Err(Unproven::NotInSchema { path: path.to_string(), rtype: rtype.to_string() }),
        }
    }
    Ok(current.unwrap_or(ValueType::Object))
}

/// The bundled provider schema that fits the repository's `required_providers` constraint (and the
/// lock file, when the repository has one among its files), else the newest.
pub(crate) fn schema_for(repo: &Repo) -> Option<&'static Schema> {
    let constraint = required_aws_version(repo.files().filter_map(|(path, _)| repo.body(path)));
    let locked = repo
        .files()
        .find(|(p, _)| p.file_name().is_some_and(|n| n == ".terraform.lock.hcl"))
        .and_then(|(_, text)| locked_aws_version(text));
    Schema::select(constraint.as_deref(), locked.as_deref()).map(|(s, _)| s).or_else(|_| Schema::newest()).ok()
}

/// The proof of `value` at `path` of `address`, or why there is none.
pub(crate) fn prove_value(
    evidence: &Evidence<'_>,
    schema: &Schema,
    address: &Address,
    path: &AttrPath,
    value: &Value,
) -> Result<Proof, Unproven> {
    let vtype = attribute_type(schema, &address.rtype, path)?;
    let (attr, key) = attribute_name(path);
    let admit = Admit::new(schema, address, path);
    let members = evidence.prove(&admit, &attr, key.as_deref(), value, &vtype).map_err(|why| Unproven::At {
        address: address.to_string(),
        path: path.to_string(),
        why: Box::new(why),
    })?;
    if members.is_empty() && !value.is_null() {
        return Err(Unproven::Empty { address: address.to_string(), path: path.to_string() });
    }
    Ok(Proof { address: address.to_string(), path: path.to_string(), value: value.clone(), members })
}

/// The proof of a reference: the referenced resource's value in the state, proven like a literal.
pub(crate) fn prove_reference(
    evidence: &Evidence<'_>,
    schema: &Schema,
    state: &State,
    address: &Address,
    path: &AttrPath,
    reference: &str,
) -> Result<Proof, Unproven> {
    let mut parts = reference.split('.');
    let (Some(rtype), Some(name), Some(attr)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(Unproven::NotAReference {
            address: address.to_string(),
            path: path.to_string(),
            reference: reference.to_string(),
        });
    };
    let target = Address { module: address.module.clone(), key: None, ..Address::resource(rtype, name) };
    let resolved =
        state.get(&target).and_then(|i| i.attributes.get(attr)).filter(|v| !v.is_null()).ok_or_else(|| {
            Unproven::NoStateValue {
                address: address.to_string(),
                path: path.to_string(),
                reference: reference.to_string(),
            }
        })?;
    let mut proof = prove_value(evidence, schema, address, path, resolved)
        .map_err(|why| Unproven::Referenced { why: Box::new(why), reference: reference.to_string() })?;
    proof.value = Value::String(reference.to_string());
    Ok(proof)
}

/// The proof that removing `path` from `address` is right: a member that sets the attribute sent
/// empty (`"RedrivePolicy": ""`), or, for a map entry, a removing call (`UntagResource`,
/// `DeleteTags`) that names its key. Anything else is refused: the calls never said so.
pub(crate) fn prove_removal(
    evidence: &Evidence<'_>,
    schema: &Schema,
    address: &Address,
    path: &AttrPath,
) -> Result<Proof, Unproven> {
    attribute_type(schema, &address.rtype, path)?;
    let (attr, key) = attribute_name(path);
    let admit = Admit::new(schema, address, path);
    let proof = |leaf: &Leaf| Proof {
        address: address.to_string(),
        path: path.to_string(),
        value: Value::Null,
        members: vec![evidence.member(leaf, Rule::Removed)],
    };
    let empty = |v: &Value| match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    };
    if let Some(leaf) =
        evidence.leaves.iter().find(|l| empty(&l.value) && sets(&attr, key.as_deref(), l) && admit.refusal(l).is_none())
    {
        return Ok(proof(leaf));
    }
    if let Some(key) = &key {
        let removing = |l: &Leaf| REMOVING.iter().any(|v| evidence.event(l).name.starts_with(v));
        if let Some(leaf) = evidence
            .leaves
            .iter()
            .find(|l| l.value.as_str() == Some(key.as_str()) && removing(l) && admit.refusal(l).is_none())
        {
            return Ok(proof(leaf));
        }
    }
    Err(Unproven::NotRemoved {
        address: address.to_string(),
        path: path.to_string(),
        named: key.as_ref().map(|k| format!(", and no removing call names the key {k:?}")).unwrap_or_default(),
    })
}

/// The attribute's own name (the last name in the path) and, for a map entry, its key.
fn attribute_name(path: &AttrPath) -> (String, Option<String>) {
    let key = match path.0.last() {
        Some(Seg::Key(k)) => Some(k.clone()),
        _ => None,
    };
    let name = path
        .0
        .iter()
        .rev()
        .find_map(|s| match s {
            Seg::Name(n) => Some(n.clone()),
            _ => None,
        })
        .unwrap_or_default();
    (name, key)
}

/// What the calls let change: the resources they identify, and the resource types they create.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Footprint {
    /// Managed resources the calls identify, each with the call that identifies it.
    pub identified: Vec<(Address, String)>,
    /// Resources a deleting call identifies: the only ones that may be removed.
    pub deleted: Vec<Address>,
    /// Resource types a creating call creates (by the call's name and the provider schema).
    pub creatable: Vec<String>,
}

impl Footprint {
    /// The resources and types of `change_set`'s calls, as `state` and the provider schema know them.
    pub fn of(change_set: &ChangeSet, state: &State, schema: Option<&Schema>) -> Footprint {
        let mut out = Footprint::default();
        for event in &change_set.events {
            let mut leaves: Vec<String> = resource_ids(event);
            leaves.extend(change_set.resource_id.iter().cloned());
            collect_strings(&event.request, &mut leaves);
            collect_strings(&event.response, &mut leaves);
            leaves.sort();
            leaves.dedup();
            let normal: Vec<&str> = leaves.iter().map(|s| s.trim_end_matches('.')).collect();
            let call = format!("{}:{}", event.service(), event.raw_name);
            let found: Vec<Address> =
                leaves.iter().flat_map(|l| state.find(l, &[], &[])).map(|i| i.address.clone()).collect();
            // What a deleting call deletes: the resource its identifier names, of the type its
            // name says (`DeleteTags` on an instance deletes no instance).
            let mut targets: Vec<String> = resource_ids(event);
            targets.extend(change_set.resource_id.iter().cloned());
            let deletable = schema.map(|s| deleted_types(event, s)).unwrap_or_default();
            let deleted: Vec<Address> = targets
                .iter()
                .flat_map(|t| state.find(t, &[], &[]))
                .filter(|i| deletable.contains(&i.address.rtype))
                .map(|i| i.address.clone())
                .collect();
            for instance in state.instances.iter().filter(|i| !i.address.data) {
                let by_id = found.contains(&instance.address);
                let by_parts = instance.attr_str("id").is_some_and(|id| composite_of(id, &normal));
                if by_id || by_parts {
                    if !out.identified.iter().any(|(a, _)| *a == instance.address) {
                        out.identified.push((instance.address.clone(), call.clone()));
                    }
                }
            }
            for address in deleted {
                if !out.deleted.contains(&address) {
                    out.deleted.push(address);
                }
            }
            if let Some(schema) = schema {
                for t in creatable_types(event, schema) {
                    if !out.creatable.contains(&t) {
                        out.creatable.push(t);
                    }
                }
            }
        }
        // A change set whose identifier the state knows only by another attribute (a name).
        if let Some(id) = &change_set.resource_id {
            let known = out.identified.iter().any(|(a, _)| {
                state.get(a).is_some_and(|i| i.attributes.values().any(|v| v.as_str() == Some(id.as_str())))
            });
            if !known {
                for instance in state.instances.iter().filter(|i| !i.address.data) {
                    if instance.attributes.iter().any(|(k, v)| k != "tags" && v.as_str() == Some(id.as_str()))
                        && !out.identified.iter().any(|(a, _)| *a == instance.address)
                    {
                        out.identified.push((instance.address.clone(), format!("the change set's resource {id}")));
                    }
                }
            }
        }
        out
    }

    /// Whether the calls identify the resource at `address`: that instance, or for an address
    /// without a key (a resource block), any instance of it.
    pub fn identifies(&self, address: &Address) -> bool {
        self.identified.iter().any(|(a, _)| *a == *address || (address.key.is_none() && a.without_key() == *address))
    }

    /// Whether the calls identify exactly this instance (another instance of a `for_each`
    /// resource is not identified by its sibling's call).
    pub fn identifies_instance(&self, address: &Address) -> bool {
        self.identified.iter().any(|(a, _)| a == address)
    }

    pub fn deletes(&self, address: &Address) -> bool {
        self.deleted.iter().any(|a| *a == *address || (address.key.is_none() && a.without_key() == *address))
    }

    pub fn creates(&self, rtype: &str) -> bool {
        self.creatable.iter().any(|t| t == rtype)
    }

    /// The footprint in one sentence, for refusals.
    pub fn describe(&self) -> String {
        let ids: Vec<String> = self.identified.iter().map(|(a, _)| a.to_string()).collect();
        let mut out = if ids.is_empty() {
            "the calls identify no managed resource".to_string()
        } else {
            format!("the calls identify {}", ids.join(", "))
        };
        if !self.creatable.is_empty() {
            out.push_str(&format!(" and create {}", self.creatable.join(", ")));
        }
        out
    }
}

fn collect_strings(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                if !driftback_events::is_transport_key(k) {
                    collect_strings(v, out);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_strings(v, out)),
        Value::String(s) if !s.is_empty() => out.push(s.clone()),
        _ => {}
    }
}

/// The resource types a call creates: for a call named with a creating verb, the types whose name
/// (after `aws_` and the service's own prefix) is the rest of the call's name (`iam:CreateUser` ->
/// `aws_iam_user`, `ec2:RunInstances` -> `aws_instance`, `iam:PutUserPolicy` ->
/// `aws_iam_user_policy` and not `aws_iam_user`); only when no type is named exactly, the type
/// under the service's prefix whose name is the longest part of it
/// (`route53:ChangeResourceRecordSets` -> `aws_route53_record`).
pub fn creatable_types(event: &ApiEvent, schema: &Schema) -> Vec<String> {
    match CREATING.iter().find_map(|v| event.name.strip_prefix(v)) {
        Some(noun) => types_named(event, noun, schema, true),
        None => Vec::new(),
    }
}

/// The resource types a deleting call deletes: those its name names exactly (`DeleteBucket` ->
/// `aws_s3_bucket`, `TerminateInstances` -> `aws_instance`; `DeleteBucketPolicy` only the policy).
pub fn deleted_types(event: &ApiEvent, schema: &Schema) -> Vec<String> {
    match DELETING.iter().find_map(|v| event.name.strip_prefix(v)) {
        Some(noun) => types_named(event, noun, schema, false),
        None => Vec::new(),
    }
}

fn types_named(event: &ApiEvent, noun: &str, schema: &Schema, or_part: bool) -> Vec<String> {
    let noun = squash(noun);
    let singular = noun.strip_suffix('s').unwrap_or(&noun).to_string();
    let service = squash(event.service());
    let prefix = format!("aws_{}_", event.service().replace('-', "_"));
    let exact: Vec<String> = schema
        .resource_types()
        .filter(|t| {
            let rest = squash(t.strip_prefix(&prefix).or_else(|| t.strip_prefix("aws_")).unwrap_or(t));
            rest == noun
                || rest == singular
                || rest == format!("{service}{singular}")
                || rest == format!("{service}{noun}")
        })
        .map(str::to_string)
        .collect();
    if !exact.is_empty() || !or_part {
        return exact;
    }
    let parts: Vec<(usize, &str)> = schema
        .resource_types()
        .filter_map(|t| {
            let rest = squash(t.strip_prefix(&prefix)?);
            (rest.len() >= 3 && noun.contains(&rest)).then_some((rest.len(), t))
        })
        .collect();
    let longest = parts.iter().map(|(n, _)| *n).max().unwrap_or(0);
    parts.into_iter().filter(|(n, _)| *n == longest).map(|(_, t)| t.to_string()).collect()
}

/// Whether `import_id` is the identifier a call that creates `rtype` recorded: one of its values,
/// or a composite of them (`ZONE_name_TYPE`).
pub(crate) fn import_id_from_calls(change_set: &ChangeSet, schema: &Schema, rtype: &str, import_id: &str) -> bool {
    change_set.events.iter().filter(|e| creatable_types(e, schema).iter().any(|t| t == rtype)).any(|event| {
        let mut leaves = Vec::new();
        collect_strings(&event.request, &mut leaves);
        collect_strings(&event.response, &mut leaves);
        let values: Vec<&str> = leaves.iter().map(String::as_str).collect();
        leaves.iter().any(|l| l == import_id) || composite_of(import_id, &values)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_composite_id_is_spelt_by_whole_values_between_separators() {
        let zone = "Z0123456789ABCDEFGHIJ";
        assert!(composite_of(&format!("{zone}_www.example.com_CNAME"), &[zone, "www.example.com.", "CNAME"]));
        assert!(composite_of(&format!("{zone}__dmarc.example.com_TXT"), &[zone, "_dmarc.example.com.", "TXT"]));
        assert!(composite_of(
            &format!("{zone}_www.example.com_CNAME_blue"),
            &[zone, "www.example.com", "CNAME", "blue"]
        ));
        // A value inside a part is not the part; one value is not a composite.
        assert!(!composite_of(&format!("{zone}_api-lb.example.com_CNAME"), &[zone, "api", "CNAME"]));
        assert!(!composite_of(&format!("{zone}_www.example.com_CNAME"), &[zone, "www.example.com"]));
        assert!(!composite_of("sg-0abc", &["sg-0abc"]));
        assert!(composite_of("main/web", &["main", "web"]));
    }

    #[test]
    fn conversions_are_the_known_rules_and_nothing_else() {
        assert_eq!(conversion(&json!(60), &json!(60)), Some(Rule::Same));
        assert_eq!(conversion(&json!("60"), &json!(60)), Some(Rule::Number));
        assert_eq!(conversion(&json!("true"), &json!(true)), Some(Rule::Bool));
        assert_eq!(conversion(&json!("Enabled"), &json!(true)), Some(Rule::Enabled));
        assert_eq!(conversion(&json!("Suspended"), &json!(false)), Some(Rule::Enabled));
        assert_eq!(conversion(&json!(60), &json!("60")), Some(Rule::String));
        assert_eq!(conversion(&json!("Enabled"), &json!(false)), None);
        assert_eq!(conversion(&json!("CNAME"), &json!(60)), None);
        assert_eq!(conversion(&json!("60"), &json!("600")), None);
        assert_eq!(conversion(&json!("www.example.com."), &json!("www.example.com")), Some(Rule::WithoutTrailingDot));
        assert_eq!(conversion(&json!("www.example.com"), &json!("www.example.com.")), None);
        assert_eq!(conversion(&json!(true), &json!(1)), None);
    }

    #[test]
    fn a_member_sets_the_attribute_it_is_named_after() {
        assert!(same_name("ttl", "tTL"));
        assert!(same_name("map_public_ip_on_launch", "mapPublicIpOnLaunch"));
        assert!(same_name("records", "resourceRecords"));
        assert!(same_name("tags", "tagSet"));
        assert!(!same_name("ttl", "type"));
        assert!(!same_name("name", "type"));
        assert!(!same_name("id", "vpcId"), "two letters are too few to match a part");
        let leaf = |names: &[&str], siblings: &[&str]| Leaf {
            event: 0,
            path: names.join("."),
            names: names.iter().map(|n| n.to_string()).collect(),
            value: json!("x"),
            siblings: siblings.iter().map(|n| n.to_string()).collect(),
            owners: Vec::new(),
        };
        assert!(sets("enable_dns_hostnames", None, &leaf(&["enableDnsHostnames", "value"], &[])));
        assert!(!sets("enable_dns_support", None, &leaf(&["enableDnsHostnames", "value"], &[])));
        assert!(sets("tags", Some("Team"), &leaf(&["tagSet", "items", "value"], &["Team"])));
        assert!(!sets("tags", Some("Team"), &leaf(&["tagSet", "items", "value"], &["Owner"])));
        assert!(sets("attributes", Some("Delay"), &leaf(&["attributes", "Delay"], &[])));
    }

    #[test]
    fn the_types_a_call_creates_come_from_its_name_and_the_schema() {
        let schema = Schema::newest().unwrap();
        let event = |source: &str, name: &str| {
            driftback_events::normalize(&json!({
                "eventVersion": "1.08",
                "userIdentity": {"type": "IAMUser", "arn": "arn:aws:iam::123456789012:user/erin", "accountId": "123456789012"},
                "eventTime": "2024-10-28T12:15:02Z", "eventSource": source, "eventName": name,
                "awsRegion": "us-east-1", "requestParameters": {}, "responseElements": null,
                "eventID": "e", "eventType": "AwsApiCall", "readOnly": false, "recipientAccountId": "123456789012"
            }))
            .unwrap()
        };
        let types = |source: &str, name: &str| creatable_types(&event(source, name), schema);
        assert!(types("iam.amazonaws.com", "CreateUser").contains(&"aws_iam_user".to_string()));
        assert!(types("ec2.amazonaws.com", "RunInstances").contains(&"aws_instance".to_string()));
        assert!(types("route53.amazonaws.com", "ChangeResourceRecordSets").contains(&"aws_route53_record".to_string()));
        assert!(!types("route53.amazonaws.com", "ChangeResourceRecordSets").contains(&"aws_iam_user".to_string()));
        assert!(types("ec2.amazonaws.com", "ModifySubnetAttribute").is_empty());
        // The most specific type only: a user's inline policy creates no user, a bucket's policy
        // no bucket.
        assert_eq!(types("iam.amazonaws.com", "PutUserPolicy"), ["aws_iam_user_policy"]);
        assert_eq!(types("s3.amazonaws.com", "PutBucketPolicy"), ["aws_s3_bucket_policy"]);

        let deleted = |source: &str, name: &str| deleted_types(&event(source, name), schema);
        assert_eq!(deleted("s3.amazonaws.com", "DeleteBucket"), ["aws_s3_bucket"]);
        assert_eq!(deleted("ec2.amazonaws.com", "TerminateInstances"), ["aws_instance"]);
        assert_eq!(deleted("ec2.amazonaws.com", "DeleteTags"), ["aws_ec2_tag"], "a tag resource, never the instance");
        assert!(!deleted("s3.amazonaws.com", "DeleteBucketOwnershipControls").contains(&"aws_s3_bucket".to_string()));
        assert!(deleted("route53.amazonaws.com", "ChangeResourceRecordSets").is_empty());
    }
}
