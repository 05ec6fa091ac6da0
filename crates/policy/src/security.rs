//! Calls that weaken security: public ingress, public data and resource policies, encryption,
//! logging or audit turned off, IAM wildcards. The checks are data (`data/security.toml`), each with
//! examples in real CloudTrail request shapes; they are checked on the calls themselves, so they hold
//! whether or not a recipe knows the call.

use std::sync::OnceLock;

use serde::Deserialize;
use serde_json::Value;

use driftback_events::ApiEvent;

const TABLE: &str = include_str!("../data/security.toml");

/// The table of security checks.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SecurityTable {
    #[serde(rename = "check")]
    pub checks: Vec<SecurityCheck>,
}

/// One kind of call that weakens security.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SecurityCheck {
    pub id: String,
    /// The eventSource (`sqs.amazonaws.com`).
    pub source: String,
    /// Event names as CloudTrail logs them, without version suffixes.
    pub events: Vec<String>,
    /// Every condition must hold; none means the call itself weakens.
    #[serde(default)]
    pub when: Vec<SecurityCondition>,
    /// What the call does, after its name: "turns default encryption off".
    pub says: String,
    #[serde(rename = "example", default)]
    pub examples: Vec<SecurityExample>,
}

/// A request the check is tested with.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SecurityExample {
    /// The event it is a request of (default: the check's first).
    #[serde(default)]
    pub event: Option<String>,
    /// `requestParameters`, as JSON text.
    pub request: String,
    pub weakens: bool,
}

/// A test on the request (see the header of `data/security.toml`).
#[derive(Debug, Deserialize)]
#[serde(tag = "test", rename_all = "snake_case", deny_unknown_fields)]
pub enum SecurityCondition {
    Equals {
        members: Vec<String>,
        values: Vec<String>,
    },
    EndsWith {
        members: Vec<String>,
        values: Vec<String>,
    },
    #[serde(rename = "false")]
    False {
        members: Vec<String>,
    },
    #[serde(rename = "true")]
    True {
        members: Vec<String>,
    },
    NotTrue {
        members: Vec<String>,
    },
    Empty {
        members: Vec<String>,
    },
    AllEmpty {
        members: Vec<String>,
    },
    Absent {
        members: Vec<String>,
    },
    Present {
        members: Vec<String>,
    },
    PublicPolicy {
        members: Vec<String>,
    },
    WildcardAction {
        members: Vec<String>,
    },
    Pair {
        members: Vec<String>,
        key: String,
        value: String,
    },
    Contains {
        values: Vec<String>,
    },
}

impl SecurityTable {
    /// The built-in table (checked by its tests).
    pub fn builtin() -> &'static SecurityTable {
        static TABLE_PARSED: OnceLock<SecurityTable> = OnceLock::new();
        TABLE_PARSED.get_or_init(|| toml::from_str(TABLE).expect("data/security.toml is checked by its tests"))
    }

    /// The first check an event fires.
    pub fn check(&self, event: &ApiEvent) -> Option<&SecurityCheck> {
        self.fired(event).map(|(check, _)| check)
    }

    /// The first check an event fires, with what it says of the call (`{value}` in `says` is the
    /// value the last `equals` condition matched, such as the CIDR opened).
    fn fired(&self, event: &ApiEvent) -> Option<(&SecurityCheck, String)> {
        self.checks.iter().find_map(|c| {
            if c.source != event.source || !c.events.iter().any(|e| e == &event.name) {
                return None;
            }
            let mut matched = None;
            for cond in &c.when {
                if !cond.holds(&event.request) {
                    return None;
                }
                matched = cond.matched(&event.request).or(matched);
            }
            Some((c, c.says.replace("{value}", matched.as_deref().unwrap_or("a value"))))
        })
    }
}

impl SecurityCondition {
    /// The value an `equals` condition matched.
    fn matched(&self, request: &Value) -> Option<String> {
        match self {
            SecurityCondition::Equals { members, values } => {
                strings_under(request, members).into_iter().find(|s| values.iter().any(|v| v.eq_ignore_ascii_case(s)))
            }
            _ => None,
        }
    }

    fn holds(&self, request: &Value) -> bool {
        match self {
            SecurityCondition::Equals { members, values } => {
                strings_under(request, members).iter().any(|s| values.iter().any(|v| v.eq_ignore_ascii_case(s)))
            }
            SecurityCondition::EndsWith { members, values } => {
                strings_under(request, members).iter().any(|s| values.iter().any(|v| s.ends_with(v.as_str())))
            }
            SecurityCondition::False { members } => bools_under(request, members).contains(&false),
            SecurityCondition::True { members } => bools_under(request, members).contains(&true),
            SecurityCondition::NotTrue { members } => !bools_under(request, members).contains(&true),
            SecurityCondition::Empty { members } => strings_under(request, members).iter().any(String::is_empty),
            SecurityCondition::AllEmpty { members } => strings_under(request, members).iter().all(String::is_empty),
            SecurityCondition::Absent { members } => values_under(request, members).is_empty(),
            SecurityCondition::Present { members } => values_under(request, members).iter().any(|v| match v {
                Value::Null => false,
                Value::String(s) => !s.is_empty(),
                Value::Array(items) => !items.is_empty(),
                Value::Object(map) => !map.is_empty(),
                _ => true,
            }),
            SecurityCondition::PublicPolicy { members } => values_under(request, members).iter().any(|v| match v {
                Value::String(doc) => public_principal(doc),
                Value::Object(_) => public_principal(&v.to_string()),
                _ => false,
            }),
            SecurityCondition::WildcardAction { members } => {
                strings_under(request, members).iter().any(|doc| has_wildcard_action(doc))
            }
            SecurityCondition::Pair { members, key, value } => values_under(request, members).iter().any(|v| {
                let items = match v {
                    Value::Array(items) => items.as_slice(),
                    one => std::slice::from_ref(one),
                };
                items.iter().any(|i| i["key"].as_str() == Some(key) && i["value"].as_str() == Some(value))
            }),
            SecurityCondition::Contains { values } => {
                let text = request.to_string();
                values.iter().any(|v| text.contains(v.as_str()))
            }
        }
    }
}

