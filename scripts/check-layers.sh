#!/usr/bin/env bash
# The shape check: data flows one way through the rig.
#
# 1. Layers. LAYERS below is the one place their order is written (bottom
#    first; docs/ARCHITECTURE.md explains each). A module of the rig crate
#    may use (`crate::x`) only modules on lines above its own; modules on
#    one line are siblings and use neither each other nor anything above
#    them. Import cycles between modules are then impossible. Test code
#    (files named tests.rs or *_tests.rs, and everything after a file's first
#    `#[cfg(test)]`) may reach anything, to check end to end.
# 2. Size. No source file of the workspace is over 800 lines outside its tests.
#
# scripts/check-layers.sh [ROOT]      check the tree at ROOT (default: the repository)
# scripts/check-layers.sh --self-test  show that the check fails on an upward import
set -euo pipefail

LAYERS="
utc procs term provenance
install
scenario
cluster
history
subject
nemesis
runner
latency
checker
verdict
results
run
matrix probe
serve
cli
"
MAX_LINES=800

# The code of a file, without its tests; comments are blanked (a doc link to
# a higher layer is no dependency), so line numbers stay right.
code_of() {
    awk '/^[[:space:]]*#\[cfg\(test\)\]/ { exit } /^[[:space:]]*\/\// { print ""; next } { print }' "$1"
}

check() {
    local root=$1 bad=0 file rel module mine used theirs line
    declare -A level=()
    local i=0 m
    while read -r line; do
        [ -n "$line" ] || continue
        for m in $line; do level[$m]=$i; done
        i=$((i + 1))
    done <<<"$LAYERS"

    while IFS= read -r file; do
        rel=${file#"$root"/rig/src/}
        case "$rel" in
            lib.rs | main.rs) continue ;;
            */tests.rs | tests.rs | *_tests.rs) continue ;;
        esac
        module=${rel%%/*}
        module=${module%.rs}
        if [ -z "${level[$module]+x}" ]; then
            echo "rig/src/$rel: module '$module' is in no layer: add it to LAYERS in scripts/check-layers.sh"
            bad=1
            continue
        fi
        mine=${level[$module]}
        while IFS=: read -r n used; do
            [ "$used" = "$module" ] && continue
            if [ -z "${level[$used]+x}" ]; then
                echo "rig/src/$rel:$n: uses crate::$used, which is in no layer"
                bad=1
                continue
            fi
            theirs=${level[$used]}
            if [ "$theirs" -ge "$mine" ]; then
                echo "rig/src/$rel:$n: $module (layer $mine) uses crate::$used (layer $theirs): a lower layer never uses a higher one or a sibling"
                bad=1
            fi
        done < <(code_of "$file" | grep -noE 'crate::[a-z_]+' | sed -E 's/:crate::/:/' | sort -t: -k2,2 -u)
        if code_of "$file" | grep -q 'super::super::'; then
            echo "rig/src/$rel: reaches out of its module with super::super:: — name the module (crate::...) so the layers can be checked"
            bad=1
        fi
    done < <(find "$root/rig/src" -name '*.rs' | sort)

    while IFS= read -r file; do
        rel=${file#"$root"/}
        case "$rel" in */tests.rs | *_tests.rs | */tests/*) continue ;; esac
        n=$(code_of "$file" | wc -l)
        if [ "$n" -gt "$MAX_LINES" ]; then
            echo "$rel: $n lines outside its tests (at most $MAX_LINES)"
            bad=1
        fi
    done < <(find "$root" -path "$root/target" -prune -o -path "$root/*/src/*.rs" -name '*.rs' -print | sort)
    return $bad
}

if [ "${1:-}" = "--self-test" ]; then
    repo=$(cd "$(dirname "$0")/.." && pwd)
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    mkdir -p "$tmp/rig/src/scenario" "$tmp/rig/src/verdict"
    printf 'use crate::utc::Utc;\n' >"$tmp/rig/src/scenario/mod.rs"
    printf 'use crate::scenario::Scenario;\n' >"$tmp/rig/src/verdict/mod.rs"
    check "$tmp" >/dev/null || { echo "self-test: a clean tree was refused"; exit 1; }
    printf 'use crate::verdict::Verdict;\n' >>"$tmp/rig/src/scenario/mod.rs"
    if out=$(check "$tmp"); then
        echo "self-test: an upward import (scenario → verdict) was not caught"
        exit 1
    fi
    case "$out" in
        *"scenario/mod.rs:2: scenario (layer 2) uses crate::verdict"*) ;;
        *) echo "self-test: unexpected report: $out"; exit 1 ;;
    esac
    echo "layer check self-test: an upward import is refused"
    exit 0
fi

root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
if check "$root"; then
    echo "layers: ok (every module uses only the layers below it; no file over $MAX_LINES lines outside tests)"
else
    exit 1
fi
