//! One item of a list that every instance of a `count`/`for_each` block shares (a statement of
//! one `jsonencode` key policy written for a whole fleet of keys) removed for one instance only:
//! the list becomes `concat()` of its parts, with that item behind a condition on this instance
//! (`each.key == "app" ? [] : [ ... ]`). The other instances keep the same list, item for item,
//! and the items keep their text and references. [`crate::patch`] proposes it after every edit of
//! the shared origin, so it is kept only where each of those would change the other instances.

use std::path::Path;

use hcl_edit::Span;
use hcl_edit::expr::{Array, Expression};

use crate::address::InstanceKey;
use crate::edit;
use crate::origin::Candidate;
use crate::path::Seg;

/// The list literal a path reaches inside an expression written in the block itself (through
/// `jsonencode()`, objects and lists), and the index of the item at its end.
fn list_item_at<'e>(text: &str, expr: &'e Expression, tail: &[Seg]) -> Option<(&'e Array, usize)> {
    match (expr, tail) {
        (Expression::Parenthesis(inner), _) => list_item_at(text, inner.inner(), tail),
        (Expression::FuncCall(call), _) if call.name.name.as_str() == "jsonencode" => {
            list_item_at(text, call.args.iter().next()?, tail)
        }
        (Expression::Array(array), [Seg::Index(i)]) if *i < array.len() => Some((array, *i)),
        (Expression::Array(array), [Seg::Index(i), rest @ ..]) => list_item_at(text, array.iter().nth(*i)?, rest),
        (Expression::Object(object), [first, rest @ ..]) => {
            let key = edit::seg_name(first)?;
            let (_, value) = edit::object_get(object, text, key)?;
            list_item_at(text, value, rest)
        }
        _ => None,
    }
}

/// The list literal a path to one past its last item reaches inside an expression written in the
/// block itself.
fn list_end_at<'e>(text: &str, expr: &'e Expression, tail: &[Seg]) -> Option<&'e Array> {
    let (Seg::Index(end), parent) = tail.split_last()? else { return None };
    let array = match parent {
        [] => match expr {
            Expression::Array(array) => Some(array),
            Expression::Parenthesis(inner) => list_end_at(text, inner.inner(), tail),
            Expression::FuncCall(call) if call.name.name.as_str() == "jsonencode" => {
                list_end_at(text, call.args.iter().next()?, tail)
            }
            _ => None,
        }?,
        _ => {
            let (array, index) = list_item_at(text, expr, &[parent, &[Seg::Index(0)]].concat())?;
            (index == 0).then_some(array)?
        }
    };
    (array.len() == *end).then_some(array)
}

/// `file`'s text with `item` added at the end of the list at `tail` inside `expr` for the instance
/// `key` alone: `concat(LIST, CONDITION ? [ITEM] : [])`.
pub(crate) fn with_item_for_instance(
    file: &Path,
    text: &str,
    expr: &Expression,
    tail: &[Seg],
    key: &InstanceKey,
    item: &serde_json::Value,
) -> Option<Candidate> {
    let array = list_end_at(text, expr, tail)?;
    let span = array.span()?;
    let like: Vec<String> = match array.iter().last() {
        Some(Expression::Object(sibling)) => {
            sibling.iter().filter_map(|(k, _)| edit::object_key_str(text, k)).collect()
        }
        _ => Vec::new(),
    };
    let rendered = crate::render::render_value_like(item, "", &like);
    let condition = condition_for(key);
    let whole = &text[span.clone()];
    let joined = if whole.contains('\n') || rendered.contains('\n') {
        format!("concat(\n{whole},\n{condition} ? [\n{rendered},\n] : [],\n)")
    } else {
        format!("concat({whole}, {condition} ? [{rendered}] : [])")
    };
    spliced(file, text, span, &joined, |line| {
        format!(
            "added an item to the list in {}:{line} for this instance only, behind `{condition}`, since the list \
             is every instance's",
            file.display()
        )
    })
}

/// The condition that is true for this instance alone.
pub(crate) fn condition_for(key: &InstanceKey) -> String {
    match key {
        InstanceKey::Int(i) => format!("count.index == {i}"),
        InstanceKey::Str(k) => format!("each.key == {}", crate::render::quote(k)),
    }
}

/// `file`'s text with item `tail`'s last index of the list at `tail` inside `expr` left out for the
/// instance `key` alone; `None` when the path does not reach an item of a list literal written there.
pub(crate) fn without_item_for_instance(
    file: &Path,
    text: &str,
    expr: &Expression,
    tail: &[Seg],
    key: &InstanceKey,
) -> Option<Candidate> {
    let (array, index) = list_item_at(text, expr, tail)?;
    let span = array.span()?;
    let items: Vec<String> = array.iter().map(|item| edit::expr_text(text, item).trim().to_string()).collect();
    let multiline = text[span.clone()].contains('\n');
    let list = |part: &[String]| {
        if multiline {
            let mut out = String::from("[\n");
            for item in part {
                out.push_str(item);
                out.push_str(",\n");
            }
            out.push(']');
            out
        } else {
            format!("[{}]", part.join(", "))
        }
    };
    let condition = condition_for(key);
    let mut parts = Vec::new();
    if index > 0 {
        parts.push(list(&items[..index]));
    }
    parts.push(format!("{condition} ? [] : {}", list(&items[index..=index])));
    if index + 1 < items.len() {
        parts.push(list(&items[index + 1..]));
    }
    let joined =
        if multiline { format!("concat(\n{},\n)", parts.join(",\n")) } else { format!("concat({})", parts.join(", ")) };
    spliced(file, text, span, &joined, |line| {
        format!(
            "left item {index} of the list in {}:{line} out for this instance only, behind `{condition}`, since \
             the list is every instance's",
            file.display()
        )
    })
}

