#!/usr/bin/env python3
"""The shape check of the workspace: data flows one way, files and functions stay small.

Called by scripts/check-layers.sh (run by `make test` and `make layers`). The
orders and limits below are written here once; docs/ARCHITECTURE.md explains
them. What is test code (rule 1) is the same for every rule:
  - files named tests.rs or *_tests.rs, anything under a crate's tests/, and a
    module file declared by `#[cfg(test)] mod x;` (unless build.rs also reaches
    it by `#[path]`);
  - inside a file, an item under `#[cfg(test)]`: an inline `mod tests { … }`
    block to its closing brace, a `#[cfg(test)] fn …` to its closing brace, a
    `#[cfg(test)] mod x;` declaration for its two lines only, so the code after
    such a declaration is still code.
Test code may reach anything, to check end to end; the rules read only the
rest, with comments and the insides of string and char literals blanked.

The rules:
  1. Crates. CRATES is the one list of the workspace crates, bottom first. A
     crate's [dependencies] name only workspace crates below it (cargo refuses
     cycles; this also refuses an upward edge cargo would allow), and every
     workspace member is in the list.
  2. Dependencies. Every [dependencies] entry is used (`name::…` or `use name`,
     hyphens as underscores) by the crate's shipped code in src/ or build.rs;
     one used only by tests belongs in [dev-dependencies].
  3. Module layers, inside the crates of LAYERS: a top-level module uses
     (`crate::x`, `super::x` from the top, a name the crate root re-exports
     from x) only modules on lines above its own; modules on one line are
     siblings and use neither each other. No `super::super::` there: name the
     module (`crate::…`) so the layers can be read.
  4. Files. Inside every module directory of every crate the files import each
     other one way: no loop, not even between two files. The nodes of a
     directory are its child modules (each file, each subdirectory taken as a
     whole); the directory's own module file (mod.rs, lib.rs, main.rs, or x.rs
     beside x/) is the module's face, not a node: declaring `mod x;` is no
     import, and a name a child reaches through it (`use super::Problem`, where
     mod.rs says `pub use load::Problem`) is an import of the file the name is
     re-exported from. A file imports a sibling when a `use` line names it
     (`use super::x::…`, `use crate::m::x::…`, `use self::…`, `use x::…` for a
     child module in scope, `use super::*` for each name the file then uses)
     or a `crate::`, `super::` or `self::` path in its code does. Each loop is
     printed as its files in order, then the names that tie each file to the
     next. KNOWN_LOOPS only shrinks.
  5. Size. No source file has more than MAX_LINES lines outside its tests.
  6. Functions. No function of shipped code is longer than MAX_FN_LINES lines
     (its `fn` line to its closing brace) unless its doc comment says why in a
     sentence starting "Long because". KNOWN_LONG only shrinks.

scripts/shape.py [ROOT]            check the tree at ROOT (default: this repository)
scripts/shape.py --sizes [ROOT]    the largest files and the longest functions
scripts/shape.py --self-test       each rule refuses a small bad tree and passes a good one
"""
import bisect
import io
import os
import re
import shutil
import sys
import tempfile
import tomllib
from contextlib import redirect_stdout

# The workspace crates, bottom first: each may depend only on crates before it.
CRATES = (
    # test helpers shared by several crates: a dev-dependency only, so it sits below all
    "testkit",
    "kafka",
    "model",
    "client",
    "faults",
    "workloads",
    "base",
    "install",
    "scenario",
    "cluster",
    "history",
    "checker",
    "rig",
)

# The top-level modules of a crate, bottom first; modules on one line are siblings.
LAYERS = {
    "rig": """
        subject
        nemesis observer
        runner
        story
        bundle results
        run
        matrix probe bench bisect
        calibrate shrink
        explore
        serve
        cli
    """,
    "checker": """
        error report
        txns open_txn lingering hanging reached
        count drain share
        indexing store reads
        check
        bench offline
        latency premise
        verdict
    """,
}

MAX_LINES = 800
MAX_FN_LINES = 120

# Loops between files allowed for a while (none today), exactly as the check
# prints them. Listed loops are reported but pass; a listed loop that is gone
# fails, so this list only shrinks: delete its line then.
KNOWN_LOOPS = ()

# Functions over MAX_FN_LINES being split, exactly as the check prints them
# (file, then the function). Listed ones are reported but pass; one that is
# gone or short enough fails, so this list only shrinks: delete its line then.
KNOWN_LONG = ()

MAX_CYCLES = 50  # per directory: enough to see the shape of a tangle
SIZES_FILES = 15
SIZES_FUNCTIONS = 20

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
VIS = r"(?:pub(?:\([^)]*\))?[ \t]+)?"
USE_RE = re.compile(r"^[ \t]*" + VIS + r"use[ \t]+([^;]+);", re.M)
MOD_RE = re.compile(r"^[ \t]*" + VIS + r"mod[ \t]+(" + IDENT + r")[ \t]*;", re.M)
# top-level items only (rustfmt puts them in column 0): methods are no names of a module
ITEM_RE = re.compile(
    r"^"
    + VIS
    + r"(?:(?:async|const|unsafe)[ \t]+)*(?:struct|enum|union|trait|type|fn|const|static)[ \t]+("
    + IDENT
    + ")",
    re.M,
)
PATH_RE = re.compile(r"(?<![A-Za-z0-9_:])(crate|super|self)((?:::" + IDENT + r")+)")
CFG_TEST_RE = re.compile(r"^[ \t]*#\[cfg\(test\)\][ \t]*$", re.M)
LONG_BECAUSE_RE = re.compile(r"(?:^|[.!?:;]\s+)Long because\b")


