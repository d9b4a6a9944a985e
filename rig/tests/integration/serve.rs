//! `sinkhole serve`: a results directory with two runs of one scenario (the
//! stored run of tests/fixtures/old-results and a copy judged differently)
//! and a matrix, browsed over HTTP on 127.0.0.1 — the index lists the runs
//! newest first, a report and a run's files are served, the diff shows
//! counts, latency p99 and faults side by side, and every way out of the
//! directory (`..`, encoded or not, a symlink, a hidden name) is refused —
//! then in headless Chromium: the page renders with its table of runs, and a
//! screenshot of the right size is written.
use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::files::copy_dir;
use serde_json::Value;

const RUN_A: &str = "old-results-20261201T105322-7";
const RUN_B: &str = "old-results-20261202T080000-8";

fn edit_json(path: &Path, f: impl FnOnce(&mut Value)) {
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    f(&mut v);
    std::fs::write(path, serde_json::to_string_pretty(&v).unwrap()).unwrap();
}

/// `base/results` with runs A and B (B: a day later, seed 8, twopc-inject
/// expected to lose records and so failed, a slower commit p99), each
/// re-checked by `sinkhole check` (which writes its report.html), a matrix
/// of run A, and what lies outside: `base/secret.txt`, with symlinks to it.
fn results(base: &Path) -> PathBuf {
    let root = base.join("results");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/old-results").join(RUN_A);
    copy_dir(&fixture, &root.join(RUN_A));
    let b = root.join(RUN_B);
    copy_dir(&fixture, &b);
    edit_json(&b.join("summary.json"), |s| {
        s["run_id"] = RUN_B.into();
        s["seed"] = 8.into();
    });
    edit_json(&b.join("twopc-inject").join("verdict.json"), |v| {
        v["expectation"] = serde_json::json!({"lost": ">0"});
        v["latency"]["commit"]["p99"] = 987_654.into();
    });
    for run in [RUN_A, RUN_B] {
        let o = Command::new(common::bin()).arg("check").arg(root.join(run)).output().unwrap();
        assert!(matches!(o.status.code(), Some(0 | 1)), "check {run}: {}", String::from_utf8_lossy(&o.stderr));
        assert!(root.join(run).join("report.html").is_file());
    }
    let summary: sinkhole_rig::results::summary::Summary =
        serde_json::from_str(&std::fs::read_to_string(root.join(RUN_A).join("summary.json")).unwrap()).unwrap();
    let mut m = sinkhole_rig::matrix::Matrix {
        finished: Some("2026-12-01T11:10:00Z".into()),
        complete: true,
        seeds: vec![7],
        cells: vec![sinkhole_rig::matrix::CellResult {
            index: 0,
            scenario: summary.scenario.clone(),
            file: "old-results.yaml".into(),
            kafka: summary.kafka.clone(),
            seed: summary.seed,
            status: sinkhole_rig::matrix::CellStatus::Done,
            modes_planned: summary.modes.iter().map(|m| m.mode).collect(),
            run_id: Some(RUN_A.into()),
            dir: Some(root.join(RUN_A)),
            modes: summary.modes.clone(),
            error: None,
            wall_ms: 180_000,
            cluster_reused_from: None,
            cluster_fresh_because: None,
        }],
        wall_ms: 1_200_000,
        ..sinkhole_rig::matrix::Matrix::new(
            "matrix-20261201T105000".into(),
            root.join("matrix-20261201T105000"),
            "2026-12-01T10:50:00Z".into(),
        )
    };
    m.refresh();
    sinkhole_rig::matrix::write_all(&m).unwrap();
    std::fs::write(base.join("secret.txt"), "the secret outside").unwrap();
    std::os::unix::fs::symlink(base.join("secret.txt"), root.join("leak")).unwrap();
    std::os::unix::fs::symlink(base, root.join("updir")).unwrap();
    std::fs::write(root.join(".hidden"), "hidden").unwrap();
    root
}

