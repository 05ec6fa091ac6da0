//! Markdown for GitHub from untrusted text: event data (names, ARNs, parameters, user agents) is
//! shown as text, never as formatting, HTML, links, @-mentions or issue references.

/// Text from an event as inline Markdown text: HTML is shown, not rendered; Markdown punctuation is
/// escaped; `@name`, `#12` and URLs are broken with a zero-width space so they ping, link and
/// reference nothing; line breaks become spaces.
pub fn text(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    let line = one_line(s);
    for (i, c) in line.chars().enumerate() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '@' => out.push_str("@&#8203;"),
            '#' => out.push_str("#&#8203;"),
            '\\' | '`' | '*' | '_' | '[' | ']' | '!' | '|' | '~' | '{' | '}' => {
                out.push('\\');
                out.push(c);
            }
            '-' | '+' | '=' if i == 0 => {
                out.push('\\');
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out.replace("://", ":&#8203;//").replace("www.", "www&#8203;.")
}

/// An inline code span that shows `s` verbatim whatever backticks it holds.
pub fn code(s: &str) -> String {
    span(s, false)
}

/// [`code`] for a table cell: `|` is escaped, as GitHub's tables require even inside code.
pub fn cell(s: &str) -> String {
    span(s, true)
}

fn span(s: &str, in_table: bool) -> String {
    let line = one_line(s);
    if line.is_empty() {
        return "*(empty)*".to_string();
    }
    let fence = "`".repeat(longest_run(&line, '`') + 1);
    let pad = if line.starts_with('`') || line.ends_with('`') || (line.starts_with(' ') && line.ends_with(' ')) {
        " "
    } else {
        ""
    };
    let line = if in_table { line.replace('|', "\\|") } else { line };
    format!("{fence}{pad}{line}{pad}{fence}")
}

/// A fenced code block whose fence no line of `s` can close.
pub fn fenced(info: &str, s: &str) -> String {
    let fence = "`".repeat((longest_run(s, '`') + 1).max(3));
    let mut body = s.to_string();
    if !body.ends_with('\n') {
        body.push('\n');
    }
    format!("{fence}{info}\n{body}{fence}\n")
}

/// Text that can sit inside an HTML comment (`<!-- ... -->`) without ending it.
pub fn comment_safe(s: &str) -> String {
    one_line(s).replace('%', "%25").replace('-', "%2D").replace('>', "%3E")
}

/// Line breaks, tabs and other control characters become single spaces.
fn one_line(s: &str) -> String {
    s.chars().map(|c| if c.is_control() { ' ' } else { c }).collect::<String>().trim_end().to_string()
}

fn longest_run(s: &str, wanted: char) -> usize {
    let (mut longest, mut run) = (0, 0);
    for c in s.chars() {
        run = if c == wanted { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    longest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_renders_nothing_from_hostile_input() {
        let cases = [
            ("alice", "alice"),
            ("<img src=x onerror=alert(1)>", "&lt;img src=x onerror=alert(1)&gt;"),
            ("@security-team please merge", "@&#8203;security-team please merge"),
            ("fixes #12", "fixes #&#8203;12"),
            ("**bold** [link](https://evil.example)", "\\*\\*bold\\*\\* \\[link\\](https:&#8203;//evil.example)"),
            ("line1\nline2\r\n", "line1 line2"),
            ("- list item", "\\- list item"),
            ("a|b `c`", "a\\|b \\`c\\`"),
            ("www.evil.example", "www&#8203;.evil.example"),
        ];
        for (input, expected) in cases {
            assert_eq!(text(input), expected, "{input:?}");
        }
    }

    #[test]
    fn code_spans_cannot_be_closed_from_inside() {
        assert_eq!(code("t3.large"), "`t3.large`");
        assert_eq!(code("a`b"), "``a`b``");
        assert_eq!(code("`x`"), "`` `x` ``");
        assert_eq!(code("a|b"), "`a|b`");
        assert_eq!(cell("a|b"), "`a\\|b`");
        assert_eq!(code("two\nlines"), "`two lines`");
        assert_eq!(code(""), "*(empty)*");
    }

    #[test]
    fn fences_are_longer_than_any_backtick_run_inside() {
        assert_eq!(fenced("diff", "+a\n"), "```diff\n+a\n```\n");
        let hostile = "+x = \"```\"\n+y = \"`````\"";
        let block = fenced("diff", hostile);
        assert!(block.starts_with("``````diff\n"), "{block}");
        assert!(block.ends_with("\n``````\n"), "{block}");
    }

    #[test]
    fn comments_cannot_be_ended_early() {
        let safe = comment_safe("aws_s3_bucket.b[\"x-->y\"]");
        assert!(!safe.contains("-->") && !safe.contains('>'), "{safe}");
        assert_ne!(comment_safe("a-b"), comment_safe("a%2Db"));
    }
}
