//! The control table as written in `data/controls/*.toml` (the format: `data/FORMAT.md`), read and
//! checked once.

use serde::Deserialize;

use crate::predicate::{Predicate, RawPredicate};

mod files {
    include!(concat!(env!("OUT_DIR"), "/controls.rs"));
}

/// How a missing value (unset, null, `""`, `[]`, `{}`) counts against a control.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Missing {
    /// The provider's default is the weak value (`deletion_protection` unset is `false`).
    Fails,
    /// The provider's default is the strong value.
    Passes,
    /// Nobody can say from the code: neither passing nor failing.
    #[default]
    Unknown,
}

/// The change a control is about, judged on before -> after.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeTest {
    /// A policy document grants what it did not, drops a Deny or drops a condition of an Allow.
    PolicyNotWidened,
    /// A list of CIDR blocks lets in an address no block let in before.
    CidrsNotWidened,
    /// Besides the control's own test: a load balancer security policy that accepts an older TLS
    /// version than the one before, even when neither is on the control's list.
    TlsMinimumNotLowered,
    /// Besides the control's own test: a trail's event selectors that record fewer kinds of
    /// management event (reads, writes) than before, even when neither recorded both.
    ManagementEventsNotReduced,
}

/// One control, judged on one resource shape.
#[derive(Debug, Clone)]
pub struct Control {
    /// Security Hub's control id (`RDS.8`).
    pub id: String,
    pub standards: Vec<String>,
    pub severity: Severity,
    pub title: String,
    /// What a weakening exposes, said to the reviewer.
    pub protects: String,
    pub resources: Vec<String>,
    /// Where the value is, dotted (`versioning_configuration.status`); empty: the whole resource.
    pub path: String,
    pub holds: Option<Predicate>,
    pub change: Option<ChangeTest>,
    pub missing: Missing,
    pub when: Vec<Predicate>,
    pub checkov: Vec<String>,
    pub checkov_note: String,
    pub on_delete: bool,
    /// Top-level arguments AWS accepts only in step with the control's own (a replication group's
    /// Multi-AZ needs automatic failover): held with it when the same change sets them.
    pub held_with: Vec<String>,
    pub examples: Vec<Example>,
    /// The file it was read from (`rds.toml`).
    pub file: String,
}

/// A before/after pair the control is tested with (and checkov too, where it has a check).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Example {
    /// The resource type (default: the control's first).
    #[serde(default)]
    pub resource: Option<String>,
    /// The resource block's body before the change, as HCL; none: the resource is created.
    #[serde(default)]
    pub before: Option<String>,
    /// The body after; none: the resource is deleted.
    #[serde(default)]
    pub after: Option<String>,
    pub weakens: bool,
}

/// A control's severity, as Security Hub's reference gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Low,
    Medium,
    High,
    Critical,
}

impl Severity {
    pub fn as_str(&self) -> &'static str {
        match self {
            Severity::Low => "low",
            Severity::Medium => "medium",
            Severity::High => "high",
            Severity::Critical => "critical",
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(rename = "control", default)]
    controls: Vec<RawControl>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawControl {
    id: String,
    #[serde(default)]
    standards: Vec<String>,
    severity: Severity,
    title: String,
    protects: String,
    resources: Vec<String>,
    #[serde(default)]
    path: String,
    #[serde(default)]
    holds: Option<RawPredicate>,
    #[serde(default)]
    change: Option<ChangeTest>,
    #[serde(default)]
    missing: Missing,
    #[serde(default)]
    when: Vec<RawPredicate>,
    #[serde(default)]
    checkov: Vec<String>,
    #[serde(default)]
    checkov_note: String,
    #[serde(default)]
    on_delete: bool,
    #[serde(default)]
    held_with: Vec<String>,
    #[serde(rename = "example", default)]
    examples: Vec<Example>,
}

const STANDARDS: [&str; 6] = ["fsbp", "cis-1.2", "cis-1.4", "cis-3.0", "cis-5.0", "config"];

/// A control file that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TableError {
    #[error("{file}: {reason}")]
    Parse { file: String, reason: String },
    #[error("{file}: control {id}: {reason}")]
    Entry { file: String, id: String, reason: String },
}

/// The controls in force.
#[derive(Debug, Clone)]
pub struct Baseline {
    pub controls: Vec<Control>,
}

impl Baseline {
    /// Read control files (`(name, text)`), checking every entry.
    pub fn from_files<'a>(files: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<Baseline, TableError> {
        let mut controls = Vec::new();
        for (file, text) in files {
            let raw: RawFile = toml::from_str(text)
                .map_err(|e| TableError::Parse { file: file.to_string(), reason: e.to_string() })?;
            for c in raw.controls {
                controls.push(control(file, c)?);
            }
        }
        Ok(Baseline { controls })
    }

    /// The built-in table (`data/controls/*.toml`), checked by this crate's tests.
    pub fn read_builtin() -> Result<Baseline, TableError> {
        Baseline::from_files(files::FILES.iter().copied())
    }
}

fn control(file: &str, c: RawControl) -> Result<Control, TableError> {
    let bad = |reason: String| TableError::Entry { file: file.to_string(), id: c.id.clone(), reason };
    if c.id.trim().is_empty() || c.title.trim().is_empty() || c.protects.trim().is_empty() {
        return Err(bad("id, title and protects must not be empty".into()));
    }
    if c.resources.is_empty() || c.resources.iter().any(|r| !r.starts_with("aws_")) {
        return Err(bad(format!("resources must be AWS resource types, got {:?}", c.resources)));
    }
    if let Some(s) = c.standards.iter().find(|s| !STANDARDS.contains(&s.as_str())) {
        return Err(bad(format!("unknown standard {s:?} (known: {})", STANDARDS.join(", "))));
    }
    match (&c.holds, &c.change, c.on_delete) {
        (None, None, false) => return Err(bad("needs `holds`, `change` or `on_delete = true`".into())),
        (None, Some(ChangeTest::TlsMinimumNotLowered | ChangeTest::ManagementEventsNotReduced), _) => {
            return Err(bad("this `change` adds to a `holds` test: give one".into()));
        }
        (Some(_), Some(ChangeTest::TlsMinimumNotLowered | ChangeTest::ManagementEventsNotReduced), _) => {}
        (Some(_), Some(_), _) => return Err(bad("`holds` and `change` are exclusive: one entry, one test".into())),
        _ => {}
    }
    let holds = c.holds.map(|p| p.build()).transpose().map_err(|e| bad(format!("holds: {e}")))?;
    let when =
        c.when.into_iter().map(|p| p.build()).collect::<Result<Vec<_>, _>>().map_err(|e| bad(format!("when: {e}")))?;
    if c.examples.is_empty() {
        return Err(bad("has no example".into()));
    }
    for (i, e) in c.examples.iter().enumerate() {
        if e.before.is_none() && e.after.is_none() {
            return Err(bad(format!("example {} has neither before nor after", i + 1)));
        }
        if let Some(r) = &e.resource {
            if !c.resources.contains(r) {
                return Err(bad(format!("example {} is of {r}, which the entry does not judge", i + 1)));
            }
        }
    }
    Ok(Control {
        id: c.id,
        standards: c.standards,
        severity: c.severity,
        title: c.title,
        protects: c.protects,
        resources: c.resources,
        path: c.path,
        holds,
        change: c.change,
        missing: c.missing,
        when,
        checkov: c.checkov,
        checkov_note: c.checkov_note,
        on_delete: c.on_delete,
        held_with: c.held_with,
        examples: c.examples,
        file: file.to_string(),
    })
}
