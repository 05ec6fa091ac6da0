//! How times are written to and read from the database: UTC RFC 3339 text, microseconds, fixed width.

use chrono::{DateTime, SecondsFormat, Utc};

use crate::StoreError;

/// `2024-05-01T12:00:00.000000Z`: fixed width, so text order is time order.
pub(crate) fn to_text(t: &DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Micros, true)
}

pub(crate) fn now_text() -> String {
    to_text(&Utc::now())
}

pub(crate) fn from_text(column: &str, s: &str) -> Result<DateTime<Utc>, StoreError> {
    DateTime::parse_from_rfc3339(s)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| StoreError::Data(format!("column {column} holds {s:?}, not an RFC 3339 time: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn fixed_width_and_round_trip() {
        let a = Utc.with_ymd_and_hms(2024, 5, 1, 12, 0, 0).unwrap();
        let b = a + chrono::Duration::microseconds(500_000);
        assert_eq!(to_text(&a), "2024-05-01T12:00:00.000000Z");
        assert!(to_text(&a) < to_text(&b));
        assert_eq!(from_text("t", &to_text(&b)).unwrap(), b);
        assert!(matches!(from_text("t", "yesterday"), Err(StoreError::Data(_))));
    }
}
