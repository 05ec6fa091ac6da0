//! Pull request bodies, titles and commit messages compared with committed expected files
//! (`tests/snapshots/NAME.md`). `UPDATE_SNAPSHOTS=1 cargo test -p driftback-publish` rewrites them.

use std::path::Path;

use driftback_publish::message::commit_message;

use crate::story;

fn check(name: &str) -> String {
    let story = story(name);
    let actual = format!(
        "title: {}\n\n--- commit message ---\n{}\n--- body ---\n{}",
        story.title(),
        commit_message(&story),
        story.body()
    );
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots").join(format!("{name}.md"));
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, &actual).unwrap();
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("{} is missing; run with UPDATE_SNAPSHOTS=1 to create it", path.display()));
    assert!(actual == expected, "{name}: the output differs from {}:\n{actual}", path.display());
    story.body()
}

#[test]
fn console_change_body_tells_the_story() {
    let body = check("console-instance-type");
    for section in [
        "## Timeline",
        "## Who made the change",
        "## Intent and motivation",
        "## Decision",
        "## Diff",
        "## Events",
        "## To revert instead",
    ] {
        assert!(body.contains(section), "{section}");
    }
}

#[test]
fn hostile_event_text_is_shown_not_rendered() {
    let body = check("hostile-text");
    // Outside code, where GitHub would render it, nothing hostile is left.
    let prose = outside_code(&body);
    assert!(!prose.contains('<') || prose.matches('<').count() == 1, "HTML is escaped:\n{prose}");
    assert!(!prose.contains("@admins") && !prose.contains("@security"), "mentions are broken");
    assert!(!prose.contains("#1 "), "issue references are broken");
    assert!(!prose.contains("https://") && !prose.contains("www."), "URLs are not autolinked");
    assert!(prose.contains("\\[click\\]"), "link brackets are escaped");
    // The diff carries a triple backtick; the fence around it is longer, so it cannot close early.
    let fence_line = body.lines().find(|l| l.ends_with("diff")).unwrap();
    assert!(fence_line.starts_with("````"), "{fence_line}");
    // Only the marker is an HTML comment.
    assert_eq!(body.matches("<!--").count(), 1);
    assert_eq!(body.matches("-->").count(), 1);
}

/// The body without fenced blocks and inline code spans (which GitHub shows verbatim).
fn outside_code(body: &str) -> String {
    let mut prose = String::new();
    let mut fence: Option<String> = None;
    for line in body.lines() {
        let ticks: String = line.chars().take_while(|&c| c == '`').collect();
        match &fence {
            Some(open) if line.trim_end() == open => fence = None,
            Some(_) => {}
            None if ticks.len() >= 3 && !line[ticks.len()..].contains('`') => fence = Some(ticks),
            None => {
                prose.push_str(&strip_spans(line));
                prose.push('\n');
            }
        }
    }
    prose
}

fn strip_spans(line: &str) -> String {
    let chars: Vec<char> = line.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == '`' {
            let run = chars[i..].iter().take_while(|&&c| c == '`').count();
            let closing = (i + run..chars.len()).find(|&j| {
                chars[j..].iter().take_while(|&&c| c == '`').count() == run && (j == 0 || chars[j - 1] != '`')
            });
            if let Some(j) = closing {
                i = j + run;
                continue;
            }
        }
        out.push(chars[i]);
        i += 1;
    }
    out
}
