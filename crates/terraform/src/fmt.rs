//! `terraform fmt`'s layout, for the code driftback writes: two spaces of indentation per open
//! bracket, and the `=` of consecutive one-line arguments aligned one space after the longest name.
//! The rules (docs/terraform-style.md) are those `terraform fmt` applies:
//!
//! - A line that opens brackets (`{`, `[`, `(`, however many) opens one indent level of two
//!   spaces for the lines after it; a line that closes them is indented at the level that remains.
//! - An argument line (`name = value`) whose value fits on the line joins an alignment run; the run
//!   is broken by a blank line, a comment line, a block header or end, a line that opens a
//!   multi-line value, and any line that is not an argument. Inside a run the names are padded so
//!   every `=` is one space after the longest name; there is one space after `=`. An argument that
//!   opens a multi-line value gets single spaces around its `=`.
//! - A heredoc's body and terminator are left exactly as they are, and the argument that starts it
//!   stays in its run (its body does not break the run).
//! - Trailing whitespace goes; text inside strings, comments and heredocs is never changed.
//!
//! [`tidy`] applies them to what a change touched: top-level blocks (and runs of top-level
//! arguments, as in tfvars files) that a patch added, or changed when their earlier version was
//! already formatted. Code the change did not touch, or that the repository keeps in its own
//! layout, stays byte for byte.

/// Lay out `text` (a whole file or a part of it that starts at the top level) as `terraform fmt`.
pub fn format(text: &str) -> String {
    let lines: Vec<&str> = text.split('\n').collect();
    let mut shaped: Vec<Shaped> = Vec::with_capacity(lines.len());
    // Open brackets per indent level: a line that opens several brackets opens one level.
    let mut levels: Vec<usize> = Vec::new();
    let mut heredoc: Option<String> = None;
    let mut block_comment = false;
    for line in &lines {
        if let Some(marker) = &heredoc {
            if line.trim() == marker {
                heredoc = None;
            }
            shaped.push(Shaped::Verbatim(line.to_string()));
            continue;
        }
        if block_comment {
            if line.contains("*/") {
                block_comment = false;
            }
            shaped.push(Shaped::Verbatim(line.trim_end().to_string()));
            continue;
        }
        let content = line.trim();
        if content.is_empty() {
            shaped.push(Shaped::Blank);
            continue;
        }
        let scan = scan(content);
        let indent = indent_of(&mut levels, scan.opens as i64 - scan.closes as i64);
        block_comment = scan.opens_block_comment;
        if let Some(marker) = &scan.heredoc {
            heredoc = Some(marker.clone());
        }
        let pad = "  ".repeat(indent);
        let line = match scan.assign {
            Some(at) => {
                let name = content[..at].trim_end().to_string();
                let value = content[at + 1..].trim().to_string();
                // One-line values align; a value that opens more lines does not (a heredoc's
                // opening line counts as one line).
                let aligned = scan.opens == scan.closes || scan.heredoc.is_some();
                Shaped::Argument { indent: pad, name, value, aligned }
            }
            None => Shaped::Other(format!("{pad}{content}")),
        };
        shaped.push(line);
    }
    // Align each run of aligned arguments.
    let mut out: Vec<String> = Vec::with_capacity(shaped.len());
    let mut i = 0;
    while i < shaped.len() {
        match &shaped[i] {
            Shaped::Argument { aligned: true, .. } => {
                let mut end = i;
                let mut width = 0;
                // A heredoc's lines belong to the argument before them: they do not end the run.
                while end < shaped.len() {
                    match &shaped[end] {
                        Shaped::Argument { aligned: true, name, .. } => width = width.max(name.chars().count()),
                        Shaped::Verbatim(_) if in_heredoc_of_run(&shaped, i, end) => {}
                        _ => break,
                    }
                    end += 1;
                }
                for line in &shaped[i..end] {
                    match line {
                        Shaped::Argument { indent, name, value, .. } => {
                            let padding = " ".repeat(width - name.chars().count());
                            out.push(join(indent, &format!("{name}{padding}"), value));
                        }
                        other => out.push(other.text()),
                    }
                }
                i = end;
            }
            Shaped::Argument { indent, name, value, aligned: false } => {
                out.push(join(indent, name, value));
                i += 1;
            }
            other => {
                out.push(other.text());
                i += 1;
            }
        }
    }
    out.join("\n")
}

