//! What wrote a JSON file: every JSON output of the rig (verdict.json,
//! summary.json, matrix.json, schedule.json and every `--json` output)
//! begins with `schema_version`, the rig's `version` and its `git_commit`
//! ([`Stamped`]), so a CI job can tell which rig produced a result and
//! whether it reads the format it expects. docs/GUIDE.md, "JSON files", lists
//! the fields of each file.
//!
//! The commit is captured at build time by `base/build.rs` ([`git`]): 40 hex
//! digits, `-dirty` when the work tree differed from the commit, `unknown`
//! for a build outside git. Files written before these fields existed read
//! as schema 0, version and commit `unknown` ([`Provenance::of_json`]).
use serde::{Deserialize, Serialize};

#[cfg(test)]
mod git;

/// The version of the JSON formats this rig writes. 1: the first with
/// provenance (and the `error` outcome, shards, `started` and `wall_ms` in
/// summary.json); files without the field are 0.
pub const SCHEMA_VERSION: u32 = 1;

/// The rig's version (the workspace's `version`).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The commit the rig was built from (see the module doc).
pub const GIT_COMMIT: &str = env!("SINKHOLE_GIT_COMMIT");

/// `sinkhole --version`: the version and the commit.
pub const LONG_VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (", env!("SINKHOLE_GIT_COMMIT"), ")");

/// The three fields at the head of every JSON output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provenance {
    #[serde(default)]
    pub schema_version: u32,
    #[serde(default = "unknown")]
    pub version: String,
    #[serde(default = "unknown")]
    pub git_commit: String,
}

fn unknown() -> String {
    "unknown".to_string()
}

impl Provenance {
    /// This rig's.
    pub fn current() -> Provenance {
        Provenance { schema_version: SCHEMA_VERSION, version: VERSION.to_string(), git_commit: GIT_COMMIT.to_string() }
    }

    /// The provenance a JSON object states (schema 0 and `unknown` for the
    /// fields it lacks: a file from before them); None when the text is not
    /// a JSON object.
    pub fn of_json(text: &str) -> Option<Provenance> {
        serde_json::from_str::<Provenance>(text).ok()
    }

    /// `0.1.0 (abc…)`, for messages.
    pub fn rig(&self) -> String {
        format!("{} ({})", self.version, self.git_commit)
    }
}

/// A value with this rig's provenance in front of its own fields. `T` must
/// serialize as a struct or a map (a JSON object) and have none of the three
/// field names.
#[derive(Debug, Serialize)]
pub struct Stamped<'a, T: Serialize + ?Sized> {
    #[serde(flatten)]
    provenance: Provenance,
    #[serde(flatten)]
    value: &'a T,
}

impl<'a, T: Serialize + ?Sized> Stamped<'a, T> {
    pub fn new(value: &'a T) -> Self {
        Stamped { provenance: Provenance::current(), value }
    }
}

/// Pretty JSON of `value` with the provenance first, and a final newline:
/// what every JSON file and `--json` output of the rig is.
pub fn to_json<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<String> {
    serde_json::to_string_pretty(&Stamped::new(value)).map(|t| t + "\n")
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::process::Command;

    use super::*;

    #[derive(Serialize)]
    struct Sample {
        run_id: String,
        seed: u64,
    }

    #[test]
    fn stamped_json_leads_with_the_provenance_and_keeps_the_fields() {
        let text = to_json(&Sample { run_id: "r".into(), seed: u64::MAX }).unwrap();
        let keys: Vec<&str> =
            text.lines().filter_map(|l| l.trim().strip_prefix('"')?.split('"').next()).collect::<Vec<_>>();
        assert_eq!(keys, ["schema_version", "version", "git_commit", "run_id", "seed"], "{text}");
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["schema_version"], SCHEMA_VERSION);
        assert_eq!(v["version"], env!("CARGO_PKG_VERSION"));
        assert_eq!(v["git_commit"], GIT_COMMIT);
        assert_eq!(v["seed"], u64::MAX);
        assert!(text.ends_with("}\n"));
        assert_eq!(Provenance::of_json(&text), Some(Provenance::current()));
    }

    #[test]
    fn a_file_from_before_the_fields_reads_as_schema_zero() {
        let p = Provenance::of_json(r#"{"run_id": "old", "exit_code": 0}"#).unwrap();
        assert_eq!(p, Provenance { schema_version: 0, version: "unknown".into(), git_commit: "unknown".into() });
        assert_eq!(Provenance::of_json("[1, 2]"), None);
    }

    #[test]
    fn the_commit_is_hex_with_an_optional_dirty_mark_or_unknown() {
        let hex = GIT_COMMIT.strip_suffix("-dirty").unwrap_or(GIT_COMMIT);
        assert!(
            GIT_COMMIT == git::UNKNOWN || (hex.len() == 40 && hex.chars().all(|c| c.is_ascii_hexdigit())),
            "{GIT_COMMIT}"
        );
        assert_eq!(LONG_VERSION, format!("{VERSION} ({GIT_COMMIT})"));
    }

    fn run(dir: &Path, args: &[&str]) {
        let ok = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@localhost")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@localhost")
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    }

    /// The build script's answer in a tree outside git, in a clean
    /// repository, after an edit, and for a manifest the repository does not
    /// track.
    #[test]
    fn describe_says_unknown_the_commit_or_dirty() {
        if Command::new("git").arg("--version").output().is_err() {
            eprintln!("SKIPPED: no git command here");
            return;
        }
        let dir = std::env::temp_dir().join(format!("sinkhole-provenance-git-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let pkg = dir.join("pkg");
        std::fs::create_dir_all(&pkg).unwrap();
        std::fs::write(pkg.join("Cargo.toml"), "[package]\n").unwrap();
        // No repository anywhere above (the temp dir is in none; the ceiling makes sure).
        let ceiling = std::env::var_os("GIT_CEILING_DIRECTORIES");
        assert_eq!(git::describe(&pkg, "Cargo.toml"), git::UNKNOWN, "outside git (ceiling {ceiling:?})");
        assert!(git::watched(&pkg).is_empty());
        run(&dir, &["init", "-q"]);
        run(&dir, &["add", "pkg/Cargo.toml"]);
        run(&dir, &["commit", "-q", "-m", "one"]);
        let head = git::describe(&pkg, "Cargo.toml");
        assert_eq!(head.len(), 40, "{head}");
        assert!(git::watched(&pkg).iter().any(|p| p.ends_with("HEAD")));
        std::fs::write(pkg.join("Cargo.toml"), "[package]\nname = \"x\"\n").unwrap();
        assert_eq!(git::describe(&pkg, "Cargo.toml"), format!("{head}-dirty"));
        // A manifest the repository around it does not track: not its commit.
        let other = dir.join("unpacked");
        std::fs::create_dir_all(&other).unwrap();
        std::fs::write(other.join("Cargo.toml"), "[package]\n").unwrap();
        assert_eq!(git::describe(&other, "Cargo.toml"), git::UNKNOWN);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
