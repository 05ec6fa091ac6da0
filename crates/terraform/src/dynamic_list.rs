//! Nested blocks that a `dynamic` block makes from a list (`for_each = var.web_ingress`, a list of
//! objects or of plain values in tfvars, locals or a default): a new block is a new element at the
//! end of that list, in the list's own layout, and a block that goes is its element leaving the
//! list, each at the list's origin. [`crate::patch`] keeps the edit only when evaluation shows that
//! the instance gets exactly that block and nothing else changes.

use hcl_edit::structure::Block;
use serde_json::{Map, Value};

use crate::edit;
use crate::origin::{Candidate, Change, Site, Tracer};
use crate::path::Seg;
use crate::render::AttrValue;
use crate::repo::Repo;

/// The element a `dynamic` block's `for_each` list must gain so that its content writes `want`,
/// where each content argument reads the element in one of the forms modules use
/// ([`crate::dynamic_reading`]: `ITER.value.FIELD`, `try(ITER.value.FIELD, default)`,
/// `lookup(ITER.value, "FIELD", default)`, a list `split` from a joined string), and fields the
/// call does not give (a rule's `description`) are `null` in the element, as the block the call
/// made has none. `None` when a content argument is a literal the call does not say, or reads the
/// element in another way, or when the call sets an argument the content does not write to
/// something other than nothing (`[]`, `""`). Also returns the content arguments left unset.
pub(crate) fn element_with_unset_fields(
    text: &str,
    dynamic: &Block,
    block_type: &str,
    want: &Map<String, Value>,
) -> Option<(Value, Vec<String>)> {
    let iterator = match dynamic.body.get_attribute("iterator") {
        Some(attr) => edit::expr_text(text, &attr.value).trim().to_string(),
        None => block_type.to_string(),
    };
    let content = dynamic.body.blocks().find(|b| b.ident.as_str() == "content")?;
    let mut fields = Map::new();
    let mut written = Vec::new();
    let mut unset = Vec::new();
    for attr in content.body.attributes() {
        let name = attr.key.as_str();
        written.push(name.to_string());
        // The element itself (`ITER.value`) is a list of plain values: `dynamic_element`'s case.
        let read = crate::dynamic_reading::reading(&attr.value, &iterator).filter(|r| !r.path.is_empty());
        match (read, want.get(name)) {
            (Some(read), Some(value)) => {
                let held = read.held(value)?;
                // Two arguments that read one field (`from_port` and `to_port` from `port`) must agree.
                match crate::dynamic_reading::insert_at(&mut fields, &read.path, held.clone()) {
                    Ok(()) => {}
                    Err(Some(have)) if have.is_null() || crate::patch::values_equal(&have, &held) => {
                        set_at(&mut fields, &read.path, held)
                    }
                    Err(_) => return None,
                }
            }
            (Some(read), None) => {
                unset.push(name.to_string());
                // Null unless another argument reads the same field with a value.
                let _ = crate::dynamic_reading::insert_at(&mut fields, &read.path, Value::Null);
            }
            (None, want) => {
                let source = edit::expr_text(text, &attr.value).trim().to_string();
                let literal = source.parse::<hcl::Expression>().ok().and_then(|e| serde_json::to_value(e).ok())?;
                if !want.is_some_and(|w| crate::patch::values_equal(&literal, w)) {
                    return None;
                }
            }
        }
    }
    let unwritten_set = want.iter().any(|(k, v)| !written.contains(k) && !is_nothing(v));
    if unwritten_set || fields.is_empty() {
        return None;
    }
    Some((Value::Object(fields), unset))
}

/// Overwrite the value at `path` (names only, the objects on the way already there).
fn set_at(element: &mut Map<String, Value>, path: &[Seg], value: Value) {
    let Some((last, parents)) = path.split_last() else { return };
    let mut here = element;
    for seg in parents {
        let Some(Value::Object(map)) = crate::edit::seg_name(seg).and_then(|n| here.get_mut(n)) else { return };
        here = map;
    }
    if let Some(name) = crate::edit::seg_name(last) {
        here.insert(name.to_string(), value);
    }
}

