//! The fast reader: each record is read once, in place, into a borrowed [`Record`].
//!
//! A CloudTrail log file is scanned record by record: each record's fields that the pipeline reads
//! are deserialised straight from the input text (borrowed, nothing copied), everything else is
//! skipped, and the request and response stay unparsed text. Whether an event is noise is decided
//! from that view ([`Record::disposition`]); only the events that are kept need
//! [`Record::to_event`], which parses the rest. On a realistic trail (three records in four are
//! read-only, failed or the IaC tool's own) that is most of the speed: see docs/benchmarks.md.

use chrono::{DateTime, Utc};
use serde::de::IgnoredAny;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::event::ApiEvent;
use crate::filter::{Caller, Disposition, DropReason, FilterConfig, actor_drop, call_drop, no_configuration};
use crate::input_error::{BadRecord, ReadError};
use crate::normalize::NormalizeError;
use crate::normalize::normalize_api_name;
use crate::record::{Checked, Content, Head, Loose, Place};

const ENVELOPE_DETAIL_TYPE: &str = "AWS API Call via CloudTrail";

type RawHead<'a> = Head<'a, &'a RawValue>;

/// One CloudTrail record as it sits in the input, its required fields checked.
#[derive(Debug)]
pub struct Record<'a> {
    /// The record's text; for a record written without `eventID`, with the derived one added.
    text: std::borrow::Cow<'a, str>,
    checked: Checked<'a, &'a RawValue>,
    /// Whether it came inside an EventBridge envelope (whose `source` was checked).
    enveloped: bool,
}

impl<'a> Record<'a> {
    fn new(text: &'a str, checked: Checked<'a, &'a RawValue>, enveloped: bool) -> Record<'a> {
        let text = match &checked.derived_id {
            None => std::borrow::Cow::Borrowed(text),
            // The id is hex: no escaping. A record is an object with members (it was checked).
            Some(id) => {
                let rest = text.trim_start().strip_prefix('{').unwrap_or(text);
                std::borrow::Cow::Owned(format!("{{\"eventID\":\"{id}\",{rest}"))
            }
        };
        Record { text, checked, enveloped }
    }

    /// The record's JSON text, exactly as in the input (for an EventBridge envelope: its `detail`).
    /// A record written without `eventID` (event versions 1.0x) has the id driftback derived for it
    /// added as its first member, so that reading the text again, alone (as the knowledge base
    /// does), gives the same id.
    pub fn text(&self) -> &str {
        &self.text
    }
    /// Whether it came inside an EventBridge envelope from an `aws.*` source that agrees with its
    /// `eventSource` (a bare record, or one in a log file or a list, did not).
    pub fn enveloped(&self) -> bool {
        self.enveloped
    }
    /// `eventID`; for a record written without one, an id derived from its request id, time,
    /// call, position in its container and content (`derived-...`, see docs/operations.md): the
    /// same each time the same input is read.
    pub fn id(&self) -> &str {
        self.checked.id()
    }
    /// `eventTime`.
    pub fn time(&self) -> DateTime<Utc> {
        self.checked.time
    }
    /// `eventSource`.
    pub fn source(&self) -> &str {
        self.checked.source()
    }
    /// `eventName` exactly as recorded.
    pub fn raw_name(&self) -> &str {
        self.checked.raw_name()
    }
    /// `awsRegion` (empty when absent).
    pub fn region(&self) -> &str {
        self.checked.region()
    }
    /// The account the call was made in: `recipientAccountId`, else the caller's account (as
    /// [`ApiEvent::account`]; empty when the record names neither).
    pub fn account(&self) -> &str {
        self.checked.account()
    }
    /// The short human name of who made the call (as [`crate::Actor::display_name`]).
    pub fn actor_name(&self) -> &str {
        self.checked.actor().display_name
    }

    /// Whether the event is a drift candidate: the same answer as [`crate::classify`] on
    /// [`Record::to_event`], without building the event.
    pub fn disposition(&self, config: &FilterConfig) -> Disposition {
        let c = &self.checked;
        let reason = call_drop(c.failed(), c.read_only(), c.management(), c.event_type())
            .or_else(|| {
                let actor = c.actor();
                actor_drop([actor.principal_arn, actor.session_issuer, actor.source_identity], actor.via, config)
            })
            .or_else(|| {
                let actor = c.actor();
                let caller = Caller { invoked_by: actor.invoked_by, session_issuer: actor.session_issuer };
                // The request is read only for a call whose entry has a condition on it.
                let request = || c.head.request.and_then(|raw| serde_json::from_str::<Value>(raw.get()).ok());
                no_configuration(c.source(), normalize_api_name(c.raw_name()), caller, request)
                    .map(|_| DropReason::ChangesNoConfiguration)
            });
        reason.map_or(Disposition::Keep, Disposition::Drop)
    }

    /// The normalised event, request and response parsed.
    pub fn to_event(&self) -> Result<ApiEvent, NormalizeError> {
        let payload = |raw: Option<&RawValue>, field: &'static str| match raw {
            None => Ok(Value::Null),
            Some(raw) => {
                serde_json::from_str(raw.get()).map_err(|e| NormalizeError::Payload { field, message: message(&e) })
            }
        };
        let request = payload(self.checked.head.request, "requestParameters")?;
        let response = payload(self.checked.head.response, "responseElements")?;
        let resources = payload(self.checked.head.resources, "resources")?;
        Ok(self.checked.event(request, response, &resources))
    }
}

