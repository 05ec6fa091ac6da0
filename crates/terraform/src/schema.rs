//! The AWS provider's schema: every resource type and data source, its arguments (with their value
//! types and whether they are required), its nested blocks (with their nesting) and the attributes
//! only the provider sets.
//!
//! The data is committed under `crates/terraform/data/` (one gzip'd JSON file per provider version,
//! made by `scripts/provider-schema.mjs` from the `@cdktf/provider-aws` npm package, which is
//! generated from the provider's schema; see docs/provider-schema.md). It is compiled into the
//! binary and decompressed once, on first use.
//!
//! [`Schema::check_body`] answers the question a patch must ask before it is committed: does this
//! attribute or nested block exist on this resource type, is it written as the right kind (an
//! attribute as `name = value`, a block as `name { ... }`), and can it be set at all.
//!
//! [`Schema::is_sensitive`] answers another: does the provider mark the attribute sensitive (a
//! value Terraform never shows, such as `aws_db_instance.password`). That data is
//! `crates/terraform/data/aws-sensitive.tsv`, made by `scripts/provider-sensitive.py` from
//! Terraform's own account of the provider's schema (`terraform providers schema -json`), which the
//! npm package lacks; it is compiled in too.

use std::collections::BTreeMap;
use std::fmt;
use std::io::Read;
use std::sync::OnceLock;

use hcl_edit::expr::{Expression, ObjectKey};
use hcl_edit::structure::{BlockLabel, Body};
use serde::Deserialize;
use thiserror::Error;

use crate::path::{AttrPath, Seg};
use crate::version::{Constraints, Version, VersionError};

/// The provider versions whose schema is bundled, oldest first, with their data.
const BUNDLED: [(&str, &[u8]); 2] = [
    ("5.100.0", include_bytes!("../data/aws-5.100.0.json.gz")),
    ("6.25.0", include_bytes!("../data/aws-6.25.0.json.gz")),
];

static LOADED: [OnceLock<Result<Schema, SchemaError>>; BUNDLED.len()] = [const { OnceLock::new() }; BUNDLED.len()];

/// The attributes the provider marks sensitive, for every bundled version: `resource_type`, the
/// attribute's dotted path, the versions that mark it (see docs/provider-schema.md).
const SENSITIVE: &str = include_str!("../data/aws-sensitive.tsv");

/// Arguments every resource block takes besides its type's own (Terraform's meta-arguments).
pub const META_ARGUMENTS: [&str; 4] = ["count", "for_each", "provider", "depends_on"];
/// Blocks every resource block takes besides its type's own; their contents are Terraform's.
pub const META_BLOCKS: [&str; 3] = ["lifecycle", "provisioner", "connection"];

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SchemaError {
    #[error("the bundled schema of AWS provider {version} cannot be read: {reason}")]
    Data { version: String, reason: String },
    #[error("invalid provider version constraint {constraint:?}: {reason}")]
    BadConstraint { constraint: String, reason: String },
    #[error("no bundled AWS provider schema satisfies {constraint:?} (bundled: {bundled})")]
    NoVersion { constraint: String, bundled: String },
    #[error("`{resource_type}` is not a resource type of AWS provider {version}")]
    UnknownResourceType { resource_type: String, version: String },
    #[error("`{path}` is not an argument or block of `{resource_type}` (AWS provider {version})")]
    UnknownArgument { resource_type: String, path: String, version: String },
    #[error(
        "`{path}` is not an argument or block of `{resource_type}` but of {} (AWS provider {version})",
        owners.iter().map(|o| format!("`{o}`")).collect::<Vec<_>>().join(", ")
    )]
    OtherResourceType { resource_type: String, path: String, owners: Vec<String>, version: String },
    #[error("`{path}` of `{resource_type}` is a nested block, written as an attribute (`{path} = ...`)")]
    BlockAsAttribute { resource_type: String, path: String },
    #[error("`{path}` of `{resource_type}` is an attribute of type {value_type}, written as a block")]
    AttributeAsBlock { resource_type: String, path: String, value_type: String },
    #[error("`{path}` of `{resource_type}` is computed by the provider and cannot be set")]
    ComputedOnly { resource_type: String, path: String },
    #[error("`{path}` of `{resource_type}` is an attribute of type {value_type}: it has no member `{member}`")]
    NoMembers { resource_type: String, path: String, value_type: String, member: String },
}

/// One provider version's schema.
#[derive(Debug, Deserialize)]
pub struct Schema {
    provider_version: String,
    package: String,
    package_version: String,
    resources: BTreeMap<String, ResourceSchema>,
    data_sources: BTreeMap<String, ResourceSchema>,
    /// Per resource type, the paths (names through nested blocks and nested attributes) of the
    /// attributes this version marks sensitive, from [`SENSITIVE`].
    #[serde(skip)]
    sensitive: BTreeMap<String, Vec<Vec<String>>>,
    /// Resource types whose sensitive attributes the data does not know (their schema could not be
    /// read when it was made).
    #[serde(skip)]
    sensitivity_unknown: Vec<String>,
}

/// The body of a resource, a data source or a nested block.
#[derive(Debug, Default, Deserialize)]
pub struct BlockSchema {
    #[serde(rename = "a", default)]
    attributes: BTreeMap<String, Attribute>,
    #[serde(rename = "b", default)]
    blocks: BTreeMap<String, NestedBlock>,
    #[serde(rename = "c", default)]
    computed: Vec<String>,
}

