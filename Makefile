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
BIN := target/release/sinkhole

.PHONY: deps build setup run probe bench bench-checker report-screenshot test clippy nightly layers

deps:
	@scripts/install-deps.sh

build: deps
	$(CARGO) build --release --bin sinkhole

setup: build
	$(BIN) setup --kafka $(KAFKA) --flink $(FLINK) --connector $(CONNECTOR)

# The default comparison: legacy vs twopc-inject vs kip939 through an outage
# longer than the transaction timeout, on a local 1-broker cluster.
run: setup
	$(BIN) run scenarios/flip319-long-outage.yaml --kafka $(KAFKA)

# What the broker supports for KIP-939.
probe: setup
	$(BIN) probe --kafka $(KAFKA)

# Throughput of the rig's wire producer vs librdkafka, side by side (release build).
bench: setup
	$(BIN) run scenarios/throughput.yaml --kafka $(KAFKA)

# The checker on 10 million synthetic records: records/s and peak memory per record.
bench-checker: build
	$(BIN) bench-checker --records 10000000

# The nightly matrix: every library scenario (scenarios/ minus
# scenarios/matrix-exclude.txt), each with the modes its file names, on
# $(NIGHTLY_KAFKA) (comma-separated for several), one random seed (printed and
# kept in matrix.json). Extra flags: NIGHTLY_ARGS="--seed-count 3 --fail-fast".
NIGHTLY_KAFKA ?= 4.4.0
NIGHTLY_ARGS ?=
nightly: build
	$(BIN) setup --kafka $(NIGHTLY_KAFKA) --flink $(FLINK) --connector $(CONNECTOR)
	$(BIN) matrix scenarios --kafka $(NIGHTLY_KAFKA) $(NIGHTLY_ARGS)

# Render the newest run's report.html in headless Chromium (results/report.png, not in git).
report-screenshot:
	scripts/report-screenshot.sh "$$(ls -td results/*/report.html | head -1)" results/report.png

# The containers backend's tests need an engine: podman-service.sh installs Podman, starts its
# Docker-API service for the run and stops it after (without one they are skipped by name).
test: deps
	scripts/check-layers.sh --self-test
	scripts/check-layers.sh
	$(CARGO) build --bin sinkhole
	target/debug/sinkhole setup --kafka $(TEST_KAFKA) --flink $(FLINK) --connector $(CONNECTOR)
	cd subjects/flink && mvn -q -B -Dflink.version=$(FLINK) -Dconnector.version=$(CONNECTOR) test
	scripts/podman-service.sh run scripts/test-summary.sh --workspace

clippy:
	$(CARGO) clippy --workspace --all-targets -- -D warnings

# The shape check alone: one-way layers, files of a module importing one way, no file over 800
# lines outside tests.
layers:
	scripts/check-layers.sh
