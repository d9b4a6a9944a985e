#!/usr/bin/env bash
# `make test`: every step timed, the test binaries last (scripts/test-run.py), which ends with
# the time breakdown and the summary line.
#
#   scripts/make-test.sh KAFKA_VERSIONS FLINK CONNECTOR
#
# Steps: the tools (install-deps), the shape check, one debug build of every test binary and of
# the binary they run (with the containers backend) with Maven's downloads and the Flink job's own
# unit tests beside it (scripts/maven-warm.sh), Kafka and Flink into the cache (`sinkhole setup`,
# with that binary, from the warm ~/.m2), then the Rust test binaries,
# inside the Podman service when one can run (without an engine the containers tests are skipped
# by name).
#
# One build, not two: `cargo build --bin sinkhole` alone resolves other features than the
# workspace's tests do (the tests' tokio has `test-util`), so every crate above tokio would be
# compiled twice, and the workspace's own crates again at every later `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."
kafka=$1 flink=$2 connector=$3
steps=()

step() { # NAME CMD...
    local name=$1 t0=$EPOCHREALTIME
    shift
    echo "==> $name"
    "$@"
    steps+=(--step "$name=$(python3 -c "print(round($EPOCHREALTIME - $t0, 1))")")
}

step "tools (install-deps)" scripts/install-deps.sh
step "shape check" bash -c 'scripts/check-layers.sh --self-test && scripts/check-layers.sh'
cargo_args=(--workspace --features sinkhole/containers)
# Maven beside the build (scripts/maven-warm.sh): Kafka's jars into ~/.m2, then the Flink job's
# unit tests; its output is printed, and its time recorded, when it ends.
warm_log=$(mktemp)
warm_t0=$EPOCHREALTIME
# Niced: the build keeps the CPU, Maven takes what the build leaves idle (it waits on the network
# mostly; not niced, it slowed the build by 58 s, measured).
nice -n 10 scripts/maven-warm.sh "$kafka" "$flink" "$connector" >"$warm_log" 2>&1 &
warm_pid=$!
# A failed build leaves no Maven behind.
trap 'kill "$warm_pid" 2>/dev/null || true' EXIT
step "build (tests and sinkhole, debug)" cargo test --no-run "${cargo_args[@]}"
echo "==> Flink job tests (Maven) and Kafka into the Maven cache, beside the build"
warm_rc=0
wait "$warm_pid" || warm_rc=$?
# Maven 3.8 prints colour resets even with -B -Dstyle.color=never: without them.
sed 's/\x1b\[[0-9;]*m//g' "$warm_log"
rm -f "$warm_log"
trap - EXIT
# Beside the build, not after it: shown, not added to the total.
steps+=(--beside "Flink job tests and Maven downloads (beside the build)=$(python3 -c "print(round($EPOCHREALTIME - $warm_t0, 1))")")
if [ "$warm_rc" -ne 0 ]; then
    echo "make test: the Flink job's unit tests failed (mvn test in subjects/flink, exit $warm_rc)" >&2
    exit "$warm_rc"
fi
step "setup (Kafka, Flink)" target/debug/sinkhole setup --kafka "$kafka" --flink "$flink" --connector "$connector"
exec scripts/podman-service.sh run scripts/test-run.py "${steps[@]}" "${cargo_args[@]}"
