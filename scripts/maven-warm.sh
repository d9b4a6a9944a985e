#!/usr/bin/env bash
# Beside `make test`'s build: Maven's downloads while cargo compiles. The build is bound by the
# CPU, the downloads by the network, so on a machine with an empty ~/.m2 they overlap instead of
# following each other (measured on a 2-core machine with nothing cached: `sinkhole setup` of
# three Kafka versions and Flink took 178.5 s after the build).
#
#   scripts/maven-warm.sh KAFKA_VERSIONS [FLINK CONNECTOR]
#
# (`make run` calls it with Kafka's version alone, beside its release build.)
#
# 1. Kafka: `mvn dependency:get` of kafka_2.13 and kafka-tools for each version puts the jars and
#    Maven's dependency plugin into ~/.m2; `sinkhole setup` then only copies them (it resolves
#    the same artifacts, install/src/maven.rs). A failure here is not fatal: setup reports it.
# 2. The Flink job's own unit tests (`mvn test` in subjects/flink), which resolve the Flink
#    jars `sinkhole setup --flink` copies. A failure here fails `make test`.
set -uo pipefail
cd "$(dirname "$0")/.."
kafka=$1 flink=${2:-} connector=${3:-}
for v in ${kafka//,/ }; do
    for a in kafka_2.13 kafka-tools; do
        mvn -B -q -Dstyle.color=never dependency:get -Dartifact="org.apache.kafka:$a:$v" >/dev/null 2>&1 ||
            echo "maven-warm: org.apache.kafka:$a:$v not fetched (sinkhole setup will say why)"
    done
done
[ -n "$flink" ] || exit 0
cd subjects/flink && exec mvn -q -B -Dstyle.color=never -Dflink.version="$flink" -Dconnector.version="$connector" test