# ---------------------------------------------------------------------------
# Rust source: literals and comments, test code, functions


def blank(s):
    """`s` with everything but newlines turned to spaces (line numbers stay right)."""
    return re.sub(r"[^\n]", " ", s)


LEX_RE = re.compile(
    r"//|/\*"
    r"|(?<![A-Za-z0-9_])(?:br|cr|r)#*\""
    r"|(?<![A-Za-z0-9_])[bc]?\""
    r"|(?<![A-Za-z0-9_])b?'"
)
STRING_BODY_RE = re.compile(r'(?:[^"\\]|\\.)*"', re.S)
CHAR_RE = re.compile(r"b?'(?:[^'\\\n]|\\(?:x[0-9a-fA-F]{2}|u\{[0-9a-fA-F_]{1,6}\}|[^\n]))'")


def lex(text):
    """(code, docs): `text` with comments and the insides of string and char literals
    blanked, and the text of each `///` doc comment by its line number."""
    out, docs, pos = [], {}, 0
    while True:
        m = LEX_RE.search(text, pos)
        if m is None:
            out.append(text[pos:])
            break
        out.append(text[pos : m.start()])
        tok, start = m.group(0), m.start()
        if tok == "//":
            end = text.find("\n", start)
            end = len(text) if end < 0 else end
            body = text[start:end]
            if body.startswith("///") and not body.startswith("////"):
                docs[text.count("\n", 0, start) + 1] = body[3:].strip()
            out.append(blank(body))
        elif tok == "/*":
            depth, i = 1, start + 2
            while depth and i < len(text):
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
            end = i
            out.append(blank(text[start:end]))
        elif tok.endswith('"') and "r" in tok:
            hashes = tok.count("#")
            close = text.find('"' + "#" * hashes, m.end())
            end = len(text) if close < 0 else close + 1 + hashes
            out.append(tok + blank(text[m.end() : end - 1 - hashes]) + text[end - 1 - hashes : end])
        elif tok.endswith('"'):
            b = STRING_BODY_RE.match(text, m.end())
            end = b.end() if b else len(text)
            out.append(tok + blank(text[m.end() : end - 1]) + '"')
        else:  # a char literal, or the quote of a lifetime or a label
            c = CHAR_RE.match(text, start)
            if c is None:
                out.append(tok)
                end = m.end()
            else:
                end = c.end()
                head = tok
                out.append(head + blank(text[start + len(head) : end - 1]) + "'")
        pos = end
    return "".join(out), docs


TOKEN_RE = re.compile(IDENT + r"|->|=>|::|[{}()\[\];<>#!,=:&']")
BRACE_ITEMS = {"fn", "mod", "impl", "trait", "struct", "enum", "union", "macro_rules"}
QUALIFIERS = {"pub", "unsafe", "async", "const", "extern", "default", "crate", "super", "self", "in"}


