//! The recipe catalog format, and its checks at load time.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use driftback_events::ApiEvent;

use crate::calls::{Calls, NotLogged};
use crate::extract::event_value;

/// The generated catalog (`scripts/generate-recipes.py`): the long tail of update calls, tried after
/// the hand-written recipes.
const GENERATED: &str = include_str!("../generated/catalog.toml");

/// The built-in catalog: one file per service under `crates/recipes/catalog/`, in this order
/// (recipes of one source and event are tried in file order). A test checks that every file of that
/// directory is listed here.
const BUILTIN: &[(&str, &str)] = &[
    ("ec2.toml", include_str!("../catalog/ec2.toml")),
    ("s3.toml", include_str!("../catalog/s3.toml")),
    ("autoscaling.toml", include_str!("../catalog/autoscaling.toml")),
    ("monitoring.toml", include_str!("../catalog/monitoring.toml")),
    ("lambda.toml", include_str!("../catalog/lambda.toml")),
    ("sqs.toml", include_str!("../catalog/sqs.toml")),
    ("sns.toml", include_str!("../catalog/sns.toml")),
    ("iam.toml", include_str!("../catalog/iam.toml")),
    ("dynamodb.toml", include_str!("../catalog/dynamodb.toml")),
    ("logs.toml", include_str!("../catalog/logs.toml")),
    ("rds.toml", include_str!("../catalog/rds.toml")),
    ("elasticloadbalancing.toml", include_str!("../catalog/elasticloadbalancing.toml")),
    ("application-autoscaling.toml", include_str!("../catalog/application-autoscaling.toml")),
    ("ecs.toml", include_str!("../catalog/ecs.toml")),
    ("kms.toml", include_str!("../catalog/kms.toml")),
    ("route53.toml", include_str!("../catalog/route53.toml")),
    ("eks.toml", include_str!("../catalog/eks.toml")),
    ("elasticache.toml", include_str!("../catalog/elasticache.toml")),
    ("apigateway.toml", include_str!("../catalog/apigateway.toml")),
    ("cloudfront.toml", include_str!("../catalog/cloudfront.toml")),
    ("secretsmanager.toml", include_str!("../catalog/secretsmanager.toml")),
    ("ssm.toml", include_str!("../catalog/ssm.toml")),
    ("wafv2.toml", include_str!("../catalog/wafv2.toml")),
    ("cloudtrail.toml", include_str!("../catalog/cloudtrail.toml")),
    ("config.toml", include_str!("../catalog/config.toml")),
    ("accessanalyzer.toml", include_str!("../catalog/accessanalyzer.toml")),
    ("guardduty.toml", include_str!("../catalog/guardduty.toml")),
    ("acm.toml", include_str!("../catalog/acm.toml")),
    ("ecr.toml", include_str!("../catalog/ecr.toml")),
    ("states.toml", include_str!("../catalog/states.toml")),
    ("kinesis.toml", include_str!("../catalog/kinesis.toml")),
];

#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    #[error("{origin}: {message}")]
    Syntax { origin: String, message: String },
    #[error("{origin}: recipe {id:?}: {message}")]
    Invalid { origin: String, id: String, message: String },
    #[error(
        "`[recipes] disabled` entry {entry:?} names no recipe id and no call a recipe handles; write a recipe id \
         (`driftback catalog --json` lists them) or a call as `<eventSource>:<eventName>`, for example \
         `ec2.amazonaws.com:ModifyInstanceAttribute`"
    )]
    UnknownDisabled { entry: String },
}

/// A set of recipes, in the order they are tried.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Catalog {
    #[serde(rename = "recipe", default)]
    pub recipes: Vec<Recipe>,
}