/// Why an event weakens security, if it does.
pub fn security_weakening(event: &ApiEvent) -> Option<String> {
    SecurityTable::builtin().fired(event).map(|(_, says)| format!("{} {says}", event.raw_name))
}

/// A permission granted to an IAM role, user or group that the change set did not create: who may do
/// what changed for an identity that already exists, which a person decides (a new role with its
/// policies is written into the code like any new resource).
pub fn iam_grant_to_existing_identity(events: &[ApiEvent]) -> Option<String> {
    let name_in = |e: &ApiEvent, key: &str| e.request.get(key).and_then(Value::as_str).map(str::to_string);
    let created = |kind: &str, key: &str, name: &str| {
        events.iter().any(|e| {
            e.service() == "iam"
                && e.name.strip_prefix("Create") == Some(kind)
                && name_in(e, key).as_deref() == Some(name)
        })
    };
    events.iter().filter(|e| e.service() == "iam").find_map(|e| {
        let (kind, key) = match e.name.as_str() {
            "AttachRolePolicy" | "PutRolePolicy" => ("Role", "roleName"),
            "AttachUserPolicy" | "PutUserPolicy" | "AddUserToGroup" => ("User", "userName"),
            "AttachGroupPolicy" | "PutGroupPolicy" => ("Group", "groupName"),
            _ => return None,
        };
        let name = name_in(e, key).unwrap_or_else(|| "(unnamed)".into());
        (!created(kind, key, &name))
            .then(|| format!("{} grants permissions to the existing IAM {} {name}", e.raw_name, kind.to_lowercase()))
    })
}

/// A resource policy (JSON text) with a statement allowing `"Principal": "*"` or `{"AWS": "*"}`
/// without a condition that narrows who.
fn public_principal(doc: &str) -> bool {
    let Ok(policy) = serde_json::from_str::<Value>(doc) else { return false };
    let statements = match &policy["Statement"] {
        Value::Array(items) => items.clone(),
        one @ Value::Object(_) => vec![one.clone()],
        _ => return false,
    };
    statements.iter().any(|st| {
        let everyone = match &st["Principal"] {
            Value::String(p) => p == "*",
            Value::Object(p) => ["AWS", "Service"].iter().any(|k| match p.get(*k) {
                Some(Value::String(v)) => v == "*",
                Some(Value::Array(vs)) => vs.iter().any(|v| v == "*"),
                _ => false,
            }),
            _ => false,
        };
        everyone && st["Effect"] == "Allow" && !driftback_security::condition_narrows(st.get("Condition"))
    })
}

fn has_wildcard_action(doc: &str) -> bool {
    let Ok(value) = serde_json::from_str::<Value>(doc) else {
        let compact = doc.replace([' ', '\n'], "");
        return compact.contains("\"Action\":\"*\"") || compact.contains("\"Action\":[\"*\"");
    };
    let statements = match value.get("Statement") {
        Some(Value::Array(s)) => s.clone(),
        Some(s) => vec![s.clone()],
        None => vec![],
    };
    statements.iter().any(|s| {
        let allow = s.get("Effect").and_then(Value::as_str) != Some("Deny");
        let actions = match s.get("Action") {
            Some(Value::String(a)) => vec![a.clone()],
            Some(Value::Array(a)) => a.iter().filter_map(|x| x.as_str().map(str::to_string)).collect(),
            _ => vec![],
        };
        allow && actions.iter().any(|a| a == "*" || a.ends_with(":*") && a.len() <= 2 || a == "*:*")
    })
}

/// Every value of a member named in `members`, anywhere in `value`; `a.b` is a member `b` anywhere
/// under a member `a`.
fn values_under(value: &Value, members: &[String]) -> Vec<Value> {
    let mut out = Vec::new();
    for member in members {
        let mut scopes = vec![value.clone()];
        for step in member.split('.') {
            let mut next = Vec::new();
            for scope in &scopes {
                walk(scope, &mut |k, v| {
                    if k == step {
                        next.push(v.clone());
                    }
                });
            }
            scopes = next;
        }
        out.extend(scopes);
    }
    out
}

fn strings_under(value: &Value, members: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for v in values_under(value, members) {
        match v {
            Value::String(s) => out.push(s),
            Value::Array(items) => out.extend(items.iter().filter_map(|i| i.as_str().map(str::to_string))),
            _ => {}
        }
    }
    out
}

fn bools_under(value: &Value, members: &[String]) -> Vec<bool> {
    values_under(value, members)
        .iter()
        .filter_map(|v| match v {
            Value::Bool(b) => Some(*b),
            Value::String(s) if s.eq_ignore_ascii_case("true") || s.eq_ignore_ascii_case("false") => {
                Some(s.eq_ignore_ascii_case("true"))
            }
            _ => None,
        })
        .collect()
}

fn walk(value: &Value, f: &mut dyn FnMut(&str, &Value)) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                f(k, v);
                walk(v, f);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| walk(v, f)),
        _ => {}
    }
}
