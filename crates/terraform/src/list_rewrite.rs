//! A list literal set to a new list as a whole (a policy's statements, where a call inserted two
//! before the one the code has), when the list reads other resources
//! (`Resource = aws_secretsmanager_secret.this.arn`) and so cannot be replaced by a literal: it is
//! rewritten item by item. The items that stay keep their text, references and all; the new ones
//! are written as values, in the order the new list has them; the gone ones leave.

use std::path::Path;

use hcl_edit::Span;
use hcl_edit::expr::{Array, Expression};
use serde_json::Value;

use crate::edit;
use crate::origin::{Site, Tracer, refers_to_other_objects};
use crate::patch::values_equal;

impl<'a> Tracer<'a> {
    /// Propose the list `array` rewritten to hold `new`, item by item (see the module's text).
    pub(crate) fn list_rewritten(&mut self, site: &Site, file: &Path, array: &'a Array, new: &[Value], trail: &str) {
        let Some(text) = self.repo.text(file) else { return };
        let Some(span) = array.span() else { return };
        let old: Vec<&Expression> = array.iter().collect();
        // Longest common subsequence of the code's items and the new ones, by what they say.
        let (m, k) = (old.len(), new.len());
        let same: Vec<Vec<bool>> =
            old.iter().map(|item| new.iter().map(|value| self.says(site, text, item, value)).collect()).collect();
        let mut common = vec![vec![0usize; k + 1]; m + 1];
        for i in (0..m).rev() {
            for j in (0..k).rev() {
                common[i][j] =
                    if same[i][j] { common[i + 1][j + 1] + 1 } else { common[i + 1][j].max(common[i][j + 1]) };
            }
        }
        if common[0][0] == 0 {
            // Nothing stays: no item's text is worth keeping, and the references would all go.
            return;
        }
        let indent = edit::indent_of(text, span.start);
        let inner = format!("{indent}  ");
        let like: Vec<String> = old
            .iter()
            .find_map(|item| match item {
                Expression::Object(object) => {
                    Some(object.iter().filter_map(|(key, _)| edit::object_key_str(text, key)).collect())
                }
                _ => None,
            })
            .unwrap_or_default();
        let render = |value: &Value| crate::render::render_value_like(value, &inner, &like);
        let mut items: Vec<String> = Vec::new();
        let (mut i, mut j) = (0, 0);
        while j < k {
            if i < m && same[i][j] && common[i][j] == common[i + 1][j + 1] + 1 {
                items.push(edit::expr_text(text, old[i]).trim().to_string());
                (i, j) = (i + 1, j + 1);
            } else if i < m && common[i + 1][j] >= common[i][j + 1] {
                i += 1;
            } else {
                if contains_template_text(&new[j]) {
                    return;
                }
                items.push(render(&new[j]));
                j += 1;
            }
        }
        let multiline = text[span.clone()].contains('\n');
        let list = if multiline {
            let mut out = String::from("[\n");
            for item in &items {
                out.push_str(&format!("{inner}{item},\n"));
            }
            out.push_str(&indent);
            out.push(']');
            out
        } else {
            format!("[{}]", items.join(", "))
        };
        let new_text = format!("{}{list}{}", &text[..span.start], &text[span.end..]);
        let line = text[..span.start].matches('\n').count() + 1;
        let through = trail.trim().trim_start_matches("->").trim();
        let note = format!(
            "rewrote the list in {}:{line}{} item by item: the items that stay keep their text and references",
            file.display(),
            if through.is_empty() { String::new() } else { format!(", through {through},") }
        );
        self.push(file.to_path_buf(), new_text, note);
    }

    /// Whether an item of the code says `value`: member by member, where a part that reads
    /// another resource (which this evaluation cannot know) says any text.
    fn says(&self, site: &Site, text: &str, item: &Expression, value: &Value) -> bool {
        match (item, value) {
            (Expression::Parenthesis(inner), _) => self.says(site, text, inner.inner(), value),
            (Expression::Object(object), Value::Object(members)) => {
                let keys: Vec<String> = object.iter().filter_map(|(key, _)| edit::object_key_str(text, key)).collect();
                keys.len() == object.len()
                    && keys.len() == members.len()
                    && object.iter().zip(&keys).all(|((_, v), key)| {
                        members.get(key).is_some_and(|member| self.says(site, text, v.expr(), member))
                    })
            }
            (Expression::Array(items), Value::Array(values)) if refers_to_other_objects(item) => {
                items.len() == values.len() && items.iter().zip(values).all(|(i, v)| self.says(site, text, i, v))
            }
            _ if refers_to_other_objects(item) => value.is_string(),
            _ => self.eval(site, &edit::expr_text(text, item)).is_some_and(|have| values_equal(&have, value)),
        }
    }
}

