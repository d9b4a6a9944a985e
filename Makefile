# sinkhole — two commands do all the set-up on a fresh machine:
#   make run    installs what is missing, starts a local Kafka, runs the FLIP-319 comparison
#   make test   installs what is missing, runs unit and integration tests against real brokers
KAFKA ?= 4.4.0
# The Flink subject (flink-kafkasink mode): one Flink release and its connector, installed by
# `make setup` and `make test` (cached per version in ~/.cache/sinkhole/flink/).
FLINK ?= 2.2.1
CONNECTOR ?= 5.0.0-2.2
# Versions the integration tests need (the probe test also runs 4.2.0 and 4.0.2).
TEST_KAFKA ?= 4.4.0,4.2.0,4.0.2
CARGO ?= cargo
# The release binary, where cargo puts it (CARGO_TARGET_DIR, when set, moves it).
BIN := $(or $(CARGO_TARGET_DIR),target)/release/sinkhole
# Cargo features of the binary `make build`/`make run` make: none by default. The containers
# backend is one (`make build FEATURES=containers`); `make test` always builds it, to test it.
FEATURES ?=
FEATURE_FLAGS := $(if $(FEATURES),--features $(FEATURES))

.PHONY: deps build setup setup-kafka run probe bench bench-checker report-screenshot test clippy nightly layers

deps:
	@scripts/install-deps.sh

build: deps
	$(CARGO) build --release --bin sinkhole $(FEATURE_FLAGS)

setup: build
	$(BIN) setup --kafka $(KAFKA) --flink $(FLINK) --connector $(CONNECTOR)

# Kafka alone: what `make run` and `make probe` need (the Flink subject is for the flink-kafkasink
# mode; on a machine with no cache it costs 45 s that the default comparison does not use).
# Kafka's jars come into ~/.m2 beside the release build (scripts/maven-warm.sh: the build waits
# on the CPU, the download on the network), so setup then only copies them.
setup-kafka: deps
	@nice -n 10 scripts/maven-warm.sh $(KAFKA) & warm=$$!; \
	$(CARGO) build --release --bin sinkhole $(FEATURE_FLAGS) || { kill $$warm 2>/dev/null; exit 1; }; \
	wait $$warm
	$(BIN) setup --kafka $(KAFKA)

# The default comparison: legacy vs twopc-inject vs kip939 through an outage
# longer than the transaction timeout, on a local 1-broker cluster.
run: setup-kafka
	$(BIN) run scenarios/flip319-long-outage.yaml --kafka $(KAFKA)

# What the broker supports for KIP-939.
probe: setup-kafka
	$(BIN) probe --kafka $(KAFKA)

# Throughput (release build): the rig's wire producer vs librdkafka, side by side (the run's
# table), then the wire producer vs Kafka's own Java transactional producer (its perf test),
# each alone in turn on one cluster, $(BENCH_ROUNDS) rounds: medians, ratios, and
# results/bench-<timestamp>/bench.json.
BENCH_ROUNDS ?= 5
bench: setup
	$(BIN) run scenarios/throughput.yaml --kafka $(KAFKA)
	$(BIN) bench-producers scenarios/throughput.yaml --kafka $(KAFKA) --rounds $(BENCH_ROUNDS)

# The checker on 10 million synthetic records: records/s and peak memory per record.
bench-checker: build
	$(BIN) bench-checker --records 10000000

# The nightly matrix: every library scenario (scenarios/ minus
# scenarios/matrix-exclude.txt), each with the modes its file names, on
# $(NIGHTLY_KAFKA) (comma-separated for several), one random seed (printed and
# kept in matrix.json). Extra flags: NIGHTLY_ARGS="--seed-count 3 --fail-fast".
# With several seeds the matrix measures stability and ends with one line,
# `stable 58 of 58 cells over 5 seeds` (or the flaky ones named);
# NIGHTLY_ARGS="--seed-count 5 --fail-on-flaky" also fails the job on a flaky one.
NIGHTLY_KAFKA ?= 4.4.0
NIGHTLY_ARGS ?=
#
# Then the known Kafka bug's first bad release: `sinkhole bisect` of
# markers-skipped-leader-dies (the marker bug on 3 brokers, which loses records on
# every seed of an affected release; the single node's loss also needs a race inside
# the broker, docs/SCENARIOS.md) over $(NIGHTLY_BISECT), 3 seeds a version, held to
# the release its expect_by names (exit 1 when the releases say otherwise).
NIGHTLY_BISECT ?= 4.0.0..4.4.0
NIGHTLY_FIRST_BAD ?= 4.3.0
#
# Then the detection power: `sinkhole calibrate` over the same library, every mutant sink
# beside the faithful modes (calibrate.json/.html: which scenario catches which mutant; it
# fails when a mutant escapes every scenario or a faithful mode is flagged). Then the slow
# tests `make test` leaves to it (`#[ignore]`d there, with the reason): the reproductions of
# Flink bugs in rig/tests/integration/flink_live.rs, the FLIP-319 outage on containers (inside
# the Podman service, as make test runs its containers tests) and the same outage run
# side by side and one mode after the other. The job fails if any part failed, and every part
# always runs.
nightly: build
	$(BIN) setup --kafka $(NIGHTLY_KAFKA) --flink $(FLINK) --connector $(CONNECTOR)
	status=0; \
	$(BIN) matrix scenarios --kafka $(NIGHTLY_KAFKA) $(NIGHTLY_ARGS) || status=$$?; \
	$(BIN) calibrate scenarios --kafka $(NIGHTLY_KAFKA) || status=1; \
	$(BIN) bisect scenarios/markers-skipped-leader-dies.yaml --kafka $(NIGHTLY_BISECT) --seed-count 3 \
		--expect-first $(NIGHTLY_FIRST_BAD) || status=1; \
	scripts/podman-service.sh run $(CARGO) test -p sinkhole --features sinkhole/containers --test integration -- \
		--ignored flink_live:: containers_scenario:: scenarios_live:: || status=1; \
	exit $$status

# Render the newest run's report.html in headless Chromium (results/report.png, not in git).
report-screenshot:
	scripts/report-screenshot.sh "$$(ls -td results/*/report.html | head -1)" results/report.png

# Every step timed (scripts/make-test.sh); the test binaries run through scripts/test-run.py,
# side by side where they do not disturb each other, and the last lines are the time breakdown
# and the summary. The containers backend's tests need an engine: podman-service.sh installs
# Podman, starts its Docker-API service for the run and stops it after (without one they are
# skipped by name).
test:
	scripts/make-test.sh $(TEST_KAFKA) $(FLINK) $(CONNECTOR)

clippy:
	$(CARGO) clippy --workspace --all-targets -- -D warnings

# The shape check alone: one-way layers, files of a module importing one way, no file over 800
# lines outside tests.
layers:
	scripts/check-layers.sh
