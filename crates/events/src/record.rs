//! One CloudTrail record read into a borrowed view: the fields the pipeline reads, nothing copied.
//!
//! Both ways into the pipeline go through [`Head`]: the scanner deserialises it straight from the
//! input text (request and response stay unparsed text until an event is kept), and
//! [`crate::normalize`] deserialises it from a `serde_json::Value`. So a record means the same thing
//! whichever way it came in.
//!
//! The field types are lenient on purpose: a field of the wrong JSON type counts as absent, as
//! `Value::as_str` would make it, so a record is judged by [`Head::check`] with a reason that names the
//! field, never by a deserialiser's type error.

use std::borrow::Cow;
use std::fmt;

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde::de::{self, IgnoredAny, MapAccess, SeqAccess, Visitor};

use crate::event::{Actor, ApiEvent, CallVia, IdentityType, TouchedResource};
use crate::normalize::{NormalizeError, call_via, looks_read_only, normalize_api_name};
use serde_json::Value;

/// The prefix of an event id driftback derived for a record CloudTrail gave none ([`derived_id`]).
pub const DERIVED_ID_PREFIX: &str = "derived-";

/// A JSON value the pipeline reads as text or as a flag, whatever it turns out to be.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) enum Loose<'a> {
    #[default]
    Absent,
    Null,
    Bool(bool),
    Text(Cow<'a, str>),
    /// A number, an object or a list.
    Other,
}

impl<'a> Loose<'a> {
    /// The text, when it is a non-empty string.
    pub(crate) fn text(&self) -> Option<&str> {
        match self {
            Loose::Text(s) if !s.is_empty() => Some(s),
            _ => None,
        }
    }

    /// `true` or `"true"` (CloudTrail writes some flags one way, some the other).
    fn is_true(&self) -> bool {
        match self {
            Loose::Bool(b) => *b,
            Loose::Text(s) => s == "true",
            _ => false,
        }
    }

    pub(crate) fn is_absent(&self) -> bool {
        matches!(self, Loose::Absent)
    }
}

impl fmt::Display for Loose<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Loose::Absent => f.write_str("(absent)"),
            Loose::Null => f.write_str("null"),
            Loose::Bool(b) => write!(f, "{b}"),
            Loose::Text(s) => write!(f, "{}", serde_json::Value::String(s.to_string())),
            Loose::Other => f.write_str("(a number, object or list)"),
        }
    }
}

/// Skips the rest of a map or a list the lenient types do not want.
fn drain_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(())
}

fn drain_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

impl<'de: 'a, 'a> Deserialize<'de> for Loose<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct LooseVisitor;
        impl<'de> Visitor<'de> for LooseVisitor {
            type Value = Loose<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
                Ok(Loose::Bool(v))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(Loose::Other)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(Loose::Other)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(Loose::Other)
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Loose::Text(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Loose::Text(Cow::Owned(v.to_string())))
            }
            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(Loose::Text(Cow::Owned(v)))
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(Loose::Null)
            }
            fn visit_none<E>(self) -> Result<Self::Value, E> {
                Ok(Loose::Null)
            }
            fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
                d.deserialize_any(self)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                drain_map(map).map(|()| Loose::Other)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                drain_seq(seq).map(|()| Loose::Other)
            }
        }
        deserializer.deserialize_any(LooseVisitor)
    }
}

/// A JSON object read as `T`; anything else (absent, null, text, a list) counts as absent.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Object<T>(pub(crate) Option<T>);

impl<T> Default for Object<T> {
    fn default() -> Self {
        Object(None)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ObjectVisitor<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for ObjectVisitor<T> {
            type Value = Object<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                T::deserialize(de::value::MapAccessDeserializer::new(map)).map(|t| Object(Some(t)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                drain_seq(seq).map(|()| Object(None))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(Object(None))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(Object(None))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(Object(None))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(Object(None))
            }
            fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
                Ok(Object(None))
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(Object(None))
            }
            fn visit_none<E>(self) -> Result<Self::Value, E> {
                Ok(Object(None))
            }
            fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
                d.deserialize_any(self)
            }
        }
        deserializer.deserialize_any(ObjectVisitor(std::marker::PhantomData))
    }
}

