#!/usr/bin/env python3
"""Write crates/terraform/data/aws-sensitive.tsv: the attributes the AWS provider marks sensitive.

Terraform's own account of a provider's schema (`terraform providers schema -json`) carries
`"sensitive": true` on every attribute whose value Terraform never shows; the @cdktf/provider-aws
package the rest of the schema data comes from does not. The source read here is a git repository
that holds that JSON for each provider release, one tag per release (`v6.25.0`), with one Go file
per resource type under `generated/resource/` whose string constant is the type's schema JSON and
`generated/register.go` naming which function (so which file) belongs to which resource type
(github.com/lonegunmanb/terraform-aws-schema; docs/provider-schema.md says how to get it).

Usage:
    python3 scripts/provider-sensitive.py GIT_DIR [VERSION ...]

GIT_DIR is the repository's git directory (a bare one will do); VERSION defaults to the versions
bundled in crates/terraform/src/schema.rs (`BUNDLED`). The output lists, per resource type, each
sensitive attribute by its dotted path through nested blocks and nested attributes, with the
provider versions that mark it, sorted: the same input gives the same bytes. An attribute below a
sensitive one is not listed (its ancestor covers it). Each path is checked against the bundled
schema data of the same version (crates/terraform/data/aws-VERSION.json.gz); a path that data does
not know is reported and the script fails, writing nothing.
"""

import gzip
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "crates/terraform/data/aws-sensitive.tsv"
SCHEMA_RS = ROOT / "crates/terraform/src/schema.rs"


def die(message):
    print(f"provider-sensitive: {message}", file=sys.stderr)
    sys.exit(1)


def git(git_dir, *args):
    result = subprocess.run(["git", "--git-dir", str(git_dir), *args], capture_output=True)
    if result.returncode != 0:
        die(f"git {' '.join(args)} failed in {git_dir}: {result.stderr.decode(errors='replace').strip()}")
    return result.stdout


def bundled_versions():
    text = SCHEMA_RS.read_text()
    block = re.search(r"const BUNDLED:[^=]*=\s*\[(.*?)\];", text, re.S)
    if not block:
        die(f"no BUNDLED table in {SCHEMA_RS}; give the versions on the command line")
    return re.findall(r'\("([0-9][^"]*)"', block.group(1))


def blobs(git_dir, specs):
    """The contents of several `rev:path` blobs at once (git cat-file --batch)."""
    batch = subprocess.run(
        ["git", "--git-dir", str(git_dir), "cat-file", "--batch"],
        input="".join(f"{s}\n" for s in specs).encode(),
        capture_output=True,
    )
    if batch.returncode != 0:
        die(f"git cat-file failed in {git_dir}: {batch.stderr.decode(errors='replace').strip()}")
    data, out, pos = batch.stdout, [], 0
    for spec in specs:
        end = data.index(b"\n", pos)
        header = data[pos:end].decode()
        if header.endswith(" missing"):
            # A blob the copy lacks (snapshots of the repository leave out files of 4 MiB and more).
            out.append(None)
            pos = end + 1
            continue
        size = int(header.split()[2])
        out.append(data[end + 1 : end + 1 + size].decode())
        pos = end + 1 + size + 1
    return out


def go_string_constants(text):
    """{name: value} of the file's `const name = ...` string constants. A value is Go raw strings
    (`...`) and interpreted strings ("`") joined by `+`: a backquote inside a raw string is written
    as `` ` + "`" + ` ``."""
    consts = {}
    for m in re.finditer(r"^const (\w+) = ", text, re.M):
        pos, parts = m.end(), []
        while True:
            if text.startswith("`", pos):
                end = text.index("`", pos + 1)
                parts.append(text[pos + 1 : end])
            elif text.startswith('"', pos):
                lit = re.match(r'"(?:[^"\\\n]|\\.)*"', text[pos:])
                if not lit:
                    break
                parts.append(json.loads(lit.group(0)))
                end = pos + lit.end() - 1
            else:
                break
            joined = re.match(r"\s*\+\s*", text[end + 1 :])
            if not joined:
                break
            pos = end + 1 + joined.end()
        if parts:
            consts[m.group(1)] = "".join(parts)
    return consts


