//! What reaches the store: checks of the records callers give (refused with a message naming the
//! field), and the cleaning of outside text both backends share (NUL kept as U+FFFD).

use crate::StoreError;
use crate::records::{
    BadRecord, CHANGE_SET_STATUSES, ChangeSetRecord, EmbedderSpec, EventRecord, FieldChangeRecord, PendingChangeSet,
};

/// `n` as the signed 64-bit integer both databases store; `what` names it when it does not fit.
pub(crate) fn to_i64(what: &str, n: u64) -> Result<i64, StoreError> {
    i64::try_from(n).map_err(|_| StoreError::Data(format!("{what} {n} is too large to store")))
}

/// The raw record of `e` as JSON text (SQLite keeps it so; Postgres casts it to jsonb), refused
/// when it is not one JSON value.
pub(crate) fn raw_text(e: &EventRecord) -> Result<String, StoreError> {
    serde_json::from_str::<serde::de::IgnoredAny>(&e.raw)
        .map_err(|err| StoreError::Data(format!("event {}: the raw record is not JSON: {err}", e.event_id)))?;
    Ok(e.raw.clone())
}

/// Whether a record's JSON text may hold a NUL character (an escaped `\u0000`; JSON text holds no
/// raw control characters). A false alarm (an escaped backslash before `u0000`) only costs a parse.
fn raw_has_nul(raw: &str) -> bool {
    raw.contains("\\u0000")
}

/// `raw` with its NUL characters replaced (see [`json_without_nul`]); as it is when it is not JSON
/// (then [`raw_text`] refuses it).
fn raw_without_nul(raw: &str) -> String {
    match serde_json::from_str::<serde_json::Value>(raw) {
        Ok(value) => json_without_nul(&value).to_string(),
        Err(_) => raw.to_string(),
    }
}

/// Refuses an empty (or blank) required text field, naming it.
pub(crate) fn check_nonempty(what: &str, value: &str) -> Result<(), StoreError> {
    if value.trim().is_empty() {
        return Err(StoreError::Data(format!("{what} is empty")));
    }
    Ok(())
}

pub(crate) fn check_events(events: &[EventRecord]) -> Result<(), StoreError> {
    for e in events {
        if e.event_id.trim().is_empty() {
            return Err(StoreError::Data(format!(
                "event {} {} at {} has an empty event_id; record it as a bad record instead",
                e.source, e.name, e.event_time
            )));
        }
        if e.event_id.chars().any(char::is_control) {
            return Err(StoreError::Data(format!(
                "event {} {} at {} has control characters in its event_id {:?}; record it as a bad record instead",
                e.source, e.name, e.event_time, e.event_id
            )));
        }
    }
    Ok(())
}

/// What the store keeps of text from the outside. Postgres cannot hold the NUL character in `text`
/// or `jsonb`, and event data is whatever a caller put in an API call: both backends keep U+FFFD in
/// its place, so a hostile value is recorded (and looks the same whichever the backend) instead of
/// failing the delivery that carries it.
pub(crate) fn without_nul(text: &str) -> std::borrow::Cow<'_, str> {
    if text.contains('\0') { text.replace('\0', "\u{fffd}").into() } else { text.into() }
}

fn json_without_nul(value: &serde_json::Value) -> serde_json::Value {
    match value {
        serde_json::Value::String(s) => serde_json::Value::String(without_nul(s).into_owned()),
        serde_json::Value::Array(items) => items.iter().map(json_without_nul).collect(),
        serde_json::Value::Object(map) => {
            map.iter().map(|(k, v)| (without_nul(k).into_owned(), json_without_nul(v))).collect()
        }
        other => other.clone(),
    }
}

/// `events` as the store keeps them (see [`without_nul`]); borrowed when nothing needs replacing.
pub(crate) fn storable_events(events: &[EventRecord]) -> std::borrow::Cow<'_, [EventRecord]> {
    let text_has_nul = |e: &EventRecord| {
        [&e.source, &e.name, &e.actor].iter().any(|t| t.contains('\0'))
            || e.drop_reason.as_deref().is_some_and(|r| r.contains('\0'))
    };
    if !events.iter().any(|e| text_has_nul(e) || raw_has_nul(&e.raw)) {
        return events.into();
    }
    let clean = |t: &str| without_nul(t).into_owned();
    events
        .iter()
        .map(|e| EventRecord {
            source: clean(&e.source),
            name: clean(&e.name),
            actor: clean(&e.actor),
            drop_reason: e.drop_reason.as_deref().map(clean),
            raw: if raw_has_nul(&e.raw) { raw_without_nul(&e.raw) } else { e.raw.clone() },
            ..e.clone()
        })
        .collect::<Vec<_>>()
        .into()
}

