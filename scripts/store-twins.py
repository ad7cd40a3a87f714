#!/usr/bin/env python3
"""How much of the store each backend writes by hand (issue #32). Python 3, stdlib only.

    scripts/store-twins.py [ROOT]          # ROOT: a checkout (default: this repository)
    scripts/store-twins.py --twins [ROOT]  # also list the twin lines, SQLite side

What it counts, from the Swift text (no compiler):

* Lines per store module: every line of every .swift file under Sources/TuisongSQLStore,
  Sources/TuisongSQLiteStore, Sources/TuisongPostgresStore and Sources/TuisongStore, and the
  code lines among them (not blank, not only a comment, not only brackets).
  Before the modules were split (one Sources/TuisongStore) the SQLite side is every file there
  but Postgres/ and StoreOpener.swift, the PostgreSQL side is Sources/TuisongStore/Postgres/.
* Requirements: the members declared in the bodies of `GatewayStore` and every protocol it
  inherits, transitively (Sources/TuisongCore), as selectors: `name(label:label:)` for a
  function, `name` for a property. A backend writes a requirement by hand when a member with the
  same selector is declared directly in a body of `SQLiteStore` / `PostgresStore` (the class or
  any extension of it) in that backend's files; the rest it gets from a default in
  Sources/TuisongSQLStore (an extension of `SQLStoreBackend` or of a store protocol) or from
  TuisongCore. Overloads that share a selector count once.
* Twin lines: the code lines of one backend (imports, lines of only keywords such as
  `} else {` and `return` left out) that also appear in the other backend's files, counted on
  each side. "identical": the same text once leading/trailing blanks and trailing `//`
  comments are dropped. "alike": the same once placeholders are folded (`?`, `?1`, `$1` -> `?`),
  handle names (`db`, `conn`, `connection`, `executor` -> `H`), the value wrapping
  (`.int(x)`, `.text(x)`, `.real(x)`, `.blob(x)`, `PostgresValue(x)`, `SQLValue(x)` -> `x`,
  `arguments: [` -> `[`) and the backends' own names (`SQLiteStore`/`PostgresStore`/`Rows`
  -> `S`). SQL inside string literals counts: it is most of what gets written twice.
"""

import os
import re
import sys
from collections import Counter

# ---------------------------------------------------------------------------------------------
# Lexing: the text without comments (strings kept), and the text without comments or strings.


def lex(text):
    """Returns (code, skeleton): `code` has comments blanked (newlines kept); `skeleton` also
    has the content of string literals blanked, so braces inside strings do not count."""
    code, skel = [], []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            code.append(" " * (j - i))
            skel.append(" " * (j - i))
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
            blank = "".join("\n" if ch == "\n" else " " for ch in text[i:j])
            code.append(blank)
            skel.append(blank)
            i = j
        elif c == '"' or (c == "#" and re.match(r'#+"', text[i:])):
            hashes = len(re.match(r"#*", text[i:]).group(0))
            start = i
            i += hashes
            multi = text.startswith('"""', i)
            quote = '"""' if multi else '"'
            close = quote + "#" * hashes
            i += len(quote)
            depth = 0  # parentheses of an interpolation
            while i < n:
                if depth == 0 and text.startswith(close, i):
                    i += len(close)
                    break
                if text[i] == "\\":
                    if text.startswith("(", i + 1 + hashes) and text[i + 1 : i + 1 + hashes] == "#" * hashes:
                        depth += 1
                        i += 2 + hashes
                        continue
                    i += 2
                    continue
                if depth and text[i] == "(":
                    depth += 1
                elif depth and text[i] == ")":
                    depth -= 1
                elif not multi and text[i] == "\n":
                    break
                i += 1
            literal = text[start:i]
            code.append(literal)
            skel.append("".join("\n" if ch == "\n" else ("_" if ch not in '"#' else ch) for ch in literal))
        else:
            code.append(c)
            skel.append(c)
            i += 1
    return "".join(code), "".join(skel)


# ---------------------------------------------------------------------------------------------
# Declarations: which members sit directly in which type's body.