/// `userIdentity`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Identity<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Loose<'a>,
    #[serde(borrow, default)]
    arn: Loose<'a>,
    #[serde(rename = "accountId", borrow, default)]
    account_id: Loose<'a>,
    #[serde(rename = "userName", borrow, default)]
    user_name: Loose<'a>,
    #[serde(rename = "invokedBy", borrow, default)]
    invoked_by: Loose<'a>,
    #[serde(rename = "sourceIdentity", borrow, default)]
    source_identity: Loose<'a>,
    #[serde(rename = "sessionContext", borrow, default)]
    context: Object<SessionContext<'a>>,
}

/// `userIdentity.sessionContext`.
#[derive(Debug, Default, Deserialize)]
struct SessionContext<'a> {
    #[serde(rename = "sessionIssuer", borrow, default)]
    issuer: Object<SessionIssuer<'a>>,
    #[serde(rename = "sourceIdentity", borrow, default)]
    source_identity: Loose<'a>,
    #[serde(borrow, default)]
    attributes: Object<SessionAttributes<'a>>,
}

#[derive(Debug, Default, Deserialize)]
struct SessionIssuer<'a> {
    #[serde(borrow, default)]
    arn: Loose<'a>,
}

#[derive(Debug, Default, Deserialize)]
struct SessionAttributes<'a> {
    #[serde(rename = "sessionCredentialFromConsole", borrow, default)]
    from_console: Loose<'a>,
}

/// The fields of a CloudTrail record (or of an EventBridge envelope around one) that the pipeline
/// reads. `P` is how request, response and nested documents are held: unparsed text
/// (`&RawValue`) in the scanner, nothing (`IgnoredAny`) when reading from a `Value`.
#[derive(Debug, Deserialize)]
pub(crate) struct Head<'a, P> {
    #[serde(rename = "eventID", borrow, default)]
    pub(crate) id: Loose<'a>,
    #[serde(rename = "requestID", borrow, default)]
    request_id: Loose<'a>,
    #[serde(rename = "eventTime", borrow, default)]
    time: Loose<'a>,
    #[serde(rename = "eventSource", borrow, default)]
    source: Loose<'a>,
    #[serde(rename = "eventName", borrow, default)]
    name: Loose<'a>,
    #[serde(rename = "awsRegion", borrow, default)]
    region: Loose<'a>,
    #[serde(rename = "recipientAccountId", borrow, default)]
    recipient_account: Loose<'a>,
    #[serde(rename = "userIdentity", borrow, default)]
    identity: Object<Identity<'a>>,
    #[serde(rename = "userAgent", borrow, default)]
    user_agent: Loose<'a>,
    #[serde(rename = "sourceIPAddress", borrow, default)]
    source_ip: Loose<'a>,
    #[serde(rename = "sessionCredentialFromConsole", borrow, default)]
    from_console: Loose<'a>,
    #[serde(rename = "readOnly", borrow, default)]
    read_only: Loose<'a>,
    #[serde(rename = "managementEvent", borrow, default)]
    management: Loose<'a>,
    #[serde(rename = "eventCategory", borrow, default)]
    category: Loose<'a>,
    #[serde(rename = "errorCode", borrow, default)]
    error_code: Loose<'a>,
    #[serde(rename = "eventType", borrow, default)]
    event_type: Loose<'a>,
    #[serde(rename = "requestParameters", default = "none")]
    pub(crate) request: Option<P>,
    #[serde(rename = "responseElements", default = "none")]
    pub(crate) response: Option<P>,
    #[serde(default = "none")]
    pub(crate) resources: Option<P>,
    /// An EventBridge envelope's `detail-type`, `source` and `detail`.
    #[serde(rename = "detail-type", borrow, default)]
    pub(crate) detail_type: Loose<'a>,
    #[serde(rename = "source", borrow, default)]
    pub(crate) envelope_source: Loose<'a>,
    #[serde(default = "none")]
    pub(crate) detail: Option<P>,
    /// A CloudTrail log file's `Records`.
    #[serde(rename = "Records", default = "none")]
    pub(crate) records: Option<P>,
}

