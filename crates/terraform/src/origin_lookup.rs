//! `lookup(map, "key", default)` in the trace of a value's origin: the value is the map's entry
//! when it has the key, so the change goes to that entry first (an entry gains the key it lacked:
//! `lookup(each.value, "periods", 2)` in a module's `for_each` over an input map becomes the entry's
//! `periods` at the call), then to the default, which every entry without the key shares.

use std::path::Path;

use hcl_edit::expr::{Expression, FuncCall};
use serde_json::Value;

use crate::edit;
use crate::eval::eval_in_block;
use crate::origin::{Change, Site, Tracer};
use crate::path::Seg;

impl<'a> Tracer<'a> {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn lookup(
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
        let (Some(map), Some(key)) = (args.first(), args.get(1)) else { return };
        let key = match key {
            Expression::String(s) => s.as_str().to_string(),
            other => {
                let text = self.repo.text(file).unwrap_or_default();
                let source = edit::expr_text(text, other);
                match eval_in_block(self.repo, &site.module, &site.file, &site.block, site.key.as_ref(), &source) {
                    Some(Value::String(s)) => s,
                    _ => return,
                }
            }
        };
        let entry = [vec![Seg::Key(key.clone())], tail.to_vec()].concat();
        let through = format!("{trail} -> lookup()'s entry {key:?}");
        self.expr(site, file, map, &entry, change, &through, depth + 1);
        if let Some(default) = args.get(2) {
            let through = format!("{trail} -> lookup()'s default");
            self.expr(site, file, default, tail, change, &through, depth + 1);
        }
    }
}
