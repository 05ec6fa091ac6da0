//! Terraform built-in functions for the `hcl-rs` expression evaluator, plus `try`/`can` support.
//!
//! `hcl-rs` (0.20) ships an evaluator ([`hcl::eval::Context`], [`hcl::eval::Evaluate`]) but no
//! Terraform functions. [`declare_terraform_functions`] declares the subset of Terraform's
//! built-in functions that driftback needs, following Terraform's semantics as closely as the
//! `hcl-rs` value model allows:
//!
//! * collections: `merge`, `lookup`, `concat`, `coalesce`, `coalescelist`, `compact`,
//!   `distinct`, `flatten`, `keys`, `values`, `length`, `element`, `index`, `contains`,
//!   `slice`, `range`, `zipmap`
//! * strings: `format`, `formatlist`, `lower`, `upper`, `title`, `trimspace`, `trim`,
//!   `trimprefix`, `trimsuffix`, `join`, `split`, `replace`, `substr`, `startswith`, `endswith`
//! * conversion: `tomap`, `tolist`, `toset`, `tostring`, `tonumber`, `tobool`
//! * numbers: `min`, `max`, `abs`, `ceil`, `floor`
//! * encoding: `jsonencode`, `jsondecode`, `base64encode`, `base64decode`
//! * networking: `cidrsubnet`, `cidrhost`, `cidrnetmask`
//! * `try`, `can` (see below)
//! * the rest of Terraform's pure functions (`signum`, `pow`, `log`, `parseint`, `indent`,
//!   `strcontains`, `alltrue`, `anytrue`, `chunklist`, `one`, `reverse`, `sort`, the set functions,
//!   `basename`, `dirname`, `urlencode`, `cidrsubnets`, `regex`, `regexall`, `matchkeys`,
//!   `setproduct`, `transpose`, `timeadd`, `timecmp`, ...)
//!
//! [`UNKNOWN_BY_DESIGN`] lists the documented functions that stay undeclared: they read the clock,
//! randomness, keys or files, or need a type system this evaluator does not have. A call to any of
//! them (or to a function Terraform does not have) fails, so the expression stays symbolic and an
//! edit whose effect depends on it is never verified.
//!
//! Errors are returned as `Err(String)` from the function bodies; `hcl-rs` wraps them into
//! `error calling function `name`: <message>`.
//!
//! Like Terraform, arguments are converted where Terraform would convert them automatically:
//! numbers and bools are accepted where a string is expected, numeric strings where a number
//! is expected, and mixed primitive lists are unified to strings by `tolist`/`toset`/`tomap`.
//! Parameters are therefore declared as [`ParamType::Any`] and checked inside each function,
//! which yields Terraform-like messages (`invalid value for "str" parameter: ...`).
//!
//! # `try` and `can`
//!
//! In `hcl-rs` 0.20 a function call evaluates *all* of its arguments before the function is
//! invoked (`impl Evaluate for FuncCall` in `src/eval/impls.rs`): the first argument that fails
//! aborts the whole call with that error, and the function body never runs. A plain `FuncDef`
//! therefore cannot implement Terraform's `try`/`can`, which exist precisely to catch such
//! failures.
//!
//! The approximation chosen here:
//!
//! * [`declare_terraform_functions`] still declares `try` and `can` so that expressions using
//!   them evaluate with plain [`Evaluate::evaluate`] *when nothing fails*: `try(a, b)` returns
//!   `a`, `can(a)` returns `true`. If an argument fails, plain evaluation fails (unlike
//!   Terraform).
//! * [`eval_try`] is a drop-in replacement for `expr.evaluate(ctx)` that implements the real
//!   semantics. Expressions without a `try`/`can` call anywhere inside are handed straight to
//!   `hcl-rs`. Otherwise the expression tree is walked: each `try(...)` argument is evaluated in
//!   order and the first success wins (all failing gives an error listing every failure);
//!   `can(x)` yields whether `x` evaluated without error. The surrounding expression is then
//!   rebuilt with already-evaluated children substituted as literals and evaluated by `hcl-rs`,
//!   so operators, traversals, splats and other functions keep the `hcl-rs` semantics.
//!   Conditionals are evaluated lazily (only the chosen branch). `for` expressions and template
//!   `%{for}` directives containing `try`/`can` are iterated here (the context is cloned once
//!   per such loop to bind the iteration variables), and template interpolations and `%{if}`
//!   directives are resolved in place.
//!
//! **The caller must evaluate attribute expressions with [`eval_try`]** (instead of
//! `Expression::evaluate` or `hcl::eval::from_str`) to get Terraform's `try`/`can` behaviour.
//!
//! Known differences from Terraform's `try`/`can`: every evaluation error is caught, including
//! references to undeclared variables (Terraform reports those as static errors and would return
//! an unknown value for not-yet-known references), and `try(...)` with an expanded final
//! argument (`try(list...)`) falls back to the plain function.
//!
//! # Other approximations
//!
//! * `length` and `substr` count Unicode scalar values, not grapheme clusters.
//! * `toset` de-duplicates and keeps first-occurrence order (Terraform sorts sets).
//! * Object results (`merge`, `tomap`, `zipmap`) keep insertion order; `keys`, `values` and
//!   `jsonencode` sort keys lexicographically as Terraform does.
//! * Numbers are `f64`/`i64` (Terraform uses arbitrary precision).
//! * `format` supports the verbs `%v %#v %t %d %b %o %x %X %e %E %f %F %g %G %s %q %%`, the
//!   flags `+ - # 0 space`, width, precision and explicit argument indexes (`%[2]s`); `*` widths
//!   are not supported.
//! * `cidrsubnet` netnums and `cidrhost` hostnums are limited to the `i64` range.

use std::fmt::Write as _;
use std::net::{Ipv4Addr, Ipv6Addr};

use hcl::eval::{Context, Error, ErrorKind, Evaluate, FuncArgs, FuncDef, ParamType};
use hcl::expr::{ForExpr, FuncCall, FuncName, Operation, TemplateExpr, Traversal, TraversalOperator};
use hcl::template::{Directive, Element, ForDirective, IfDirective, Interpolation, Strip, Template};
use hcl::{Expression, Map, Number, ObjectKey, Value};

/// Result type of the function implementations. The error is text because hcl-rs takes a
/// function as `hcl::eval::Func`, `fn(FuncArgs) -> Result<Value, String>`; the helpers below
/// return the typed [`FnError`], which becomes that text at this one boundary.
type FnResult = Result<Value, String>;

/// Why a function cannot compute its value, in the words Terraform's users read.
#[derive(Debug, Clone, thiserror::Error)]
enum FnError {
    #[error("missing required argument \"{0}\"")]
    MissingArgument(String),
    #[error("invalid value for \"{name}\" parameter: {reason}")]
    Argument { name: String, reason: Box<FnError> },
    #[error("argument must not be null")]
    Null,
    #[error("{expected} required, got {got}")]
    Type { expected: &'static str, got: &'static str },
    #[error("a {got} is not a {expected}")]
    Element { expected: &'static str, got: &'static str },
    #[error("cannot convert {0:?} to number")]
    NotANumber(String),
    #[error("{0} is not a whole number")]
    NotWhole(String),
    #[error("{0} is too large")]
    TooLarge(String),
    #[error("result is not a finite number")]
    NotFinite,
    #[error("cannot convert {0} to any single type")]
    NoSingleType(String),
    #[error("failed to decode base64 data: illegal base64 data at input byte {0}")]
    Base64(usize),
    #[error("invalid CIDR expression: invalid CIDR address: {0}")]
    Cidr(String),
    #[error("{0}")]
    Pattern(#[from] regex::Error),
    #[error("not an RFC 3339 timestamp: {0}")]
    Timestamp(#[from] chrono::ParseError),
    #[error("{0}")]
    Format(#[from] FormatError),
}

/// Why `format` cannot lay out its arguments.
#[derive(Debug, Clone, thiserror::Error)]
enum FormatError {
    #[error("unterminated argument index at offset {0}")]
    UnterminatedIndex(usize),
    #[error("invalid argument index {index:?} at offset {at}")]
    BadIndex { index: String, at: usize },
    #[error("unterminated format verb at offset {0}")]
    UnterminatedVerb(usize),
    #[error("not enough arguments for {verb:?} at offset {at}: need index {need} but have {have} total")]
    NotEnoughArguments { verb: String, at: usize, need: usize, have: usize },
    #[error("unsupported value for {verb:?} at offset {at}: {reason}")]
    Value { verb: String, at: usize, reason: Box<FnError> },
    #[error("too many arguments; no verbs in format string")]
    NoVerbs,
    #[error("too many arguments; only {0} used by format string")]
    TooManyArguments(usize),
    #[error("null value cannot be formatted")]
    Null,
    #[error("unsupported format verb %{0}")]
    Verb(char),
}

impl From<FnError> for String {
    fn from(e: FnError) -> String {
        e.to_string()
    }
}

impl From<FormatError> for String {
    fn from(e: FormatError) -> String {
        e.to_string()
    }
}

/// Terraform's documented functions that are deliberately not declared: their value is not a
/// function of the configuration alone (clock, randomness, files, keys), or it needs Terraform's
/// type system (`type`), or a template engine over files. Expressions that call them stay unknown.
pub const UNKNOWN_BY_DESIGN: &[&str] = &[
    "abspath",
    "base64gzip",
    "base64sha256",
    "base64sha512",
    "bcrypt",
    "csvdecode",
    "file",
    "filebase64",
    "filebase64sha256",
    "filebase64sha512",
    "fileexists",
    "filemd5",
    "fileset",
    "filesha1",
    "filesha256",
    "filesha512",
    "formatdate",
    "md5",
    "pathexpand",
    "plantimestamp",
    "rsadecrypt",
    "sha1",
    "sha256",
    "sha512",
    "templatefile",
    "templatestring",
    "textdecodebase64",
    "textencodebase64",
    "timestamp",
    "type",
    "uuid",
    "uuidv5",
    "yamldecode",
    "yamlencode",
];

/// A new context with every supported Terraform function declared. Declaring them costs far more
/// than copying them (each declaration searches the ones before it), so they are declared once.
pub fn terraform_context() -> Context<'static> {
    static BASE: std::sync::OnceLock<Context<'static>> = std::sync::OnceLock::new();
    BASE.get_or_init(|| {
        let mut ctx = Context::new();
        declare_terraform_functions(&mut ctx);
        ctx
    })
    .clone()
}

/// Declares all supported Terraform functions in `ctx`.
///
/// See the module documentation for the list of functions and for how `try`/`can` must be
/// evaluated (via [`eval_try`]).
pub fn declare_terraform_functions(ctx: &mut Context<'_>) {
    fn fixed(func: hcl::eval::Func, arity: usize) -> FuncDef {
        FuncDef::new(func, std::iter::repeat_n(ParamType::Any, arity))
    }
    fn variadic(func: hcl::eval::Func, arity: usize) -> FuncDef {
        FuncDef::builder().params(std::iter::repeat_n(ParamType::Any, arity)).variadic_param(ParamType::Any).build(func)
    }

    let defs: [(&str, FuncDef); 85] = [
        // collections
        ("merge", variadic(fn_merge, 0)),
        ("lookup", variadic(fn_lookup, 2)),
        ("concat", variadic(fn_concat, 0)),
        ("coalesce", variadic(fn_coalesce, 0)),
        ("coalescelist", variadic(fn_coalescelist, 0)),
        ("compact", fixed(fn_compact, 1)),
        ("distinct", fixed(fn_distinct, 1)),
        ("flatten", fixed(fn_flatten, 1)),
        ("keys", fixed(fn_keys, 1)),
        ("values", fixed(fn_values, 1)),
        ("length", fixed(fn_length, 1)),
        ("element", fixed(fn_element, 2)),
        ("index", fixed(fn_index, 2)),
        ("contains", fixed(fn_contains, 2)),
        ("slice", fixed(fn_slice, 3)),
        ("range", variadic(fn_range, 0)),
        ("zipmap", fixed(fn_zipmap, 2)),
        // strings
        ("format", variadic(fn_format, 1)),
        ("formatlist", variadic(fn_formatlist, 1)),
        ("lower", fixed(fn_lower, 1)),
        ("upper", fixed(fn_upper, 1)),
        ("title", fixed(fn_title, 1)),
        ("trimspace", fixed(fn_trimspace, 1)),
        ("trim", fixed(fn_trim, 2)),
        ("trimprefix", fixed(fn_trimprefix, 2)),
        ("trimsuffix", fixed(fn_trimsuffix, 2)),
        ("join", variadic(fn_join, 1)),
        ("split", fixed(fn_split, 2)),
        ("replace", fixed(fn_replace, 3)),
        ("substr", fixed(fn_substr, 3)),
        ("startswith", fixed(fn_startswith, 2)),
        ("endswith", fixed(fn_endswith, 2)),
        // conversion
        ("tomap", fixed(fn_tomap, 1)),
        ("tolist", fixed(fn_tolist, 1)),
        ("toset", fixed(fn_toset, 1)),
        ("tostring", fixed(fn_tostring, 1)),
        ("tonumber", fixed(fn_tonumber, 1)),
        ("tobool", fixed(fn_tobool, 1)),
        // numbers
        ("min", variadic(fn_min, 0)),
        ("max", variadic(fn_max, 0)),
        ("abs", fixed(fn_abs, 1)),
        ("ceil", fixed(fn_ceil, 1)),
        ("floor", fixed(fn_floor, 1)),
        // encoding
        ("jsonencode", fixed(fn_jsonencode, 1)),
        ("jsondecode", fixed(fn_jsondecode, 1)),
        ("base64encode", fixed(fn_base64encode, 1)),
        ("base64decode", fixed(fn_base64decode, 1)),
        // networking
        ("cidrsubnet", fixed(fn_cidrsubnet, 3)),
        ("cidrhost", fixed(fn_cidrhost, 2)),
        ("cidrnetmask", fixed(fn_cidrnetmask, 1)),
        // error handling (plain-evaluation fallbacks, see `eval_try`)
        ("try", variadic(fn_try_fallback, 0)),
        ("can", fixed(fn_can_fallback, 1)),
        // small extras (not requested, but common in Terraform code)
        ("chomp", fixed(fn_chomp, 1)),
        ("strrev", fixed(fn_strrev, 1)),
        ("sum", fixed(fn_sum, 1)),
        // the rest of Terraform's pure functions; those that read the clock, randomness or files
        // outside the configuration (timestamp, uuid, file, ...) stay undeclared: their values are
        // unknown, so an edit whose effect depends on them is never taken as verified
        ("signum", fixed(fn_signum, 1)),
        ("pow", fixed(fn_pow, 2)),
        ("log", fixed(fn_log, 2)),
        ("parseint", fixed(fn_parseint, 2)),
        ("indent", fixed(fn_indent, 2)),
        ("strcontains", fixed(fn_strcontains, 2)),
        ("alltrue", fixed(fn_alltrue, 1)),
        ("anytrue", fixed(fn_anytrue, 1)),
        ("chunklist", fixed(fn_chunklist, 2)),
        ("one", fixed(fn_one, 1)),
        ("reverse", fixed(fn_reverse, 1)),
        ("sort", fixed(fn_sort, 1)),
        ("setunion", variadic(fn_setunion, 0)),
        ("setintersection", variadic(fn_setintersection, 1)),
        ("setsubtract", fixed(fn_setsubtract, 2)),
        ("basename", fixed(fn_basename, 1)),
        ("dirname", fixed(fn_dirname, 1)),
        ("sensitive", fixed(fn_identity, 1)),
        ("nonsensitive", fixed(fn_identity, 1)),
        ("urlencode", fixed(fn_urlencode, 1)),
        ("cidrsubnets", variadic(fn_cidrsubnets, 1)),
        ("regex", fixed(fn_regex, 2)),
        ("regexall", fixed(fn_regexall, 2)),
        ("matchkeys", fixed(fn_matchkeys, 3)),
        ("setproduct", variadic(fn_setproduct, 0)),
        ("transpose", fixed(fn_transpose, 1)),
        ("timeadd", fixed(fn_timeadd, 2)),
        ("timecmp", fixed(fn_timecmp, 2)),
        ("issensitive", fixed(fn_issensitive, 1)),
        ("ephemeralasnull", fixed(fn_identity, 1)),
    ];

    for (name, def) in defs {
        ctx.declare_func(name, def);
    }
}

// ---------------------------------------------------------------------------------------------
// Argument and value helpers
// ---------------------------------------------------------------------------------------------

fn arg_err(name: &str, msg: impl std::fmt::Display) -> String {
    format!("invalid value for \"{name}\" parameter: {msg}")
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "tuple",
        Value::Object(_) => "object",
    }
}

fn arg<'a>(args: &'a [Value], i: usize, name: &str) -> Result<&'a Value, FnError> {
    args.get(i).ok_or_else(|| FnError::MissingArgument(name.to_string()))
}

