//! Which commit a build comes from: `git rev-parse HEAD`, with `-dirty` when
//! the work tree differs from it, or `unknown` outside git. Shared by the
//! rig's `build.rs` (which runs it at build time) and the unit tests of
//! [`super`]; it uses the standard library alone for that reason.
use std::path::{Path, PathBuf};
use std::process::Command;

/// What a build outside git (or without a `git` command) says.
pub const UNKNOWN: &str = "unknown";

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        // A repository of the user's above an unpacked source tree must not answer for it.
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The commit `package_dir` was built from: 40 hex digits, `-dirty` after
/// them when a tracked file differs from the commit or an untracked file
/// (not ignored) lies in the tree; [`UNKNOWN`] when `package_dir` is in no
/// git work tree, or its `manifest` (e.g. `Cargo.toml`) is not tracked by the
/// repository around it (a source tarball unpacked inside another project).
pub fn describe(package_dir: &Path, manifest: &str) -> String {
    let Some(head) = git(package_dir, &["rev-parse", "--verify", "HEAD"]) else {
        return UNKNOWN.to_string();
    };
    if head.len() != 40 || !head.chars().all(|c| c.is_ascii_hexdigit()) {
        return UNKNOWN.to_string();
    }
    if git(package_dir, &["ls-files", "--error-unmatch", "--", manifest]).is_none() {
        return UNKNOWN.to_string();
    }
    match git(package_dir, &["status", "--porcelain"]) {
        Some(s) if s.is_empty() => head,
        Some(_) => format!("{head}-dirty"),
        None => UNKNOWN.to_string(),
    }
}

/// The files whose change means HEAD moved (a commit, a checkout), for
/// `cargo:rerun-if-changed`: the repository's HEAD, packed refs and the branch
/// HEAD names. Empty outside git.
pub fn watched(package_dir: &Path) -> Vec<PathBuf> {
    let abs = |p: String| {
        let p = PathBuf::from(p);
        if p.is_absolute() {
            p
        } else {
            package_dir.join(p)
        }
    };
    let (Some(git_dir), Some(common)) = (
        git(package_dir, &["rev-parse", "--git-dir"]).map(abs),
        git(package_dir, &["rev-parse", "--git-common-dir"]).map(abs),
    ) else {
        return Vec::new();
    };
    // Not the index: the dirty check itself (`git diff`) refreshes it on a fresh clone, which
    // made the next cargo run rebuild every crate from this one up (96.6 s of a CI run, measured).
    // The sources it would stand for are watched one by one (build.rs).
    let mut out = vec![git_dir.join("HEAD"), common.join("packed-refs")];
    if let Some(r) = git(package_dir, &["symbolic-ref", "-q", "HEAD"]) {
        out.push(common.join(r));
    }
    out
}
