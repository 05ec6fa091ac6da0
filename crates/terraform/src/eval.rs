//! Effective configuration: a resource instance's attributes with variables, tfvars, locals, module
//! inputs, `count.index` and `each.*` resolved. References to other resources stay symbolic (their
//! source text, as `${...}`).

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::PathBuf;
use std::rc::Rc;

use hcl_edit::Span;
use hcl_edit::structure::Body;
use serde_json::{Map, Value};

use std::path::Path;

use hcl_edit::structure::Block;

use crate::address::{Address, InstanceKey, ModuleStep};
use crate::edit::{self, BlockSel};
use crate::functions::{eval_try, terraform_context};
use crate::path::{AttrPath, Seg};
use crate::repo::Repo;

/// The effective configuration of one resource instance, or `None` when its block is not there or
/// its `count`/`for_each` does not produce this instance.
pub fn effective_config(repo: &Repo, address: &Address) -> Option<Value> {
    config_with(repo, address, None)
}

/// As [`effective_config`], with references to other resources and data sources of its own module
/// instance resolved from `known` (as [`crate::State::known_values`] gives them).
pub fn effective_config_resolved(repo: &Repo, address: &Address, known: &Map<String, Value>) -> Option<Value> {
    let own = |module: &[ModuleStep]| if module == address.module.as_slice() { known.clone() } else { Map::new() };
    config_with(repo, address, Some(&own))
}

/// As [`effective_config`], with every reference to a resource or data source, in this module
/// instance or in the modules its values pass through (a root local read by a module input),
/// resolved from the state: the values `terraform plan` would compare.
pub fn effective_config_in_state(repo: &Repo, address: &Address, state: &crate::State) -> Option<Value> {
    config_with(repo, address, Some(&|module: &[ModuleStep]| state.known_values(module)))
}

fn config_with(repo: &Repo, address: &Address, known: Known<'_>) -> Option<Value> {
    Evaluator { known, ..Evaluator::new(repo) }.config(address)
}

/// Evaluates many instances of one repository, computing each module instance's scope (its
/// variables, locals and evaluation context) once: the cost of evaluating every instance grows with
/// the number of instances, not with instances times files.
pub struct Evaluator<'r> {
    repo: &'r Repo,
    known: Known<'r>,
    scopes: RefCell<HashMap<Vec<ModuleStep>, Option<Rc<Evaluated>>>>,
}

/// A module instance's scope and the context built from it.
struct Evaluated {
    scope: Scope,
    ctx: hcl::eval::Context<'static>,
}

impl<'r> Evaluator<'r> {
    /// References to resources stay symbolic.
    pub fn new(repo: &'r Repo) -> Evaluator<'r> {
        Evaluator { repo, known: None, scopes: RefCell::new(HashMap::new()) }
    }

    /// References to resources and data sources resolved from `known` per module instance (as
    /// [`crate::State::known_values`] gives them), as [`effective_config_in_state`] does.
    pub fn with_known(repo: &'r Repo, known: &'r dyn Fn(&[ModuleStep]) -> Map<String, Value>) -> Evaluator<'r> {
        Evaluator { repo, known: Some(known), scopes: RefCell::new(HashMap::new()) }
    }

    /// The effective configuration of one resource instance, as [`effective_config`].
    pub fn config(&self, address: &Address) -> Option<Value> {
        let repo = self.repo;
        let location = repo.find_resource(address)?;
        let text = repo.text(&location.file)?;
        let block = edit::find_block(repo.body(&location.file)?, &location.sel)?;
        let ctx = block_context(self, &address.module, text, block, address.key.as_ref())?;
        Some(body_value(text, &block.body, &ctx))
    }

    /// Every resource instance the configuration declares, as [`instances`].
    pub fn instances(&self) -> Vec<Address> {
        let mut out = Vec::new();
        collect_instances(self, &[], self.repo.root_dir(), &mut out, 0);
        out
    }

    fn scope(&self, module: &[ModuleStep]) -> Option<Rc<Evaluated>> {
        if let Some(found) = self.scopes.borrow().get(module) {
            return found.clone();
        }
        let built = module_scope(self, module).map(|scope| {
            let ctx = scope.context();
            Rc::new(Evaluated { scope, ctx })
        });
        self.scopes.borrow_mut().insert(module.to_vec(), built.clone());
        built
    }
}

/// Evaluate the source text of an expression as if it were written in the block `sel` of `file`
/// (a resource or a module call) of module instance `module`, for instance `key` of that block.
pub fn eval_in_block(
    repo: &Repo,
    module: &[ModuleStep],
    file: &Path,
    sel: &BlockSel,
    key: Option<&InstanceKey>,
    source: &str,
) -> Option<Value> {
    let text = repo.text(file)?;
    let block = edit::find_block(repo.body(file)?, sel)?;
    let ctx = block_context(&Evaluator::new(repo), module, text, block, key)?;
    let parsed: hcl::Expression = source.parse().ok()?;
    serde_json::to_value(eval_try(&parsed, &ctx).ok()?).ok()
}