/// A resource type's (or data source's) top-level body.
pub type ResourceSchema = BlockSchema;

/// An argument: a name set with `name = value`.
#[derive(Debug, Deserialize)]
pub struct Attribute {
    #[serde(rename = "t")]
    value_type: ValueType,
    #[serde(rename = "m")]
    mode: Mode,
    /// The members of an object-typed attribute (or of each element of a list, set or map of
    /// objects).
    #[serde(rename = "f", default)]
    fields: Option<Box<BlockSchema>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum Mode {
    /// Must be set.
    #[serde(rename = "r")]
    Required,
    /// May be set; unset, it is null (or the provider's default).
    #[serde(rename = "o")]
    Optional,
    /// May be set; unset, the provider computes it.
    #[serde(rename = "oc")]
    OptionalComputed,
}

/// A nested block: `name { ... }`.
#[derive(Debug, Deserialize)]
pub struct NestedBlock {
    #[serde(rename = "n")]
    nesting: Nesting,
    #[serde(default)]
    min: u32,
    #[serde(default)]
    max: Option<u32>,
    #[serde(rename = "b", default)]
    body: BlockSchema,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Nesting {
    /// Repeatable, ordered (`max_items` 1 for a block written at most once).
    List,
    /// Repeatable, unordered.
    Set,
    /// Exactly one object (the plugin framework's single nested block, e.g. `timeouts`).
    Single,
}

/// An argument's value type as Terraform's type constraints name it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub enum ValueType {
    String,
    Number,
    Bool,
    /// Any value (`DynamicPseudoType`).
    Any,
    /// An object; its members are the attribute's [`Attribute::fields`].
    Object,
    List(Box<ValueType>),
    Set(Box<ValueType>),
    Map(Box<ValueType>),
}

/// How a path step is written in the configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Step<'a> {
    /// `name = value` (or, before the last step, a member of that value).
    Attribute(&'a str),
    /// `name { ... }` (a `dynamic "name"` block counts as one).
    Block(&'a str),
}

impl Step<'_> {
    pub fn name(&self) -> &str {
        match self {
            Step::Attribute(n) | Step::Block(n) => n,
        }
    }
}

/// What a path leads to.
#[derive(Debug, Clone, Copy)]
pub enum Found<'s> {
    /// The empty path: the resource's own body.
    Body(&'s BlockSchema),
    /// An argument (or, for a path into an object-typed argument, the member).
    Argument(&'s Attribute),
    /// A nested block.
    Block(&'s NestedBlock),
    /// A meta-argument or meta-block, or anything inside a meta-block: Terraform's, not the
    /// provider's.
    Meta,
    /// A key inside this map- or `any`-typed argument: free, not checked.
    Free(&'s Attribute),
}

/// How well the selected schema fits the repository's provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fit {
    /// The schema's version is the locked version or satisfies the constraint.
    Exact,
    /// No bundled version fits exactly; this is the nearest (same major version where possible).
    Nearest,
    /// Nothing was asked: the newest bundled version.
    Newest,
}

impl Schema {
    /// The bundled provider versions, oldest first.
    pub fn bundled_versions() -> impl Iterator<Item = &'static str> {
        BUNDLED.iter().map(|(v, _)| *v)
    }

    /// The schema of exactly this bundled provider version.
    pub fn version(version: &str) -> Result<&'static Schema, SchemaError> {
        let index = BUNDLED
            .iter()
            .position(|(v, _)| *v == version)
            .ok_or_else(|| SchemaError::NoVersion { constraint: format!("= {version}"), bundled: bundled_list() })?;
        load(index)
    }

    /// The newest bundled schema.
    pub fn newest() -> Result<&'static Schema, SchemaError> {
        load(BUNDLED.len() - 1)
    }