class Source:
    """One Rust file: its code as the rules read it (comments, literals and test code
    blanked), where its test code is, its `///` docs, and its functions."""

    def __init__(self, path, text=None):
        if text is None:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        self.path = path
        self.text = text
        self.lexed, self.docs = lex(text)
        self.newlines = [i for i, ch in enumerate(self.lexed) if ch == "\n"]
        self.tokens = [(m.group(0), m.start()) for m in TOKEN_RE.finditer(self.lexed)]
        self.test_ranges, self.test_mods = self._test_code()
        code = self.lexed.split("\n")
        for first, last in self.test_ranges:
            for n in range(first, last + 1):
                code[n - 1] = ""
        self.code = "\n".join(code)
        self.lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
        self.test_lines = sum(last - first + 1 for first, last in self.test_ranges)

    def line_of(self, offset):
        return bisect.bisect_left(self.newlines, offset) + 1

    def code_lines(self):
        """Lines of the file outside its test code."""
        return self.lines - self.test_lines

    def _item_end(self, i):
        """Index of the last token of the item whose first token is tokens[i]."""
        j, kind = i, None
        while j < len(self.tokens) and kind is None:
            t = self.tokens[j][0]
            if t in BRACE_ITEMS:
                kind = "brace"
            elif t in QUALIFIERS or t in "()":
                j += 1
                continue
            else:
                kind = "semicolon"
        depth = 0
        for k in range(i, len(self.tokens)):
            t = self.tokens[k][0]
            if t == ";" and depth == 0:
                return k
            if t in "([{":
                depth += 1
            elif t in ")]}":
                depth -= 1
                if depth == 0 and t == "}" and kind == "brace":
                    return k
        return len(self.tokens) - 1

    def _test_code(self):
        """(ranges, mods): the line ranges of the items under `#[cfg(test)]`, and the
        names of the test modules declared here (`#[cfg(test)] mod x;`)."""
        starts = [off for _, off in self.tokens]
        ranges, mods = [], []
        for m in CFG_TEST_RE.finditer(self.lexed):
            first = self.line_of(m.start())
            if ranges and ranges[-1][0] <= first <= ranges[-1][1]:
                continue  # inside a test item already
            i = bisect.bisect_left(starts, m.end())
            while i < len(self.tokens) and self.tokens[i][0] == "#":  # more attributes
                depth, i = 0, i + 1
                while i < len(self.tokens):
                    t = self.tokens[i][0]
                    depth += t == "["
                    depth -= t == "]"
                    i += 1
                    if depth == 0 and t == "]":
                        break
            if i >= len(self.tokens):
                break
            end = self._item_end(i)
            ranges.append((first, self.line_of(self.tokens[end][1])))
            words = [t for t, _ in self.tokens[i : end + 1]]
            if "mod" in words and words[-1] == ";":
                mods.append(words[words.index("mod") + 1])
        return ranges, mods

    def in_test(self, line):
        return any(first <= line <= last for first, last in self.test_ranges)

    def doc_of(self, line):
        """The `///` doc comment above the item on `line` (attributes between skipped)."""
        raw = self.text.split("\n")
        docs, n = [], line - 1
        while n >= 1:
            text = raw[n - 1].strip()
            if n in self.docs and text.startswith("///"):
                docs.append(self.docs[n])
            elif text.startswith("#[") or text.startswith("#!["):
                pass
            elif text.endswith("]"):
                # the tail of an attribute over several lines: up to its `#[`
                top = n
                while top > max(1, n - 20) and not raw[top - 1].strip().startswith("#["):
                    top -= 1
                if not raw[top - 1].strip().startswith("#["):
                    break
                n = top
            else:
                break
            n -= 1
        return " ".join(reversed(docs))

    def functions(self):
        """(qualified name, first line, last line) of every function with a body
        outside test code, nested ones too (`outer::inner`)."""
        found = []
        stack = []  # (kind, name) per open brace; kind None for any other brace
        pending = None  # (kind, name, line) of an item whose `{` is still to come
        depth = 0  # ( and [ since the pending item began
        prev = None
        code_tokens = [(t, off) for t, off in self.tokens if not self.in_test(self.line_of(off))]
        for idx, (t, off) in enumerate(code_tokens):
            nxt = code_tokens[idx + 1][0] if idx + 1 < len(code_tokens) else None
            if t == "fn" and nxt and re.fullmatch(IDENT, nxt) and (pending is None or pending[0] != "fn"):
                pending, depth = ("fn", nxt, self.line_of(off)), 0
            elif t == "impl" and pending is None and prev in (None, "{", "}", ";", "]", "unsafe", "default"):
                pending, depth = ("impl", [], self.line_of(off)), 0
            elif t in ("trait", "mod") and pending is None and nxt and re.fullmatch(IDENT, nxt):
                pending, depth = (t, nxt, self.line_of(off)), 0
            elif t in "([":
                depth += 1
            elif t in ")]":
                depth -= 1
            elif t == ";" and pending is not None and depth == 0:
                pending = None
            elif t == "{":
                if pending is not None and depth == 0:
                    kind, name, line = pending
                    if kind == "impl":
                        name = impl_name(name)
                    stack.append((kind, name, line))
                    pending = None
                else:
                    stack.append((None, None, None))
            elif t == "}":
                if stack:
                    kind, name, line = stack.pop()
                    if kind == "fn":
                        outer = [n for k, n, _ in stack if k is not None]
                        found.append(("::".join(outer + [name]), line, self.line_of(off)))
            if pending is not None and pending[0] == "impl" and t not in ("impl", "{"):
                pending[1].append(t)
            prev = t
        return sorted(found, key=lambda f: f[1])


def impl_name(words):
    """`Type` for `impl<…> Type<…>`, `<Type as Trait>` for `impl Trait for Type`."""
    if words and words[0] == "<":
        depth = 0
        for k, w in enumerate(words):
            depth += (w == "<") - (w == ">")
            if depth == 0:
                words = words[k + 1 :]
                break
    if "where" in words:
        words = words[: words.index("where")]

    def last_name(part):
        depth, name = 0, "?"
        for w in part:
            depth += (w == "<") - (w == ">")
            if depth == 0 and re.fullmatch(IDENT, w) and w not in ("dyn", "mut", "for"):
                name = w
        return name

    depth, split = 0, None
    for k, w in enumerate(words):
        depth += (w == "<") - (w == ">")
        if w == "for" and depth == 0 and k > 0:
            split = k
    if split is None:
        return last_name(words)
    return f"<{last_name(words[split + 1:])} as {last_name(words[:split])}>"


_SOURCES = {}


def source(path):
    if path not in _SOURCES:
        _SOURCES[path] = Source(path)
    return _SOURCES[path]


def code_of(path):
    return source(path).code


# ---------------------------------------------------------------------------
# The workspace: members, manifests, which files are code and which are tests


def is_test_file(path):
    name = os.path.basename(path)
    return name == "tests.rs" or name.endswith("_tests.rs")


def child_dir(path):
    """The directory of the child modules of the module file at `path`."""
    name = os.path.basename(path)
    if name in ("mod.rs", "lib.rs", "main.rs"):
        return os.path.dirname(path)
    return os.path.splitext(path)[0]


def module_file(directory, name):
    for cand in (os.path.join(directory, name + ".rs"), os.path.join(directory, name, "mod.rs")):
        if os.path.isfile(cand):
            return cand
    return None