/// The scope of a block's instance: its module's variables and locals, `count.index` or
/// `each.key`/`each.value`. `None` when the block's `count`/`for_each` does not produce `key`.
fn block_context(
    ev: &Evaluator<'_>,
    module: &[ModuleStep],
    text: &str,
    block: &Block,
    key: Option<&InstanceKey>,
) -> Option<hcl::eval::Context<'static>> {
    let mut ctx = ev.scope(module)?.ctx.clone();
    match key {
        None => {}
        Some(InstanceKey::Int(i)) => {
            if let Some(Value::Number(n)) =
                block.body.get_attribute("count").and_then(|a| eval_expr(text, &a.value, &ctx))
            {
                if n.as_f64().is_some_and(|n| (*i as f64) >= n || *i < 0) {
                    return None;
                }
            }
            ctx.declare_var("count", hcl::Value::from_iter([("index", hcl::Value::from(*i))]));
        }
        Some(InstanceKey::Str(k)) => {
            let each_value = match block.body.get_attribute("for_each").and_then(|a| eval_expr(text, &a.value, &ctx)) {
                Some(Value::Object(m)) => Some(m.get(k)?.clone()),
                Some(Value::Array(items)) => Some(items.into_iter().find(|i| i.as_str() == Some(k))?),
                _ => None,
            };
            let each_value = each_value.unwrap_or(Value::String(k.clone()));
            let each = hcl::Value::from_iter([("key", hcl::Value::from(k.clone())), ("value", to_hcl(&each_value))]);
            ctx.declare_var("each", each);
        }
    }
    Some(ctx)
}

/// How many instances a block has, as far as the configuration alone says.
#[derive(Debug, Clone, PartialEq)]
pub enum Instances {
    /// No `count` or `for_each`.
    Single,
    Keys(Vec<InstanceKey>),
    /// `count`/`for_each` depends on something only known at apply time.
    Unknown,
}

/// The instance keys of the block `TYPE.NAME` (or module call `NAME`, with `rtype` empty) in
/// module instance `module`.
fn block_instances(ev: &Evaluator<'_>, module: &[ModuleStep], file: &Path, block: &Block) -> Instances {
    let Some(text) = ev.repo.text(file) else { return Instances::Unknown };
    let Some(evaluated) = ev.scope(module) else { return Instances::Unknown };
    let ctx = &evaluated.ctx;
    if let Some(attr) = block.body.get_attribute("count") {
        return match eval_expr(text, &attr.value, ctx).and_then(|v| v.as_f64()) {
            Some(n) if n >= 0.0 => Instances::Keys((0..n as i64).map(InstanceKey::Int).collect()),
            _ => Instances::Unknown,
        };
    }
    if let Some(attr) = block.body.get_attribute("for_each") {
        return match eval_expr(text, &attr.value, ctx) {
            Some(Value::Object(m)) => Instances::Keys(m.keys().map(|k| InstanceKey::Str(k.clone())).collect()),
            Some(Value::Array(items)) => {
                Instances::Keys(items.iter().filter_map(|i| i.as_str()).map(|k| InstanceKey::Str(k.into())).collect())
            }
            _ => Instances::Unknown,
        };
    }
    Instances::Single
}

/// Every resource instance (not data sources) the configuration declares, through module calls
/// and their `count`/`for_each`. A block whose instances are unknown is listed once without a key.
pub fn instances(repo: &Repo) -> Vec<Address> {
    Evaluator::new(repo).instances()
}

fn collect_instances(ev: &Evaluator<'_>, module: &[ModuleStep], dir: &Path, out: &mut Vec<Address>, depth: usize) {
    if depth > 16 {
        return;
    }
    let repo = ev.repo;
    for (file, body) in repo.parsed_tf_in(dir) {
        for block in body.blocks() {
            let label = |i: usize| block.labels.get(i).map(edit::label_str);
            match block.ident.as_str() {
                "resource" => {
                    let (Some(rtype), Some(name)) = (label(0), label(1)) else { continue };
                    let base = Address { module: module.to_vec(), ..Address::resource(rtype, name) };
                    match block_instances(ev, module, file, block) {
                        Instances::Keys(keys) => {
                            out.extend(keys.into_iter().map(|k| Address { key: Some(k), ..base.clone() }))
                        }
                        Instances::Single | Instances::Unknown => out.push(base),
                    }
                }
                "module" => {
                    let Some(name) = label(0) else { continue };
                    let mut path = module.iter().map(|m| format!("module.{}", m.name)).collect::<Vec<_>>();
                    path.push(format!("module.{name}"));
                    let Some(child_dir) = repo.module_dir(&path.join(".")).cloned() else { continue };
                    let keys = match block_instances(ev, module, file, block) {
                        Instances::Keys(keys) => keys.into_iter().map(Some).collect(),
                        Instances::Single | Instances::Unknown => vec![None],
                    };
                    for key in keys {
                        let mut steps = module.to_vec();
                        steps.push(ModuleStep { name: name.to_string(), key });
                        collect_instances(ev, &steps, &child_dir, out, depth + 1);
                    }
                }
                _ => {}
            }
        }
    }
}