/// What the scanner found at one place in the input.
// An entry is handed to the visitor and dropped, never stored in bulk: boxing the record would cost
// an allocation per record on the hot path for nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Entry<'a> {
    Record(Record<'a>),
    /// Input that is not a usable record; scanning goes on after it.
    Bad(BadRecord),
}

/// Read one CloudTrail record given as JSON text (LookupEvents' `CloudTrailEvent`).
pub fn read_record(text: &str) -> Result<Record<'_>, NormalizeError> {
    let text = text.trim();
    if !text.starts_with('{') {
        return Err(match serde_json::from_str::<IgnoredAny>(text) {
            Ok(_) => NormalizeError::NotAnObject,
            Err(e) => NormalizeError::Malformed(format!("not JSON: {}", message(&e))),
        });
    }
    let head = serde_json::from_str::<RawHead>(text).map_err(|e| NormalizeError::Malformed(message(&e)))?;
    Ok(Record::new(text, head.check(Place::alone(Content::Text(text)))?, false))
}

/// Scan text holding CloudTrail records: a CloudTrail log file (`{"Records": [...]}`), a JSON array of
/// records, or JSON lines of records or EventBridge envelopes (one record or envelope alone is JSON
/// lines of one line). `visit` sees every record and every bad entry in input order.
///
/// An error means the input as a whole is not readable (not JSON, or not one of these containers).
/// It can come after some entries were visited, because the input is read once, front to back: a
/// caller that must take all of an input or none of it keeps what it was given until this returns
/// `Ok`.
pub fn scan<'a>(text: &'a str, origin: &str, mut visit: impl FnMut(Entry<'a>)) -> Result<(), ReadError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let bytes = text.as_bytes();
    let start = skip_ws(bytes, 0);
    match bytes.get(start) {
        None => Ok(()),
        Some(b'[') => {
            let end = records(text, start + 1, origin, &mut visit)?;
            expect_end(text, end, origin)
        }
        Some(b'{') => match log_file_records(bytes, start) {
            Some(at) => {
                let end = records(text, at, origin, &mut visit)?;
                log_file_end(text, end, origin)
            }
            None => document(text, origin, &mut visit),
        },
        Some(_) => Err(match serde_json::from_str::<IgnoredAny>(text) {
            Ok(_) => {
                ReadError::NotCloudTrail { origin: origin.to_string(), found: "value that is not an object or a list" }
            }
            Err(e) => syntax(origin, text, 0, &e),
        }),
    }
}

/// Where the records of a log file start: after `{"Records": [`, the way CloudTrail writes them.
fn log_file_records(bytes: &[u8], open: usize) -> Option<usize> {
    let key = skip_ws(bytes, open + 1);
    let rest = bytes.get(key..)?.strip_prefix(b"\"Records\"")?;
    let colon = skip_ws(rest, 0);
    (rest.get(colon) == Some(&b':')).then_some(())?;
    let bracket = skip_ws(rest, colon + 1);
    (rest.get(bracket) == Some(&b'[')).then_some(key + 9 + bracket + 1)
}