/// The indent level of a line whose brackets net `net`, as `terraform fmt` counts it: a line that
/// opens brackets is indented at the current level and opens one more (however many brackets); a
/// line that closes them is indented at the level that remains once they are closed.
fn indent_of(levels: &mut Vec<usize>, net: i64) -> usize {
    if net > 0 {
        let here = levels.len();
        levels.push(net as usize);
        return here;
    }
    let mut closed = (-net) as usize;
    while closed > 0 {
        let Some(top) = levels.last_mut() else { break };
        if closed >= *top {
            closed -= *top;
            levels.pop();
        } else {
            *top -= closed;
            closed = 0;
        }
    }
    levels.len()
}

/// `after` with the top-level items a change made to `before` laid out by [`format`]: items that
/// are new, or changed while their earlier text was already formatted. Everything else is kept
/// byte for byte.
pub fn tidy(before: &str, after: &str) -> String {
    let old = items(before);
    let mut out = String::with_capacity(after.len());
    for item in items(after) {
        let text = item.text;
        let unchanged = old.iter().any(|o| o.text == text);
        let counterpart = old.iter().find(|o| o.key == item.key && !o.key.is_empty());
        let shape = match (unchanged, counterpart) {
            (true, _) => false,
            (false, None) => true,
            (false, Some(o)) => format(o.text) == o.text,
        };
        if shape && item.code { out.push_str(&format(text)) } else { out.push_str(text) }
    }
    out
}

enum Shaped {
    Blank,
    /// Kept exactly (heredoc bodies, inside block comments).
    Verbatim(String),
    Other(String),
    Argument {
        indent: String,
        name: String,
        value: String,
        aligned: bool,
    },
}

impl Shaped {
    fn text(&self) -> String {
        match self {
            Shaped::Blank => String::new(),
            Shaped::Verbatim(t) | Shaped::Other(t) => t.clone(),
            Shaped::Argument { indent, name, value, .. } => join(indent, name, value),
        }
    }
}

fn join(indent: &str, name: &str, value: &str) -> String {
    if value.is_empty() { format!("{indent}{name} =") } else { format!("{indent}{name} = {value}") }
}

/// Whether `shaped[at]` (a verbatim line) is the body of a heredoc an argument of the run that
/// starts at `start` opened.
fn in_heredoc_of_run(shaped: &[Shaped], start: usize, at: usize) -> bool {
    shaped[start..at]
        .iter()
        .rev()
        .find(|l| !matches!(l, Shaped::Verbatim(_)))
        .is_some_and(|l| matches!(l, Shaped::Argument { value, .. } if value.starts_with("<<")))
}

/// What one line holds, outside strings and comments.
#[derive(Debug, Default, PartialEq)]
struct Scan {
    opens: usize,
    closes: usize,
    /// Byte offset of the argument's `=`, when the line is `name = ...`.
    assign: Option<usize>,
    /// The terminator of a heredoc the line starts.
    heredoc: Option<String>,
    /// A `/*` comment starts and does not end on this line.
    opens_block_comment: bool,
}

fn scan(line: &str) -> Scan {
    let bytes = line.as_bytes();
    let mut s = Scan::default();
    let mut i = 0;
    let mut leading = true;
    let mut level: i64 = 0;
    while i < bytes.len() {
        let b = bytes[i];
        match b {
            b'"' => {
                leading = false;
                i += 1;
                // A string, with its escapes and `${...}` interpolations (which may hold strings).
                let mut interpolation = 0;
                while i < bytes.len() {
                    match bytes[i] {
                        b'\\' => i += 1,
                        b'$' | b'%' if bytes.get(i + 1) == Some(&b'{') => {
                            interpolation += 1;
                            i += 1;
                        }
                        b'}' if interpolation > 0 => interpolation -= 1,
                        b'"' if interpolation == 0 => break,
                        _ => {}
                    }
                    i += 1;
                }
            }
            b'#' => break,
            b'/' if bytes.get(i + 1) == Some(&b'/') => break,
            b'/' if bytes.get(i + 1) == Some(&b'*') => match line[i + 2..].find("*/") {
                Some(end) => i += end + 3,
                None => {
                    s.opens_block_comment = true;
                    break;
                }
            },
            b'<' if bytes.get(i + 1) == Some(&b'<') => {
                let rest = line[i + 2..].trim_start_matches('-');
                let marker: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                if !marker.is_empty() {
                    s.heredoc = Some(marker);
                    break;
                }
                leading = false;
                i += 1;
            }
            b'{' | b'[' | b'(' => {
                leading = false;
                s.opens += 1;
                level += 1;
            }
            b'}' | b']' | b')' => {
                s.closes += 1;
                level -= 1;
            }
            b'=' => {
                let next = bytes.get(i + 1).copied();
                let prev = i.checked_sub(1).map(|p| bytes[p]);
                let operator = matches!(next, Some(b'=') | Some(b'>'))
                    || matches!(prev, Some(b'=') | Some(b'!') | Some(b'<') | Some(b'>'));
                if !operator && level == 0 && s.assign.is_none() && is_name(line[..i].trim_end()) {
                    s.assign = Some(i);
                }
                leading = false;
                if next == Some(b'=') || next == Some(b'>') {
                    i += 1;
                }
            }
            b' ' | b'\t' => {}
            b',' if leading => {}
            _ => leading = false,
        }
        i += 1;
    }
    s
}