/// The AWS provider's `default_tags` in the root module, evaluated (all aliases merged).
pub fn provider_default_tags(repo: &Repo) -> Map<String, Value> {
    let mut out = Map::new();
    let ev = Evaluator::new(repo);
    let Some(evaluated) = ev.scope(&[]) else { return out };
    let ctx = &evaluated.ctx;
    for (file, body) in repo.parsed_tf_in(&evaluated.scope.module_dir) {
        let text = repo.text(file).unwrap_or_default();
        for provider in body.blocks().filter(|b| b.ident.as_str() == "provider") {
            for dt in provider.body.get_blocks("default_tags") {
                if let Some(Value::Object(map)) =
                    dt.body.get_attribute("tags").and_then(|a| eval_expr(text, &a.value, ctx))
                {
                    out.extend(map);
                }
            }
        }
    }
    out
}

/// Variables and locals of one module instance.
struct Scope {
    vars: Map<String, Value>,
    locals: Map<String, Value>,
    module_dir: PathBuf,
    /// What references to this module's resources evaluate to, where a state says so.
    resources: Map<String, Value>,
    /// `terraform.workspace`.
    workspace: String,
}

/// What references to a module instance's resources evaluate to (as [`crate::State::known_values`]
/// gives them), for every module instance an evaluation passes through.
type Known<'k> = Option<&'k dyn Fn(&[ModuleStep]) -> Map<String, Value>>;

impl Scope {
    fn context(&self) -> hcl::eval::Context<'static> {
        let mut ctx = terraform_context();
        for (name, value) in &self.resources {
            ctx.declare_var(name.clone(), to_hcl(value));
        }
        ctx.declare_var("var", to_hcl(&Value::Object(self.vars.clone())));
        ctx.declare_var("local", to_hcl(&Value::Object(self.locals.clone())));
        let module = self.module_dir.display().to_string();
        // `path.cwd` is wherever `terraform` runs (an absolute path on someone's machine or in CI):
        // not known here, so whatever reads it stays symbolic and cannot pass as verified.
        let path = [("module", if module.is_empty() { ".".to_string() } else { module }), ("root", ".".into())];
        ctx.declare_var("path", hcl::Value::from_iter(path.map(|(k, v)| (k, hcl::Value::from(v)))));
        ctx.declare_var("terraform", hcl::Value::from_iter([("workspace", hcl::Value::from(self.workspace.clone()))]));
        ctx
    }
}