fn none<P>() -> Option<P> {
    None
}

/// A record whose required fields are all there: what every event is built from.
#[derive(Debug)]
pub(crate) struct Checked<'a, P> {
    pub(crate) head: Head<'a, P>,
    pub(crate) time: DateTime<Utc>,
    /// The id driftback derived, for a record written without `eventID` ([`derived_id`]).
    pub(crate) derived_id: Option<String>,
}

/// Where a record stands in the input it came in, for [`derived_id`]: its position (from 1) among
/// the entries of its container (a log file's or a list's records, the lines of JSON lines; 1 for
/// a record alone), and its JSON.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Place<'t> {
    pub(crate) position: usize,
    pub(crate) content: Content<'t>,
}

/// A record's JSON, as the reader has it; parsed again only for a record without `eventID`.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Content<'t> {
    Text(&'t str),
    Value(&'t serde_json::Value),
}

impl<'t> Place<'t> {
    /// A record given alone (one line, one `CloudTrailEvent`, one `Value`).
    pub(crate) fn alone(content: Content<'t>) -> Place<'t> {
        Place { position: 1, content }
    }
}

impl<'a, P> Head<'a, P> {
    /// Check the fields every event needs, in a fixed order, naming the first one missing. A record
    /// without `eventID` (event versions 1.0x did not always write it) gets a [`derived_id`] from
    /// `place`; one whose `eventID` is there but is not text is refused naming it.
    pub(crate) fn check(self, place: Place<'_>) -> Result<Checked<'a, P>, NormalizeError> {
        let required = |field: &Loose, name: &'static str| match field.text() {
            Some(_) => Ok(()),
            None => Err(NormalizeError::MissingField(name)),
        };
        let written_without_id = matches!(self.id, Loose::Absent | Loose::Null);
        if !written_without_id {
            required(&self.id, "eventID")?;
        }
        let raw_time = self.time.text().ok_or(NormalizeError::MissingField("eventTime"))?;
        let time = parse_event_time(raw_time).ok_or_else(|| NormalizeError::BadTime(raw_time.to_string()))?;
        required(&self.source, "eventSource")?;
        required(&self.name, "eventName")?;
        if self.identity.0.is_none() {
            return Err(NormalizeError::MissingField("userIdentity"));
        }
        let derived_id = written_without_id.then(|| {
            let text = |field: &Loose| field.text().unwrap_or_default().to_string();
            derived_id(
                &[&text(&self.request_id), raw_time, &text(&self.source), &text(&self.name)],
                place.position,
                place.content,
            )
        });
        Ok(Checked { head: self, time, derived_id })
    }
}

/// `eventTime` as CloudTrail writes it (ISO 8601 in UTC, `2024-03-01T10:00:00Z`), or as CloudTrail
/// Lake and Athena give it back in query results and exports (`2024-03-01 10:00:00.000`, a SQL
/// timestamp without zone, which is UTC).
pub(crate) fn parse_event_time(raw: &str) -> Option<DateTime<Utc>> {
    if let Ok(t) = DateTime::parse_from_rfc3339(raw) {
        return Some(t.with_timezone(&Utc));
    }
    chrono::NaiveDateTime::parse_from_str(raw, "%Y-%m-%d %H:%M:%S%.f").ok().map(|t| t.and_utc())
}

/// The event id of a record CloudTrail wrote without one: `derived-` and 32 hex digits of a
/// SHA-256 over, in this order, NUL-separated:
///
/// - `requestID` (empty when absent): one per API request, so two calls of the same name in the
///   same second stay apart where the record has it;
/// - `eventTime`, `eventSource`, `eventName` as written: which call, and when;
/// - the record's position in its container: two records that are the same text in one file
///   (nothing in a 1.0 record tells them apart) stay two events, and reading the same file again
///   gives each the same position;
/// - the record's content with its keys sorted: the 1.0 records AWS's guides print have no
///   `requestID`, so two different calls of one name in one second, each first in its own file,
///   differ only in what they say (who, on what).
///
/// So the same record read again from the same file gets the same id and is deduplicated, and no
/// two different records share one.
pub(crate) fn derived_id(fields: &[&str], position: usize, content: Content<'_>) -> String {
    use sha2::Digest;
    let mut hash = sha2::Sha256::new();
    for field in fields {
        hash.update(field.as_bytes());
        hash.update([0]);
    }
    hash.update(position.to_string().as_bytes());
    hash.update([0]);
    match content {
        Content::Value(value) => canonical(value, &mut hash),
        Content::Text(text) => match serde_json::from_str::<serde_json::Value>(text) {
            Ok(value) => canonical(&value, &mut hash),
            // JSON the reader took apart but cannot hold as a value (nested too deep): its text.
            Err(_) => hash.update(text.as_bytes()),
        },
    }
    let digest = hash.finalize();
    let mut id = String::with_capacity(DERIVED_ID_PREFIX.len() + 32);
    id.push_str(DERIVED_ID_PREFIX);
    for byte in &digest[..16] {
        id.push_str(&format!("{byte:02x}"));
    }
    id
}

/// Feed a value to the hash with object keys in sorted order, whatever order they were written in.
fn canonical(value: &serde_json::Value, hash: &mut sha2::Sha256) {
    use serde_json::Value;
    use sha2::Digest;
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            hash.update(b"{");
            for key in keys {
                hash.update(serde_json::Value::String(key.clone()).to_string().as_bytes());
                hash.update(b":");
                canonical(&map[key], hash);
                hash.update(b",");
            }
            hash.update(b"}");
        }
        Value::Array(items) => {
            hash.update(b"[");
            for item in items {
                canonical(item, hash);
                hash.update(b",");
            }
            hash.update(b"]");
        }
        scalar => hash.update(scalar.to_string().as_bytes()),
    }
}

