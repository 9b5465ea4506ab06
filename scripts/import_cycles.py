#!/usr/bin/env python3
"""List each module's imports from the rest of the crate and fail on import cycles.

Usage: python3 scripts/import_cycles.py [--quiet] [SRC_DIR]   (SRC_DIR defaults to src/)

Prints, for every module (one file under src/), the modules of this crate it imports and the
items it takes from each, then every import cycle: each strongly connected component of the
import graph with more than one module, with the imports that close it. Exits 1 if there is a
cycle, 0 if there is none. Python 3 standard library only.

The rules:

* A module is a file: `src/lib.rs` is `crate`, `src/<a>.rs` and `src/<a>/mod.rs` are `<a>`,
  `src/<a>/<b>.rs` is `<a>::<b>`. Inline modules (`mod tests { ... }`, `mod avx { ... }`) belong to
  the file they are written in.
* Comments (`//`, `///`, `//!`, `/* */`, so also every intra-doc link and doc example) and
  string literals are ignored. Attributes are not evaluated: a `#[cfg(...)]`-gated `use` or
  path counts as if it were always compiled (test modules included).
* An import is a `use` of a path into this crate, or a path written in code that starts with
  `crate::`, `self::`, `super::`, a child module's name, or a name that a `use` in the same
  file binds to something in this crate (`use crate::cpu; ... cpu::World`).
* A path is resolved to the deepest module file it names:
  `crate::cpu::step::ContactFinder` is an import of `cpu::step`. When the path names an item of a module that the module does not
  define but brings in with a `use` (a `pub use` re-export such as `cpu::Contact`, or a
  private `use` seen through `super::`), the script follows that `use` to the module that
  defines the item; so a child that uses what its parent re-exports from a sibling imports
  the sibling, not the parent. An item the script cannot trace through a `use` is taken to
  be defined where the path ends (for a glob `pub use m::*`, it looks for a definition of
  the name in `m`'s file).
* A parent's `mod child;` is not an import; the parent's `pub use child::Item` (or a call
  `child::f()`) is an import of the child. So a parent that re-exports its children is no
  cycle, but one that re-exports a child which uses something defined in the parent's own
  file is.
* A `use` that names a module itself (`use crate::cpu;`, `use super::lanes::{self}`) only
  binds the name; the paths written through it are the imports.
* Paths into other crates (`std::`, `wgpu::`, `glam::`, `crate::glam::` re-exported) and a
  module's imports of itself are not listed.
"""

import os
import re
import sys

KEYWORD_PREFIXES = {"crate", "$crate", "self", "super"}


# --------------------------------------------------------------------------------------
# Lexing: identifiers, `::` and single punctuation, with comments and literals removed.
# --------------------------------------------------------------------------------------


def is_ident_start(c):
    return c.isalpha() or c == "_"


def is_ident_char(c):
    return c.isalnum() or c == "_"