TYPE_HEADER = re.compile(r"\b(protocol|extension|class|struct|actor|enum)\s+([A-Za-z_][\w.]*)([^{]*)$", re.S)
MEMBER = re.compile(r"\b(func|var|let)\s+([A-Za-z_]\w*)")


def split_top(text, sep=","):
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "([<{":
            depth += 1
        elif ch in ")]>}":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        parts.append("".join(cur))
    return parts


def selector(kind, name, skel, at):
    """`name(a:b:)` for a function whose name ends at `at` in `skel`, `name` for a property."""
    if kind != "func":
        return name
    i = at
    while i < len(skel) and skel[i].isspace():
        i += 1
    if i < len(skel) and skel[i] == "<":  # generic parameters
        depth = 0
        while i < len(skel):
            depth += skel[i] == "<"
            depth -= skel[i] == ">"
            i += 1
            if depth == 0:
                break
    while i < len(skel) and skel[i] != "(":
        i += 1
    depth, j = 0, i
    while j < len(skel):
        depth += skel[j] == "("
        depth -= skel[j] == ")"
        j += 1
        if depth == 0:
            break
    labels = []
    for param in split_top(skel[i + 1 : j - 1]):
        head = param.split(":", 1)[0].split()
        if head:
            labels.append(head[0] + ":")
    return "%s(%s)" % (name, "".join(labels))


def declarations(path):
    """[(kind, typeName, header, memberSelector)] for members directly in a type's body, and
    [(kind, name, header)] for each type body (headers carry the inheritance list)."""
    with open(path, encoding="utf-8") as f:
        _, skel = lex(f.read())
    members, types = [], []
    stack = []  # (kind, name, header) or None for a block
    boundary = 0
    events = sorted(
        [(m.start(), "brace", m.group(0)) for m in re.finditer(r"[{}]", skel)]
        + [(m.start(), "member", m) for m in MEMBER.finditer(skel)]
    )
    for pos, what, value in events:
        if what == "brace":
            if value == "{":
                header = skel[boundary:pos]
                m = TYPE_HEADER.search(header)
                if m and not re.search(r"\b(func|var|let|init)\b", m.group(3)):
                    entry = (m.group(1), m.group(2).split(".")[-1], m.group(3))
                    stack.append(entry)
                    types.append(entry)
                else:
                    stack.append(None)
            elif stack:
                stack.pop()
            boundary = pos + 1
        else:
            if stack and stack[-1] is not None:
                kind, name, header = stack[-1]
                members.append((kind, name, header, selector(value.group(1), value.group(2), skel, value.end())))
    return members, types


def swift_files(root, *folders):
    for folder in folders:
        base = os.path.join(root, folder)
        for dirpath, _, names in os.walk(base):
            for name in sorted(names):
                if name.endswith(".swift"):
                    yield os.path.join(dirpath, name)


def requirements(root):
    protocols = {}  # name -> (inherited, [selectors])
    for path in swift_files(root, "Sources/TuisongCore"):
        members, types = declarations(path)
        for kind, name, header in types:
            if kind == "protocol":
                inherited = [p.strip() for p in split_top(header.split("where")[0].lstrip(":"))]
                protocols.setdefault(name, ([p for p in inherited if p], []))
        for kind, name, _, sel in members:
            if kind == "protocol":
                protocols[name][1].append(sel)
    seen, order, todo = set(), [], ["GatewayStore"]
    while todo:
        name = todo.pop(0)
        if name in seen or name not in protocols:
            continue
        seen.add(name)
        order.append(name)
        todo += protocols[name][0]
    result = {}
    for name in order:
        for sel in protocols[name][1]:
            result.setdefault(sel, name)
    return result


# ---------------------------------------------------------------------------------------------
# Modules and twin lines.