/// One kind of API call and the edits it implies.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Recipe {
    pub id: String,
    /// From the generated catalog (mapped from the API models, not written by hand): when it cannot
    /// plan a call, the call is left to the agent as if no recipe knew it.
    #[serde(skip)]
    pub generated: bool,
    /// `eventSource`, e.g. `ec2.amazonaws.com`.
    pub source: String,
    /// Event names without version suffix.
    pub events: Vec<String>,
    /// Resource types the changed object may be managed as; `*` for any.
    pub types: Vec<String>,
    /// State attributes compared with the identifier (default: `id`, `arn`).
    #[serde(default)]
    pub lookup: Vec<String>,
    /// Event path of the identifier (default: the change set's resource).
    #[serde(default)]
    pub key: Option<String>,
    /// The rest of the call's identity: state attributes that must each equal a request value for
    /// a resource to be the one the call changes (a DNS record by zone, name, type and set
    /// identifier, where the zone alone finds every record in it). Learned recipes carry it.
    #[serde(default)]
    pub identity: Vec<IdentityRule>,
    /// Event path of a list (or one object) of items that each change one resource: `key` and the
    /// rules' paths are then read inside each item (`ModifySecurityGroupRules` on several rules).
    #[serde(default)]
    pub each: Option<String>,
    /// The call sends JSON Patch operations (API Gateway's REST API `Update*` calls): they are
    /// read as items of members, as `each` reads a list (see [`PatchRule`]).
    #[serde(default)]
    pub patch: Option<PatchRule>,
    /// The call re-sends the resource's whole configuration, changed or not (the console's form for
    /// an Auto Scaling group sends min, max and desired together): an argument the configuration
    /// leaves to the provider (optional and computed in its schema) is then not pinned in the code.
    #[serde(default)]
    pub resends_whole_config: bool,
    /// Use this recipe only when the request has every one of these paths (a call whose members
    /// belong to different resources: a queue's redrive policy managed by its own resource).
    #[serde(default)]
    pub if_request_has: Vec<String>,
    /// Use this recipe only when the request has none of these paths (SSM's `DeleteDocument` deletes
    /// the document only without a `documentVersion` or `versionName`; with one, one version).
    #[serde(default)]
    pub if_request_lacks: Vec<String>,
    /// Use this recipe only when the request has these values (with `each`: every item has them),
    /// such as a batch change's `action = "UPSERT"`.
    #[serde(default)]
    pub if_request_is: BTreeMap<String, String>,
    /// Use this recipe only when the state has a resource of this type whose attribute equals the identifier.
    #[serde(default)]
    pub if_state_has: Option<StateCondition>,
    #[serde(default)]
    pub set: Vec<SetRule>,
    /// Request paths beside the `set` rules' that change no configuration (a client token, a flag
    /// that says when to apply): not reported as unmapped.
    #[serde(default)]
    pub ignore: Vec<String>,
    /// An attribute named by one request field and valued by another (SNS `SetTopicAttributes`).
    #[serde(default)]
    pub set_named: Option<SetNamedRule>,
    #[serde(default)]
    pub remove: Vec<String>,
    /// Attributes a value makes meaningless: removed when the request sets `from` to `equals`
    /// (on-demand billing has no provisioned capacity).
    #[serde(default)]
    pub remove_when: Vec<RemoveWhenRule>,
    #[serde(default)]
    pub map_merge: Vec<MapRule>,
    #[serde(default)]
    pub map_remove: Vec<MapRule>,
    #[serde(default)]
    pub map_replace: Vec<MapRule>,
    /// A list attribute the call changes by delta (EKS `UpdateClusterConfig`'s
    /// `logging.clusterLogging`: log types each turned on or off): the state's list with the items'
    /// values added or removed.
    #[serde(default)]
    pub list_delta: Vec<ListDeltaRule>,
    #[serde(default)]
    pub block_add: Vec<BlockRule>,
    #[serde(default)]
    pub block_remove: Vec<BlockRule>,
    /// Every nested block of a type replaced by one per item (a listener's default actions).
    #[serde(default)]
    pub block_replace: Vec<BlockRule>,
    /// Attributes from a list of key/value items (`[{"key": "idle_timeout.timeout_seconds",
    /// "value": "120"}]`): each known key sets its path; an unknown key refuses the recipe by name.
    #[serde(default)]
    pub set_keyed: Option<SetKeyedRule>,
    #[serde(default)]
    pub delete: bool,
    /// A run-time operation with no configuration counterpart (stop, start, reboot, purge): no drift.
    #[serde(default)]
    pub no_op: bool,
    #[serde(default)]
    pub create: Option<CreateRule>,
    /// Add a companion resource (an attachment) with an import block.
    #[serde(default)]
    pub attach: Option<AttachRule>,
    /// When the recipe's resource (its first type) does not exist but the resource it belongs to
    /// does (created by this change set, or managed without a key), write it as a new resource beside
    /// that one, with what the call sets and an import block: an S3 bucket's split resources.
    #[serde(default)]
    pub adopt: Option<AdoptRule>,
    /// Add one standalone rule resource per item (security group rules).
    #[serde(default)]
    pub rules: Option<RulesRule>,
    #[serde(default)]
    pub rules_remove: Option<RulesRemoveRule>,
    /// Add one `aws_security_group_rule` per source of each permission (the provider's older
    /// standalone-rule style), with the provider's composite import id.
    #[serde(default)]
    pub permission_rules: Option<PermissionRulesRule>,
    /// One statement of a resource's policy document added or removed by label (SQS's
    /// `AddPermission`, `RemovePermission`); the rest of the document is kept.
    #[serde(default)]
    pub statement: Option<StatementRule>,
    /// Nested blocks known by a key attribute (S3 lifecycle rules by `id`): each request item sets
    /// attributes of the block whose key matches.
    #[serde(default)]
    pub keyed_blocks: Option<KeyedBlocksRule>,
    /// The call sends the resource's whole configuration as one document (CloudFront's
    /// `UpdateDistribution`): read against the state member by member, only what differs is
    /// written, and a member that names no attribute refuses the call (see `document.rs`).
    #[serde(default)]
    pub whole: Option<WholeRule>,
    /// The call names what an earlier call of the same change set sent (`SetDefaultPolicyVersion`
    /// names a version `CreatePolicyVersion` made): the rules also read that call's request.
    #[serde(default)]
    pub from_earlier: Option<EarlierRule>,
}

/// See [`Recipe::from_earlier`].
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EarlierRule {
    /// Event names of the earlier call.
    pub events: Vec<String>,
    /// Earlier call's path -> this call's path that must hold the same value
    /// (`"response.policyVersion.versionId" = "versionId"`).
    #[serde(rename = "match")]
    pub matching: BTreeMap<String, String>,
}

/// See [`Recipe::whole`].
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WholeRule {
    /// Event path of the document.
    pub from: String,
    /// Member -> attribute where the snake-case convention does not hold; `parent.member` applies
    /// inside that parent only (`origins.id` is an origin's `origin_id`).
    #[serde(default)]
    pub renames: BTreeMap<String, String>,
    /// Members that configure nothing the resource has an argument for (`callerReference`), as
    /// `member` or `parent.member`.
    #[serde(default)]
    pub skip: Vec<String>,
    /// Objects whose flag says whether their block exists at all (`logging = "enabled"`: logging
    /// turned off is no `logging_config` block): a block turned off that the state has refuses
    /// the document (a removal is not written from a flag), one off that it lacks is nothing.
    #[serde(default)]
    pub presence: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyedBlocksRule {
    /// Nested block type (`rule`).
    pub block: String,
    /// The block attribute that identifies it (`id`).
    pub key_attr: String,
    /// The request's list of items (a lone object counts as one).
    pub items: String,
    /// The item field matched against `key_attr` (`ID`).
    pub key: String,
    /// Paths inside the block, from item fields.
    pub set: Vec<SetRule>,
}

/// One part of a call's identity: the state attribute `attr` equals the event value at `from`
/// (strings compared without a trailing dot, as DNS names are written both ways).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IdentityRule {
    pub attr: String,
    pub from: String,
}

