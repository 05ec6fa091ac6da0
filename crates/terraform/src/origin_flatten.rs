//! `flatten()` in the trace of a value's origin: an element of the flattened list is an item of
//! the argument list when that item is not a list itself, or an element of the item that is (the
//! community modules' `flatten([var.rule])`, which takes one object or a list of them). The
//! change goes to that item or element, found by evaluating the items.

use std::path::Path;

use hcl_edit::expr::{Expression, FuncCall};
use serde_json::Value;

use crate::edit;
use crate::eval::eval_in_block;
use crate::origin::{Change, Site, Tracer};
use crate::path::Seg;

impl<'a> Tracer<'a> {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn flatten(
        &mut self,
        site: &Site,
        file: &Path,
        call: &'a FuncCall,
        tail: &[Seg],
        change: &Change,
        trail: &str,
        depth: usize,
    ) {
        let args: Vec<&'a Expression> = call.args.iter().collect();
        let (Some(Seg::Index(wanted)), [list]) = (tail.first(), args.as_slice()) else { return };
        let list: &'a Expression = list;
        let text = self.repo.text(file).unwrap_or_default();
        let eval = |e: &Expression| {
            eval_in_block(
                self.repo,
                &site.module,
                &site.file,
                &site.block,
                site.key.as_ref(),
                &edit::expr_text(text, e),
            )
        };
        let flat = |v: &Value| !matches!(v, Value::Array(items) if items.iter().any(Value::is_array));
        let Expression::Array(items) = list else {
            // Anything else that is already a list of non-lists: flatten changes nothing.
            if eval(list).as_ref().is_some_and(|v| v.is_array() && flat(v)) {
                let trail = format!("{trail} -> flatten()'s list");
                self.expr(site, file, list, tail, change, &trail, depth + 1);
            }
            return;
        };
        let mut start = 0;
        for item in items.iter() {
            let Some(value) = eval(item) else { return };
            let (len, inner) = match &value {
                Value::Array(elements) if flat(&value) => (elements.len(), true),
                Value::Array(_) => return,
                _ => (1, false),
            };
            if *wanted < start + len {
                let trail = format!("{trail} -> flatten()'s item");
                let rest = if inner {
                    [vec![Seg::Index(wanted - start)], tail[1..].to_vec()].concat()
                } else {
                    tail[1..].to_vec()
                };
                return self.expr(site, file, item, &rest, change, &trail, depth + 1);
            }
            start += len;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use serde_json::json;

    use crate::eval::effective_config;
    use crate::patch::{Op, apply};
    use crate::{Address, AttrPath, AttrValue, Repo};

    const MAIN: &str = r#"variable "rules" {
  type = any
}

variable "extra" {
  type = any
}

resource "aws_security_group" "web" {
  name = "web"

  dynamic "ingress" {
    for_each = flatten([var.rules, var.extra])
    content {
      description = ingress.value.name
      from_port   = ingress.value.port
      to_port     = ingress.value.port
      protocol    = "tcp"
      cidr_blocks = ["10.0.0.0/8"]
    }
  }
}
"#;

    const TFVARS: &str = "rules = [{ name = \"http\", port = 80 }, { name = \"https\", port = 443 }]\nextra = { name = \"alt\", port = 8080 }\n";

    #[test]
    fn an_element_of_a_flattened_list_is_changed_in_the_item_it_comes_from() {
        let mut repo = Repo::from_files(
            [(PathBuf::from("main.tf"), MAIN.to_string()), (PathBuf::from("terraform.tfvars"), TFVARS.to_string())]
                .into_iter()
                .collect(),
        );
        let web = Address::parse("aws_security_group.web").unwrap();
        let set = |path: &str, name: &str| Op::Set {
            path: AttrPath::parse(path).unwrap(),
            value: AttrValue::Literal(json!(name)),
        };
        // The third block is the object item itself; the second, an element of the list item.
        apply(&mut repo, &web, &set("ingress[2].description", "alternate")).unwrap();
        apply(&mut repo, &web, &set("ingress[1].description", "tls")).unwrap();
        assert_eq!(
            repo.text(Path::new("terraform.tfvars")).unwrap(),
            "rules = [{ name = \"http\", port = 80 }, { name = \"tls\", port = 443 }]\nextra = { name = \"alternate\", port = 8080 }\n"
        );
        let names: Vec<_> = effective_config(&repo, &web).unwrap()["ingress"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["description"].clone())
            .collect();
        assert_eq!(names, [json!("http"), json!("tls"), json!("alternate")]);
    }
}