/// A value that says nothing is set: null, an empty list, map or string.
fn is_nothing(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Array(items) => items.is_empty(),
        Value::Object(map) => map.is_empty(),
        Value::String(s) => s.is_empty(),
        _ => false,
    }
}

/// `value` written as the list's other elements write theirs: a number the call sent as text
/// (`"443"`) is a number where they hold numbers, field by field for objects.
pub(crate) fn like_siblings(value: Value, siblings: &[Value]) -> Value {
    let numeric = |v: &Value| v.as_str().and_then(|s| s.trim().parse::<serde_json::Number>().ok());
    match value {
        Value::String(ref s) if siblings.iter().any(Value::is_number) => match numeric(&Value::String(s.clone())) {
            Some(n) => Value::Number(n),
            None => value,
        },
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| {
                    let beside: Vec<Value> = siblings.iter().filter_map(|s| s.get(&k).cloned()).collect();
                    let v = like_siblings(v, &beside);
                    (k, v)
                })
                .collect(),
        ),
        other => other,
    }
}

/// Edits that append `element` to the list a `dynamic` block's `for_each` reads (`items`: the
/// list as it is now), wherever the list comes from.
pub(crate) fn appended(
    repo: &Repo,
    site: &Site,
    for_each: &hcl_edit::expr::Expression,
    items: &[Value],
    element: Value,
) -> Vec<Candidate> {
    let mut tracer = Tracer::new(repo);
    let change = Change::Set(AttrValue::Literal(like_siblings(element, items)));
    let trail = " -> a new element at the end of the dynamic block's for_each list";
    tracer.expr(site, &site.file, for_each, &[Seg::Index(items.len())], &change, trail, 0);
    tracer.out
}

/// Edits that drop the element at `element` (an index or a key) from what a `dynamic` block's
/// `for_each` reads, wherever it comes from.
pub(crate) fn dropped(
    repo: &Repo,
    site: &Site,
    for_each: &hcl_edit::expr::Expression,
    element: &Seg,
) -> Vec<Candidate> {
    let mut tracer = Tracer::new(repo);
    let trail = " -> its element of the dynamic block's for_each";
    tracer.expr(site, &site.file, for_each, std::slice::from_ref(element), &Change::Remove, trail, 0);
    tracer.out
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use serde_json::json;

    use crate::eval::effective_config;
    use crate::patch::{Op, apply};
    use crate::render::BlockSpec;
    use crate::{Address, AttrValue, Repo};

    const SG: &str = r#"resource "aws_security_group" "web" {
  name = "web"

  dynamic "ingress" {
    for_each = var.web_ingress
    content {
      description = ingress.value.description
      from_port   = ingress.value.port
      to_port     = ingress.value.port
      protocol    = "tcp"
      cidr_blocks = ingress.value.cidr_blocks
    }
  }

  egress {
    from_port   = 0
    to_port     = 0
    protocol    = "-1"
    cidr_blocks = ["0.0.0.0/0"]
  }
}

resource "aws_security_group" "admin" {
  name = "admin"

  dynamic "ingress" {
    for_each = var.admin_ports
    content {
      from_port   = ingress.value
      to_port     = ingress.value
      protocol    = "tcp"
      cidr_blocks = ["10.0.0.0/8"]
    }
  }
}
"#;

    const VARIABLES: &str = r#"variable "web_ingress" {
  type = list(object({
    description = string
    port        = number
    cidr_blocks = list(string)
  }))
}