class Member:
    """One workspace crate: its directory, manifest, dependencies and files."""

    def __init__(self, root, directory):
        self.dir = directory
        self.manifest_path = os.path.join(root, directory, "Cargo.toml")
        with open(self.manifest_path, "rb") as f:
            self.manifest = tomllib.load(f)
        with open(self.manifest_path, encoding="utf-8") as f:
            self.manifest_lines = f.read().split("\n")
        self.package = self.manifest.get("package", {}).get("name", directory)
        self.lib = self.manifest.get("lib", {}).get("name", self.package.replace("-", "_"))
        self.src = os.path.join(root, directory, "src")
        self.build_rs = os.path.normpath(os.path.join(root, directory, "build.rs"))
        self.files, self.test_files = self._files()

    def dependencies(self, section="dependencies"):
        """(key, spec, line) of each entry of [dependencies], target-specific ones too."""
        tables = [(section, self.manifest.get(section, {}))]
        for target, t in self.manifest.get("target", {}).items():
            tables.append((f"target.{target}.{section}", t.get(section, {})))
        out = []
        for header, deps in tables:
            for key, spec in deps.items():
                out.append((key, spec if isinstance(spec, dict) else {"version": spec}, self._line_of(header, key)))
        return out

    def _line_of(self, header, key):
        section = None
        for n, line in enumerate(self.manifest_lines, 1):
            s = line.strip()
            if s.startswith("["):
                section = s.strip("[]").replace('"', "").replace("'", "")
            elif section == header and re.match(re.escape(key) + r"\s*(?:=|\.)", s):
                return n
        return 1

    def _files(self):
        """(shipped, tests): the .rs files of src/ and build.rs, split by rule 1."""
        every = []
        for d, _, names in os.walk(self.src):
            every += [os.path.normpath(os.path.join(d, n)) for n in names if n.endswith(".rs")]
        if os.path.isfile(self.build_rs):
            every.append(self.build_rs)
        every.sort()
        declared_test, by_path = set(), set()
        for path in every:
            s = source(path)
            for name in s.test_mods:
                f = module_file(child_dir(path), name)
                if f:
                    declared_test.add(os.path.normpath(f))
            for m in re.finditer(r'#\[path\s*=\s*"([^"]*)"\]', s.text):
                if not s.in_test(s.line_of(m.start())):
                    by_path.add(os.path.normpath(os.path.join(os.path.dirname(path), m.group(1))))
        test_roots = declared_test - by_path
        tests = set()
        for path in every:
            if is_test_file(path) or path in test_roots:
                tests.add(path)
            elif any(path.startswith(os.path.splitext(t)[0] + os.sep) for t in test_roots if not t.endswith("mod.rs")):
                tests.add(path)
            elif any(path.startswith(os.path.dirname(t) + os.sep) for t in test_roots if t.endswith("mod.rs")):
                tests.add(path)
        return [p for p in every if p not in tests], sorted(tests)

    def roots(self):
        return [p for p in (os.path.join(self.src, "lib.rs"), os.path.join(self.src, "main.rs")) if os.path.isfile(p)]


def workspace(root):
    """The members of the workspace at `root`, in the order its Cargo.toml lists them."""
    with open(os.path.join(root, "Cargo.toml"), "rb") as f:
        ws = tomllib.load(f).get("workspace", {})
    return [Member(root, d) for d in ws.get("members", [])]


# ---------------------------------------------------------------------------
# The module tree of a crate, and the imports between its files


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


# ---------------------------------------------------------------------------
# The rules


class Config:
    """What the check holds the tree to (the self-test uses small ones)."""

    def __init__(self, **kw):
        self.crates = kw.get("crates", CRATES)
        self.layers = kw.get("layers", LAYERS)
        self.max_lines = kw.get("max_lines", MAX_LINES)
        self.max_fn_lines = kw.get("max_fn_lines", MAX_FN_LINES)
        self.known_loops = kw.get("known_loops", KNOWN_LOOPS)
        self.known_long = kw.get("known_long", KNOWN_LONG)