    /// The newest bundled schema whose version satisfies a Terraform version constraint such as
    /// `~> 5.0` or `>= 4.0, < 6.0`.
    pub fn for_constraint(constraint: &str) -> Result<&'static Schema, SchemaError> {
        let clauses = parse_constraint(constraint)?;
        let index = newest_satisfying(&clauses)
            .ok_or_else(|| SchemaError::NoVersion { constraint: constraint.to_string(), bundled: bundled_list() })?;
        load(index)
    }

    /// The schema for a repository: the version locked in `.terraform.lock.hcl` when given, else the
    /// `required_providers` constraint, else the newest. When no bundled version fits exactly, the
    /// nearest: the newest of the same major version, else the oldest newer one, else the newest.
    pub fn select(constraint: Option<&str>, locked: Option<&str>) -> Result<(&'static Schema, Fit), SchemaError> {
        if let Some(locked) = locked {
            let v = Version::parse(locked)
                .map_err(|e| SchemaError::BadConstraint { constraint: locked.to_string(), reason: e.to_string() })?;
            if let Some(i) =
                BUNDLED.iter().position(|(b, _)| Version::parse(b).is_ok_and(|b| b.numbers() == v.numbers()))
            {
                return Ok((load(i)?, Fit::Exact));
            }
            return Ok((load(nearest(&v))?, Fit::Nearest));
        }
        let Some(constraint) = constraint else {
            return Ok((Schema::newest()?, Fit::Newest));
        };
        let clauses = parse_constraint(constraint)?;
        if let Some(i) = newest_satisfying(&clauses) {
            return Ok((load(i)?, Fit::Exact));
        }
        let floor = clauses.lower_bounds().max_by_key(|v| v.numbers()).cloned();
        match floor {
            Some(floor) => Ok((load(nearest(&floor))?, Fit::Nearest)),
            // Only upper bounds, all below what is bundled: the oldest is the nearest.
            None => Ok((load(0)?, Fit::Nearest)),
        }
    }

    /// The provider version, e.g. `6.25.0`.
    pub fn provider_version(&self) -> &str {
        &self.provider_version
    }

    /// The npm package and version the data was extracted from.
    pub fn source_package(&self) -> (&str, &str) {
        (&self.package, &self.package_version)
    }

    pub fn resource(&self, resource_type: &str) -> Option<&ResourceSchema> {
        self.resources.get(resource_type)
    }

    pub fn data_source(&self, data_type: &str) -> Option<&ResourceSchema> {
        self.data_sources.get(data_type)
    }

    pub fn resource_types(&self) -> impl Iterator<Item = &str> {
        self.resources.keys().map(String::as_str)
    }

    pub fn data_source_types(&self) -> impl Iterator<Item = &str> {
        self.data_sources.keys().map(String::as_str)
    }

    /// Whether the attribute or nested block at `path` exists in a `resource_type` block, written
    /// as the steps say, and can be set. The first step may be a meta-argument (`count`,
    /// `for_each`, `provider`, `depends_on`) or meta-block (`lifecycle`, `provisioner`,
    /// `connection`, whose contents are not checked). Steps inside a map or `any` value are not
    /// checked (their keys are free). A `dynamic "x"` block is the step `Step::Block("x")`.
    pub fn check_body(&self, resource_type: &str, path: &[Step<'_>]) -> Result<(), SchemaError> {
        self.lookup(resource_type, path).map(|_| ())
    }

    /// [`Schema::check_body`], answering with what is at the path, for checks of the value
    /// ([`ValueType::admits`]) or of the number of blocks ([`NestedBlock::max_items`]).
    pub fn lookup<'s>(&'s self, resource_type: &str, path: &[Step<'_>]) -> Result<Found<'s>, SchemaError> {
        let resource = self.resource(resource_type).ok_or_else(|| SchemaError::UnknownResourceType {
            resource_type: resource_type.to_string(),
            version: self.provider_version.clone(),
        })?;
        self.walk(resource_type, resource, path, true)
    }

    /// [`Schema::lookup`] in a `data "TYPE"` block.
    pub fn lookup_data<'s>(&'s self, data_type: &str, path: &[Step<'_>]) -> Result<Found<'s>, SchemaError> {
        let data = self.data_source(data_type).ok_or_else(|| SchemaError::UnknownResourceType {
            resource_type: format!("data.{data_type}"),
            version: self.provider_version.clone(),
        })?;
        self.walk(&format!("data.{data_type}"), data, path, false)
    }

    fn walk<'s>(
        &'s self,
        owner: &str,
        top: &'s BlockSchema,
        path: &[Step<'_>],
        is_resource: bool,
    ) -> Result<Found<'s>, SchemaError> {
        match path.first() {
            Some(Step::Attribute(n)) if META_ARGUMENTS.contains(n) && path.len() == 1 => return Ok(Found::Meta),
            Some(Step::Block(n)) if META_BLOCKS.contains(n) => return Ok(Found::Meta),
            Some(Step::Attribute(n)) if META_BLOCKS.contains(n) => {
                return Err(SchemaError::BlockAsAttribute { resource_type: owner.to_string(), path: (*n).to_string() });
            }
            _ => {}
        }
        let mut body = top;
        let mut found = Found::Body(top);
        let mut walked: Vec<&str> = Vec::with_capacity(path.len());
        for (i, step) in path.iter().enumerate() {
            let last = i + 1 == path.len();
            let name = step.name();
            walked.push(name);
            let here = || walked.join(".");
            if let Some(block) = body.blocks.get(name) {
                if let Step::Attribute(_) = step {
                    return Err(SchemaError::BlockAsAttribute { resource_type: owner.to_string(), path: here() });
                }
                body = &block.body;
                found = Found::Block(block);
                continue;
            }
            if let Some(attr) = body.attributes.get(name) {
                if let Step::Block(_) = step {
                    if !attr.takes_block_syntax() {
                        return Err(SchemaError::AttributeAsBlock {
                            resource_type: owner.to_string(),
                            path: here(),
                            value_type: attr.value_type.to_string(),
                        });
                    }
                }
                if last {
                    return Ok(Found::Argument(attr));
                }
                if attr.value_type.has_free_keys() {
                    return Ok(Found::Free(attr));
                }
                match attr.fields.as_deref() {
                    Some(fields) => {
                        body = fields;
                        found = Found::Argument(attr);
                        continue;
                    }
                    None => {
                        return Err(SchemaError::NoMembers {
                            resource_type: owner.to_string(),
                            path: here(),
                            value_type: attr.value_type.to_string(),
                            member: path.get(i + 1).map(|s| s.name().to_string()).unwrap_or_default(),
                        });
                    }
                }
            }
            if body.computed.iter().any(|c| c == name) {
                return Err(SchemaError::ComputedOnly { resource_type: owner.to_string(), path: here() });
            }
            if i == 0 && is_resource {
                let owners = self.owners_of(owner, name);
                if !owners.is_empty() {
                    return Err(SchemaError::OtherResourceType {
                        resource_type: owner.to_string(),
                        path: here(),
                        owners,
                        version: self.provider_version.clone(),
                    });
                }
            }
            return Err(SchemaError::UnknownArgument {
                resource_type: owner.to_string(),
                path: here(),
                version: self.provider_version.clone(),
            });
        }
        Ok(found)
    }

    /// [`Schema::check_body`] for an [`AttrPath`] (`versioning.enabled`, `ingress[0].from_port`,
    /// `tags["Name"]`), whose names do not say attribute or block: the kind is not checked, only
    /// that each name exists and can be set. Indexes are skipped; a `["key"]` ends the check.
    pub fn check_path(&self, resource_type: &str, path: &AttrPath) -> Result<(), SchemaError> {
        let Some(resource) = self.resource(resource_type) else {
            return Err(SchemaError::UnknownResourceType {
                resource_type: resource_type.to_string(),
                version: self.provider_version.clone(),
            });
        };
        let mut steps = Vec::new();
        let mut body = Some(resource);
        for seg in &path.0 {
            match seg {
                Seg::Index(_) => continue,
                Seg::Key(_) => break,
                Seg::Name(n) => {
                    let Some(b) = body else { break };
                    if b.blocks.contains_key(n) {
                        steps.push(Step::Block(n));
                        body = b.blocks.get(n).map(|nb| &nb.body);
                    } else {
                        steps.push(Step::Attribute(n));
                        match b.attributes.get(n) {
                            Some(a) if a.value_type.has_free_keys() => break,
                            Some(a) => body = a.fields.as_deref(),
                            None => break,
                        }
                    }
                }
            }
        }
        self.check_body(resource_type, &steps)
    }

    /// Whether the provider marks the attribute at `path` of a `resource_type` sensitive, or an
    /// attribute it lies inside (`aws_db_instance.password`, `aws_ssm_parameter.value`,
    /// `aws_mq_broker.user[0].password`, `aws_glue_connection.connection_properties["PASSWORD"]`,
    /// which is inside a sensitive map). Indexes are skipped. An attribute that merely holds one
    /// (the `user` block above) is not
    /// sensitive itself: see [`Schema::sensitive_within`]. Names decide nothing:
    /// `aws_instance.metadata_options.http_tokens` is not sensitive.
    pub fn is_sensitive(&self, resource_type: &str, path: &AttrPath) -> bool {
        let names = path_names(path);
        self.sensitive_attributes(resource_type).any(|s| s.len() <= names.len() && names[..s.len()] == *s)
    }

    /// The sensitive attributes at or below `path` of a `resource_type`, each as the names that lead
    /// to it from `path` (empty when `path` is itself sensitive or inside a sensitive attribute):
    /// what a value written at `path` must not carry. At `user` of `aws_mq_broker`, `[["password"]]`.
    pub fn sensitive_within(&self, resource_type: &str, path: &AttrPath) -> Vec<&[String]> {
        let names = path_names(path);
        self.sensitive_attributes(resource_type)
            .filter_map(|s| {
                let shared = s.iter().zip(&names).take_while(|(a, b)| a == b).count();
                match (shared == s.len(), shared == names.len()) {
                    (true, _) => Some(&s[s.len()..]),
                    (false, true) => Some(&s[shared..]),
                    (false, false) => None,
                }
            })
            .collect()
    }

    /// The paths of the attributes this version marks sensitive on a resource type, sorted.
    pub fn sensitive_attributes(&self, resource_type: &str) -> impl Iterator<Item = &[String]> {
        self.sensitive.get(resource_type).into_iter().flatten().map(Vec::as_slice)
    }

    /// Whether the data knows which attributes of `resource_type` are sensitive: false for the few
    /// types whose schema could not be read when the data was made (docs/provider-schema.md), for
    /// which [`Schema::is_sensitive`] answers false.
    pub fn sensitivity_known(&self, resource_type: &str) -> bool {
        !self.sensitivity_unknown.iter().any(|t| t == resource_type)
    }

    /// Resource types other than `resource_type` that have a top-level argument or block `name`,
    /// when one of them is one of its split resources (`aws_s3_bucket` → `aws_s3_bucket_*`): the
    /// answer to "a block of another resource type". At most three, the closest names first.
    fn owners_of(&self, resource_type: &str, name: &str) -> Vec<String> {
        let prefix = format!("{resource_type}_");
        let mut owners: Vec<&String> = self
            .resources
            .iter()
            .filter(|(t, r)| t.starts_with(&prefix) && (r.blocks.contains_key(name) || r.attributes.contains_key(name)))
            .map(|(t, _)| t)
            .collect();
        owners.sort_by_key(|t| (t.len(), t.as_str()));
        owners.into_iter().take(3).cloned().collect()
    }
}

impl BlockSchema {
    /// An argument (settable attribute) by name.
    pub fn argument(&self, name: &str) -> Option<&Attribute> {
        self.attributes.get(name)
    }

    /// A nested block by name.
    pub fn block(&self, name: &str) -> Option<&NestedBlock> {
        self.blocks.get(name)
    }

    /// Whether `name` is an attribute only the provider sets (such as `arn`).
    pub fn is_computed_only(&self, name: &str) -> bool {
        self.computed.iter().any(|c| c == name)
    }

    pub fn arguments(&self) -> impl Iterator<Item = (&str, &Attribute)> {
        self.attributes.iter().map(|(k, v)| (k.as_str(), v))
    }

    pub fn blocks(&self) -> impl Iterator<Item = (&str, &NestedBlock)> {
        self.blocks.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// The attributes only the provider sets, sorted.
    pub fn computed_only(&self) -> &[String] {
        &self.computed
    }
}

impl Attribute {
    pub fn value_type(&self) -> &ValueType {
        &self.value_type
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    pub fn is_required(&self) -> bool {
        self.mode == Mode::Required
    }

    /// Whether the provider fills the value in when the configuration leaves it out.
    pub fn is_computed(&self) -> bool {
        self.mode == Mode::OptionalComputed
    }

    /// The members of an object-typed value (or of each element of a collection of objects).
    pub fn fields(&self) -> Option<&BlockSchema> {
        self.fields.as_deref()
    }

    /// Whether the attribute may be written in block syntax: a list or set of objects (SDKv2's
    /// "attributes as blocks", such as `aws_security_group.ingress` and `aws_route_table.route`)
    /// or a single object. The data does not tell these apart from the plugin framework's nested
    /// attributes, which take only `name = value`; see docs/provider-schema.md. Nor does it say
    /// what an `any` value is: the bindings the data comes from type a nested schema too deep to
    /// generate as `any` (a web ACL rule's `statement`, a block in Terraform).
    pub fn takes_block_syntax(&self) -> bool {
        match &self.value_type {
            ValueType::Object | ValueType::Any => true,
            ValueType::List(e) | ValueType::Set(e) => **e == ValueType::Object,
            _ => false,
        }
    }
}

impl NestedBlock {
    pub fn nesting(&self) -> Nesting {
        self.nesting
    }

    /// 1 for a required block, else 0 (larger minimums are not in the data).
    pub fn min_items(&self) -> u32 {
        self.min
    }

    /// `Some(1)` for a block written at most once, `None` when the data does not bound it.
    pub fn max_items(&self) -> Option<u32> {
        match self.nesting {
            Nesting::Single => Some(1),
            _ => self.max,
        }
    }

    pub fn body(&self) -> &BlockSchema {
        &self.body
    }
}

impl ValueType {
    /// Whether a value's inner names are keys chosen by the user, not schema names.
    pub fn has_free_keys(&self) -> bool {
        matches!(self, ValueType::Map(_) | ValueType::Any)
    }

    /// Whether a JSON value (a literal the patch would write) can be converted to this type the
    /// way Terraform converts: strings, numbers and bools into each other where the text allows,
    /// arrays into lists and sets, objects into maps and objects. Null fits every type.
    pub fn admits(&self, value: &serde_json::Value) -> bool {
        use serde_json::Value as J;
        match (self, value) {
            (_, J::Null) | (ValueType::Any, _) => true,
            (ValueType::String, J::String(_) | J::Number(_) | J::Bool(_)) => true,
            (ValueType::Number, J::Number(_)) => true,
            (ValueType::Number, J::String(s)) => s.trim().parse::<f64>().is_ok(),
            (ValueType::Bool, J::Bool(_)) => true,
            (ValueType::Bool, J::String(s)) => s == "true" || s == "false",
            (ValueType::List(e) | ValueType::Set(e), J::Array(items)) => items.iter().all(|i| e.admits(i)),
            (ValueType::Map(e), J::Object(m)) => m.values().all(|i| e.admits(i)),
            (ValueType::Object, J::Object(_)) => true,
            _ => false,
        }
    }
}

impl fmt::Display for ValueType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ValueType::String => f.write_str("string"),
            ValueType::Number => f.write_str("number"),
            ValueType::Bool => f.write_str("bool"),
            ValueType::Any => f.write_str("any"),
            ValueType::Object => f.write_str("object"),
            ValueType::List(e) => write!(f, "list({e})"),
            ValueType::Set(e) => write!(f, "set({e})"),
            ValueType::Map(e) => write!(f, "map({e})"),
        }
    }
}

