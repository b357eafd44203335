#!/usr/bin/env python3
"""Checks that the docs' figures are the measurements' (`make test` runs it; issue 67, item 5):

1. Generated tables: every part of a page between a record's markers is what
   Scripts/docfigures.py renders from Documentation/Figures/NAME.json (the benchmarks' tables
   in Performance.md), and Architecture.md's table of layers is what it makes from Package.swift.
   A table edited by hand, or a record without its page, fails; `make docs-figures` renders them.
2. Cited figures: prose that gives a table's figure marks it, right before the figure:

       two processes stay within <!-- figure: rooms "PlayerKit" "p99" -->0.7 ms at p99

   NAME is a record (Documentation/Figures/NAME.json; NAME#N for its N-th table only), ROW the
   first cell of a row (or the start of one row's first cell), COLUMN a header (or the start of
   one). The number after the marker must be the cell's, rounded to as many decimals as the
   prose gives. When a benchmark runs again and its figure moves, the prose fails here until
   it says the new one.
3. No copied figures: a sentence or table cell of README.md or a guide (Documentation/*.md but
   Performance.md) that cites the benchmarks (names Performance.md, a `make bench*` target or
   Benchmarks/) gives no figure (a number in ms, us, x, MB, or with decimals in s or %) that is
   not marked as above: it links to the table instead. The same for Performance.md's own
   sentences that cite its Latest run. A number there that is no measurement (a setting, a
   target) follows `<!-- not a figure -->`.
4. Architecture.md's layer diagram: each "PlayerKitX ... imports A, B and C" names exactly the
   PlayerKit modules that Package.swift lets PlayerKitX import.
5. Every anchored link into README.md or a guide (`Performance.md#latest-run`) names a heading
   of that page.

Runs in well under a second, with the standard library alone (nothing is built).

  Scripts/check-figures.py               checks
  Scripts/check-figures.py --self-test   shows that each check fails on what it should catch
"""
import decimal
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import docfigures  # noqa: E402

ROOT = docfigures.ROOT
MARK = re.compile(r'<!-- figure: (?P<name>[\w-]+)(?:#(?P<table>\d+))? "(?P<row>[^"]+)" "(?P<column>[^"]+)" -->')
NOT_A_FIGURE = "<!-- not a figure -->"
NUMBER = re.compile(r"[-+]?\d[\d,]*(?:\.\d+)?")
# A figure as the benchmarks give them: 0.7 ms, 35 us, 0.56x, 25.1 MB, 0.29 s, 3.0%.
VALUE = r"[-+]?\d[\d,]*(?:\.\d+)?"
FIGURE = re.compile(r"(?<![\w.,+-])" + VALUE + r"(?:[-–]" + VALUE + r")?(?: ?(?:ms|us|µs|MB)\b(?!/)|x(?![\w])|×)"
                    r"|(?<![\w.,+-])[-+]?\d+\.\d+(?:[-–]\d+\.\d+)?(?: s\b|%)")
CITES = re.compile(r"Performance\.md|make bench|Benchmarks/")
CITES_LATEST = re.compile(r"Latest run|latest run|#latest-run")


def rel(path):
    return os.path.relpath(path, ROOT)


def line_of(text, index):
    return text.count("\n", 0, index) + 1


# --- 1. generated tables -----------------------------------------------------------------

def first_difference(old, new):
    old_lines, new_lines = old.split("\n"), new.split("\n")
    for number, (a, b) in enumerate(zip(old_lines, new_lines)):
        if a != b:
            return number + 1, a, b
    number = min(len(old_lines), len(new_lines))
    return number + 1, (old_lines[number] if number < len(old_lines) else "(end of page)"), \
        (new_lines[number] if number < len(new_lines) else "(end of page)")