/// A module instance's scope; the parent's, for a module call's inputs, comes from `ev`'s cache.
fn module_scope(ev: &Evaluator<'_>, module: &[ModuleStep]) -> Option<Scope> {
    let (repo, known) = (ev.repo, ev.known);
    let module_path = module.iter().map(|m| format!("module.{}", m.name)).collect::<Vec<_>>().join(".");
    let dir = repo.module_dir(&module_path)?.clone();
    let mut vars = Map::new();
    // Defaults first.
    let mut declared = Vec::new();
    let mut types = Vec::new();
    for (file, body) in repo.parsed_tf_in(&dir) {
        let text = repo.text(file).unwrap_or_default();
        for block in body.blocks().filter(|b| b.ident.as_str() == "variable") {
            let Some(name) = block.labels.first().map(edit::label_str) else { continue };
            declared.push(name.to_string());
            if let Some(ty) = block.body.get_attribute("type") {
                types.push((name.to_string(), text, &ty.value));
            }
            let default = block
                .body
                .get_attribute("default")
                .and_then(|a| eval_expr(text, &a.value, &hcl::eval::Context::new()))
                .unwrap_or(Value::Null);
            vars.insert(name.to_string(), default);
        }
    }
    if module.is_empty() {
        for file in repo.tfvars_files(&dir) {
            let (Some(text), Some(body)) = (repo.text(file), repo.body(file)) else { continue };
            for attr in body.attributes() {
                if let Some(v) = eval_expr(text, &attr.value, &hcl::eval::Context::new()) {
                    vars.insert(attr.key.as_str().to_string(), v);
                }
            }
        }
    } else if module.len() <= 16 {
        // Inputs from the module call, evaluated in the parent's scope.
        let parent = ev.scope(&module[..module.len() - 1])?;
        let mut ctx = parent.ctx.clone();
        let call = module.last()?;
        let parent_dir = parent.scope.module_dir.clone();
        if let Some(key) = &call.key {
            match key {
                InstanceKey::Int(i) => {
                    ctx.declare_var("count", hcl::Value::from_iter([("index", hcl::Value::from(*i))]))
                }
                InstanceKey::Str(k) => ctx.declare_var(
                    "each",
                    hcl::Value::from_iter([
                        ("key", hcl::Value::from(k.clone())),
                        ("value", hcl::Value::from(k.clone())),
                    ]),
                ),
            }
        }
        let sel = edit::BlockSel::new("module", &[&call.name]);
        if let Some(file) = repo.find_block(&parent_dir, &sel) {
            let (text, body) = (repo.text(file)?, repo.body(file)?);
            if let Some(block) = edit::find_block(body, &sel) {
                // A module instance the call's `count` does not produce does not exist.
                if let (Some(InstanceKey::Int(i)), Some(count)) = (&call.key, block.body.get_attribute("count")) {
                    if let Some(n) = eval_expr(text, &count.value, &ctx).and_then(|v| v.as_f64()) {
                        if (*i as f64) >= n || *i < 0 {
                            return None;
                        }
                    }
                }
                if let (Some(InstanceKey::Str(k)), Some(fe)) = (&call.key, block.body.get_attribute("for_each")) {
                    if let Some(Value::Object(m)) = eval_expr(text, &fe.value, &ctx) {
                        if !m.contains_key(k) {
                            return None;
                        }
                        if let Some(v) = m.get(k) {
                            ctx.declare_var(
                                "each",
                                hcl::Value::from_iter([("key", hcl::Value::from(k.clone())), ("value", to_hcl(v))]),
                            );
                        }
                    }
                }
                for attr in block.body.attributes() {
                    let name = attr.key.as_str();
                    if declared.iter().any(|d| d == name) {
                        // What cannot be computed stays symbolic where it cannot (a reference to a
                        // resource inside a map): never the variable's default, which the call overrides.
                        vars.insert(name.to_string(), eval_or_symbolic(text, &attr.value, &ctx));
                    }
                }
            }
        }
    }
    for (name, text, ty) in types {
        if let Some(value) = vars.get_mut(&name) {
            apply_type_defaults(text, ty, value);
        }
    }
    let resources = known.map(|k| k(module)).unwrap_or_default();
    let mut scope =
        Scope { vars, locals: Map::new(), module_dir: dir.clone(), resources, workspace: repo.workspace().to_string() };
    // Locals may refer to each other: evaluate in passes until nothing new resolves.
    let mut pending: Vec<(PathBuf, String)> = Vec::new();
    for (file, body) in repo.parsed_tf_in(&dir) {
        for block in body.blocks().filter(|b| b.ident.as_str() == "locals") {
            for attr in block.body.attributes() {
                pending.push((file.clone(), attr.key.as_str().to_string()));
            }
        }
    }
    for _ in 0..8 {
        let ctx = scope.context();
        let mut progressed = false;
        pending.retain(|(file, name)| {
            let (Some(text), Some(body)) = (repo.text(file), repo.body(file)) else { return false };
            let value = body
                .blocks()
                .filter(|b| b.ident.as_str() == "locals")
                .find_map(|b| b.body.get_attribute(name).map(|a| eval_expr(text, &a.value, &ctx)));
            match value {
                Some(Some(v)) => {
                    scope.locals.insert(name.clone(), v);
                    progressed = true;
                    false
                }
                _ => true,
            }
        });
        if !progressed || pending.is_empty() {
            break;
        }
    }
    // What never resolved stays symbolic.
    let final_ctx = scope.context();
    for (file, name) in pending {
        if let (Some(text), Some(body)) = (repo.text(&file), repo.body(&file)) {
            if let Some(v) = body
                .blocks()
                .filter(|b| b.ident.as_str() == "locals")
                .find_map(|b| b.body.get_attribute(&name).map(|a| eval_or_symbolic(text, &a.value, &final_ctx)))
            {
                scope.locals.insert(name, v);
            }
        }
    }
    Some(scope)
}

/// Fill in the defaults of `optional(TYPE, DEFAULT)` object attributes (and null for a missing
/// `optional(TYPE)`), and drop the attributes an `object(...)` type does not declare, through
/// `map(...)`, `list(...)`, `set(...)` and nested objects, as Terraform does when it converts a
/// value to the variable's type.
fn apply_type_defaults(text: &str, ty: &hcl_edit::expr::Expression, value: &mut Value) {
    use hcl_edit::expr::Expression as E;
    let E::FuncCall(call) = ty else { return };
    let args: Vec<&E> = call.args.iter().collect();
    match (call.name.name.as_str(), args.as_slice()) {
        ("map", [inner]) => {
            if let Value::Object(m) = value {
                m.values_mut().for_each(|v| apply_type_defaults(text, inner, v));
            }
        }
        ("list" | "set", [inner]) => {
            if let Value::Array(items) = value {
                items.iter_mut().for_each(|v| apply_type_defaults(text, inner, v));
            }
        }
        ("object", [E::Object(attrs)]) => {
            let Value::Object(m) = value else { return };
            // Attributes the type does not declare are discarded by the conversion, silently: a
            // value written there reaches nothing.
            let declared: Vec<String> = attrs.iter().filter_map(|(key, _)| object_key_name(text, key)).collect();
            m.retain(|key, _| declared.contains(key));
            for (key, attr_ty) in attrs.iter() {
                let Some(key) = object_key_name(text, key) else { continue };
                let attr_ty = attr_ty.expr();
                let (inner, default) = match attr_ty {
                    E::FuncCall(opt) if opt.name.name.as_str() == "optional" => {
                        let mut a = opt.args.iter();
                        let inner = a.next();
                        let default =
                            a.next().map(|d| eval_expr(text, d, &hcl::eval::Context::new()).unwrap_or(Value::Null));
                        (inner, Some(default.unwrap_or(Value::Null)))
                    }
                    other => (Some(other), None),
                };
                let entry = m.get(&key).filter(|v| !v.is_null()).cloned();
                match (entry, default) {
                    (None, Some(default)) => {
                        m.insert(key.clone(), default);
                    }
                    (None, None) => {}
                    (Some(_), _) => {}
                }
                if let (Some(inner), Some(v)) = (inner, m.get_mut(&key)) {
                    apply_type_defaults(text, inner, v);
                }
            }
        }
        _ => {}
    }
}

