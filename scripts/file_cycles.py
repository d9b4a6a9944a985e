#!/usr/bin/env python3
"""No import cycle between the files of one module directory (called by check-layers.sh).

The layer check orders the rig's top-level modules; this orders the files
inside every module directory of every crate. The nodes of a directory are
its child modules: each file, and each subdirectory taken as a whole (what
any file under it imports). The directory's own module file (mod.rs, lib.rs,
main.rs, or `x.rs` beside `x/`) is the module's face, not a node: declaring
`mod x;` is no import, its items are below every child, and a name a child
reaches through it (`use super::Problem`, where mod.rs says `pub use
load::Problem`) is an import of the file the name is re-exported from.

A file imports a sibling when a `use` line names it (`use super::x::…`,
`use crate::m::x::…`, `use self::…`, `use x::…` for a child module in
scope, `use super::*` for each name the file then uses) or a `crate::`,
`super::` or `self::` path in its code does. Comments and test code (files
named tests.rs or *_tests.rs, and everything after a file's first
`#[cfg(test)]`) do not count, as in the layer check. Each loop is printed as
its files in order, then the names that tie each file to the next.

scripts/file_cycles.py ROOT [--known LOOP]...
    check the crates under ROOT; exit 1 on any loop but a known one, and on a
    known one that is gone (LOOP as printed: `dir/: a.rs → b.rs → a.rs`)
"""
import argparse
import os
import re
import sys

CRATES = ("rig", "workloads", "faults", "kafka")
MAX_CYCLES = 50  # per directory: enough to see the shape of a tangle

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
VIS = r"(?:pub(?:\([^)]*\))?[ \t]+)?"
USE_RE = re.compile(r"^[ \t]*" + VIS + r"use[ \t]+([^;]+);", re.M)
MOD_RE = re.compile(r"^[ \t]*" + VIS + r"mod[ \t]+(" + IDENT + r")[ \t]*;", re.M)
# top-level items only (rustfmt puts them in column 0): methods are no names of a module
ITEM_RE = re.compile(
    r"^" + VIS + r"(?:(?:async|const|unsafe)[ \t]+)*(?:struct|enum|union|trait|type|fn|const|static)[ \t]+(" + IDENT + ")",
    re.M,
)
PATH_RE = re.compile(r"(?<![A-Za-z0-9_:])(crate|super|self)((?:::" + IDENT + r")+)")
TRAILING_COMMENT = re.compile(r'^([^"]*(?:"[^"]*"[^"]*)*?)\s//.*$')


def code_of(path):
    """The file without its tests, whole-line comments blanked (line numbers stay right)."""
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if re.match(r"^\s*#\[cfg\(test\)\]", line):
                break
            out.append("\n" if re.match(r"^\s*//", line) else line)
    return "".join(out)


def is_test_file(path):
    name = os.path.basename(path)
    return name == "tests.rs" or name.endswith("_tests.rs")


def expand(tree):
    """`a::{b, c::{d, self}}` → ["a::b", "a::c::d", "a::c"] (whitespace and `as` already gone)."""
    i = tree.find("{")
    if i < 0:
        return [tree]
    prefix, inner = tree[:i], tree[i + 1 : -1]
    parts, depth, start = [], 0, 0
    for j, ch in enumerate(inner):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(inner[start:j])
            start = j + 1
    parts.append(inner[start:])
    out = []
    for part in parts:
        if part == "self":
            out.append(prefix[:-2])
        elif part:
            out.extend(expand(prefix + part))
    return out


def uses_of(code):
    """(line, path, is_use_line) for every path a file's code names, use trees expanded."""
    found = []
    for m in USE_RE.finditer(code):
        line = code.count("\n", 0, m.start()) + 1
        tree = re.sub(r"\s+as\s+" + IDENT, "", m.group(1))
        for p in expand(re.sub(r"\s+", "", tree)):
            found.append((line, p, True))
    rest = USE_RE.sub(lambda m: "\n" * m.group(0).count("\n"), code)
    for n, text in enumerate(rest.split("\n"), 1):
        text = TRAILING_COMMENT.sub(r"\1", text)
        for m in PATH_RE.finditer(text):
            found.append((n, m.group(1) + m.group(2), False))
    return found, rest


