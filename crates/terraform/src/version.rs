//! Versions and version constraints as Terraform reads them: a module call's `version` (and the
//! choice `terraform init` makes among the versions a registry lists: the newest that meets every
//! constraint, a prerelease only when a constraint names it exactly), and a provider requirement's
//! `version` ([`Constraints::allows_provider`], which the provider schema is selected by). The one
//! reading of both; they differ only in `~>` with a single number.

use std::cmp::Ordering;
use std::fmt;

/// A version a registry lists: numeric segments, an optional prerelease (`-rc.1`) and build
/// metadata (`+x`, ignored in comparisons).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version {
    segments: Vec<u64>,
    prerelease: Option<String>,
    text: String,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VersionError {
    #[error("{0:?} is not a version (expected numbers separated by dots, as 1.2.3)")]
    Version(String),
    #[error("version constraint {constraint:?}: {reason}")]
    Constraint { constraint: String, reason: String },
}

impl Version {
    pub fn parse(text: &str) -> Result<Version, VersionError> {
        let bad = || VersionError::Version(text.to_string());
        let core = text.trim().strip_prefix('v').unwrap_or(text.trim());
        let core = core.split_once('+').map_or(core, |(c, _)| c);
        let (numbers, prerelease) = match core.split_once('-') {
            Some((n, p)) if !p.is_empty() => (n, Some(p.to_string())),
            Some(_) => return Err(bad()),
            None => (core, None),
        };
        let segments: Vec<u64> =
            numbers.split('.').map(|s| s.parse::<u64>().map_err(|_| bad())).collect::<Result<_, _>>()?;
        if segments.is_empty() || segments.len() > 3 {
            return Err(bad());
        }
        Ok(Version { segments, prerelease, text: text.trim().to_string() })
    }

    pub fn is_prerelease(&self) -> bool {
        self.prerelease.is_some()
    }

    /// The major, minor and patch numbers (those not written are 0).
    pub fn numbers(&self) -> [u64; 3] {
        [self.segment(0), self.segment(1), self.segment(2)]
    }