/// A value type the schema's data spells in a way driftback does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown value type {0:?}")]
pub struct UnknownValueType(String);

impl TryFrom<String> for ValueType {
    type Error = UnknownValueType;

    fn try_from(text: String) -> Result<Self, UnknownValueType> {
        ValueType::parse(&text)
    }
}

impl ValueType {
    fn parse(text: &str) -> Result<ValueType, UnknownValueType> {
        let t = text.trim();
        let inner = |prefix: &str| t.strip_prefix(prefix).and_then(|r| r.strip_suffix(')')).map(ValueType::parse);
        if let Some(e) = inner("list(") {
            return Ok(ValueType::List(Box::new(e?)));
        }
        if let Some(e) = inner("set(") {
            return Ok(ValueType::Set(Box::new(e?)));
        }
        if let Some(e) = inner("map(") {
            return Ok(ValueType::Map(Box::new(e?)));
        }
        match t {
            "string" => Ok(ValueType::String),
            "number" => Ok(ValueType::Number),
            "bool" => Ok(ValueType::Bool),
            "any" => Ok(ValueType::Any),
            "object" => Ok(ValueType::Object),
            _ => Err(UnknownValueType(text.to_string())),
        }
    }
}

/// The `aws` provider's version constraint in the `terraform { required_providers { aws = {...} } }`
/// blocks of a module's files (the root module's, to select a schema), all of them joined with `, `
/// as Terraform intersects them. `None` when no file states one.
pub fn required_aws_version<'a>(bodies: impl IntoIterator<Item = &'a Body>) -> Option<String> {
    let mut found = Vec::new();
    for body in bodies {
        for rp in body.get_blocks("terraform").flat_map(|t| t.body.get_blocks("required_providers")) {
            let Some(Expression::Object(aws)) = rp.body.get_attribute("aws").map(|a| &a.value) else {
                continue;
            };
            for (key, value) in aws.iter() {
                let is_version = match key {
                    ObjectKey::Ident(i) => i.as_str() == "version",
                    ObjectKey::Expression(Expression::String(s)) => s.as_str() == "version",
                    ObjectKey::Expression(_) => false,
                };
                if let (true, Expression::String(v)) = (is_version, value.expr()) {
                    found.push(v.as_str().trim().to_string());
                }
            }
        }
    }
    (!found.is_empty()).then(|| found.join(", "))
}