def tokenize(text):
    """Tokens (kind, value, line) of Rust source, without comments and literals."""
    tokens = []
    i, n, line = 0, len(text), 1

    def skip_string(j):
        """j at the opening quote of a plain (escaped) string; returns the index past it."""
        nonlocal line
        j += 1
        while j < n and text[j] != '"':
            if text[j] == "\\":
                j += 1
            if j < n and text[j] == "\n":
                line += 1
            j += 1
        return j + 1

    def skip_raw_string(j):
        """j at the first `#` or `"` after the `r` of a raw string."""
        nonlocal line
        hashes = 0
        while j < n and text[j] == "#":
            hashes += 1
            j += 1
        if j >= n or text[j] != '"':
            return None
        end = '"' + "#" * hashes
        k = text.find(end, j + 1)
        if k < 0:
            k = n
        line += text.count("\n", j, k)
        return k + len(end)

    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif c.isspace():
            i += 1
        elif text.startswith("//", i):
            k = text.find("\n", i)
            i = n if k < 0 else k
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    if text[i] == "\n":
                        line += 1
                    i += 1
        elif c == '"':
            i = skip_string(i)
        elif c == "'":
            # A char literal ('a', '\n', '\u{1F600}') or a lifetime / label ('a, 'static).
            if i + 1 < n and text[i + 1] == "\\":
                k = text.find("'", i + 2)
                while k > 0 and text[k - 1] == "\\" and text[k - 2] != "\\":
                    k = text.find("'", k + 1)
                i = n if k < 0 else k + 1
            elif i + 2 < n and text[i + 2] == "'":
                i += 3
            else:
                i += 1
                while i < n and is_ident_char(text[i]):
                    i += 1
        elif is_ident_start(c) or (c == "$" and text.startswith("$crate", i)):
            j = i + 1
            while j < n and is_ident_char(text[j]):
                j += 1
            word = text[i:j]
            if word in ("r", "br", "cr") and j < n and text[j] in "#\"":
                if word == "r" and text.startswith("#", j) and j + 1 < n and is_ident_start(text[j + 1]):
                    # A raw identifier r#name.
                    k = j + 1
                    while k < n and is_ident_char(text[k]):
                        k += 1
                    tokens.append(("ident", text[j + 1 : k], line))
                    i = k
                    continue
                end = skip_raw_string(j)
                if end is not None:
                    i = end
                    continue
            if word in ("b", "c") and j < n and text[j] == '"':
                i = skip_string(j)
                continue
            if word == "b" and j < n and text[j] == "'":
                k = j + 1
                if k < n and text[k] == "\\":
                    k += 1
                k = text.find("'", k + 1)
                i = n if k < 0 else k + 1
                continue
            tokens.append(("ident", word, line))
            i = j
        elif c.isdigit():
            j = i + 1
            while j < n and (is_ident_char(text[j]) or (text[j] == "." and j + 1 < n and text[j + 1].isdigit())):
                j += 1
            i = j
        elif text.startswith("::", i):
            tokens.append(("punct", "::", line))
            i += 2
        else:
            tokens.append(("punct", c, line))
            i += 1
    return tokens


# --------------------------------------------------------------------------------------
# Parsing: `use` trees, `mod` items and paths written in code.
# --------------------------------------------------------------------------------------


class UseLeaf:
    """One name a `use` brings in: its path (relative to `scope`), the name it binds."""

    def __init__(self, segments, name, glob, scope, line):
        self.segments = segments  # list of str
        self.name = name  # the bound name (None for a glob)
        self.glob = glob
        self.scope = scope  # inline module path within the file, e.g. ("tests",)
        self.line = line


def parse_use_tree(tokens, i, prefix, scope, leaves):
    """Parse a use tree at tokens[i]; append its leaves; return the index after it."""
    segments = list(prefix)
    line = tokens[i][2] if i < len(tokens) else 0
    if i < len(tokens) and tokens[i][1] == "::":
        i += 1  # a leading `::` (an extern crate)
        segments.append("::")
    while i < len(tokens):
        kind, value, line = tokens[i]
        if value == "{":
            i += 1
            while i < len(tokens) and tokens[i][1] != "}":
                i = parse_use_tree(tokens, i, segments, scope, leaves)
                if i < len(tokens) and tokens[i][1] == ",":
                    i += 1
            return i + 1
        if value == "*":
            leaves.append(UseLeaf(segments, None, True, scope, line))
            return i + 1
        if kind != "ident":
            return i
        segments.append(value)
        i += 1
        if i < len(tokens) and tokens[i][1] == "::":
            i += 1
            continue
        name = value
        if i + 1 < len(tokens) and tokens[i][1] == "as":
            name = tokens[i + 1][1]
            i += 2
        if segments[-1] == "self":
            segments = segments[:-1]
            if name == "self":
                name = segments[-1] if segments else None
        if name != "_" and name is not None:
            leaves.append(UseLeaf(segments, name, False, scope, line))
        else:
            leaves.append(UseLeaf(segments, None, False, scope, line))
        return i
    return i


class FileInfo:
    def __init__(self, module, path, text):
        self.module = module  # tuple of segments; () is the crate root
        self.path = path
        self.text = text
        self.uses = []  # UseLeaf
        self.paths = []  # (segments, scope, line) written in code
        self.parse()

    def parse(self):
        tokens = tokenize(self.text)
        # Inline modules: a stack of (name, brace depth at which it closes).
        stack, depth, i = [], 0, 0
        scope = ()
        while i < len(tokens):
            kind, value, line = tokens[i]
            if value == "{":
                depth += 1
            elif value == "}":
                depth -= 1
                while stack and stack[-1][1] > depth:
                    stack.pop()
                scope = tuple(name for name, _ in stack)
            elif kind == "ident" and value == "mod" and i + 2 < len(tokens) and tokens[i + 1][0] == "ident":
                if tokens[i + 2][1] == "{":
                    stack.append((tokens[i + 1][1], depth + 1))
                    scope = tuple(name for name, _ in stack)
                    depth += 1
                    i += 3
                    continue
            elif kind == "ident" and value == "use":
                i = parse_use_tree(tokens, i + 1, [], scope, self.uses)
                continue
            elif kind == "ident" and i + 1 < len(tokens) and tokens[i + 1][1] == "::":
                before = tokens[i - 1][1] if i else ""
                if before != "::":
                    segments, j = [value], i + 1
                    while j + 1 < len(tokens) and tokens[j][1] == "::" and tokens[j + 1][0] == "ident":
                        segments.append(tokens[j + 1][1])
                        j += 2
                    self.paths.append((segments, scope, line))
                    i = j
                    continue
            i += 1