    fn segment(&self, i: usize) -> u64 {
        self.segments.get(i).copied().unwrap_or(0)
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Ord for Version {
    fn cmp(&self, other: &Self) -> Ordering {
        for i in 0..3 {
            match self.segment(i).cmp(&other.segment(i)) {
                Ordering::Equal => {}
                unequal => return unequal,
            }
        }
        match (&self.prerelease, &other.prerelease) {
            (None, None) => Ordering::Equal,
            (None, Some(_)) => Ordering::Greater,
            (Some(_), None) => Ordering::Less,
            (Some(a), Some(b)) => compare_prerelease(a, b),
        }
    }
}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// SemVer's prerelease order: dot-separated identifiers, numbers below words, numbers by value.
fn compare_prerelease(a: &str, b: &str) -> Ordering {
    let mut left = a.split('.');
    let mut right = b.split('.');
    loop {
        match (left.next(), right.next()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(x), Some(y)) => {
                let order = match (x.parse::<u64>(), y.parse::<u64>()) {
                    (Ok(m), Ok(n)) => m.cmp(&n),
                    (Ok(_), Err(_)) => Ordering::Less,
                    (Err(_), Ok(_)) => Ordering::Greater,
                    (Err(_), Err(_)) => x.cmp(y),
                };
                if order != Ordering::Equal {
                    return order;
                }
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Eq,
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
    /// `~>`: this version or a later one that changes only the last segment given.
    Pessimistic,
}

/// A version constraint: one or more comparisons separated by commas, all of which must hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Constraints {
    parts: Vec<(Op, Version)>,
    text: String,
}

impl Constraints {
    pub fn parse(text: &str) -> Result<Constraints, VersionError> {
        let fail = |reason: String| VersionError::Constraint { constraint: text.to_string(), reason };
        let mut parts = Vec::new();
        for part in text.split(',') {
            let part = part.trim();
            if part.is_empty() {
                return Err(fail("has an empty part; separate comparisons by commas, as \">= 4, < 6\"".into()));
            }
            let (op, rest) = [
                ("~>", Op::Pessimistic),
                (">=", Op::Ge),
                ("<=", Op::Le),
                ("!=", Op::Ne),
                ("=", Op::Eq),
                (">", Op::Gt),
                ("<", Op::Lt),
            ]
            .iter()
            .find_map(|(sym, op)| part.strip_prefix(sym).map(|rest| (*op, rest)))
            .unwrap_or((Op::Eq, part));
            let version = Version::parse(rest.trim()).map_err(|_| {
                fail(format!(
                    "{:?} is not a version; write operators as =, !=, >, >=, <, <=, ~> before a version such as 5.0",
                    rest.trim()
                ))
            })?;
            parts.push((op, version));
        }
        Ok(Constraints { parts, text: text.to_string() })
    }

    /// Whether `version` meets every comparison, as a module call's `version` is read (`~> 5`:
    /// at least 5). A prerelease meets a constraint only when one of its comparisons is an exact
    /// `=` naming that prerelease.
    pub fn allows(&self, version: &Version) -> bool {
        self.allows_as(version, Reading::Module)
    }

    /// Whether `version` meets every comparison, as a provider requirement's `version` is read:
    /// as [`Constraints::allows`], except that `~> 5` stays within 5 (at least 5, below 6).
    pub fn allows_provider(&self, version: &Version) -> bool {
        self.allows_as(version, Reading::Provider)
    }

    /// The versions the constraint's lower bounds name (`=`, `>=`, `>`, `~>`).
    pub fn lower_bounds(&self) -> impl Iterator<Item = &Version> {
        self.parts.iter().filter(|(op, _)| matches!(op, Op::Eq | Op::Ge | Op::Gt | Op::Pessimistic)).map(|(_, v)| v)
    }

    fn allows_as(&self, version: &Version, reading: Reading) -> bool {
        if version.is_prerelease()
            && !self.parts.iter().any(|(op, c)| *op == Op::Eq && c.is_prerelease() && c == version)
        {
            return false;
        }
        self.parts.iter().all(|(op, c)| match op {
            Op::Eq => version == c || version.cmp(c) == Ordering::Equal,
            Op::Ne => version.cmp(c) != Ordering::Equal,
            Op::Gt => version > c,
            Op::Ge => version >= c,
            Op::Lt => version < c,
            Op::Le => version <= c,
            Op::Pessimistic => pessimistic(version, c, reading),
        })
    }

    /// The newest of `available` this constraint allows.
    pub fn newest<'a>(&self, available: impl IntoIterator<Item = &'a Version>) -> Option<&'a Version> {
        available.into_iter().filter(|v| self.allows(v)).max()
    }
}

impl fmt::Display for Constraints {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Which of Terraform's two readings of a constraint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reading {
    /// A module call's `version`.
    Module,
    /// A provider requirement's `version`.
    Provider,
}

/// `~> c`: at least `c`, and the same as `c` in every segment before the last one `c` gives; for
/// a provider, a single number is kept too (`~> 5` is below 6).
fn pessimistic(version: &Version, c: &Version, reading: Reading) -> bool {
    if version < c {
        return false;
    }
    let given = c.segments.len();
    let kept = match reading {
        Reading::Module => given.saturating_sub(1),
        Reading::Provider => given.saturating_sub(1).max(1),
    };
    (0..kept).all(|i| version.segment(i) == c.segment(i))
}

/// The newest non-prerelease version when a module call gives no constraint.
pub fn newest_release<'a>(available: impl IntoIterator<Item = &'a Version>) -> Option<&'a Version> {
    available.into_iter().filter(|v| !v.is_prerelease()).max()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn versions(list: &[&str]) -> Vec<Version> {
        list.iter().map(|v| Version::parse(v).unwrap()).collect()
    }

    fn newest(constraint: &str, list: &[&str]) -> Option<String> {
        let available = versions(list);
        Constraints::parse(constraint).unwrap().newest(&available).map(|v| v.to_string())
    }

    const LISTED: &[&str] = &[
        "3.9.0",
        "4.0.0",
        "4.2.1",
        "5.0.0",
        "5.0.3",
        "5.1.0",
        "5.10.2",
        "6.0.0-rc.1",
        "6.0.0",
        "6.13.1",
        "7.0.0-beta.2",
    ];

    #[test]
    fn constraints_pick_the_newest_allowed() {
        assert_eq!(newest("~> 5.0", LISTED).as_deref(), Some("5.10.2"));
        assert_eq!(newest("~> 5.0.0", LISTED).as_deref(), Some("5.0.3"));
        assert_eq!(newest("~> 5", LISTED).as_deref(), Some("6.13.1"), "one segment: at least 5, as Terraform reads it");
        assert_eq!(newest(">= 4, < 6", LISTED).as_deref(), Some("5.10.2"));
        assert_eq!(newest("= 4.2.1", LISTED).as_deref(), Some("4.2.1"));
        assert_eq!(newest("4.2.1", LISTED).as_deref(), Some("4.2.1"));
        assert_eq!(newest("= 4.2", LISTED).as_deref(), None);
        assert_eq!(newest(">= 5.0, != 5.10.2, < 6", LISTED).as_deref(), Some("5.1.0"));
        assert_eq!(newest("> 6.13.1", LISTED).as_deref(), None, "prereleases are never picked by a range");
        assert_eq!(newest("<= 5.0.0", LISTED).as_deref(), Some("5.0.0"));
        assert_eq!(newest("= 7.0.0-beta.2", LISTED).as_deref(), Some("7.0.0-beta.2"), "named exactly");
        assert_eq!(newest("6.0.0-rc.1", LISTED).as_deref(), Some("6.0.0-rc.1"));
        assert_eq!(newest_release(&versions(LISTED)).map(|v| v.to_string()).as_deref(), Some("6.13.1"));
    }

    #[test]
    fn providers_read_a_single_number_after_the_pessimistic_operator_as_its_major_version() {
        let allows = |constraint: &str, version: &str| {
            Constraints::parse(constraint).unwrap().allows_provider(&Version::parse(version).unwrap())
        };
        assert!(allows("~> 5", "5.100.0"));
        assert!(!allows("~> 5", "6.25.0"), "a module call's ~> 5 allows it; a provider's does not");
        assert!(Constraints::parse("~> 5").unwrap().allows(&Version::parse("6.25.0").unwrap()));
        assert!(allows("~> 5.31.0", "5.31.9"));
        assert!(!allows("~> 5.31.0", "5.32.0"));
        assert!(allows("~> 5.0", "5.100.0"));
        assert!(!allows("~> 5.0", "6.0.0"));
        let c = Constraints::parse(">= 4.1, < 6, != 5.2, ~> 4.5").unwrap();
        let bounds: Vec<String> = c.lower_bounds().map(|v| v.to_string()).collect();
        assert_eq!(bounds, ["4.1", "4.5"]);
        assert_eq!(Version::parse("v5.2").unwrap().numbers(), [5, 2, 0]);
    }

    #[test]
    fn versions_order_as_semver() {
        let mut list = versions(&["1.0.0", "1.0.0-rc.1", "1.0.0-beta.11", "1.0.0-beta.2", "0.9", "v1.0.1"]);
        list.sort();
        assert_eq!(
            list.iter().map(|v| v.to_string()).collect::<Vec<_>>(),
            ["0.9", "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "v1.0.1"]
        );
        assert_eq!(Version::parse("1.2").unwrap().cmp(&Version::parse("1.2.0").unwrap()), Ordering::Equal);
    }

    #[test]
    fn bad_constraints_say_why() {
        let err = |c: &str| Constraints::parse(c).unwrap_err().to_string();
        assert!(err("~> five").contains("\"five\" is not a version"), "{}", err("~> five"));
        assert!(err(">= 4,").contains("empty part"));
        assert!(err("=> 4").contains("is not a version"));
        assert!(Version::parse("1.2.3.4").is_err());
        assert!(Version::parse("1.x").is_err());
    }
}
