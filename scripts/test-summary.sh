#!/usr/bin/env bash
# Runs `cargo test` with the given arguments, then prints one closing line that
# sums every test binary's result: "summary: N passed, N failed, N skipped"
# (cargo's "ignored" are counted as skipped). Exits with cargo's status.
set -uo pipefail
log=$(mktemp)
trap 'rm -f "$log"' EXIT
cargo test "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
awk '
  /^test result:/ {
    for (i = 1; i <= NF; i++) {
      if ($(i+1) ~ /^passed/)  p += $i
      if ($(i+1) ~ /^failed/)  f += $i
      if ($(i+1) ~ /^ignored/) s += $i
    }
  }
  END { printf "summary: %d passed, %d failed, %d skipped\n", p, f, s }
' "$log"
exit "$status"