# --------------------------------------------------------------------------------------
# Resolving paths to modules.
# --------------------------------------------------------------------------------------


class Crate:
    def __init__(self, src):
        self.files = {}
        for root, _, names in os.walk(src):
            for name in sorted(names):
                if not name.endswith(".rs"):
                    continue
                path = os.path.join(root, name)
                rel = os.path.relpath(path, src).replace(os.sep, "/")[: -len(".rs")]
                parts = rel.split("/")
                if parts == ["lib"] or parts == ["main"]:
                    module = ()
                elif parts[-1] == "mod":
                    module = tuple(parts[:-1])
                else:
                    module = tuple(parts)
                with open(path, encoding="utf-8") as f:
                    self.files[module] = FileInfo(module, path, f.read())

    def is_module(self, module):
        return tuple(module) in self.files

    def file_module(self, module):
        """The deepest module file containing the (possibly inline) module path."""
        module = tuple(module)
        while module and module not in self.files:
            module = module[:-1]
        return module

    def absolute(self, segments, module, scope):
        """The path from the crate root that `segments`, written in `module` (inside its inline
        modules `scope`), names; None when it leads outside this crate."""
        if not segments:
            return None
        here = tuple(module) + tuple(scope)
        first, rest = segments[0], list(segments[1:])
        if first in ("crate", "$crate"):
            return rest
        if first == "self":
            return list(here) + rest
        if first == "super":
            base = list(here[:-1])
            while rest and rest[0] == "super":
                base, rest = base[:-1], rest[1:]
            return base + rest
        if first == "::":
            return None
        # A child module of this file (or of the inline module we are in: inline modules
        # belong to their file, so a name there is resolved in the file).
        if self.is_module(tuple(module) + (first,)):
            return list(module) + [first] + rest
        # A name that a `use` in this file binds.
        binding = self.binding(module, first, set())
        if binding is not None:
            return binding + rest
        return None

    def binding(self, module, name, seen):
        """The absolute path a `use` in `module`'s file binds to `name`, or None."""
        key = (tuple(module), name)
        if key in seen:
            return None
        seen = seen | {key}
        info = self.files.get(tuple(module))
        if info is None:
            return None
        for leaf in info.uses:
            if leaf.name == name and not leaf.glob:
                return self.absolute_leaf(leaf, module, seen)
        return None

    def absolute_leaf(self, leaf, module, seen):
        segments = leaf.segments
        if segments and segments[0] not in KEYWORD_PREFIXES and segments[0] != "::":
            first = segments[0]
            if self.is_module(tuple(module) + (first,)):
                return list(module) + list(segments)
            if first == leaf.name:
                return None  # `use foo;` of an extern crate
            inner = self.binding(module, first, seen)
            return None if inner is None else inner + list(segments[1:])
        return self.absolute(segments, module, leaf.scope)

    def defines(self, module, name):
        info = self.files.get(tuple(module))
        if info is None:
            return False
        pattern = r"\b(fn|struct|enum|union|trait|type|const|static|mod)\s+" + re.escape(name) + r"\b"
        return re.search(pattern, info.text) is not None or ("macro_rules! " + name) in info.text

    def resolve(self, absolute, seen=frozenset()):
        """(module, item) that an absolute path leads to: the module file that defines the
        item (following `use`s), the item's name or None when the path names a module."""
        module = ()
        for k, segment in enumerate(absolute):
            child = module + (segment,)
            if self.is_module(child):
                module = child
                continue
            key = (module, segment)
            if key in seen:
                return module, segment
            # An item: defined here, or brought here by a `use`.
            info = self.files[module]
            for leaf in info.uses:
                if leaf.glob or leaf.name != segment or leaf.scope:
                    continue
                target = self.absolute_leaf(leaf, module, set())
                if target is None:
                    return None  # re-exported from another crate
                return self.resolve(target + list(absolute[k + 1 :]), seen | {key})
            if not self.defines(module, segment):
                for leaf in info.uses:
                    if leaf.glob and not leaf.scope:
                        target = self.absolute_leaf(leaf, module, set())
                        if target is not None and self.is_module(target) and self.defines(target, segment):
                            return self.resolve(list(target) + list(absolute[k:]), seen | {key})
            return module, segment
        return module, None