/// The version `.terraform.lock.hcl` locks `registry.terraform.io/hashicorp/aws` to.
pub fn locked_aws_version(lock_file: &str) -> Option<String> {
    let body: Body = lock_file.parse().ok()?;
    body.get_blocks("provider")
        .find(|b| {
            b.labels.first().is_some_and(|l| {
                let name = match l {
                    BlockLabel::String(s) => s.as_str(),
                    BlockLabel::Ident(i) => i.as_str(),
                };
                name == "registry.terraform.io/hashicorp/aws"
            })
        })
        .and_then(|b| match b.body.get_attribute("version").map(|a| &a.value) {
            Some(Expression::String(v)) => Some(v.as_str().to_string()),
            _ => None,
        })
}

fn load(index: usize) -> Result<&'static Schema, SchemaError> {
    let (Some(cell), Some((version, bytes))) = (LOADED.get(index), BUNDLED.get(index)) else {
        return Err(SchemaError::NoVersion { constraint: String::new(), bundled: bundled_list() });
    };
    cell.get_or_init(|| decode(version, bytes)).as_ref().map_err(Clone::clone)
}

fn decode(version: &str, bytes: &[u8]) -> Result<Schema, SchemaError> {
    let data = |reason: String| SchemaError::Data { version: version.to_string(), reason };
    let mut json = Vec::new();
    flate2::read::GzDecoder::new(bytes).read_to_end(&mut json).map_err(|e| data(e.to_string()))?;
    let mut schema: Schema = serde_json::from_slice(&json).map_err(|e| data(e.to_string()))?;
    if schema.provider_version != version {
        return Err(data(format!("the file holds provider {}", schema.provider_version)));
    }
    (schema.sensitive, schema.sensitivity_unknown) =
        sensitive_of(SENSITIVE, version).map_err(|e| data(e.to_string()))?;
    Ok(schema)
}