def check_generated():
    problems = []
    try:
        changed = docfigures.render_pages(write=False)
        layers = docfigures.render_layers(write=False)
    except (OSError, ValueError) as error:
        return [f"{error}"]
    for path, (old, new) in sorted(changed.items()):
        number, page, record = first_difference(old, new)
        problems.append(f"{rel(path)}:{number}: a generated table differs from its record in Documentation/Figures/: "
                        f"the page has {page!r}, the record makes {record!r} (tables come from the benchmarks' records: "
                        "`make docs-figures` renders them, a benchmark's --write records a new run)")
    for path, (old, new) in layers.items():
        number, page, made = first_difference(old, new)
        problems.append(f"{rel(path)}:{number}: the table of layers differs from Package.swift and "
                        f"Documentation/Figures/layers.json: the page has {page!r}, they make {made!r} (`make docs-figures`)")
    return problems


# --- 2. cited figures --------------------------------------------------------------------

def lookup(figure, table_number, row_key, column_key):
    """The cell a citation names, or raises ValueError saying why not."""
    tables = [block["table"] for block in figure["blocks"] if "table" in block]
    if table_number is not None:
        if not 1 <= table_number <= len(tables):
            raise ValueError(f"{figure['name']} has {len(tables)} tables, not a table {table_number}")
        tables = [tables[table_number - 1]]
    found = []
    for table in tables:
        columns = [i for i, header in enumerate(table["header"]) if header == column_key] or \
                  [i for i, header in enumerate(table["header"]) if header.startswith(column_key)]
        rows = [row for row in table["rows"] if row[0] == row_key] or \
               [row for row in table["rows"] if row[0].startswith(row_key)]
        if len(columns) == 1 and rows:
            found += [(row, columns[0], table) for row in rows]
    if not found:
        raise ValueError(f"no row {row_key!r} with a column {column_key!r} in {figure['name']}")
    if len(found) > 1:
        raise ValueError(f"{len(found)} cells match row {row_key!r}, column {column_key!r} in {figure['name']} "
                         f"(rows {', '.join(repr(row[0]) for row, _, _ in found[:4])}): name the row in full, or NAME#N")
    row, column, _ = found[0]
    return row[column]


def agrees(prose, cell):
    """Whether the prose's number says the cell's: equal, or the cell rounded to the prose's
    decimals."""
    match = NUMBER.search(cell)
    if not match:
        return False
    try:
        ours, theirs = decimal.Decimal(prose.replace(",", "")), decimal.Decimal(match.group(0).replace(",", ""))
    except decimal.InvalidOperation:
        return False
    decimals = -ours.as_tuple().exponent
    if decimals < -theirs.as_tuple().exponent:
        theirs = theirs.quantize(decimal.Decimal(1).scaleb(-decimals), rounding=decimal.ROUND_HALF_UP)
    return ours == theirs


def without_code(text):
    """The text with code blocks and code spans blanked (offsets kept): a marker shown in code
    is an example, not a citation."""
    text = re.sub(r"```.*?```", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.S)
    return re.sub(r"`[^`\n]*`", lambda m: " " * len(m.group(0)), text)


def check_citations(path, text, records):
    problems = []
    for match in MARK.finditer(without_code(text)):
        where = f"{rel(path)}:{line_of(text, match.start())}"
        name = match.group("name")
        if name not in records:
            problems.append(f"{where}: cites the figure {name!r}, which has no record (Documentation/Figures/{name}.json)")
            continue
        after = text[match.end():match.end() + 80]
        number = re.match(r"[\s\[*_`(~≈]*(" + NUMBER.pattern + ")", after)
        if not number:
            problems.append(f"{where}: a figure marker ({match.group(0)}) with no number right after it")
            continue
        try:
            cell = lookup(records[name], int(match.group("table")) if match.group("table") else None,
                          match.group("row"), match.group("column"))
        except ValueError as error:
            problems.append(f"{where}: {error}")
            continue
        if not agrees(number.group(1), cell):
            problems.append(f"{where}: says {number.group(1)} where {name}'s table says {cell!r} "
                            f"(row {match.group('row')!r}, column {match.group('column')!r}; "
                            f"Documentation/Figures/{name}.json, measured {records[name].get('date') or 'on an unknown date'})")
    return problems


# --- 3. copied figures -------------------------------------------------------------------

