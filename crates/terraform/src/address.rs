//! Terraform resource instance addresses: `module.web["a"].aws_instance.this[2]`.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The key of one instance of a `count` (number) or `for_each` (string) resource or module.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(untagged)]
pub enum InstanceKey {
    Int(i64),
    Str(String),
}

impl fmt::Display for InstanceKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InstanceKey::Int(i) => write!(f, "[{i}]"),
            InstanceKey::Str(s) => write!(f, "[{}]", serde_json::Value::String(s.clone())),
        }
    }
}

/// One `module.NAME[KEY]` step of an address.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ModuleStep {
    pub name: String,
    pub key: Option<InstanceKey>,
}

/// A resource instance address.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Address {
    pub module: Vec<ModuleStep>,
    /// `data` sources are addressed `data.TYPE.NAME`.
    pub data: bool,
    pub rtype: String,
    pub name: String,
    pub key: Option<InstanceKey>,
}

impl Address {
    pub fn resource(rtype: &str, name: &str) -> Self {
        Address { module: Vec::new(), data: false, rtype: rtype.to_string(), name: name.to_string(), key: None }
    }

    /// The module path without instance keys (`module.web.module.db`), empty for the root module.
    pub fn module_path(&self) -> String {
        self.module.iter().map(|m| format!("module.{}", m.name)).collect::<Vec<_>>().join(".")
    }

    /// `TYPE.NAME` (the block's address inside its module, without keys).
    pub fn block_name(&self) -> String {
        format!("{}.{}", self.rtype, self.name)
    }

    /// The same address without this instance's key.
    pub fn without_key(&self) -> Address {
        Address { key: None, ..self.clone() }
    }

    pub fn parse(text: &str) -> Result<Address, BadAddress> {
        let bad = |why: AddressFault| BadAddress { text: text.to_string(), why };
        let mut rest = text.trim();
        let mut module = Vec::new();
        while let Some(after) = rest.strip_prefix("module.") {
            let (name, after) = split_ident(after).ok_or_else(|| bad(AddressFault::ModuleName))?;
            let (key, after) = parse_key(after).map_err(bad)?;
            module.push(ModuleStep { name: name.to_string(), key });
            rest = after.strip_prefix('.').ok_or_else(|| bad(AddressFault::AfterModule))?;
        }
        let data = if let Some(after) = rest.strip_prefix("data.") {
            rest = after;
            true
        } else {
            false
        };
        let (rtype, after) = split_ident(rest).ok_or_else(|| bad(AddressFault::ResourceType))?;
        let after = after.strip_prefix('.').ok_or_else(|| bad(AddressFault::TypeName))?;
        let (name, after) = split_ident(after).ok_or_else(|| bad(AddressFault::ResourceName))?;
        let (key, after) = parse_key(after).map_err(bad)?;
        if !after.is_empty() {
            return Err(bad(AddressFault::Trailing(after.to_string())));
        }
        Ok(Address { module, data, rtype: rtype.to_string(), name: name.to_string(), key })
    }
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for step in &self.module {
            write!(f, "module.{}", step.name)?;
            if let Some(key) = &step.key {
                write!(f, "{key}")?;
            }
            f.write_str(".")?;
        }
        if self.data {
            f.write_str("data.")?;
        }
        write!(f, "{}.{}", self.rtype, self.name)?;
        if let Some(key) = &self.key {
            write!(f, "{key}")?;
        }
        Ok(())
    }
}

fn split_ident(s: &str) -> Option<(&str, &str)> {
    let end = s.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-')).unwrap_or(s.len());
    (end > 0).then(|| s.split_at(end))
}

/// A resource address that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid resource address {text:?}: {why}")]
pub struct BadAddress {
    pub text: String,
    pub why: AddressFault,
}

/// What is wrong with a resource address.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AddressFault {
    #[error("module name expected after `module.`")]
    ModuleName,
    #[error("`.` expected after the module step")]
    AfterModule,
    #[error("resource type expected")]
    ResourceType,
    #[error("`TYPE.NAME` expected")]
    TypeName,
    #[error("resource name expected")]
    ResourceName,
    #[error("unexpected {0:?}")]
    Trailing(String),
    #[error("unterminated key")]
    UnterminatedKey,
    #[error("`]` expected")]
    CloseBracket,
    #[error("bad index {0:?}")]
    BadIndex(String),
}

fn parse_key(s: &str) -> Result<(Option<InstanceKey>, &str), AddressFault> {
    let Some(inner) = s.strip_prefix('[') else { return Ok((None, s)) };
    if let Some(quoted) = inner.strip_prefix('"') {
        let mut value = String::new();
        let mut chars = quoted.char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => value.push(chars.next().map(|(_, c)| c).ok_or(AddressFault::UnterminatedKey)?),
                '"' => {
                    let after = quoted[i + 1..].strip_prefix(']').ok_or(AddressFault::CloseBracket)?;
                    return Ok((Some(InstanceKey::Str(value)), after));
                }
                c => value.push(c),
            }
        }
        Err(AddressFault::UnterminatedKey)
    } else {
        let end = inner.find(']').ok_or(AddressFault::CloseBracket)?;
        let n = inner[..end].trim().parse::<i64>().map_err(|_| AddressFault::BadIndex(inner[..end].to_string()))?;
        Ok((Some(InstanceKey::Int(n)), &inner[end + 1..]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_round_trip() {
        for text in [
            "aws_instance.web",
            "aws_instance.fleet[2]",
            "module.web.aws_instance.this[\"a\"]",
            "module.env[\"prod\"].module.db.aws_db_instance.main",
            "data.aws_ami.ubuntu",
            "aws_s3_bucket.b[\"with \\\"quote\\\"\"]",
        ] {
            let parsed = Address::parse(text).unwrap();
            assert_eq!(parsed.to_string(), text);
        }
        let a = Address::parse("module.web.module.db.aws_db_instance.main[0]").unwrap();
        assert_eq!(a.module_path(), "module.web.module.db");
        assert_eq!(a.block_name(), "aws_db_instance.main");
        assert_eq!(a.key, Some(InstanceKey::Int(0)));
    }

    #[test]
    fn bad_addresses_say_why() {
        for text in ["", "aws_instance", "aws_instance.web[", "module..x.y", "aws_instance.web[abc]", "a.b c"] {
            assert!(Address::parse(text).is_err(), "{text}");
        }
    }
}
