#!/usr/bin/env bash
# Installs what sinkhole needs from Debian's packages, only where it is missing:
# a JDK 17+ (brokers), Maven (fetches Kafka from Maven Central), and a C
# toolchain for native crates, openssl for the TLS tests' certificates. Safe to run again: it installs nothing twice.
set -euo pipefail

need=()
command -v java >/dev/null 2>&1 || need+=(openjdk-17-jre-headless)
command -v mvn  >/dev/null 2>&1 || need+=(maven)
command -v cc   >/dev/null 2>&1 || need+=(build-essential)
command -v cmake >/dev/null 2>&1 || need+=(cmake)
command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config)
# openssl: the TLS tests make their CA and broker certificates with it; libssl-dev: librdkafka
# is built with OpenSSL (TLS and SCRAM for external clusters).
command -v openssl >/dev/null 2>&1 || need+=(openssl)
pkg-config --exists openssl 2>/dev/null || need+=(libssl-dev)

if ((${#need[@]})); then
  if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps: missing ${need[*]}; run as root or install them yourself (apt-get install ${need[*]})" >&2
    exit 1
  fi
  echo "install-deps: installing ${need[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${need[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
  echo "install-deps: cargo is missing: install Rust (rustup) first" >&2
  exit 1
fi
echo "install-deps: java, mvn, cargo present" >&2