class Crate:
    """The module tree of one crate root, found by following `mod x;` declarations."""

    def __init__(self, root_file):
        self.files = {}  # file -> its module path (a tuple of names)
        self.def_file = {}  # module path -> the file that defines it
        self.children = {}  # module path -> names of its child modules
        self.child_dir = {}  # module path -> the directory of its children
        self.items = {}  # module path -> names of the items its file defines
        self.reexports = {}  # module path -> {name: the path it re-exports}
        self.globs = {}  # module path -> module paths it re-exports whole (`pub use x::*`)
        self._walk(root_file, (), os.path.dirname(root_file))
        for mod in self.def_file:
            self._read_reexports(mod)

    def _walk(self, path, mod, child_dir):
        code = code_of(path)
        self.files[path] = mod
        self.def_file[mod] = path
        self.child_dir[mod] = child_dir
        self.children[mod] = set()
        self.items[mod] = set(ITEM_RE.findall(code))
        for name in MOD_RE.findall(code):
            sub = os.path.join(child_dir, name)
            for cand in (sub + ".rs", os.path.join(sub, "mod.rs")):
                if os.path.isfile(cand) and not is_test_file(cand):
                    self.children[mod].add(name)
                    self._walk(cand, mod + (name,), sub)
                    break

    def _read_reexports(self, mod):
        self.reexports[mod], self.globs[mod] = {}, []
        for m in re.finditer(r"^[ \t]*pub(?:\([^)]*\))?[ \t]+use[ \t]+([^;]+);", code_of(self.def_file[mod]), re.M):
            tree = m.group(1)
            renamed = dict(re.findall(r"(" + IDENT + r")\s+as\s+(" + IDENT + ")", tree))
            for p in expand(re.sub(r"\s+", "", re.sub(r"\s+as\s+" + IDENT, "", tree))):
                target = self.resolve(mod, p, True)
                if target is None:
                    continue
                if target[-1] == "*":
                    self.globs[mod].append(target[:-1])
                else:
                    self.reexports[mod][renamed.get(target[-1], target[-1])] = target

    def names_of(self, mod):
        """Every name module `mod` offers: its items, child modules and re-exports."""
        names = set(self.items.get(mod, ())) | self.children.get(mod, set()) | set(self.reexports.get(mod, {}))
        for g in self.globs.get(mod, []):
            names |= self.items.get(g, set()) | set(self.reexports.get(g, {}))
        return names

    def resolve(self, mod, path, bare_ok):
        """The absolute path a path written in module `mod` names, or None (another crate)."""
        segs = path.split("::")
        if segs[0] == "crate":
            base, rest = (), segs[1:]
        elif segs[0] in ("super", "self"):
            base, rest = mod, segs
            while rest and rest[0] in ("super", "self"):
                if rest[0] == "super":
                    base = base[:-1]
                rest = rest[1:]
        elif bare_ok and segs[0] in self.children.get(mod, ()):
            base, rest = mod, segs  # a child module in scope (2018 paths)
        else:
            return None
        return base + tuple(rest)

    def through_faces(self, level, target, seen=()):
        """`target` with a name re-exported by the module file of `level` replaced by its source."""
        k = len(level)
        if len(target) <= k or target[k] in self.children[level] or target in seen:
            return target
        name = target[k]
        if name in self.reexports[level]:
            return self.through_faces(level, self.reexports[level][name] + target[k + 1 :], seen + (target,))
        for g in self.globs[level]:
            if name in self.items.get(g, ()) or name in self.reexports.get(g, {}):
                return g + target[k:]
        return target


