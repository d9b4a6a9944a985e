# sinkhole — two commands do all the set-up on a fresh machine:
#   make run    installs what is missing, starts a local Kafka, runs the default probe/comparison
#   make test   installs what is missing, runs unit and integration tests against real brokers
KAFKA ?= 4.4.0
# Versions the integration tests need (the probe test also runs 4.0.2).
TEST_KAFKA ?= 4.4.0,4.0.2
CARGO ?= cargo
BIN := target/release/sinkhole

.PHONY: deps build setup run test clippy clean-clusters

deps:
	@scripts/install-deps.sh

build: deps
	$(CARGO) build --release --bin sinkhole

setup: build
	$(BIN) setup --kafka $(KAFKA)

run: setup
	$(BIN) probe --kafka $(KAFKA)

test: deps
	$(CARGO) build --bin sinkhole
	target/debug/sinkhole setup --kafka $(TEST_KAFKA)
	scripts/test-summary.sh --workspace

clippy:
	$(CARGO) clippy --workspace --all-targets -- -D warnings