/// After a log file's records: `}` or more keys, then nothing.
fn log_file_end(text: &str, end: usize, origin: &str) -> Result<(), ReadError> {
    let bytes = text.as_bytes();
    let at = skip_ws(bytes, end);
    match bytes.get(at) {
        Some(b'}') => expect_end(text, at + 1, origin),
        Some(b',') => {
            // Keys after `Records`: rare; read them the plain way.
            let rest = format!("{{{}", &text[at + 1..]);
            match serde_json::from_str::<std::collections::BTreeMap<String, IgnoredAny>>(&rest) {
                Ok(keys) if keys.contains_key("Records") => Err(ReadError::NotCloudTrail {
                    origin: origin.to_string(),
                    found: "object with `Records` given twice",
                }),
                Ok(_) => Ok(()),
                Err(e) => Err(syntax(origin, text, at, &e)),
            }
        }
        _ => Err(syntax_here(origin, text, at, "expected `,` or `}` after the records")),
    }
}

fn expect_end(text: &str, end: usize, origin: &str) -> Result<(), ReadError> {
    let at = skip_ws(text.as_bytes(), end);
    if at < text.len() { Err(syntax_here(origin, text, at, "trailing characters")) } else { Ok(()) }
}

/// The elements of a list whose `[` is just before `at`, up to its `]`; returns the position after it.
fn records<'a>(text: &'a str, at: usize, origin: &str, visit: &mut impl FnMut(Entry<'a>)) -> Result<usize, ReadError> {
    let bytes = text.as_bytes();
    let mut at = skip_ws(bytes, at);
    if bytes.get(at) == Some(&b']') {
        return Ok(at + 1);
    }
    for index in 1.. {
        let rest = &text[at..];
        let location = || format!("{origin}: record {index}");
        let mut parsed = None;
        if rest.starts_with('{') {
            let mut stream = serde_json::Deserializer::from_str(rest).into_iter::<RawHead<'a>>();
            if let Some(Ok(head)) = stream.next() {
                parsed = Some((head, stream.byte_offset()));
            }
        }
        let len = match parsed {
            Some((head, len)) => {
                visit(entry(&rest[..len], head, index, location));
                len
            }
            None => {
                // Not an object, or one the record fields cannot be read from: find where it ends.
                let mut stream = serde_json::Deserializer::from_str(rest).into_iter::<&RawValue>();
                match stream.next() {
                    Some(Ok(_)) => {
                        let len = stream.byte_offset();
                        let raw = &rest[..len];
                        visit(Entry::Bad(BadRecord {
                            location: location(),
                            reason: not_a_record(raw),
                            raw: raw.to_string(),
                        }));
                        len
                    }
                    Some(Err(e)) => return Err(syntax(origin, text, at, &e)),
                    None => return Err(syntax_here(origin, text, at, "EOF while parsing a list")),
                }
            }
        };
        at = skip_ws(bytes, at + len);
        match bytes.get(at) {
            Some(b',') => at = skip_ws(bytes, at + 1),
            Some(b']') => return Ok(at + 1),
            Some(_) => return Err(syntax_here(origin, text, at, "expected `,` or `]`")),
            None => return Err(syntax_here(origin, text, at, "EOF while parsing a list")),
        }
    }
    unreachable!("the loop over elements returns")
}

/// Why valid JSON that is not a record is not one.
fn not_a_record(text: &str) -> String {
    if !text.starts_with('{') {
        return NormalizeError::NotAnObject.to_string();
    }
    match serde_json::from_str::<RawHead>(text) {
        Ok(_) => NormalizeError::Malformed("unreadable record".into()).to_string(),
        Err(e) => NormalizeError::Malformed(message(&e)).to_string(),
    }
}