/// The rows of the sensitive-attribute table (`aws-sensitive.tsv`) that hold for `version`, per
/// resource type, and the resource types its header says were not read for that version.
#[allow(clippy::type_complexity)]
fn sensitive_of(
    table: &str,
    version: &str,
) -> Result<(BTreeMap<String, Vec<Vec<String>>>, Vec<String>), SensitiveTableError> {
    let bad = |n: usize, why: &'static str| SensitiveTableError::Line { line: n + 1, why };
    let mut out: BTreeMap<String, Vec<Vec<String>>> = BTreeMap::new();
    let mut unknown = Vec::new();
    let mut versions_seen = false;
    let mut columns = false;
    for (n, line) in table.lines().enumerate() {
        if let Some(comment) = line.strip_prefix('#') {
            // `# 6.25.0: tag ..., commit ...` names a version the table covers;
            // `# 6.25.0: not read (...): aws_x aws_y` the types it could not read.
            if let Some(rest) = comment.trim_start().strip_prefix(version).and_then(|r| r.strip_prefix(": ")) {
                versions_seen = true;
                if let Some(types) = rest.strip_prefix("not read") {
                    let types = types.rsplit_once("):").map_or(types, |(_, t)| t);
                    unknown.extend(types.split_whitespace().map(str::to_string));
                }
            }
            continue;
        }
        if line.trim().is_empty() {
            continue;
        }
        if !columns {
            if line != "resource_type\tpath\tversions" {
                return Err(bad(n, "the column line `resource_type<TAB>path<TAB>versions` expected"));
            }
            columns = true;
            continue;
        }
        let fields: Vec<&str> = line.split('\t').collect();
        let [resource_type, path, versions] = fields[..] else {
            return Err(bad(n, "three tab-separated fields expected"));
        };
        if !resource_type.starts_with("aws_") || path.is_empty() || path.split('.').any(str::is_empty) {
            return Err(bad(n, "a resource type and a dotted attribute path expected"));
        }
        if versions.split(',').any(|v| v == version) {
            out.entry(resource_type.to_string()).or_default().push(path.split('.').map(str::to_string).collect());
        }
    }
    if !versions_seen {
        return Err(SensitiveTableError::Version(version.to_string()));
    }
    Ok((out, unknown))
}

/// Why the sensitive-attribute table cannot be read for a version.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum SensitiveTableError {
    #[error("aws-sensitive.tsv line {line}: {why}; regenerate it (docs/provider-schema.md)")]
    Line { line: usize, why: &'static str },
    #[error("aws-sensitive.tsv does not cover provider {0}; regenerate it (docs/provider-schema.md)")]
    Version(String),
}