/// `reason` as the fault of the argument `name`.
fn bad_arg(name: &str, reason: FnError) -> FnError {
    FnError::Argument { name: name.to_string(), reason: Box::new(reason) }
}

fn f64_of(n: &Number) -> f64 {
    n.as_f64().unwrap_or(f64::NAN)
}

/// Builds a number value, keeping integral values as integers.
fn num_value(f: f64) -> FnResult {
    if !f.is_finite() {
        return Err(FnError::NotFinite.into());
    }
    if f.fract() == 0.0 && f.abs() < 9.007_199_254_740_992e15 {
        return Ok(Value::from(f as i64));
    }
    Number::from_f64(f).map(Value::Number).ok_or_else(|| FnError::NotFinite.into())
}

/// Terraform's canonical number-to-string conversion (no exponent, shortest representation).
fn number_to_string(n: &Number) -> String {
    if let Some(i) = n.as_i64() {
        return i.to_string();
    }
    if let Some(u) = n.as_u64() {
        return u.to_string();
    }
    let f = f64_of(n);
    if f.fract() == 0.0 && f.abs() < 1e15 {
        return (f as i64).to_string();
    }
    format!("{f}")
}

/// Parses a string into a number the way Terraform's `tonumber` does.
fn parse_number(s: &str) -> Option<Number> {
    if s.is_empty() || !s.chars().all(|c| c.is_ascii_digit() || matches!(c, '.' | '-' | '+' | 'e' | 'E')) {
        return None;
    }
    if let Ok(i) = s.parse::<i64>() {
        return Some(Number::from(i));
    }
    s.parse::<f64>().ok().and_then(Number::from_f64)
}

/// Converts a primitive to a string (Terraform's automatic string conversion).
fn value_to_string(v: &Value) -> Result<String, FnError> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(number_to_string(n)),
        Value::Bool(b) => Ok(b.to_string()),
        Value::Null => Err(FnError::Null),
        other => Err(FnError::Type { expected: "string", got: type_name(other) }),
    }
}

fn value_to_number(v: &Value) -> Result<Number, FnError> {
    match v {
        Value::Number(n) => Ok(*n),
        Value::String(s) => parse_number(s).ok_or_else(|| FnError::NotANumber(s.clone())),
        Value::Null => Err(FnError::Null),
        other => Err(FnError::Type { expected: "number", got: type_name(other) }),
    }
}

fn number_to_int(n: &Number) -> Result<i64, FnError> {
    if let Some(i) = n.as_i64() {
        return Ok(i);
    }
    if n.as_u64().is_some() {
        return Err(FnError::TooLarge(number_to_string(n)));
    }
    let f = f64_of(n);
    if f.fract() != 0.0 {
        return Err(FnError::NotWhole(number_to_string(n)));
    }
    if f.abs() >= 9.2e18 {
        return Err(FnError::TooLarge(number_to_string(n)));
    }
    Ok(f as i64)
}

fn str_arg(args: &[Value], i: usize, name: &str) -> Result<String, FnError> {
    value_to_string(arg(args, i, name)?).map_err(|e| bad_arg(name, e))
}

fn num_arg(args: &[Value], i: usize, name: &str) -> Result<Number, FnError> {
    value_to_number(arg(args, i, name)?).map_err(|e| bad_arg(name, e))
}

fn int_arg(args: &[Value], i: usize, name: &str) -> Result<i64, FnError> {
    let n = num_arg(args, i, name)?;
    number_to_int(&n).map_err(|e| bad_arg(name, e))
}

fn list_arg<'a>(args: &'a [Value], i: usize, name: &str) -> Result<&'a [Value], FnError> {
    match arg(args, i, name)? {
        Value::Array(items) => Ok(items),
        Value::Null => Err(bad_arg(name, FnError::Null)),
        other => Err(bad_arg(name, FnError::Type { expected: "list, tuple or set", got: type_name(other) })),
    }
}

fn map_arg<'a>(args: &'a [Value], i: usize, name: &str) -> Result<&'a Map<String, Value>, FnError> {
    match arg(args, i, name)? {
        Value::Object(map) => Ok(map),
        Value::Null => Err(bad_arg(name, FnError::Null)),
        other => Err(bad_arg(name, FnError::Type { expected: "map or object", got: type_name(other) })),
    }
}

fn is_primitive(v: &Value) -> bool {
    matches!(v, Value::Bool(_) | Value::Number(_) | Value::String(_))
}

/// Terraform-ish type unification of collection elements: mixed primitives become strings
/// (if a string is among them); primitives mixed with collections, or bools mixed with numbers
/// without a string, cannot be unified.
fn unify(values: Vec<Value>, what: &str) -> Result<Vec<Value>, FnError> {
    let (mut b, mut n, mut s, mut l, mut o) = (false, false, false, false, false);
    for v in &values {
        match v {
            Value::Null => {}
            Value::Bool(_) => b = true,
            Value::Number(_) => n = true,
            Value::String(_) => s = true,
            Value::Array(_) => l = true,
            Value::Object(_) => o = true,
        }
    }
    let primitive_kinds = usize::from(b) + usize::from(n) + usize::from(s);
    let err = || FnError::NoSingleType(what.to_string());
    if (l || o) && (primitive_kinds > 0 || (l && o)) {
        return Err(err());
    }
    if primitive_kinds > 1 {
        if !s {
            return Err(err());
        }
        return values
            .into_iter()
            .map(|v| match v {
                Value::Null => Ok(Value::Null),
                other => value_to_string(&other).map(Value::String),
            })
            .collect();
    }
    Ok(values)
}

/// Equality with Terraform's automatic conversion between strings and other primitives.
fn loose_eq(a: &Value, b: &Value) -> bool {
    if a == b {
        return true;
    }
    let mixed = matches!((a, b), (Value::String(_), _) | (_, Value::String(_)));
    if mixed && is_primitive(a) && is_primitive(b) {
        return matches!((value_to_string(a), value_to_string(b)), (Ok(x), Ok(y)) if x == y);
    }
    false
}

// ---------------------------------------------------------------------------------------------
// Collection functions
// ---------------------------------------------------------------------------------------------

fn fn_merge(args: FuncArgs) -> FnResult {
    let mut out = Map::new();
    for (i, v) in args.iter().enumerate() {
        match v {
            Value::Null => {}
            Value::Object(map) => {
                for (k, v) in map {
                    out.insert(k.clone(), v.clone());
                }
            }
            other => {
                return Err(format!("arguments must be maps or objects, got {} at position {i}", type_name(other)));
            }
        }
    }
    Ok(Value::Object(out))
}

fn fn_lookup(args: FuncArgs) -> FnResult {
    if args.len() > 3 {
        return Err(format!("expected 2 or 3 arguments (map, key, default), got {}", args.len()));
    }
    let map = map_arg(&args, 0, "inputMap")?;
    let key = str_arg(&args, 1, "key")?;
    match (map.get(&key), args.get(2)) {
        (Some(v), _) => Ok(v.clone()),
        (None, Some(default)) => Ok(default.clone()),
        (None, None) => Err(format!("lookup failed to find key {key:?}")),
    }
}

fn fn_concat(args: FuncArgs) -> FnResult {
    if args.is_empty() {
        return Err("at least one argument is required".to_owned());
    }
    let mut out = Vec::new();
    for (i, v) in args.iter().enumerate() {
        match v {
            Value::Array(items) => out.extend(items.iter().cloned()),
            other => {
                return Err(format!("all arguments must be lists or tuples; got {} at position {i}", type_name(other)));
            }
        }
    }
    Ok(Value::Array(out))
}

fn fn_coalesce(args: FuncArgs) -> FnResult {
    if args.is_empty() {
        return Err("at least one argument is required".to_owned());
    }
    let values = unify(args.into_values(), "arguments")?;
    values
        .into_iter()
        .find(|v| !v.is_null() && !matches!(v, Value::String(s) if s.is_empty()))
        .ok_or_else(|| "no non-null, non-empty-string arguments".to_owned())
}

fn fn_coalescelist(args: FuncArgs) -> FnResult {
    if args.is_empty() {
        return Err("at least one argument is required".to_owned());
    }
    for (i, v) in args.iter().enumerate() {
        match v {
            Value::Null => {}
            Value::Array(items) if items.is_empty() => {}
            Value::Array(_) => return Ok(v.clone()),
            other => {
                return Err(format!(
                    "coalescelist arguments must be lists or tuples, got {} at position {i}",
                    type_name(other)
                ));
            }
        }
    }
    Err("no non-null arguments".to_owned())
}

fn fn_compact(args: FuncArgs) -> FnResult {
    let list = list_arg(&args, 0, "list")?;
    let mut out = Vec::new();
    for v in list {
        if v.is_null() {
            continue;
        }
        let s = value_to_string(v).map_err(|e| arg_err("list", e))?;
        if !s.is_empty() {
            out.push(Value::String(s));
        }
    }
    Ok(Value::Array(out))
}