def resource_schemas(git_dir, version):
    """{resource type: schema JSON} of one provider version, the commit it was read at, and the
    resource types whose file the git directory lacks (named by the file's function)."""
    tag = f"v{version}"
    found = subprocess.run(
        ["git", "--git-dir", str(git_dir), "rev-parse", "--verify", "--quiet", f"{tag}^{{commit}}"], capture_output=True
    )
    if found.returncode != 0:
        die(f"no tag {tag} in {git_dir}: that provider version is not in the mirror (git fetch --tags?)")
    commit = found.stdout.decode().strip()
    register = git(git_dir, "show", f"{commit}:generated/register.go").decode()
    by_function = dict(
        (fn, rtype) for rtype, fn in re.findall(r'resources\["([a-z0-9_]+)"\]\s*=\s*resource\.(\w+)\(\)', register)
    )
    if not by_function:
        die(f"{tag}: generated/register.go names no resources")
    files = [
        name
        for name in git(git_dir, "ls-tree", "-r", "--name-only", commit, "generated/resource/").decode().split("\n")
        if name.endswith(".go") and not name.endswith("_test.go")
    ]
    schemas, unread = {}, []
    for name, text in zip(files, blobs(git_dir, [f"{commit}:{f}" for f in files])):
        if text is None:
            # The file is named after its function (generated/resource/awsWafv2WebAcl.go holds
            # AwsWafv2WebAclSchema).
            fn = Path(name).stem[:1].upper() + Path(name).stem[1:] + "Schema"
            unread.append(by_function.get(fn, name))
            continue
        consts = go_string_constants(text)
        for fn, const in re.findall(r"func (\w+)\(\) \*tfjson\.Schema \{.*?Unmarshal\(\[\]byte\((\w+)\)", text, re.S):
            if fn not in by_function:
                continue
            if const not in consts:
                die(f"{tag}: {name}: {fn} reads {const}, which the file does not define")
            try:
                schemas[by_function[fn]] = json.loads(consts[const])
            except json.JSONDecodeError as e:
                die(f"{tag}: {name}: the schema of {by_function[fn]} is not JSON: {e}")
    missing = sorted(set(by_function.values()) - set(schemas) - set(unread))
    if missing:
        die(f"{tag}: no schema found for {len(missing)} registered resources, e.g. {', '.join(missing[:5])}")
    return commit, schemas, sorted(unread)


def sensitive_paths(block, prefix=()):
    """Dotted paths of the sensitive attributes of a schema block (`block` of the JSON)."""
    for name, attr in (block.get("attributes") or {}).items():
        path = prefix + (name,)
        if attr.get("sensitive"):
            yield path
        elif "nested_type" in attr:
            yield from sensitive_paths(attr["nested_type"], path)
    for name, nested in (block.get("block_types") or {}).items():
        yield from sensitive_paths(nested.get("block") or {}, prefix + (name,))


def known_to_bundled(version, rtype, path):
    """Whether the bundled schema data of `version` has `path` on `rtype` (None: no such data)."""
    data = BUNDLED_DATA.get(version)
    if data is None:
        return None
    body = data["resources"].get(rtype)
    for i, name in enumerate(path):
        if body is None:
            return False
        if name in body.get("b", {}):
            body = body["b"][name].get("b", {})
        elif name in body.get("a", {}):
            body = body["a"][name].get("f")
            if i + 1 < len(path) and body is None:
                return False
        elif name in body.get("c", []):
            body = None
            if i + 1 < len(path):
                return False
        else:
            return False
    return True


BUNDLED_DATA = {}


def main():
    args = sys.argv[1:]
    if not args or args[0] in ("-h", "--help"):
        print(__doc__)
        sys.exit(0 if args else 2)
    git_dir = Path(args[0])
    if not git_dir.exists():
        die(f"{git_dir} does not exist: give the schema repository's git directory")
    versions = args[1:] or bundled_versions()
    rows = {}
    header = []
    problems = []
    for version in versions:
        data_file = ROOT / f"crates/terraform/data/aws-{version}.json.gz"
        if data_file.exists():
            BUNDLED_DATA[version] = json.loads(gzip.decompress(data_file.read_bytes()))
        commit, schemas, unread = resource_schemas(git_dir, version)
        count = 0
        for rtype, schema in schemas.items():
            for path in sensitive_paths(schema.get("block") or {}):
                rows.setdefault((rtype, ".".join(path)), []).append(version)
                count += 1
                if known_to_bundled(version, rtype, path) is False:
                    problems.append(f"{version}: {rtype}.{'.'.join(path)} is not in {data_file.name}")
        header.append(f"# {version}: tag v{version}, commit {commit}: {len(schemas)} resource types, {count} sensitive attributes")
        print(header[-1][2:], file=sys.stderr)
        if unread:
            header.append(f"# {version}: not read (the copy lacks their file): {' '.join(unread)}")
            print(header[-1][2:], file=sys.stderr)
    if problems:
        die("the bundled schema data does not know these sensitive paths:\n  " + "\n  ".join(problems))
    lines = [
        "# The attributes the AWS provider marks sensitive, per resource type: values Terraform never",
        "# shows and driftback never writes into code. Generated by scripts/provider-sensitive.py from",
        "# `terraform providers schema -json` of each provider version, as github.com/lonegunmanb/terraform-aws-schema",
        "# holds it; do not edit. A path goes through nested blocks and nested attributes by name;",
        "# everything below a listed attribute is sensitive too. versions: those that mark it.",
        *header,
        "resource_type\tpath\tversions",
    ]
    for (rtype, path), marked in sorted(rows.items()):
        lines.append(f"{rtype}\t{path}\t{','.join(marked)}")
    OUT.write_text("\n".join(lines) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}: {len(rows)} rows", file=sys.stderr)


if __name__ == "__main__":
    main()