fn object_key_name(text: &str, key: &hcl_edit::expr::ObjectKey) -> Option<String> {
    match key {
        hcl_edit::expr::ObjectKey::Ident(i) => Some(i.as_str().to_string()),
        hcl_edit::expr::ObjectKey::Expression(hcl_edit::expr::Expression::String(s)) => Some(s.as_str().to_string()),
        hcl_edit::expr::ObjectKey::Expression(e) => Some(edit::expr_text(text, e)),
    }
}

fn body_value(text: &str, body: &Body, ctx: &hcl::eval::Context<'_>) -> Value {
    let mut out = Map::new();
    for attr in body.attributes() {
        let key = attr.key.as_str();
        if matches!(key, "count" | "for_each" | "depends_on" | "provider") {
            continue;
        }
        out.insert(key.to_string(), eval_or_symbolic(text, &attr.value, ctx));
    }
    let mut blocks: Map<String, Value> = Map::new();
    let mut push = |name: &str, value: Value| match blocks.get_mut(name) {
        Some(Value::Array(items)) => items.push(value),
        _ => {
            blocks.insert(name.to_string(), Value::Array(vec![value]));
        }
    };
    for block in body.blocks() {
        let name = block.ident.as_str();
        match name {
            "lifecycle" => {
                out.insert("lifecycle".into(), body_value(text, &block.body, ctx));
            }
            "provisioner" | "connection" => {}
            // One block per element of `for_each`, with the iterator (`rule.key`, `rule.value`)
            // bound; where `for_each` cannot be computed, one symbolic entry in place of them all.
            "dynamic" => {
                let Some(label) = block.labels.first().map(edit::label_str) else { continue };
                match dynamic_elements(text, block, ctx) {
                    Some((iterator, elements)) => {
                        let Some(content) = block.body.blocks().find(|b| b.ident.as_str() == "content") else {
                            continue;
                        };
                        for (key, value) in elements {
                            let mut inner = ctx.clone();
                            let bound = hcl::Value::from_iter([("key", to_hcl(&key)), ("value", to_hcl(&value))]);
                            inner.declare_var(iterator.clone(), bound);
                            push(label, body_value(text, &content.body, &inner));
                        }
                    }
                    None => {
                        let unknown = match block.body.get_attribute("for_each") {
                            Some(for_each) => symbolic(text, &for_each.value, ctx),
                            None => Value::String(format!("${{dynamic {label:?} without for_each}}")),
                        };
                        push(label, unknown);
                    }
                }
            }
            _ => push(name, body_value(text, &block.body, ctx)),
        }
    }
    out.extend(blocks);
    Value::Object(out)
}

/// What a resource's `lifecycle { ignore_changes = [...] }` lists, as written (`desired_count`,
/// `tags["Owner"]`, or `all`): Terraform leaves those arguments alone, so a change to them in the
/// cloud is not drift.
pub fn ignored_changes(repo: &Repo, address: &Address) -> Vec<String> {
    use hcl_edit::expr::Expression as E;
    let Some(location) = repo.find_resource(address) else { return Vec::new() };
    let (Some(text), Some(body)) = (repo.text(&location.file), repo.body(&location.file)) else { return Vec::new() };
    let Some(block) = edit::find_block(body, &location.sel) else { return Vec::new() };
    let Some(lifecycle) = block.body.blocks().find(|b| b.ident.as_str() == "lifecycle") else { return Vec::new() };
    match lifecycle.body.get_attribute("ignore_changes").map(|a| &a.value) {
        Some(E::Array(items)) => items.iter().map(|i| edit::expr_text(text, i).trim().to_string()).collect(),
        Some(other) => vec![edit::expr_text(text, other).trim().to_string()],
        None => Vec::new(),
    }
}

