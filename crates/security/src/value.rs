//! Values as the judge sees them: the three-valued [`Verdict`], and what counts as a missing or a
//! symbolic value. A leaf: the predicates, documents and control tables all read it.

use serde_json::Value;

/// What a predicate says of a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    Fail,
    /// The value cannot be computed from the code (a reference, an unknown function).
    Unknown,
}

impl Verdict {
    pub(crate) fn and(self, other: Verdict) -> Verdict {
        match (self, other) {
            (Verdict::Fail, _) | (_, Verdict::Fail) => Verdict::Fail,
            (Verdict::Unknown, _) | (_, Verdict::Unknown) => Verdict::Unknown,
            _ => Verdict::Pass,
        }
    }

    pub(crate) fn or(self, other: Verdict) -> Verdict {
        match (self, other) {
            (Verdict::Pass, _) | (_, Verdict::Pass) => Verdict::Pass,
            (Verdict::Unknown, _) | (_, Verdict::Unknown) => Verdict::Unknown,
            _ => Verdict::Fail,
        }
    }

    pub(crate) fn not(self) -> Verdict {
        match self {
            Verdict::Pass => Verdict::Fail,
            Verdict::Fail => Verdict::Pass,
            Verdict::Unknown => Verdict::Unknown,
        }
    }

    pub(crate) fn from_bool(pass: bool) -> Verdict {
        if pass { Verdict::Pass } else { Verdict::Fail }
    }
}

/// Whether a value counts as not set.
pub(crate) fn is_missing(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Array(items) => items.is_empty(),
        Value::Object(map) => map.is_empty(),
        _ => false,
    }
}

/// A value the evaluator left symbolic (a reference it could not resolve, `${aws_kms_key.x.arn}`).
pub fn is_symbolic(value: &Value) -> bool {
    match value {
        Value::String(s) => s.contains("${"),
        Value::Array(items) => items.iter().any(is_symbolic),
        Value::Object(map) => map.values().any(is_symbolic),
        _ => false,
    }
}