/// `bad` as the store keeps it (see [`without_nul`]); borrowed when nothing needs replacing.
pub(crate) fn storable_bad_records(bad: &[BadRecord]) -> std::borrow::Cow<'_, [BadRecord]> {
    if !bad.iter().any(|b| [&b.location, &b.reason, &b.raw].iter().any(|t| t.contains('\0'))) {
        return bad.into();
    }
    let clean = |t: &str| without_nul(t).into_owned();
    bad.iter()
        .map(|b| BadRecord { location: clean(&b.location), reason: clean(&b.reason), raw: clean(&b.raw) })
        .collect::<Vec<_>>()
        .into()
}

pub(crate) fn check_change_set(cs: &ChangeSetRecord) -> Result<(), StoreError> {
    check_nonempty("change set id", &cs.id)?;
    if !CHANGE_SET_STATUSES.contains(&cs.status.as_str()) {
        return Err(StoreError::Data(format!(
            "change set {}: unknown status {:?} (expected one of {})",
            cs.id,
            cs.status,
            CHANGE_SET_STATUSES.join(", ")
        )));
    }
    Ok(())
}

pub(crate) fn check_pending(cs: &PendingChangeSet) -> Result<(), StoreError> {
    check_nonempty("pending change set id", &cs.id)?;
    if cs.first_event_time > cs.last_event_time {
        return Err(StoreError::Data(format!(
            "pending change set {}: first event time {} is after last event time {}",
            cs.id, cs.first_event_time, cs.last_event_time
        )));
    }
    if cs.event_ids.iter().any(|id| id.trim().is_empty()) {
        return Err(StoreError::Data(format!("pending change set {}: an event id is empty", cs.id)));
    }
    Ok(())
}

/// The longest text an index key holds whole, in bytes: well under Postgres's btree limit (about
/// 2,700 bytes per entry, shared by every column of the key).
pub(crate) const MAX_INDEX_KEY: usize = 1024;

/// A key column's value (a knowledge signature, a field's address or attribute path), bounded:
/// a longer one becomes its first part and, after it, its length and SHA-256, so the same value
/// always gives the same key and no index ever sees an unbounded value.
pub fn index_key(text: &str) -> std::borrow::Cow<'_, str> {
    use sha2::Digest;
    if text.len() <= MAX_INDEX_KEY {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut end = MAX_INDEX_KEY - 100;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let digest = hex::encode(sha2::Sha256::digest(text.as_bytes()));
    std::borrow::Cow::Owned(format!("{}…[{} bytes, sha256 {digest}]", &text[..end], text.len()))
}

pub(crate) fn check_field_change(c: &FieldChangeRecord) -> Result<(), StoreError> {
    check_nonempty("field change address", &c.address)?;
    check_nonempty("field change attribute_path", &c.attribute_path)?;
    check_nonempty("field change event_id", &c.event_id)
}

/// A vector must have the embedder's dimension and finite components.
pub(crate) fn check_vector(embedder: &EmbedderSpec, v: &[f32]) -> Result<(), StoreError> {
    check_nonempty("embedder name", &embedder.name)?;
    if embedder.dimension == 0 {
        return Err(StoreError::Data(format!("embedder {} has dimension 0", embedder.name)));
    }
    if v.len() != embedder.dimension {
        return Err(StoreError::Data(format!(
            "a vector of {} has {} components, not {}",
            embedder.name,
            v.len(),
            embedder.dimension
        )));
    }
    if v.iter().any(|x| !x.is_finite()) {
        return Err(StoreError::Data(format!(
            "a vector of {} has a component that is not a finite number",
            embedder.name
        )));
    }
    Ok(())
}

/// `vectors` must name every id in `ids` exactly once (a re-embedding leaves no entry behind).
pub(crate) fn check_covers(ids: &[i64], vectors: &[(i64, Vec<f32>)]) -> Result<(), StoreError> {
    let mut given: Vec<i64> = vectors.iter().map(|(id, _)| *id).collect();
    given.sort_unstable();
    if given != ids {
        let missing = ids.iter().filter(|id| given.binary_search(id).is_err()).count();
        return Err(StoreError::Data(format!(
            "re-embedding must give one vector for each of the {} knowledge entries; {} given, {missing} entries \
             missing (entries were added meanwhile, or an id is unknown or repeated): run it again",
            ids.len(),
            vectors.len()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_must_match_the_embedder() {
        let spec = EmbedderSpec { name: "hashing-v1".into(), dimension: 3 };
        assert!(check_vector(&spec, &[0.1, 0.2, 0.3]).is_ok());
        let short = check_vector(&spec, &[0.1, 0.2]).unwrap_err().to_string();
        assert!(short.contains("2 components, not 3"), "{short}");
        assert!(check_vector(&spec, &[0.1, f32::NAN, 0.3]).is_err());
    }
}