fn dedup(values: Vec<Value>) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::with_capacity(values.len());
    for v in values {
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

fn fn_distinct(args: FuncArgs) -> FnResult {
    let list = list_arg(&args, 0, "list")?.to_vec();
    let list = unify(list, "list").map_err(|e| arg_err("list", e))?;
    Ok(Value::Array(dedup(list)))
}

fn flatten_into(items: &[Value], out: &mut Vec<Value>) {
    for v in items {
        match v {
            Value::Array(inner) => flatten_into(inner, out),
            other => out.push(other.clone()),
        }
    }
}

fn fn_flatten(args: FuncArgs) -> FnResult {
    let list = list_arg(&args, 0, "list")?;
    let mut out = Vec::new();
    flatten_into(list, &mut out);
    Ok(Value::Array(out))
}

fn sorted_entries(map: &Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut entries: Vec<_> = map.iter().collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    entries
}

fn fn_keys(args: FuncArgs) -> FnResult {
    let map = map_arg(&args, 0, "inputMap")?;
    Ok(Value::Array(sorted_entries(map).into_iter().map(|(k, _)| Value::String(k.clone())).collect()))
}

fn fn_values(args: FuncArgs) -> FnResult {
    let map = map_arg(&args, 0, "mapping")?;
    Ok(Value::Array(sorted_entries(map).into_iter().map(|(_, v)| v.clone()).collect()))
}

fn fn_length(args: FuncArgs) -> FnResult {
    match arg(&args, 0, "value")? {
        Value::String(s) => Ok(Value::from(s.chars().count())),
        Value::Array(items) => Ok(Value::from(items.len())),
        Value::Object(map) => Ok(Value::from(map.len())),
        Value::Null => Err(arg_err("value", "argument must not be null")),
        other => Err(arg_err(
            "value",
            format!("argument must be a string, a collection type, or a structural type, got {}", type_name(other)),
        )),
    }
}

fn fn_element(args: FuncArgs) -> FnResult {
    let list = list_arg(&args, 0, "list")?;
    let index = int_arg(&args, 1, "index")?;
    if list.is_empty() {
        return Err("cannot use element function with an empty list".to_owned());
    }
    let index = usize::try_from(index).map_err(|_| "cannot use element function with a negative index")?;
    Ok(list[index % list.len()].clone())
}

fn fn_index(args: FuncArgs) -> FnResult {
    let list = list_arg(&args, 0, "list")?;
    let value = arg(&args, 1, "value")?;
    list.iter().position(|v| loose_eq(v, value)).map(Value::from).ok_or_else(|| "item not found".to_owned())
}

fn fn_contains(args: FuncArgs) -> FnResult {
    let list = list_arg(&args, 0, "list")?;
    let value = arg(&args, 1, "value")?;
    Ok(Value::Bool(list.iter().any(|v| loose_eq(v, value))))
}

fn fn_slice(args: FuncArgs) -> FnResult {
    let list = list_arg(&args, 0, "list")?;
    let start = int_arg(&args, 1, "start_index")?;
    let end = int_arg(&args, 2, "end_index")?;
    let start = usize::try_from(start).map_err(|_| "from index must be >= 0")?;
    let end = usize::try_from(end).map_err(|_| "to index must be <= length of the input list")?;
    if end > list.len() {
        return Err("to index must be <= length of the input list".to_owned());
    }
    if start > end {
        return Err("from index must be <= to index".to_owned());
    }
    Ok(Value::Array(list[start..end].to_vec()))
}

fn fn_range(args: FuncArgs) -> FnResult {
    let nums = args
        .iter()
        .enumerate()
        .map(|(i, v)| value_to_number(v).map(|n| f64_of(&n)).map_err(|e| bad_arg(&format!("arg{i}"), e)))
        .collect::<Result<Vec<f64>, FnError>>()?;
    let (start, limit, step) = match nums.as_slice() {
        [limit] => (0.0, *limit, 1.0),
        [start, limit] => (*start, *limit, if start <= limit { 1.0 } else { -1.0 }),
        [start, limit, step] => (*start, *limit, *step),
        _ => return Err("must have one, two, or three arguments".to_owned()),
    };
    if step == 0.0 {
        return Err("step must not be zero".to_owned());
    }
    let mut out = Vec::new();
    if (step > 0.0 && start > limit) || (step < 0.0 && start < limit) {
        return Ok(Value::Array(out));
    }
    let mut i = 0.0_f64;
    loop {
        let v = start + i * step;
        if (step > 0.0 && v >= limit) || (step < 0.0 && v <= limit) {
            break;
        }
        if out.len() >= 1024 {
            return Err("more than 1024 values were generated; either decrease the difference \
                        between start and end or use a smaller step"
                .to_owned());
        }
        out.push(num_value(v)?);
        i += 1.0;
    }
    Ok(Value::Array(out))
}

fn fn_zipmap(args: FuncArgs) -> FnResult {
    let keys = list_arg(&args, 0, "keys")?;
    let values = list_arg(&args, 1, "values")?;
    if keys.len() != values.len() {
        return Err(format!("number of keys ({}) does not match number of values ({})", keys.len(), values.len()));
    }
    let mut out = Map::new();
    for (k, v) in keys.iter().zip(values) {
        let k = value_to_string(k).map_err(|e| arg_err("keys", e))?;
        out.insert(k, v.clone());
    }
    Ok(Value::Object(out))
}

// ---------------------------------------------------------------------------------------------
// String functions
// ---------------------------------------------------------------------------------------------

fn fn_lower(args: FuncArgs) -> FnResult {
    Ok(Value::String(str_arg(&args, 0, "str")?.to_lowercase()))
}

fn fn_upper(args: FuncArgs) -> FnResult {
    Ok(Value::String(str_arg(&args, 0, "str")?.to_uppercase()))
}

fn fn_title(args: FuncArgs) -> FnResult {
    // Go's strings.Title: upper-case the first letter of every word.
    fn is_separator(c: char) -> bool {
        if c.is_ascii() { !(c.is_ascii_alphanumeric() || c == '_') } else { !c.is_alphanumeric() && c.is_whitespace() }
    }
    let s = str_arg(&args, 0, "str")?;
    let mut out = String::with_capacity(s.len());
    let mut prev_sep = true;
    for c in s.chars() {
        if prev_sep {
            out.extend(c.to_uppercase());
        } else {
            out.push(c);
        }
        prev_sep = is_separator(c);
    }
    Ok(Value::String(out))
}

fn fn_trimspace(args: FuncArgs) -> FnResult {
    Ok(Value::String(str_arg(&args, 0, "str")?.trim().to_owned()))
}

fn fn_chomp(args: FuncArgs) -> FnResult {
    let s = str_arg(&args, 0, "str")?;
    Ok(Value::String(s.trim_end_matches(['\n', '\r']).to_owned()))
}

fn fn_strrev(args: FuncArgs) -> FnResult {
    Ok(Value::String(str_arg(&args, 0, "str")?.chars().rev().collect()))
}

fn fn_trim(args: FuncArgs) -> FnResult {
    let s = str_arg(&args, 0, "str")?;
    let cutset = str_arg(&args, 1, "cutset")?;
    Ok(Value::String(s.trim_matches(|c| cutset.contains(c)).to_owned()))
}

fn fn_trimprefix(args: FuncArgs) -> FnResult {
    let s = str_arg(&args, 0, "str")?;
    let prefix = str_arg(&args, 1, "prefix")?;
    Ok(Value::String(s.strip_prefix(prefix.as_str()).unwrap_or(&s).to_owned()))
}

fn fn_trimsuffix(args: FuncArgs) -> FnResult {
    let s = str_arg(&args, 0, "str")?;
    let suffix = str_arg(&args, 1, "suffix")?;
    Ok(Value::String(s.strip_suffix(suffix.as_str()).unwrap_or(&s).to_owned()))
}

fn fn_startswith(args: FuncArgs) -> FnResult {
    let s = str_arg(&args, 0, "str")?;
    let prefix = str_arg(&args, 1, "prefix")?;
    Ok(Value::Bool(s.starts_with(prefix.as_str())))
}

fn fn_endswith(args: FuncArgs) -> FnResult {
    let s = str_arg(&args, 0, "str")?;
    let suffix = str_arg(&args, 1, "suffix")?;
    Ok(Value::Bool(s.ends_with(suffix.as_str())))
}

fn fn_join(args: FuncArgs) -> FnResult {
    let sep = str_arg(&args, 0, "separator")?;
    if args.len() < 2 {
        return Err("at least one list is required".to_owned());
    }
    let mut parts = Vec::new();
    for i in 1..args.len() {
        for (j, v) in list_arg(&args, i, "lists")?.iter().enumerate() {
            if v.is_null() {
                return Err(format!("element {j} of list {} is null; cannot concatenate null values", i - 1));
            }
            parts.push(value_to_string(v).map_err(|e| arg_err("lists", e))?);
        }
    }
    Ok(Value::String(parts.join(&sep)))
}

fn fn_split(args: FuncArgs) -> FnResult {
    let sep = str_arg(&args, 0, "separator")?;
    let s = str_arg(&args, 1, "str")?;
    let parts: Vec<Value> = if sep.is_empty() {
        s.chars().map(|c| Value::String(c.to_string())).collect()
    } else {
        s.split(sep.as_str()).map(|p| Value::String(p.to_owned())).collect()
    };
    Ok(Value::Array(parts))
}

fn fn_replace(args: FuncArgs) -> FnResult {
    let s = str_arg(&args, 0, "str")?;
    let substr = str_arg(&args, 1, "substr")?;
    let replacement = str_arg(&args, 2, "replace")?;
    if substr.len() > 1 && substr.starts_with('/') && substr.ends_with('/') {
        let pattern = &substr[1..substr.len() - 1];
        let re =
            regex::Regex::new(pattern).map_err(|e| format!("invalid regular expression pattern {pattern:?}: {e}"))?;
        return Ok(Value::String(re.replace_all(&s, replacement.as_str()).into_owned()));
    }
    Ok(Value::String(s.replace(substr.as_str(), &replacement)))
}

fn fn_substr(args: FuncArgs) -> FnResult {
    let s = str_arg(&args, 0, "str")?;
    let offset = int_arg(&args, 1, "offset")?;
    let length = int_arg(&args, 2, "length")?;
    let chars: Vec<char> = s.chars().collect();
    let len = i64::try_from(chars.len()).map_err(|_| "string is too long")?;
    let start = if offset < 0 { (offset + len).max(0) } else { offset };
    if start >= len {
        return Ok(Value::String(String::new()));
    }
    let end = if length < 0 { len } else { start.saturating_add(length).min(len) };
    // Both bounds are within 0..=len here, so the conversions cannot fail.
    let start = usize::try_from(start).unwrap_or(0);
    let end = usize::try_from(end).unwrap_or(0);
    Ok(Value::String(chars[start..end].iter().collect()))
}

// ---------------------------------------------------------------------------------------------
// format / formatlist
// ---------------------------------------------------------------------------------------------

#[derive(Default)]
struct Flags {
    minus: bool,
    plus: bool,
    sharp: bool,
    space: bool,
    zero: bool,
}

fn fn_format(args: FuncArgs) -> FnResult {
    let spec = str_arg(&args, 0, "format")?;
    Ok(Value::String(format_values(&spec, args.get(1..).unwrap_or_default())?))
}

fn fn_formatlist(args: FuncArgs) -> FnResult {
    let spec = str_arg(&args, 0, "format")?;
    let rest = args.get(1..).unwrap_or_default();
    let mut len: Option<(usize, usize)> = None;
    for (i, v) in rest.iter().enumerate() {
        if let Value::Array(items) = v {
            match len {
                None => len = Some((items.len(), i)),
                Some((l, j)) if l != items.len() => {
                    return Err(format!(
                        "argument {} has length {}, which is inconsistent with argument {} of \
                         length {l}",
                        i + 1,
                        items.len(),
                        j + 1
                    ));
                }
                Some(_) => {}
            }
        }
    }
    let iterations = len.map_or(1, |(l, _)| l);
    let mut out = Vec::with_capacity(iterations);
    for n in 0..iterations {
        let row: Vec<Value> = rest
            .iter()
            .map(|v| match v {
                Value::Array(items) => items[n].clone(),
                other => other.clone(),
            })
            .collect();
        out.push(Value::String(format_values(&spec, &row)?));
    }
    Ok(Value::Array(out))
}

fn parse_digits(chars: &[char], i: &mut usize) -> Option<usize> {
    let start = *i;
    while chars.get(*i).is_some_and(char::is_ascii_digit) {
        *i += 1;
    }
    if *i == start {
        return None;
    }
    chars[start..*i].iter().collect::<String>().parse().ok()
}

/// Go/cty-style `format` implementation.
fn format_values(spec: &str, args: &[Value]) -> Result<String, FormatError> {
    let chars: Vec<char> = spec.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    let mut next_arg = 0usize;
    let mut reordered = false;
    while i < chars.len() {
        let c = chars[i];
        if c != '%' {
            out.push(c);
            i += 1;
            continue;
        }
        let start = i;
        i += 1;
        if chars.get(i) == Some(&'%') {
            out.push('%');
            i += 1;
            continue;
        }
        let mut flags = Flags::default();
        while let Some(&f) = chars.get(i) {
            match f {
                '-' => flags.minus = true,
                '+' => flags.plus = true,
                '#' => flags.sharp = true,
                ' ' => flags.space = true,
                '0' => flags.zero = true,
                _ => break,
            }
            i += 1;
        }
        if chars.get(i) == Some(&'[') {
            let close = chars[i..].iter().position(|&c| c == ']').ok_or(FormatError::UnterminatedIndex(start))?;
            let index: String = chars[i + 1..i + close].iter().collect();
            let n: usize = index
                .parse()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| FormatError::BadIndex { index: index.clone(), at: start })?;
            next_arg = n - 1;
            reordered = true;
            i += close + 1;
        }
        let width = parse_digits(&chars, &mut i);
        let mut precision = None;
        if chars.get(i) == Some(&'.') {
            i += 1;
            precision = Some(parse_digits(&chars, &mut i).unwrap_or(0));
        }
        let verb = *chars.get(i).ok_or(FormatError::UnterminatedVerb(start))?;
        i += 1;
        let verb_src: String = chars[start..i].iter().collect();
        let arg = args.get(next_arg).ok_or_else(|| FormatError::NotEnoughArguments {
            verb: verb_src.clone(),
            at: start,
            need: next_arg + 1,
            have: args.len(),
        })?;
        next_arg += 1;
        let (body, numeric) = format_one(verb, &flags, precision, arg).map_err(|e| FormatError::Value {
            verb: verb_src,
            at: start,
            reason: Box::new(e),
        })?;
        out.push_str(&pad(body, width, &flags, numeric));
    }
    if !reordered && next_arg < args.len() {
        return Err(if next_arg == 0 { FormatError::NoVerbs } else { FormatError::TooManyArguments(next_arg) });
    }
    Ok(out)
}

fn pad(body: String, width: Option<usize>, flags: &Flags, numeric: bool) -> String {
    let Some(width) = width else { return body };
    let len = body.chars().count();
    if len >= width {
        return body;
    }
    let fill = width - len;
    if flags.minus {
        return body + &" ".repeat(fill);
    }
    if flags.zero {
        if numeric && let Some(sign) = body.chars().next().filter(|c| matches!(c, '+' | '-' | ' ')) {
            return format!("{sign}{}{}", "0".repeat(fill), &body[1..]);
        }
        return "0".repeat(fill) + &body;
    }
    " ".repeat(fill) + &body
}

fn sign_prefix(negative: bool, flags: &Flags) -> &'static str {
    if negative {
        "-"
    } else if flags.plus {
        "+"
    } else if flags.space {
        " "
    } else {
        ""
    }
}