/// A value whose text holds `${` or `%{`: rendering escapes it, which is right for data, but the
/// item it replaces cannot be judged the same.
fn contains_template_text(value: &Value) -> bool {
    match value {
        Value::String(s) => s.contains("${") || s.contains("%{"),
        Value::Array(items) => items.iter().any(contains_template_text),
        Value::Object(map) => map.values().any(contains_template_text),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use serde_json::json;

    use crate::eval::effective_config;
    use crate::patch::{Op, apply};
    use crate::{Address, AttrPath, AttrValue, Repo};

    const POLICY: &str = r#"resource "aws_secretsmanager_secret" "db" {
  name = "db"
}

resource "aws_secretsmanager_secret" "cache" {
  name = "cache"
}

resource "aws_secretsmanager_secret_policy" "db" {
  secret_arn = aws_secretsmanager_secret.db.arn

  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Effect    = "Allow"
      Principal = { AWS = "arn:aws:iam::123456789012:role/reader" }
      Action    = "secretsmanager:GetSecretValue"
      Resource  = aws_secretsmanager_secret.db.arn
    }]
  })
}
"#;

    fn statement(sid: &str) -> serde_json::Value {
        json!({"Sid": sid, "Effect": "Allow", "Principal": "*", "Action": "secretsmanager:GetSecretValue",
               "Resource": "arn:aws:secretsmanager:us-west-2:123456789012:secret:db-AbCdEf",
               "Condition": {"StringEquals": {"aws:PrincipalOrgID": "o-abc123"}}})
    }

    #[test]
    fn statements_inserted_before_the_codes_keep_its_reference_and_its_text() {
        let mut repo = Repo::from_files([(PathBuf::from("main.tf"), POLICY.to_string())].into_iter().collect());
        let address = Address::parse("aws_secretsmanager_secret_policy.db").unwrap();
        let kept = json!({"Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::123456789012:role/reader"},
                          "Action": "secretsmanager:GetSecretValue",
                          "Resource": "arn:aws:secretsmanager:us-west-2:123456789012:secret:db-AbCdEf"});
        let op = Op::Set {
            path: AttrPath::parse("policy.Statement").unwrap(),
            value: AttrValue::Literal(json!([statement("OrgA"), statement("OrgB"), kept])),
        };
        let applied = apply(&mut repo, &address, &op).unwrap();
        assert_eq!(applied.files, vec![PathBuf::from("main.tf")], "{applied:?}");
        let text = repo.text(Path::new("main.tf")).unwrap();
        // The code's statement, with its reference, comes last; the new ones first, as values.
        let org_a = text.find("\"OrgA\"").expect("OrgA");
        let org_b = text.find("\"OrgB\"").expect("OrgB");
        let reader = text.find("role/reader").expect("the kept statement");
        assert!(org_a < org_b && org_b < reader, "{text}");
        assert!(text.contains("Resource  = aws_secretsmanager_secret.db.arn"), "{text}");
        assert!(text.contains("\"aws:PrincipalOrgID\" = \"o-abc123\""), "{text}");
        assert!(!text.contains("merge("), "{text}");
        assert!(driftback_parse(text));
        // The other secret's configuration is untouched.
        let cache = Address::parse("aws_secretsmanager_secret.cache").unwrap();
        assert_eq!(effective_config(&repo, &cache).unwrap(), json!({"name": "cache"}));
    }

    #[test]
    fn a_list_with_nothing_in_common_is_not_rewritten_over_its_references() {
        let mut repo = Repo::from_files([(PathBuf::from("main.tf"), POLICY.to_string())].into_iter().collect());
        let address = Address::parse("aws_secretsmanager_secret_policy.db").unwrap();
        let op = Op::Set {
            path: AttrPath::parse("policy.Statement").unwrap(),
            value: AttrValue::Literal(json!([statement("OrgA")])),
        };
        assert!(apply(&mut repo, &address, &op).is_err());
        assert_eq!(repo.text(Path::new("main.tf")).unwrap(), POLICY);
    }

    fn driftback_parse(text: &str) -> bool {
        crate::edit::parse(text).is_ok()
    }
}
