#!/usr/bin/env node
// Regenerates crates/terraform/data/aws-<provider version>.json.gz from the npm package
// `@cdktf/provider-aws`, which is generated from the AWS provider's schema.
//
//   node scripts/provider-schema.mjs 20.1.0 21.22.1         # download with `npm pack`, extract, write
//   node scripts/provider-schema.mjs --lib DIR/package/lib   # an already extracted package
//
// Only regeneration needs npm and this script; the Rust code reads the committed files.
// docs/provider-schema.md says what is extracted and what is not.

import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import zlib from "node:zlib";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const outDir = path.join(here, "..", "crates", "terraform", "data");

// ---------- reading one generated TypeScript source ----------

// Every `lib/<name>/index.js` carries its TypeScript source in an inline source map; that source
// has, beside the HCL synthesis, the `computed/optional/required` comment of every attribute
// (computed-only ones too) and the `<name> block` doc comment of every nested block.
function typescriptOf(file) {
  const js = fs.readFileSync(file, "utf8");
  const m = js.match(/sourceMappingURL=data:application\/json;base64,(\S+)/);
  if (!m) throw new Error(`${file}: no inline source map`);
  const map = JSON.parse(Buffer.from(m[1], "base64").toString("utf8"));
  if (!map.sourcesContent || map.sourcesContent.length !== 1) {
    throw new Error(`${file}: expected one source in the source map`);
  }
  return map.sourcesContent[0];
}

// Top-level `export interface|function|class NAME` declarations with their text.
function declarations(ts) {
  const re = /^export (interface|function|class) (\w+)/gm;
  const starts = [];
  let m;
  while ((m = re.exec(ts))) starts.push({ kind: m[1], name: m[2], at: m.index });
  return starts.map((s, i) => ({
    kind: s.kind,
    name: s.name,
    text: ts.slice(s.at, i + 1 < starts.length ? starts[i + 1].at : ts.length),
  }));
}

// Members of an interface: camelName -> { optional, blockDoc }
function interfaceMembers(text) {
  const members = new Map();
  const re = /\/\*\*([\s\S]*?)\*\/\s*readonly (\w+)(\??):/g;
  let m;
  while ((m = re.exec(text))) {
    const doc = m[1];
    const first = doc.split("\n").map((l) => l.replace(/^\s*\*\s?/, "").trim()).find((l) => l);
    members.set(m[2], { optional: m[3] === "?", blockDoc: /^\S+ block$/.test(first || "") });
  }
  return members;
}

// Entries of a `const attrs = { ... }` HCL synthesis.
function hclEntries(text) {
  const entries = [];
  const re =
    /\n\s+("[^"]+"|[\w-]+): \{\n\s+value: ([^\n]*),\n\s+isBlock: (true|false),\n\s+type: "(\w+)",\n\s+storageClassType: "(\w+)",\n/g;
  let m;
  while ((m = re.exec(text))) {
    const name = m[1].startsWith('"') ? JSON.parse(m[1]) : m[1];
    const value = m[2];
    const camel = (value.match(/(?:struct!?\.|this\._)(\w+)/) || [])[1];
    const nested = (value.match(/\b([a-z]\w*)ToHclTerraform\b/g) || [])
      .map((f) => f.replace(/ToHclTerraform$/, ""))
      .find((f) => !["string", "number", "boolean", "any"].includes(f));
    const mapper = value.match(/cdktf\.listMapperHcl\([^,]+, (true|false)\)/);
    entries.push({
      name,
      camel,
      nested: nested ? nested + "ToHclTerraform" : null,
      listMapper: mapper ? mapper[1] === "true" : null,
      hashMapper: /cdktf\.hashMapperHcl\(\w+ToHclTerraform\)/.test(value) && !!nested,
      isBlock: m[3] === "true",
      type: m[4],
      storage: m[5],
    });
  }
  return entries;
}

// `// name - computed: X, optional: Y, required: Z` comments of a class.
function flagComments(text) {
  const flags = new Map();
  const re = /\/\/ ("[^"]+"|[\w-]+) - computed: (true|false), optional: (true|false), required: (true|false)/g;
  let m;
  while ((m = re.exec(text))) {
    const name = m[1].startsWith('"') ? JSON.parse(m[1]) : m[1];
    flags.set(name, { computed: m[2] === "true", optional: m[3] === "true", required: m[4] === "true" });
  }
  return flags;
}

const PRIMITIVE = { string: "string", number: "number", boolean: "bool", any: "any" };

