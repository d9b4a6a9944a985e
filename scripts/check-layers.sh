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
# 2. Files. Inside every module directory of every crate (rig, workloads,
#    faults, kafka) the files import each other one way too: no loop, not
#    even between two files. scripts/file_cycles.py reads the `use` lines
#    and the `crate::`/`super::`/`self::` paths in code (comments and test
#    code left out as above; a parent's `mod x;` is no import, and a name
#    reached through a parent's `pub use` is an import of the file it comes
#    from) and prints each loop as its files in order with the names that
#    tie them.
# 3. Size. No source file of the workspace is over 800 lines outside its tests.
#
# scripts/check-layers.sh [ROOT]      check the tree at ROOT (default: the repository)
# scripts/check-layers.sh --self-test  show that the check fails on an upward import,
#                                      and on two files that import each other
set -euo pipefail

LAYERS="
utc procs term provenance
install
scenario
cluster
history
subject
nemesis observer
runner
latency
checker premise
verdict
results
run
matrix probe
calibrate shrink
serve
cli
"
MAX_LINES=800

# Loops between files allowed for a while (none today), exactly as
# the file check prints them. Listed loops are reported but pass; a listed
# loop that is gone fails, so this list only shrinks: delete its line then.
KNOWN_LOOPS="
"
SCRIPTS=$(cd "$(dirname "$0")" && pwd)

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

    local known=()
    while IFS= read -r line; do
        [ -n "$line" ] && known+=(--known "$line")
    done <<<"$KNOWN_LOOPS"
    python3 "$SCRIPTS/file_cycles.py" "$root" "${known[@]}" || bad=1
    return $bad
}

if [ "${1:-}" = "--self-test" ]; then
    repo=$(cd "$(dirname "$0")/.." && pwd)
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    KNOWN_LOOPS=""
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

    # Two files of one module directory that import each other. The parent's
    # `mod`/`pub use` lines, and b's test code, which names a, are no imports.
    printf 'use crate::utc::Utc;\n' >"$tmp/rig/src/scenario/mod.rs"
    mkdir -p "$tmp/kafka/src"
    printf 'pub mod a;\npub mod b;\npub use a::A;\npub use b::B;\n' >"$tmp/kafka/src/lib.rs"
    printf 'use crate::b::B;\npub struct A(B);\n' >"$tmp/kafka/src/a.rs"
    printf 'pub struct B;\n#[cfg(test)]\nmod tests {\n    use crate::a::A;\n}\n' >"$tmp/kafka/src/b.rs"
    check "$tmp" >/dev/null || { echo "self-test: a one-way pair of files was refused"; exit 1; }
    printf 'use super::A;\npub struct B;\nimpl B {\n    fn a(&self) -> Option<A> {\n        None\n    }\n}\n' >"$tmp/kafka/src/b.rs"
    if out=$(check "$tmp"); then
        echo "self-test: two files importing each other (a.rs ↔ b.rs) were not caught"
        exit 1
    fi
    case "$out" in
        *"kafka/src/: files import each other in a loop: a.rs → b.rs → a.rs"*"a.rs → b.rs: B (a.rs:1)"*"b.rs → a.rs: A (b.rs:1)"*) ;;
        *) echo "self-test: unexpected report: $out"; exit 1 ;;
    esac
    # A known loop passes while it is there, and fails once it is gone.
    KNOWN_LOOPS="kafka/src/: a.rs → b.rs → a.rs"
    check "$tmp" >/dev/null || { echo "self-test: a known loop was refused"; exit 1; }
    printf 'pub struct B;\n' >"$tmp/kafka/src/b.rs"
    if out=$(check "$tmp"); then
        echo "self-test: a known loop that is gone was not reported"
        exit 1
    fi
    case "$out" in
        *"kafka/src/: a.rs → b.rs → a.rs: this known loop is gone"*) ;;
        *) echo "self-test: unexpected report: $out"; exit 1 ;;
    esac
    echo "layer check self-test: an upward import and an import loop between two files are refused"
    exit 0
fi

root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
if check "$root"; then
    echo "layers: ok (every module uses only the layers below it; the files of each module directory import one way; no file over $MAX_LINES lines outside tests)"
else
    exit 1
fi