/// Whether an entry of `lifecycle { ignore_changes }` (as [`ignored_changes`] gives it) covers a
/// change at `path`: `all`, the path itself, or a path it lies inside. A block's element is written
/// `scaling_config[0].desired_size` in `ignore_changes` and `scaling_config.desired_size` where a
/// plan names the only block of its type, so an index 0 on either side may stand for the other's
/// missing one; `tags["Owner"]` and `tags.Owner` are the same entry.
pub fn ignore_covers(entry: &str, path: &AttrPath) -> bool {
    if entry == "all" {
        return true;
    }
    let Ok(entry) = AttrPath::parse(entry) else { return false };
    let name = |s: &Seg| match s {
        Seg::Name(n) | Seg::Key(n) => Some(n.clone()),
        Seg::Index(_) => None,
    };
    let (mut want, mut have) = (entry.0.as_slice(), path.0.as_slice());
    loop {
        match (want.first(), have.first()) {
            (None, _) => return true,
            (Some(_), None) => return want.iter().all(|s| *s == Seg::Index(0)),
            (Some(Seg::Index(a)), Some(Seg::Index(b))) if a == b => {}
            (Some(Seg::Index(0)), Some(_)) => {
                want = &want[1..];
                continue;
            }
            (Some(_), Some(Seg::Index(0))) => {
                have = &have[1..];
                continue;
            }
            (Some(a), Some(b)) if name(a).is_some() && name(a) == name(b) => {}
            _ => return false,
        }
        want = &want[1..];
        have = &have[1..];
    }
}

/// A `dynamic` block's iterator name and the (key, value) of each element of its `for_each`: list
/// elements by index, map entries by key. `None` when `for_each` cannot be computed.
fn dynamic_elements(text: &str, block: &Block, ctx: &hcl::eval::Context<'_>) -> Option<(String, Vec<(Value, Value)>)> {
    let label = block.labels.first().map(edit::label_str)?;
    let iterator = match block.body.get_attribute("iterator") {
        Some(attr) => edit::expr_text(text, &attr.value).trim().to_string(),
        None => label.to_string(),
    };
    let elements = match eval_expr(text, &block.body.get_attribute("for_each")?.value, ctx)? {
        Value::Array(items) => items.into_iter().enumerate().map(|(i, v)| (Value::from(i), v)).collect(),
        Value::Object(map) => map.into_iter().map(|(k, v)| (Value::String(k), v)).collect(),
        _ => return None,
    };
    Some((iterator, elements))
}

/// Where the blocks of one type in a resource instance's effective configuration come from, in
/// their order: a block written in the body (`Written(k)`: the k-th written block of that type),
/// or an element of a `dynamic` block (`Dynamic { block: d, element }`: the d-th `dynamic` block of
/// that type, at the index or key of its `for_each`). `None` when a `for_each` cannot be computed.
#[derive(Debug, Clone, PartialEq)]
pub enum BlockOrigin {
    Written(usize),
    Dynamic { block: usize, element: Seg, iterator: String },
}

pub fn block_origins(repo: &Repo, address: &Address, block_type: &str) -> Option<Vec<BlockOrigin>> {
    let location = repo.find_resource(address)?;
    let text = repo.text(&location.file)?;
    let block = edit::find_block(repo.body(&location.file)?, &location.sel)?;
    let ctx = block_context(&Evaluator::new(repo), &address.module, text, block, address.key.as_ref())?;
    let (mut written, mut dynamic) = (0, 0);
    let mut out = Vec::new();
    for b in block.body.blocks() {
        if b.ident.as_str() == block_type {
            out.push(BlockOrigin::Written(written));
            written += 1;
        } else if b.ident.as_str() == "dynamic" && b.labels.first().map(edit::label_str) == Some(block_type) {
            let (iterator, elements) = dynamic_elements(text, b, &ctx)?;
            for (key, _) in elements {
                let element = match key {
                    Value::String(k) => Seg::Key(k),
                    other => Seg::Index(other.as_u64()? as usize),
                };
                out.push(BlockOrigin::Dynamic { block: dynamic, element, iterator: iterator.clone() });
            }
            dynamic += 1;
        }
    }
    Some(out)
}

/// The value of an expression; where part of it cannot be known (a reference to another
/// resource), that part stays symbolic and the rest of an object or list is still evaluated.
fn eval_or_symbolic(text: &str, expr: &hcl_edit::expr::Expression, ctx: &hcl::eval::Context<'_>) -> Value {
    use hcl_edit::expr::Expression as E;
    if let Some(v) = eval_expr(text, expr, ctx) {
        return v;
    }
    match expr {
        E::Object(object) => Value::Object(
            object
                .iter()
                .filter_map(|(k, v)| Some((object_key_name(text, k)?, eval_or_symbolic(text, v.expr(), ctx))))
                .collect(),
        ),
        E::Array(items) => Value::Array(items.iter().map(|i| eval_or_symbolic(text, i, ctx)).collect()),
        E::Parenthesis(inner) => eval_or_symbolic(text, inner.inner(), ctx),
        _ => symbolic(text, expr, ctx),
    }
}