class Check:
    def __init__(self, root, config):
        self.root = os.path.abspath(root)
        self.config = config
        self.bad = False
        self.members = workspace(self.root)
        self.crates = {}  # root file -> Crate
        for m in self.members:
            for r in m.roots():
                self.crates[r] = Crate(r)

    def rel(self, path):
        return os.path.relpath(path, self.root)

    def fail(self, message):
        self.bad = True
        print(message)

    def run(self):
        self.crate_order()
        self.unused_dependencies()
        self.module_layers()
        self.file_loops()
        self.sizes()
        self.long_functions()
        return not self.bad

    # 1. crates
    def crate_order(self):
        order = {name: i for i, name in enumerate(self.config.crates)}
        by_package = {m.package: m for m in self.members}
        by_dir = {os.path.normpath(m.dir): m for m in self.members}
        for m in self.members:
            if m.dir not in order:
                self.fail(
                    f"{m.dir}/Cargo.toml: workspace member '{m.dir}' is not in CRATES (scripts/shape.py): "
                    "add it there, above the crates it depends on"
                )
        for name in self.config.crates:
            if name not in by_dir:
                self.fail(f"scripts/shape.py: CRATES lists '{name}', which is no workspace member: delete it")
        for m in self.members:
            if m.dir not in order:
                continue
            for key, spec, line in m.dependencies():
                dep = None
                if "path" in spec:
                    dep = by_dir.get(os.path.normpath(os.path.join(m.dir, spec["path"])))
                dep = dep or by_package.get(spec.get("package", key))
                if dep is None or dep.dir not in order:
                    continue
                if order[dep.dir] >= order[m.dir]:
                    self.fail(
                        f"{m.dir}/Cargo.toml:{line}: {m.dir} (crate {order[m.dir] + 1} of CRATES) depends on "
                        f"{dep.dir} (crate {order[dep.dir] + 1}): a crate depends only on the crates below it; "
                        f"move what {m.dir} needs from {dep.dir} down, or move {m.dir} above {dep.dir} in CRATES "
                        "(scripts/shape.py) if that is the order meant"
                    )

    # 2. dependencies
    def unused_dependencies(self):
        for m in self.members:
            shipped, tests = set(), set()
            for path in m.files:
                shipped |= crate_names_used(code_of(path))
            for path in m.files + m.test_files:
                tests |= crate_names_used(source(path).lexed)
            for d, _, names in os.walk(os.path.join(self.root, m.dir, "tests")):
                for n in names:
                    if n.endswith(".rs"):
                        tests |= crate_names_used(source(os.path.join(d, n)).lexed)
            dev = {k for k, _, _ in m.dependencies("dev-dependencies")}
            for key, spec, line in m.dependencies():
                if "package" in spec or key not in self._package_names():
                    ident = key.replace("-", "_")
                else:
                    ident = self._package_names()[key]
                if ident in shipped:
                    continue
                where = f"{m.dir}/Cargo.toml:{line}"
                if ident in tests:
                    todo = "move it to [dev-dependencies]"
                    if key in dev:
                        todo = "delete it from [dependencies] (it is in [dev-dependencies] too)"
                    self.fail(f"{where}: dependency '{key}' of [dependencies] is used only by test code: {todo}")
                else:
                    self.fail(
                        f"{where}: dependency '{key}' is not used by {m.dir}/src or build.rs "
                        f"(no `{ident}::` and no `use {ident}`): delete it from [dependencies]"
                    )

    def _package_names(self):
        return {m.package: m.lib for m in self.members}

    # 3. module layers
    def module_layers(self):
        for m in self.members:
            if m.dir not in self.config.layers:
                continue
            level = {}
            for i, line in enumerate(l for l in self.config.layers[m.dir].strip().split("\n") if l.strip()):
                for name in line.split():
                    level[name] = i
            seen = set()
            for r in m.roots():
                crate = self.crates[r]
                for name in sorted(crate.children[()]):
                    seen.add(name)
                    if name not in level:
                        self.fail(
                            f"{self.rel(crate.def_file[(name,)])}: module '{name}' is in no layer: add it to "
                            f"LAYERS['{m.dir}'] in scripts/shape.py"
                        )
                for path, mod in sorted(crate.files.items()):
                    if not mod:
                        continue
                    for k, line in enumerate(code_of(path).split("\n"), 1):
                        if "super::super::" in line:
                            self.fail(
                                f"{self.rel(path)}:{k}: reaches out of its module with super::super:: — name "
                                "the module (crate::…) so the layers can be checked"
                            )
                    ties = {(line, a, b, item) for lv, a, b, item, line in ties_of(crate, path, mod) if lv == ()}
                    for line, a, b, item in sorted(ties):
                        if a not in level or b not in level:
                            continue
                        if level[b] >= level[a]:
                            what = b if item == b else f"{b}::{item}"
                            self.fail(
                                f"{self.rel(path)}:{line}: {a} (layer {level[a] + 1}) uses crate::{what} "
                                f"(layer {level[b] + 1}): a module uses only the layers below it, never a "
                                f"sibling or one above; move what both need down, or pass it in from above "
                                f"(LAYERS['{m.dir}'] in scripts/shape.py holds the order)"
                            )
            for name in level:
                if name not in seen:
                    self.fail(
                        f"scripts/shape.py: LAYERS['{m.dir}'] lists '{name}', which is no module of {m.dir}: delete it"
                    )

    # 4. files
    def file_loops(self):
        known, seen = set(self.config.known_loops), set()
        for r, crate in self.crates.items():
            graphs = {}  # level -> {(from, to): [(file, line, name)]}
            for path, mod in sorted(crate.files.items()):
                for level, a, b, item, line in ties_of(crate, path, mod):
                    graphs.setdefault(level, {}).setdefault((a, b), []).append((path, line, item))
            for level in sorted(graphs):
                self._loops(crate, level, graphs[level], known, seen)
        for loop in sorted(known - seen):
            self.fail(f"{loop}: this known loop is gone: delete its line from KNOWN_LOOPS in scripts/shape.py")

    def _loops(self, crate, level, ties, known, seen):
        graph = {}
        for a, b in ties:
            graph.setdefault(a, set()).add(b)
        here = crate.child_dir[level]

        def label(node):
            mod = level + (node,)
            return node + "/" if crate.children[mod] else os.path.relpath(crate.def_file[mod], here)

        for cycle in cycles_of(graph):
            loop = f"{self.rel(here)}/: " + " → ".join(label(n) for n in cycle)
            seen.add(loop)
            if loop in known:
                print(f"known loop, still to untangle: {loop}")
                continue
            head, files = loop.split(": ", 1)
            self.fail(
                f"{head}: files import each other in a loop: {files} (one file must stop naming the next: "
                "move what they share into a file both use)"
            )
            for a, b in zip(cycle, cycle[1:]):
                names = sorted({item for _, _, item in ties[(a, b)]})
                where = sorted({f"{os.path.relpath(p, here)}:{n}" for p, n, _ in ties[(a, b)]})
                more = f", +{len(where) - 3}" if len(where) > 3 else ""
                print(f"    {label(a)} → {label(b)}: {', '.join(names)} ({', '.join(where[:3])}{more})")

    # 5. size
    def sizes(self):
        for m in self.members:
            for path in m.files:
                n = source(path).code_lines()
                if n > self.config.max_lines:
                    self.fail(
                        f"{self.rel(path)}:1: {n} lines outside its tests (at most {self.config.max_lines}): "
                        "split it into modules that each hold one concept"
                    )

    # 6. functions
    def long_functions(self):
        limit = self.config.max_fn_lines
        known, seen = set(self.config.known_long), set()
        for path, name, first, last in functions_of(self.members):
            n = last - first + 1
            if n <= limit:
                continue
            if LONG_BECAUSE_RE.search(source(path).doc_of(first)):
                continue
            key = f"{self.rel(path)} {name}"
            seen.add(key)
            if key in known:
                print(f"known long function, still to split: {key} ({n} lines)")
                continue
            self.fail(
                f"{self.rel(path)}:{first}: fn {name} is {n} lines (at most {limit}): split it, or say why it "
                'is not in its doc comment, in a sentence starting "Long because"'
            )
        for key in sorted(known - seen):
            self.fail(
                f"{key}: this known long function is gone or at most {limit} lines now (or says why it is long): "
                "delete its line from KNOWN_LONG in scripts/shape.py"
            )


