//! When a pending change set is due: pure arithmetic over event times.

use chrono::{DateTime, Duration, Utc};
use driftback_events::JoinWindow;
use serde::{Deserialize, Serialize};

/// The quiet window, by event time, and the longest a change set may wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuietWindow {
    /// A change set is due once its resource has had no new event for this long (event time).
    /// An event this close to a pending change set (same resource, same session) joins it.
    pub quiet_secs: u64,
    /// A change set is due this long after its first event even if events keep coming, so a
    /// resource that an autoscaler touches every minute is still reconciled.
    pub max_age_secs: u64,
}

impl Default for QuietWindow {
    fn default() -> Self {
        QuietWindow { quiet_secs: 120, max_age_secs: 900 }
    }
}

impl QuietWindow {
    pub fn quiet(&self) -> Duration {
        secs(self.quiet_secs)
    }
    pub fn max_age(&self) -> Duration {
        secs(self.max_age_secs)
    }
    /// The joining window of the shared grouper ([`driftback_events::Grouper`]): the quiet period
    /// and the maximum age, so nothing joins a change set once it is due.
    pub fn join_window(&self) -> JoinWindow {
        JoinWindow { quiet: self.quiet(), max_age: Some(self.max_age()) }
    }
    /// Whether an event at `time` joins a pending change set spanning `first..=last` (events may
    /// arrive out of order, so it may also come before `first`): within the quiet period of it, and
    /// no later than it is due ([`due_at`]).
    pub fn joins(&self, first: DateTime<Utc>, last: DateTime<Utc>, time: DateTime<Utc>) -> bool {
        self.join_window().joins(first, last, time)
    }
}

fn secs(n: u64) -> Duration {
    Duration::seconds(i64::try_from(n).unwrap_or(i64::MAX / 1_000_000))
}

/// When a change set whose events span `first..=last` is due: after the quiet window following its
/// last event, or at its maximum age, whichever comes first.
pub fn due_at(first: DateTime<Utc>, last: DateTime<Utc>, window: &QuietWindow) -> DateTime<Utc> {
    (last + window.quiet()).min(first + window.max_age())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn due_after_the_quiet_window_or_at_the_maximum_age() {
        let w = QuietWindow { quiet_secs: 120, max_age_secs: 600 };
        assert_eq!(due_at(t("2024-01-01T10:00:00Z"), t("2024-01-01T10:01:00Z"), &w), t("2024-01-01T10:03:00Z"));
        // Events every minute for 20 minutes: due at the maximum age.
        assert_eq!(due_at(t("2024-01-01T10:00:00Z"), t("2024-01-01T10:20:00Z"), &w), t("2024-01-01T10:10:00Z"));
        let zero = QuietWindow { quiet_secs: 0, max_age_secs: 0 };
        assert_eq!(due_at(t("2024-01-01T10:00:00Z"), t("2024-01-01T10:00:00Z"), &zero), t("2024-01-01T10:00:00Z"));
    }

    #[test]
    fn late_and_early_events_join_within_the_window() {
        let w = QuietWindow { quiet_secs: 120, max_age_secs: 600 };
        let (first, last) = (t("2024-01-01T10:00:00Z"), t("2024-01-01T10:01:00Z"));
        assert!(w.joins(first, last, t("2024-01-01T10:02:30Z")));
        assert!(w.joins(first, last, t("2024-01-01T09:58:30Z")), "out of order, just before");
        assert!(!w.joins(first, last, t("2024-01-01T10:03:01Z")));
        assert!(!w.joins(first, last, t("2024-01-01T09:57:59Z")));
        // Past the maximum age nothing joins: a new change set starts.
        let (first, last) = (t("2024-01-01T10:00:00Z"), t("2024-01-01T10:09:30Z"));
        assert!(!w.joins(first, last, t("2024-01-01T10:10:30Z")));
    }
}
