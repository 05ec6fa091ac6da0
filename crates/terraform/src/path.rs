//! Attribute paths inside a resource: `instance_type`, `versioning.enabled`, `ingress[1].from_port`,
//! `tags["cost center"]`.

use std::fmt;

use serde::{Deserialize, Serialize};

/// One step of a path.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Seg {
    /// An attribute or nested block by name (dotted form), or a map key when the value is a map.
    Name(String),
    /// A map key (`["key"]` form): always a map entry, never a block.
    Key(String),
    /// The n-th nested block of a type, or the n-th list element.
    Index(usize),
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct AttrPath(pub Vec<Seg>);

impl AttrPath {
    pub fn parse(text: &str) -> Result<AttrPath, BadPath> {
        let bad = |why: PathFault| BadPath { text: text.to_string(), why };
        let mut segs = Vec::new();
        let mut rest = text.trim();
        if rest.is_empty() {
            return Err(bad(PathFault::Empty));
        }
        while !rest.is_empty() {
            if let Some(inner) = rest.strip_prefix('[') {
                if let Some(q) = inner.strip_prefix('"') {
                    let end = q.find("\"]").ok_or_else(|| bad(PathFault::CloseQuotedKey))?;
                    segs.push(Seg::Key(q[..end].replace("\\\"", "\"")));
                    rest = &q[end + 2..];
                } else {
                    let end = inner.find(']').ok_or_else(|| bad(PathFault::CloseBracket))?;
                    let n = inner[..end].trim().parse().map_err(|_| bad(PathFault::Index))?;
                    segs.push(Seg::Index(n));
                    rest = &inner[end + 1..];
                }
            } else {
                let rest_trim = rest.strip_prefix('.').unwrap_or(rest);
                if rest_trim.is_empty() {
                    return Err(bad(PathFault::TrailingDot));
                }
                let end = rest_trim.find(['.', '[']).unwrap_or(rest_trim.len());
                if end == 0 {
                    return Err(bad(PathFault::EmptyName));
                }
                segs.push(Seg::Name(rest_trim[..end].to_string()));
                rest = &rest_trim[end..];
            }
        }
        Ok(AttrPath(segs))
    }

    pub fn first_name(&self) -> Option<&str> {
        match self.0.first() {
            Some(Seg::Name(n)) => Some(n),
            _ => None,
        }
    }
}

/// An attribute path that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid attribute path {text:?}: {why}")]
pub struct BadPath {
    pub text: String,
    pub why: PathFault,
}

/// What is wrong with an attribute path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PathFault {
    #[error("empty")]
    Empty,
    #[error("`\"]` expected")]
    CloseQuotedKey,
    #[error("`]` expected")]
    CloseBracket,
    #[error("index must be a number")]
    Index,
    #[error("ends with `.`")]
    TrailingDot,
    #[error("empty name")]
    EmptyName,
}

impl fmt::Display for AttrPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, seg) in self.0.iter().enumerate() {
            match seg {
                Seg::Name(n) if i == 0 => f.write_str(n)?,
                Seg::Name(n) => write!(f, ".{n}")?,
                Seg::Key(k) => write!(f, "[{}]", serde_json::Value::String(k.clone()))?,
                Seg::Index(n) => write!(f, "[{n}]")?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_parse_and_print() {
        let p = AttrPath::parse("ingress[1].cidr_blocks[0]").unwrap();
        assert_eq!(p.0, [Seg::Name("ingress".into()), Seg::Index(1), Seg::Name("cidr_blocks".into()), Seg::Index(0)]);
        let p = AttrPath::parse("environment.variables[\"LOG LEVEL\"]").unwrap();
        assert_eq!(p.0[2], Seg::Key("LOG LEVEL".into()));
        for text in ["instance_type", "versioning.enabled", "tags[\"cost center\"]", "a[2].b"] {
            assert_eq!(AttrPath::parse(text).unwrap().to_string(), text);
        }
        for bad in ["", "a.", "a[", "a[x]", "a..b"] {
            assert!(AttrPath::parse(bad).is_err(), "{bad}");
        }
    }
}