/// Who made a call, borrowed from the record: [`Actor`] without its copies.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ActorRef<'r> {
    pub(crate) identity_type: IdentityType,
    pub(crate) principal_arn: Option<&'r str>,
    pub(crate) session_issuer: Option<&'r str>,
    pub(crate) session_name: Option<&'r str>,
    pub(crate) source_identity: Option<&'r str>,
    pub(crate) invoked_by: Option<&'r str>,
    pub(crate) via: CallVia,
    pub(crate) display_name: &'r str,
}

impl ActorRef<'_> {
    pub(crate) fn to_actor(self) -> Actor {
        let own = |s: Option<&str>| s.map(str::to_string);
        Actor {
            identity_type: self.identity_type,
            principal_arn: own(self.principal_arn),
            session_issuer: own(self.session_issuer),
            session_name: own(self.session_name),
            source_identity: own(self.source_identity),
            invoked_by: own(self.invoked_by),
            via: self.via,
            display_name: self.display_name.to_string(),
        }
    }
}

impl<'a, P> Checked<'a, P> {
    fn text<'f>(field: &'f Loose<'a>) -> &'f str {
        field.text().unwrap_or_default()
    }

    /// `eventID`, or the id derived for a record written without one.
    pub(crate) fn id(&self) -> &str {
        self.derived_id.as_deref().unwrap_or_else(|| Self::text(&self.head.id))
    }
    pub(crate) fn source(&self) -> &str {
        Self::text(&self.head.source)
    }
    pub(crate) fn raw_name(&self) -> &str {
        Self::text(&self.head.name)
    }
    pub(crate) fn failed(&self) -> bool {
        self.head.error_code.text().is_some()
    }
    pub(crate) fn read_only(&self) -> bool {
        match &self.head.read_only {
            Loose::Bool(b) => *b,
            Loose::Text(s) => s.eq_ignore_ascii_case("true"),
            _ => looks_read_only(normalize_api_name(self.raw_name())),
        }
    }
    pub(crate) fn management(&self) -> bool {
        match &self.head.management {
            Loose::Bool(b) => *b,
            _ => self.head.category.text().is_none_or(|c| c == "Management"),
        }
    }
    pub(crate) fn event_type(&self) -> &str {
        self.head.event_type.text().unwrap_or("AwsApiCall")
    }