/// An argument name or object key: an identifier, a quoted string, or a parenthesised expression.
fn is_name(lead: &str) -> bool {
    if lead.is_empty() {
        return false;
    }
    if lead.starts_with('"') && lead.ends_with('"') && lead.len() >= 2 {
        return true;
    }
    if lead.starts_with('(') && lead.ends_with(')') {
        return true;
    }
    let mut chars = lead.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// One top-level item of a file: a block, a run of top-level arguments, or the blank lines and
/// comments between them.
struct Item<'a> {
    /// The item's first line (its header), which identifies it across versions; empty for the
    /// text between items.
    key: String,
    text: &'a str,
    /// Blocks and arguments (not the blank lines and comments between them).
    code: bool,
}

fn items(text: &str) -> Vec<Item<'_>> {
    let mut out = Vec::new();
    // The open item: where it starts, its key, whether it is a run of top-level arguments.
    let mut open: Option<(usize, String, bool)> = None;
    // Where the text between items starts.
    let mut between = 0;
    let mut depth: usize = 0;
    let mut heredoc: Option<String> = None;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let (line_start, content) = (offset, line.trim());
        offset += line.len();
        if let Some(marker) = &heredoc {
            if content == marker {
                heredoc = None;
            }
            continue;
        }
        let scan = scan(content);
        if depth == 0 {
            let code = !content.is_empty() && !content.starts_with('#') && !content.starts_with("//");
            let argument = scan.assign.is_some();
            let continues_run = matches!(&open, Some((_, _, true))) && code && argument;
            if !continues_run {
                if let Some((s, key, _)) = open.take() {
                    out.push(Item { key, text: &text[s..line_start], code: true });
                    between = line_start;
                }
                if code {
                    if between < line_start {
                        out.push(Item { key: String::new(), text: &text[between..line_start], code: false });
                    }
                    let key = if argument { "=arguments".to_string() } else { content.to_string() };
                    open = Some((line_start, key, argument));
                }
            }
        }
        depth = (depth + scan.opens).saturating_sub(scan.closes);
        if let Some(marker) = scan.heredoc {
            heredoc = Some(marker);
        }
        // A block ends with the line that closes it.
        if depth == 0 && heredoc.is_none() && matches!(&open, Some((_, _, false))) {
            let (s, key, _) = open.take().expect("checked");
            out.push(Item { key, text: &text[s..offset], code: true });
            between = offset;
        }
    }
    match open {
        Some((s, key, _)) => out.push(Item { key, text: &text[s..], code: true }),
        None if between < text.len() => out.push(Item { key: String::new(), text: &text[between..], code: false }),
        None => {}
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each pair: input, then what `terraform fmt` 1.11 makes of it.
    const CASES: &[(&str, &str)] = &[
        (
            "resource \"aws_instance\" \"web\" {\n  ami = \"ami-1\"\n  instance_type = \"t3.micro\"\n  tags = {\n    Name = \"web\"\n    CostCenter = \"cc\"\n  }\n  monitoring = true\n  vpc_security_group_ids = [\n    \"sg-1\",\n  ]\n  x = 1\n  # comment\n  yy = 2\n\n  zzz = 3\n  lifecycle {\n    ignore_changes = [tags]\n  }\n  a = jsonencode({\n    k = 1\n    long_key = 2\n  })\n  b = 1\n}\n",
            "resource \"aws_instance\" \"web\" {\n  ami           = \"ami-1\"\n  instance_type = \"t3.micro\"\n  tags = {\n    Name       = \"web\"\n    CostCenter = \"cc\"\n  }\n  monitoring = true\n  vpc_security_group_ids = [\n    \"sg-1\",\n  ]\n  x = 1\n  # comment\n  yy = 2\n\n  zzz = 3\n  lifecycle {\n    ignore_changes = [tags]\n  }\n  a = jsonencode({\n    k        = 1\n    long_key = 2\n  })\n  b = 1\n}\n",
        ),
        (
            "locals {\n  a = 1\n  policy = <<EOF\n{ \"x\": 1 }\nEOF\n  bb = 2\n  ccc = \"x\" # trailing\n  d = 4\n  m = { \"quoted key\" = 5, b = 1 }\n  n = {\n    \"quoted key\" = 5\n    b = 1\n  }\n  e = [for k, v in var.x : v]\n  f = { for k, v in var.x : k => v }\n  g = var.a == \"x\" ? 1 : 2\n}\nresource \"x\" \"y\" {\n  list = [\n    {\n      a = 1\n      bbb = 2\n    },\n    {\n      c = 1\n    }\n  ]\n}\n",
            "locals {\n  a      = 1\n  policy = <<EOF\n{ \"x\": 1 }\nEOF\n  bb     = 2\n  ccc    = \"x\" # trailing\n  d      = 4\n  m      = { \"quoted key\" = 5, b = 1 }\n  n = {\n    \"quoted key\" = 5\n    b            = 1\n  }\n  e = [for k, v in var.x : v]\n  f = { for k, v in var.x : k => v }\n  g = var.a == \"x\" ? 1 : 2\n}\nresource \"x\" \"y\" {\n  list = [\n    {\n      a   = 1\n      bbb = 2\n    },\n    {\n      c = 1\n    }\n  ]\n}\n",
        ),
        (
            "  region = \"eu-west-1\"\ninstances = {\n    web = { type = \"t3.micro\" }\n}\nname=\"x\"\n",
            "region = \"eu-west-1\"\ninstances = {\n  web = { type = \"t3.micro\" }\n}\nname = \"x\"\n",
        ),
    ];

    #[test]
    fn the_layout_is_terraform_fmts() {
        for (input, expected) in CASES {
            assert_eq!(format(input), *expected, "\n{input}");
            // Formatting what is formatted changes nothing.
            assert_eq!(format(expected), *expected);
        }
    }

    #[test]
    fn strings_comments_and_heredocs_are_never_changed() {
        let text = "locals {\n  s = \"a = { [ b\" # x = {\n  t = \"${var.a}=${jsonencode({ k = 1 })}\"\n  /* x = 1\n     y =    2 */\n  h = <<-EOT\n      keep   this = {\n    EOT\n}\n";
        let formatted = format(text);
        assert!(formatted.contains("\"a = { [ b\" # x = {\n"), "{formatted}");
        assert!(formatted.contains("     y =    2 */\n"), "{formatted}");
        assert!(formatted.contains("      keep   this = {\n    EOT\n}"), "{formatted}");
        assert_eq!(format(&formatted), formatted);
    }

    #[test]
    fn tidy_shapes_only_what_the_change_touched() {
        let before =
            "resource \"a\" \"x\" {\n  tags = {\n    Name = \"x\"\n  }\n}\n\nresource \"b\" \"messy\" {\n  a=1\n}\n";
        // The edit adds a longer key to the first block and changes the messy one.
        let after = "resource \"a\" \"x\" {\n  tags = {\n    Name = \"x\"\n    CostCenter = \"cc\"\n  }\n}\n\nresource \"b\" \"messy\" {\n  a=2\n}\nresource \"c\" \"new\" {\n  long_name = 1\n  b = 2\n}\n";
        let tidied = tidy(before, after);
        assert_eq!(
            tidied,
            "resource \"a\" \"x\" {\n  tags = {\n    Name       = \"x\"\n    CostCenter = \"cc\"\n  }\n}\n\nresource \"b\" \"messy\" {\n  a=2\n}\nresource \"c\" \"new\" {\n  long_name = 1\n  b         = 2\n}\n"
        );
        // Nothing changed: nothing moves, even where the layout is not terraform fmt's.
        assert_eq!(tidy(before, before), before);
    }

    #[test]
    fn tfvars_runs_are_one_item() {
        let before = "region = \"eu-west-1\"\nname   = \"x\"\n";
        let after = "region = \"eu-west-1\"\nname   = \"x\"\ninstance_type = \"t3.large\"\n";
        assert_eq!(
            tidy(before, after),
            "region        = \"eu-west-1\"\nname          = \"x\"\ninstance_type = \"t3.large\"\n"
        );
    }
}