fn eval_expr(text: &str, expr: &hcl_edit::expr::Expression, ctx: &hcl::eval::Context<'_>) -> Option<Value> {
    let source = edit::expr_text(text, expr);
    let parsed: hcl::Expression = source.parse().ok()?;
    let value = eval_try(&parsed, ctx).ok()?;
    serde_json::to_value(value).ok()
}

/// Whether a value is what the evaluator left symbolic: the source text of something it cannot
/// compute (a reference to another resource), written `${...}`.
pub fn is_symbolic(value: &Value) -> bool {
    value.as_str().is_some_and(|s| s.starts_with("${"))
}

/// Whether a value is, or holds anywhere inside it, a symbolic part (`[aws_sns_topic.alerts.arn]`).
pub fn contains_symbolic(value: &Value) -> bool {
    match value {
        Value::Array(items) => items.iter().any(contains_symbolic),
        Value::Object(map) => map.values().any(contains_symbolic),
        other => is_symbolic(other),
    }
}

/// What the evaluator cannot compute, as its source text (`${aws_s3_bucket.logs.arn}`), followed by
/// the values of the module-scope inputs it reads (`given var.prefix = "logs"`). Two symbolic values
/// are equal only when both the text and those inputs are: an edit of a variable that an
/// uncomputable expression reads changes that expression's value too, and the comparison of every
/// other instance before and after an edit must see it (an unknown effect is never "unchanged").
fn symbolic(text: &str, expr: &hcl_edit::expr::Expression, ctx: &hcl::eval::Context<'_>) -> Value {
    let source = expr.span().map(|s| text[s].to_string()).unwrap_or_default();
    let inputs = scope_inputs(text, expr, ctx);
    if inputs.is_empty() {
        Value::String(format!("${{{}}}", source.trim()))
    } else {
        Value::String(format!("${{{}}} given {}", source.trim(), inputs.join(", ")))
    }
}