def build_graph(crate):
    """{module: {imported module: set of items}}."""
    graph = {module: {} for module in crate.files}

    def add(module, absolute, is_use):
        if absolute is None:
            return
        resolved = crate.resolve(absolute)
        if resolved is None:
            return
        target, item = resolved
        if item is None and is_use:
            return  # `use` of a module: only a binding
        if target == module:
            return
        graph[module].setdefault(target, set())
        if item is not None:
            graph[module][target].add(item)

    for module, info in crate.files.items():
        for leaf in info.uses:
            if leaf.glob:
                target = crate.absolute_leaf(leaf, module, set())
                if target is not None and crate.is_module(target) and tuple(target) != module:
                    graph[module].setdefault(tuple(target), set()).add("*")
                continue
            add(module, crate.absolute_leaf(leaf, module, set()), True)
        for segments, scope, _ in info.paths:
            first = segments[0]
            if first not in KEYWORD_PREFIXES:
                if not crate.is_module(module + (first,)) and crate.binding(module, first, set()) is None:
                    continue
            add(module, crate.absolute(segments, module, scope), False)
    return graph


def strongly_connected(graph):
    """Tarjan's algorithm, iterative; components in a stable order."""
    index, low, on_stack, stack, components = {}, {}, set(), [], []
    counter = [0]
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return components


def shortest_cycles(graph, component):
    """For each module of a strongly connected component, a shortest cycle through it (by
    breadth-first search within the component), each cycle once."""
    members, seen, loops = set(component), set(), []
    for start in component:
        parents, frontier, found = {}, [start], False
        while frontier and not found:
            following = []
            for node in frontier:
                for child in sorted(graph[node], key=name):
                    if child not in members:
                        continue
                    if child == start:
                        path = [node]
                        while path[-1] != start:
                            path.append(parents[path[-1]])
                        loop = path[::-1]
                        found = True
                        break
                    if child not in parents:
                        parents[child] = node
                        following.append(child)
                if found:
                    break
            frontier = following
        turn = loop.index(min(loop, key=name))
        key = tuple(loop[turn:] + loop[:turn])
        if key not in seen:
            seen.add(key)
            loops.append(list(key))
    return loops


def name(module):
    return "::".join(module) if module else "crate"


def main(argv):
    quiet = "--quiet" in argv
    args = [a for a in argv if not a.startswith("--")]
    src = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
    crate = Crate(src)
    graph = build_graph(crate)

    if not quiet:
        for module in sorted(graph, key=name):
            imports = graph[module]
            print(f"{name(module)} ({os.path.relpath(crate.files[module].path, os.path.join(src, '..'))})")
            if not imports:
                print("    (no imports from the crate)")
            for target in sorted(imports, key=name):
                items = ", ".join(sorted(imports[target]))
                print(f"    {name(target)}: {items}" if items else f"    {name(target)}")
        print()

    cycles = [c for c in strongly_connected(graph) if len(c) > 1]
    cycles.sort(key=lambda c: [name(m) for m in c])
    if not cycles:
        print(f"no import cycles among {len(graph)} modules")
        return 0
    print(f"{len(cycles)} import cycle(s):")
    for component in cycles:
        members = set(component)
        print("  cycle: " + ", ".join(name(m) for m in component))
        print("  the shortest cycle through each of them:")
        for loop in shortest_cycles(graph, component):
            print("    " + " -> ".join(name(m) for m in loop + [loop[0]]))
        print("  the imports among them:")
        for module in component:
            for target in sorted(graph[module], key=name):
                if target in members:
                    items = ", ".join(sorted(graph[module][target]))
                    print(f"    {name(module)} -> {name(target)}: {items}")
    return 1


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except BrokenPipeError:
        # Piped into `head` or the like: the reader has what it wanted.
        sys.stderr.close()
        sys.exit(1)