/// One top-level object that is not laid out as a log file: a log file with other keys first, one
/// record, one envelope; or, failing that, JSON lines.
fn document<'a>(text: &'a str, origin: &str, visit: &mut impl FnMut(Entry<'a>)) -> Result<(), ReadError> {
    match serde_json::from_str::<RawHead<'a>>(text) {
        Ok(head) => {
            if let Some(list) = head.records {
                let list = list.get();
                if !list.starts_with('[') {
                    return Err(ReadError::NotCloudTrail {
                        origin: origin.to_string(),
                        found: "object whose Records is not a list",
                    });
                }
                let at = list.as_ptr() as usize - text.as_ptr() as usize;
                records(text, at + 1, origin, visit)?;
                return Ok(());
            }
            if head.id.is_absent() && head.detail_type.is_absent() {
                return Err(ReadError::NotCloudTrail { origin: origin.to_string(), found: "object without Records" });
            }
            visit(entry(text.trim(), head, 1, || format!("{origin}: line 1")));
            Ok(())
        }
        Err(e) => match serde_json::from_str::<IgnoredAny>(text) {
            // One object whose record fields cannot be read (a field given twice).
            Ok(_) => {
                let reason = NormalizeError::Malformed(message(&e)).to_string();
                visit(Entry::Bad(BadRecord { location: format!("{origin}: line 1"), reason, raw: text.to_string() }));
                Ok(())
            }
            // Several top-level values, or broken JSON over several lines: JSON lines, judged line by line.
            Err(e)
                if (e.is_syntax() && e.to_string().contains("trailing characters"))
                    || text.bytes().filter(|&b| b == b'\n').count() > 1 =>
            {
                lines(text, origin, visit);
                Ok(())
            }
            Err(e) => Err(syntax(origin, text, 0, &e)),
        },
    }
}

fn lines<'a>(text: &'a str, origin: &str, visit: &mut impl FnMut(Entry<'a>)) {
    for (i, line) in text.split('\n').enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let location = || format!("{origin}: line {}", i + 1);
        let head = if line.starts_with('{') { serde_json::from_str::<RawHead<'a>>(line).ok() } else { None };
        match head {
            Some(head) => visit(entry(line, head, i + 1, location)),
            None => {
                let reason = match serde_json::from_str::<IgnoredAny>(line) {
                    Ok(_) => not_a_record(line),
                    Err(e) => format!("not JSON: {e}"),
                };
                visit(Entry::Bad(BadRecord { location: location(), reason, raw: line.to_string() }));
            }
        }
    }
}

/// One entry of a container, at `position` in it (from 1): a record, or an EventBridge envelope
/// around one.
fn entry<'a>(text: &'a str, head: RawHead<'a>, position: usize, location: impl FnOnce() -> String) -> Entry<'a> {
    let bad = |reason: String| Entry::Bad(BadRecord { location: location(), reason, raw: text.to_string() });
    if head.detail_type.is_absent() {
        return match head.check(Place { position, content: Content::Text(text) }) {
            Ok(checked) => Entry::Record(Record::new(text, checked, false)),
            Err(e) => bad(e.to_string()),
        };
    }
    if !matches!(&head.detail_type, Loose::Text(kind) if kind == ENVELOPE_DETAIL_TYPE) {
        return bad(format!(
            "EventBridge envelope of detail-type {}, not \"{ENVELOPE_DETAIL_TYPE}\"",
            head.detail_type
        ));
    }
    // Only AWS sends `aws.*` sources; any caller allowed `events:PutEvents` can send the rest, and
    // with it a console change nobody made.
    let envelope_source = match &head.envelope_source {
        Loose::Text(source) if source.starts_with("aws.") => source.clone(),
        other => {
            return bad(format!(
                "EventBridge envelope from source {other}: CloudTrail's come from `aws.*` sources, which only \
                 AWS can send; this one may be forged"
            ));
        }
    };
    let Some(detail) = head.detail.map(RawValue::get).filter(|d| d.starts_with('{')) else {
        return bad("EventBridge envelope without a `detail` object".into());
    };
    match serde_json::from_str::<RawHead<'a>>(detail) {
        Ok(record) => match record.check(Place { position, content: Content::Text(detail) }) {
            // The service that sent the envelope is the one whose call it carries.
            Ok(checked) if !crate::sources::envelope_agrees(&envelope_source, checked.source()) => bad(format!(
                "EventBridge envelope from source \"{envelope_source}\" carries a record of eventSource \"{}\", \
                 which that service does not send; it may be forged",
                checked.source()
            )),
            Ok(checked) => Entry::Record(Record::new(detail, checked, true)),
            Err(e) => bad(e.to_string()),
        },
        Err(e) => bad(NormalizeError::Malformed(message(&e)).to_string()),
    }
}

