#!/usr/bin/env python3
"""The module graph of each crate, and its import cycles.

Usage: scripts/module-graph.py [--tests] [--split MOD,MOD] [CRATE_DIR ...]
       scripts/module-graph.py --self-test

For every crate root (src/lib.rs, src/main.rs, src/bin/*.rs) of each crate
(default: every directory under crates/), the modules are found by following
`mod` declarations, and every path that names a module of the same crate is
collected: `use crate::x`, `crate::x::…`, `super::…`, `self::…`, and paths
that start with a child module's name (`chat::body` in provider/mod.rs).
A node is a top-level module, except that the modules named with --split
(default: provider, tools) are split into their submodules, so the graph
shows which wire imports what. The crate root itself is the node `crate`.
Below the top level, the children of every folder module are checked the
same way (two files of one folder importing each other is a cycle; a
parent and its child naming each other is the tree, not a cycle).

Prints each crate's graph (one line per module: what it imports) and every
cycle, and exits 1 when there is one. Code under #[cfg(test)] is left out
unless --tests is given: a test may reach across layers without making the
shipped code circular.

Why a script and not a crate: it has to run on a fresh checkout with nothing
but Python 3, and the question it answers (does any module import one that
imports it back?) needs only names, not types.
"""

import argparse
import os
import re
import sys

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def blank(text):
    """The source with comments, strings and char literals replaced by
    spaces (newlines kept), so that only code is searched."""
    out = []
    i, n = 0, len(text)

    def keep_lines(s):
        return "".join(c if c == "\n" else " " for c in s)

    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(keep_lines(text[i:j]))
            i = j
        elif re.match(r'(?:br|cr|r)#*"', text[i:i + 300]) and not (
            i and (text[i - 1].isalnum() or text[i - 1] == "_")
        ):
            m = re.match(r'(?:br|cr|r)(#*)"', text[i:])
            end = '"' + m.group(1)
            j = text.find(end, i + m.end())
            j = n if j < 0 else j + len(end)
            out.append(keep_lines(text[i:j]))
            i = j
        elif c == '"' or (c in "bc" and text.startswith('"', i + 1) and not (
            i and (text[i - 1].isalnum() or text[i - 1] == "_")
        )):
            j = i + (1 if c == '"' else 2)
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j += 1
            out.append(keep_lines(text[i:j]))
            i = j
        elif c == "'":
            # A char literal ('x', '\n', '\u{1F600}'), else a lifetime.
            m = re.match(r"'(?:\\(?:u\{[0-9A-Fa-f]+\}|x[0-9A-Fa-f]{2}|.)|[^\\'\n])'", text[i:])
            if m:
                out.append(" " * m.end())
                i += m.end()
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def matching_brace(code, open_at):
    depth = 0
    for j in range(open_at, len(code)):
        if code[j] == "{":
            depth += 1
        elif code[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(code)


def test_regions(code):
    """Spans of items under #[cfg(test)] (or any cfg naming `test`), and
    the names of modules declared that way without a body."""
    regions, test_mods = [], set()
    for m in re.finditer(r"#\s*\[\s*cfg\s*\(([^\]]*)\)\s*\]", code):
        if not re.search(r"\btest\b", m.group(1)) or re.search(r"not\s*\(\s*test", m.group(1)):
            continue
        j = m.end()
        # Skip further attributes on the same item.
        while True:
            a = re.match(r"\s*#\s*\[", code[j:])
            if not a:
                break
            depth, k = 0, j + a.end() - 1
            while k < len(code):
                depth += {"[": 1, "]": -1}.get(code[k], 0)
                k += 1
                if depth == 0:
                    break
            j = k
        semi = code.find(";", j)
        brace = code.find("{", j)
        semi = len(code) if semi < 0 else semi
        brace = len(code) if brace < 0 else brace
        if semi < brace:
            decl = re.match(r"\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(" + IDENT + r")\s*;", code[j:])
            if decl:
                test_mods.add(decl.group(1))
            regions.append((m.start(), semi + 1))
        else:
            regions.append((m.start(), matching_brace(code, brace) + 1))
    return regions, test_mods


def inline_modules(code):
    """(start, end, name) of every `mod name { … }` in the file."""
    found = []
    for m in re.finditer(r"\bmod\s+(" + IDENT + r")\s*\{", code):
        found.append((m.end() - 1, matching_brace(code, m.end() - 1), m.group(1)))
    return found


def parse_use_tree(tree):
    """`a::{b, c::d, e as f, self}` → [[a, b], [a, c, d], [a, e], [a]]."""
    # Renames go first, while `x as y` still has its spaces.
    tree = re.sub(r"\s+as\s+" + IDENT, "", tree)
    tree = re.sub(r"\s+", "", tree)
    paths = []

    def walk(s, prefix):
        # s is a comma-separated list of subtrees.
        depth, start, parts = 0, 0, []
        for k, ch in enumerate(s):
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            elif ch == "," and depth == 0:
                parts.append(s[start:k])
                start = k + 1
        parts.append(s[start:])
        for part in filter(None, parts):
            brace = part.find("{")
            if brace >= 0:
                head = [p for p in part[:brace].split("::") if p]
                walk(part[brace + 1:part.rfind("}")], prefix + head)
            else:
                segs = [p for p in part.split("::") if p]
                if segs == ["self"]:
                    paths.append(prefix)
                elif segs != ["*"]:
                    paths.append(prefix + [s for s in segs if s != "*"])
                else:
                    paths.append(prefix)

    walk(tree, [])
    return paths


class Crate:
    def __init__(self, name, root, split):
        self.name = name
        self.root = root
        self.split = split
        self.files = {}  # module path (tuple) -> file
        self.test_modules = set()  # module paths declared under cfg(test)
        self.children = {}  # module path -> set of child names
        self._discover((), root)
        self.root_names = self._root_imports()

    def _root_imports(self):
        """Names the crate root brings in with `use` (`pub use error::Error`):
        `crate::Error` elsewhere then means the module `error`, not the root."""
        names = {}
        code = blank(open(self.root, encoding="utf-8").read())
        inline = inline_modules(code)
        for m in re.finditer(r"\buse\s+", code):
            if any(s < m.start() < e for s, e, _ in inline):
                continue
            end = code.find(";", m.end())
            tree = code[m.end():end if end >= 0 else len(code)]
            renames = dict(re.findall(r"(" + IDENT + r")\s+as\s+(" + IDENT + r")", tree))
            for segs in parse_use_tree(tree):
                segs = [x for x in segs if x]
                if segs and segs[0] == "crate":
                    segs = segs[1:]
                if len(segs) > 1 and segs[0] in self.children.get((), set()):
                    names[renames.get(segs[-1], segs[-1])] = tuple(segs)
        return names

    def _discover(self, path, file):
        self.files[path] = file
        try:
            text = open(file, encoding="utf-8").read()
        except OSError:
            return
        code = blank(text)
        _, test_mods = test_regions(code)
        inline = inline_modules(code)
        kids = set()
        base = os.path.dirname(file)
        stem = os.path.splitext(os.path.basename(file))[0]
        own_dir = base if stem in ("mod", "lib", "main") or path == () else os.path.join(base, stem)
        for m in re.finditer(r"\bmod\s+(" + IDENT + r")\s*;", code):
            # Declarations inside an inline module live one level down.
            if any(s < m.start() < e for s, e, _ in inline):
                continue
            name = m.group(1)
            kids.add(name)
            for candidate in (os.path.join(own_dir, name + ".rs"),
                              os.path.join(own_dir, name, "mod.rs")):
                if os.path.exists(candidate):
                    child = path + (name,)
                    if name in test_mods or path in self.test_modules:
                        self.test_modules.add(child)
                    self._discover(child, candidate)
                    break
        for _, _, name in inline:
            kids.add(name)
        self.children[path] = kids

    def node(self, path):
        """The graph node of an absolute module path."""
        if path and path[0] in self.root_names and path[0] not in self.children.get((), set()):
            path = self.root_names[path[0]] + tuple(path[1:])
        if not path or path[0] not in self.children.get((), set()):
            return "crate"
        if path[0] in self.split and len(path) > 1 and path[1] in self.children.get(path[:1], set()):
            return path[0] + "::" + path[1]
        return path[0]

    def edges(self, tests):
        """{source node: {target node: is_test_only}}; the module-level
        edges (source module path, target module path) are kept in
        `self.module_edges` for [`Crate::folder_graphs`]."""
        graph = {}
        self.module_edges = set()
        known = set(self.files) | set(self.children)
        for mod_path, file in self.files.items():
            source = self.node(mod_path)
            graph.setdefault(source, {})
            file_is_test = mod_path in self.test_modules
            code = blank(open(file, encoding="utf-8").read())
            regions, _ = test_regions(code)
            inline = inline_modules(code)

            def module_at(pos):
                inner = sorted((s, e, name) for s, e, name in inline if s < pos < e)
                return mod_path + tuple(name for _, _, name in inner)

            def in_test(pos):
                return file_is_test or any(s <= pos < e for s, e in regions)

            def resolve(here, segs):
                if not segs:
                    return None
                if segs[0] == "crate":
                    return tuple(segs[1:])
                if segs[0] in ("super", "self"):
                    cur = list(here)
                    k = 0
                    while k < len(segs) and segs[k] in ("super", "self"):
                        if segs[k] == "super":
                            if not cur:
                                return None
                            cur.pop()
                        k += 1
                    return tuple(cur) + tuple(segs[k:])
                if segs[0] in self.children.get(here, set()):
                    return tuple(here) + tuple(segs)
                if here == () and segs[0] in self.children.get((), set()):
                    return tuple(segs)
                return None

            def add(pos, absolute):
                if absolute is None:
                    return
                test = in_test(pos)
                if test and not tests:
                    return
                module = tuple(absolute)
                if module and module[0] in self.root_names and module[0] not in self.children.get((), set()):
                    module = self.root_names[module[0]] + module[1:]
                while module and module not in known:
                    module = module[:-1]
                self.module_edges.add((module_at(pos), module))
                target = self.node(absolute)
                if target == source:
                    return
                previous = graph[source].get(target)
                graph[source][target] = test if previous is None else (previous and test)

            use_spans = []
            for m in re.finditer(r"\buse\s+", code):
                if m.start() and (code[m.start() - 1].isalnum() or code[m.start() - 1] in "_$"):
                    continue
                end = code.find(";", m.end())
                end = len(code) if end < 0 else end
                use_spans.append((m.start(), end))
                here = module_at(m.start())
                for segs in parse_use_tree(code[m.end():end]):
                    if segs and segs[0] == "":
                        segs = segs[1:]
                    add(m.start(), resolve(here, segs))
            pattern = re.compile(r"(?<![\w$:])(" + IDENT + r")((?:\s*::\s*" + IDENT + r")+)")
            for m in pattern.finditer(code):
                if any(s <= m.start() < e for s, e in use_spans):
                    continue
                segs = [m.group(1)] + [s.strip() for s in m.group(2).split("::") if s.strip()]
                # `pub(in crate::x)` names an ancestor, not a dependency.
                if re.search(r"\bin\s*$", code[max(0, m.start() - 8):m.start()]):
                    continue
                add(m.start(), resolve(module_at(m.start()), segs))
        return graph


def folder_graphs(module_edges):
    """For every module with submodules, the graph among its children: an
    edge from child a to child b when anything in a (or below it) names
    anything in b (or below it). A parent naming its child, or a child its
    parent, is the tree itself and no edge. {folder path: graph}."""
    graphs = {}
    for source, target in module_edges:
        common = 0
        while common < min(len(source), len(target)) and source[common] == target[common]:
            common += 1
        if common == 0 or common >= len(source) or common >= len(target):
            continue  # the top level (checked as nodes) or parent and child
        folder = source[:common]
        a, b = source[common], target[common]
        graphs.setdefault(folder, {}).setdefault(a, {})[b] = False
    return graphs


def cycles(graph):
    """Strongly connected components with more than one node (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, {})):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def one_cycle(graph, comp):
    """A shortest cycle through the component's first node, for the report."""
    members = set(comp)
    start = comp[0]
    frontier, seen = [[start]], {start}
    while frontier:
        nxt = []
        for path in frontier:
            for w in sorted(graph.get(path[-1], {})):
                if w == start:
                    return path + [start]
                if w in members and w not in seen:
                    seen.add(w)
                    nxt.append(path + [w])
        frontier = nxt
    return comp


def roots_of(crate_dir):
    src = os.path.join(crate_dir, "src")
    roots = []
    for name in ("lib.rs", "main.rs"):
        if os.path.exists(os.path.join(src, name)):
            roots.append((name, os.path.join(src, name)))
    bins = os.path.join(src, "bin")
    if os.path.isdir(bins):
        for entry in sorted(os.listdir(bins)):
            path = os.path.join(bins, entry)
            if entry.endswith(".rs"):
                roots.append(("bin/" + entry, path))
            elif os.path.exists(os.path.join(path, "main.rs")):
                roots.append(("bin/" + entry, os.path.join(path, "main.rs")))
    return roots


def self_test():
    """The check finds what it is for: two files of one folder importing
    each other, and nothing in a tree where only parent and child do."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        files = {
            "src/lib.rs": "mod a;\n",
            "src/a/mod.rs": "mod x;\nmod y;\npub struct P;\n",
            "src/a/x.rs": "use super::y::Y;\nuse super::P;\npub struct X;\n",
            "src/a/y.rs": "use super::x::X;\npub struct Y;\n",
        }
        for rel, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(tmp, rel)), exist_ok=True)
            with open(os.path.join(tmp, rel), "w", encoding="utf-8") as f:
                f.write(text)
        crate = Crate("selftest", os.path.join(tmp, "src/lib.rs"), set())
        crate.edges(False)
        found = {f: cycles(g) for f, g in folder_graphs(crate.module_edges).items()}
        assert found == {("a",): [["x", "y"]]}, found
        with open(os.path.join(tmp, "src/a/y.rs"), "w", encoding="utf-8") as f:
            f.write("use super::P;\npub struct Y;\n")
        crate = Crate("selftest", os.path.join(tmp, "src/lib.rs"), set())
        crate.edges(False)
        assert all(not cycles(g) for g in folder_graphs(crate.module_edges).values())
    print("self-test passed")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("crates", nargs="*", help="crate directories (default: crates/*)")
    parser.add_argument("--tests", action="store_true", help="count #[cfg(test)] code too")
    parser.add_argument("--split", default="provider,tools",
                        help="modules shown as their submodules (default: provider,tools)")
    args = parser.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    crate_dirs = args.crates or sorted(
        os.path.join(here, "..", "crates", d)
        for d in os.listdir(os.path.join(here, "..", "crates"))
        if os.path.isdir(os.path.join(here, "..", "crates", d, "src"))
    )
    split = set(filter(None, args.split.split(",")))
    found = False
    for crate_dir in crate_dirs:
        name = os.path.basename(os.path.normpath(crate_dir))
        for root_name, root in roots_of(crate_dir):
            crate = Crate(name, root, split)
            graph = crate.edges(args.tests)
            print(f"{name} ({root_name})")
            for source in sorted(graph):
                targets = graph[source]
                if not targets:
                    continue
                shown = ", ".join(t + (" (tests)" if targets[t] else "") for t in sorted(targets))
                print(f"  {source} -> {shown}")
            for comp in cycles(graph):
                found = True
                print(f"  CYCLE among {', '.join(comp)}: {' -> '.join(one_cycle(graph, comp))}")
            # Two files of one folder importing each other are a cycle too.
            for folder, inner in sorted(folder_graphs(crate.module_edges).items()):
                where = "::".join(folder)
                for comp in cycles(inner):
                    found = True
                    print(f"  CYCLE in {where}: {' -> '.join(one_cycle(inner, comp))}")
            print()
    if found:
        print("import cycles found", file=sys.stderr)
        return 1
    print("no import cycles")
    return 0


if __name__ == "__main__":
    sys.exit(main())