def passages(text):
    """(offset, passage) for every sentence and table cell outside code blocks and comments
    (figure markers kept)."""
    blanked = re.sub(r"```.*?```", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.S)
    blanked = re.sub(r"<!-- (?!figure:|not a figure).*?-->", lambda m: " " * len(m.group(0)), blanked, flags=re.S)
    boundary = re.compile(r"\n\s*\n|\n(?=\s*[-*] )|(?<=[.!?;])\s+(?=[A-Z`*(\[])|(?<=\S) \| (?=\S)|\n(?=\|)")
    # No boundary inside a marker (a row may be named "... with `.immediate` delivery").
    shape = re.sub(r"<!--.*?-->", lambda m: "x" * len(m.group(0)), blanked, flags=re.S)
    offset = 0
    for match in boundary.finditer(shape + "\n\n"):
        if blanked[offset:match.start()].strip():
            yield offset, blanked[offset:match.start()]
        offset = match.end()


def check_copies(path, text, latest_only=False):
    problems = []
    for offset, passage in passages(text):
        if not (CITES_LATEST if latest_only else CITES).search(passage):
            continue
        plain = re.sub(r"`[^`\n]*`", lambda m: " " * len(m.group(0)), passage)
        plain = re.sub(r"\]\([^)\s]*\)", lambda m: " " * len(m.group(0)), plain)  # link targets
        for match in FIGURE.finditer(plain):
            before = plain[max(0, match.start() - 200):match.start()]
            marker = list(re.finditer(MARK.pattern + "|" + re.escape(NOT_A_FIGURE), before))
            if marker and re.fullmatch(r"[\s\[*_`(~≈]*", before[marker[-1].end():]):
                continue
            problems.append(f"{rel(path)}:{line_of(text, offset + match.start())}: gives {match.group(0)!r} in a passage that "
                            f"cites {'the Latest run' if latest_only else 'the benchmarks'}: link to the table instead, or mark "
                            "the figure (<!-- figure: NAME \"ROW\" \"COLUMN\" -->) so that this check holds it to the "
                            "table (<!-- not a figure --> before a setting or a target)")
    return problems


# --- 4. the layer diagram's imports ------------------------------------------------------

def check_imports_prose(path, text, targets):
    problems = []
    dependencies = {target["name"]: target["dependencies"] for target in docfigures.layer_modules(targets)}
    block = re.search(r"## Layers\n.*?```\n(.*?)```", text, re.S)
    if not block:
        return [f"{rel(path)}: no ## Layers section with its diagram"]
    start = block.start(1)
    for paragraph in re.finditer(r"(?m)^ *(PlayerKit\w+) \(.*?(?=^ *PlayerKit\w+ \(|^\s*$|\Z)", block.group(1), re.S):
        module, said = paragraph.group(1), paragraph.group(0)
        parts = re.split(r"\simports\s", said, maxsplit=1)
        if module not in dependencies or len(parts) < 2:
            continue
        imports = parts[1]
        named = set(re.findall(r"\bPlayerKit\w+|\bC[A-Z][A-Za-z]+\b", imports))
        named = {name for name in named if name in dependencies or name.startswith("PlayerKit")}
        wanted = {name for name in dependencies[module] if name.startswith("PlayerKit")}
        extra = sorted(named - set(dependencies[module]))
        missing = sorted(wanted - named)
        if extra or missing:
            where = f"{rel(path)}:{line_of(text, start + paragraph.start())}"
            problems.append(f"{where}: says {module} imports {', '.join(sorted(named)) or 'nothing'}; Package.swift gives it "
                            f"{', '.join(dependencies[module])}"
                            + (f" (not a dependency: {', '.join(extra)})" if extra else "")
                            + (f" (not named: {', '.join(missing)})" if missing else ""))
    return problems


# --- 5. links into the pages -------------------------------------------------------------

def anchors(text):
    """The anchors GitHub gives a page's headings."""
    found, seen = set(), {}
    for line in without_code(text).split("\n"):
        heading = re.match(r"#{1,6} (.*)", line)
        if heading:
            slug = re.sub(r"[^\w\- ]", "", heading.group(1).strip().lower()).replace(" ", "-")
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def check_links(path, text, pages):
    """Every link with an anchor into README.md or a guide names a heading there (the docs
    point at tables by anchored links, so a renamed section must not leave them dangling)."""
    problems = []
    for match in re.finditer(r"\]\((?:(?:Documentation/)?(\w+)\.md)?#([^)\s]+)\)", text):
        target = pages.get(match.group(1) or os.path.splitext(os.path.basename(path))[0])
        if target is None:
            continue
        if match.group(2) not in anchors(target[1]):
            problems.append(f"{rel(path)}:{line_of(text, match.start())}: links to {rel(target[0])}#{match.group(2)}, "
                            f"which has no such heading")
    return problems