def ties_of(crate, path, mod):
    """(level, from-child, to-child, name, line) for each sibling a file names."""
    found, rest = uses_of(code_of(path))
    words = set(re.findall(IDENT, rest))  # a glob's items are named bare,
    prefixes = set(re.findall("(" + IDENT + r")::", rest))  # its modules as the head of a path
    paths = []
    for line, p, is_use in found:
        target = crate.resolve(mod, p, is_use)
        if target is None:
            continue
        if target[-1] == "*":  # a glob import: each name the file then uses
            if target[:-1] in crate.def_file:
                there = target[:-1]
                named = (crate.names_of(there) - crate.children[there]) & words
                named |= crate.children[there] & prefixes
                paths += [(line, there + (n,)) for n in sorted(named)]
            continue
        paths.append((line, target))
    for line, target in paths:
        for k in range(len(mod)):
            level = mod[:k]
            if target[:k] != level:
                break
            target = crate.through_faces(level, target)
            if len(target) > k and target[k] in crate.children[level] and target[k] != mod[k]:
                name = target[k + 1] if len(target) > k + 1 else target[k]
                yield level, mod[k], target[k], name, line
                break


def cycles_of(graph):
    """Every elementary cycle of a small graph (node -> set of nodes), each from its least node."""
    found = []
    for start in sorted(graph):
        stack = [(start, [start])]
        while stack and len(found) < MAX_CYCLES:
            node, trail = stack.pop()
            for nxt in sorted(graph.get(node, ()), reverse=True):
                if nxt == start:
                    found.append(trail + [start])
                elif nxt > start and nxt not in trail:
                    stack.append((nxt, trail + [nxt]))
    return found


def report(root, crate, level, ties, known, seen):
    """Prints each loop of one directory; True when one is not known."""
    graph = {}
    for a, b in ties:
        graph.setdefault(a, set()).add(b)
    here = crate.child_dir[level]

    def label(node):
        mod = level + (node,)
        return node + "/" if crate.children[mod] else os.path.relpath(crate.def_file[mod], here)

    bad = False
    for cycle in cycles_of(graph):
        loop = f"{os.path.relpath(here, root)}/: " + " → ".join(label(n) for n in cycle)
        seen.add(loop)
        if loop in known:
            print(f"known loop, still to untangle: {loop}")
            continue
        bad = True
        head, files = loop.split(": ", 1)
        print(f"{head}: files import each other in a loop: {files}")
        for a, b in zip(cycle, cycle[1:]):
            names = sorted({item for _, _, item in ties[(a, b)]})
            where = sorted({f"{os.path.relpath(p, here)}:{n}" for p, n, _ in ties[(a, b)]})
            more = f", +{len(where) - 3}" if len(where) > 3 else ""
            print(f"    {label(a)} → {label(b)}: {', '.join(names)} ({', '.join(where[:3])}{more})")
    return bad


def check(root, known=()):
    bad, seen = False, set()
    for name in CRATES:
        src = os.path.join(root, name, "src")
        for root_file in ("lib.rs", "main.rs"):
            if not os.path.isfile(os.path.join(src, root_file)):
                continue
            crate = Crate(os.path.join(src, root_file))
            graphs = {}  # level -> {(from, to): [(file, line, name)]}
            for path, mod in sorted(crate.files.items()):
                for level, a, b, item, line in ties_of(crate, path, mod):
                    graphs.setdefault(level, {}).setdefault((a, b), []).append((path, line, item))
            for level in sorted(graphs):
                bad |= report(root, crate, level, graphs[level], set(known), seen)
    for loop in sorted(set(known) - seen):
        print(f"{loop}: this known loop is gone: delete it from KNOWN_LOOPS in scripts/check-layers.sh")
        bad = True
    return bad


if __name__ == "__main__":
    args = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    args.add_argument("root")
    args.add_argument("--known", action="append", default=[], metavar="LOOP")
    a = args.parse_args()
    sys.exit(1 if check(a.root, a.known) else 0)
