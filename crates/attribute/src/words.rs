//! Splitting names (`ops-bot-runbook-5301`, `AWSReservedSSO_Admin`, `incident4502`) into words.

/// Lower-case words of a name: split at non-alphanumerics, at lower-to-upper case changes, and
/// between letters and digits (`INC4502` gives `inc`, `4502`).
pub(crate) fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut prev: Option<char> = None;
    for c in text.chars() {
        if !c.is_alphanumeric() {
            flush(&mut current, &mut out);
            prev = None;
            continue;
        }
        if let Some(p) = prev {
            let case_change = p.is_lowercase() && c.is_uppercase();
            let digit_change = p.is_ascii_digit() != c.is_ascii_digit();
            if case_change || digit_change {
                flush(&mut current, &mut out);
            }
        }
        current.extend(c.to_lowercase());
        prev = Some(c);
    }
    flush(&mut current, &mut out);
    out
}

fn flush(current: &mut String, out: &mut Vec<String>) {
    if !current.is_empty() {
        out.push(std::mem::take(current));
    }
}

/// The first of `vocabulary` that is one of the words of `text`, or a prefix of one when the
/// vocabulary entry ends with `*` (`remediat*` finds `remediation`).
pub(crate) fn find_word<'a>(text: &str, vocabulary: &[&'a str]) -> Option<&'a str> {
    let ws = words(text);
    vocabulary.iter().copied().find(|v| match v.strip_suffix('*') {
        Some(prefix) => ws.iter().any(|w| w.starts_with(prefix)),
        None => {
            // Multi-word entries (`on-call`) match consecutive words.
            let parts = words(v);
            !parts.is_empty() && ws.windows(parts.len()).any(|win| win == parts.as_slice())
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitting() {
        assert_eq!(words("ops-bot-runbook-5301"), ["ops", "bot", "runbook", "5301"]);
        assert_eq!(words("AWSReservedSSO_Admin"), ["awsreserved", "sso", "admin"]);
        assert_eq!(words("INC4502 hotFix"), ["inc", "4502", "hot", "fix"]);
        assert_eq!(find_word("gha-run-8650277419", &["ci", "gha"]), Some("gha"));
        assert_eq!(find_word("auto-remediation", &["remediat*"]), Some("remediat*"));
        assert_eq!(find_word("the on-call engineer", &["on-call"]), Some("on-call"));
        assert_eq!(find_word("civic", &["ci"]), None);
    }
}