/// The names of a path, without its indexes; a `["key"]` is a name too (a member of a map).
fn path_names(path: &AttrPath) -> Vec<&str> {
    path.0
        .iter()
        .filter_map(|seg| match seg {
            Seg::Name(n) | Seg::Key(n) => Some(n.as_str()),
            Seg::Index(_) => None,
        })
        .collect()
}

fn bundled_list() -> String {
    Schema::bundled_versions().collect::<Vec<_>>().join(", ")
}

// ---------- provider versions and constraints ----------

/// A provider requirement's version constraint, or why it is none.
fn parse_constraint(text: &str) -> Result<Constraints, SchemaError> {
    Constraints::parse(text).map_err(|e| SchemaError::BadConstraint {
        constraint: text.to_string(),
        reason: match e {
            VersionError::Constraint { reason, .. } => reason,
            other => other.to_string(),
        },
    })
}

fn newest_satisfying(constraints: &Constraints) -> Option<usize> {
    BUNDLED.iter().enumerate().rev().find_map(|(i, (v, _))| {
        let v = Version::parse(v).ok()?;
        constraints.allows_provider(&v).then_some(i)
    })
}

/// The bundled version nearest `wanted`: the newest of its major version, else the oldest newer
/// one, else the newest.
fn nearest(wanted: &Version) -> usize {
    let versions: Vec<(usize, Version)> =
        BUNDLED.iter().enumerate().filter_map(|(i, (v, _))| Version::parse(v).ok().map(|v| (i, v))).collect();
    if let Some((i, _)) = versions.iter().rev().find(|(_, v)| v.numbers()[0] == wanted.numbers()[0]) {
        return *i;
    }
    if let Some((i, _)) = versions.iter().find(|(_, v)| v.numbers() > wanted.numbers()) {
        return *i;
    }
    BUNDLED.len() - 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allows(constraint: &str, version: &str) -> bool {
        let constraints = parse_constraint(constraint).expect("constraint");
        constraints.allows_provider(&Version::parse(version).expect("version"))
    }

    #[test]
    fn constraints_follow_terraform() {
        assert!(allows("~> 5.0", "5.100.0"));
        assert!(!allows("~> 5.0", "6.0.0"));
        assert!(allows("~> 5.31.0", "5.31.9"));
        assert!(!allows("~> 5.31.0", "5.32.0"));
        assert!(allows("~> 5", "5.100.0"));
        assert!(!allows("~> 5", "6.25.0"));
        assert!(allows(">= 4.0, < 6.0", "5.100.0"));
        assert!(!allows(">= 4.0, < 6.0", "6.25.0"));
        assert!(allows("5.100.0", "5.100.0"));
        assert!(allows("!= 5.99.0", "5.100.0"));
        assert!(allows("~> 5.99", "5.100.0"));
        assert!(!allows("< 5.99.1", "5.100.0"));
        assert!(parse_constraint("~> five").is_err());
        assert!(parse_constraint("").is_err());
    }

    #[test]
    fn provider_versions_from_the_configuration_and_the_lock_file() {
        let main: Body = r#"
terraform {
  required_version = ">= 1.5"
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = "~> 5.40"
    }
    random = { source = "hashicorp/random", version = "~> 3.0" }
  }
}
"#
        .parse()
        .expect("parses");
        let other: Body = r#"terraform {
  required_providers {
    aws = { "version" = ">= 5.0" }
  }
}"#
        .parse()
        .expect("parses");
        assert_eq!(required_aws_version([&main]).as_deref(), Some("~> 5.40"));
        assert_eq!(required_aws_version([&main, &other]).as_deref(), Some("~> 5.40, >= 5.0"));
        assert_eq!(required_aws_version([&Body::new()]), None);
        let lock = r#"