function primitiveType(entry, where) {
  const s = entry.storage;
  if (entry.type === "simple") {
    if (PRIMITIVE[s]) return PRIMITIVE[s];
  }
  // stringList, numberMap, stringMapMap, stringListList, ...
  const m = s.match(/^(string|number|boolean|any)((?:List|Map)+)$/);
  if (m) {
    const parts = m[2].match(/List|Map/g);
    let t = PRIMITIVE[m[1]];
    // innermost first: `stringMapList` is a list of maps of strings
    for (let i = 0; i < parts.length; i++) {
      const outer = i === parts.length - 1;
      const kind = parts[i] === "Map" ? "map" : outer && entry.type === "set" ? "set" : "list";
      t = `${kind}(${t})`;
    }
    return t;
  }
  throw new Error(`${where}: unknown value type ${entry.type}/${s}`);
}

// A large resource keeps its structs in `index-structs/structs<N>.js` beside `index.js`.
function sourcesOf(dir) {
  const files = [path.join(dir, "index.js")];
  const structs = path.join(dir, "index-structs");
  if (fs.existsSync(structs)) {
    for (const f of fs.readdirSync(structs).sort()) {
      if (/^structs\d+\.js$/.test(f)) files.push(path.join(structs, f));
    }
  }
  return files.map(typescriptOf).join("\n");
}

function parseFile(dir, problems) {
  const ts = sourcesOf(dir);
  const decls = declarations(ts);
  const interfaces = new Map();
  const functions = new Map(); // fnName -> { struct, text }
  const classes = new Map();
  let root = null;
  for (const d of decls) {
    if (d.kind === "interface") interfaces.set(d.name, interfaceMembers(d.text));
    else if (d.kind === "function" && d.name.endsWith("ToHclTerraform")) {
      const sig = d.text.match(/\(struct\?: ([^)]*)\)/);
      const types = sig ? sig[1].split("|").map((t) => t.trim()) : [];
      const struct = types
        .map((t) => t.replace(/OutputReference$/, ""))
        .find((t) => t !== "cdktf.IResolvable" && !t.includes("{"));
      functions.set(d.name, { struct, text: d.text });
    } else if (d.kind === "class") {
      classes.set(d.name, d.text);
      const rt = d.text.match(/public static readonly tfResourceType = "([^"]+)";/);
      const ext = d.text.match(/extends cdktf\.(TerraformResource|TerraformDataSource)\b/);
      if (rt && ext) root = { name: d.name, type: rt[1], kind: ext[1], text: d.text };
    }
  }
  if (!root) return null;

  const build = (where, hclText, members, flags, depth) => {
    if (depth > 32) throw new Error(`${where}: nesting too deep`);
    const block = {};
    const attrs = {};
    const blocks = {};
    const entries = hclEntries(hclText);
    const seen = new Set();
    for (const e of entries) {
      seen.add(e.name);
      const at = `${where}.${e.name}`;
      const f = flags.get(e.name);
      const member = e.camel ? members?.get(e.camel) : undefined;
      if (!f) problems.push(`${at}: no computed/optional/required comment`);
      const required = f ? f.required : member ? !member.optional : false;
      const optional = f ? f.optional : member ? member.optional : true;
      const computed = f ? f.computed : false;
      if (e.nested) {
        const fn = functions.get(e.nested);
        if (!fn || !fn.struct) {
          problems.push(`${at}: nested function ${e.nested} not found`);
          continue;
        }
        const inner = build(
          at,
          fn.text,
          interfaces.get(fn.struct),
          flagComments(classes.get(`${fn.struct}OutputReference`) || ""),
          depth + 1,
        );
        // A nested block says `<name> block` in its doc comment; an attribute of object type does
        // not, and cdktf maps its list with `listMapperHcl(_, false)`.
        const isBlock = member ? member.blockDoc : e.listMapper === true;
        if (member && e.listMapper !== null && e.listMapper !== member.blockDoc) {
          problems.push(`${at}: block doc comment and list mapper disagree`);
        }
        if (isBlock && !e.hashMapper) {
          const nesting = e.type === "struct" ? "single" : e.type === "set" ? "set" : "list";
          const b = { n: nesting, b: inner };
          if (required) b.min = 1;
          if (nesting !== "single" && e.listMapper === null) b.max = 1;
          blocks[e.name] = b;
        } else {
          const kind = e.hashMapper ? "map" : e.type === "set" ? "set" : e.type === "list" && e.listMapper !== null ? "list" : "";
          const t = kind ? `${kind}(object)` : "object";
          attrs[e.name] = { t, m: mode(required, optional, computed), f: inner };
        }
      } else {
        attrs[e.name] = { t: primitiveType(e, at), m: mode(required, optional, computed) };
      }
    }
    const computedOnly = [];
    for (const [name, f] of flags) {
      if (!seen.has(name) && f.computed && !f.optional && !f.required) computedOnly.push(name);
      else if (!seen.has(name)) problems.push(`${where}.${name}: settable but not synthesised`);
    }
    if (Object.keys(attrs).length) block.a = sortKeys(attrs);
    if (Object.keys(blocks).length) block.b = sortKeys(blocks);
    if (computedOnly.length) block.c = computedOnly.sort();
    return block;
  };

  const synth = root.text.match(/synthesizeHclAttributes\(\)[\s\S]*$/);
  const configName = `${root.name}Config`;
  const label = root.kind === "TerraformDataSource" ? `data.${root.type}` : root.type;
  const schema = build(label, synth ? synth[0] : "", interfaces.get(configName), flagComments(root.text), 0);
  return { type: root.type, kind: root.kind, schema, providerVersion: providerVersionOf(ts) };
}