def crate_names_used(code):
    """The first segments of the paths a file's code names: `x::…` and `use x…`."""
    names = set()
    for m in USE_RE.finditer(code):
        for p in expand(re.sub(r"\s+", "", re.sub(r"\s+as\s+" + IDENT, "", m.group(1)))):
            names.add(p.lstrip(":").split("::")[0])
    rest = USE_RE.sub("", code)
    names |= set(re.findall(r"(?<![A-Za-z0-9_:])(" + IDENT + r")\s*::", rest))
    names |= set(re.findall(r"\bextern\s+crate\s+(" + IDENT + ")", rest))
    return names


def functions_of(members):
    """(file, name, first line, last line) of every function of shipped code."""
    out = []
    for m in members:
        for path in m.files:
            out += [(path, name, first, last) for name, first, last in source(path).functions()]
    return out


def print_sizes(root):
    members = workspace(root)
    files = sorted(((source(p).code_lines(), p) for m in members for p in m.files), key=lambda f: (-f[0], f[1]))
    print(f"The {SIZES_FILES} largest files (lines outside tests):")
    for n, path in files[:SIZES_FILES]:
        print(f"  {n:5}  {os.path.relpath(path, root)}")
    fns = sorted(
        ((last - first + 1, os.path.relpath(path, root), name) for path, name, first, last in functions_of(members)),
        key=lambda f: (-f[0], f[1], f[2]),
    )
    print(f"The {SIZES_FUNCTIONS} longest functions (lines from `fn` to its closing brace):")
    for n, path, name in fns[:SIZES_FUNCTIONS]:
        print(f"  {n:5}  {path} {name}")
    over = sum(1 for n, _, _ in fns if n > MAX_FN_LINES)
    lines = sum(n for n, _ in files)
    print(f"{len(files)} files, {lines} lines; {len(fns)} functions, {over} over {MAX_FN_LINES} lines")


def check(root, config=None):
    _SOURCES.clear()
    return Check(root, config or Config()).run()


# ---------------------------------------------------------------------------
# The self-test


