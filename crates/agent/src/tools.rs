//! The agent's tools: JSON schemas for the model, argument checking, and their effects on a
//! working copy of the repository through the same patch engine recipes use.

use std::path::{Component, Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value, json};

use driftback_embed::ChangeSignature;
use driftback_events::ChangeSet;
use driftback_recipes::{Plan, ResourceChange};
use driftback_terraform::render::is_identifier;
use driftback_terraform::{Address, AttrPath, AttrValue, BlockSpec, Op, Repo, Schema, Seg, State};

use crate::context::{block_text, cut};
use crate::kb::{KnowledgeBase, signature};
use driftback_attribute::{Intent, Motivation};

use crate::finish::Finish;
use crate::proof::{Evidence, Footprint, Proof, import_id_from_calls, prove_reference, prove_removal, prove_value};
use crate::validate::{Validation, validate};

const REDACTED: &str = "HIDDEN_DUE_TO_SECURITY_REASONS";
const MAX_LINES: usize = 200;
const SECRET_NAMES: &[&str] = &["password", "secret", "private_key", "access_key", "token", "passphrase"];

/// The tools as the chat-completions API describes them: name, description, JSON schema.
pub fn tool_definitions() -> Vec<(&'static str, &'static str, Value)> {
    let string = |d: &str| json!({"type": "string", "description": d});
    vec![
        (
            "read_state",
            "Terraform state attributes of a resource, by address or by cloud identifier (id, ARN or name). Sensitive attributes are not shown.",
            object(
                json!({"address": string("resource address, e.g. aws_vpc.main"), "cloud_id": string("an id, ARN or name from the calls")}),
                &[],
            ),
        ),
        (
            "search_kb",
            "Past reconciliations similar to this change set, with their patches.",
            object(
                json!({"resource_type": string("resource type to compare with, e.g. aws_s3_bucket"), "limit": {"type": "integer", "minimum": 1, "maximum": 5}}),
                &[],
            ),
        ),
        (
            "read_hcl",
            "Configuration text: the block of a resource address, or lines of a repository file.",
            object(
                json!({"address": string("resource address"), "file": string("path relative to the repository root"), "from_line": {"type": "integer", "minimum": 1}, "to_line": {"type": "integer", "minimum": 1}}),
                &[],
            ),
        ),
        (
            "list_resources",
            "Resources of a type: addresses in the state and blocks in the configuration.",
            object(json!({"type": string("resource type, e.g. aws_security_group")}), &["type"]),
        ),
        (
            "edit_hcl",
            "Set or remove one attribute of a resource. The change is made where the value comes from (literal, variable, tfvars, local, module input). Give exactly one of value (JSON data), expression (a reference such as aws_vpc.main.id) or remove = true.",
            object(
                json!({
                    "address": string("resource address, e.g. aws_vpc.main"),
                    "path": string("attribute path: instance_type, versioning.enabled, tags[\"Team\"], ingress[0].from_port"),
                    "value": {"description": "the new value as JSON (string, number, boolean, list or object)"},
                    "expression": string("a reference to another resource's attribute, e.g. aws_kms_key.logs.arn"),
                    "remove": {"type": "boolean"}
                }),
                &["address", "path"],
            ),
        ),
        (
            "add_resource",
            "Add a resource block for a cloud object created outside Terraform, with an import block for its id.",
            object(
                json!({
                    "type": string("resource type"),
                    "name": string("resource name: letters, digits, underscores"),
                    "import_id": string("the id Terraform imports it by"),
                    "attributes": {"type": "object", "description": "attribute name -> value (JSON data)"},
                    "references": {"type": "object", "description": "attribute name -> reference such as aws_vpc.main.id", "additionalProperties": {"type": "string"}}
                }),
                &["type", "name", "import_id"],
            ),
        ),
        (
            "remove_resource",
            "Remove the block of a resource deleted outside Terraform (and its import/moved blocks).",
            object(json!({"address": string("resource address")}), &["address"]),
        ),
        (
            "validate",
            "Check the edits so far: files parse, the effective configuration now has the values the calls set, nothing else changed. Returns the problems and the diff.",
            object(json!({}), &[]),
        ),
        (
            "finish",
            "End: the edits are complete and validated.",
            object(
                json!({
                    "summary": string("one line: what changed and why"),
                    "intent": {"type": "string", "enum": Intent::ALL.map(|i| i.as_str())},
                    "motivation": {"type": "string", "enum": Motivation::ALL.map(|m| m.as_str())},
                    "confidence": {"type": "number", "minimum": 0, "maximum": 1}
                }),
                &["summary", "intent", "motivation", "confidence"],
            ),
        ),
        (
            "escalate",
            "End without changing the configuration: a person must decide. Say why.",
            object(json!({"reason": string("why this should not or cannot be codified")}), &["reason"]),
        ),
    ]
}

