//! How an argument of a `dynamic` block's `content` reads its iterator's element, in the forms
//! modules write it: `rule.value.days`, `rule.value["days"]`, `try(rule.value.days, 30)`,
//! `lookup(rule.value, "days", 30)`, a conversion around any of them (`tonumber(...)`), and
//! `split(",", lookup(rule.value, "cidr_blocks", ""))`, where the element holds the list joined.
//! Read off the syntax tree, so layout and spacing do not matter.

use hcl_edit::expr::{Expression, TraversalOperator};
use serde_json::{Map, Value};

use crate::path::Seg;

/// One reading of a `dynamic` block's element.
#[derive(Debug)]
pub(crate) struct Reading<'e> {
    /// The path into the element (`[]`: the element itself).
    pub path: Vec<Seg>,
    /// The value when the element lacks the path (`try`'s last argument, `lookup`'s default).
    pub default: Option<&'e Expression>,
    /// `split(SEP, ...)`: the element holds the list joined by SEP.
    pub split: Option<String>,
}

/// How `expr` reads the element of the iterator named `iterator`, or `None` when it does not read
/// it in one of the forms above.
pub(crate) fn reading<'e>(expr: &'e Expression, iterator: &str) -> Option<Reading<'e>> {
    match expr {
        Expression::Parenthesis(inner) => reading(inner.inner(), iterator),
        Expression::Traversal(t) => {
            let Expression::Variable(root) = &t.expr else { return None };
            let mut ops = t.operators.iter().map(|o| o.value());
            let is_value = matches!(ops.next(), Some(TraversalOperator::GetAttr(n)) if n.as_str() == "value");
            if root.as_str() != iterator || !is_value {
                return None;
            }
            let mut path = Vec::new();
            for op in ops {
                path.push(match op {
                    TraversalOperator::GetAttr(n) => Seg::Name(n.as_str().to_string()),
                    TraversalOperator::Index(Expression::String(s)) => Seg::Name(s.as_str().to_string()),
                    TraversalOperator::Index(Expression::Number(n)) => Seg::Index(n.as_u64()? as usize),
                    TraversalOperator::LegacyIndex(i) => Seg::Index(*i.value() as usize),
                    _ => return None,
                });
            }
            Some(Reading { path, default: None, split: None })
        }
        Expression::FuncCall(call) => {
            let args: Vec<&Expression> = call.args.iter().collect();
            match (call.name.name.as_str(), args.as_slice()) {
                // `try(x.value.a, default)`: only a plain reading first, so the default is the one fallback.
                ("try", [first, default]) => {
                    let inner = reading(first, iterator).filter(|r| r.default.is_none() && r.split.is_none())?;
                    Some(Reading { default: Some(default), ..inner })
                }
                ("lookup", [map, key, rest @ ..]) if rest.len() <= 1 => {
                    let Expression::String(key) = key else { return None };
                    let inner = reading(map, iterator).filter(|r| r.default.is_none() && r.split.is_none())?;
                    let mut path = inner.path;
                    path.push(Seg::Name(key.as_str().to_string()));
                    Some(Reading { path, default: rest.first().copied(), split: None })
                }
                ("split", [Expression::String(sep), inner]) => {
                    let inner = reading(inner, iterator).filter(|r| r.split.is_none())?;
                    Some(Reading { split: Some(sep.as_str().to_string()), ..inner })
                }
                ("tostring" | "tonumber" | "tobool", [inner]) => reading(inner, iterator),
                _ => None,
            }
        }
        _ => None,
    }
}

impl Reading<'_> {
    /// What the element must hold at [`Reading::path`] for the argument to be `want`: a list the
    /// argument splits is held joined. `None` when `want` cannot be written so (a list of
    /// non-strings, or an item that holds the separator).
    pub fn held(&self, want: &Value) -> Option<Value> {
        let Some(sep) = &self.split else { return Some(want.clone()) };
        let Value::Array(items) = want else { return None };
        let parts: Option<Vec<&str>> = items.iter().map(Value::as_str).collect();
        let parts = parts?;
        if parts.is_empty() || parts.iter().any(|p| p.contains(sep.as_str())) {
            return None;
        }
        Some(Value::String(parts.join(sep)))
    }
}

