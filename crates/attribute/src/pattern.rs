//! Glob patterns for actor names, ARNs, addresses and attribute paths.

/// Whether `text` matches `pattern`, where `*` matches any run of characters (dots and slashes
/// included) and `?` exactly one; everything else matches itself, case-sensitively.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    // Iterative matcher with one backtrack point: linear in practice, no recursion.
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    #[test]
    fn globs() {
        for (pattern, text, want) in [
            ("aws_iam_*", "aws_iam_role", true),
            ("aws_iam_*", "aws_instance", false),
            ("*", "", true),
            ("module.*.aws_instance.web", "module.app.aws_instance.web", true),
            ("tags.*", "tags.Team", true),
            ("tags.*", "tags", false),
            ("arn:aws:iam::*:role/ops-*", "arn:aws:iam::123:role/ops-bot", true),
            ("arn:aws:iam::*:role/ops-*", "arn:aws:iam::123:user/ops-bot", false),
            ("a?c", "abc", true),
            ("a?c", "ac", false),
            ("*bot*", "ops-bot-runbook", true),
            ("exact", "exact", true),
            ("exact", "Exact", false),
        ] {
            assert_eq!(glob_match(pattern, text), want, "{pattern} ~ {text}");
        }
    }
}