function mode(required, optional, computed) {
  if (required) return "r";
  if (optional && computed) return "oc";
  return "o";
}

function providerVersionOf(ts) {
  const m = ts.match(/providerVersion: '([^']+)'/);
  return m ? m[1] : null;
}

function sortKeys(obj) {
  return Object.fromEntries(Object.keys(obj).sort().map((k) => [k, obj[k]]));
}

// ---------- one package ----------

function extract(lib, packageVersion) {
  const problems = [];
  const resources = {};
  const dataSources = {};
  const providerVersions = new Set();
  for (const dir of fs.readdirSync(lib).sort()) {
    const file = path.join(lib, dir, "index.js");
    if (!fs.existsSync(file) || dir === "provider") continue;
    const parsed = parseFile(path.join(lib, dir), problems);
    if (!parsed) continue;
    if (parsed.providerVersion) providerVersions.add(parsed.providerVersion);
    const into = parsed.kind === "TerraformDataSource" ? dataSources : resources;
    into[parsed.type] = parsed.schema;
  }
  if (providerVersions.size !== 1) {
    throw new Error(`expected one provider version, found ${[...providerVersions].join(", ")}`);
  }
  const [providerVersion] = providerVersions;
  return {
    doc: {
      format: 1,
      provider: "registry.terraform.io/hashicorp/aws",
      provider_version: providerVersion,
      package: "@cdktf/provider-aws",
      package_version: packageVersion,
      resources: sortKeys(resources),
      data_sources: sortKeys(dataSources),
    },
    problems,
  };
}

function write({ doc, problems }) {
  fs.mkdirSync(outDir, { recursive: true });
  const json = JSON.stringify(doc);
  const gz = zlib.gzipSync(Buffer.from(json), { level: 9 });
  const out = path.join(outDir, `aws-${doc.provider_version}.json.gz`);
  fs.writeFileSync(out, gz);
  console.log(
    `${out}: provider ${doc.provider_version} from ${doc.package}@${doc.package_version}: ` +
      `${Object.keys(doc.resources).length} resources, ${Object.keys(doc.data_sources).length} data sources, ` +
      `${json.length} bytes of JSON, ${gz.length} gzip'd`,
  );
  if (problems.length) {
    console.log(`${problems.length} oddities (first 20):`);
    for (const p of problems.slice(0, 20)) console.log(`  ${p}`);
  }
}

function fromRegistry(version) {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "provider-schema-"));
  try {
    console.log(`npm pack @cdktf/provider-aws@${version} into ${tmp}`);
    execFileSync("npm", ["pack", `@cdktf/provider-aws@${version}`, "--pack-destination", tmp, "--silent"], {
      stdio: ["ignore", "ignore", "inherit"],
    });
    const tgz = fs.readdirSync(tmp).find((f) => f.endsWith(".tgz"));
    if (!tgz) throw new Error("npm pack wrote no tarball");
    execFileSync("tar", ["xzf", path.join(tmp, tgz), "-C", tmp]);
    const pkg = JSON.parse(fs.readFileSync(path.join(tmp, "package", "package.json"), "utf8"));
    write(extract(path.join(tmp, "package", "lib"), pkg.version));
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

const args = process.argv.slice(2);
if (args[0] === "--lib") {
  const lib = args[1];
  const pkg = JSON.parse(fs.readFileSync(path.join(lib, "..", "package.json"), "utf8"));
  write(extract(lib, pkg.version));
} else if (args.length) {
  for (const v of args) fromRegistry(v);
} else {
  console.error("usage: node scripts/provider-schema.mjs PACKAGE_VERSION... | --lib EXTRACTED/package/lib");
  process.exit(2);
}
