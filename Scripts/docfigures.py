"""The figures of the docs, kept as data and rendered from it (issue 67, item 5).

Every table a benchmark writes into Documentation/Performance.md is recorded first as one JSON
file, Documentation/Figures/NAME.json, and the part of the page between the figure's markers is
rendered from that file, by this module alone. A figure file holds:

    name       the file's name, and the name prose uses to cite the figure
    document   the page it is rendered into (relative to the repository)
    markers    the two HTML comments the rendered part sits between
    command    what measured it; machine, what it ran on; date, when (YYYY-MM-DD, or null)
    blocks     the rendered part, in order: {"text": "..."} paragraphs, in which {command},
               {machine} and {date} stand for the fields above, and {"table": {"header": [...],
               "rows": [[...], ...]}} tables of cells as shown
    results    (optional) the measurements the rows were made from, as the benchmark had them

The benchmarks call `record` (through Benchmarks/benchkit.py's `write_figures`); `make
docs-figures` (Scripts/docs-figures.py) renders every figure file and Architecture.md's table of
layers (from Package.swift, `layers_table`); Scripts/check-figures.py (in `make test`) checks
that the pages hold what this module renders and that prose citing a figure agrees with it.
Standard library only: it runs before anything is built.
"""
import json
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIGURES = os.path.join(ROOT, "Documentation", "Figures")
FIELDS = ("command", "machine", "date")
LAYERS = "layers"  # Documentation/Figures/layers.json: Architecture.md's table of layers, not a benchmark's


# --- Markdown <-> blocks -------------------------------------------------------------------

def cells(line):
    """The cells of one Markdown table row, stripped."""
    return [cell.strip() for cell in line.strip()[1:-1].split("|")]


def parse_body(text, fields=None):
    """The blocks of a rendered part: paragraphs and tables (separated by blank lines). Exact
    occurrences of the given fields' values in paragraphs become their placeholders."""
    blocks = []
    for chunk in text.strip("\n").split("\n\n"):
        lines = chunk.split("\n")
        if len(lines) >= 2 and all(line.startswith("|") for line in lines) and re.fullmatch(r"\|(-+\|)+", lines[1]):
            header = cells(lines[0])
            rows = [cells(line) for line in lines[2:]]
            for number, row in enumerate(rows):
                if len(row) != len(header):
                    raise ValueError(f"table row {number + 1} has {len(row)} cells, its header {len(header)}: {lines[number + 2]}")
            blocks.append({"table": {"header": header, "rows": rows}})
        else:
            for field in FIELDS:
                value = (fields or {}).get(field)
                if value:
                    chunk = chunk.replace(value, "{" + field + "}")
            blocks.append({"text": chunk})
    return blocks


def row_line(row):
    return "| " + " | ".join(row) + " |"


def render_table(table):
    return "\n".join([row_line(table["header"]), "|" + "---|" * len(table["header"])]
                     + [row_line(row) for row in table["rows"]])


def render_body(figure):
    """The Markdown of a figure's blocks (what goes between its markers, without the newlines
    next to them)."""
    parts = []
    for block in figure["blocks"]:
        if "table" in block:
            parts.append(render_table(block["table"]))
        else:
            text = block["text"]
            for field in FIELDS:
                if "{" + field + "}" in text:
                    if not figure.get(field):
                        raise ValueError(f"{figure['name']}: a paragraph names {{{field}}}, which the figure has no value for")
                    text = text.replace("{" + field + "}", figure[field])
            parts.append(text)
    return "\n\n".join(parts)


# --- Figure files ------------------------------------------------------------------------

def dumps(figure):
    """A figure as JSON, one table row a line (so a new run's diff shows rows)."""
    def value(item, indent):
        pad = " " * indent
        if isinstance(item, dict) and "header" in item and "rows" in item:
            rows = ",\n".join(pad + "  " + json.dumps(row, ensure_ascii=False) for row in item["rows"])
            return ("{\n" + pad + ' "header": ' + json.dumps(item["header"], ensure_ascii=False) + ",\n"
                    + pad + ' "rows": [\n' + rows + ("\n" if rows else "") + pad + " ]\n" + pad + "}")
        if isinstance(item, list) and item and all(isinstance(x, dict) for x in item):
            return "[\n" + ",\n".join(pad + " " + value(x, indent + 1) for x in item) + "\n" + pad + "]"
        if isinstance(item, dict) and item and any(isinstance(x, (dict, list)) for x in item.values()) and indent < 3:
            return ("{\n" + ",\n".join(pad + " " + json.dumps(k, ensure_ascii=False) + ": " + value(v, indent + 1)
                                       for k, v in item.items()) + "\n" + pad + "}")
        return json.dumps(item, ensure_ascii=False)
    return value(figure, 0) + "\n"