/// See [`Recipe::adopt`].
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdoptRule {
    /// The type of the resource it belongs to (`aws_s3_bucket`), found by the same identifier.
    pub beside: String,
    /// The attribute that names that resource (`bucket`), written as a reference to it.
    pub link: String,
    /// The block of that resource that holds the same configuration inline (`versioning`): when its
    /// code has it, the repository keeps the older inline style and the inline recipe follows.
    #[serde(default)]
    pub inline: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StateCondition {
    #[serde(rename = "type")]
    pub rtype: String,
    pub attr: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetRule {
    /// Attribute path in the resource (`versioning.enabled`).
    pub path: String,
    /// Event path of the value; the rule is skipped when it is absent.
    pub from: String,
    #[serde(default)]
    pub convert: Option<Convert>,
    /// Value translation (`Enabled` -> `true`).
    #[serde(default)]
    pub map: BTreeMap<String, serde_json::Value>,
    /// The value the call sets whenever `from` is present (a call whose name says it:
    /// `MonitorInstances` turns detailed monitoring on).
    #[serde(default)]
    pub value: Option<serde_json::Value>,
    /// The provider's default for the argument (its documentation): a new block leaves the
    /// argument out when the call sends this value.
    #[serde(default)]
    pub default: Option<serde_json::Value>,
    /// When the call leaves `from` out, the argument is removed where the configuration sets it:
    /// one of several exclusive arguments (a route's target) replaced by another.
    #[serde(default)]
    pub unset_when_absent: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Convert {
    Number,
    Bool,
    String,
    /// A JSON document given as text (a queue's redrive policy): where the code builds it with
    /// `jsonencode({...})` from other resources, only the members that changed are edited.
    Json,
    /// A list of `{name, value}` pairs as a map (CloudWatch alarm dimensions).
    NameValueMap,
    /// A list of `{key, value}` pairs as a map (tags as most create calls send them).
    KeyValueMap,
    /// DNS record values as Route 53 sends them: a TXT value's wire quotes (`"v=spf1 ..."`) are
    /// not part of what Terraform writes; strings split into 255-character parts (`"a" "b"`)
    /// are joined as the provider writes them (`a""b`).
    DnsText,
    /// A DNS name as Terraform writes it: without the final dot Route 53 logs.
    DnsName,
}

/// See [`Recipe::set_keyed`].
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetKeyedRule {
    /// The request's list of items.
    pub items: String,
    /// The item field holding the key, and the one holding the value.
    pub key: String,
    pub value: String,
    /// Key -> resource attribute path, optionally suffixed `:number` or `:bool`.
    pub paths: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetNamedRule {
    pub name: String,
    pub value: String,
    /// Request attribute name -> resource attribute path.
    pub paths: BTreeMap<String, String>,
}

/// How deep below `responseElements` an identifier is looked for (`tableDescription.tableName` is
/// two steps down).
const RESPONSE_DEPTH: usize = 3;

impl Recipe {
    /// The identifier of the resource the call changes, read where the API logs it: the `key` path
    /// (its first alternative present, in `requestParameters` unless it says `response.`); else
    /// the same member in `responseElements` (DynamoDB's console `UpdateTable` names its table
    /// only in `tableDescription.tableName`), nearest the top first; else the one ARN of this
    /// service in the record's `resources[]`. Only text counts. `None` without a `key`.
    pub fn identifier(&self, event: &ApiEvent) -> Option<String> {
        let key = self.key.as_deref()?;
        let text = |v: Value| match v {
            Value::String(s) if !s.is_empty() => Some(s),
            _ => None,
        };
        if let Some(found) = event_value(event, key).and_then(text) {
            return Some(found);
        }
        let members: Vec<&str> = key.split('|').map(|alternative| member_name(alternative.trim())).collect();
        if let Some(found) = members.iter().find_map(|m| shallowest(&event.response, m, RESPONSE_DEPTH)) {
            return Some(found);
        }
        resource_arn(event)
    }

    /// What the recipe's resource is called in a sentence: `dynamodb table` for
    /// `aws_dynamodb_table`, `resource` for any type.
    pub fn resource_noun(&self) -> String {
        match self.types.first().map(String::as_str) {
            None | Some("*") => "resource".to_string(),
            Some(rtype) => rtype.strip_prefix("aws_").unwrap_or(rtype).replace('_', " "),
        }
    }

    /// The request paths the recipe reads values or names from (its `set` rules, key, identity,
    /// `ignore` and whole document), each form of an `a | b` path on its own: a member none of them
    /// covers is one the recipe would drop.
    pub(crate) fn read_paths(&self) -> Vec<&str> {
        self.set
            .iter()
            .map(|r| r.from.as_str())
            .chain(self.key.as_deref())
            .chain(self.identity.iter().map(|rule| rule.from.as_str()))
            .chain(self.ignore.iter().map(String::as_str))
            .chain(self.whole.as_ref().map(|w| w.from.as_str()))
            .flat_map(|p| p.split('|').map(str::trim))
            .collect()
    }

    /// The kinds of action the recipe takes (`set`, `map_merge`, `delete`, ...), in a fixed order.
    pub fn actions(&self) -> Vec<&'static str> {
        [
            ("set", !self.set.is_empty()),
            ("set_named", self.set_named.is_some()),
            ("remove", !self.remove.is_empty()),
            ("map_merge", !self.map_merge.is_empty()),
            ("map_remove", !self.map_remove.is_empty()),
            ("map_replace", !self.map_replace.is_empty()),
            ("list_delta", !self.list_delta.is_empty()),
            ("block_add", !self.block_add.is_empty()),
            ("block_remove", !self.block_remove.is_empty()),
            ("block_replace", !self.block_replace.is_empty()),
            ("set_keyed", self.set_keyed.is_some()),
            ("delete", self.delete),
            ("no_op", self.no_op),
            ("create", self.create.is_some()),
            ("attach", self.attach.is_some()),
            ("adopt", self.adopt.is_some()),
            ("rules", self.rules.is_some()),
            ("rules_remove", self.rules_remove.is_some()),
            ("permission_rules", self.permission_rules.is_some()),
            ("statement", self.statement.is_some()),
            ("keyed_blocks", self.keyed_blocks.is_some()),
            ("whole", self.whole.is_some()),
        ]
        .into_iter()
        .filter_map(|(name, present)| present.then_some(name))
        .collect()
    }
}

/// See [`Recipe::remove_when`].
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RemoveWhenRule {
    /// Event path of the value.
    pub from: String,
    /// The value that makes the paths meaningless; `*`: any value (an argument that conflicts
    /// with the one the call sets).
    pub equals: String,
    /// Attribute paths removed (those the configuration sets).
    pub paths: Vec<String>,
}

/// JSON Patch operations read as request members. Each `add` or `replace` operation's path
/// (a JSON Pointer, `~1` standing for `/`) becomes nested members holding its value:
/// `/accessLogSettings/format` is `accessLogSettings.format`. With `group`, the path's first
/// segments name the item the rest belongs to (a stage's method settings,
/// `/{resource path}/{method}/throttling/rateLimit`), joined by `/` into the member `key_as`:
/// one item per group, each read as `each` reads its items.
///
/// The recipe applies only when every operation is an `add` or `replace` whose path has one of
/// `depths` segments: any other form of the call (a `remove`, a `copy`, a path of another shape)
/// is another recipe's, or none's. Every member an item ends with must be read by the recipe.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PatchRule {
    /// Event path of the operations (`patchOperations|updateStageInput.patchOperations`).
    pub from: String,
    /// How many segments an operation's path may have.
    pub depths: Vec<usize>,
    /// How many leading segments name the item (0: one item for the whole call).
    #[serde(default)]
    pub group: usize,
    /// The member that holds the item's name, read as `key` (`methodPath`).
    #[serde(default)]
    pub key_as: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MapRule {
    /// The map attribute (`tags`).
    pub path: String,
    /// A list of entries (`tagSet.items`) or, for removal, of keys.
    #[serde(default)]
    pub items: Option<String>,
    /// An object of entries (`tags`), instead of `items`.
    #[serde(default)]
    pub object: Option<String>,
    /// The key field of each item (absent: items are the keys themselves).
    #[serde(default)]
    pub key: Option<String>,
    #[serde(default)]
    pub value: Option<String>,
}

/// See [`Recipe::list_delta`].
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListDeltaRule {
    /// The list attribute (`enabled_cluster_log_types`).
    pub path: String,
    /// The request's items (`logging.clusterLogging`; one object counts as a one-item list).
    pub items: String,
    /// In each item, the values it turns on or off (`types`: a list, or one value).
    pub values: String,
    /// In each item, the flag that says on (`true`: added) or off (`false`: removed) (`enabled`).
    pub flag: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StatementRule {
    /// The attribute holding the policy document (`policy`).
    pub path: String,
    /// Event path of the statement's label, its `Sid`.
    pub sid: String,
    /// The statement is removed (by its `Sid`) rather than added.
    #[serde(default)]
    pub remove: bool,
    /// Event path of the account ids the statement allows (each `arn:<partition>:iam::<id>:root`).
    #[serde(default)]
    pub accounts: Option<String>,
    /// Event path of the actions it allows, each written with `action_prefix` (`SQS:`).
    #[serde(default)]
    pub actions: Option<String>,
    #[serde(default)]
    pub action_prefix: String,
    /// Where the document is read when the target has no state yet (a policy resource adopted
    /// beside its queue): that resource's attribute, found by the same identifier.
    #[serde(default)]
    pub current: Option<StateCondition>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlockRule {
    /// Nested block type (`ingress`).
    pub block: String,
    /// One block per item of this list.
    pub items: String,
    /// Block attribute -> item path. `[*]` paths give lists; absent values are left out. A dotted
    /// attribute (`path_pattern.values`) is written in a nested block.
    pub attrs: serde_json::Map<String, serde_json::Value>,
    /// Item members read without being written (a condition's `field`, which its nested block's
    /// type already says): they do not count as unmapped.
    #[serde(default)]
    pub implied: Vec<String>,
    /// Item member -> the member whose presence makes it say nothing more, by the API's contract
    /// (a listener action's `forwardConfig`, which must name the one `targetGroupArn` when both are
    /// sent, as the console does): not unmapped when the other is there.
    #[serde(default)]
    pub redundant_with: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateRule {
    #[serde(rename = "type")]
    pub rtype: String,
    /// Event path of the name the resource is given in the configuration.
    pub name: String,
    pub import_id: String,
    /// Attribute -> event path, optionally suffixed `:number`, `:bool` or `:map` (a list of
    /// `{key, value}` pairs, such as tags).
    pub attrs: serde_json::Map<String, serde_json::Value>,
    /// Nested blocks built from a list: block type -> rule.
    #[serde(default)]
    pub blocks: BTreeMap<String, ItemsBlock>,
    /// Attributes picked from a list by a condition (`hash_key` from `keySchema` where `keyType = HASH`).
    #[serde(default)]
    pub keys: BTreeMap<String, PickRule>,
    /// An object of the request that describes the new resource whole (a record set): a member of
    /// it that no attribute reads refuses the adoption, instead of a block that imports a
    /// resource it does not describe (a weighted or alias record written as a plain one).
    #[serde(default)]
    pub complete: Option<String>,
    /// The request describes the new resource whole (WAF's `CreateWebACL`: rules, actions and
    /// visibility as nested objects): every member but those `skip` names is written, by the same
    /// naming as a whole-document update (`renames`, snake case), and checked member by member
    /// against the provider's schema of the resource; one it does not place refuses the adoption.
    #[serde(default)]
    pub whole: Option<WholeRule>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ItemsBlock {
    pub items: String,
    pub attrs: serde_json::Map<String, serde_json::Value>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PickRule {
    pub items: String,
    pub when: BTreeMap<String, String>,
    pub value: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttachRule {
    #[serde(rename = "type")]
    pub rtype: String,
    /// `{field}` placeholders are replaced by request values.
    pub import_id: String,
    pub attrs: serde_json::Map<String, serde_json::Value>,
    /// Request path of the text the new resource is named after, beside the resource's own name
    /// (default `policyArn`, by its last segment).
    #[serde(default)]
    pub name: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RulesRule {
    #[serde(rename = "type")]
    pub rtype: String,
    pub items: String,
    /// Item field holding the new rule's id (its import id).
    pub id: String,
    pub attrs: serde_json::Map<String, serde_json::Value>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RulesRemoveRule {
    #[serde(rename = "type")]
    pub rtype: String,
    /// Event path of rule ids, when the request names them.
    pub ids: String,
    /// Otherwise: items whose fields must match the rule's attributes. A list attribute matches
    /// when it holds the value, and only alone: a rule resource holding more than the call revoked
    /// is not removed (that would revoke more than the call did).
    pub items: String,
    #[serde(rename = "match")]
    pub matching: serde_json::Map<String, serde_json::Value>,
    /// Attributes the matching rule must also have (`type = "ingress"`).
    #[serde(default)]
    pub fixed: serde_json::Map<String, serde_json::Value>,
}

/// `aws_security_group_rule` resources for the permissions a call adds, one per source.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PermissionRulesRule {
    /// `ingress` or `egress`.
    pub direction: String,
    /// The request's permissions (`ipPermissions.items`).
    pub items: String,
}

impl Catalog {
    /// The catalog built into the binary.
    pub fn builtin() -> Catalog {
        Catalog::builtin_files().expect("the built-in catalog is checked by its tests")
    }

    fn builtin_files() -> Result<Catalog, CatalogError> {
        let mut recipes = Vec::new();
        for (file, text) in BUILTIN {
            let part: Catalog = toml::from_str(text)
                .map_err(|e| CatalogError::Syntax { origin: format!("built-in {file}"), message: e.to_string() })?;
            recipes.extend(part.recipes);
        }
        let generated: Catalog = toml::from_str(GENERATED)
            .map_err(|e| CatalogError::Syntax { origin: "generated catalog".into(), message: e.to_string() })?;
        recipes.extend(generated.recipes.into_iter().map(|r| Recipe { generated: true, ..r }));
        let catalog = Catalog { recipes };
        catalog.check("built-in catalog")?;
        Ok(catalog)
    }

    pub fn from_toml(text: &str, origin: &str) -> Result<Catalog, CatalogError> {
        let catalog: Catalog = toml::from_str(text)
            .map_err(|e| CatalogError::Syntax { origin: origin.to_string(), message: e.to_string() })?;
        catalog.check(origin)?;
        Ok(catalog)
    }

    /// Recipes after this one's: loaded recipes are tried before the built-in ones.
    pub fn extend_front(&mut self, other: Catalog) {
        let mut recipes = other.recipes;
        recipes.append(&mut self.recipes);
        self.recipes = recipes;
    }

    /// Without the recipes `entries` name: a recipe id, or a call as `<eventSource>:<eventName>`
    /// (that call leaves every recipe listing it; a recipe left with no call goes). Change sets of
    /// a disabled call go to the learned recipes, the agent or a person, as any call no recipe
    /// knows. An entry that names nothing is refused, so a misspelt one does not silently keep the
    /// recipe on.
    pub fn disable(&mut self, entries: &[String]) -> Result<(), CatalogError> {
        for entry in entries {
            let before: usize = self.recipes.iter().map(|r| r.events.len()).sum();
            match entry.split_once(':') {
                Some((source, event)) => {
                    for recipe in self.recipes.iter_mut().filter(|r| r.source == source) {
                        recipe.events.retain(|e| e != event);
                    }
                    self.recipes.retain(|r| !r.events.is_empty());
                }
                None => self.recipes.retain(|r| &r.id != entry),
            }
            if self.recipes.iter().map(|r| r.events.len()).sum::<usize>() == before {
                return Err(CatalogError::UnknownDisabled { entry: entry.clone() });
            }
        }
        Ok(())
    }

    pub fn for_event<'a>(&'a self, source: &'a str, name: &'a str) -> impl Iterator<Item = &'a Recipe> + 'a {
        self.recipes.iter().filter(move |r| r.source == source && r.events.iter().any(|e| e == name))
    }

    fn check(&self, origin: &str) -> Result<(), CatalogError> {
        let mut seen = std::collections::BTreeSet::new();
        for r in &self.recipes {
            let invalid =
                |message: String| CatalogError::Invalid { origin: origin.to_string(), id: r.id.clone(), message };
            if r.id.is_empty() {
                return Err(invalid("`id` is empty".into()));
            }
            if !seen.insert(&r.id) {
                return Err(invalid("duplicate id".into()));
            }
            if !r.source.ends_with(".amazonaws.com") {
                return Err(invalid(format!(
                    "`source` {:?} is not an AWS event source like `ec2.amazonaws.com`",
                    r.source
                )));
            }
            if r.each.is_some() && r.key.is_none() {
                return Err(invalid("`each` needs `key`: the identifier inside each item".into()));
            }
            if let Some(patch) = &r.patch {
                if r.each.is_some() {
                    return Err(invalid("`patch` and `each` both make items: keep one".into()));
                }
                if r.key.is_none() {
                    return Err(invalid("`patch` needs `key`: the identifier, read inside each item".into()));
                }
                if patch.depths.is_empty() || patch.depths.iter().any(|d| *d <= patch.group) {
                    return Err(invalid("`patch.depths` must name path lengths longer than `patch.group`".into()));
                }
                if (patch.group > 0) != patch.key_as.is_some() {
                    return Err(invalid("`patch.group` and `patch.key_as` go together".into()));
                }
            }
            if r.events.is_empty() || r.types.is_empty() {
                return Err(invalid("`events` and `types` must not be empty".into()));
            }
            if r.actions().is_empty() {
                return Err(invalid(
                    "says nothing to do (no set, map_*, block_*, delete, create, attach or rules)".into(),
                ));
            }
            let keyed = r.keyed_blocks.iter().flat_map(|k| k.set.iter().map(|s| &s.path));
            for rule in r
                .set
                .iter()
                .map(|s| &s.path)
                .chain(r.remove.iter())
                .chain(r.map_merge.iter().map(|m| &m.path))
                .chain(r.list_delta.iter().map(|l| &l.path))
                .chain(keyed)
            {
                driftback_terraform::AttrPath::parse(rule).map_err(|e| invalid(e.to_string()))?;
            }
            check_names(r).map_err(|e| invalid(e.to_string()))?;
            for m in r.map_merge.iter().chain(&r.map_replace) {
                if m.items.is_none() == m.object.is_none() {
                    return Err(invalid(format!("map rule on `{}` needs exactly one of `items` and `object`", m.path)));
                }
                if m.items.is_some() && (m.key.is_none() || m.value.is_none()) {
                    return Err(invalid(format!("map rule on `{}` with `items` needs `key` and `value`", m.path)));
                }
            }
        }
        Ok(())
    }
}

/// A name in a recipe that is not CloudTrail's: an event, or a request member a path starts from.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
enum BadName {
    #[error(transparent)]
    Event(Box<NotLogged>),
    #[error("{error} (in `{path}`)")]
    InPath { error: Box<NotLogged>, path: String },
    #[error("`from_earlier` names no event")]
    NoEarlierEvent,
}

impl From<NotLogged> for BadName {
    fn from(e: NotLogged) -> Self {
        BadName::Event(Box::new(e))
    }
}

/// The recipe's events and the request members its paths start from, checked against the table of
/// calls ([`Calls`]): CloudTrail's names, not the API's or anyone's memory of them.
fn check_names(r: &Recipe) -> Result<(), BadName> {
    let calls = Calls::builtin();
    // With `from_earlier`, the rules' paths and ignored members may be the earlier call's.
    let earlier: Vec<&crate::calls::Call> = match &r.from_earlier {
        Some(e) => e.events.iter().map(|n| calls.check_event(&r.source, n)).collect::<Result<_, _>>()?,
        None => Vec::new(),
    };
    let may_be_earlier: Vec<&str> = match &r.from_earlier {
        Some(_) => r.set.iter().map(|s| s.from.as_str()).chain(r.ignore.iter().map(String::as_str)).collect(),
        None => Vec::new(),
    };
    let in_earlier = |p: &str| earlier.iter().any(|c| c.check_path(p).is_ok());
    for event in &r.events {
        let call = calls.check_event(&r.source, event)?;
        for path in request_paths(r) {
            for alternative in path.split('|').map(str::trim) {
                let checked = call.check_path(alternative);
                if checked.is_err() && may_be_earlier.contains(&path) && in_earlier(alternative) {
                    continue;
                }
                checked.map_err(|error| BadName::InPath { error: Box::new(error), path: path.to_string() })?;
            }
        }
        if let Some(e) = &r.from_earlier {
            for (theirs, ours) in &e.matching {
                call.check_path(ours)
                    .map_err(|error| BadName::InPath { error: Box::new(error), path: ours.clone() })?;
                if !in_earlier(theirs) {
                    let first = earlier.first().ok_or(BadName::NoEarlierEvent)?;
                    first
                        .check_path(theirs)
                        .map_err(|error| BadName::InPath { error: Box::new(error), path: theirs.clone() })?;
                }
            }
        }
    }
    Ok(())
}

/// The member a path ends at: `VolumeId` for `ModifyVolumeRequest.VolumeId`, `subnetId` for
/// `networkInterfaceSet.items[0].subnetId`, `queueUrl` for `response.queueUrl`.
fn member_name(path: &str) -> &str {
    let last = path.rsplit('.').next().unwrap_or(path);
    last.split('[').next().unwrap_or(last)
}

/// The text of the first `member` found in `value`, level by level from the top, at most `depth`
/// objects down (through lists).
fn shallowest(value: &Value, member: &str, depth: usize) -> Option<String> {
    let mut level: Vec<&Value> = vec![value];
    for _ in 0..=depth {
        let mut next = Vec::new();
        for v in level {
            match v {
                Value::Object(map) => {
                    if let Some(Value::String(s)) =
                        map.get(member).filter(|v| v.as_str().is_some_and(|s| !s.is_empty()))
                    {
                        return Some(s.clone());
                    }
                    next.extend(map.values());
                }
                Value::Array(items) => next.extend(items.iter()),
                _ => {}
            }
        }
        level = next;
    }
    None
}

/// The ARN of the one resource of the event's service that `resources[]` names.
fn resource_arn(event: &ApiEvent) -> Option<String> {
    let service = event.service();
    let mut arns: Vec<&str> = event
        .resources
        .iter()
        .filter_map(|r| r.arn.as_deref())
        .filter(|arn| arn.split(':').nth(2) == Some(service))
        .collect();
    arns.sort_unstable();
    arns.dedup();
    match arns.as_slice() {
        [one] => Some(one.to_string()),
        _ => None,
    }
}

/// The event paths of an import id: the path itself, or the `{path}`s of a template.
pub(crate) fn template_paths(template: &str) -> Vec<&str> {
    if !template.contains('{') {
        return vec![template];
    }
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        let Some(end) = rest[start..].find('}') else { break };
        let inner = &rest[start + 1..start + end];
        // `{path:dns}`: the path, written as a DNS name without its final dot.
        out.push(inner.strip_suffix(":dns").unwrap_or(inner));
        rest = &rest[start + end + 1..];
    }
    out
}

/// The recipe's paths that start at the top of `requestParameters` (or at `response.`, which
/// [`crate::Call::check_path`] leaves alone); paths read inside items are relative to an item.
fn request_paths(r: &Recipe) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    // Every other path is read inside the items the operations make.
    if let Some(patch) = &r.patch {
        return vec![patch.from.as_str()];
    }
    match &r.each {
        // `key` and the rules' paths are read inside each item.
        Some(each) => out.push(each),
        None => {
            out.extend(r.key.as_deref());
            out.extend(r.set.iter().map(|s| s.from.as_str()));
            out.extend(r.identity.iter().map(|i| i.from.as_str()));
            out.extend(r.ignore.iter().map(String::as_str));
            out.extend(r.if_request_has.iter().map(String::as_str));
            out.extend(r.if_request_lacks.iter().map(String::as_str));
            out.extend(r.if_request_is.keys().map(String::as_str));
        }
    }
    if let Some(n) = &r.set_named {
        out.extend([n.name.as_str(), n.value.as_str()]);
    }
    out.extend(r.remove_when.iter().map(|w| w.from.as_str()));
    for m in r.map_merge.iter().chain(&r.map_remove).chain(&r.map_replace) {
        out.extend(m.items.as_deref());
        out.extend(m.object.as_deref());
    }
    out.extend(r.block_add.iter().chain(&r.block_remove).chain(&r.block_replace).map(|b| b.items.as_str()));
    out.extend(r.list_delta.iter().map(|l| l.items.as_str()));
    out.extend(r.set_keyed.as_ref().map(|k| k.items.as_str()));
    // With `each`, a created resource is read inside its item (which also holds the call's
    // top-level members): not checked from the top.
    if let Some(st) = &r.statement {
        out.push(st.sid.as_str());
        out.extend(st.accounts.as_deref());
        out.extend(st.actions.as_deref());
    }
    if let Some(c) = r.create.as_ref().filter(|_| r.each.is_none()) {
        out.push(c.name.as_str());
        out.extend(template_paths(&c.import_id).into_iter().filter(|p| !p.is_empty()));
        out.extend(c.attrs.values().filter_map(|v| v.as_str()).map(|v| v.split_once(':').map_or(v, |(p, _)| p)));
        out.extend(c.blocks.values().map(|b| b.items.as_str()));
        out.extend(c.keys.values().map(|k| k.items.as_str()));
    }
    if let Some(a) = &r.attach {
        out.extend(a.attrs.values().filter_map(|v| v.as_str()));
        out.extend(a.name.as_deref());
        out.extend(template_paths(&a.import_id));
    }
    if let Some(rule) = &r.rules {
        out.push(&rule.items);
    }
    if let Some(rule) = &r.rules_remove {
        out.extend([rule.ids.as_str(), rule.items.as_str()]);
    }
    if let Some(rule) = &r.permission_rules {
        out.push(&rule.items);
    }
    if let Some(k) = &r.keyed_blocks {
        out.push(&k.items);
    }
    if let Some(w) = &r.whole {
        out.push(&w.from);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_catalog_loads_and_covers_the_required_apis() {
        let catalog = Catalog::builtin_files().unwrap();
        for (source, name) in [
            ("ec2.amazonaws.com", "ModifyInstanceAttribute"),
            ("ec2.amazonaws.com", "CreateTags"),
            ("ec2.amazonaws.com", "DeleteTags"),
            ("s3.amazonaws.com", "PutBucketVersioning"),
            ("s3.amazonaws.com", "PutBucketTagging"),
            ("autoscaling.amazonaws.com", "UpdateAutoScalingGroup"),
            ("monitoring.amazonaws.com", "PutMetricAlarm"),
            ("lambda.amazonaws.com", "UpdateFunctionConfiguration"),
            ("sqs.amazonaws.com", "SetQueueAttributes"),
            ("rds.amazonaws.com", "ModifyDBInstance"),
            ("ec2.amazonaws.com", "AuthorizeSecurityGroupIngress"),
            ("ec2.amazonaws.com", "RevokeSecurityGroupIngress"),
        ] {
            assert!(catalog.for_event(source, name).next().is_some(), "{source} {name}");
        }
    }

    #[test]
    fn disabled_calls_and_ids_leave_the_catalog_and_a_name_that_matches_nothing_is_refused() {
        let mut catalog = Catalog::builtin();
        assert!(catalog.for_event("ec2.amazonaws.com", "ModifyInstanceAttribute").next().is_some());
        assert!(catalog.for_event("ec2.amazonaws.com", "MonitorInstances").next().is_some());
        let ids =
            catalog.for_event("ec2.amazonaws.com", "UnmonitorInstances").map(|r| r.id.clone()).collect::<Vec<_>>();
        let mut entries = vec!["ec2.amazonaws.com:ModifyInstanceAttribute".to_string()];
        entries.extend(ids);
        catalog.disable(&entries).unwrap();
        assert!(catalog.for_event("ec2.amazonaws.com", "ModifyInstanceAttribute").next().is_none());
        assert!(catalog.for_event("ec2.amazonaws.com", "UnmonitorInstances").next().is_none());
        // Only what was named goes.
        assert!(catalog.for_event("ec2.amazonaws.com", "MonitorInstances").next().is_some());

        // A recipe listing two calls keeps the other.
        let mut two = Catalog::from_toml(
            "[[recipe]]\nid = \"m\"\nsource = \"ec2.amazonaws.com\"\nevents = [\"MonitorInstances\", \"UnmonitorInstances\"]\n\
             types = [\"aws_instance\"]\neach = \"instancesSet.items\"\nkey = \"instanceId\"\n\
             set = [{ path = \"monitoring\", from = \"instanceId\", value = true }]\n",
            "test",
        )
        .unwrap();
        two.disable(&["ec2.amazonaws.com:UnmonitorInstances".to_string()]).unwrap();
        assert_eq!(two.recipes[0].events, ["MonitorInstances"]);

        for wrong in
            ["ec2.amazonaws.com:ModifyInstanceAttributes", "ec2-modify-instance-atribute", "ModifyInstanceAttribute"]
        {
            let err = Catalog::builtin().disable(&[wrong.to_string()]).unwrap_err().to_string();
            assert!(err.contains(wrong) && err.contains("<eventSource>:<eventName>"), "{err}");
        }
    }

    /// The event filter's table of calls that change no configuration names calls CloudTrail logs,
    /// with request members those calls have; and no recipe waits for a call the filter always
    /// drops.
    #[test]
    fn calls_the_filter_drops_as_changing_no_configuration_are_real_and_reach_no_recipe() {
        use driftback_events::{NO_CONFIGURATION, When};
        let calls = Calls::builtin();
        let catalog = Catalog::builtin();
        for entry in NO_CONFIGURATION {
            let call = calls.check_event(entry.source, entry.name).unwrap_or_else(|e| panic!("{entry:?}: {e}"));
            let members: &[&str] = match entry.when {
                When::Always => &[],
                When::RequestSetsNone(members) | When::ServiceSetsOnly { members, .. } => members,
                When::RequestHas(members) => &members.iter().map(|(m, _)| *m).collect::<Vec<_>>(),
            };
            for member in members {
                call.check_path(member).unwrap_or_else(|e| panic!("{entry:?}: {e}"));
            }
            if entry.when == When::Always {
                let recipes: Vec<&str> = catalog.for_event(entry.source, entry.name).map(|r| r.id.as_str()).collect();
                assert!(
                    recipes.is_empty(),
                    "{} {} is dropped by the filter, yet {recipes:?} handle it",
                    entry.source,
                    entry.name
                );
            }
        }
    }

    #[test]
    fn every_file_of_the_catalog_directory_is_built_in() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("catalog");
        let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".toml"))
            .collect();
        on_disk.sort();
        let mut listed: Vec<String> = BUILTIN.iter().map(|(f, _)| f.to_string()).collect();
        listed.sort();
        assert_eq!(on_disk, listed, "list every file of crates/recipes/catalog/ in BUILTIN");
    }

    #[test]
    fn bad_catalogs_are_refused_with_the_recipe_named() {
        let err = Catalog::from_toml(
            "[[recipe]]\nid = \"x\"\nsource = \"ec2\"\nevents = [\"A\"]\ntypes = [\"*\"]\nremove = [\"tags\"]\n",
            "c.toml",
        )
        .unwrap_err();
        assert!(err.to_string().contains("recipe \"x\""), "{err}");
        let err = Catalog::from_toml(
            "[[recipe]]\nid = \"x\"\nsource = \"ec2.amazonaws.com\"\nevents = [\"A\"]\ntypes = [\"*\"]\n",
            "c.toml",
        )
        .unwrap_err();
        assert!(err.to_string().contains("nothing to do"), "{err}");
        let err = Catalog::from_toml("[[recipe]]\nid = \"x\"\nsorce = 1\n", "c.toml").unwrap_err();
        assert!(err.to_string().contains("sorce"), "{err}");
    }
}
