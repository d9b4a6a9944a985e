use std::path::Path;

use super::*;

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sinkhole-serve-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::canonicalize(&d).unwrap()
}

#[test]
fn percent_decoding() {
    assert_eq!(percent_decode("a%20b%2Fc").as_deref(), Some("a b/c"));
    assert_eq!(percent_decode("%2e%2E").as_deref(), Some(".."));
    assert_eq!(percent_decode("%zz"), None);
    assert_eq!(percent_decode("%4"), None);
    assert_eq!(percent_decode("%ff"), None, "not UTF-8");
}

#[test]
fn paths_stay_inside_the_results_directory() {
    let base = scratch("confine");
    let root = base.join("results");
    std::fs::create_dir_all(root.join("run-1")).unwrap();
    std::fs::write(root.join("run-1").join("report.html"), "<p>r</p>").unwrap();
    std::fs::write(base.join("secret.txt"), "outside").unwrap();
    std::fs::write(root.join(".hidden"), "x").unwrap();
    std::os::unix::fs::symlink(base.join("secret.txt"), root.join("escape")).unwrap();
    std::os::unix::fs::symlink(&base, root.join("up")).unwrap();
    std::os::unix::fs::symlink(root.join("run-1"), root.join("alias")).unwrap();
    let root = std::fs::canonicalize(&root).unwrap();

    assert_eq!(confine(&root, "/run-1/report.html"), Ok(root.join("run-1/report.html")));
    assert_eq!(confine(&root, "/"), Ok(root.clone()));
    assert_eq!(confine(&root, "//run-1//"), Ok(root.join("run-1")));
    // A link whose target is inside: served, as its target.
    assert_eq!(confine(&root, "/alias/report.html"), Ok(root.join("run-1/report.html")));
    for escape in [
        "/../secret.txt",
        "/run-1/../../secret.txt",
        "/%2e%2e/secret.txt",
        "/%2E%2E%2Fsecret.txt",
        "/./run-1",
        "/.hidden",
        "/escape",
        "/up/secret.txt",
        "/run-1/..%5c..%5csecret.txt",
        "/run-1%00",
    ] {
        assert_eq!(confine(&root, escape), Err(Refusal::Forbidden), "{escape}");
    }
    assert_eq!(confine(&root, "/no-such"), Err(Refusal::NotFound));
    assert_eq!(confine(&root, "/%ff"), Err(Refusal::BadRequest));
    let _ = std::fs::remove_dir_all(&base);
}

#[test]
fn content_types_show_text_in_the_browser() {
    assert_eq!(content_type(Path::new("a/report.html")), "text/html; charset=utf-8");
    assert_eq!(content_type(Path::new("history.jsonl")), "text/plain; charset=utf-8");
    assert_eq!(content_type(Path::new("verdict.json")), "application/json");
    assert_eq!(content_type(Path::new("drained.bin")), "application/octet-stream");
}

#[test]
fn run_ids_name_their_start_and_links_are_url_safe() {
    assert_eq!(discover::started_from_run_id("old-results-20261201T105322-7").as_deref(), Some("2026-12-01T10:53:22Z"));
    assert_eq!(discover::started_from_run_id("no-time-here"), None);
    assert_eq!(pages::href("a b/c#d"), "/a%20b/c%23d");
    assert_eq!(pages::href("run-1/report.html"), "/run-1/report.html");
}

#[test]
fn the_index_escapes_what_the_results_say() {
    let root = scratch("escape");
    let run = root.join("x-20260101T000000-1");
    std::fs::create_dir_all(&run).unwrap();
    let summary = crate::results::summary::Summary {
        run_id: "x-20260101T000000-1".into(),
        scenario: "<script>alert(1)</script>".into(),
        source: "s.yaml".into(),
        kafka: "4.4.0".into(),
        seed: 1,
        dir: run.clone(),
        modes: vec![],
        exit_code: 0,
        fail_on_inconclusive: false,
        started: None,
        wall_ms: None,
        ..Default::default()
    };
    std::fs::write(run.join("summary.json"), sinkhole_base::provenance::to_json(&summary).unwrap()).unwrap();
    let found = discover(&root);
    assert_eq!(found.runs.len(), 1);
    assert_eq!(found.runs[0].started, "2026-01-01T00:00:00Z");
    let page = pages::index(&root, &found);
    assert!(!page.contains("<script>"), "{page}");
    assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    let _ = std::fs::remove_dir_all(&root);
}
