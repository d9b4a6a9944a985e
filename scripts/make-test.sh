#!/usr/bin/env bash
# `make test`: every step timed, the test binaries last (scripts/test-run.py), which ends with
# the time breakdown and the summary line.
#
#   scripts/make-test.sh KAFKA_VERSIONS FLINK CONNECTOR
#
# Steps: the tools (install-deps), the shape check, one debug build of every test binary and of
# the binary they run (with the containers backend), Kafka and Flink into the cache (`sinkhole
# setup`, with that binary), the Flink job's own unit tests (Maven), then the Rust test binaries,
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
step "build (tests and sinkhole, debug)" cargo test --no-run "${cargo_args[@]}"
step "setup (Kafka, Flink)" target/debug/sinkhole setup --kafka "$kafka" --flink "$flink" --connector "$connector"
step "Flink job tests (Maven)" bash -c "cd subjects/flink && mvn -q -B -Dflink.version=$flink -Dconnector.version=$connector test"
exec scripts/podman-service.sh run scripts/test-run.py "${steps[@]}" "${cargo_args[@]}"
