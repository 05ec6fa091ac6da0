//! The policy file (`.driftback/policy.toml` in the infrastructure repository): parsed from text,
//! checked field by field, with errors that name the file, the rule and the field.

use serde_json::Value;

use driftback_attribute::{ActorKind, Intent, Motivation, NamedActor};

use crate::baseline::Accept;
use crate::change::ChangeKind;
use crate::decision::DecisionKind;
use crate::defaults;
use crate::rule::{Effect, Example, Matcher, Rule};

/// Why a policy file cannot be used. Each names the file, and the rule and field where there is one:
/// the operator fixes the file and runs `driftback policy check` again.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PolicyError {
    #[error("{file}: not valid TOML: {message}")]
    Syntax { file: String, message: String },
    #[error("{file}: {location}: `{field}`: {message}")]
    Invalid { file: String, location: String, field: String, message: String },
    #[error("{file}: rule {rule:?}, example {index}: expected {expected}, but the rule gives {got}")]
    Example { file: String, rule: String, index: usize, expected: String, got: String },
}

/// What the file says besides its rules.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Parsed {
    pub rules: Vec<Rule>,
    pub actors: Vec<NamedActor>,
    pub disabled: Vec<String>,
    pub oscillation_window_secs: Option<u64>,
    pub accepts: Vec<Accept>,
}

struct Fields<'a> {
    file: &'a str,
    location: String,
    table: &'a toml::Table,
    known: &'static [&'static str],
}

type R<T> = Result<T, PolicyError>;

impl<'a> Fields<'a> {
    fn new(file: &'a str, location: String, table: &'a toml::Table, known: &'static [&'static str]) -> R<Self> {
        let fields = Fields { file, location, table, known };
        fields.check_unknown()?;
        Ok(fields)
    }

    /// Fields for a named item: errors say `rule "name"` rather than `rule 3` once the name is known.
    fn named(
        file: &'a str,
        what: &str,
        index: usize,
        table: &'a toml::Table,
        known: &'static [&'static str],
    ) -> R<Self> {
        let mut fields = Fields { file, location: format!("{what} {}", index + 1), table, known };
        if let Some(toml::Value::String(name)) = table.get("name") {
            fields.location =
                if what == "rule" { format!("rule {name:?} (rule {})", index + 1) } else { format!("{what} {name:?}") };
        }
        fields.check_unknown()?;
        Ok(fields)
    }

    fn check_unknown(&self) -> R<()> {
        match self.table.keys().find(|k| !self.known.contains(&k.as_str())) {
            Some(key) => Err(self.err(key, &format!("unknown field; expected one of: {}", self.known.join(", ")))),
            None => Ok(()),
        }
    }

    fn err(&self, field: &str, message: &str) -> PolicyError {
        PolicyError::Invalid {
            file: self.file.to_string(),
            location: self.location.clone(),
            field: field.to_string(),
            message: message.to_string(),
        }
    }

    fn get(&self, key: &str) -> Option<&'a toml::Value> {
        debug_assert!(self.known.contains(&key), "{key} is not declared");
        self.table.get(key)
    }

    fn string(&self, key: &str) -> R<Option<String>> {
        match self.get(key) {
            None => Ok(None),
            Some(toml::Value::String(s)) if !s.is_empty() => Ok(Some(s.clone())),
            Some(toml::Value::String(_)) => Err(self.err(key, "must not be empty")),
            Some(other) => Err(self.err(key, &format!("expected a string, found {}", other.type_str()))),
        }
    }

    /// A string or a list of strings.
    fn strings(&self, key: &str) -> R<Vec<String>> {
        match self.get(key) {
            None => Ok(vec![]),
            Some(toml::Value::String(s)) if !s.is_empty() => Ok(vec![s.clone()]),
            Some(toml::Value::Array(items)) if !items.is_empty() => items
                .iter()
                .map(|i| match i {
                    toml::Value::String(s) if !s.is_empty() => Ok(s.clone()),
                    other => Err(self.err(key, &format!("expected non-empty strings, found {other}"))),
                })
                .collect(),
            Some(other) => {
                Err(self.err(key, &format!("expected a string or a non-empty list of strings, found {other}")))
            }
        }
    }

    fn enums<T>(&self, key: &str, parse: impl Fn(&str) -> Option<T>, allowed: &[&str]) -> R<Vec<T>> {
        self.strings(key)?
            .iter()
            .map(|s| {
                parse(s).ok_or_else(|| {
                    self.err(key, &format!("unknown value {s:?}; expected one of: {}", allowed.join(", ")))
                })
            })
            .collect()
    }

    fn one_enum<T>(&self, key: &str, parse: impl Fn(&str) -> Option<T>, allowed: &[&str]) -> R<Option<T>> {
        match self.get(key) {
            None => Ok(None),
            Some(toml::Value::String(s)) => parse(s)
                .map(Some)
                .ok_or_else(|| self.err(key, &format!("unknown value {s:?}; expected one of: {}", allowed.join(", ")))),
            Some(other) => Err(self.err(key, &format!("expected one of {}, found {other}", allowed.join(", ")))),
        }
    }

    fn bool(&self, key: &str) -> R<Option<bool>> {
        match self.get(key) {
            None => Ok(None),
            Some(toml::Value::Boolean(b)) => Ok(Some(*b)),
            Some(other) => Err(self.err(key, &format!("expected true or false, found {other}"))),
        }
    }

    fn number(&self, key: &str) -> R<Option<f64>> {
        match self.get(key) {
            None => Ok(None),
            Some(toml::Value::Integer(i)) => Ok(Some(*i as f64)),
            Some(toml::Value::Float(f)) => Ok(Some(*f)),
            Some(other) => Err(self.err(key, &format!("expected a number, found {other}"))),
        }
    }

    fn tables(&self, key: &str) -> R<Vec<&'a toml::Table>> {
        match self.get(key) {
            None => Ok(vec![]),
            Some(toml::Value::Array(items)) => {
                items.iter().map(|i| i.as_table().ok_or_else(|| self.err(key, "expected tables ([[...]])"))).collect()
            }
            Some(_) => Err(self.err(key, &format!("expected a list of tables: write [[{key}]]"))),
        }
    }
}