def path_of(name):
    return os.path.join(FIGURES, name + ".json")


def load(name):
    with open(path_of(name), encoding="utf-8") as file:
        figure = json.load(file)
    if figure.get("name") != name:
        raise ValueError(f"{path_of(name)}: its name is {figure.get('name')!r}, not {name!r}")
    return figure


def names():
    if not os.path.isdir(FIGURES):
        return []
    return sorted(name[:-5] for name in os.listdir(FIGURES) if name.endswith(".json") and name[:-5] != LAYERS)


def figures():
    return [load(name) for name in names()]


def save(figure):
    os.makedirs(FIGURES, exist_ok=True)
    render_body(figure)  # fails before writing when a placeholder has no value
    with open(path_of(figure["name"]), "w", encoding="utf-8") as file:
        file.write(dumps(figure))


# --- Pages -------------------------------------------------------------------------------

def span(content, figure):
    """(start, end) of the part between a figure's markers in a page's text."""
    start_marker, end_marker = figure["markers"]
    start = content.find(start_marker)
    if start < 0 or content.find(start_marker, start + 1) >= 0:
        raise ValueError(f"{figure['document']} needs {start_marker} exactly once (figure {figure['name']})")
    start += len(start_marker)
    end = content.find(end_marker, start)
    if end < 0:
        raise ValueError(f"{figure['document']} has no {end_marker} after {start_marker} (figure {figure['name']})")
    return start, end


def rendered(figure):
    return "\n" + render_body(figure) + "\n"


def render_into(content, figure):
    start, end = span(content, figure)
    return content[:start] + rendered(figure) + content[end:]


def render_pages(selected=None, write=True):
    """Renders every figure (or the selected ones) into its page; returns the pages that
    changed, {path: (old, new)}. With write=False only reports."""
    pages = {}
    for figure in selected if selected is not None else figures():
        path = os.path.join(ROOT, figure["document"])
        if path not in pages:
            with open(path, encoding="utf-8") as file:
                text = file.read()
            pages[path] = (text, text)
        old, new = pages[path]
        pages[path] = (old, render_into(new, figure))
    changed = {path: texts for path, texts in pages.items() if texts[0] != texts[1]}
    if write:
        for path, (_, new) in changed.items():
            with open(path, "w", encoding="utf-8") as file:
                file.write(new)
    return changed


def same_markdown(rendered_text, text):
    """Whether the renderer's Markdown says what `text` says: the same lines, table rows
    compared by their cells (a benchmark may write an empty cell as `| |`, the renderer writes
    `|  |`)."""
    ours, theirs = rendered_text.split("\n"), text.split("\n")
    return len(ours) == len(theirs) and all(
        a == b or (a.startswith("|") and b.startswith("|") and cells(a) == cells(b)) for a, b in zip(ours, theirs))


def record(name, text, *, markers, command, machine, date, results=None, document="Documentation/Performance.md"):
    """What a benchmark calls when it writes: `text`, the Markdown it made for its part of the
    page, is saved as Documentation/Figures/NAME.json (with what measured it, and `results`,
    the measurements themselves, if given), then rendered into the page from that file. Returns
    the file's path."""
    fields = {"command": command, "machine": machine, "date": date}
    figure = {"name": name, "document": document, "markers": list(markers), **fields,
              "blocks": parse_body(text, fields)}
    if results is not None:
        figure["results"] = results
    if not same_markdown(render_body(figure), text.strip("\n")):
        raise ValueError(f"{name}: the blocks parsed from the benchmark's Markdown do not render it back")
    save(figure)
    render_pages([figure])
    return path_of(name)


def replace_blocks(name, text):
    """Keeps a record's fields and results but makes its blocks from `text` (run.py
    --chart-only: the same table with the chart's embed redrawn); renders it into its page."""
    figure = load(name)
    figure["blocks"] = parse_body(text, {field: figure.get(field) for field in FIELDS})
    save(figure)
    render_pages([figure])


# --- Architecture.md's table of layers, from Package.swift -------------------------------

