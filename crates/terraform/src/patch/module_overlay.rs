//! A map entry for one call of a shared module, written through a new input of the module.

use std::path::{Path, PathBuf};

use hcl_edit::Span;
use hcl_edit::expr::Expression;
use serde_json::Value;

use crate::address::Address;
use crate::edit::{self, BlockSel};
use crate::origin::Candidate;
use crate::path::{AttrPath, Seg};
use crate::render::AttrValue;
use crate::repo::{BlockLocation, Repo};

/// A map argument of a resource inside a module (`tags = merge({ Name = var.name }, var.tags)`) whose
/// every origin is shared with other calls: the module gains an input for this resource's extra
/// entries (`vpc_tags`, default `{}`, merged last, as widely used modules do), and this call sets it.
/// Only for a call without `count`/`for_each`, whose input belongs to one instance.
pub(super) fn module_input_overlay(
    repo: &Repo,
    address: &Address,
    location: &BlockLocation,
    expr: &Expression,
    attr: &Seg,
    tail: &[Seg],
    value: &AttrValue,
) -> Option<Candidate> {
    let (Seg::Name(attr), [Seg::Key(_) | Seg::Name(_)]) = (attr, tail) else { return None };
    let call = address.module.last()?;
    if call.key.is_some() {
        return None;
    }
    let noun = address.rtype.strip_prefix("aws_").unwrap_or(&address.rtype);
    let input = if address.name == "this" || address.name == noun {
        format!("{noun}_{attr}")
    } else {
        format!("{}_{noun}_{attr}", address.name)
    };
    let module_dir = repo.module_dir(&address.module_path())?.clone();
    if repo.find_block(&module_dir, &BlockSel::new("variable", &[&input])).is_some() {
        return None;
    }
    let parent_path = address.module[..address.module.len() - 1]
        .iter()
        .map(|m| format!("module.{}", m.name))
        .collect::<Vec<_>>()
        .join(".");
    let parent_dir = repo.module_dir(&parent_path)?.clone();
    let call_sel = BlockSel::new("module", &[&call.name]);
    let call_file = repo.find_block(&parent_dir, &call_sel)?.clone();
    // The variables go where the module declares its others.
    let variables_file = repo
        .parsed_tf_in(&module_dir)
        .find(|(_, body)| body.blocks().any(|b| b.ident.as_str() == "variable"))
        .map(|(file, _)| file.clone())
        .unwrap_or_else(|| location.file.clone());
    let mut texts: std::collections::BTreeMap<PathBuf, String> = std::collections::BTreeMap::new();
    let text_of = |texts: &std::collections::BTreeMap<PathBuf, String>, file: &Path| {
        texts.get(file).cloned().or_else(|| repo.text(file).map(str::to_string))
    };
    // The resource merges the new input last.
    let span = expr.span()?;
    let resource_text = text_of(&texts, &location.file)?;
    let written = &resource_text[span.clone()];
    let merged_expr = match written.strip_prefix("merge(").and_then(|w| w.strip_suffix(')')) {
        // One more argument of a one-line merge().
        Some(args) if !written.contains('\n') => {
            format!("merge({}, var.{input})", args.trim_end().trim_end_matches(','))
        }
        _ => format!("merge({written}, var.{input})"),
    };
    let merged = format!("{}{merged_expr}{}", &resource_text[..span.start], &resource_text[span.end..]);
    texts.insert(location.file.clone(), merged);
    // The module declares it.
    let mut declared = text_of(&texts, &variables_file)?;
    if !declared.ends_with('\n') {
        declared.push('\n');
    }
    declared.push_str(&format!(
        "\nvariable \"{input}\" {{\n  description = \"Additional {attr} for the {noun}\"\n  type        = map(string)\n  default     = {{}}\n}}\n"
    ));
    texts.insert(variables_file, declared);
    // The call sets this entry.
    let call_text = text_of(&texts, &call_file)?;
    let entry = AttrValue::Literal(Value::Object(
        [(
            edit::seg_name(&tail[0])?.to_string(),
            match value {
                AttrValue::Literal(v) => v.clone(),
                AttrValue::Reference(_) => return None,
            },
        )]
        .into_iter()
        .collect(),
    ));
    let with_input = edit::set(&call_text, Some(&call_sel), &AttrPath(vec![Seg::Name(input.clone())]), &entry).ok()?;
    texts.insert(call_file.clone(), with_input);
    if texts.values().any(|t| edit::parse(t).is_err()) {
        return None;
    }
    let mut files = texts.into_iter();
    let (file, text) = files.next()?;
    Some(Candidate {
        file,
        text,
        note: format!(
            "a new input {input} of the module in {}, merged into {attr} of {}.{}, set on module.{} in {}",
            module_dir.display(),
            address.rtype,
            address.name,
            call.name,
            call_file.display()
        ),
        also: files.collect(),
    })
}
