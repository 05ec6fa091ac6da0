//! Calls that send a resource's whole configuration as one document (CloudFront's
//! `UpdateDistribution`, `UpdateResponseHeadersPolicy`, WAF's `UpdateWebACL`): the document is read
//! against the resource's attributes in the state, member by member, and only what differs is
//! written. Member names become attribute names by the provider's convention (`viewerProtocolPolicy`
//! is `viewer_protocol_policy`, `aCMCertificateArn` is `acm_certificate_arn`), a `{quantity, items}`
//! wrapper is its list, a nested object is a block; where the convention does not hold, the
//! recipe's `renames` say the attribute. A member that names no attribute of the state and is not
//! empty, or a list of blocks that gains or loses an item, refuses the whole call: nothing of a
//! document is written unless all of it is understood.

use serde_json::{Map, Value};

use driftback_terraform::{AttrPath, Seg};

use crate::catalog::WholeRule;

/// What a whole-document call changes: attribute paths (as the code's blocks are ordered) and new
/// values; or the members it could not place.
pub(crate) fn changes(
    rule: &WholeRule,
    document: &Value,
    state: &Map<String, Value>,
    code: Option<&Value>,
) -> Result<Vec<(AttrPath, Value)>, Vec<String>> {
    let mut walk = Walk { rule, out: Vec::new(), unplaced: Vec::new() };
    match document {
        Value::Object(members) => walk.object(members, state, code, &[], ""),
        _ => walk.unplaced.push(rule.from.clone()),
    }
    if walk.unplaced.is_empty() { Ok(walk.out) } else { Err(walk.unplaced) }
}

struct Walk<'r> {
    rule: &'r WholeRule,
    out: Vec<(AttrPath, Value)>,
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
                    self.out.push((AttrPath(path.to_vec()), Value::Array(items)));
                }
            }
            Value::Object(_) => {
                if !driftback_terraform::patch::values_equal(value, have) {
                    self.out.push((AttrPath(path.to_vec()), value.clone()));
                }
            }
            _ => {
                if value.is_object() || value.is_array() {
                    if !is_empty(value) {
                        self.unplaced.push(describe(path));
                    }
                } else if !scalars_equal(value, have) {
                    self.out.push((AttrPath(path.to_vec()), value.clone()));
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
        if items.len() != blocks.len() {
            self.unplaced.push(format!("{} ({} blocks, the state has {})", describe(path), items.len(), blocks.len()));
            return;
        }
        let code_blocks: Vec<Value> = match code {
            Some(Value::Array(c)) => c.clone(),
            Some(c @ Value::Object(_)) => vec![c.clone()],
            _ => Vec::new(),
        };
        let key = BLOCK_KEYS.iter().find(|k| blocks[0].get(**k).is_some()).copied();
        for (i, item) in items.iter().enumerate() {
            let Value::Object(members) = item else {
                self.unplaced.push(describe(path));
                continue;
            };
            // The block of the state and of the code this item is: by its key where blocks have one.
            let key_value = key.and_then(|k| {
                members.iter().find(|(name, _)| self.attribute(camel, name) == k).map(|(_, v)| v.clone())
            });
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
        let mut got: Vec<(String, Value)> = got.into_iter().map(|(p, v)| (p.to_string(), v)).collect();
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
        let mut added = document(false);
        added["cacheBehaviors"]["items"].as_array_mut().unwrap().push(json!({"pathPattern": "/api/*"}));
        let err = changes(&rule(), &added, &state(), None).unwrap_err();
        assert!(err[0].contains("ordered_cache_behavior (3 blocks, the state has 2)"), "{err:?}");
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