fn object(properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false})
}

/// A call that could not be carried out. Both kinds go back to the model; only malformed calls
/// count toward the limit that ends the session.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ToolError {
    /// Unknown tool, arguments that are not JSON or do not fit the schema.
    Malformed(String),
    /// A well-formed call the engine refused (no such resource, not a literal, a secret, ...).
    Refused(String),
}

/// What a successful call means for the session.
#[derive(Debug)]
pub(crate) enum Step {
    /// Send this result back to the model.
    Result(String),
    Finish(Finish),
    Escalate(String),
}

/// The session's working copy: the repository with the edits so far, and the plan they add up to.
pub(crate) struct Workspace<'a, K> {
    pub change_set: &'a ChangeSet,
    pub state: &'a State,
    pub base: &'a Repo,
    pub work: Repo,
    pub plan: Plan,
    pub kb: &'a K,
    pub max_chars: usize,
    /// The provider schema values are type-checked against; `None` refuses every edit.
    pub schema: Option<&'static Schema>,
    /// What the calls let change.
    pub footprint: Footprint,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadState {
    address: Option<String>,
    cloud_id: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchKb {
    resource_type: Option<String>,
    limit: Option<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadHcl {
    address: Option<String>,
    file: Option<String>,
    from_line: Option<usize>,
    to_line: Option<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListResources {
    #[serde(rename = "type")]
    rtype: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EditHcl {
    address: String,
    path: String,
    #[serde(default, deserialize_with = "present")]
    value: Option<Value>,
    expression: Option<String>,
    #[serde(default)]
    remove: bool,
}

/// `"value": null` is a value (null), not an absent field.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AddResource {
    #[serde(rename = "type")]
    rtype: String,
    name: String,
    import_id: String,
    #[serde(default)]
    attributes: Map<String, Value>,
    #[serde(default)]
    references: Map<String, Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RemoveResource {
    address: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NoArgs {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FinishArgs {
    summary: String,
    intent: Intent,
    motivation: Motivation,
    confidence: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EscalateArgs {
    reason: String,
}

fn args<T: serde::de::DeserializeOwned>(tool: &str, raw: &str) -> Result<T, ToolError> {
    let raw = if raw.trim().is_empty() { "{}" } else { raw };
    serde_json::from_str(raw)
        .map_err(|e| ToolError::Malformed(format!("the arguments of {tool} do not fit its schema: {e}")))
}

fn address(text: &str) -> Result<Address, ToolError> {
    Address::parse(text).map_err(|e| ToolError::Malformed(e.to_string()))
}

fn secret_name(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    SECRET_NAMES.iter().any(|s| name.contains(s))
}

impl<K: KnowledgeBase> Workspace<'_, K> {
    /// Carry out one call.
    pub async fn call(&mut self, tool: &str, raw_args: &str) -> Result<Step, ToolError> {
        let text = match tool {
            "read_state" => self.read_state(args(tool, raw_args)?)?,
            "search_kb" => self.search_kb(args(tool, raw_args)?).await?,
            "read_hcl" => self.read_hcl(args(tool, raw_args)?)?,
            "list_resources" => self.list_resources(args(tool, raw_args)?),
            "edit_hcl" => self.edit_hcl(args(tool, raw_args)?)?,
            "add_resource" => self.add_resource(args(tool, raw_args)?)?,
            "remove_resource" => self.remove_resource(args(tool, raw_args)?)?,
            "validate" => {
                let _: NoArgs = args(tool, raw_args)?;
                serde_json::to_string(&self.validation()).unwrap_or_default()
            }
            "finish" => {
                let a: FinishArgs = args(tool, raw_args)?;
                if !(0.0..=1.0).contains(&a.confidence) {
                    return Err(ToolError::Malformed(format!("confidence {} is not between 0 and 1", a.confidence)));
                }
                return Ok(Step::Finish(Finish {
                    summary: a.summary,
                    intent: a.intent,
                    motivation: a.motivation,
                    confidence: a.confidence,
                }));
            }
            "escalate" => {
                let a: EscalateArgs = args(tool, raw_args)?;
                return Ok(Step::Escalate(a.reason));
            }
            other => {
                let known: Vec<&str> = tool_definitions().iter().map(|(n, _, _)| *n).collect();
                return Err(ToolError::Malformed(format!(
                    "there is no tool {:?}; the tools are {}",
                    cut(other, 80),
                    known.join(", ")
                )));
            }
        };
        Ok(Step::Result(cut(&text, self.max_chars)))
    }

    pub fn validation(&self) -> Validation {
        validate(self.base, &self.work, self.state, self.change_set, &self.plan)
    }

    fn read_state(&self, a: ReadState) -> Result<String, ToolError> {
        let instances: Vec<_> = match (&a.address, &a.cloud_id) {
            (Some(text), None) => {
                let address = address(text)?;
                self.state.get(&address).into_iter().collect()
            }
            (None, Some(id)) => {
                let mut found = self.state.find(id, &[], &[]);
                if found.is_empty() {
                    found = self
                        .state
                        .instances
                        .iter()
                        .filter(|i| !i.address.data && i.attributes.values().any(|v| v.as_str() == Some(id)))
                        .collect();
                }
                found.into_iter().take(3).collect()
            }
            _ => return Err(ToolError::Malformed("give exactly one of address and cloud_id".into())),
        };
        if instances.is_empty() {
            return Err(ToolError::Refused("the state has no such resource".into()));
        }
        let shown: Vec<Value> = instances
            .iter()
            .map(|i| {
                let attributes: Map<String, Value> = i
                    .attributes
                    .iter()
                    .filter(|(_, v)| !v.is_null())
                    .map(|(k, v)| {
                        let v = if secret_name(k) { Value::String("(sensitive: not shown)".into()) } else { v.clone() };
                        (k.clone(), v)
                    })
                    .collect();
                json!({"address": i.address.to_string(), "attributes": attributes})
            })
            .collect();
        Ok(serde_json::to_string(&shown).unwrap_or_default())
    }

    async fn search_kb(&self, a: SearchKb) -> Result<String, ToolError> {
        // The model may compare with another resource type than the one the state locates.
        let signature = match &a.resource_type {
            Some(rtype) => ChangeSignature::of(self.change_set, Some(rtype)),
            None => signature(self.change_set, self.state),
        };
        let limit = a.limit.unwrap_or(3).clamp(1, 5);
        let found = self.kb.similar(&signature, limit).await.map_err(|e| ToolError::Refused(e.to_string()))?;
        if found.is_empty() {
            return Ok("no similar past reconciliation".into());
        }
        let shown: Vec<Value> = found
            .iter()
            .map(|p| json!({"signature": p.signature.text(), "outcome": p.outcome, "planned_by": p.planned_by, "patch": cut(&p.patch, 1_200)}))
            .collect();
        Ok(serde_json::to_string(&shown).unwrap_or_default())
    }

    fn read_hcl(&self, a: ReadHcl) -> Result<String, ToolError> {
        match (&a.address, &a.file) {
            (Some(text), None) => {
                let address = address(text)?;
                let (at, block) = block_text(&self.work, &address)
                    .ok_or_else(|| ToolError::Refused(format!("{address} has no block in the configuration")))?;
                Ok(format!("{at}\n{block}"))
            }
            (None, Some(file)) => {
                let path = repo_path(file)?;
                let text = self
                    .work
                    .text(&path)
                    .ok_or_else(|| ToolError::Refused(format!("{file} is not a Terraform file of this repository")))?;
                let lines: Vec<&str> = text.lines().collect();
                let from = a.from_line.unwrap_or(1).max(1);
                let to = a.to_line.unwrap_or(from + MAX_LINES - 1).min(lines.len()).min(from + MAX_LINES - 1);
                if from > lines.len().max(1) || to < from {
                    return Err(ToolError::Refused(format!("{file} has {} lines", lines.len())));
                }
                let mut out = format!("{file} lines {from}-{to} of {}\n", lines.len());
                for (i, line) in lines[from - 1..to].iter().enumerate() {
                    out.push_str(&format!("{:>4} {line}\n", from + i));
                }
                Ok(out)
            }
            _ => Err(ToolError::Malformed("give exactly one of address and file".into())),
        }
    }

    fn list_resources(&self, a: ListResources) -> String {
        let in_state: Vec<String> = self
            .state
            .instances
            .iter()
            .filter(|i| i.address.rtype == a.rtype && !i.address.data)
            .map(|i| {
                let id = i.attr_str("id").unwrap_or_default();
                format!("{} (id {id})", i.address)
            })
            .collect();
        let mut in_config = Vec::new();
        for (module, dir) in self.work.modules() {
            for (file, name) in self.work.resources_of_type(dir, &a.rtype) {
                let prefix = if module.is_empty() { String::new() } else { format!("{module}.") };
                in_config.push(format!("{prefix}{}.{name} in {}", a.rtype, file.display()));
            }
        }
        serde_json::to_string(&json!({"state": in_state, "configuration": in_config})).unwrap_or_default()
    }

    fn edit_hcl(&mut self, a: EditHcl) -> Result<String, ToolError> {
        let address = address(&a.address)?;
        let path = AttrPath::parse(&a.path).map_err(|e| ToolError::Malformed(e.to_string()))?;
        if !self.footprint.identifies(&address) {
            return Err(ToolError::Refused(format!(
                "{address} is not a resource the calls identify, so it may not change; {}",
                self.footprint.describe()
            )));
        }
        let schema = self.schema()?;
        let evidence = Evidence::new(self.change_set, self.state);
        let (op, proof) = match (a.value, a.expression, a.remove) {
            (Some(value), None, false) => {
                check_value(&path, &value)?;
                let proof = prove_value(&evidence, schema, &address, &path, &value).map_err(unproven)?;
                (Op::Set { path, value: AttrValue::Literal(value) }, Some(proof))
            }
            (None, Some(expression), false) => {
                let value = AttrValue::Reference(expression.trim().to_string());
                value.render("").map_err(|e| ToolError::Malformed(e.to_string()))?;
                self.check_reference(&address, expression.trim())?;
                let proof = prove_reference(&evidence, schema, self.state, &address, &path, expression.trim())
                    .map_err(unproven)?;
                (Op::Set { path, value }, Some(proof))
            }
            (None, None, true) => {
                let proof = prove_removal(&evidence, schema, &address, &path).map_err(unproven)?;
                (Op::Remove { path }, Some(proof))
            }
            _ => return Err(ToolError::Malformed("give exactly one of value, expression and remove = true".into())),
        };
        self.apply(address, op, proof.into_iter().collect())
    }

    fn add_resource(&mut self, a: AddResource) -> Result<String, ToolError> {
        if !is_identifier(&a.rtype) || !is_identifier(&a.name) {
            return Err(ToolError::Malformed(format!(
                "{:?}.{:?} is not a valid resource type and name",
                cut(&a.rtype, 80),
                cut(&a.name, 80)
            )));
        }
        let address = Address::resource(&a.rtype, &a.name);
        if self.work.find_resource(&address).is_some() || self.state.get(&address).is_some() {
            return Err(ToolError::Refused(format!("{address} already exists; choose another name")));
        }
        if !self.footprint.creates(&a.rtype) {
            return Err(ToolError::Refused(format!(
                "the calls create no {}; {}. Add only what a call created.",
                a.rtype,
                self.footprint.describe()
            )));
        }
        if a.import_id.contains(REDACTED) || a.import_id.is_empty() {
            return Err(ToolError::Refused("the import id must be the cloud object's real id".into()));
        }
        let schema = self.schema()?;
        if !import_id_from_calls(self.change_set, schema, &a.rtype, &a.import_id) {
            return Err(ToolError::Refused(format!(
                "the import id {:?} is not the identifier a call creating {} recorded",
                cut(&a.import_id, 200),
                a.rtype
            )));
        }
        let evidence = Evidence::new(self.change_set, self.state);
        let mut spec = BlockSpec::default();
        let mut proofs = Vec::new();
        for (name, value) in a.attributes {
            let path = AttrPath(vec![Seg::Name(name.clone())]);
            check_value(&path, &value)?;
            proofs.push(prove_value(&evidence, schema, &address, &path, &value).map_err(unproven)?);
            spec.attrs.push((name, AttrValue::Literal(value)));
        }
        for (name, reference) in a.references {
            let Value::String(reference) = reference else {
                return Err(ToolError::Malformed(format!("reference for {} must be a string", cut(&name, 80))));
            };
            let value = AttrValue::Reference(reference.trim().to_string());
            value.render("").map_err(|e| ToolError::Malformed(e.to_string()))?;
            self.check_reference(&address, reference.trim())?;
            let path = AttrPath(vec![Seg::Name(name.clone())]);
            proofs.push(
                prove_reference(&evidence, schema, self.state, &address, &path, reference.trim()).map_err(unproven)?,
            );
            spec.attrs.push((name, value));
        }
        self.apply(address, Op::CreateResource { spec, import_id: a.import_id }, proofs)
    }

    fn remove_resource(&mut self, a: RemoveResource) -> Result<String, ToolError> {
        let address = address(&a.address)?;
        if !self.footprint.deletes(&address) {
            return Err(ToolError::Refused(format!(
                "no call deletes {address}, so it must stay; {}",
                self.footprint.describe()
            )));
        }
        self.apply(address, Op::RemoveResource, Vec::new())
    }

    fn schema(&self) -> Result<&'static Schema, ToolError> {
        self.schema.ok_or_else(|| {
            ToolError::Refused("no provider schema is available, so no value can be type-checked: escalate".into())
        })
    }

    /// A reference must name a resource the configuration declares in the same module.
    fn check_reference(&self, near: &Address, reference: &str) -> Result<(), ToolError> {
        let mut parts = reference.split('.');
        let (Some(rtype), Some(name)) = (parts.next(), parts.next()) else {
            return Err(ToolError::Malformed(format!("{reference:?} is not TYPE.NAME.ATTRIBUTE")));
        };
        let name = name.split('[').next().unwrap_or(name);
        let target = Address { module: near.module.clone(), key: None, ..Address::resource(rtype, name) };
        if self.work.find_resource(&target).is_none() {
            return Err(ToolError::Refused(format!("{reference} names no resource of this module")));
        }
        Ok(())
    }

    fn apply(&mut self, address: Address, op: Op, proofs: Vec<Proof>) -> Result<String, ToolError> {
        let mut work = self.work.clone();
        let applied = driftback_terraform::patch::apply(&mut work, &address, &op)
            .map_err(|e| ToolError::Refused(e.to_string()))?;
        for file in &applied.files {
            if let Err(e) = driftback_terraform::edit::parse(work.text(file).unwrap_or_default()) {
                return Err(ToolError::Refused(format!("{} would not parse: {e}", file.display())));
            }
        }
        self.work = work;
        let files: Vec<String> = applied.files.iter().map(|f| f.display().to_string()).collect();
        let edit = format!(
            "{}{}",
            describe_op(&address, &op),
            if files.is_empty() { String::new() } else { format!(" in {}", files.join(", ")) }
        );
        let created = matches!(op, Op::CreateResource { .. });
        match self.plan.changes.iter_mut().find(|c| c.address == address) {
            Some(change) => change.ops.push(op),
            None => self.plan.changes.push(ResourceChange {
                address: address.clone(),
                ops: vec![op],
                recipes: vec!["agent".into()],
                created,
            }),
        }
        // The engine's notes, without any whose place came out empty.
        let notes: Vec<&String> = applied.notes.iter().filter(|n| !n.contains("  ") && !n.trim().is_empty()).collect();
        let proofs: Vec<String> = proofs.iter().map(|p| p.to_string()).collect();
        Ok(serde_json::to_string(&json!({"applied": edit, "proofs": proofs, "files": files, "notes": notes}))
            .unwrap_or_default())
    }
}

/// One edit in words: never empty.
fn describe_op(address: &Address, op: &Op) -> String {
    match op {
        Op::Set { path, value: AttrValue::Literal(v) } => {
            format!("set {address}.{path} to {}", cut(&v.to_string(), 120))
        }
        Op::Set { path, value: AttrValue::Reference(r) } => format!("set {address}.{path} to {r}"),
        Op::Remove { path } => format!("removed {address}.{path}"),
        Op::RemoveResource => format!("removed {address}"),
        Op::CreateResource { import_id, .. } => format!("added {address}, imported by {}", cut(import_id, 120)),
        other => format!("{address}: {other:?}"),
    }
}

/// An edit without proof: refused, and the model told why.
fn unproven(why: crate::proof::Unproven) -> ToolError {
    ToolError::Refused(format!(
        "not written: {why}. Only a value a call recorded for that attribute (the member that sets it) may be written."
    ))
}

/// Values from the model are data, and never a secret or a redacted value.
fn check_value(path: &AttrPath, value: &Value) -> Result<(), ToolError> {
    if value.to_string().contains(REDACTED) {
        return Err(ToolError::Refused(format!("`{path}`: CloudTrail hid this value; escalate instead")));
    }
    let named_secret = path.0.iter().any(|s| matches!(s, Seg::Name(n) | Seg::Key(n) if secret_name(n)));
    if named_secret && value.as_str().is_some_and(|s| !s.is_empty()) {
        return Err(ToolError::Refused(format!("`{path}` holds a secret; it is never written into code")));
    }
    Ok(())
}

/// A repository-relative path that cannot leave the repository.
fn repo_path(file: &str) -> Result<PathBuf, ToolError> {
    let path = Path::new(file);
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Normal(part) => out.push(part),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                return Err(ToolError::Refused(format!(
                    "{file} is outside the repository; give a path relative to its root"
                )));
            }
        }
    }
    Ok(out)
}
