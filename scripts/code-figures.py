#!/usr/bin/env python3
"""The structure figures docs/DESIGN.md quotes, measured on production code.

Production code is every `crates/*/src/**/*.rs` except the test-support
crate, with `#[cfg(test)]` items (test modules) left out. Prints:

- functions longer than LIMIT lines (default 120), longest first;
- files with more than FILE_LIMIT production lines (default 900);
- the lines of every `impl App` block of the TUI, summed;
- with --check, exits 1 when any bound is exceeded.

Functions are found by matching braces after `fn NAME`, skipping strings,
chars, raw strings and comments: good enough for formatted Rust.
"""

import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
FN_LIMIT = 120
FILE_LIMIT = 900
APP_LIMIT = 1200


def strip(text):
    """The text with strings, chars and comments blanked (newlines kept),
    so braces and keywords inside them do not count."""
    out = []
    i, n = 0, len(text)
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
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif re.match(r'b?r#*"', text[i:i + 40]) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'(b?r)(#*)"', text[i:])
            end = '"' + m.group(2)
            j = text.find(end, i + len(m.group(0)))
            j = n if j < 0 else j + len(end)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "'":
            # A char literal ('a', '\n', '\u{..}'), not a lifetime ('a).
            m = re.match(r"'(\\.|\\u\{[0-9a-fA-F]+\}|[^\\'])'", text[i:])
            if m:
                out.append(" " * len(m.group(0)))
                i += len(m.group(0))
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def matching(code, open_at):
    depth = 0
    for j in range(open_at, len(code)):
        if code[j] == "{":
            depth += 1
        elif code[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(code) - 1


ITEM = re.compile(r"\s*(#\[[^\]]*\]\s*)*(pub(\([^)]*\))?\s+)?(mod|fn|impl|use|struct|enum|const|static|trait)\b")


def without_tests(code, test_modules):
    """`#[cfg(test)]` items blanked (a field or statement under it loses
    only the attribute); `mod NAME;` under it adds NAME to test_modules."""
    start = 0
    while True:
        m = re.compile(r"#\[cfg\(test\)\]").search(code, start)
        if not m:
            return code
        item = ITEM.match(code, m.end())
        if not item:
            end = m.end() - 1
        else:
            brace = code.find("{", m.end())
            semi = code.find(";", m.end())
            if semi >= 0 and (brace < 0 or semi < brace):
                end = semi
                declared = re.match(r"\s*mod\s+(\w+)", code[item.start(4):end])
                if declared:
                    test_modules.add(declared.group(1))
            else:
                end = matching(code, brace)
        code = code[: m.start()] + re.sub(r"[^\n]", " ", code[m.start(): end + 1]) + code[end + 1:]
        start = m.start()


def production_files():
    for path in sorted((ROOT / "crates").glob("*/src/**/*.rs")):
        if "scv-test-support" in path.parts:
            continue
        yield path


def line_of(code, at):
    return code.count("\n", 0, at) + 1


def main():
    check = "--check" in sys.argv
    functions, files, app = [], [], 0
    test_modules = set()
    stripped = []
    for path in production_files():
        stripped.append((path, without_tests(strip(path.read_text()), test_modules)))
    for path, code in stripped:
        # A file that is a test module declared elsewhere (`mod tests;`).
        if path.stem in test_modules or (path.stem == "mod" and path.parent.name in test_modules):
            continue
        rel = path.relative_to(ROOT)
        lines = sum(1 for line in code.splitlines() if line.strip())
        files.append((lines, rel))
        for m in re.finditer(r"\bfn\s+([A-Za-z_][A-Za-z0-9_]*)", code):
            brace = code.find("{", m.end())
            semi = code.find(";", m.end())
            if brace < 0 or (0 <= semi < brace):
                continue  # a declaration without a body
            end = matching(code, brace)
            length = line_of(code, end) - line_of(code, m.start()) + 1
            functions.append((length, f"{rel}:{line_of(code, m.start())}", m.group(1)))
        if "scv-tui" in rel.parts:
            for m in re.finditer(r"\bimpl\s+App\s*\{", code):
                end = matching(code, m.end() - 1)
                app += line_of(code, end) - line_of(code, m.start()) + 1
    long_fns = sorted((f for f in functions if f[0] > FN_LIMIT), reverse=True)
    big_files = sorted((f for f in files if f[0] > FILE_LIMIT), reverse=True)
    print(f"functions over {FN_LIMIT} lines: {len(long_fns)}")
    for length, at, name in long_fns:
        print(f"  {length:5} {at} {name}")
    longest = max(functions)
    print(f"longest function: {longest[0]} lines ({longest[2]}, {longest[1]})")
    print(f"files over {FILE_LIMIT} production lines (non-blank): {len(big_files)}")
    for lines, rel in big_files:
        print(f"  {lines:5} {rel}")
    print(f"largest file: {max(files)[0]} lines ({max(files)[1]})")
    print(f"impl App blocks, lines in all: {app}")
    if check and (long_fns or big_files or app >= APP_LIMIT):
        sys.exit(1)


if __name__ == "__main__":
    main()
