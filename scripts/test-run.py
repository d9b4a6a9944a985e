#!/usr/bin/env python3
"""`make test`'s runner: one build of every test binary, then the binaries, some side by side.

    scripts/test-run.py [--jobs N] [--step NAME=SECONDS]... [--beside NAME=SECONDS]... CARGO_TEST_ARGS...
                        [-- TEST_BINARY_ARGS...]

What `cargo test` does, with three differences:

1. Binaries that do not disturb each other run side by side. `cargo test` runs one test binary
   after another; most of ours spend their time waiting on brokers and JVMs starting, not on the
   CPU. A binary is *exclusive* (it runs alone) when its faults or its timing need the machine to
   itself: the rig's nemesis reports a fault that fired late as such (the verdict is then
   inconclusive), and a run starved of CPU fires late. EXCLUSIVE lists them; every other binary
   shares the machine with at most `--jobs - 1` others (default 2 at once).
2. Each binary's output is kept whole and printed when it ends, with its time, so the log of a
   parallel run reads like a serial one.
3. It ends with where the time went: the steps `make test` ran before it (`--step`; a step that
   ran at the same time as another, `--beside`, is shown and left out of the total), the build,
   each binary (longest first), the wall time of the tests, then the line that sums every binary:
   `summary: N passed, N failed, N skipped` (the runner's last line, cargo's "ignored" counted as
   skipped). It exits 0 when every binary passed, else 101 as `cargo test` does.

A binary made of modules (MODULAR: the rig's `integration` crate) is run as one process per
module, each counted, scheduled and reported as a binary of its own under the module's name.
Each binary runs in its package's directory with the variables cargo gives a test at run time.
Doc tests run last, through cargo (`cargo test --doc`), which builds and runs them itself.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

# Binaries that run alone: they drive faults whose timing the verdicts judge (the library
# scenarios, calibration, the matrix, the latency histograms, scenarios on containers). The
# others share the machine: their faults are confirmed by their effect, not judged by their
# timing (the containers' node and network faults, checked on the engine; the Flink tests left
# here run clean jobs, kill the rig, or install; the reproductions of Flink bugs run in `make
# nightly`).
EXCLUSIVE = {
    "scenarios_live",
    "calibrate_live",
    "explore_live",
    "containers_scenario",
    "matrix",
    "latency_live",
}

# The shared binaries that took longest in CI (each one to four minutes), longest first: a
# queue that starts them first ends with short ones running side by side, not one long one
# alone. A hint for the order only; a name missing here just runs in build order.
LONG_FIRST = ["external_live", "flink_live", "share_source_live", "proxy_live", "local_cluster", "producer_live"]

# Test binaries made of modules, each module run as a binary of its own (`split`).
MODULAR = {"integration"}

RESULT = re.compile(r"^test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored")


def build(cargo_args):
    """Builds every test binary once; returns [(name, kind, package_dir, executable)]."""
    cmd = ["cargo", "test", "--no-run", "--message-format=json-render-diagnostics"] + cargo_args
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    bins = []
    for line in p.stdout:
        try:
            m = json.loads(line)
        except json.JSONDecodeError:
            continue
        if m.get("reason") != "compiler-artifact" or not m.get("executable") or not m["profile"]["test"]:
            continue
        t = m["target"]
        kind = t["kind"][0]
        pkg_dir = os.path.dirname(m["manifest_path"])
        name = t["name"] if kind == "test" else f"{t['name']} ({kind})"
        bins.append((name, kind, pkg_dir, m["executable"], m["package_id"]))
    if p.wait() != 0:
        sys.exit(p.returncode or 101)
    return bins


def package_env(package_id, pkg_dir):
    """The variables cargo sets for a test at run time."""
    env = dict(os.environ)
    name, version = package_id, ""
    m = re.search(r"#(?:([\w-]+)@)?([\d.]+)$", package_id)
    if m:
        version = m.group(2)
        name = m.group(1) or os.path.basename(pkg_dir)
    env.update({"CARGO_MANIFEST_DIR": pkg_dir, "CARGO_PKG_NAME": name, "CARGO_PKG_VERSION": version})
    return env


class Run:
    def __init__(self, name, pkg_dir, exe, package_id, args):
        self.name, self.pkg_dir, self.exe, self.package_id, self.args = name, pkg_dir, exe, package_id, args
        self.passed = self.failed = self.ignored = 0
        self.status = None
        self.seconds = 0.0
        self.out = ""

    def run(self):
        t0 = time.monotonic()
        with tempfile.TemporaryFile(mode="w+") as log:
            self.status = subprocess.call(
                [self.exe] + self.args,
                cwd=self.pkg_dir,
                env=package_env(self.package_id, self.pkg_dir),
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            log.seek(0)
            self.out = log.read()
        self.seconds = time.monotonic() - t0
        for line in self.out.splitlines():
            r = RESULT.match(line)
            if r:
                self.passed, self.failed, self.ignored = map(int, r.groups())
        if self.status != 0 and self.failed == 0:
            self.failed = 1  # crashed, or refused its arguments: counted, never silent


def split(run):
    """A test binary whose tests live in modules (the rig's `integration` crate: one crate builds
    far faster than one per file) as one run per module, named by the module and given its tests
    by exact name: each runs in a process of its own and is scheduled (EXCLUSIVE, LONG_FIRST),
    timed and reported as a binary of its own. Any other binary is one run."""
    if run.name not in MODULAR:
        return [run]
    listed = subprocess.run(
        [run.exe, "--list", "--format", "terse"],
        cwd=run.pkg_dir,
        env=package_env(run.package_id, run.pkg_dir),
        stdout=subprocess.PIPE,
        text=True,
        check=True,
    ).stdout
    by_module = {}
    for line in listed.splitlines():
        name, _, kind = line.rpartition(": ")
        if kind == "test" and "::" in name:
            by_module.setdefault(name.split("::", 1)[0], []).append(name)
    return [
        Run(module, run.pkg_dir, run.exe, run.package_id, ["--exact"] + names + run.args)
        for module, names in by_module.items()
    ]


def run_all(runs, jobs):
    """Exclusive binaries alone, the others up to `jobs` at once; output printed as each ends."""
    lock = threading.Lock()

    def report(r):
        with lock:
            print(f"     Running {r.name} ({os.path.relpath(r.exe)})", flush=True)
            sys.stdout.write(r.out)
            print(f"     {r.name}: {r.seconds:.1f} s, exit {r.status}\n", flush=True)

    shared = [r for r in runs if r.name not in EXCLUSIVE]
    alone = [r for r in runs if r.name in EXCLUSIVE]
    # The shared ones first, the long ones (LONG_FIRST) at the head of the queue so that the
    # last to end is a short one; the rest in build order.
    queue = sorted(shared, key=lambda r: LONG_FIRST.index(r.name) if r.name in LONG_FIRST else len(LONG_FIRST))
    active = []
    while queue or active:
        while queue and len(active) < max(1, jobs):
            r = queue.pop(0)
            t = threading.Thread(target=lambda r=r: (r.run(), report(r)))
            t.start()
            active.append(t)
        active[0].join(timeout=0.2)
        active = [t for t in active if t.is_alive()]
    for r in alone:
        r.run()
        report(r)


def main(argv):
    jobs, steps, beside, i = 2, [], [], 0
    while i < len(argv) and argv[i] in ("--jobs", "--step", "--beside"):
        if argv[i] == "--jobs":
            jobs = int(argv[i + 1])
        else:
            name, secs = argv[i + 1].rsplit("=", 1)
            (steps if argv[i] == "--step" else beside).append((name, float(secs)))
        i += 2
    rest = argv[i:]
    cargo_args, bin_args = (rest[: rest.index("--")], rest[rest.index("--") + 1 :]) if "--" in rest else (rest, [])

    wall0 = time.monotonic()
    t0 = time.monotonic()
    bins = build(cargo_args)
    build_s = time.monotonic() - t0
    runs = [r for (n, _k, d, e, pid) in bins for r in split(Run(n, d, e, pid, bin_args))]
    t0 = time.monotonic()
    run_all(runs, jobs)
    tests_s = time.monotonic() - t0

    t0 = time.monotonic()
    doc = subprocess.run(
        ["cargo", "test", "--doc"] + [a for a in cargo_args if a != "--all-targets"] + ["--"] + bin_args,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    doc_s = time.monotonic() - t0
    sys.stdout.write(doc.stdout)
    doc_run = Run("doc tests", ".", "cargo", "", [])
    doc_run.status, doc_run.seconds = doc.returncode, doc_s
    for line in doc.stdout.splitlines():
        r = RESULT.match(line)
        if r:
            doc_run.passed += int(r.group(1))
            doc_run.failed += int(r.group(2))
            doc_run.ignored += int(r.group(3))
    if doc.returncode != 0 and doc_run.failed == 0:
        doc_run.failed = 1
    runs.append(doc_run)

    total = time.monotonic() - wall0
    print("time breakdown:")
    for name, secs in steps:
        print(f"  {name:<28} {secs:8.1f} s")
    for name, secs in beside:
        print(f"  {name:<28} {secs:8.1f} s   (at the same time as the step before: not in the total)")
    print(f"  {'test build':<28} {build_s:8.1f} s")
    print(f"  {'test binaries (wall)':<28} {tests_s:8.1f} s   ({jobs} at once; alone: {', '.join(sorted(EXCLUSIVE))})")
    for r in sorted(runs, key=lambda r: -r.seconds):
        mark = "" if r.name in EXCLUSIVE or r.name == "doc tests" else "  (shared)"
        fail = f"  FAILED ({r.failed})" if r.failed else ""
        print(f"    {r.name:<40} {r.seconds:8.1f} s{mark}{fail}")
    print(f"  {'total':<28} {sum(s for _, s in steps) + total:8.1f} s")
    p = sum(r.passed for r in runs)
    f = sum(r.failed for r in runs)
    s = sum(r.ignored for r in runs)
    print(f"summary: {p} passed, {f} failed, {s} skipped")
    return 0 if f == 0 else 101


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