# --- the whole check ---------------------------------------------------------------------

def guides():
    folder = os.path.join(ROOT, "Documentation")
    return [os.path.join(ROOT, "README.md")] + [os.path.join(folder, name) for name in sorted(os.listdir(folder))
                                                 if name.endswith(".md")]


def main():
    problems = check_generated()
    records = {figure["name"]: figure for figure in docfigures.figures()}
    marked = 0
    pages = {}
    for path in guides():
        with open(path, encoding="utf-8") as file:
            pages[os.path.splitext(os.path.basename(path))[0]] = (path, file.read())
    for path, text in pages.values():
        problems += check_links(path, text, pages)
        marked += len(MARK.findall(without_code(text)))
        problems += check_citations(path, text, records)
        problems += check_copies(path, text, latest_only=path.endswith(os.path.join("Documentation", "Performance.md")))
    architecture = os.path.join(ROOT, "Documentation", "Architecture.md")
    with open(architecture, encoding="utf-8") as file:
        problems += check_imports_prose(architecture, file.read(), docfigures.package_targets())
    for problem in problems:
        print(f"check-figures: {problem}", file=sys.stderr)
    if problems:
        sys.exit(1)
    print(f"check-figures: {len(records)} benchmark tables and the table of layers as their records make them; "
          f"{marked} cited figures agree with their tables; no figure copied into a guide; every anchored link lands")