/// Formats one argument; returns the text and whether it is numeric (for zero padding).
fn format_one(verb: char, flags: &Flags, precision: Option<usize>, arg: &Value) -> Result<(String, bool), FnError> {
    if arg.is_null() {
        return if verb == 'v' { Ok(("null".to_owned(), false)) } else { Err(FormatError::Null.into()) };
    }
    match verb {
        'v' => {
            if flags.sharp {
                return Ok((json_encode(arg), false));
            }
            match arg {
                Value::Number(n) => {
                    let s = number_to_string(n);
                    let neg = s.starts_with('-');
                    let digits = s.trim_start_matches('-');
                    Ok((format!("{}{digits}", sign_prefix(neg, flags)), true))
                }
                Value::Array(_) | Value::Object(_) => Ok((json_encode(arg), false)),
                other => value_to_string(other).map(|s| (s, false)),
            }
        }
        't' => match arg {
            Value::Bool(b) => Ok((b.to_string(), false)),
            Value::String(s) if s == "true" || s == "false" => Ok((s.clone(), false)),
            other => Err(FnError::Type { expected: "bool", got: type_name(other) }),
        },
        'd' | 'b' | 'o' | 'x' | 'X' => {
            if let (Value::String(s), 'x' | 'X') = (arg, verb)
                && parse_number(s).is_none()
            {
                let hex: String = s.bytes().map(|b| format!("{b:02x}")).collect();
                let hex = if verb == 'X' { hex.to_uppercase() } else { hex };
                return Ok((hex, false));
            }
            let n = value_to_number(arg)?;
            let body = format_integer(&n, verb, flags)?;
            Ok((body, true))
        }
        'e' | 'E' | 'f' | 'F' | 'g' | 'G' => {
            let n = value_to_number(arg)?;
            let f = f64_of(&n);
            let neg = f.is_sign_negative() && f != 0.0;
            let a = f.abs();
            let body = match verb {
                'e' | 'E' => fmt_e(a, precision.unwrap_or(6), verb == 'E'),
                'f' | 'F' => format!("{:.*}", precision.unwrap_or(6), a),
                _ => fmt_g(a, precision, verb == 'G'),
            };
            Ok((format!("{}{body}", sign_prefix(neg, flags)), true))
        }
        's' | 'q' => {
            let mut s = value_to_string(arg)?;
            if let Some(p) = precision {
                s = s.chars().take(p).collect();
            }
            if verb == 'q' {
                s = go_quote(&s);
            }
            Ok((s, false))
        }
        other => Err(FormatError::Verb(other).into()),
    }
}

fn format_integer(n: &Number, verb: char, flags: &Flags) -> Result<String, FnError> {
    let (neg, magnitude) = if let Some(i) = n.as_i64() {
        (i < 0, u128::from(i.unsigned_abs()))
    } else if let Some(u) = n.as_u64() {
        (false, u128::from(u))
    } else {
        let f = f64_of(n);
        if f.fract() != 0.0 {
            return Err(FnError::NotWhole(number_to_string(n)));
        }
        if f.abs() >= 1.7e38 {
            return Err(FnError::TooLarge(number_to_string(n)));
        }
        (f < 0.0, f.abs() as u128)
    };
    let digits = match verb {
        'b' => format!("{magnitude:b}"),
        'o' => format!("{magnitude:o}"),
        'x' => format!("{magnitude:x}"),
        'X' => format!("{magnitude:X}"),
        _ => magnitude.to_string(),
    };
    let prefix = match (flags.sharp, verb) {
        (true, 'b') => "0b",
        (true, 'o') => "0",
        (true, 'x') => "0x",
        (true, 'X') => "0X",
        _ => "",
    };
    Ok(format!("{}{prefix}{digits}", sign_prefix(neg, flags)))
}

/// Splits a non-negative float into its significant decimal digits and decimal exponent.
fn decimal_digits(a: f64, significant: Option<usize>) -> (String, i32) {
    let s = match significant {
        Some(p) => format!("{:.*e}", p.saturating_sub(1), a),
        None => format!("{a:e}"),
    };
    let (mantissa, exp) = s.split_once('e').unwrap_or((s.as_str(), "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let digits = digits.trim_end_matches('0');
    let digits = if digits.is_empty() { "0" } else { digits };
    (digits.to_owned(), exp.parse().unwrap_or(0))
}

fn exponent_suffix(exp: i32, upper: bool) -> String {
    let e = if upper { 'E' } else { 'e' };
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{e}{sign}{:02}", exp.unsigned_abs())
}

fn fmt_e(a: f64, precision: usize, upper: bool) -> String {
    let s = format!("{a:.precision$e}");
    let (mantissa, exp) = s.split_once('e').unwrap_or((s.as_str(), "0"));
    format!("{mantissa}{}", exponent_suffix(exp.parse().unwrap_or(0), upper))
}

fn fmt_g(a: f64, precision: Option<usize>, upper: bool) -> String {
    if a == 0.0 {
        return "0".to_owned();
    }
    let significant = precision.map(|p| p.max(1));
    let (digits, exp) = decimal_digits(a, significant);
    let nd = i32::try_from(digits.len()).unwrap_or(i32::MAX);
    let eprec = match significant {
        None => 6,
        Some(p) => {
            let p = i32::try_from(p).unwrap_or(i32::MAX);
            if p > nd && nd > exp { nd } else { p }
        }
    };
    if exp < -4 || exp >= eprec {
        let mut out = digits[..1].to_owned();
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push_str(&exponent_suffix(exp, upper));
        return out;
    }
    let dp = exp + 1;
    if dp <= 0 {
        let zeros = usize::try_from(-dp).unwrap_or(0);
        format!("0.{}{digits}", "0".repeat(zeros))
    } else {
        let dp = usize::try_from(dp).unwrap_or(0);
        if dp >= digits.len() {
            format!("{digits}{}", "0".repeat(dp - digits.len()))
        } else {
            format!("{}.{}", &digits[..dp], &digits[dp..])
        }
    }
}

/// Go's `strconv.Quote` (approximation: printable Unicode is kept as-is).
fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

// ---------------------------------------------------------------------------------------------
// Conversion functions
// ---------------------------------------------------------------------------------------------

fn fn_tomap(args: FuncArgs) -> FnResult {
    match arg(&args, 0, "v")? {
        Value::Null => Ok(Value::Null),
        Value::Object(map) => {
            let keys: Vec<String> = map.keys().cloned().collect();
            let values = unify(map.values().cloned().collect(), "object to map").map_err(|e| arg_err("v", e))?;
            Ok(Value::Object(keys.into_iter().zip(values).collect()))
        }
        other => Err(arg_err("v", format!("cannot convert {} to map", type_name(other)))),
    }
}

fn fn_tolist(args: FuncArgs) -> FnResult {
    match arg(&args, 0, "v")? {
        Value::Null => Ok(Value::Null),
        Value::Array(items) => unify(items.clone(), "tuple to list").map(Value::Array).map_err(|e| arg_err("v", e)),
        other => Err(arg_err("v", format!("cannot convert {} to list", type_name(other)))),
    }
}

fn fn_toset(args: FuncArgs) -> FnResult {
    match arg(&args, 0, "v")? {
        Value::Null => Ok(Value::Null),
        Value::Array(items) => {
            unify(items.clone(), "tuple to set").map(|items| Value::Array(dedup(items))).map_err(|e| arg_err("v", e))
        }
        other => Err(arg_err("v", format!("cannot convert {} to set", type_name(other)))),
    }
}

fn fn_tostring(args: FuncArgs) -> FnResult {
    match arg(&args, 0, "v")? {
        Value::Null => Ok(Value::Null),
        other => value_to_string(other)
            .map(Value::String)
            .map_err(|_| arg_err("v", format!("cannot convert {} to string", type_name(other)))),
    }
}

fn fn_tonumber(args: FuncArgs) -> FnResult {
    match arg(&args, 0, "v")? {
        Value::Null => Ok(Value::Null),
        Value::Number(n) => Ok(Value::Number(*n)),
        Value::String(s) => {
            parse_number(s).map(Value::Number).ok_or_else(|| arg_err("v", format!("cannot convert {s:?} to number")))
        }
        other => Err(arg_err("v", format!("cannot convert {} to number", type_name(other)))),
    }
}

fn fn_tobool(args: FuncArgs) -> FnResult {
    match arg(&args, 0, "v")? {
        Value::Null => Ok(Value::Null),
        Value::Bool(b) => Ok(Value::Bool(*b)),
        Value::String(s) if s == "true" => Ok(Value::Bool(true)),
        Value::String(s) if s == "false" => Ok(Value::Bool(false)),
        Value::String(s) => Err(arg_err("v", format!("cannot convert {s:?} to bool"))),
        other => Err(arg_err("v", format!("cannot convert {} to bool", type_name(other)))),
    }
}

// ---------------------------------------------------------------------------------------------
// Numeric functions
// ---------------------------------------------------------------------------------------------

fn extremum(args: &[Value], want_greater: bool) -> FnResult {
    let mut best: Option<Number> = None;
    for (i, v) in args.iter().enumerate() {
        let n = value_to_number(v).map_err(|e| arg_err(&format!("numbers[{i}]"), e))?;
        best = match best {
            Some(b) if (f64_of(&n) > f64_of(&b)) != want_greater || f64_of(&n) == f64_of(&b) => Some(b),
            _ => Some(n),
        };
    }
    best.map(Value::Number).ok_or_else(|| "must pass at least one number".to_owned())
}

fn fn_min(args: FuncArgs) -> FnResult {
    extremum(&args, false)
}

fn fn_max(args: FuncArgs) -> FnResult {
    extremum(&args, true)
}

fn fn_sum(args: FuncArgs) -> FnResult {
    let list = list_arg(&args, 0, "list")?;
    if list.is_empty() {
        return Err("cannot sum an empty list".to_owned());
    }
    let mut total = 0.0;
    for v in list {
        total += f64_of(&value_to_number(v).map_err(|e| arg_err("list", e))?);
    }
    num_value(total)
}

fn fn_abs(args: FuncArgs) -> FnResult {
    let n = num_arg(&args, 0, "num")?;
    if let Some(a) = n.as_i64().and_then(i64::checked_abs) {
        return Ok(Value::from(a));
    }
    if n.as_u64().is_some() {
        return Ok(Value::Number(n));
    }
    num_value(f64_of(&n).abs())
}

fn fn_ceil(args: FuncArgs) -> FnResult {
    let n = num_arg(&args, 0, "num")?;
    if !n.is_f64() {
        return Ok(Value::Number(n));
    }
    num_value(f64_of(&n).ceil())
}

fn fn_floor(args: FuncArgs) -> FnResult {
    let n = num_arg(&args, 0, "num")?;
    if !n.is_f64() {
        return Ok(Value::Number(n));
    }
    num_value(f64_of(&n).floor())
}

// ---------------------------------------------------------------------------------------------
// Encoding functions
// ---------------------------------------------------------------------------------------------

fn json_encode(v: &Value) -> String {
    let mut out = String::new();
    json_encode_into(v, &mut out);
    out
}

fn json_encode_into(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&number_to_string(n)),
        Value::String(s) => json_string_into(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                json_encode_into(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, item)) in sorted_entries(map).into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                json_string_into(k, out);
                out.push(':');
                json_encode_into(item, out);
            }
            out.push('}');
        }
    }
}

/// JSON string escaping as done by Go's `encoding/json` (including HTML-safe escapes).
fn json_string_into(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn fn_jsonencode(args: FuncArgs) -> FnResult {
    Ok(Value::String(json_encode(arg(&args, 0, "val")?)))
}

fn from_json(v: serde_json::Value) -> Value {
    match v {
        serde_json::Value::Null => Value::Null,
        serde_json::Value::Bool(b) => Value::Bool(b),
        serde_json::Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Value::from(i)
            } else if let Some(u) = n.as_u64() {
                Value::from(u)
            } else {
                n.as_f64().and_then(Number::from_f64).map_or(Value::Null, Value::Number)
            }
        }
        serde_json::Value::String(s) => Value::String(s),
        serde_json::Value::Array(items) => Value::Array(items.into_iter().map(from_json).collect()),
        serde_json::Value::Object(map) => Value::Object(map.into_iter().map(|(k, v)| (k, from_json(v))).collect()),
    }
}

fn fn_jsondecode(args: FuncArgs) -> FnResult {
    let s = str_arg(&args, 0, "str")?;
    serde_json::from_str::<serde_json::Value>(&s)
        .map(from_json)
        .map_err(|e| arg_err("str", format!("invalid JSON: {e}")))
}