/// Put `value` at `path` (names only) inside `element`, making the objects on the way. Returns
/// the value already there instead when there is one, and `None` when the path passes through a
/// value that is not an object.
pub(crate) fn insert_at(element: &mut Map<String, Value>, path: &[Seg], value: Value) -> Result<(), Option<Value>> {
    let Some((last, parents)) = path.split_last() else { return Err(None) };
    let mut here = element;
    for seg in parents {
        let Seg::Name(name) = seg else { return Err(None) };
        let next = here.entry(name.clone()).or_insert_with(|| Value::Object(Map::new()));
        match next {
            Value::Object(map) => here = map,
            _ => return Err(None),
        }
    }
    let Seg::Name(name) = last else { return Err(None) };
    match here.get(name) {
        Some(existing) => Err(Some(existing.clone())),
        None => {
            here.insert(name.clone(), value);
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(source: &str) -> Option<(Vec<Seg>, Option<String>, Option<String>)> {
        let expr: Expression = source.parse().unwrap();
        reading(&expr, "ingress").map(|r| (r.path, r.default.map(|d| d.to_string().trim().to_string()), r.split))
    }

    fn names(names: &[&str]) -> Vec<Seg> {
        names.iter().map(|n| Seg::Name(n.to_string())).collect()
    }

    #[test]
    fn the_forms_modules_read_an_element_in() {
        assert_eq!(read("ingress.value.from_port"), Some((names(&["from_port"]), None, None)));
        assert_eq!(read("ingress.value[\"to_port\"]"), Some((names(&["to_port"]), None, None)));
        assert_eq!(read("ingress.value"), Some((vec![], None, None)));
        assert_eq!(read("try(ingress.value.rule.days, 30)"), Some((names(&["rule", "days"]), Some("30".into()), None)));
        assert_eq!(
            read("lookup(ingress.value, \"protocol\", \"-1\")"),
            Some((names(&["protocol"]), Some("\"-1\"".into()), None))
        );
        assert_eq!(
            read("split(\",\", lookup(ingress.value, \"cidr_blocks\", join(\",\", var.cidrs)))"),
            Some((names(&["cidr_blocks"]), Some("join(\",\", var.cidrs)".into()), Some(",".into())))
        );
        assert_eq!(read("tonumber(ingress.value.port)"), Some((names(&["port"]), None, None)));
        // Another iterator, another variable, a key computed, a default before the reading.
        assert_eq!(read("egress.value.from_port"), None);
        assert_eq!(read("var.ingress.value"), None);
        assert_eq!(read("lookup(ingress.value, var.key, 0)"), None);
        assert_eq!(read("try(var.default, ingress.value.port)"), None);
        assert_eq!(read("ingress.key"), None);
    }

    #[test]
    fn a_split_list_is_held_joined_unless_an_item_holds_the_separator() {
        let expr: Expression = "split(\",\", ingress.value.cidrs)".parse().unwrap();
        let r = reading(&expr, "ingress").unwrap();
        assert_eq!(
            r.held(&serde_json::json!(["10.0.0.0/8", "10.1.0.0/16"])),
            Some(serde_json::json!("10.0.0.0/8,10.1.0.0/16"))
        );
        assert_eq!(r.held(&serde_json::json!(["a,b"])), None);
        assert_eq!(r.held(&serde_json::json!("10.0.0.0/8")), None);
    }

    #[test]
    fn a_nested_path_makes_its_objects() {
        let mut element = Map::new();
        insert_at(&mut element, &names(&["a", "b"]), Value::from(1)).unwrap();
        insert_at(&mut element, &names(&["a", "c"]), Value::from(2)).unwrap();
        assert_eq!(Value::Object(element.clone()), serde_json::json!({"a": {"b": 1, "c": 2}}));
        assert_eq!(insert_at(&mut element, &names(&["a", "b"]), Value::from(3)), Err(Some(Value::from(1))));
        assert_eq!(insert_at(&mut element, &names(&["a", "b", "x"]), Value::from(3)), Err(None));
    }
}