def self_test():
    """Each check, on a small page and record of its own, fails where it should."""
    record = {"name": "rooms", "date": "2026-11-29", "blocks": [{"table": {
        "header": ["kept together by", "p50 (ms)", "p99 (ms)"],
        "rows": [["PlayerKit (RoomFollower)", "0.0", "0.7"], ["naive", "142.8", "161.4"]]}}]}
    records = {"rooms": record}
    failures = []

    def expect(what, problems, fails):
        if bool(problems) != fails:
            failures.append(f"{what}: expected {'a failure' if fails else 'no failure'}, got {problems or 'none'}")

    page = "x.md"
    expect("a figure as its table says", check_citations(page, "p99 <!-- figure: rooms \"PlayerKit\" \"p99\" -->0.7 ms", records), False)
    expect("a figure rounded from its table", check_citations(page, "<!-- figure: rooms \"naive\" \"p99\" -->161 ms", records), False)
    expect("a figure that disagrees", check_citations(page, "p99 <!-- figure: rooms \"PlayerKit\" \"p99\" -->1.6 ms", records), True)
    expect("a figure of no record", check_citations(page, "<!-- figure: nothing \"PlayerKit\" \"p99\" -->0.7 ms", records), True)
    expect("a figure of no row", check_citations(page, "<!-- figure: rooms \"Syncplay\" \"p99\" -->0.7 ms", records), True)
    expect("a marker without a figure", check_citations(page, "<!-- figure: rooms \"PlayerKit\" \"p99\" --> soon", records), True)
    disagreeing = check_citations(page, "\n\nrooms stay within <!-- figure: rooms \"PlayerKit\" \"p99\" -->13 ms", records)
    if not (len(disagreeing) == 1 and disagreeing[0].startswith("x.md:3: says 13 ") and "'0.7'" in disagreeing[0]):
        failures.append(f"a disagreeing figure's message names its file:line and both values: got {disagreeing}")
    expect("a copied figure", check_copies(page, "Two rooms stay within 0.7 ms at p99 (Performance.md).\n"), True)
    expect("a marked figure", check_copies(page, "Within <!-- figure: rooms \"PlayerKit\" \"p99\" -->0.7 ms (Performance.md).\n"), False)
    expect("a link instead", check_copies(page, "How close: [the rooms table](Performance.md#rooms).\n"), False)
    expect("a figure in a passage citing nothing", check_copies(page, "A target of 33 ms.\n"), False)
    expect("a setting, said to be one", check_copies(page, "Syncplay corrects past <!-- not a figure -->1.5 s (Performance.md).\n"), False)
    expect("a figure copied into a table cell", check_copies(page, "| rooms | 0.7 ms at p99, Performance.md |\n"), True)
    expect("a figure in a sentence next to one that cites", check_copies(page, "A target of 33 ms. See Performance.md.\n"), False)
    expect("a marker shown in code", check_citations(page, "mark it: `<!-- figure: NAME \"ROW\" \"COLUMN\" -->`", records), False)
    linked = {"Performance": ("Performance.md", "# Performance\n\n## Latest run\n")}
    expect("a link to a heading", check_links(page, "[the table](Performance.md#latest-run)", linked), False)
    expect("a link to no heading", check_links(page, "[the table](Performance.md#targets-against-the-latest-run)", linked), True)
    expect("a figure in code", check_copies(page, "`--seconds 0.7` (make bench-rooms)\n"), False)
    targets = docfigures.package_targets('''
        .target(name: "PlayerKitSupport"),
        .target(name: "PlayerKitCore", dependencies: ["PlayerKitSupport"]),
        .target(name: "PlayerKitSync", dependencies: ["PlayerKitCore", "PlayerKitSupport"]),
        .target(name: "PlayerKitAnalysis", dependencies: ["PlayerKitCore", "PlayerKitSync", "PlayerKitSupport", "CFFmpeg"]),
    ''')
    diagram = "## Layers\n\n```\n  PlayerKitAnalysis (comparisons) imports\n  {}.\n```\n"
    expect("the diagram as Package.swift says", check_imports_prose(page, diagram.format(
        "PlayerKitCore, PlayerKitSupport and PlayerKitSync"), targets), False)
    expect("the diagram missing a dependency", check_imports_prose(page, diagram.format("only PlayerKitSupport"), targets), True)
    expect("the diagram naming one too many", check_imports_prose(page, diagram.format(
        "PlayerKitCore, PlayerKitSupport, PlayerKitSync and PlayerKitRooms"), targets), True)
    layers = {"header": ["module", "may import", "holds"], "names": {"CFFmpeg": "FFmpeg (`CFFmpeg`)"}, "modules": [
        {"module": name, "holds": "h"} for name in ("PlayerKitSupport", "PlayerKitCore", "PlayerKitSync", "PlayerKitAnalysis")]}
    made = docfigures.layers_table(targets, layers)
    expect("the table of layers from Package.swift", [] if "| `PlayerKitAnalysis` | `PlayerKitCore`, `PlayerKitSync`, "
           "`PlayerKitSupport`, FFmpeg (`CFFmpeg`) | h |" in made else [made], False)
    try:
        docfigures.layers_table(targets + docfigures.package_targets('.target(name: "PlayerKitNew")'), layers)
        expect("a module of Package.swift missing from layers.json", [], True)
    except ValueError:
        pass
    table = {"name": "t", "document": "x.md", "markers": ["<!-- T START -->", "<!-- T END -->"], "command": "make t",
             "machine": "m", "date": "d", "blocks": [{"text": "Measured with `{command}` on {machine}."}, record["blocks"][0]]}
    rendered = docfigures.render_into("a\n<!-- T START -->\nold\n<!-- T END -->\nb\n", table)
    expect("a page rendered from its record", [] if "| PlayerKit (RoomFollower) | 0.0 | 0.7 |" in rendered
           and "Measured with `make t` on m." in rendered else ["not rendered"], False)
    edited = rendered.replace("| 0.7 |", "| 0.5 |")
    expect("a table edited by hand", [] if docfigures.render_into(edited, table) == edited else ["differs"], True)
    for failure in failures:
        print(f"check-figures --self-test: {failure}", file=sys.stderr)
    if failures:
        sys.exit(1)
    print("check-figures --self-test: a disagreeing, unknown or unmarked figure fails; a table edited by hand fails; "
          "a diagram that names imports Package.swift does not give fails; the table of layers follows Package.swift")


if __name__ == "__main__":
    self_test() if "--self-test" in sys.argv[1:] else main()