fn names<T: Copy>(all: &[T], name: impl Fn(&T) -> &'static str) -> Vec<&'static str> {
    all.iter().map(name).collect()
}

fn parse_actor_kind(s: &str) -> Option<ActorKind> {
    ActorKind::ALL.into_iter().find(|k| k.as_str() == s)
}
fn parse_intent(s: &str) -> Option<Intent> {
    Intent::ALL.into_iter().find(|k| k.as_str() == s)
}
fn parse_motivation(s: &str) -> Option<Motivation> {
    Motivation::ALL.into_iter().find(|k| k.as_str() == s)
}

/// `90s`, `30m`, `48h`, `7d`.
fn parse_duration(text: &str) -> Option<u64> {
    let (number, unit) = text.split_at(text.find(|c: char| !c.is_ascii_digit())?);
    let n: u64 = number.parse().ok()?;
    let scale = match unit.trim() {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return None,
    };
    n.checked_mul(scale).filter(|s| *s > 0)
}

const TOP: &[&str] = &["version", "settings", "actor", "rule", "accept"];
const ACCEPT: &[&str] = &["control", "addresses", "by", "reason"];
const SETTINGS: &[&str] = &["oscillation_window", "disable_defaults"];
const ACTOR: &[&str] = &["name", "kind", "principals"];
const RULE: &[&str] = &[
    "name",
    "description",
    "resource_type",
    "address",
    "attribute",
    "except_attribute",
    "actor",
    "actor_kind",
    "intent",
    "motivation",
    "change",
    "api",
    "owner",
    "decision",
    "owner_decision",
    "immutable",
    "min",
    "max",
    "allowed",
    "example",
];
const EXAMPLE: &[&str] =
    &["address", "attribute", "change", "value", "actor", "actor_kind", "intent", "motivation", "api", "expect"];

pub(crate) fn parse(text: &str, file: &str) -> R<Parsed> {
    let table: toml::Table = toml::from_str(text).map_err(|e| PolicyError::Syntax {
        file: file.to_string(),
        message: e.to_string().trim().replace('\n', " "),
    })?;
    let top = Fields::new(file, "top level".into(), &table, TOP)?;
    if let Some(v) = top.get("version") {
        if v.as_integer() != Some(1) {
            return Err(top.err("version", &format!("this driftback reads policy version 1, not {v}")));
        }
    }
    let mut parsed =
        Parsed { rules: vec![], actors: vec![], disabled: vec![], oscillation_window_secs: None, accepts: vec![] };
    if let Some(settings) = top.get("settings") {
        let settings = settings.as_table().ok_or_else(|| top.err("settings", "expected a table: write [settings]"))?;
        let f = Fields::new(file, "[settings]".into(), settings, SETTINGS)?;
        if let Some(w) = f.string("oscillation_window")? {
            let secs = parse_duration(&w).ok_or_else(|| {
                f.err("oscillation_window", &format!("{w:?} is not a duration such as 90s, 30m, 48h or 7d"))
            })?;
            parsed.oscillation_window_secs = Some(secs);
        }
        let known = defaults::names();
        for name in f.strings("disable_defaults")? {
            if !known.contains(&name) {
                return Err(
                    f.err("disable_defaults", &format!("no built-in rule {name:?}; they are: {}", known.join(", ")))
                );
            }
            parsed.disabled.push(name);
        }
    }
    for (i, t) in top.tables("actor")?.into_iter().enumerate() {
        let f = Fields::named(file, "actor", i, t, ACTOR)?;
        let name = f.string("name")?.ok_or_else(|| f.err("name", "required"))?;
        let kinds = names(&ActorKind::ALL, ActorKind::as_str);
        let kind = f.one_enum("kind", parse_actor_kind, &kinds)?.ok_or_else(|| f.err("kind", "required"))?;
        let principals = f.strings("principals")?;
        if principals.is_empty() {
            return Err(f.err("principals", "required: the ARNs, role or user names (globs) this actor acts as"));
        }
        parsed.actors.push(NamedActor { name, kind, principals });
    }
    for (i, t) in top.tables("accept")?.into_iter().enumerate() {
        parsed.accepts.push(parse_accept(file, i, t)?);
    }
    for (i, t) in top.tables("rule")?.into_iter().enumerate() {
        let rule = parse_rule(file, i, t)?;
        if parsed.rules.iter().any(|r: &Rule| r.name == rule.name) {
            return Err(PolicyError::Invalid {
                file: file.into(),
                location: format!("rule {:?} (rule {})", rule.name, i + 1),
                field: "name".into(),
                message: "another rule has the same name".into(),
            });
        }
        parsed.rules.push(rule);
    }
    Ok(parsed)
}

/// `[[accept]]`: an owner accepts a control being weakened on some resources, and says why.
fn parse_accept(file: &str, index: usize, t: &toml::Table) -> R<Accept> {
    let f = Fields::new(file, format!("accept {}", index + 1), t, ACCEPT)?;
    let control = f.string("control")?.ok_or_else(|| f.err("control", "required: a control id such as RDS.8"))?;
    let known = driftback_security::Baseline::builtin().ids();
    if !known.contains(&control.as_str()) {
        return Err(f.err(
            "control",
            &format!("{control:?} is not a control of the security baseline (docs/security.md lists them)"),
        ));
    }
    let addresses = f.strings("addresses")?;
    if addresses.is_empty() {
        return Err(f.err("addresses", "required: the resource addresses it is accepted on (`*` matches any run)"));
    }
    let by = f.string("by")?.filter(|b| !b.trim().is_empty()).ok_or_else(|| f.err("by", "required: who accepts it"))?;
    let reason = f
        .string("reason")?
        .filter(|r| !r.trim().is_empty())
        .ok_or_else(|| f.err("reason", "required: why it is accepted"))?;
    Ok(Accept { control, addresses, by, reason })
}

fn parse_rule(file: &str, index: usize, t: &toml::Table) -> R<Rule> {
    let f = Fields::named(file, "rule", index, t, RULE)?;
    let name = f.string("name")?.ok_or_else(|| f.err("name", "required: every rule has a unique name"))?;
    if name.starts_with("default:") {
        return Err(f.err("name", "names starting with `default:` are reserved for the built-in rules"));
    }
    let decisions = names(&DecisionKind::ALL, DecisionKind::as_str);
    let matcher = Matcher {
        resource_types: f.strings("resource_type")?,
        addresses: f.strings("address")?,
        attributes: f.strings("attribute")?,
        except_attributes: f.strings("except_attribute")?,
        actors: f.strings("actor")?,
        actor_kinds: f.enums("actor_kind", parse_actor_kind, &names(&ActorKind::ALL, ActorKind::as_str))?,
        intents: f.enums("intent", parse_intent, &names(&Intent::ALL, Intent::as_str))?,
        motivations: f.enums("motivation", parse_motivation, &names(&Motivation::ALL, Motivation::as_str))?,
        changes: f.enums("change", ChangeKind::parse, &["create", "update", "delete"])?,
        apis: f.strings("api")?,
    };
    for pattern in &matcher.apis {
        if !pattern.contains(':') {
            return Err(f.err(
                "api",
                &format!("{pattern:?} is not `service:EventName` (e.g. ec2:AuthorizeSecurityGroupIngress)"),
            ));
        }
    }
    let decision = f.one_enum("decision", DecisionKind::parse, &decisions)?;
    let owner_decision = f.one_enum("owner_decision", DecisionKind::parse, &decisions)?;
    let owners = f.strings("owner")?;
    let immutable = f.bool("immutable")?.unwrap_or(false);
    let (min, max) = (f.number("min")?, f.number("max")?);
    let allowed: Vec<Value> = match f.get("allowed") {
        None => vec![],
        Some(toml::Value::Array(items)) if !items.is_empty() => {
            items.iter().map(|v| serde_json::to_value(v).unwrap_or(Value::Null)).collect()
        }
        Some(_) => return Err(f.err("allowed", "expected a non-empty list of values")),
    };
    let bounded = min.is_some() || max.is_some() || !allowed.is_empty();
    let conflict = |a: &str, b: &str| f.err(a, &format!("cannot be combined with `{b}` in one rule; write two rules"));
    if owner_decision.is_some() && owners.is_empty() {
        return Err(f.err("owner_decision", "only applies with `owner`"));
    }
    let effect = if immutable {
        if bounded {
            return Err(conflict("immutable", "min/max/allowed"));
        }
        if !owners.is_empty() {
            return Err(conflict("immutable", "owner"));
        }
        let d = decision.unwrap_or(DecisionKind::Escalate);
        if !matches!(d, DecisionKind::Revert | DecisionKind::Escalate) {
            return Err(f.err("decision", "a change to an immutable field is reverted or escalated"));
        }
        Effect::Immutable(d)
    } else if bounded {
        if !owners.is_empty() {
            return Err(conflict("min/max/allowed", "owner"));
        }
        if matcher.attributes.is_empty() {
            return Err(f.err("attribute", "required with min, max or allowed: the bounds apply to an attribute"));
        }
        if let (Some(lo), Some(hi)) = (min, max) {
            if lo > hi {
                return Err(f.err("min", &format!("{lo} is above max {hi}")));
            }
        }
        Effect::Bounds { min, max, allowed, decision: decision.unwrap_or(DecisionKind::Escalate) }
    } else if !owners.is_empty() {
        let only_terraform = owners.iter().all(|o| o == "terraform");
        let others = decision.unwrap_or(if only_terraform { DecisionKind::Revert } else { DecisionKind::Escalate });
        Effect::Own { owners, owner_decision: owner_decision.unwrap_or(DecisionKind::IgnoreChanges), others }
    } else {
        Effect::Decide(decision.ok_or_else(|| {
            f.err(
                "decision",
                &format!("required (one of {}) unless the rule sets owner, immutable or bounds", decisions.join(", ")),
            )
        })?)
    };
    let mut rule = Rule {
        name: name.clone(),
        description: f.string("description")?.unwrap_or_default(),
        matcher,
        effect,
        examples: vec![],
    };
    for (i, t) in f.tables("example")?.into_iter().enumerate() {
        let ef = Fields::new(file, format!("rule {name:?}, example {}", i + 1), t, EXAMPLE)?;
        rule.examples.push(parse_example(&ef)?);
    }
    Ok(rule)
}

fn parse_example(f: &Fields<'_>) -> R<Example> {
    let address =
        f.string("address")?.ok_or_else(|| f.err("address", "required: the resource address the example changes"))?;
    driftback_terraform::Address::parse(&address).map_err(|e| f.err("address", &e.to_string()))?;
    let attribute = f.string("attribute")?;
    let change =
        f.one_enum("change", ChangeKind::parse, &["create", "update", "delete"])?.unwrap_or(ChangeKind::Update);
    if change == ChangeKind::Update && attribute.is_none() {
        return Err(f.err("attribute", "required for an update (or set change = \"create\" or \"delete\")"));
    }
    let expect = match f.get("expect") {
        Some(toml::Value::String(s)) if s == "no_match" => None,
        Some(toml::Value::String(s)) if DecisionKind::parse(s).is_some() => DecisionKind::parse(s),
        _ => return Err(f.err("expect", "required: reconcile, ignore_changes, revert, escalate or no_match")),
    };
    Ok(Example {
        address,
        attribute,
        change,
        value: f.get("value").map(|v| serde_json::to_value(v).unwrap_or(Value::Null)),
        actor: f.string("actor")?.unwrap_or_else(|| "someone".into()),
        actor_kind: f
            .one_enum("actor_kind", parse_actor_kind, &names(&ActorKind::ALL, ActorKind::as_str))?
            .unwrap_or(ActorKind::Person),
        intent: f.one_enum("intent", parse_intent, &names(&Intent::ALL, Intent::as_str))?.unwrap_or(Intent::Unknown),
        motivation: f
            .one_enum("motivation", parse_motivation, &names(&Motivation::ALL, Motivation::as_str))?
            .unwrap_or(Motivation::Unknown),
        api: f.string("api")?,
        expect,
    })
}
