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
# 2. The Flink job's own unit tests, then its jar and its cluster classpath, in subjects/flink
#    (`mvn package dependency:copy-dependencies`): the tests resolve the Flink jars, and the
#    jar and copy plugins are the ones `sinkhole setup --flink` runs on the same pom
#    (install/src/flink.rs), so setup downloads nothing more (in CI it fetched 176 files, 18 s,
#    after `mvn test` alone). A failure here fails `make test`.
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
lib=$(mktemp -d)
trap 'rm -rf "$lib"' EXIT
cd subjects/flink && mvn -q -B -Dstyle.color=never -Dflink.version="$flink" -Dconnector.version="$connector" \
    package dependency:copy-dependencies -DincludeScope=provided -DoutputDirectory="$lib"