/// `text` with the list at `span` replaced by `joined`, as a candidate edit of `file` if it still
/// parses; `note` is told the list's line.
fn spliced(
    file: &Path,
    text: &str,
    span: std::ops::Range<usize>,
    joined: &str,
    note: impl FnOnce(usize) -> String,
) -> Option<Candidate> {
    let new = format!("{}{joined}{}", &text[..span.start], &text[span.end..]);
    edit::parse(&new).ok()?;
    let line = text[..span.start].matches('\n').count() + 1;
    Some(Candidate { file: file.to_path_buf(), text: new, note: note(line), also: Vec::new() })
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use crate::eval::effective_config;
    use crate::patch::{Op, apply};
    use crate::{Address, AttrPath, Repo};

    const KEYS: &str = r#"resource "aws_kms_key" "this" {
  for_each = toset(["app", "signing", "global"])

  description = each.key

  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [
      {
        Sid       = "Root"
        Effect    = "Allow"
        Principal = { AWS = "arn:aws:iam::111122223333:root" }
        Action    = "kms:*"
        Resource  = "*"
      },
      {
        Sid       = "App"
        Effect    = "Allow"
        Principal = { AWS = "arn:aws:iam::111122223333:role/app" }
        Action    = ["kms:Decrypt"]
        Resource  = "*"
      },
    ]
  })
}
"#;

    fn statements(repo: &Repo, key: &str) -> Vec<String> {
        let address = Address::parse(&format!("aws_kms_key.this[\"{key}\"]")).unwrap();
        let policy = effective_config(repo, &address).unwrap()["policy"].as_str().unwrap().to_string();
        let document: serde_json::Value = serde_json::from_str(&policy).unwrap();
        document["Statement"].as_array().unwrap().iter().map(|s| s["Sid"].as_str().unwrap().to_string()).collect()
    }

    #[test]
    fn a_statement_removed_from_one_key_of_the_fleet_is_left_out_for_that_key_alone() {
        let mut repo = Repo::from_files([(PathBuf::from("kms.tf"), KEYS.to_string())].into_iter().collect());
        let app = Address::parse(r#"aws_kms_key.this["app"]"#).unwrap();
        let op = Op::Remove { path: AttrPath::parse("policy.Statement[1]").unwrap() };
        let applied = apply(&mut repo, &app, &op).unwrap();
        assert!(applied.notes.iter().any(|n| n.contains("each.key == \"app\"")), "{applied:?}");
        assert_eq!(statements(&repo, "app"), ["Root"]);
        assert_eq!(statements(&repo, "signing"), ["Root", "App"]);
        assert_eq!(statements(&repo, "global"), ["Root", "App"]);
        let text = repo.text(Path::new("kms.tf")).unwrap();
        assert!(text.contains("each.key == \"app\" ? [] : ["), "{text}");
        assert!(!text.contains("merge("), "{text}");
    }

    #[test]
    fn a_statement_added_to_one_key_of_the_fleet_is_added_for_that_key_alone() {
        let mut repo = Repo::from_files([(PathBuf::from("kms.tf"), KEYS.to_string())].into_iter().collect());
        let signing = Address::parse(r#"aws_kms_key.this["signing"]"#).unwrap();
        let statement = serde_json::json!({"Sid": "Release", "Effect": "Allow",
            "Principal": {"AWS": "arn:aws:iam::111122223333:role/release"}, "Action": "kms:Sign", "Resource": "*"});
        let op = Op::Set {
            path: AttrPath::parse("policy.Statement[2]").unwrap(),
            value: crate::AttrValue::Literal(statement),
        };
        let applied = apply(&mut repo, &signing, &op).unwrap();
        assert!(applied.notes.iter().any(|n| n.contains("each.key == \"signing\"")), "{applied:?}");
        assert_eq!(statements(&repo, "signing"), ["Root", "App", "Release"]);
        assert_eq!(statements(&repo, "app"), ["Root", "App"]);
        assert_eq!(statements(&repo, "global"), ["Root", "App"]);
    }

    #[test]
    fn a_statement_of_a_key_alone_is_simply_removed() {
        let single = KEYS.replace("toset([\"app\", \"signing\", \"global\"])", "toset([\"app\"])");
        let mut repo = Repo::from_files([(PathBuf::from("kms.tf"), single)].into_iter().collect());
        let app = Address::parse(r#"aws_kms_key.this["app"]"#).unwrap();
        let op = Op::Remove { path: AttrPath::parse("policy.Statement[1]").unwrap() };
        apply(&mut repo, &app, &op).unwrap();
        let text = repo.text(Path::new("kms.tf")).unwrap();
        assert!(!text.contains("concat(") && !text.contains("\"App\""), "{text}");
        assert_eq!(statements(&repo, "app"), ["Root"]);
    }
}