variable "admin_ports" {
  type    = list(number)
  default = [22, 3389]
}
"#;

    const TFVARS: &str = r#"web_ingress = [
  { description = "HTTP from the load balancers", port = 80, cidr_blocks = ["10.40.0.0/16"] },
]
"#;

    fn repo() -> Repo {
        Repo::from_files(
            [
                (PathBuf::from("sg.tf"), SG.to_string()),
                (PathBuf::from("variables.tf"), VARIABLES.to_string()),
                (PathBuf::from("terraform.tfvars"), TFVARS.to_string()),
            ]
            .into_iter()
            .collect(),
        )
    }

    fn rule(port: &str, cidr: &str) -> BlockSpec {
        BlockSpec {
            attrs: vec![
                ("from_port".into(), AttrValue::Literal(json!(port))),
                ("to_port".into(), AttrValue::Literal(json!(port))),
                ("protocol".into(), AttrValue::Literal(json!("tcp"))),
                ("cidr_blocks".into(), AttrValue::Literal(json!([cidr]))),
            ],
            blocks: vec![],
        }
    }

    #[test]
    fn a_port_opened_is_a_new_element_of_the_list_of_objects_in_its_layout() {
        let mut repo = repo();
        let web = Address::parse("aws_security_group.web").unwrap();
        let admin = Address::parse("aws_security_group.admin").unwrap();
        let admin_before = effective_config(&repo, &admin).unwrap();
        let op = Op::AddBlock { block_type: "ingress".into(), spec: rule("443", "0.0.0.0/16") };
        let applied = apply(&mut repo, &web, &op).unwrap();
        assert_eq!(applied.files, vec![PathBuf::from("terraform.tfvars")], "{applied:?}");
        let tfvars = repo.text(Path::new("terraform.tfvars")).unwrap();
        // The sibling's keys in their order, the port a number, the description the call did not give as null.
        assert_eq!(
            tfvars,
            "web_ingress = [\n  { description = \"HTTP from the load balancers\", port = 80, cidr_blocks = [\"10.40.0.0/16\"] },\n  { description = null, port = 443, cidr_blocks = [\"0.0.0.0/16\"] },\n]\n"
        );
        let after = effective_config(&repo, &web).unwrap();
        assert_eq!(after["ingress"][0]["from_port"], json!(80));
        assert_eq!(after["ingress"][1]["from_port"], json!(443));
        assert_eq!(after["ingress"][1]["cidr_blocks"], json!(["0.0.0.0/16"]));
        assert_eq!(effective_config(&repo, &admin).unwrap(), admin_before);
        // And closed again: the element leaves the list, the first one stays.
        let close = Op::RemoveBlocks {
            block_type: "ingress".into(),
            matching: vec![("from_port".into(), json!("443")), ("cidr_blocks".into(), json!(["0.0.0.0/16"]))],
        };
        apply(&mut repo, &web, &close).unwrap();
        assert_eq!(repo.text(Path::new("terraform.tfvars")).unwrap(), TFVARS);
    }

    #[test]
    fn a_list_of_numbers_gains_and_loses_the_port_at_its_default() {
        let mut repo = repo();
        let admin = Address::parse("aws_security_group.admin").unwrap();
        let web = Address::parse("aws_security_group.web").unwrap();
        let web_before = effective_config(&repo, &web).unwrap();
        let op = Op::AddBlock { block_type: "ingress".into(), spec: rule("5432", "10.0.0.0/8") };
        apply(&mut repo, &admin, &op).unwrap();
        assert!(repo.text(Path::new("variables.tf")).unwrap().contains("default = [22, 3389, 5432]"));
        // A block the content cannot write (another source range than its literal) is refused.
        let other = Op::AddBlock { block_type: "ingress".into(), spec: rule("80", "192.168.0.0/16") };
        assert!(apply(&mut repo.clone(), &admin, &other).is_err());
        // The first port goes; the others keep their places.
        let close = Op::RemoveBlocks { block_type: "ingress".into(), matching: vec![("from_port".into(), json!(22))] };
        apply(&mut repo, &admin, &close).unwrap();
        assert!(
            repo.text(Path::new("variables.tf")).unwrap().contains("default = [3389, 5432]"),
            "{:?}",
            repo.text(Path::new("variables.tf"))
        );
        let ports: Vec<_> = effective_config(&repo, &admin).unwrap()["ingress"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["from_port"].clone())
            .collect();
        assert_eq!(ports, vec![json!(3389), json!(5432)]);
        assert_eq!(effective_config(&repo, &web).unwrap(), web_before);
    }
}
