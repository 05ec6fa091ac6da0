//! Which management events a trail records, read from its `event_selector` blocks.
//!
//! A trail without selectors records every management event, reads and writes. Each basic selector
//! records reads, writes or both (`read_write_type`, `All` by default) unless it leaves management
//! events out (`include_management_events = false`). Advanced selectors are not read here.

use serde_json::Value;

/// The kinds of management event a set of `event_selector` blocks records: (reads, writes).
pub fn management_events(selectors: &[Value]) -> (bool, bool) {
    if selectors.is_empty() {
        return (true, true);
    }
    selectors.iter().fold((false, false), |(reads, writes), selector| {
        let included = !matches!(selector.get("include_management_events"), Some(Value::Bool(false)))
            && !matches!(selector.get("include_management_events"), Some(Value::String(s)) if s == "false");
        if !included {
            return (reads, writes);
        }
        match selector.get("read_write_type").and_then(Value::as_str).unwrap_or("All") {
            "ReadOnly" => (true, writes),
            "WriteOnly" => (reads, true),
            _ => (true, true),
        }
    })
}

/// Why the selectors after record fewer kinds of management event than before, or `None`.
pub fn reduced(before: &[Value], after: &[Value]) -> Option<String> {
    let (was, now) = (management_events(before), management_events(after));
    let mut lost = Vec::new();
    if was.0 && !now.0 {
        lost.push("read");
    }
    if was.1 && !now.1 {
        lost.push("write");
    }
    (!lost.is_empty()).then(|| format!("records no {} management events, which it recorded before", lost.join(" or ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fewer_kinds_of_management_event_is_a_reduction_even_from_a_failing_trail() {
        let write_only = [json!({"read_write_type": "WriteOnly", "include_management_events": true})];
        let read_only_none = [json!({"read_write_type": "ReadOnly", "include_management_events": false})];
        let all = [json!({"read_write_type": "All", "include_management_events": true})];
        assert_eq!(
            reduced(&write_only, &read_only_none).as_deref(),
            Some("records no write management events, which it recorded before")
        );
        assert_eq!(reduced(&write_only, &all), None);
        assert_eq!(
            reduced(&all, &write_only).as_deref(),
            Some("records no read management events, which it recorded before")
        );
        // No selector at all records everything.
        assert_eq!(reduced(&[], &all), None);
        assert!(reduced(&[], &read_only_none).is_some());
        // Two selectors together: reads from one, writes from the other.
        let split = [json!({"read_write_type": "ReadOnly"}), json!({"read_write_type": "WriteOnly"})];
        assert_eq!(reduced(&all, &split), None);
    }
}