def package_targets(text=None):
    """The targets of Package.swift, parsed as text (nothing is built or run): a list of
    {"kind", "name", "path", "dependencies"} in the manifest's order. Dependencies are target
    names or product names (`.product(name: "Logging", ...)` gives "Logging"); a
    `featureDependencies + [...]` list is expanded."""
    if text is None:
        with open(os.path.join(ROOT, "Package.swift"), encoding="utf-8") as file:
            text = file.read()
    text = re.sub(r"//[^\n]*", "", text)
    constants = {}
    for match in re.finditer(r"let (\w+): \[Target\.Dependency\] = \[(.*?)\]", text, re.S):
        constants[match.group(1)] = dependency_names(match.group(2))
    targets, end = [], 0
    for match in re.finditer(r"\.(target|systemLibrary|executableTarget|testTarget)\(", text):
        if match.start() < end:
            continue  # a `.target(name:)` dependency inside the target before
        body = balanced(text, match.end() - 1)
        end = match.end() + len(body)
        name = re.search(r'name:\s*"([^"]+)"', body).group(1)
        path = re.search(r'path:\s*"([^"]+)"', body)
        dependencies = []
        found = re.search(r"dependencies:\s*", body)
        if found:
            expression = dependency_expression(body, found.end())
            for part in re.split(r"\s*\+\s*", expression.strip()):
                if part.startswith("["):
                    dependencies += dependency_names(part[1:-1])
                elif part in constants:
                    dependencies += constants[part]
                else:
                    raise ValueError(f"Package.swift: target {name}'s dependencies use {part!r}, which this parser does not know")
        targets.append({"kind": match.group(1), "name": name, "path": path.group(1) if path else None,
                        "dependencies": dependencies})
    return targets


def balanced(text, open_index):
    """The text inside the parenthesis or bracket at open_index (strings respected)."""
    pairs = {"(": ")", "[": "]"}
    stack, index, in_string = [], open_index, False
    while index < len(text):
        char = text[index]
        if in_string:
            if char == "\\":
                index += 1
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in pairs:
            stack.append(pairs[char])
        elif stack and char == stack[-1]:
            stack.pop()
            if not stack:
                return text[open_index + 1:index]
        index += 1
    raise ValueError("Package.swift: unbalanced brackets")


def dependency_expression(body, start):
    """The expression after `dependencies:` up to the comma that ends it."""
    depth, index = 0, start
    while index < len(body):
        char = body[index]
        if char in "([":
            depth += 1
        elif char in ")]":
            if depth == 0:
                break
            depth -= 1
        elif char == "," and depth == 0:
            break
        elif char == '"':
            index = body.index('"', index + 1)
        index += 1
    return body[start:index]


def dependency_names(items):
    names, index = [], 0
    for match in re.finditer(r'\.product\(\s*name:\s*"([^"]+)"[^)]*\)|\.target\(\s*name:\s*"([^"]+)"[^)]*\)|"([^"]+)"', items):
        names.append(next(group for group in match.groups() if group))
    return names


def layer_modules(targets):
    """The package's modules an app can depend on (libraries and C modules), as the table of
    layers lists them: every target but executables, tests and what Examples, Tests and
    Benchmarks keep for themselves."""
    return [target for target in targets if target["kind"] in ("target", "systemLibrary")
            and not (target["path"] or "").startswith(("Examples/", "Tests/", "Benchmarks/"))]


def layers_table(targets=None, data=None):
    """Architecture.md's table of layers: each module of Package.swift, what it depends on there
    (its "may import" column, the only one made from the manifest), and what it holds (from
    Documentation/Figures/layers.json). Fails when the manifest and the data name different
    modules."""
    targets = package_targets() if targets is None else targets
    data = load(LAYERS) if data is None else data
    modules = {target["name"]: target for target in layer_modules(targets)}
    listed = [row["module"] for row in data["modules"]]
    missing, extra = [m for m in modules if m not in listed], [m for m in listed if m not in modules]
    if missing or extra:
        raise ValueError("Documentation/Figures/layers.json and Package.swift differ: "
                         + "; ".join(filter(None, [missing and "not in layers.json: " + ", ".join(missing),
                                                    extra and "not a module of Package.swift: " + ", ".join(extra)])))
    rows = []
    for row in data["modules"]:
        target = modules[row["module"]]
        notes = row.get("notes", {})
        unknown = [name for name in notes if name not in target["dependencies"]]
        if unknown:
            raise ValueError(f"layers.json: {row['module']} has notes on {', '.join(unknown)}, which it does not depend on in Package.swift")
        parts = []
        for name in target["dependencies"]:
            shown = data["names"].get(name, f"`{name}`")
            parts.append(shown + (f" ({notes[name]})" if name in notes else ""))
        if not parts:
            parts = [row["none"] if "none" in row else "nothing"]
        rows.append([f"`{row['module']}`", ", ".join(parts), row["holds"]])
    return render_table({"header": data["header"], "rows": rows})


def render_layers(write=True):
    """Renders the table of layers into its page; returns {path: (old, new)} if it changed."""
    data = load(LAYERS)
    path = os.path.join(ROOT, data["document"])
    with open(path, encoding="utf-8") as file:
        old = file.read()
    start, end = span(old, data)
    new = old[:start] + "\n" + layers_table(data=data) + "\n" + old[end:]
    if new != old and write:
        with open(path, "w", encoding="utf-8") as file:
            file.write(new)
    return {path: (old, new)} if new != old else {}
