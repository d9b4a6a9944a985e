#!/usr/bin/env bash
# The shape check of the workspace, run by `make test` and `make layers`:
# crates depend only on the crates below them and use every dependency they
# name; inside the rig and checker crates a module uses only the layers below
# it; the files of every module directory import one way; no source file over
# 800 lines and no function over 120 lines outside tests. scripts/shape.py
# holds the rules, the orders (CRATES, LAYERS) and the lists that only shrink
# (KNOWN_LOOPS, KNOWN_LONG); docs/ARCHITECTURE.md explains the orders.
#
# scripts/check-layers.sh [ROOT]        check the tree at ROOT (default: the repository)
# scripts/check-layers.sh --sizes [ROOT] the 15 largest files and the 20 longest functions
# scripts/check-layers.sh --self-test   show that each rule refuses a small bad tree and
#                                       passes a good one
set -euo pipefail
exec python3 "$(dirname "$0")/shape.py" "$@"
