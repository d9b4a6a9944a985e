//! Captures the commit the rig is built from for its provenance
//! (`sinkhole_base::provenance`): `SINKHOLE_GIT_COMMIT` is `git rev-parse
//! HEAD`, `-dirty` when the tree differs from it, or `unknown` outside git. A
//! packager building from a tarball may set `SINKHOLE_GIT_COMMIT` itself.
use std::path::PathBuf;

#[path = "src/provenance/git.rs"]
mod git;

fn main() {
    println!("cargo:rerun-if-env-changed=SINKHOLE_GIT_COMMIT");
    let dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let commit = match std::env::var("SINKHOLE_GIT_COMMIT") {
        Ok(c) if !c.trim().is_empty() => c.trim().to_string(),
        _ => git::describe(&dir, "Cargo.toml"),
    };
    // Again when HEAD moves, and when a source file of the
    // workspace changes (the dirty mark), not on every build.
    for p in git::watched(&dir) {
        println!("cargo:rerun-if-changed={}", p.display());
    }
    let root = dir.parent().map(PathBuf::from).unwrap_or_else(|| dir.clone());
    for member in [
        "kafka",
        "model",
        "client",
        "faults",
        "workloads",
        "base",
        "install",
        "scenario",
        "cluster",
        "history",
        "checker",
        "rig",
    ] {
        for part in ["src", "Cargo.toml"] {
            let p = root.join(member).join(part);
            if p.exists() {
                println!("cargo:rerun-if-changed={}", p.display());
            }
        }
    }
    for p in ["Cargo.toml", "Cargo.lock"] {
        if root.join(p).exists() {
            println!("cargo:rerun-if-changed={}", root.join(p).display());
        }
    }
    println!("cargo:rustc-env=SINKHOLE_GIT_COMMIT={commit}");
}