fn skip_ws(bytes: &[u8], mut at: usize) -> usize {
    while bytes.get(at).is_some_and(|b| matches!(b, b' ' | b'\n' | b'\r' | b'\t')) {
        at += 1;
    }
    at
}

/// serde_json's message without its position (positions are given separately).
fn message(e: &serde_json::Error) -> String {
    e.to_string().split(" at line").next().unwrap_or_default().to_string()
}

/// Line and column (both from 1) of a byte position.
pub(crate) fn line_col(text: &[u8], at: usize) -> (usize, usize) {
    let before = &text[..at.min(text.len())];
    let line = 1 + before.iter().filter(|&&b| b == b'\n').count();
    let column = at - before.iter().rposition(|&b| b == b'\n').map_or(0, |nl| nl + 1) + 1;
    (line, column)
}

/// A syntax error serde_json reported while reading from byte `at` of `text`.
fn syntax(origin: &str, text: &str, at: usize, e: &serde_json::Error) -> ReadError {
    let (line, column) = line_col(text.as_bytes(), at);
    ReadError::Syntax {
        origin: origin.to_string(),
        line: line + e.line().saturating_sub(1),
        column: if e.line() <= 1 { column - 1 + e.column() } else { e.column() },
        message: message(e),
    }
}

fn syntax_here(origin: &str, text: &str, at: usize, message: &str) -> ReadError {
    let (line, column) = line_col(text.as_bytes(), at);
    ReadError::Syntax { origin: origin.to_string(), line, column, message: message.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entries(text: &str) -> Result<Vec<Result<ApiEvent, String>>, ReadError> {
        let mut out = Vec::new();
        scan(text, "t", |entry| match entry {
            Entry::Record(r) => out.push(r.to_event().map_err(|e| e.to_string())),
            Entry::Bad(b) => out.push(Err(format!("{}: {}", b.location, b.reason))),
        })?;
        Ok(out)
    }

    /// A record with the fields every event needs, as JSON text.
    fn record() -> String {
        json!({
            "eventID": "e1", "eventTime": "2024-03-01T10:00:00Z", "eventSource": "ec2.amazonaws.com",
            "eventName": "CreateTags", "userIdentity": {"type": "Root"}, "requestParameters": {"a": [1]}
        })
        .to_string()
    }

    /// The CloudTrail User Guide's log file examples of event version 1.0, as printed: no
    /// `eventID`, no `requestID`, no `eventType`, no `recipientAccountId`.
    const GUIDE_1_0: &str = include_str!("../testdata/cloudtrail-guide-1.0.json");

    fn ids_of(text: &str) -> Vec<String> {
        let mut ids = Vec::new();
        scan(text, "t", |entry| match entry {
            Entry::Record(r) => ids.push(r.id().to_string()),
            Entry::Bad(b) => panic!("{}: {}", b.location, b.reason),
        })
        .unwrap();
        ids
    }

    #[test]
    fn records_without_an_event_id_get_a_derived_one_that_reading_again_keeps() {
        let first = ids_of(GUIDE_1_0);
        assert_eq!(first.len(), 4, "every 1.0 record is kept: {first:?}");
        assert!(first.iter().all(|id| id.starts_with(crate::record::DERIVED_ID_PREFIX) && id.len() == 40), "{first:?}");
        let mut unique = first.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), 4, "{first:?}");
        // The same file read again: the same ids, so the store deduplicates them.
        assert_eq!(ids_of(GUIDE_1_0), first);
        // Layout does not matter, position and content do.
        let value: Value = serde_json::from_str(GUIDE_1_0).unwrap();
        assert_eq!(ids_of(&value.to_string()), first);
        let records = value["Records"].as_array().unwrap();
        let lines: String = records.iter().map(|r| format!("{r}\n")).collect();
        assert_eq!(ids_of(&lines), first, "JSON lines number records as a log file does");
        let swapped = ids_of(&json!({"Records": [records[1], records[0]]}).to_string());
        assert_ne!(swapped[0], first[1], "a record's position is part of its id");
        // Two records that are the same text in one file stay two events.
        let twice = json!({"Records": [records[3], records[3]]}).to_string();
        let both = ids_of(&twice);
        assert_ne!(both[0], both[1]);
        // The same record with another user added is another event, even at the same place.
        let mut other = records[3].clone();
        other["requestParameters"]["userName"] = json!("Carol");
        let other = json!({"Records": [records[0], records[1], records[2], other]}).to_string();
        assert_ne!(ids_of(&other)[3], first[3]);
    }

    #[test]
    fn a_derived_id_travels_with_the_record_text() {
        let mut texts = Vec::new();
        scan(GUIDE_1_0, "t", |entry| {
            if let Entry::Record(r) = entry {
                texts.push((r.id().to_string(), r.text().to_string(), r.to_event().unwrap()));
            }
        })
        .unwrap();
        for (id, text, event) in texts {
            assert_eq!(event.id, id);
            // Read again alone, as the knowledge base reads what it kept: the same id, the same event.
            let again = read_record(&text).unwrap();
            assert_eq!(again.id(), id);
            assert_eq!(again.to_event().unwrap(), event);
            let value: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(value["eventID"], json!(id));
        }
        // A record given alone reads the same whichever reader reads it.
        let alone = serde_json::from_str::<Value>(GUIDE_1_0).unwrap()["Records"][3].clone();
        assert_eq!(read_record(&alone.to_string()).unwrap().id(), crate::normalize(&alone).unwrap().id);
        // Inside an envelope, the detail's text carries it.
        let envelope = format!(
            r#"{{"version":"0","id":"x","detail-type":"AWS API Call via CloudTrail","source":"aws.iam","detail":{alone}}}"#
        );
        let mut seen = Vec::new();
        scan(&envelope, "m", |entry| {
            if let Entry::Record(r) = entry {
                seen.push((r.id().to_string(), r.text().to_string()));
            }
        })
        .unwrap();
        let (id, text) = &seen[0];
        assert_eq!(read_record(text).unwrap().id(), id);
    }

    #[test]
    fn calls_that_change_no_configuration_are_dropped_as_the_event_filter_drops_them() {
        use crate::filter::{DropReason, classify};
        let config = FilterConfig::default();
        let mut seen = Vec::new();
        let storage = json!({"eventID": "s", "eventTime": "2024-03-01T10:00:00Z", "eventSource": "rds.amazonaws.com",
            "eventName": "ModifyDBInstance", "userIdentity": {"type": "AWSService", "invokedBy": "rds.amazonaws.com"},
            "requestParameters": {"dBInstanceIdentifier": "orders", "allocatedStorage": 120}});
        let text = format!("{},{storage}]}}", GUIDE_1_0.trim_end().trim_end_matches("]}"));
        scan(&text, "t", |entry| {
            if let Entry::Record(r) = entry {
                let by_event = classify(&r.to_event().unwrap(), &config);
                assert_eq!(r.disposition(&config), by_event, "{}", r.raw_name());
                seen.push((r.raw_name().to_string(), by_event));
            }
        })
        .unwrap();
        let dropped = Disposition::Drop(DropReason::ChangesNoConfiguration);
        assert_eq!(
            seen,
            [
                ("StartInstances".to_string(), dropped),
                ("StopInstances".to_string(), dropped),
                ("CreateUser".to_string(), Disposition::Keep),
                ("AddUserToGroup".to_string(), Disposition::Keep),
                ("ModifyDBInstance".to_string(), dropped),
            ]
        );
    }

    #[test]
    fn an_event_id_that_is_there_but_not_text_is_refused_by_name() {
        for id in [json!(7), json!(""), json!({"a": 1})] {
            let mut r: Value = serde_json::from_str(&record()).unwrap();
            r["eventID"] = id.clone();
            let got = entries(&format!("[{r}]")).unwrap();
            assert!(got[0].as_ref().is_err_and(|e| e.contains("eventID")), "{id}: {got:?}");
        }
        let mut r: Value = serde_json::from_str(&record()).unwrap();
        r["eventID"] = Value::Null;
        assert!(entries(&format!("[{r}]")).unwrap()[0].as_ref().unwrap().id.starts_with("derived-"));
    }

    #[test]
    fn an_envelope_not_from_an_aws_source_is_bad_input() {
        let r = r#"{"eventID":"e1","eventTime":"2024-03-01T10:00:00Z","eventSource":"ec2.amazonaws.com","eventName":"CreateTags","userIdentity":{"type":"Root"}}"#;
        let envelope =
            |source: &str| format!(r#"{{"detail-type":"AWS API Call via CloudTrail","source":{source},"detail":{r}}}"#);
        for (source, kept) in [
            ("\"aws.ec2\"", true),
            ("\"driftback.test\"", false),
            ("\"awsx.ec2\"", false),
            ("null", false),
            // An `aws.*` source of another service than the record's.
            ("\"aws.s3\"", false),
            ("\"aws.iam\"", false),
        ] {
            let mut records = 0;
            let mut bad = Vec::new();
            scan(&envelope(source), "m", |entry| match entry {
                Entry::Record(_) => records += 1,
                Entry::Bad(b) => bad.push(b.reason),
            })
            .unwrap();
            assert_eq!(records == 1, kept, "{source}: {bad:?}");
            if !kept {
                assert!(bad[0].contains("may be forged"), "{bad:?}");
            }
        }
    }

    #[test]
    fn log_files_with_other_keys_and_envelopes_in_lists() {
        let r = record();
        let envelope = format!(r#"{{"detail-type":"AWS API Call via CloudTrail","source":"aws.ec2","detail":{r}}}"#);
        for text in [
            format!(r#"{{"Digest": {{"a": [1]}}, "Records": [{r}, {envelope}]}}"#),
            format!(r#"{{ "Records" : [ {r} , {envelope} ] , "Digest": "x" }}"#),
            format!("[{r},\n{envelope}]"),
            format!("\u{feff}{r}\n{envelope}\n"),
        ] {
            let got = entries(&text).unwrap();
            assert_eq!(got.len(), 2, "{text}");
            assert!(got.iter().all(Result::is_ok), "{got:?}");
        }
        let twice = format!(r#"{{"Records": [{r}], "Records": []}}"#);
        assert!(matches!(entries(&twice), Err(ReadError::NotCloudTrail { .. })));
    }

    #[test]
    fn bad_entries_are_reported_and_scanning_goes_on() {
        let r = record();
        let duplicate = r#"{"eventID": "a", "eventID": "b", "eventTime": "2024-03-01T10:00:00Z"}"#;
        let deep = format!(
            r#"{{"eventID":"d","eventTime":"2024-03-01T10:00:00Z","eventSource":"s","eventName":"n","userIdentity":{{}},"requestParameters":{}{}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        let text = format!(r#"{{"Records": [{r}, 7, {duplicate}, {deep}, {r}]}}"#);
        let got = entries(&text).unwrap();
        assert_eq!(got.len(), 5);
        assert!(got[0].is_ok() && got[4].is_ok());
        assert_eq!(got[1].as_ref().unwrap_err(), "t: record 2: not a JSON object");
        assert!(got[2].as_ref().unwrap_err().contains("duplicate field `eventID`"), "{:?}", got[2]);
        assert!(got[3].as_ref().unwrap_err().contains("requestParameters"), "{:?}", got[3]);
    }

    #[test]
    fn broken_inputs_fail_as_a_whole_with_the_place() {
        let r = record();
        let cut = format!("{{\"Records\": [{r},\n{r},\n{{\"eventID\": ]}}");
        let Err(ReadError::Syntax { line, .. }) = entries(&cut) else { panic!("{:?}", entries(&cut)) };
        assert_eq!(line, 3);
        for text in [format!("[{r},]"), format!("[{r}] x"), format!("{{\"Records\": [{r}] x"), "[1, 2".to_string()] {
            assert!(matches!(entries(&text), Err(ReadError::Syntax { .. })), "{text}");
        }
        for text in ["5", "\"text\"", "true", "{\"foo\": 1}", "{\"Records\": 3}"] {
            assert!(matches!(entries(text), Err(ReadError::NotCloudTrail { .. })), "{text}");
        }
        assert!(entries("").unwrap().is_empty());
    }
}
