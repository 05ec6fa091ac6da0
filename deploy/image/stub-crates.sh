#!/bin/sh
# Used by deploy/Dockerfile: with only the workspace's manifests copied in, write an empty source
# file for every target they declare (lib, bin, build script, benches, tests), so `cargo build`
# compiles the dependencies in a layer of their own that a change to the sources does not touch.
set -eu
for manifest in crates/*/Cargo.toml; do
    crate="$(dirname "$manifest")"
    mkdir -p "$crate/src"
    if [ "$crate" = crates/driftback ]; then
        echo 'fn main() {}' >"$crate/src/main.rs"
    else
        : >"$crate/src/lib.rs"
    fi
    # Explicit [[bench]] and [[test]] targets must exist for the manifest to load.
    awk -v crate="$crate" '
        /^\[\[(bench|test)\]\]/ { kind = ($0 ~ /bench/) ? "benches" : "tests"; name = ""; path = ""; next }
        /^\[/ { kind = "" }
        kind != "" && /^name *=/ { gsub(/.*= *"|".*/, ""); name = $0 }
        kind != "" && /^path *=/ { gsub(/.*= *"|".*/, ""); path = $0 }
        kind != "" && name != "" { file = (path != "") ? path : kind "/" name ".rs"; print crate "/" file }
    ' "$manifest" | while read -r file; do
        mkdir -p "$(dirname "$file")"
        echo 'fn main() {}' >"$file"
    done
done