/// The module-scope references in an expression (`var.*`, `local.*`, `each.*`, `count.*`, `path.*`,
/// `terraform.*`) with their values, or `(unknown)` where even the variable itself does not evaluate.
fn scope_inputs(text: &str, expr: &hcl_edit::expr::Expression, ctx: &hcl::eval::Context<'_>) -> Vec<String> {
    use hcl_edit::visit::Visit;
    struct Refs<'t> {
        text: &'t str,
        found: Vec<String>,
    }
    impl Visit for Refs<'_> {
        fn visit_traversal(&mut self, node: &hcl_edit::expr::Traversal) {
            if let hcl_edit::expr::Expression::Variable(root) = &node.expr {
                if matches!(root.as_str(), "var" | "local" | "each" | "count" | "path" | "terraform") {
                    if let Some(span) = node.span() {
                        self.found.push(self.text[span].trim().to_string());
                    }
                }
            }
            hcl_edit::visit::visit_traversal(self, node);
        }
    }
    let mut refs = Refs { text, found: Vec::new() };
    refs.visit_expr(expr);
    let value_of = |source: &str| {
        let parsed: hcl::Expression = source.parse().ok()?;
        let value = eval_try(&parsed, ctx).ok()?;
        serde_json::to_string(&serde_json::to_value(value).ok()?).ok()
    };
    let mut out: Vec<String> = refs
        .found
        .iter()
        .map(|reference| {
            if let Some(v) = value_of(reference) {
                return format!("{reference} = {v}");
            }
            // `var.list[count.index].key` beyond the list: the variable's whole value.
            let root: String = reference.split(['[', '.']).take(2).collect::<Vec<_>>().join(".");
            match value_of(&root) {
                Some(v) if root != *reference => format!("{root} = {v}"),
                _ => format!("{reference} = (unknown)"),
            }
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

fn to_hcl(value: &Value) -> hcl::Value {
    hcl::to_value(value).unwrap_or(hcl::Value::Null)
}

/// The value at an expectation path (`versioning.enabled`, `ingress[1].from_port`, `tags.Team`):
/// a block type that occurs once is entered without an index.
pub fn value_at_path(config: &Value, path: &crate::path::AttrPath) -> Option<Value> {
    use crate::path::Seg;
    let mut current = config.clone();
    for seg in &path.0 {
        current = match (seg, current) {
            (Seg::Name(n) | Seg::Key(n), Value::Object(map)) => map.get(n)?.clone(),
            (Seg::Name(n) | Seg::Key(n), Value::Array(items)) if items.len() == 1 => items[0].get(n)?.clone(),
            (Seg::Index(i), Value::Array(items)) => items.get(*i)?.clone(),
            (Seg::Index(0), v @ Value::Object(_)) => v,
            _ => return None,
        };
    }
    match current {
        Value::Null => None,
        v => Some(v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::path::AttrPath;
    use serde_json::json;

    fn repo(files: &[(&str, &str)]) -> Repo {
        Repo::from_files(files.iter().map(|(p, t)| (PathBuf::from(p), t.to_string())).collect())
    }

    #[test]
    fn variables_tfvars_locals_modules_and_instances_resolve() {
        let r = repo(&[
            (
                "variables.tf",
                "variable \"type\" {\n  default = \"t3.small\"\n}\nvariable \"env\" {\n  default = \"dev\"\n}\nvariable \"fleet\" {\n  default = {\n    api = { size = \"t3.micro\" }\n    web = { size = \"t3.large\" }\n  }\n}\n",
            ),
            ("terraform.tfvars", "type = \"t3.medium\"\n"),
            ("prod.auto.tfvars", "env = \"prod\"\n"),
            (
                "main.tf",
                "locals {\n  name = \"app-${var.env}\"\n  tags = merge({ Env = var.env }, { Name = local.name })\n}\nresource \"aws_instance\" \"web\" {\n  instance_type = var.type\n  subnet_id     = aws_subnet.a.id\n  tags          = local.tags\n  root_block_device {\n    volume_size = 20\n  }\n}\nresource \"aws_instance\" \"fleet\" {\n  for_each      = var.fleet\n  instance_type = each.value.size\n  tags          = { Name = each.key }\n}\nresource \"aws_instance\" \"n\" {\n  count = 2\n  tags  = { Name = \"n-${count.index}\" }\n}\nmodule \"db\" {\n  source = \"./modules/db\"\n  class  = upper(var.env)\n}\n",
            ),
            (
                "modules/db/main.tf",
                "variable \"class\" {}\nvariable \"size\" {\n  default = 10\n}\nresource \"aws_db_instance\" \"this\" {\n  instance_class    = var.class\n  allocated_storage = var.size\n}\n",
            ),
        ]);
        let web = effective_config(&r, &Address::parse("aws_instance.web").unwrap()).unwrap();
        assert_eq!(web["instance_type"], json!("t3.medium"));
        assert_eq!(web["subnet_id"], json!("${aws_subnet.a.id}"));
        assert_eq!(web["tags"], json!({"Env": "prod", "Name": "app-prod"}));
        assert_eq!(value_at_path(&web, &AttrPath::parse("root_block_device.volume_size").unwrap()), Some(json!(20)));
        let api = effective_config(&r, &Address::parse("aws_instance.fleet[\"api\"]").unwrap()).unwrap();
        assert_eq!(api["instance_type"], json!("t3.micro"));
        assert_eq!(api["tags"]["Name"], json!("api"));
        let n1 = effective_config(&r, &Address::parse("aws_instance.n[1]").unwrap()).unwrap();
        assert_eq!(n1["tags"]["Name"], json!("n-1"));
        let db = effective_config(&r, &Address::parse("module.db.aws_db_instance.this").unwrap()).unwrap();
        assert_eq!(db["instance_class"], json!("PROD"));
        assert_eq!(db["allocated_storage"], json!(10));
        assert!(effective_config(&r, &Address::parse("aws_instance.gone").unwrap()).is_none());
    }

    #[test]
    fn ignore_changes_inside_a_module_covers_its_paths_with_or_without_the_block_index() {
        // A node group in a module called per key, as a registry module writes it: the autoscaler
        // owns the desired size.
        let r = repo(&[
            (
                "main.tf",
                "module \"ng\" {\n  source   = \"./modules/ng\"\n  for_each = { a = 1, b = 2 }\n  size     = each.value\n}\n",
            ),
            (
                "modules/ng/main.tf",
                "variable \"size\" {}\nresource \"aws_eks_node_group\" \"this\" {\n  count = 1\n  scaling_config {\n    desired_size = var.size\n    max_size     = 5\n  }\n  tags = { Team = \"x\" }\n  lifecycle {\n    ignore_changes = [\n      scaling_config[0].desired_size,\n      tags[\"Owner\"],\n    ]\n  }\n}\n",
            ),
        ]);
        let address = Address::parse("module.ng[\"b\"].aws_eks_node_group.this[0]").unwrap();
        let ignored = ignored_changes(&r, &address);
        assert_eq!(ignored, vec!["scaling_config[0].desired_size".to_string(), "tags[\"Owner\"]".to_string()]);
        let covered = |p: &str| ignored.iter().any(|i| ignore_covers(i, &AttrPath::parse(p).unwrap()));
        assert!(covered("scaling_config.desired_size"));
        assert!(covered("scaling_config[0].desired_size"));
        assert!(covered("tags[\"Owner\"]"));
        assert!(covered("tags.Owner"));
        assert!(!covered("scaling_config.max_size"));
        assert!(!covered("scaling_config"), "the whole block is more than the ignored argument");
        assert!(!covered("scaling_config[1].desired_size"));
        assert!(!covered("tags[\"Team\"]"));
        assert!(!covered("tags"));
        assert!(ignore_covers("all", &AttrPath::parse("anything").unwrap()));
        assert!(ignore_covers("scaling_config", &AttrPath::parse("scaling_config[0].min_size").unwrap()));
    }
}
