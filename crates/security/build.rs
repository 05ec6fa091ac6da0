//! Gathers the control table (`data/controls/*.toml`, one file per service) into one list the
//! crate includes, so that a new service file needs no code change.

use std::path::Path;

fn main() {
    let dir = Path::new("data/controls");
    println!("cargo:rerun-if-changed={}", dir.display());
    // A checkout without the folder has no controls: the crate's table test says so.
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    let mut out = String::from(
        "/// `(file name, text)` of every control file, in name order.\npub const FILES: &[(&str, &str)] = &[\n",
    );
    for file in &files {
        println!("cargo:rerun-if-changed={}", file.display());
        let name = file.file_name().and_then(|n| n.to_str()).expect("file names are UTF-8");
        let absolute = std::fs::canonicalize(file).expect("the file is there");
        out.push_str(&format!("    ({name:?}, include_str!({:?})),\n", absolute.display().to_string()));
    }
    out.push_str("];\n");
    let target = Path::new(&std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("controls.rs");
    std::fs::write(target, out).expect("OUT_DIR is writable");
}
