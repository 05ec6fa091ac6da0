//! Decoding the containers CloudTrail records arrive in.
//!
//! Accepted: a CloudTrail log file `{"Records": [...]}` (plain or gzip), a JSON array of records, and
//! JSON lines of records or EventBridge envelopes (`"detail-type": "AWS API Call via CloudTrail"`,
//! the record under `detail`). One bad record among good ones is reported, not fatal.

use std::io::Read;
use std::path::Path;

use serde_json::Value;

use crate::event::ApiEvent;
use crate::input_error::{BadRecord, ReadError};
use crate::scan::{Entry, line_col, scan};

/// What one input held: the events that normalised, with their raw records, and the ones that did not.
#[derive(Debug, Default)]
pub struct RecordBatch {
    pub events: Vec<(ApiEvent, Value)>,
    pub bad: Vec<BadRecord>,
}

/// Read and decode a file (gzip recognised by its magic bytes, whatever the name).
pub fn read_file(path: &Path) -> Result<RecordBatch, ReadError> {
    decode_text(&read_text(path)?, &path.display().to_string())
}

/// A file's text: gzip recognised by its magic bytes, whatever the name; UTF-8 required.
pub fn read_text(path: &Path) -> Result<String, ReadError> {
    let origin = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|source| ReadError::Io { path: origin.clone(), source })?;
    text_of(bytes, &origin)
}

/// The text of bytes holding CloudTrail records (gunzipped when they are gzip); `origin` names
/// them in messages.
pub fn text_of(bytes: Vec<u8>, origin: &str) -> Result<String, ReadError> {
    let bytes = if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        flate2::read::MultiGzDecoder::new(&bytes[..])
            .read_to_end(&mut out)
            .map_err(|source| ReadError::Gzip { origin: origin.to_string(), source })?;
        out
    } else {
        bytes
    };
    String::from_utf8(bytes).map_err(|e| {
        let (line, column) = line_col(e.as_bytes(), e.utf8_error().valid_up_to());
        ReadError::Syntax { origin: origin.to_string(), line, column, message: "not valid UTF-8".into() }
    })
}

/// Decode bytes holding CloudTrail records; `origin` names them in messages. Every record is
/// normalised (see [`crate::scan`] for the reader that normalises only what it keeps).
pub fn decode(bytes: &[u8], origin: &str) -> Result<RecordBatch, ReadError> {
    decode_text(&text_of(bytes.to_vec(), origin)?, origin)
}

fn decode_text(text: &str, origin: &str) -> Result<RecordBatch, ReadError> {
    let mut batch = RecordBatch::default();
    scan(text, origin, |entry| match entry {
        Entry::Record(record) => {
            let read = record.to_event().map_err(|e| e.to_string()).and_then(|event| {
                let raw = serde_json::from_str::<Value>(record.text());
                raw.map(|raw| (event, raw)).map_err(|e| format!("record cannot be read: {e}"))
            });
            match read {
                Ok(pair) => batch.events.push(pair),
                Err(reason) => batch.bad.push(BadRecord {
                    location: format!("{origin}: event {}", record.id()),
                    reason,
                    raw: record.text().to_string(),
                }),
            }
        }
        Entry::Bad(bad) => batch.bad.push(bad),
    })?;
    Ok(batch)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn rec(id: &str) -> String {
        format!(
            r#"{{"eventVersion":"1.09","eventID":"{id}","eventTime":"2024-03-01T10:00:00Z","eventSource":"ec2.amazonaws.com","eventName":"CreateTags","awsRegion":"us-east-1","userIdentity":{{"type":"Root"}},"requestParameters":{{}}}}"#
        )
    }

    fn ids(batch: &RecordBatch) -> Vec<&str> {
        batch.events.iter().map(|(e, _)| e.id.as_str()).collect()
    }

    #[test]
    fn all_container_formats_decode() {
        let log = format!(r#"{{"Records": [{}, {}]}}"#, rec("a"), rec("b"));
        assert_eq!(ids(&decode(log.as_bytes(), "f").unwrap()), ["a", "b"]);

        let array = format!("[{}, {}]", rec("a"), rec("b"));
        assert_eq!(ids(&decode(array.as_bytes(), "f").unwrap()), ["a", "b"]);

        let lines = format!(
            "{}\n{{\"version\":\"0\",\"detail-type\":\"AWS API Call via CloudTrail\",\"source\":\"aws.ec2\",\"detail\":{}}}\n\n",
            rec("a"),
            rec("b")
        );
        assert_eq!(ids(&decode(lines.as_bytes(), "f").unwrap()), ["a", "b"]);

        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(log.as_bytes()).unwrap();
        assert_eq!(ids(&decode(&gz.finish().unwrap(), "f.json.gz").unwrap()), ["a", "b"]);

        assert_eq!(ids(&decode(rec("solo").as_bytes(), "f").unwrap()), ["solo"]);
        assert!(decode(b"  \n", "f").unwrap().events.is_empty());
    }

    #[test]
    fn a_bad_record_among_good_ones_is_reported_and_skipped() {
        let log = format!(r#"{{"Records": [{}, {{"hello": 1}}, {}]}}"#, rec("a"), rec("c"));
        let batch = decode(log.as_bytes(), "trail.json").unwrap();
        assert_eq!(ids(&batch), ["a", "c"]);
        assert_eq!(batch.bad.len(), 1);
        assert_eq!(batch.bad[0].location, "trail.json: record 2");
        // Without an eventID a record is still judged by the rest: here, it has no time.
        assert!(batch.bad[0].reason.contains("eventTime"), "{}", batch.bad[0].reason);

        let lines = format!(
            "{}\n{{not json\n{{\"detail-type\":\"Scheduled Event\",\"detail\":{{}}}}\n{}\n",
            rec("a"),
            rec("c")
        );
        let batch = decode(lines.as_bytes(), "f.jsonl").unwrap();
        assert_eq!(ids(&batch), ["a", "c"]);
        let locations: Vec<_> = batch.bad.iter().map(|b| b.location.as_str()).collect();
        assert_eq!(locations, ["f.jsonl: line 2", "f.jsonl: line 3"]);
    }

    #[test]
    fn whole_inputs_that_are_not_cloudtrail_fail_with_the_place() {
        let err = decode(b"{\"Records\": [1, 2,", "broken.json").unwrap_err();
        let ReadError::Syntax { origin, line, .. } = &err else { panic!("{err}") };
        assert_eq!((origin.as_str(), *line), ("broken.json", 1));
        assert!(matches!(decode(b"{\"foo\": 1}", "x").unwrap_err(), ReadError::NotCloudTrail { .. }));
        assert!(matches!(decode(b"hello", "x").unwrap_err(), ReadError::Syntax { .. }));
        assert!(matches!(decode(&[0x1f, 0x8b, 0, 1], "x.gz").unwrap_err(), ReadError::Gzip { .. }));
    }
}