    fn identity(&self) -> &Identity<'a> {
        self.head.identity.0.as_ref().expect("checked: userIdentity is an object")
    }

    /// Who made the call and how.
    pub(crate) fn actor(&self) -> ActorRef<'_> {
        let identity = self.identity();
        let principal_arn = identity.arn.text();
        // AWS's own operations (KMS synchronising a multi-Region key, say) are written with no
        // identity type and no principal, only `invokedBy: "AWS Internal"`: AWS at work. With a
        // type, "AWS Internal" is the console's user agent and caller, and says nothing of who.
        let internal = identity.kind.text().is_none()
            && principal_arn.is_none()
            && identity.invoked_by.text() == Some("AWS Internal");
        let identity_type = match identity.kind.text() {
            Some(kind) => IdentityType::from_cloudtrail(kind),
            None if internal => IdentityType::AwsService,
            None => IdentityType::Unknown,
        };
        let context = identity.context.0.as_ref();
        let session_issuer = context.and_then(|c| c.issuer.0.as_ref()).and_then(|i| i.arn.text());
        let session_name = match identity_type {
            IdentityType::AssumedRole => principal_arn.and_then(|arn| arn.rsplit('/').next()),
            _ => None,
        };
        let source_identity =
            context.and_then(|c| c.source_identity.text()).or_else(|| identity.source_identity.text());
        let source_ip = self.head.source_ip.text();
        // AWS services calling on their own behalf show up with the service as source IP.
        let invoked_by = identity.invoked_by.text().or_else(|| source_ip.filter(|ip| ip.ends_with(".amazonaws.com")));
        let from_console = self.head.from_console.is_true()
            || context.and_then(|c| c.attributes.0.as_ref()).is_some_and(|a| a.from_console.is_true());
        let user_name = identity.user_name.text();
        let via = call_via(identity_type, Self::text(&self.head.user_agent), invoked_by, from_console);
        let display_name = user_name
            .filter(|_| identity_type == IdentityType::IamUser)
            .or(source_identity)
            .or(session_name)
            .or(user_name)
            .or((identity_type == IdentityType::Root).then_some("root"))
            .or(invoked_by)
            .or(principal_arn)
            .unwrap_or("unknown");
        ActorRef {
            identity_type,
            principal_arn,
            session_issuer,
            session_name,
            source_identity,
            invoked_by,
            via,
            display_name,
        }
    }

    pub(crate) fn region(&self) -> &str {
        Self::text(&self.head.region)
    }

    pub(crate) fn account(&self) -> &str {
        self.head.recipient_account.text().or(self.identity().account_id.text()).unwrap_or_default()
    }

    /// The event, with the request, response and `resources` given as parsed by the caller.
    pub(crate) fn event(
        &self,
        request: serde_json::Value,
        response: serde_json::Value,
        resources: &serde_json::Value,
    ) -> ApiEvent {
        let raw_name = self.raw_name();
        ApiEvent {
            id: self.id().to_string(),
            time: self.time,
            source: self.source().to_string(),
            name: normalize_api_name(raw_name).to_string(),
            raw_name: raw_name.to_string(),
            region: self.region().to_string(),
            account: self.account().to_string(),
            actor: self.actor().to_actor(),
            user_agent: Self::text(&self.head.user_agent).to_string(),
            source_ip: Self::text(&self.head.source_ip).to_string(),
            request,
            response,
            read_only: self.read_only(),
            error_code: self.head.error_code.text().map(str::to_string),
            management: self.management(),
            event_type: self.event_type().to_string(),
            resources: TouchedResource::read(resources),
        }
    }
}

/// Normalise one CloudTrail record, given alone (a record without `eventID` gets the id it would
/// get alone in a file: see [`crate::Record::id`]).
pub fn normalize(record: &Value) -> Result<ApiEvent, NormalizeError> {
    let obj = record.as_object().ok_or(NormalizeError::NotAnObject)?;
    // Reading a `Head` from a `Value` cannot fail: every field type accepts any JSON value.
    let head = Head::<IgnoredAny>::deserialize(record).map_err(|_| NormalizeError::NotAnObject)?;
    let checked = head.check(Place::alone(Content::Value(record)))?;
    let payload = |key: &str| obj.get(key).cloned().unwrap_or(Value::Null);
    Ok(checked.event(payload("requestParameters"), payload("responseElements"), &payload("resources")))
}