class SelfTest:
    def __init__(self):
        self.tmp = tempfile.mkdtemp()
        self.failures = []
        self.config = dict(
            crates=("low", "top"),
            layers={"top": "base\nleft right\nupper"},
            max_lines=30,
            max_fn_lines=8,
            known_loops=(),
            known_long=(),
        )

    def write(self, rel, text):
        path = os.path.join(self.tmp, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)

    def manifest(self, crate, *deps, dev=()):
        """`crate`/Cargo.toml, its dependencies from line 5 on."""
        text = f'[package]\nname = "x-{crate}"\n\n[dependencies]\n' + "".join(d + "\n" for d in deps)
        if dev:
            text += "\n[dev-dependencies]\n" + "".join(d + "\n" for d in dev)
        self.write(f"{crate}/Cargo.toml", text)

    def run(self, **overrides):
        out = io.StringIO()
        with redirect_stdout(out):
            ok = check(self.tmp, Config(**{**self.config, **overrides}))
        return ok, out.getvalue()

    def passes(self, what, **overrides):
        ok, out = self.run(**overrides)
        if not ok:
            self.failures.append(f"{what} was refused:\n{out}")

    def fails(self, what, *expected, **overrides):
        ok, out = self.run(**overrides)
        if ok:
            self.failures.append(f"{what} was not caught")
        for e in expected:
            if e not in out:
                self.failures.append(f"{what}: the report lacks {e!r}:\n{out}")

    def expect(self, what, got, want):
        if got != want:
            self.failures.append(f"{what}: got {got!r}, want {want!r}")

    def good_tree(self):
        shutil.rmtree(self.tmp)
        os.makedirs(self.tmp)
        self.write("Cargo.toml", '[workspace]\nmembers = ["low", "top"]\n')
        self.manifest("low", 'serde = "1"')
        self.write("low/src/lib.rs", "pub mod a;\npub mod b;\npub use a::A;\npub use b::B;\n")
        self.write("low/src/a.rs", "use crate::b::B;\nuse serde::Serialize;\npub struct A(B);\n")
        self.write("low/src/b.rs", "pub struct B;\n#[cfg(test)]\nmod tests {\n    use crate::a::A;\n}\n")
        self.manifest("top", 'x-low = { path = "../low" }', dev=('anyhow = "1"',))
        self.write("top/src/lib.rs", "pub mod base;\npub mod left;\npub mod right;\npub mod upper;\n")
        self.write("top/src/base.rs", "pub struct Base;\n")
        self.write("top/src/left.rs", "use crate::base::Base;\npub fn left(_: Base) {}\n")
        self.write("top/src/right.rs", "pub fn right(_: x_low::A) -> super::base::Base {\n    crate::base::Base\n}\n")
        self.write("top/src/upper/mod.rs", "use crate::left::left;\nuse crate::right::right;\n")
        self.write("top/tests/end.rs", "use anyhow::Result;\n")

    def parser(self):
        s = Source(
            "t.rs",
            'fn a() {\n    let s = "}{";\n    let c = \'{\';\n    let r = r#"}"#;\n    /* } /* { */ } */\n'
            "    // }\n    let b = b'{';\n    let e = \"\\\"}\";\n}\n"
            "struct S<'a>(&'a str);\n"
            "impl<'a> S<'a> {\n    pub fn new() -> impl Fn() -> u32 {\n        fn inner() {}\n        || 1\n    }\n}\n"
            "impl std::fmt::Display for S<'_> {\n"
            "    fn fmt(&self, f: &mut Formatter) -> Result {\n        Ok(())\n    }\n}\n"
            "trait T {\n    fn declared(&self);\n    fn given(&self) -> [u8; 2] {\n        [0; 2]\n    }\n}\n"
            "mod m {\n    pub(crate) async fn in_mod<F: Fn()>(f: F)\n    where\n        F: Send,\n    {\n    }\n}\n",
        )
        self.expect(
            "functions found through strings, chars, raw strings, comments, lifetimes and impls",
            s.functions(),
            [
                ("a", 1, 9),
                ("S::new", 12, 15),
                ("S::new::inner", 13, 13),
                ("<S as Display>::fmt", 18, 20),
                ("T::given", 24, 26),
                ("m::in_mod", 29, 33),
            ],
        )
        s = Source(
            "t.rs",
            "unsafe impl Send for Wrap {}\n"
            "impl<T: Into<String>> From<T> for Wrap<T>\nwhere\n    T: Clone,\n{\n    fn from(t: T) -> Self {\n"
            "        let q = '\\''; let dq = '\"';\n        let d = \"\\\\\";\n        let r = r##\"a\"#}\"##;\n"
            "        let y = b\"{\";\n        'outer: loop {\n            break 'outer;\n        }\n"
            "        todo!()\n    }\n}\n"
            "fn ptr(f: fn(u32) -> u32) -> Box<dyn Fn(u32) -> u32 + 'static> {\n    Box::new(f)\n}\n",
        )
        self.expect(
            "functions through escaped quotes, raw strings with hashes, byte strings, labels and where clauses",
            s.functions(),
            [("<Wrap as From>::from", 6, 15), ("ptr", 17, 19)],
        )
        s = Source(
            "t.rs",
            "//! Doc.\n#[cfg(test)]\nmod calibration;\nuse crate::x;\n\n"
            "/// Builds.\n///\n/// Long because it is a table.\n"
            "#[allow(dead_code)]\nfn big() {}\n#[cfg(test)]\n#[allow(unused)]\nfn helper() -> u32 {\n    1\n}\n"
            "#[cfg(test)]\nuse std::fmt::{self, Write};\nfn after() {}\n#[cfg(test)]\nmod tests {\n    fn t() {}\n}\n",
        )
        self.expect("test code of a file", s.test_ranges, [(2, 3), (11, 15), (16, 17), (19, 22)])
        self.expect("test modules declared", s.test_mods, ["calibration"])
        self.expect("code lines", s.code_lines(), 22 - 2 - 5 - 2 - 4)
        self.expect("functions outside tests", [f[0] for f in s.functions()], ["big", "after"])
        self.expect("a doc comment over attributes", s.doc_of(10), "Builds.  Long because it is a table.")
        self.expect("use lines in code", "use crate::x;" in s.code, True)

    def rules(self):
        self.good_tree()
        self.passes("a clean tree")

        # crates: an upward dependency, a member not in the list, a list entry that is no member
        self.manifest("low", 'serde = "1"', 'x-top = { path = "../top" }')
        self.write("low/src/a.rs", "use crate::b::B;\nuse serde::Serialize;\npub struct A(B, x_top::base::Base);\n")
        self.fails("an upward crate dependency", "low/Cargo.toml:6: low (crate 1 of CRATES) depends on top (crate 2)")
        self.good_tree()
        self.fails(
            "a member missing from CRATES",
            "top/Cargo.toml: workspace member 'top' is not in CRATES",
            "CRATES lists 'gone', which is no workspace member",
            crates=("low", "gone"),
        )

        # dependencies: unused, and used only by tests
        self.manifest("top", 'x-low = { path = "../low" }', 'anyhow = "1"', 'rand = "0.9"')
        self.write(
            "top/src/left.rs",
            "use crate::base::Base;\npub fn left(_: Base) {}\n#[cfg(test)]\nmod tests {\n    fn t() {\n"
            "        rand::random::<u8>();\n    }\n}\n",
        )
        self.fails(
            "unused dependencies",
            "top/Cargo.toml:6: dependency 'anyhow' of [dependencies] is used only by test code: move it to "
            "[dev-dependencies]",
            "top/Cargo.toml:7: dependency 'rand' of [dependencies] is used only by test code",
        )
        self.manifest("top", 'x-low = { path = "../low" }', 'hyper-util = "0.1"')
        self.fails(
            "an unused dependency",
            "top/Cargo.toml:6: dependency 'hyper-util' is not used by top/src or build.rs (no `hyper_util::`",
        )
        self.write("top/src/base.rs", "pub struct Base(hyper_util::X);\n")
        self.passes("a used dependency")

        # module layers: an upward import, a sibling, a module in no layer, one out of reach
        self.good_tree()
        self.write("top/src/base.rs", "pub struct Base;\nfn f() -> crate::upper::U {\n    todo!()\n}\n")
        self.fails("an upward module import", "top/src/base.rs:2: base (layer 1) uses crate::upper::U (layer 3)")
        self.good_tree()
        self.write("top/src/left.rs", "use super::right;\n")
        self.fails("a sibling import through super::", "top/src/left.rs:1: left (layer 2) uses crate::right (layer 2)")
        self.good_tree()
        mods = "pub mod base;\npub mod left;\npub mod right;\npub mod upper;\n"
        self.write("top/src/lib.rs", mods + "pub use right::Right;\n")
        self.write("top/src/right.rs", "pub struct Right;\n")
        self.write("top/src/left.rs", "use crate::Right;\n")
        self.fails(
            "a sibling reached through the crate root",
            "top/src/left.rs:1: left (layer 2) uses crate::right::Right (layer 2)",
        )
        self.good_tree()
        self.write("top/src/lib.rs", "pub mod base;\npub mod left;\npub mod right;\npub mod upper;\npub mod stray;\n")
        self.write("top/src/stray.rs", "\n")
        self.fails("a module in no layer", "top/src/stray.rs: module 'stray' is in no layer")
        self.good_tree()
        self.write("top/src/upper/mod.rs", "pub mod inner;\n")
        self.write("top/src/upper/inner.rs", "use super::super::base::Base;\n")
        self.fails("super::super::", "top/src/upper/inner.rs:1: reaches out of its module with super::super::")

        # rule 1: a `#[cfg(test)] mod x;` declaration hides nothing after it
        self.good_tree()
        self.write("top/src/base.rs", "#[cfg(test)]\nmod calibration;\npub struct Base;\nuse crate::upper::U;\n")
        self.write("top/src/base/calibration.rs", "use crate::upper::U;\n" + "\n" * 40)
        self.fails(
            "an upward import after a test module's declaration",
            "top/src/base.rs:4: base (layer 1) uses crate::upper::U",
        )
        self.write("top/src/base.rs", "#[cfg(test)]\nmod calibration;\npub struct Base;\n" + "\n" * 30)
        self.fails(
            "a big file with a test module declared at its top",
            "top/src/base.rs:1: 31 lines outside its tests (at most 30)",
        )
        self.write(
            "top/src/base.rs",
            "#[cfg(test)]\nmod calibration;\npub struct Base;\n#[cfg(test)]\nmod tests {\n    use crate::upper::U;\n"
            + "\n" * 30
            + "}\n",
        )
        self.passes("an upward import and many lines in an inline test module, and a big test module file")

        # files: a loop between two files; a known one passes until it is gone
        self.good_tree()
        b = "use super::A;\npub struct B;\nimpl B {\n    fn a(&self) -> Option<A> {\n        None\n    }\n}\n"
        self.write("low/src/b.rs", b)
        self.fails(
            "two files importing each other (a.rs ↔ b.rs)",
            "low/src/: files import each other in a loop: a.rs → b.rs → a.rs",
            "a.rs → b.rs: B (a.rs:1)",
            "b.rs → a.rs: A (b.rs:1)",
        )
        self.passes("a known loop", known_loops=("low/src/: a.rs → b.rs → a.rs",))
        self.write("low/src/b.rs", "pub struct B;\n")
        self.fails(
            "a known loop that is gone",
            "low/src/: a.rs → b.rs → a.rs: this known loop is gone: delete its line from KNOWN_LOOPS",
            known_loops=("low/src/: a.rs → b.rs → a.rs",),
        )

        # size
        self.good_tree()
        self.write("low/src/b.rs", "pub struct B;\n" + "\n" * 30)
        self.fails("a file over the size", "low/src/b.rs:1: 31 lines outside its tests (at most 30)")

        # functions: long without the reason, with it, known, and a known one gone
        self.good_tree()
        body = "    let s = \"}\";\n" * 7
        self.write("top/src/base.rs", "pub struct Base;\n\n/// Sums.\npub fn long() {\n" + body + "}\n")
        self.fails(
            "a long function without the reason",
            "top/src/base.rs:4: fn long is 9 lines (at most 8): split it, or say why it is not in its doc comment, "
            'in a sentence starting "Long because"',
        )
        self.passes("a known long function", known_long=("top/src/base.rs long",))
        reason = "/// Sums. Long because\n/// each case is one line.\n"
        self.write("top/src/base.rs", "pub struct Base;\n\n" + reason + "pub fn long() {\n" + body + "}\n")
        self.passes("the same long function with the reason")
        self.fails(
            "a known long function that says why now",
            "top/src/base.rs long: this known long function is gone",
            known_long=("top/src/base.rs long",),
        )
        tests = "pub struct Base;\n#[cfg(test)]\nmod tests {\n    fn long() {\n" + body + "    }\n}\n"
        self.write("top/src/base.rs", tests)
        self.passes("a long function in test code")

    def main(self):
        try:
            self.parser()
            self.rules()
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)
        if self.failures:
            for f in self.failures:
                print(f"self-test: {f}")
            return 1
        print(
            "shape check self-test: an upward crate dependency, an unused dependency, an upward module import, "
            "a loop between two files, a file over the size and a long function without its reason are refused; "
            "a `#[cfg(test)] mod x;` declaration hides nothing after it"
        )
        return 0


def main(argv):
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if argv[:1] == ["--self-test"]:
        return SelfTest().main()
    if argv[:1] == ["--sizes"]:
        print_sizes(os.path.abspath(argv[1] if len(argv) > 1 else repo))
        return 0
    if argv[:1] and argv[0].startswith("-"):
        print(__doc__.split("\n\n")[-1])
        return 2
    root = argv[0] if argv else repo
    if check(root):
        print(
            f"shape: ok (crates depend downward only and use all their dependencies; modules use only the layers "
            f"below them; the files of each module directory import one way; no file over {MAX_LINES} lines and "
            f"no function over {MAX_FN_LINES} outside tests)"
        )
        return 0
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
