#!/usr/bin/env python3
"""List import loops between the files of each crate, and exit 1 when there is one.

    scripts/import-cycles.py [CRATE_DIR ...]     (default: every crates/*/ with a src/)
    scripts/import-cycles.py --self-test          (checks the reader on small made-up crates)

A file imports another when its code (test code left out) names an item of it: a `crate::a::b`
path, a `super::x` path, a `self::x` path, or, in a module root (lib.rs, main.rs, mod.rs, x.rs with
an x/ directory), a path that starts with one of its own child modules. A path is read to the
longest module it names; a name that module re-exports (`pub use inner::Thing`) is followed to the
file that defines it. Declaring a module (`mod x;`) is not an import. Files declared under
`#[cfg(test)]` and `#[cfg(test)]` items are left out: tests may reach anywhere.
"""

import re
import sys
from pathlib import Path


def strip_comments_and_strings(text):
    """The code with comments removed and string and char literals emptied, so braces balance."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
        elif (m := re.match(r'b?r(#*)"', text[i:])) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            end = '"' + m.group(1)
            j = text.find(end, i + m.end())
            out.append('""')
            i = n if j < 0 else j + len(end)
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('""')
            i = j + 1
        elif c == "'":
            # A char literal ('a', '\n', '\u{1F600}', '{'), not a lifetime ('a).
            m = re.match(r"'(\\u\{[0-9a-fA-F]+\}|\\.|[^\\'])'", text[i:])
            if m:
                out.append("' '")
                i += m.end()
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def item_end(code, start):
    """Where the item starting at `start` ends: after its `;` or its matching `}`."""
    depth = 0
    for j in range(start, len(code)):
        ch = code[j]
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return j + 1
        elif ch == ";" and depth == 0:
            return j + 1
    return len(code)


def without_tests(code):
    """The code without `#[cfg(test)]` items; and the names of child modules declared for tests."""
    test_mods = set()
    out, i = [], 0
    for m in re.finditer(r"#\[cfg\(test\)\]", code):
        if m.start() < i:
            continue
        out.append(code[i : m.start()])
        rest = code[m.end() :]
        decl = re.match(r"\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", rest)
        if decl:
            test_mods.add(decl.group(1))
        i = item_end(code, m.end())
    out.append(code[i:])
    return "".join(out), test_mods


def module_name(src, path):
    """`a/b.rs` -> `a::b`, `a/mod.rs` -> `a`, `lib.rs`/`main.rs` -> `crate`."""
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts[-1] == "mod":
        parts.pop()
    if parts in (["lib"], ["main"]):
        return "crate"
    return "::".join(parts)


def parent_of(module):
    return module.rsplit("::", 1)[0] if "::" in module else "crate"


def expand_use_tree(tree):
    """`a::{b, c::{d, self}}` -> ['a::b', 'a::c::d', 'a::c']."""
    tree = re.sub(r"\s+", "", re.sub(r"\s+as\s+\w+", "", tree))
    brace = tree.find("{")
    if brace < 0:
        return [tree.removesuffix("::self").removesuffix("::*")]
    head, inner = tree[:brace], tree[brace + 1 : tree.rfind("}")]
    parts, depth, cur = [], 0, ""
    for ch in inner:
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        cur += ch
    parts.append(cur)
    out = []
    for part in filter(None, parts):
        for path in expand_use_tree(part):
            out.append(head.rstrip(":") if path in ("self", "*") else head + path)
    return out


def crate_graph(src):
    files = sorted(src.rglob("*.rs"))
    code, test_only = {}, set()
    for f in files:
        name = module_name(src, f)
        body, test_mods = without_tests(strip_comments_and_strings(f.read_text()))
        code[name] = body
        base = "" if name == "crate" else name + "::"
        test_only |= {base + t for t in test_mods}
    # A file under a test-only module is test code too.
    modules = {m for m in code if not any(m == t or m.startswith(t + "::") for t in test_only)}
    children = {m: {c for c in modules if c != "crate" and parent_of(c) == m} for m in modules}

    # Re-exports: (module, name) -> the path it stands for, resolved like any other path.
    reexports = {}
    paths_of = {}
    for m in modules:
        uses = []
        for stmt in re.finditer(r"\b((?:pub(?:\([^)]*\))?\s+)?)use\s+([^;]+);", code[m]):
            for path in expand_use_tree(stmt.group(2)):
                uses.append(path)
                if stmt.group(1):
                    name = path.rsplit("::", 1)[-1]
                    reexports[(m, name)] = path
        rest = re.sub(r"\buse\s+[^;]+;", "", code[m])
        inline = re.findall(r"(?<![\w:])((?:crate|super|self)(?:::\w+)+)", rest)
        kids = "|".join(sorted(c.rsplit("::", 1)[-1] for c in children[m]))
        if kids:
            inline += re.findall(rf"(?<![\w:])((?:{kids})::\w+(?:::\w+)*)", rest)
        paths_of[m] = uses + inline

    def absolute(module, path):
        """A path as written in `module`, from the crate root (None: another crate's)."""
        segs = path.split("::")
        if segs[0] == "crate":
            return segs[1:]
        if segs[0] in ("super", "self"):
            base = [] if module == "crate" else module.split("::")
            while segs and segs[0] in ("super", "self"):
                if segs.pop(0) == "super":
                    base = base[:-1]
            return base + segs
        here = [] if module == "crate" else module.split("::")
        if "::".join(here + segs[:1]) in children[module]:
            return here + segs
        return None

    def resolve(segs, seen=()):
        """The file that defines what an absolute path names."""
        for k in range(len(segs), -1, -1):
            mod = "::".join(segs[:k]) or "crate"
            if mod in modules:
                rest = segs[k:]
                target = reexports.get((mod, rest[0])) if rest else None
                if target and (mod, rest[0]) not in seen:
                    inner = absolute(mod, target)
                    if inner is None:
                        return None  # another crate's item, re-exported
                    return resolve(inner + rest[1:], seen + ((mod, rest[0]),))
                return mod
        return None

    graph = {m: set() for m in modules}
    for m in modules:
        for path in paths_of[m]:
            segs = absolute(m, path)
            if segs is None:
                continue
            target = resolve(segs)
            if target and target != m:
                graph[m].add(target)
    return graph


def cycles(graph):
    """Every strongly connected set of two or more files, each with one loop through it."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return [(comp, loop_through(graph, comp)) for comp in out]


def loop_through(graph, comp):
    """One loop inside a strongly connected set, from its first file back to it."""
    start, members = comp[0], set(comp)
    prev, queue = {start: None}, [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(graph[v] & members):
            if w == start:
                path = [v]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                return list(reversed(path)) + [start]
            if w not in prev:
                prev[w] = v
                queue.append(w)
    return comp


def self_test():
    """The reader on made-up crates: each case's files, and the loops it must report."""
    import tempfile

    cases = [
        # a and b name each other's items: a loop.
        ({"lib.rs": "mod a;\nmod b;\n", "a.rs": "use crate::b::f;\n", "b.rs": "fn g() { crate::a::h() }\n"},
         [["a", "b"]]),
        # A parent that declares a child, and a child that uses the parent's item: no loop.
        ({"lib.rs": "mod a;\npub struct T;\n", "a.rs": "use crate::T;\n"}, []),
        # ... but a parent that also uses the child's item: a loop.
        ({"lib.rs": "mod a;\npub struct T;\nfn f() { a::g() }\n", "a.rs": "use super::T;\n"}, [["a", "crate"]]),
        # A re-export is followed to the file that defines the item: p/mod.rs re-exports from p/x.rs,
        # and q uses it through p, while p/y.rs uses q: no loop (p/mod.rs is not used by q).
        ({"lib.rs": "mod p;\nmod q;\n", "p/mod.rs": "mod x;\nmod y;\npub use x::X;\nfn f() { y::g() }\n",
          "p/x.rs": "pub struct X;\n", "p/y.rs": "use crate::q::Q;\n", "q.rs": "use crate::p::X;\npub struct Q;\n"},
         []),
        # Test code, comments and strings are not imports.
        ({"lib.rs": "mod a;\nmod b;\n", "a.rs": "use crate::b::f; // crate::x\n",
          "b.rs": "const S: &str = \"crate::a::g\";\n#[cfg(test)]\nmod tests {\n    use crate::a::h;\n}\n"}, []),
        # Groups and super:: paths, across three files.
        ({"lib.rs": "mod m;\n", "m/mod.rs": "mod a;\nmod b;\nmod c;\n", "m/a.rs": "use super::{b::B, c};\n",
          "m/b.rs": "use super::c::C;\n", "m/c.rs": "fn f() { super::a::g() }\n"}, [["m::a", "m::b", "m::c"]]),
    ]
    failed = 0
    for files, want in cases:
        with tempfile.TemporaryDirectory() as tmp:
            src = Path(tmp) / "src"
            for name, text in files.items():
                (src / name).parent.mkdir(parents=True, exist_ok=True)
                (src / name).write_text(text)
            got = [comp for comp, _ in cycles(crate_graph(src))]
            if got != want:
                failed += 1
                print(f"self-test: {sorted(files)}: loops {got}, want {want}", file=sys.stderr)
    return 1 if failed else 0


def main(argv):
    if argv == ["--self-test"]:
        return self_test()
    root = Path(__file__).resolve().parent.parent
    crates = [Path(a) for a in argv] or sorted(p.parent for p in (root / "crates").glob("*/src"))
    found = 0
    for crate in crates:
        src = crate / "src"
        if not src.is_dir():
            print(f"{crate}: no src/ directory; pass a crate's directory", file=sys.stderr)
            return 2
        for comp, loop in cycles(crate_graph(src)):
            found += 1
            print(f"{crate.name}: import loop of {len(comp)} files: {' -> '.join(loop)}")
            if len(comp) > len(loop) - 1:
                print(f"    (files in the same knot: {', '.join(comp)})")
    if found:
        print(f"{found} import loop(s)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