const BASE64_ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn base64_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], chunk.get(1).copied().unwrap_or(0), chunk.get(2).copied().unwrap_or(0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for k in 0..4 {
            if k <= chunk.len() {
                out.push(char::from(BASE64_ALPHABET[((n >> (18 - 6 * k)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn base64_value(c: u8) -> Option<u8> {
    match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    }
}

fn base64_decode(s: &str) -> Result<Vec<u8>, FnError> {
    let clean: Vec<u8> = s.bytes().filter(|b| !matches!(b, b'\r' | b'\n')).collect();
    let err = FnError::Base64;
    if !clean.len().is_multiple_of(4) {
        return Err(err(clean.len()));
    }
    let chunks = clean.len() / 4;
    let mut out = Vec::with_capacity(chunks * 3);
    for (ci, chunk) in clean.chunks(4).enumerate() {
        let mut vals = [0u8; 4];
        let mut padding = 0;
        for (j, &b) in chunk.iter().enumerate() {
            let pos = ci * 4 + j;
            if b == b'=' {
                if ci + 1 != chunks || j < 2 {
                    return Err(err(pos));
                }
                padding += 1;
                continue;
            }
            if padding > 0 {
                return Err(err(pos));
            }
            vals[j] = base64_value(b).ok_or_else(|| err(pos))?;
        }
        out.push((vals[0] << 2) | (vals[1] >> 4));
        if padding < 2 {
            out.push((vals[1] << 4) | (vals[2] >> 2));
        }
        if padding < 1 {
            out.push((vals[2] << 6) | vals[3]);
        }
    }
    Ok(out)
}

fn fn_base64encode(args: FuncArgs) -> FnResult {
    Ok(Value::String(base64_encode(str_arg(&args, 0, "str")?.as_bytes())))
}

fn fn_base64decode(args: FuncArgs) -> FnResult {
    let bytes = base64_decode(&str_arg(&args, 0, "str")?)?;
    String::from_utf8(bytes)
        .map(Value::String)
        .map_err(|_| "the result of decoding the provided string is not valid UTF-8".to_owned())
}

// ---------------------------------------------------------------------------------------------
// Network functions
// ---------------------------------------------------------------------------------------------

struct Cidr {
    addr: u128,
    prefix: u32,
    bits: u32,
}

/// Parses IPv4 the way Terraform does (Go 1.16 rules: leading zeros allowed, decimal).
fn parse_ipv4(s: &str) -> Option<u32> {
    let mut out = 0u32;
    let mut count = 0;
    for part in s.split('.') {
        if part.is_empty() || part.len() > 3 || !part.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let octet: u32 = part.parse().ok()?;
        if octet > 255 {
            return None;
        }
        out = (out << 8) | octet;
        count += 1;
    }
    (count == 4).then_some(out)
}

fn host_mask(prefix: u32, bits: u32) -> u128 {
    let host_bits = bits - prefix;
    if host_bits >= 128 { u128::MAX } else { (1u128 << host_bits) - 1 }
}

fn net_mask(prefix: u32, bits: u32) -> u128 {
    let all = if bits >= 128 { u128::MAX } else { (1u128 << bits) - 1 };
    all & !host_mask(prefix, bits)
}

fn parse_cidr(s: &str) -> Result<Cidr, FnError> {
    let invalid = || FnError::Cidr(s.to_string());
    let (ip, len) = s.split_once('/').ok_or_else(invalid)?;
    if len.is_empty() || len.len() > 3 || !len.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid());
    }
    let prefix: u32 = len.parse().map_err(|_| invalid())?;
    let (addr, bits) = if let Some(v4) = parse_ipv4(ip) {
        (u128::from(v4), 32)
    } else if let Ok(v6) = ip.parse::<Ipv6Addr>() {
        (u128::from(v6), 128)
    } else {
        return Err(invalid());
    };
    if prefix > bits {
        return Err(invalid());
    }
    Ok(Cidr { addr: addr & net_mask(prefix, bits), prefix, bits })
}

fn format_addr(addr: u128, bits: u32) -> String {
    if bits == 32 {
        Ipv4Addr::from(u32::try_from(addr).unwrap_or(0)).to_string()
    } else {
        Ipv6Addr::from(addr).to_string()
    }
}

fn fn_cidrsubnet(args: FuncArgs) -> FnResult {
    let cidr = parse_cidr(&str_arg(&args, 0, "prefix")?)?;
    let newbits = int_arg(&args, 1, "newbits")?;
    let netnum = int_arg(&args, 2, "netnum")?;
    let newbits_u = u32::try_from(newbits).map_err(|_| arg_err("newbits", "must not be negative"))?;
    let new_prefix = cidr.prefix.saturating_add(newbits_u);
    if new_prefix > cidr.bits {
        return Err(format!("insufficient address space to extend prefix of {} by {newbits}", cidr.prefix));
    }
    let fits = netnum >= 0 && (newbits_u >= 63 || netnum < (1i64 << newbits_u));
    if !fits {
        return Err(format!("prefix extension of {newbits} does not accommodate a subnet numbered {netnum}"));
    }
    let netnum = u128::from(netnum.unsigned_abs());
    let shifted = netnum.checked_shl(cidr.bits - new_prefix).unwrap_or(0);
    Ok(Value::String(format!("{}/{new_prefix}", format_addr(cidr.addr | shifted, cidr.bits))))
}

fn fn_cidrhost(args: FuncArgs) -> FnResult {
    let cidr = parse_cidr(&str_arg(&args, 0, "prefix")?)?;
    let hostnum = int_arg(&args, 1, "hostnum")?;
    let max = host_mask(cidr.prefix, cidr.bits);
    let err = || format!("prefix of {} does not accommodate a host numbered {hostnum}", cidr.prefix);
    let offset = if hostnum >= 0 {
        let h = u128::from(hostnum.unsigned_abs());
        if h > max {
            return Err(err());
        }
        h
    } else {
        // -1 is the last address of the range, -2 the one before it, ...
        let back = u128::from(hostnum.unsigned_abs()) - 1;
        if back > max {
            return Err(err());
        }
        max - back
    };
    Ok(Value::String(format_addr(cidr.addr | offset, cidr.bits)))
}

fn fn_cidrnetmask(args: FuncArgs) -> FnResult {
    let s = str_arg(&args, 0, "prefix")?;
    let cidr = parse_cidr(&s)?;
    if cidr.bits != 32 {
        return Err(format!("IPv6 addresses cannot have a netmask: {s}"));
    }
    Ok(Value::String(format_addr(net_mask(cidr.prefix, 32), 32)))
}

// ---------------------------------------------------------------------------------------------
// try / can
// ---------------------------------------------------------------------------------------------

/// Plain-evaluation fallback: all arguments already evaluated successfully, so the first wins.
fn fn_try_fallback(args: FuncArgs) -> FnResult {
    args.first().cloned().ok_or_else(|| "at least one argument is required".to_owned())
}

/// Plain-evaluation fallback: the argument evaluated successfully.
fn fn_can_fallback(_args: FuncArgs) -> FnResult {
    Ok(Value::Bool(true))
}

fn is_try_or_can(name: &FuncName) -> bool {
    name.namespace.is_empty() && matches!(name.name.as_str(), "try" | "can")
}

/// Returns `true` if `expr` contains a `try(...)` or `can(...)` call anywhere (including inside
/// string templates), i.e. if it needs [`eval_try`] to get Terraform's semantics.
pub fn contains_try_or_can(expr: &Expression) -> bool {
    match expr {
        Expression::FuncCall(call) => is_try_or_can(&call.name) || call.args.iter().any(contains_try_or_can),
        Expression::Array(items) => items.iter().any(contains_try_or_can),
        Expression::Object(object) => object
            .iter()
            .any(|(k, v)| matches!(k, ObjectKey::Expression(e) if contains_try_or_can(e)) || contains_try_or_can(v)),
        Expression::TemplateExpr(t) => template_expr_contains(t),
        Expression::Traversal(t) => {
            contains_try_or_can(&t.expr)
                || t.operators.iter().any(|op| matches!(op, TraversalOperator::Index(e) if contains_try_or_can(e)))
        }
        Expression::Parenthesis(inner) => contains_try_or_can(inner),
        Expression::Conditional(c) => {
            contains_try_or_can(&c.cond_expr) || contains_try_or_can(&c.true_expr) || contains_try_or_can(&c.false_expr)
        }
        Expression::Operation(op) => match &**op {
            Operation::Unary(u) => contains_try_or_can(&u.expr),
            Operation::Binary(b) => contains_try_or_can(&b.lhs_expr) || contains_try_or_can(&b.rhs_expr),
        },
        Expression::ForExpr(f) => {
            contains_try_or_can(&f.collection_expr)
                || f.key_expr.as_ref().is_some_and(contains_try_or_can)
                || contains_try_or_can(&f.value_expr)
                || f.cond_expr.as_ref().is_some_and(contains_try_or_can)
        }
        _ => false,
    }
}

fn template_expr_contains(t: &TemplateExpr) -> bool {
    let raw = match t {
        TemplateExpr::QuotedString(s) => s.as_str(),
        TemplateExpr::Heredoc(h) => h.template.as_str(),
    };
    if !raw.contains("try") && !raw.contains("can") {
        return false;
    }
    Template::from_expr(t).is_ok_and(|t| template_contains(&t))
}

fn template_contains(t: &Template) -> bool {
    t.elements().iter().any(|el| match el {
        Element::Literal(_) => false,
        Element::Interpolation(i) => contains_try_or_can(&i.expr),
        Element::Directive(d) => match &**d {
            Directive::If(d) => if_directive_contains(d),
            Directive::For(d) => for_directive_contains(d),
        },
    })
}

fn if_directive_contains(d: &IfDirective) -> bool {
    contains_try_or_can(&d.cond_expr)
        || template_contains(&d.true_template)
        || d.false_template.as_ref().is_some_and(template_contains)
}

fn for_directive_contains(d: &ForDirective) -> bool {
    contains_try_or_can(&d.collection_expr) || template_contains(&d.template)
}

/// Evaluates `expr` like [`Evaluate::evaluate`], but with Terraform's `try`/`can` semantics.
///
/// `try(a, b, ...)` returns the value of the first argument that evaluates without error (and
/// fails with all collected errors when none does); `can(x)` returns whether `x` evaluates
/// without error. Expressions without `try`/`can` are passed to `hcl-rs` unchanged, so this is
/// a drop-in replacement for `expr.evaluate(ctx)`. `ctx` must have the functions declared by
/// [`declare_terraform_functions`] (and any variables) just like for plain evaluation.
pub fn eval_try(expr: &Expression, ctx: &Context<'_>) -> Result<Value, Error> {
    if !contains_try_or_can(expr) {
        return expr.evaluate(ctx);
    }
    let lit = |e: &Expression| eval_try(e, ctx).map(Expression::from);
    match expr {
        Expression::FuncCall(call) => eval_func_call(call, ctx),
        Expression::Parenthesis(inner) => eval_try(inner, ctx),
        Expression::Array(items) => {
            items.iter().map(|e| eval_try(e, ctx)).collect::<Result<Vec<_>, _>>().map(Value::Array)
        }
        Expression::Object(object) => {
            let mut resolved = hcl::expr::Object::new();
            for (k, v) in object {
                let key = match k {
                    ObjectKey::Expression(e) => ObjectKey::Expression(lit(e)?),
                    other => other.clone(),
                };
                resolved.insert(key, lit(v)?);
            }
            Expression::Object(resolved).evaluate(ctx)
        }
        Expression::TemplateExpr(t) => eval_template_expr(t, ctx),
        Expression::Traversal(t) => {
            let mut resolved: Traversal = (**t).clone();
            resolved.expr = lit(&t.expr)?;
            for op in &mut resolved.operators {
                if let TraversalOperator::Index(e) = op {
                    *e = lit(e)?;
                }
            }
            Expression::Traversal(Box::new(resolved)).evaluate(ctx)
        }
        Expression::Conditional(c) => match eval_try(&c.cond_expr, ctx)? {
            Value::Bool(true) => eval_try(&c.true_expr, ctx),
            Value::Bool(false) => eval_try(&c.false_expr, ctx),
            other => Err(ErrorKind::Unexpected(other, "a boolean").into()),
        },
        Expression::Operation(op) => {
            let resolved = match &**op {
                Operation::Unary(u) => {
                    let mut u = u.clone();
                    u.expr = lit(&u.expr)?;
                    Operation::Unary(u)
                }
                Operation::Binary(b) => {
                    let mut b = b.clone();
                    b.lhs_expr = lit(&b.lhs_expr)?;
                    b.rhs_expr = lit(&b.rhs_expr)?;
                    Operation::Binary(b)
                }
            };
            Expression::Operation(Box::new(resolved)).evaluate(ctx)
        }
        Expression::ForExpr(f) => eval_for_expr(f, ctx),
        other => other.evaluate(ctx),
    }
}

fn eval_func_call(call: &FuncCall, ctx: &Context<'_>) -> Result<Value, Error> {
    if is_try_or_can(&call.name) && !call.expand_final {
        let func_err = |msg: String| Error::from(ErrorKind::FuncCall(call.name.clone(), msg));
        if call.name.name.as_str() == "can" {
            let [arg] = call.args.as_slice() else {
                return Err(func_err(format!("expected 1 positional argument, got {}", call.args.len())));
            };
            return Ok(Value::Bool(eval_try(arg, ctx).is_ok()));
        }
        if call.args.is_empty() {
            return Err(func_err("at least one argument is required".to_owned()));
        }
        let mut failures = Vec::with_capacity(call.args.len());
        for arg in &call.args {
            match eval_try(arg, ctx) {
                Ok(v) => return Ok(v),
                Err(e) => failures.push(format!("- {e}")),
            }
        }
        return Err(func_err(format!("no expression succeeded:\n{}", failures.join("\n"))));
    }
    let mut resolved = call.clone();
    for arg in &mut resolved.args {
        *arg = Expression::from(eval_try(arg, ctx)?);
    }
    Expression::FuncCall(Box::new(resolved)).evaluate(ctx)
}

fn collection_items(v: Value) -> Result<Vec<(Value, Value)>, Error> {
    match v {
        Value::Array(items) => Ok(items.into_iter().enumerate().map(|(i, v)| (Value::from(i), v)).collect()),
        Value::Object(map) => Ok(map.into_iter().map(|(k, v)| (Value::from(k), v)).collect()),
        other => Err(ErrorKind::Unexpected(other, "an array or object").into()),
    }
}

fn eval_for_expr(f: &ForExpr, ctx: &Context<'_>) -> Result<Value, Error> {
    let items = collection_items(eval_try(&f.collection_expr, ctx)?)?;
    let mut child = ctx.clone();
    let mut object = Map::new();
    let mut array = Vec::new();
    for (k, v) in items {
        if let Some(key_var) = &f.key_var {
            child.declare_var(key_var.clone(), k);
        }
        child.declare_var(f.value_var.clone(), v);
        if let Some(cond) = &f.cond_expr {
            match eval_try(cond, &child)? {
                Value::Bool(true) => {}
                Value::Bool(false) => continue,
                other => return Err(ErrorKind::Unexpected(other, "a boolean").into()),
            }
        }
        let Some(key_expr) = &f.key_expr else {
            array.push(eval_try(&f.value_expr, &child)?);
            continue;
        };
        let key = match eval_try(key_expr, &child)? {
            Value::String(s) => s,
            Value::Bool(b) => b.to_string(),
            Value::Number(n) => n.to_string(),
            other => {
                return Err(ErrorKind::Unexpected(other, "a string, boolean or number").into());
            }
        };
        let value = eval_try(&f.value_expr, &child)?;
        if f.grouping {
            if let Value::Array(group) = object.entry(key).or_insert_with(|| Value::Array(Vec::new())) {
                group.push(value);
            }
        } else if object.contains_key(&key) {
            return Err(ErrorKind::KeyExists(key).into());
        } else {
            object.insert(key, value);
        }
    }
    Ok(if f.key_expr.is_some() { Value::Object(object) } else { Value::Array(array) })
}

fn eval_template_expr(t: &TemplateExpr, ctx: &Context<'_>) -> Result<Value, Error> {
    let template = Template::from_expr(t)?;
    // Interpolation unwrapping: `"${expr}"` yields the value of `expr` itself.
    if let [Element::Interpolation(interp)] = template.elements() {
        return eval_try(&interp.expr, ctx);
    }
    resolve_template(&template, ctx)?.evaluate(ctx).map(Value::String)
}

/// Returns a copy of `t` in which every part containing `try`/`can` has been evaluated.
fn resolve_template(t: &Template, ctx: &Context<'_>) -> Result<Template, Error> {
    let mut out = t.clone();
    for el in out.elements_mut() {
        let replacement = match &*el {
            Element::Literal(_) => None,
            Element::Interpolation(interp) if contains_try_or_can(&interp.expr) => {
                let value = eval_try(&interp.expr, ctx)?;
                Some(Element::Interpolation(Interpolation::new(Expression::from(value)).with_strip(interp.strip)))
            }
            Element::Interpolation(_) => None,
            Element::Directive(dir) => match &**dir {
                Directive::If(d) if if_directive_contains(d) => {
                    let cond = eval_try(&d.cond_expr, ctx)?;
                    let mut d = d.clone();
                    match cond {
                        Value::Bool(true) => {
                            d.true_template = resolve_template(&d.true_template, ctx)?;
                        }
                        Value::Bool(false) => {
                            if let Some(f) = &d.false_template {
                                d.false_template = Some(resolve_template(f, ctx)?);
                            }
                        }
                        _ => {} // hcl-rs reports the non-boolean condition
                    }
                    d.cond_expr = Expression::from(cond);
                    Some(Element::Directive(Box::new(Directive::If(d))))
                }
                Directive::For(d) if for_directive_contains(d) => {
                    let rendered = render_for_directive(d, ctx)?;
                    let strip = Strip::from((d.for_strip.strip_start(), d.endfor_strip.strip_end()));
                    Some(Element::Interpolation(Interpolation::new(Expression::String(rendered)).with_strip(strip)))
                }
                _ => None,
            },
        };
        if let Some(new) = replacement {
            *el = new;
        }
    }
    Ok(out)
}

/// Renders a template `%{for}` directive, resolving `try`/`can` per iteration.
fn render_for_directive(d: &ForDirective, ctx: &Context<'_>) -> Result<String, Error> {
    let items = collection_items(eval_try(&d.collection_expr, ctx)?)?;
    let body = strip_template_edges(&d.template, d.for_strip, d.endfor_strip);
    let mut child = ctx.clone();
    let mut out = String::new();
    for (k, v) in items {
        if let Some(key_var) = &d.key_var {
            child.declare_var(key_var.clone(), k);
        }
        child.declare_var(d.value_var.clone(), v);
        out.push_str(&resolve_template(&body, &child)?.evaluate(&child)?);
    }
    Ok(out)
}

/// Applies the strip markers of the enclosing directive to the body's first and last literal
/// (mirrors `hcl-rs`'s template evaluation).
fn strip_template_edges(t: &Template, prev: Strip, next: Strip) -> Template {
    fn is_space(c: char) -> bool {
        c.is_whitespace() && c != '\r' && c != '\n'
    }
    let mut out = t.clone();
    let elements = out.elements_mut();
    let last = elements.len().saturating_sub(1);
    if prev.strip_end()
        && let Some(Element::Literal(lit)) = elements.first_mut()
    {
        let s = lit.trim_start_matches(is_space);
        let s = s.strip_prefix("\r\n").or_else(|| s.strip_prefix('\n')).unwrap_or(s);
        *lit = s.to_owned();
    }
    if next.strip_start()
        && let Some(Element::Literal(lit)) = elements.get_mut(last)
    {
        let s = lit.trim_end_matches(is_space);
        let s = s.strip_suffix("\r\n").or_else(|| s.strip_suffix('\n')).unwrap_or(s);
        *lit = s.to_owned();
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

// ---------------------------------------------------------------------------------------------
// The rest of the pure functions
// ---------------------------------------------------------------------------------------------

fn fn_signum(args: FuncArgs) -> FnResult {
    let n = f64_of(&num_arg(&args, 0, "num")?);
    num_value(if n > 0.0 {
        1.0
    } else if n < 0.0 {
        -1.0
    } else {
        0.0
    })
}

fn fn_pow(args: FuncArgs) -> FnResult {
    num_value(f64_of(&num_arg(&args, 0, "num")?).powf(f64_of(&num_arg(&args, 1, "power")?)))
}

fn fn_log(args: FuncArgs) -> FnResult {
    num_value(f64_of(&num_arg(&args, 0, "num")?).log(f64_of(&num_arg(&args, 1, "base")?)))
}

fn fn_parseint(args: FuncArgs) -> FnResult {
    let s = str_arg(&args, 0, "number")?;
    let base = int_arg(&args, 1, "base")?;
    if !(2..=62).contains(&base) {
        return Err(arg_err("base", "must be between 2 and 62"));
    }
    let n = i64::from_str_radix(&s, base as u32).map_err(|_| format!("cannot parse {s:?} as a base {base} integer"))?;
    Ok(Value::from(n))
}

fn fn_indent(args: FuncArgs) -> FnResult {
    let spaces = " ".repeat(usize::try_from(int_arg(&args, 0, "spaces")?).map_err(|_| arg_err("spaces", "negative"))?);
    let s = str_arg(&args, 1, "str")?;
    Ok(Value::String(s.replace('\n', &format!("\n{spaces}"))))
}

fn fn_strcontains(args: FuncArgs) -> FnResult {
    Ok(Value::Bool(str_arg(&args, 0, "str")?.contains(&str_arg(&args, 1, "substr")?)))
}

fn bools(args: &[Value], name: &str) -> Result<Vec<bool>, FnError> {
    list_arg(args, 0, name)?
        .iter()
        .map(|v| match v {
            Value::Bool(b) => Ok(*b),
            Value::String(s) if s == "true" || s == "false" => Ok(s == "true"),
            other => Err(bad_arg(name, FnError::Element { expected: "bool", got: type_name(other) })),
        })
        .collect()
}

fn fn_alltrue(args: FuncArgs) -> FnResult {
    Ok(Value::Bool(bools(&args, "list")?.iter().all(|b| *b)))
}

fn fn_anytrue(args: FuncArgs) -> FnResult {
    Ok(Value::Bool(bools(&args, "list")?.iter().any(|b| *b)))
}

fn fn_chunklist(args: FuncArgs) -> FnResult {
    let list = list_arg(&args, 0, "list")?;
    let size = int_arg(&args, 1, "size")?;
    if size < 0 {
        return Err(arg_err("size", "the size argument must be positive"));
    }
    if size == 0 {
        return Ok(Value::Array(vec![Value::Array(list.to_vec())]));
    }
    Ok(Value::Array(list.chunks(size as usize).map(|c| Value::Array(c.to_vec())).collect()))
}

fn fn_one(args: FuncArgs) -> FnResult {
    match list_arg(&args, 0, "list")? {
        [] => Ok(Value::Null),
        [one] => Ok(one.clone()),
        more => {
            Err(format!("must be a list, set, or tuple value with either zero or one elements, not {}", more.len()))
        }
    }
}

fn fn_reverse(args: FuncArgs) -> FnResult {
    Ok(Value::Array(list_arg(&args, 0, "list")?.iter().rev().cloned().collect()))
}

fn fn_sort(args: FuncArgs) -> FnResult {
    let mut items: Vec<String> = list_arg(&args, 0, "list")?
        .iter()
        .map(value_to_string)
        .collect::<Result<_, _>>()
        .map_err(|e| arg_err("list", e))?;
    items.sort();
    Ok(Value::Array(items.into_iter().map(Value::String).collect()))
}

fn set_of(v: &Value, name: &str) -> Result<Vec<Value>, FnError> {
    match v {
        Value::Array(items) => Ok(dedup(items.clone())),
        other => Err(bad_arg(name, FnError::Element { expected: "set", got: type_name(other) })),
    }
}

/// A set as Terraform shows it: strings in lexical order, other elements as they came.
fn set_value(mut items: Vec<Value>) -> Value {
    if items.iter().all(|v| matches!(v, Value::String(_))) {
        items.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
    }
    Value::Array(items)
}

fn fn_setunion(args: FuncArgs) -> FnResult {
    let mut out = Vec::new();
    for (i, v) in args.iter().enumerate() {
        out.extend(set_of(v, &format!("sets[{i}]"))?);
    }
    Ok(set_value(dedup(out)))
}

fn fn_setintersection(args: FuncArgs) -> FnResult {
    let mut sets = args.iter().enumerate().map(|(i, v)| set_of(v, &format!("sets[{i}]")));
    let mut out = sets.next().unwrap_or(Ok(Vec::new()))?;
    for set in sets {
        let set = set?;
        out.retain(|v| set.contains(v));
    }
    Ok(set_value(out))
}

fn fn_setsubtract(args: FuncArgs) -> FnResult {
    let a = set_of(arg(&args, 0, "a")?, "a")?;
    let b = set_of(arg(&args, 1, "b")?, "b")?;
    Ok(set_value(a.into_iter().filter(|v| !b.contains(v)).collect()))
}

/// Go's `filepath.Base` on a slash-separated path.
fn fn_basename(args: FuncArgs) -> FnResult {
    let path = str_arg(&args, 0, "path")?;
    let trimmed = path.trim_end_matches('/');
    Ok(Value::String(match trimmed {
        "" if path.is_empty() => ".".into(),
        "" => "/".into(),
        t => t.rsplit('/').next().unwrap_or(t).to_string(),
    }))
}

/// Go's `filepath.Dir` on a slash-separated path.
fn fn_dirname(args: FuncArgs) -> FnResult {
    let path = str_arg(&args, 0, "path")?;
    Ok(Value::String(match path.rfind('/') {
        None => ".".into(),
        Some(0) => "/".into(),
        Some(i) => path[..i].trim_end_matches('/').to_string(),
    }))
}

fn fn_identity(args: FuncArgs) -> FnResult {
    Ok(arg(&args, 0, "value")?.clone())
}

/// Go's `url.QueryEscape`.
fn fn_urlencode(args: FuncArgs) -> FnResult {
    let s = str_arg(&args, 0, "str")?;
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => out.push(b as char),
            b' ' => out.push('+'),
            _ => {
                let _ = write!(out, "%{b:02X}");
            }
        }
    }
    Ok(Value::String(out))
}

/// Consecutive subnets of the given extra prefix lengths, each aligned after the previous one.
fn fn_cidrsubnets(args: FuncArgs) -> FnResult {
    let base = parse_cidr(&str_arg(&args, 0, "prefix")?)?;
    let mut next: u128 = base.addr;
    let mut out = Vec::new();
    for i in 1..args.len() {
        let newbits =
            u32::try_from(int_arg(&args, i, "newbits")?).map_err(|_| arg_err("newbits", "must not be negative"))?;
        let prefix = base.prefix + newbits;
        if prefix > base.bits {
            return Err(format!("would extend prefix to {prefix} bits, which is too long for this address"));
        }
        let size: u128 = 1u128 << (base.bits - prefix);
        let start = next.div_ceil(size) * size;
        let end = start + size - 1;
        if end > base.addr | host_mask(base.prefix, base.bits) {
            return Err(format!("not enough remaining address space for a subnet with a prefix of {prefix} bits"));
        }
        out.push(Value::String(format!("{}/{prefix}", format_addr(start, base.bits))));
        next = end + 1;
    }
    Ok(Value::Array(out))
}

fn compile_pattern(pattern: &str) -> Result<regex::Regex, FnError> {
    regex::Regex::new(pattern).map_err(|e| bad_arg("pattern", e.into()))
}

/// The value of one match: the whole match with no groups, a list of the groups, or an object of
/// them when every group is named.
fn match_value(re: &regex::Regex, caps: &regex::Captures<'_>) -> Value {
    let groups = re.captures_len() - 1;
    if groups == 0 {
        return Value::String(caps.get(0).map(|m| m.as_str().to_string()).unwrap_or_default());
    }
    let text = |i: usize| caps.get(i).map(|m| Value::String(m.as_str().to_string())).unwrap_or(Value::Null);
    let names: Vec<Option<&str>> = re.capture_names().skip(1).collect();
    if names.iter().all(Option::is_some) {
        Value::Object(names.iter().enumerate().map(|(i, n)| (n.unwrap_or_default().to_string(), text(i + 1))).collect())
    } else {
        Value::Array((1..=groups).map(text).collect())
    }
}

fn fn_regex(args: FuncArgs) -> FnResult {
    let re = compile_pattern(&str_arg(&args, 0, "pattern")?)?;
    let string = str_arg(&args, 1, "string")?;
    let caps = re.captures(&string).ok_or_else(|| "pattern did not match any part of the given string".to_string())?;
    Ok(match_value(&re, &caps))
}

fn fn_regexall(args: FuncArgs) -> FnResult {
    let re = compile_pattern(&str_arg(&args, 0, "pattern")?)?;
    let string = str_arg(&args, 1, "string")?;
    Ok(Value::Array(re.captures_iter(&string).map(|caps| match_value(&re, &caps)).collect()))
}

fn fn_matchkeys(args: FuncArgs) -> FnResult {
    let values = list_arg(&args, 0, "values")?;
    let keys = list_arg(&args, 1, "keys")?;
    let searchset = list_arg(&args, 2, "searchset")?;
    if values.len() != keys.len() {
        return Err("length of keys and values should be equal".into());
    }
    Ok(Value::Array(values.iter().zip(keys).filter(|(_, k)| searchset.contains(k)).map(|(v, _)| v.clone()).collect()))
}

fn fn_setproduct(args: FuncArgs) -> FnResult {
    if args.len() < 2 {
        return Err("at least two arguments are required".into());
    }
    let mut out: Vec<Vec<Value>> = vec![Vec::new()];
    for (i, v) in args.iter().enumerate() {
        let items = match v {
            Value::Array(items) => items.clone(),
            other => return Err(arg_err(&format!("sets[{i}]"), format!("a {} is not a set", type_name(other)))),
        };
        out = out
            .into_iter()
            .flat_map(|prefix| {
                items.iter().map(move |item| {
                    let mut next = prefix.clone();
                    next.push(item.clone());
                    next
                })
            })
            .collect();
    }
    Ok(Value::Array(out.into_iter().map(Value::Array).collect()))
}

fn fn_transpose(args: FuncArgs) -> FnResult {
    let map = map_arg(&args, 0, "values")?;
    let mut out: std::collections::BTreeMap<String, Vec<String>> = std::collections::BTreeMap::new();
    for (key, list) in map {
        let Value::Array(items) = list else {
            return Err(arg_err("values", "a map of lists of strings is required"));
        };
        for item in items {
            let Value::String(s) = item else { return Err(arg_err("values", "a map of lists of strings is required")) };
            out.entry(s.clone()).or_default().push(key.clone());
        }
    }
    Ok(Value::Object(
        out.into_iter()
            .map(|(k, mut v)| {
                v.sort();
                (k, Value::Array(v.into_iter().map(Value::String).collect()))
            })
            .collect(),
    ))
}

/// An RFC 3339 timestamp, as Terraform's `timeadd`/`timecmp` take them.
fn timestamp_arg(args: &[Value], i: usize, name: &str) -> Result<chrono::DateTime<chrono::FixedOffset>, FnError> {
    let text = str_arg(args, i, name)?;
    chrono::DateTime::parse_from_rfc3339(&text).map_err(|e| bad_arg(name, e.into()))
}

/// A Go duration (`"1h30m"`, `"-10s"`, `"1.5h"`) in nanoseconds.
fn go_duration(text: &str) -> Option<i64> {
    let (sign, mut rest) = match text.strip_prefix('-') {
        Some(r) => (-1.0, r),
        None => (1.0, text.strip_prefix('+').unwrap_or(text)),
    };
    if rest == "0" {
        return Some(0);
    }
    let mut total = 0.0_f64;
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
        let number: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit_len = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "ns" => 1.0,
            "us" | "µs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        total += number * scale;
        rest = &rest[unit_len..];
    }
    Some((sign * total) as i64)
}

fn fn_timeadd(args: FuncArgs) -> FnResult {
    let time = timestamp_arg(&args, 0, "timestamp")?;
    let text = str_arg(&args, 1, "duration")?;
    let nanos = go_duration(&text).ok_or_else(|| arg_err("duration", format!("invalid duration {text:?}")))?;
    let sum = time + chrono::Duration::nanoseconds(nanos);
    Ok(Value::String(sum.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true).replace("+00:00", "Z")))
}

fn fn_timecmp(args: FuncArgs) -> FnResult {
    let a = timestamp_arg(&args, 0, "timestamp_a")?;
    let b = timestamp_arg(&args, 1, "timestamp_b")?;
    Ok(Value::from(match a.cmp(&b) {
        std::cmp::Ordering::Less => -1,
        std::cmp::Ordering::Equal => 0,
        std::cmp::Ordering::Greater => 1,
    }))
}

/// Values here carry no sensitivity marks.
fn fn_issensitive(_args: FuncArgs) -> FnResult {
    Ok(Value::Bool(false))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn context() -> Context<'static> {
        let mut ctx = Context::new();
        declare_terraform_functions(&mut ctx);
        ctx.declare_var("m", Value::from_iter([("a", Value::from(1)), ("b", Value::from("x"))]));
        ctx.declare_var("l", Value::from_iter(["a", "b", "c"]));
        ctx
    }

    fn parse_expr(src: &str) -> Expression {
        let body = hcl::parse(&format!("x = {src}\n")).unwrap_or_else(|e| panic!("cannot parse {src:?}: {e}"));
        body.attributes().next().expect("attribute x").expr.clone()
    }

    fn eval(src: &str) -> Result<Value, Error> {
        eval_try(&parse_expr(src), &context())
    }

    /// Normalizes numbers so that `2.0` and `2` compare equal.
    fn normalize(v: serde_json::Value) -> serde_json::Value {
        match v {
            serde_json::Value::Number(n) => match n.as_f64() {
                Some(f) if f.fract() == 0.0 && f.abs() < 1e15 => json!(f as i64),
                _ => serde_json::Value::Number(n),
            },
            serde_json::Value::Array(a) => serde_json::Value::Array(a.into_iter().map(normalize).collect()),
            serde_json::Value::Object(o) => {
                serde_json::Value::Object(o.into_iter().map(|(k, v)| (k, normalize(v))).collect())
            }
            other => other,
        }
    }

    fn check(src: &str, expected: serde_json::Value) {
        let value = eval(src).unwrap_or_else(|e| panic!("{src}: unexpected error: {e}"));
        let actual = serde_json::to_value(&value).expect("serialize value");
        assert_eq!(normalize(actual), normalize(expected), "expression: {src}");
    }

    fn check_err(src: &str, needle: &str) {
        match eval(src) {
            Ok(v) => panic!("{src}: expected an error containing {needle:?}, got {v}"),
            Err(e) => assert!(e.to_string().contains(needle), "{src}: error {e:?} does not contain {needle:?}"),
        }
    }

    #[test]
    fn merge() {
        check("merge({a=1},{b=2})", json!({"a": 1, "b": 2}));
        check("merge({a=1, b=1},{b=2}, null)", json!({"a": 1, "b": 2}));
        check("merge()", json!({}));
        check_err("merge({a=1}, [1])", "maps or objects");
    }

    #[test]
    fn lookup() {
        check("lookup({a=1}, \"a\")", json!(1));
        check("lookup({a=1}, \"b\", \"dflt\")", json!("dflt"));
        check("lookup(m, \"b\", 0)", json!("x"));
        check_err("lookup({a=1}, \"b\")", "lookup failed to find key \"b\"");
        check_err("lookup({a=1}, \"b\", 1, 2)", "expected 2 or 3 arguments");
        check_err("lookup({a=1})", "expected 2 positional arguments");
    }

    #[test]
    fn concat() {
        check("concat([1,2],[3],[])", json!([1, 2, 3]));
        check_err("concat()", "at least one argument");
        check_err("concat([1], \"a\")", "lists or tuples");
    }

    #[test]
    fn format() {
        check("format(\"Hello, %s!\", \"Ander\")", json!("Hello, Ander!"));
        check("format(\"%d items\", 3)", json!("3 items"));
        check("format(\"%5d|%-5d|%05d\", 42, 42, -42)", json!("   42|42   |-0042"));
        check("format(\"%.2f\", 3.14159)", json!("3.14"));
        check("format(\"%8.3f\", 3.14159)", json!("   3.142"));
        check("format(\"%v %v %v\", \"a\", 1.5, true)", json!("a 1.5 true"));
        check("format(\"%v\", [1, \"a\"])", json!("[1,\"a\"]"));
        check("format(\"%#v\", {a=1})", json!("{\"a\":1}"));
        check("format(\"%q\", \"a\\\"b\")", json!("\"a\\\"b\""));
        check("format(\"100%%\")", json!("100%"));
        check("format(\"%x %X %o %b\", 255, 255, 8, 5)", json!("ff FF 10 101"));
        check("format(\"%e\", 1234.5678)", json!("1.234568e+03"));
        check("format(\"%g %g\", 0.5, 1000000)", json!("0.5 1e+06"));
        check("format(\"%t\", true)", json!("true"));
        check("format(\"%+d\", 5)", json!("+5"));
        check("format(\"%[2]s %[1]s\", \"a\", \"b\")", json!("b a"));
        check("format(\"%s\", 12)", json!("12"));
        check("format(\"%.3s\", \"abcdef\")", json!("abc"));
        check("format(\"%d\", \"12\")", json!("12"));
        check_err("format(\"%d\", 1.5)", "not a whole number");
        check_err("format(\"%s %s\", \"a\")", "not enough arguments");
        check_err("format(\"%s\", \"a\", \"b\")", "too many arguments");
        check_err("format(\"%s\", null)", "null value cannot be formatted");
        check_err("format(\"%s\", [1])", "string required");
    }

    #[test]
    fn formatlist() {
        check("formatlist(\"Hello, %s!\", [\"Valentina\", \"Ander\"])", json!(["Hello, Valentina!", "Hello, Ander!"]));
        check("formatlist(\"%s=%d\", [\"a\", \"b\"], [1, 2])", json!(["a=1", "b=2"]));
        check("formatlist(\"%s-%s\", \"x\", [\"a\", \"b\"])", json!(["x-a", "x-b"]));
        check("formatlist(\"%s\", [])", json!([]));
        check("formatlist(\"%s\", \"a\")", json!(["a"]));
        check_err("formatlist(\"%s%s\", [\"a\"], [\"b\", \"c\"])", "inconsistent");
    }

    #[test]
    fn case_functions() {
        check("lower(\"HELLO\")", json!("hello"));
        check("upper(\"hello\")", json!("HELLO"));
        check("title(\"hello world-foo_bar\")", json!("Hello World-Foo_bar"));
        check("upper(5)", json!("5"));
        check_err("lower([1])", "string required");
        check_err("lower(null)", "must not be null");
    }

    #[test]
    fn trimming() {
        check("trimspace(\"  hello\\n\")", json!("hello"));
        check("trim(\"?!hello?!\", \"!?\")", json!("hello"));
        check("trimprefix(\"helloworld\", \"hello\")", json!("world"));
        check("trimprefix(\"helloworld\", \"cat\")", json!("helloworld"));
        check("trimsuffix(\"helloworld\", \"world\")", json!("hello"));
        check_err("trim(\"a\")", "expected 2 positional arguments");
    }

    #[test]
    fn join_split() {
        check("join(\", \", [\"foo\", \"bar\", \"baz\"])", json!("foo, bar, baz"));
        check("join(\"-\", [\"a\"], [1, true])", json!("a-1-true"));
        check("join(\",\", [])", json!(""));
        check_err("join(\",\")", "at least one list");
        check_err("join(\",\", [null])", "null");
        check("split(\",\", \"foo,bar,baz\")", json!(["foo", "bar", "baz"]));
        check("split(\",\", \"\")", json!([""]));
        check("split(\"\", \"abc\")", json!(["a", "b", "c"]));
    }

    #[test]
    fn replace() {
        check("replace(\"1 + 2 + 3\", \"+\", \"-\")", json!("1 - 2 - 3"));
        check("replace(\"hello world\", \"/w.*d/\", \"everybody\")", json!("hello everybody"));
        check("replace(\"a1b22\", \"/([a-z])(\\\\d+)/\", \"$2$1\")", json!("1a22b"));
        check("replace(\"/\", \"/\", \"x\")", json!("x"));
        check_err("replace(\"a\", \"/(/\", \"x\")", "invalid regular expression");
    }

    #[test]
    fn substr() {
        check("substr(\"hello world\", 1, 4)", json!("ello"));
        check("substr(\"hello world\", -5, -1)", json!("world"));
        check("substr(\"hello\", 2, 100)", json!("llo"));
        check("substr(\"hello\", 10, 2)", json!(""));
        check("substr(\"héllo\", 0, 2)", json!("hé"));
        check_err("substr(\"hello\", 1.5, 1)", "whole number");
    }

    #[test]
    fn conversions() {
        check("tomap({a=1, b=\"x\"})", json!({"a": "1", "b": "x"}));
        check("tomap(null)", json!(null));
        check_err("tomap([1])", "cannot convert tuple to map");
        check("tolist([\"a\", 1, true])", json!(["a", "1", "true"]));
        check_err("tolist([1, true])", "cannot convert");
        check_err("tolist(\"a\")", "cannot convert string to list");
        check("toset([\"b\", \"a\", \"b\", 1, \"1\"])", json!(["b", "a", "1"]));
        check("tostring(1.5)", json!("1.5"));
        check("tostring(true)", json!("true"));
        check("tostring(null)", json!(null));
        check_err("tostring([])", "cannot convert tuple to string");
        check("tonumber(\"42\")", json!(42));
        check("tonumber(\"-1.5\")", json!(-1.5));
        check("tonumber(7)", json!(7));
        check_err("tonumber(\"abc\")", "cannot convert \"abc\" to number");
        check_err("tonumber(\"inf\")", "cannot convert");
        check("tobool(\"true\")", json!(true));
        check("tobool(false)", json!(false));
        check_err("tobool(\"yes\")", "cannot convert \"yes\" to bool");
    }

    #[test]
    fn coalesce() {
        check("coalesce(\"\", null, \"b\", \"c\")", json!("b"));
        check("coalesce(null, 1, 2)", json!(1));
        check("coalesce(\"\", 1)", json!("1"));
        check_err("coalesce(null, \"\")", "no non-null, non-empty-string arguments");
        check("coalescelist([], null, [\"a\"], [\"b\"])", json!(["a"]));
        check_err("coalescelist([], [])", "no non-null arguments");
        check_err("coalescelist(\"a\")", "lists or tuples");
    }

    #[test]
    fn compact_distinct_flatten() {
        check("compact([\"a\", \"\", null, \"b\"])", json!(["a", "b"]));
        check("distinct([\"a\", \"b\", \"a\", \"c\", \"b\"])", json!(["a", "b", "c"]));
        check("flatten([[\"a\", \"b\"], [], [\"c\", [\"d\"]], \"e\"])", json!(["a", "b", "c", "d", "e"]));
        check_err("flatten(\"a\")", "list, tuple or set required");
    }

    #[test]
    fn keys_values_length() {
        check("keys({b=1, a=2, c=3})", json!(["a", "b", "c"]));
        check("values({b=1, a=2, c=3})", json!([2, 1, 3]));
        check_err("keys([1])", "map or object required");
        check("length(\"héllo\")", json!(5));
        check("length([1, 2])", json!(2));
        check("length({a=1})", json!(1));
        check("length(l)", json!(3));
        check_err("length(5)", "argument must be a string");
        check_err("length(null)", "must not be null");
    }

    #[test]
    fn element_index_contains() {
        check("element([\"a\", \"b\", \"c\"], 1)", json!("b"));
        check("element([\"a\", \"b\", \"c\"], 4)", json!("b"));
        check_err("element([], 0)", "empty list");
        check_err("element([1], -1)", "negative index");
        check("index([\"a\", \"b\", \"c\"], \"b\")", json!(1));
        check("index([\"1\", \"2\"], 2)", json!(1));
        check_err("index([\"a\"], \"z\")", "item not found");
        check("contains([\"a\", \"b\"], \"b\")", json!(true));
        check("contains([\"a\", \"b\"], \"z\")", json!(false));
        check("contains([1, 2], 2)", json!(true));
    }

    #[test]
    fn slice_range_zipmap() {
        check("slice([\"a\", \"b\", \"c\", \"d\"], 1, 3)", json!(["b", "c"]));
        check("slice([1], 1, 1)", json!([]));
        check_err("slice([1, 2], 1, 3)", "to index must be <= length");
        check_err("slice([1, 2], 2, 1)", "from index must be <= to index");
        check("range(3)", json!([0, 1, 2]));
        check("range(1, 4)", json!([1, 2, 3]));
        check("range(4, 1)", json!([4, 3, 2]));
        check("range(1, 8, 2)", json!([1, 3, 5, 7]));
        check("range(1, 2, 0.5)", json!([1, 1.5]));
        check("range(10, 5, -2)", json!([10, 8, 6]));
        check("range(0)", json!([]));
        check_err("range(1, 2, 0)", "step must not be zero");
        check_err("range(2000)", "more than 1024 values");
        check_err("range()", "one, two, or three arguments");
        check("zipmap([\"a\", \"b\"], [1, 2])", json!({"a": 1, "b": 2}));
        check_err("zipmap([\"a\"], [1, 2])", "number of keys (1) does not match number of values (2)");
    }

    #[test]
    fn numbers() {
        check("min(12, 54, 3)", json!(3));
        check("max(12, 54, 3)", json!(54));
        check("max(1.5, \"2\")", json!(2));
        check("min([3, 1]...)", json!(1));
        check_err("min()", "at least one number");
        check_err("max(1, \"x\")", "cannot convert");
        check("abs(-12.4)", json!(12.4));
        check("abs(-3)", json!(3));
        check("ceil(5.1)", json!(6));
        check("ceil(-5.1)", json!(-5));
        check("floor(4.9)", json!(4));
        check("floor(-4.1)", json!(-5));
        check_err("abs(\"x\")", "cannot convert");
        check("sum([1, 2, 3.5])", json!(6.5));
        check_err("sum([])", "empty list");
        check("chomp(\"hello\\n\\n\")", json!("hello"));
        check("strrev(\"abc\")", json!("cba"));
    }

    #[test]
    fn json_functions() {
        check(
            "jsonencode({b=[1, 2.5, true, null], a=\"<x>\"})",
            json!("{\"a\":\"\\u003cx\\u003e\",\"b\":[1,2.5,true,null]}"),
        );
        check("jsonencode(\"a\\nb\")", json!("\"a\\nb\""));
        check("jsondecode(\"{\\\"a\\\": [1, 2.5, \\\"x\\\", null]}\")", json!({"a": [1, 2.5, "x", null]}));
        check("jsondecode(\"true\")", json!(true));
        check_err("jsondecode(\"{\")", "invalid JSON");
    }

    #[test]
    fn base64_functions() {
        check("base64encode(\"Hello World\")", json!("SGVsbG8gV29ybGQ="));
        check("base64encode(\"\")", json!(""));
        check("base64encode(\"ab\")", json!("YWI="));
        check("base64decode(\"SGVsbG8gV29ybGQ=\")", json!("Hello World"));
        check("base64decode(\"YWI=\")", json!("ab"));
        check("base64decode(base64encode(\"héllo wörld!?\"))", json!("héllo wörld!?"));
        check_err("base64decode(\"SGVsbG8*\")", "failed to decode base64");
        check_err("base64decode(\"YWI\")", "failed to decode base64");
        check_err("base64decode(\"/w==\")", "not valid UTF-8");
    }

    #[test]
    fn cidr_functions() {
        check("cidrsubnet(\"172.16.0.0/12\", 4, 2)", json!("172.18.0.0/16"));
        check("cidrsubnet(\"10.1.2.0/24\", 4, 15)", json!("10.1.2.240/28"));
        check("cidrsubnet(\"10.1.2.5/24\", 0, 0)", json!("10.1.2.0/24"));
        check("cidrsubnet(\"fd00:fd12:3456:7890::/56\", 16, 162)", json!("fd00:fd12:3456:7800:a200::/72"));
        check_err("cidrsubnet(\"10.0.0.0/30\", 4, 0)", "insufficient address space to extend prefix of 30 by 4");
        check_err("cidrsubnet(\"10.0.0.0/16\", 2, 4)", "does not accommodate a subnet numbered 4");
        check_err("cidrsubnet(\"10.0.0/16\", 2, 1)", "invalid CIDR");
        check("cidrhost(\"10.12.112.0/20\", 16)", json!("10.12.112.16"));
        check("cidrhost(\"10.12.112.0/20\", 268)", json!("10.12.113.12"));
        check("cidrhost(\"10.0.0.0/24\", -1)", json!("10.0.0.255"));
        check("cidrhost(\"fd00:fd12:3456:7890:00a2::/72\", 34)", json!("fd00:fd12:3456:7890::22"));
        check_err("cidrhost(\"10.0.0.0/24\", 256)", "prefix of 24 does not accommodate a host numbered 256");
        check("cidrnetmask(\"172.16.0.0/12\")", json!("255.240.0.0"));
        check("cidrnetmask(\"10.0.0.0/0\")", json!("0.0.0.0"));
        check("cidrnetmask(\"10.0.0.1/32\")", json!("255.255.255.255"));
        check_err("cidrnetmask(\"fd00::/8\")", "IPv6");
    }

    #[test]
    fn starts_ends_with() {
        check("startswith(\"hello world\", \"hello\")", json!(true));
        check("startswith(\"hello world\", \"world\")", json!(false));
        check("endswith(\"hello world\", \"world\")", json!(true));
        check("endswith(\"hello world\", \"hello\")", json!(false));
    }

    #[test]
    fn try_and_can() {
        check("try(m.missing, \"fallback\")", json!("fallback"));
        check("try(m.a, \"fallback\")", json!(1));
        check("try(lookup(m, \"zz\"), tonumber(\"x\"), 3)", json!(3));
        check("try(null, 1)", json!(null));
        check_err("try(m.missing, tonumber(\"x\"))", "no expression succeeded");
        check("can(m.a)", json!(true));
        check("can(m.missing)", json!(false));
        check("can(tonumber(\"x\"))", json!(false));
        check("!can(m.missing)", json!(true));
        check_err("can(1, 2)", "expected 1 positional argument");
        // nested inside other expressions
        check("upper(try(m.missing, \"x\"))", json!("X"));
        check("[for v in [\"1\", \"a\", \"3\"] : try(tonumber(v), -1)]", json!([1, -1, 3]));
        check("{for k, v in m : k => can(tonumber(v))}", json!({"a": true, "b": false}));
        check("[for v in [1, \"a\"] : v if can(tonumber(v))]", json!([1]));
        check("can(m.missing) ? \"yes\" : \"no\"", json!("no"));
        check("try(m.missing, 1) + 1", json!(2));
        check("{ k = try(m.missing, \"d\") }", json!({"k": "d"}));
        check("[try(m.missing, 0)][0]", json!(0));
        check("\"${try(m.missing, \"d\")}\"", json!("d"));
        check("\"v=${try(m.missing, 5)}!\"", json!("v=5!"));
        check("\"%{ if can(m.a) }yes%{ else }no%{ endif }\"", json!("yes"));
        check("\"%{ for v in l ~} ${try(tonumber(v), v)} %{~ endfor }\"", json!("abc"));
        // Without try/can, eval_try is plain evaluation.
        check("1 + 2", json!(3));
    }

    #[test]
    fn try_fallbacks_with_plain_evaluation() {
        let ctx = context();
        let expr = parse_expr("try(m.a, 2)");
        assert_eq!(expr.evaluate(&ctx).expect("evaluates"), Value::from(1));
        let expr = parse_expr("can(m.a)");
        assert_eq!(expr.evaluate(&ctx).expect("evaluates"), Value::Bool(true));
        assert!(!contains_try_or_can(&parse_expr("merge(m, {})")));
        assert!(contains_try_or_can(&parse_expr("\"${try(1, 2)}\"")));
    }

    /// Each expected value is what `terraform console` (1.11) prints for the same expression.
    #[test]
    fn regex_sets_time_and_transposition_give_terraforms_values() {
        // Expected values from `terraform console` (1.11).
        check(r#"regex("[a-z]+", "53453453.345345aaabbbccc23454")"#, json!("aaabbbccc"));
        check(r#"regex("(\\d\\d\\d\\d)-(\\d\\d)-(\\d\\d)", "2019-02-01")"#, json!(["2019", "02", "01"]));
        check(
            r#"regex("^(?:(?P<scheme>[^:/?#]+):)?(?://(?P<authority>[^/?#]*))?", "https://terraform.io/docs/")"#,
            json!({"authority": "terraform.io", "scheme": "https"}),
        );
        assert!(eval(r#"regex("[0-9]+", "abc")"#).is_err());
        check(r#"regexall("[a-z]+", "1234abcd5678efgh9")"#, json!(["abcd", "efgh"]));
        check(
            r#"matchkeys(["i-123", "i-abc", "i-def"], ["us-west", "us-east", "us-east"], ["us-east"])"#,
            json!(["i-abc", "i-def"]),
        );
        check(
            r#"setproduct(["development", "staging"], ["app1", "app2"])"#,
            json!([["development", "app1"], ["development", "app2"], ["staging", "app1"], ["staging", "app2"]]),
        );
        check(r#"transpose({"a" = ["1", "2"], "b" = ["2", "3"]})"#, json!({"1": ["a"], "2": ["a", "b"], "3": ["b"]}));
        check(r#"timeadd("2017-11-22T00:00:00Z", "10m")"#, json!("2017-11-22T00:10:00Z"));
        check(r#"timeadd("2017-11-22T00:00:00Z", "-1h30m")"#, json!("2017-11-21T22:30:00Z"));
        check(r#"timecmp("2017-11-22T00:00:00Z", "2017-11-22T01:00:00+01:00")"#, json!(0));
        check(r#"timecmp("2017-11-22T00:00:00Z", "2017-11-22T00:00:01Z")"#, json!(-1));
        check(r#"issensitive("x")"#, json!(false));
    }

    /// Terraform's documented built-in functions (terraform.io, "Functions", 1.11): each is
    /// declared here or deliberately unknown, and calling an unknown one fails, so whatever reads it
    /// stays symbolic.
    #[test]
    fn every_documented_function_is_declared_or_deliberately_unknown() {
        const DOCUMENTED: &str = "abs ceil floor log max min parseint pow signum chomp endswith format formatlist \
            indent join lower regex regexall replace split startswith strcontains strrev substr templatestring title \
            trim trimprefix trimsuffix trimspace upper alltrue anytrue chunklist coalesce coalescelist compact concat \
            contains distinct element flatten index keys length lookup matchkeys merge one range reverse \
            setintersection setproduct setsubtract setunion slice sort sum transpose values zipmap base64decode \
            base64encode base64gzip csvdecode jsondecode jsonencode textdecodebase64 textencodebase64 urlencode \
            yamldecode yamlencode abspath dirname pathexpand basename file fileexists fileset filebase64 \
            templatefile formatdate plantimestamp timeadd timecmp timestamp base64sha256 base64sha512 bcrypt \
            filebase64sha256 filebase64sha512 filemd5 filesha1 filesha256 filesha512 md5 rsadecrypt sha1 sha256 \
            sha512 uuid uuidv5 cidrhost cidrnetmask cidrsubnet cidrsubnets can issensitive nonsensitive sensitive \
            tobool tolist tomap tonumber toset tostring try type ephemeralasnull";
        let undefined = |name: &str| match eval(&format!("{name}()")) {
            Err(e) => matches!(e.kind(), ErrorKind::UndefinedFunc(_)),
            Ok(_) => false,
        };
        for name in DOCUMENTED.split_whitespace() {
            let unknown = UNKNOWN_BY_DESIGN.contains(&name);
            assert_eq!(undefined(name), unknown, "{name}: declared and listed as unknown, or neither");
        }
        for name in UNKNOWN_BY_DESIGN {
            assert!(DOCUMENTED.split_whitespace().any(|d| d == *name), "{name} is not a Terraform function");
        }
        assert!(undefined("no_such_function"));
    }

    #[test]
    fn the_rest_of_the_pure_functions_give_terraforms_values() {
        check("signum(-3)", json!(-1));
        check("pow(2, 10)", json!(1024));
        check("log(16, 2)", json!(4));
        check("parseint(\"ff\", 16)", json!(255));
        check("indent(2, \"a\\nb\")", json!("a\n  b"));
        check("strcontains(\"hello\", \"ell\")", json!(true));
        check("alltrue([true, \"true\"])", json!(true));
        check("anytrue([])", json!(false));
        check("chunklist([\"a\", \"b\", \"c\"], 2)", json!([["a", "b"], ["c"]]));
        check("one([])", json!(null));
        check("one([\"x\"])", json!("x"));
        check("reverse([1, 2, 3])", json!([3, 2, 1]));
        check("sort([\"b\", \"a\", \"c\"])", json!(["a", "b", "c"]));
        check("setunion([\"b\"], [\"c\", \"a\", \"b\"])", json!(["a", "b", "c"]));
        check("setintersection([\"a\", \"b\"], [\"b\", \"c\"])", json!(["b"]));
        check("setsubtract([\"a\", \"b\"], [\"b\"])", json!(["a"]));
        check("basename(\"foo/bar/baz.txt\")", json!("baz.txt"));
        check("basename(\"/\")", json!("/"));
        check("dirname(\"foo/bar/baz.txt\")", json!("foo/bar"));
        check("dirname(\"baz\")", json!("."));
        check("urlencode(\"Hello World!\")", json!("Hello+World%21"));
        check(
            "cidrsubnets(\"10.1.0.0/16\", 4, 4, 8, 4)",
            json!(["10.1.0.0/20", "10.1.16.0/20", "10.1.32.0/24", "10.1.48.0/20"]),
        );
        check_err("one([1, 2])", "zero or one elements");
        // What depends on the clock, randomness or files stays unknown.
        assert!(eval("timestamp()").is_err());
        assert!(eval("uuid()").is_err());
    }
}