# This file is maintained automatically by "terraform init".
provider "registry.terraform.io/hashicorp/random" {
  version = "3.6.0"
}
provider "registry.terraform.io/hashicorp/aws" {
  version     = "5.31.0"
  constraints = "~> 5.0"
  hashes = [
    "h1:abc=",
  ]
}
"#;
        assert_eq!(locked_aws_version(lock).as_deref(), Some("5.31.0"));
        assert_eq!(locked_aws_version("provider \"x\" {}"), None);
    }

    #[test]
    fn value_types_parse_and_print() {
        for t in ["string", "list(string)", "set(object)", "map(map(string))", "list(list(string))"] {
            assert_eq!(ValueType::parse(t).expect(t).to_string(), t);
        }
        assert!(ValueType::parse("tuple(string)").is_err());
    }

    fn path(text: &str) -> AttrPath {
        AttrPath::parse(text).expect(text)
    }

    #[test]
    fn sensitive_attributes_come_from_the_provider_not_from_names() {
        for version in Schema::bundled_versions() {
            let schema = Schema::version(version).expect("bundled");
            let sensitive = |t: &str, p: &str| schema.is_sensitive(t, &path(p));
            assert!(sensitive("aws_db_instance", "password"), "{version}");
            assert!(sensitive("aws_ssm_parameter", "value"), "{version}");
            assert!(sensitive("aws_rds_cluster", "master_password"), "{version}");
            assert!(sensitive("aws_elasticache_replication_group", "auth_token"), "{version}");
            assert!(sensitive("aws_secretsmanager_secret_version", "secret_string"), "{version}");
            assert!(sensitive("aws_mq_broker", "user[0].password"), "{version}");
            assert!(sensitive("aws_lb_listener", "default_action[0].authenticate_oidc[0].client_secret"), "{version}");
            // Inside a sensitive map: every key of it.
            assert!(sensitive("aws_glue_connection", r#"connection_properties["PASSWORD"]"#), "{version}");
            // Sensitive without a secret's name: the VPN's router configuration.
            assert!(sensitive("aws_vpn_connection", "customer_gateway_configuration"), "{version}");
            // Names like secrets, values that are not.
            assert!(!sensitive("aws_instance", "metadata_options.http_tokens"), "{version}");
            assert!(!sensitive("aws_instance", "metadata_options[0].http_tokens"), "{version}");
            assert!(!sensitive("aws_launch_template", "metadata_options.http_tokens"), "{version}");
            assert!(!sensitive("aws_cognito_user_pool_client", "access_token_validity"), "{version}");
            assert!(!sensitive("aws_db_instance", "manage_master_user_password"), "{version}");
            assert!(!sensitive("aws_secretsmanager_secret", "recovery_window_in_days"), "{version}");
            assert!(!sensitive("aws_ecs_task_definition", "container_definitions"), "{version}");
            // A block that holds a sensitive attribute is not sensitive itself.
            assert!(!sensitive("aws_mq_broker", "user"), "{version}");
            assert!(!sensitive("aws_mq_broker", "user[0].username"), "{version}");
            assert!(!sensitive("aws_not_a_type", "password"), "{version}");
        }
        // Per version: OpsWorks is gone from 6.x, the transfer host key is new in it.
        let (v5, v6) = (Schema::version("5.100.0").expect("5"), Schema::version("6.25.0").expect("6"));
        assert!(v5.is_sensitive("aws_opsworks_rds_db_instance", &path("db_password")));
        assert!(!v6.is_sensitive("aws_opsworks_rds_db_instance", &path("db_password")));
        assert!(v6.is_sensitive("aws_transfer_host_key", &path("host_key_body")));
        assert!(!v5.is_sensitive("aws_transfer_host_key", &path("host_key_body")));
    }

    #[test]
    fn sensitive_within_a_value_names_the_rest_of_the_path() {
        let schema = Schema::version("6.25.0").expect("bundled");
        let within = |t: &str, p: &str| -> Vec<String> {
            schema.sensitive_within(t, &path(p)).iter().map(|rest| rest.join(".")).collect()
        };
        assert_eq!(within("aws_mq_broker", "user"), ["password"]);
        assert_eq!(within("aws_mq_broker", "user[2]"), ["password"]);
        assert_eq!(within("aws_mq_broker", "user[0].password"), [""]);
        assert!(within("aws_mq_broker", "user[0].username").is_empty());
        assert_eq!(
            within("aws_opensearch_domain", "advanced_security_options"),
            ["master_user_options.master_user_password"]
        );
        assert!(within("aws_instance", "metadata_options").is_empty());
        assert!(schema.sensitivity_known("aws_instance"));
    }

    #[test]
    fn every_sensitive_path_is_in_the_schema_of_its_versions() {
        let mut rows = 0;
        for version in Schema::bundled_versions() {
            let schema = Schema::version(version).expect("bundled");
            for (resource_type, paths) in &schema.sensitive {
                for p in paths {
                    rows += 1;
                    let at = AttrPath(p.iter().map(|n| Seg::Name(n.clone())).collect());
                    match schema.check_path(resource_type, &at) {
                        Ok(()) | Err(SchemaError::ComputedOnly { .. }) => {}
                        Err(e) => panic!("{version}: {resource_type}.{}: {e}", p.join(".")),
                    }
                }
            }
        }
        assert!(rows > 400, "{rows} sensitive paths over the bundled versions");
    }

    #[test]
    fn a_bad_sensitive_table_is_an_error_naming_the_line() {
        let good = "# 6.25.0: tag v6.25.0, commit abc\n# 6.25.0: not read (too large): aws_wafv2_web_acl aws_x\n\
                    resource_type\tpath\tversions\naws_db_instance\tpassword\t5.100.0,6.25.0\n\
                    aws_old\tsecret\t5.100.0\n";
        let (paths, unknown) = sensitive_of(good, "6.25.0").expect("parses");
        assert_eq!(paths.keys().collect::<Vec<_>>(), ["aws_db_instance"]);
        assert_eq!(unknown, ["aws_wafv2_web_acl", "aws_x"]);
        let e = sensitive_of(good, "5.100.0").expect_err("5.100.0 is not covered").to_string();
        assert!(e.contains("does not cover provider 5.100.0"), "{e}");
        let e = sensitive_of("# 6.25.0: x\nresource_type\tpath\n", "6.25.0").expect_err("columns").to_string();
        assert!(e.contains("line 2"), "{e}");
        let e = sensitive_of("# 6.25.0: x\nresource_type\tpath\tversions\naws_a\tb\n", "6.25.0")
            .expect_err("fields")
            .to_string();
        assert!(e.contains("line 3") && e.contains("three"), "{e}");
        let e = sensitive_of("# 6.25.0: x\nresource_type\tpath\tversions\naws_a\tb..c\t6.25.0\n", "6.25.0")
            .expect_err("path")
            .to_string();
        assert!(e.contains("line 3"), "{e}");
    }
}