def layout(root):
    """(shared, sqlite, postgres, opener) lists of files."""
    split = os.path.isdir(os.path.join(root, "Sources/TuisongSQLiteStore"))
    if split:
        return (
            list(swift_files(root, "Sources/TuisongSQLStore")),
            list(swift_files(root, "Sources/TuisongSQLiteStore")),
            list(swift_files(root, "Sources/TuisongPostgresStore")),
            list(swift_files(root, "Sources/TuisongStore")),
        )
    every = list(swift_files(root, "Sources/TuisongStore"))
    postgres = [p for p in every if "/Postgres/" in p]
    opener = [p for p in every if p.endswith("/StoreOpener.swift")]
    sqlite = [p for p in every if p not in postgres and p not in opener]
    return [], sqlite, postgres, opener


KEYWORDS = set(
    "else return break continue default do catch try await throw throws case let var guard if for in "
    "while switch defer nil true false self Self async".split()
)


def code_lines(path):
    with open(path, encoding="utf-8") as f:
        code, _ = lex(f.read())
    lines = []
    for line in code.split("\n"):
        text = line.strip()
        if not re.search(r"\w", text) or text.startswith("import "):
            continue
        lines.append(text)
    return lines


def is_trivial(text):
    words = re.findall(r"[A-Za-z_]\w*", text)
    return not words or all(w in KEYWORDS for w in words)


def fold(text):
    text = re.sub(r"\$\d+|\?\d*", "?", text)
    text = re.sub(r"\b(db|conn|connection|executor)\b", "H", text)
    text = re.sub(r"\barguments: \[", "[", text)
    for _ in range(3):
        text = re.sub(r"(?<![\w.])(?:\.(?:int|text|real|blob)|PostgresValue|SQLValue)\(([^()]*)\)", r"\1", text)
    text = re.sub(r"\b(SQLiteStore|PostgresStore|Rows)\b", "S", text)
    return text


def twins(mine, theirs, key):
    other = set(key(t) for t in theirs)
    return [t for t in mine if key(t) in other]


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    root = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    shared, sqlite, postgres, opener = layout(root)

    print("Lines per store module (all lines / code lines):")
    for label, files in (
        ("TuisongSQLStore", shared),
        ("SQLite backend", sqlite),
        ("PostgreSQL backend", postgres),
        ("TuisongStore (opener)", opener),
    ):
        total = sum(sum(1 for _ in open(p, encoding="utf-8")) for p in files)
        code = sum(len(code_lines(p)) for p in files)
        print("  %-24s %6d / %6d  (%d files)" % (label, total, code, len(files)))

    reqs = requirements(root)
    defaults = set()
    for path in shared:
        for kind, _, _, sel in declarations(path)[0]:
            if kind == "extension" and sel in reqs:
                defaults.add(sel)
    print("\nGatewayStore requirements: %d (%d with a default in TuisongSQLStore)" % (len(reqs), len(defaults)))
    for label, typename, files in (("SQLiteStore", "SQLiteStore", sqlite), ("PostgresStore", "PostgresStore", postgres)):
        by_hand = set()
        for path in files:
            for kind, name, _, sel in declarations(path)[0]:
                if name == typename and sel in reqs:
                    by_hand.add(sel)
        print("  %-14s writes %3d of %d by hand" % (label, len(by_hand), len(reqs)))
        if "--list" in sys.argv:
            for sel in sorted(by_hand):
                print("      %s  (%s)" % (sel, reqs[sel]))

    lite = [t for p in sqlite for t in code_lines(p) if not is_trivial(t)]
    pg = [t for p in postgres for t in code_lines(p) if not is_trivial(t)]
    strip = lambda t: t  # noqa: E731
    ident = (len(twins(lite, pg, strip)), len(twins(pg, lite, strip)))
    alike = (len(twins(lite, pg, fold)), len(twins(pg, lite, fold)))
    print("\nTwin code lines across the backends (SQLite side + PostgreSQL side = total):")
    print("  code lines counted      %5d + %5d = %5d" % (len(lite), len(pg), len(lite) + len(pg)))
    print("  identical               %5d + %5d = %5d" % (ident[0], ident[1], sum(ident)))
    print("  alike (folded)          %5d + %5d = %5d" % (alike[0], alike[1], sum(alike)))
    if "--twins" in sys.argv:
        for text, count in Counter(twins(lite, pg, fold)).most_common():
            print("  %3d  %s" % (count, text))


if __name__ == "__main__":
    main()