/// A `sinkhole serve` this test started; killed (by its pid) when dropped.
struct Server {
    child: Child,
    addr: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(root: &Path) -> Server {
    let mut child = Command::new(common::bin())
        .arg("serve")
        .arg(root)
        .args(["--port", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let addr = line
        .trim()
        .rsplit_once("http://")
        .map(|(_, a)| a.trim_end_matches('/').to_string())
        .unwrap_or_else(|| panic!("no address in {line:?}"));
    assert!(addr.starts_with("127.0.0.1:"), "loopback by default: {addr}");
    Server { child, addr }
}

struct Reply {
    status: u16,
    headers: String,
    body: String,
}

/// One request, the path sent exactly as given (no client normalises it).
fn request(addr: &str, method: &str, path: &str) -> Reply {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(s, "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    Reply { status, headers: head.to_ascii_lowercase(), body: body.to_string() }
}

fn get(addr: &str, path: &str) -> Reply {
    request(addr, "GET", path)
}

#[test]
fn the_browser_over_http() {
    let base = common::test_dir("serve-http");
    let root = results(&base);
    let server = serve(&root);
    let a = &server.addr;

    let index = get(a, "/");
    assert_eq!(index.status, 200);
    assert!(index.headers.contains("content-type: text/html"), "{}", index.headers);
    assert!(index.headers.contains("content-security-policy: default-src 'none'"), "{}", index.headers);
    let b = &index.body;
    let (pa, pb) =
        (b.find(&format!(">{RUN_A}<")).expect("run A listed"), b.find(&format!(">{RUN_B}<")).expect("run B"));
    assert!(pb < pa, "newest first");
    // Each mode's verdict in words, coloured by the outcome, the reason on hover.
    assert!(b.contains(r#"<span class="o observed" title="no expectation: 194 of 500 committed"#), "{b}");
    assert!(b.contains(">legacy: LOST 306, UNCOMMITTED TAIL (no expectation)</span>"), "{b}");
    assert!(
        b.contains(r#"<span class="o fail" title="expected lost &gt;0, got 0"#),
        "run B's twopc-inject failed: {b}"
    );
    assert!(b.contains(">twopc-inject: clean — expected lost&gt;0</span>"), "{b}");
    assert!(b.contains(">twopc-inject: clean (expected)</span>"), "{b}");
    assert!(b.contains("<th>as expected</th><th>NOT as expected</th>"), "{b}");
    assert!(b.contains("2026-12-02T08:00:00Z") && b.contains("<td>4.4.0</td>"), "{b}");
    assert!(b.contains(r#"href="/matrix-20261201T105000/matrix.html""#), "{b}");
    assert!(b.contains(&format!("href=\"/{RUN_A}/report.html\"")));
    let diff_link = format!("/-/diff?a={RUN_A}&amp;b={RUN_B}");
    assert!(b.contains(&diff_link), "the newest two of the scenario: {b}");

    // A report, byte for byte, and a run's files.
    let report = get(a, &format!("/{RUN_A}/report.html"));
    assert_eq!(report.status, 200);
    assert_eq!(report.body, std::fs::read_to_string(root.join(RUN_A).join("report.html")).unwrap());
    let r = get(a, &format!("/{RUN_A}"));
    assert_eq!(r.status, 301);
    assert!(r.headers.contains(&format!("location: /{RUN_A}/").to_ascii_lowercase()), "{}", r.headers);
    let listing = get(a, &format!("/{RUN_A}/"));
    assert_eq!(listing.status, 200);
    for f in ["report.html", "summary.json", "legacy/", "schedule.json"] {
        assert!(listing.body.contains(&format!("href=\"{f}\"")), "{f}: {}", listing.body);
    }
    let history = get(a, &format!("/{RUN_A}/legacy/history.jsonl"));
    assert_eq!(history.status, 200);
    assert!(history.headers.contains("content-type: text/plain"), "{}", history.headers);
    let m = get(a, "/matrix-20261201T105000/matrix.html");
    assert_eq!(m.status, 200);
    assert!(m.body.contains(&format!("../{RUN_A}/report.html")), "the matrix's relative links resolve here too");
    let summary = get(a, &format!("/{RUN_B}/summary.json"));
    let v: Value = serde_json::from_str(&summary.body).unwrap();
    assert_eq!(v["git_commit"], sinkhole_base::provenance::GIT_COMMIT);

    // The diff: counts with their difference, p99 per metric, faults side by side.
    let d = get(a, &format!("/-/diff?a={RUN_A}&b={RUN_B}"));
    assert_eq!(d.status, 200, "{}", d.body);
    for needle in [
        "<h2 id=\"mode-twopc-inject\">twopc-inject</h2>",
        "<th>lost</th>",
        ">twopc-inject: clean (expected)</span>",
        ">twopc-inject: clean — expected lost&gt;0</span>",
        "Latency p99 (µs)",
        "987654",
        "<th>kill-coordinator</th>",
        " was the txn-coordinator of ",
        "<th>seed</th><td class=\"changed\">7</td><td class=\"changed\">8</td>",
    ] {
        assert!(d.body.contains(needle), "diff lacks {needle:?}: {}", d.body);
    }
    assert_eq!(get(a, "/-/diff?a=nope&b=nope").status, 404);
    assert_eq!(get(a, "/-/diff").status, 400);

    // Every way out is refused, and nothing of the secret is sent.
    for escape in [
        "/../secret.txt",
        "/%2e%2e/secret.txt",
        "/%2E%2E%2Fsecret.txt",
        &format!("/{RUN_A}/../../secret.txt"),
        "/leak",
        "/updir/secret.txt",
        "/.hidden",
        &format!("/-/diff?a=../results/{RUN_A}&b={RUN_B}"),
    ] {
        let r = get(a, escape);
        assert!(matches!(r.status, 403 | 404), "{escape}: {} {}", r.status, r.body);
        assert!(!r.body.contains("the secret outside"), "{escape}");
    }
    assert_eq!(get(a, "/../secret.txt").status, 403);
    assert_eq!(get(a, "/leak").status, 403);
    assert_eq!(get(a, "/no-such-run/").status, 404);
    let head = request(a, "HEAD", "/");
    assert_eq!((head.status, head.body.as_str()), (200, ""));
    assert_eq!(request(a, "POST", "/").status, 405);
    drop(server);
    let _ = std::fs::remove_dir_all(&base);
}

fn chromium() -> Option<PathBuf> {
    let find = || {
        ["chromium", "chromium-browser"].iter().find_map(|b| {
            std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
                .map(|d| d.join(b))
                .find(|p| p.is_file())
        })
    };
    if let Some(p) = find() {
        return Some(p);
    }
    // As scripts/report-screenshot.sh does: Debian's package, when we may install it.
    let root = Command::new("id").arg("-u").output().ok().is_some_and(|o| o.stdout.starts_with(b"0"));
    if root {
        eprintln!("chromium is missing: installing Debian's chromium with apt-get");
        let ok = |c: &mut Command| c.stdout(Stdio::null()).status().is_ok_and(|s| s.success());
        let _ = ok(Command::new("apt-get").arg("update"));
        let _ =
            ok(Command::new("apt-get").args(["install", "-y", "chromium"]).env("DEBIAN_FRONTEND", "noninteractive"));
    }
    find()
}

/// Runs headless Chromium with the flags this machine needs (no sandbox as
/// root, no GPU, nothing that calls home), at most 90 s.
fn run_chromium(browser: &Path, profile: &Path, args: &[String]) -> std::process::Output {
    let mut child = Command::new(browser)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"])
        .args(["--disable-background-networking", "--disable-component-update", "--disable-sync"])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t0.elapsed() > Duration::from_secs(90) {
            let _ = child.kill();
            break child.wait().unwrap();
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    std::process::Output { status, stdout: reader.join().unwrap(), stderr: Vec::new() }
}

/// Width and height from a PNG's IHDR chunk, when the bytes are a PNG.
fn png_size(b: &[u8]) -> Option<(u32, u32)> {
    if b.len() < 24 || &b[..8] != b"\x89PNG\r\n\x1a\n" || &b[12..16] != b"IHDR" {
        return None;
    }
    let be = |r: std::ops::Range<usize>| u32::from_be_bytes(b[r].try_into().unwrap());
    Some((be(16..20), be(20..24)))
}

#[test]
fn the_browser_in_headless_chromium() {
    let Some(browser) = chromium() else {
        eprintln!("SKIPPED: the_browser_in_headless_chromium: no chromium, and it could not be installed (apt-get install chromium)");
        return;
    };
    let base = common::test_dir("serve-chromium");
    let root = results(&base);
    let server = serve(&root);
    let url = format!("http://{}/", server.addr);
    let profile = base.join("profile");

    // The DOM after the page loaded: its table has both runs.
    let dom = run_chromium(&browser, &profile, &["--dump-dom".to_string(), url.clone()]);
    let dom = String::from_utf8_lossy(&dom.stdout);
    assert!(dom.contains("<table id=\"runs\">"), "no table of runs in the rendered page: {dom}");
    assert_eq!(dom.matches("<tr class=\"run\">").count(), 2, "{dom}");
    assert!(dom.contains(RUN_A) && dom.contains(RUN_B), "{dom}");

    // A screenshot: a PNG of the window's size.
    let shot = base.join("serve.png");
    let (w, h) = (1280, 900);
    run_chromium(
        &browser,
        &profile,
        &[format!("--screenshot={}", shot.display()), format!("--window-size={w},{h}"), url],
    );
    let bytes = std::fs::read(&shot).unwrap_or_default();
    assert_eq!(png_size(&bytes), Some((w, h)), "{} ({} bytes)", shot.display(), bytes.len());
    assert!(bytes.len() > 10_000, "a page with a table is more than a blank PNG: {} bytes", bytes.len());
    // Kept for a person to look at when SINKHOLE_KEEP_SCREENSHOT names a path.
    if let Some(keep) = std::env::var_os("SINKHOLE_KEEP_SCREENSHOT") {
        std::fs::copy(&shot, keep).unwrap();
    }
    drop(server);
    let _ = std::fs::remove_dir_all(&base);
}
