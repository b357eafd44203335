#!/usr/bin/env python3
"""The API baseline check: fails when a public declaration in the baseline is gone or changed
incompatibly, unless the package's major version has moved past the baseline's.

What it compares. The symbol graphs Scripts/check-docs.sh extracts from the debug build
(.build/docs/symbols: every public symbol of every documented module, with synthesized members
and extension blocks) against Documentation/API/baseline.txt, which lists, one per line:
- every public symbol: its module, kind, path, declaration and precise identifier (the mangled
  name, so a changed signature, type or generic constraint is a different identifier);
- every conformance of a public type (removing `Hashable` or `Sendable` breaks callers);
- every requirement of a public protocol (a new requirement without a default implementation
  breaks every app's conformer, so it is a break too).

What counts as a break:
- a baseline symbol whose identifier is gone (removed, renamed, or its signature changed), unless
  source code still sees it: a type that became a typealias of the same name (1.1's
  `PlayerEventStream = EventStream<PlayerEventRecord>`), whose members the target has, or a
  declaration now spelled through such an alias's target or with another default value (printed
  with `~`; Scripts/compile-rules/ compiles 1.0 code that uses them);
- a baseline conformance that is gone;
- a protocol requirement that is new and has no default implementation;
- an availability change that stops code compiling (what 1.1 did to `Player(...)` and the check
  did not see, issue 67): a baseline symbol that became `noasync` (`@available(*, noasync)` or
  `@_unavailableFromAsync`: no longer callable from async code) or `unavailable`; and a baseline
  symbol that was deprecated and is gone (reported as such: a deprecated symbol goes only with a
  new major version).
Availability is read where the symbol graph says each symbol is declared: the attributes on the
lines above its declaration (the symbol graph itself does not record `noasync`). The baseline
keeps one `availability` line per symbol that has any.
Additions are not breaks: they are printed, and `--update` writes them into the baseline.

The version. The baseline's first line names the major version it was taken at
(`# PlayerKit API baseline, major version 1`); the package's version is the first released
heading in CHANGELOG.md (`## [1.0.0] - ...`). A break fails the check unless CHANGELOG's major
version is greater than the baseline's: then the release is a new major version, and `--update`
takes the new baseline.

Before 1.0.0. Until CHANGELOG.md has its 1.0.0 heading (issue 41), the baseline is the candidate
1.0 API: a deliberate change to it is taken with `--update` in the same commit as the change,
and the commit says why. The check still fails on any change made without that step.

Usage:
  Scripts/check-api.py            check (make test runs this after the docs check)
  Scripts/check-api.py --update   rewrite the baseline from the current symbols
  Scripts/check-api.py --self-test
                                  show that the check fails: it drops one public symbol, one
                                  conformance, adds one protocol requirement, makes one method
                                  noasync and removes a deprecated one, in the current API in
                                  memory, and exits 0 only if each is reported as a break
"""
import glob
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SYMBOLS = os.path.join(ROOT, ".build", "docs", "symbols")
BASELINE = os.path.join(ROOT, "Documentation", "API", "baseline.txt")
CHANGELOG = os.path.join(ROOT, "CHANGELOG.md")
HEADER = re.compile(r"^# PlayerKit API baseline, major version (\d+)$")


def declaration(symbol):
    text = "".join(fragment["spelling"] for fragment in symbol.get("declarationFragments", []))
    return " ".join(text.split())


AVAILABILITY = re.compile(r"@available\s*\(([^)]*)\)|@_unavailableFromAsync")
_source_lines = {}


def availability_flags(symbol):
    """The availability of `symbol` that decides whether code compiles: a sorted tuple of
    `deprecated`, `noasync`, `unavailable`, from the attributes above its declaration (read at the
    location the symbol graph gives) and the graph's own `availability` entries."""
    flags = set()
    for entry in symbol.get("availability", []):
        if entry.get("domain") in ("*", "Swift", None):
            if entry.get("isUnconditionallyDeprecated") or "deprecated" in entry:
                flags.add("deprecated")
            if entry.get("isUnconditionallyUnavailable") or "obsoleted" in entry:
                flags.add("unavailable")
    location = symbol.get("location") or {}
    uri, line = location.get("uri", ""), (location.get("position") or {}).get("line")
    if uri.startswith("file://") and line is not None:
        path = uri[len("file://"):]
        if path not in _source_lines:
            try:
                _source_lines[path] = open(path, encoding="utf-8").read().split("\n")
            except OSError:
                _source_lines[path] = []
        lines = _source_lines[path]
        # The declaration's own line (attributes may lead it), then the attribute lines above it
        # (up to its doc comment or the previous declaration).
        index = line
        attributes = []
        if 0 <= index < len(lines):
            attributes.append(lines[index])
        index -= 1
        while 0 <= index < len(lines):
            text = lines[index].strip()
            if text.startswith("@") or (attributes and text.endswith(",") and not text.startswith("//")):
                attributes.append(text)
                index -= 1
                continue
            break
        for text in attributes:
            for match in AVAILABILITY.finditer(text):
                if match.group(0).startswith("@_unavailableFromAsync"):
                    flags.add("noasync")
                    continue
                arguments = [part.strip() for part in match.group(1).split(",")]
                if arguments and arguments[0] in ("*", "swift"):
                    for argument in arguments[1:]:
                        word = argument.split(":")[0].strip()
                        if word in ("noasync", "unavailable", "deprecated"):
                            flags.add(word)
                        elif word == "obsoleted":
                            flags.add("unavailable")
    return tuple(sorted(flags))


def current_api():
    """(symbols, conformances, requirements, availability) of the current build, each a dict keyed
    by identity (availability: by identifier, only symbols that have any)."""
    graphs = sorted(glob.glob(os.path.join(SYMBOLS, "*", "*.symbols.json")))
    if not graphs:
        sys.exit("api: no symbol graphs in %s: run Scripts/check-docs.sh first (make test does)" % SYMBOLS)
    symbols, paths, availability = {}, {}, {}
    relationships = []
    for path in graphs:
        module = os.path.basename(os.path.dirname(path))
        graph = json.load(open(path))
        for symbol in graph["symbols"]:
            if symbol.get("accessLevel") not in ("public", "open"):
                continue
            usr = symbol["identifier"]["precise"]
            dotted = ".".join(symbol["pathComponents"])
            paths[usr] = dotted
            symbols[usr] = "\t".join(["symbol", module, symbol["kind"]["identifier"], dotted, declaration(symbol), usr])
            flags = availability_flags(symbol)
            if flags:
                availability[usr] = "\t".join(["availability", dotted, ",".join(flags), usr])
        relationships.extend(graph["relationships"])
    conformances, requirements, defaults = {}, {}, set()
    for relation in relationships:
        if relation["kind"] == "defaultImplementationOf":
            defaults.add(relation["target"])
    for relation in relationships:
        source, target = relation["source"], relation["target"]
        if relation["kind"] == "conformsTo" and source in paths:
            name = paths.get(target) or relation.get("targetFallback") or target
            key = "conformance\t%s\t%s" % (paths[source], name)
            conformances[key] = key + "\t%s>%s" % (source, target)
        elif relation["kind"] == "requirementOf" and source in paths and target in paths:
            default = "default" if source in defaults else "required"
            key = "requirement\t%s\t%s" % (paths[target], paths[source])
            requirements[key] = key + "\t%s\t%s" % (default, source)
    return symbols, conformances, requirements, availability


def read_baseline():
    if not os.path.exists(BASELINE):
        sys.exit("api: %s is missing: take it with Scripts/check-api.py --update" % BASELINE)
    lines = open(BASELINE).read().splitlines()
    match = HEADER.match(lines[0]) if lines else None
    if not match:
        sys.exit("api: %s does not start with '# PlayerKit API baseline, major version N'" % BASELINE)
    symbols, conformances, requirements = {}, {}, {}
    # None: a baseline taken before availability was recorded (then it is not compared).
    availability = {} if any(line.startswith("availability\t") or line == "# availability: recorded" for line in lines) else None
    for line in lines[1:]:
        if not line or line.startswith("#"):
            continue
        fields = line.split("\t")
        if fields[0] == "symbol":
            symbols[fields[-1]] = line
        elif fields[0] == "conformance":
            conformances["\t".join(fields[:3])] = line
        elif fields[0] == "requirement":
            requirements["\t".join(fields[:3])] = line
        elif fields[0] == "availability" and availability is not None:
            availability[fields[-1]] = line
    return int(match.group(1)), symbols, conformances, requirements, availability


def changelog_major():
    for line in open(CHANGELOG):
        match = re.match(r"^## \[(\d+)\.(\d+)\.(\d+)\]", line)
        if match:
            return int(match.group(1))
    return 0


def aliases(symbols):
    """{alias path: (target type's path, target as written)} of the current public typealiases
    (1.0's `PlayerEventStream` is now `typealias PlayerEventStream = EventStream<PlayerEventRecord>`;
    a nested one's target is its parent's member: `EventStream.Iterator = AsyncIterator`)."""
    found = {}
    for line in symbols.values():
        fields = line.split("\t")
        match = re.match(r"^typealias (\w+) = ([\w.<>, ]+)$", fields[4]) if fields[2] == "swift.typealias" else None
        if match:
            written = match.group(2)
            target = re.sub(r"<[^<>]*>", "", re.sub(r"<[^<>]*>", "", written))   # EventStream<Element>.AsyncIterator
            parent = fields[3].rpartition(".")[0]
            found[fields[3]] = (target if "." in target or not parent else parent + "." + target, written)
    return found


def resolved(path, aliased):
    """`path` with every alias along it replaced by its target."""
    parts = path.split(".")
    for index in range(1, len(parts) + 1):
        prefix = ".".join(parts[:index])
        if prefix in aliased:
            return resolved(aliased[prefix][0] + ("." + ".".join(parts[index:]) if index < len(parts) else ""), aliased)
    return path


def without_defaults(text):
    """A declaration without its parameters' default values (a changed default is not a break)."""
    out, depth, skipping = [], 0, False
    index = 0
    while index < len(text):
        char = text[index]
        if skipping:
            if char in "([<":
                depth += 1
            elif char in ")]>" and depth > 1:
                depth -= 1
            elif (char == "," or char == ")") and depth == 1:
                skipping = False
                if char == ")":
                    depth -= 1
                out.append(char)
            index += 1
            continue
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if depth == 1 and text.startswith(" = ", index):
            skipping = True
            index += 3
            continue
        out.append(char)
        index += 1
    return "".join(out)


def source_compatible(line, aliased, new_by_path):
    """Whether a baseline symbol the build no longer has under its identifier is still there for
    source code: a type that became a typealias of another (its members are the target's), or a
    declaration whose types are now spelled through such an alias's target."""
    fields = line.split("\t")
    path, text = fields[3], fields[4]
    if path in aliased:
        return True
    target = resolved(path, aliased)
    if target != path and target in new_by_path:
        return True
    spelled = text
    for alias, (_, written) in aliased.items():
        if "." not in alias:
            spelled = re.sub(r"\b%s\b" % alias, written, spelled)
    spelled = without_defaults(spelled)
    return spelled != without_defaults(text) and spelled in {without_defaults(other) for other in new_by_path.get(path, set())}


def breaks(baseline, current, compatible=None):
    """Every break of `current` against `baseline`, as readable lines. Changes that keep source
    code compiling (a type replaced by a typealias of the same name) go to `compatible`."""
    _, old_symbols, old_conformances, old_requirements, old_availability = baseline
    new_symbols, new_conformances, new_requirements, new_availability = current
    aliased = aliases(new_symbols)
    new_by_path = {}
    for entry in new_symbols.values():
        fields = entry.split("\t")
        new_by_path.setdefault(fields[3], set()).add(fields[4])
    compatible = compatible if compatible is not None else []
    found = []
    for usr, line in sorted(old_symbols.items(), key=lambda item: item[1]):
        if usr not in new_symbols:
            fields = line.split("\t")
            if source_compatible(line, aliased, new_by_path):
                compatible.append("%s %s: %s" % (fields[1], fields[3], fields[4]))
                continue
            old_flags = (old_availability or {}).get(usr, "").split("\t")[2:3]
            if old_flags and "deprecated" in old_flags[0].split(","):
                found.append("deprecated and removed: %s %s: %s" % (fields[1], fields[3], fields[4]))
            else:
                found.append("removed or changed: %s %s: %s" % (fields[1], fields[3], fields[4]))
    if old_availability is not None:
        for usr, line in sorted(new_availability.items(), key=lambda item: item[1]):
            if usr not in old_symbols:
                continue
            old = set(old_availability.get(usr, "\t\t").split("\t")[2].split(",")) - {""}
            new = set(line.split("\t")[2].split(","))
            for flag in sorted((new - old) & {"noasync", "unavailable"}):
                what = "no longer callable from async code" if flag == "noasync" else "made unavailable"
                found.append("availability: %s %s (%s)" % (line.split("\t")[1], what, flag))
    for key in sorted(old_conformances):
        if key not in new_conformances:
            fields = key.split("\t")
            target = resolved(fields[1], aliased)
            if target != fields[1]:
                if "conformance\t%s\t%s" % (target, fields[2]) in new_conformances:
                    compatible.append("conformance %s to %s (through %s)" % (fields[1], fields[2], target))
                    continue
            found.append("conformance removed: %s no longer conforms to %s" % (fields[1], fields[2]))
    for key, line in sorted(new_requirements.items()):
        fields = line.split("\t")
        if key not in old_requirements and fields[3] == "required":
            found.append("protocol requirement added without a default: %s requires %s" % (fields[1], fields[2]))
    return found


def additions(baseline, current):
    _, old_symbols, old_conformances, _, _ = baseline
    new_symbols, new_conformances, _, _ = current
    added = [new_symbols[usr].split("\t") for usr in new_symbols if usr not in old_symbols]
    return sorted("%s %s" % (fields[1], fields[3]) for fields in added) + \
        sorted("conformance %s: %s" % tuple(key.split("\t")[1:3]) for key in new_conformances if key not in old_conformances)


def write_baseline(major, current):
    symbols, conformances, requirements, availability = current
    os.makedirs(os.path.dirname(BASELINE), exist_ok=True)
    with open(BASELINE, "w") as out:
        out.write("# PlayerKit API baseline, major version %d\n" % major)
        out.write("# Written by Scripts/check-api.py --update; read by make test (Scripts/check-api.py).\n")
        out.write("# Every public symbol, conformance and protocol requirement, tab-separated.\n")
        out.write("# availability: recorded\n")
        for line in sorted(symbols.values()) + sorted(conformances.values()) + sorted(requirements.values()) \
                + sorted(availability.values()):
            out.write(line + "\n")


def self_test(current):
    """The check against a copy of the current API with one symbol, one conformance removed and one
    requirement added: each must be reported."""
    symbols, conformances, requirements, availability = current
    baseline = (1, dict(symbols), dict(conformances), dict(requirements), dict(availability))
    if breaks(baseline, current):
        print("api self-test: the current API against itself reports breaks", file=sys.stderr)
        return 1
    victim = next(usr for usr, line in sorted(symbols.items(), key=lambda item: item[1]) if line.split("\t")[2] == "swift.method")
    conformance = sorted(conformances)[0]
    requirement = next(key for key, line in sorted(requirements.items()) if line.split("\t")[3] == "required")
    # A method with no availability of its own: made `noasync`, as 1.1 made `Player(...)`.
    plain = next(usr for usr, line in sorted(symbols.items(), key=lambda item: item[1])
                 if line.split("\t")[2] == "swift.method" and usr not in availability and usr != victim)
    made_noasync = dict(availability)
    made_noasync[plain] = "\t".join(["availability", symbols[plain].split("\t")[3], "noasync", plain])
    deprecated = dict(availability)
    deprecated[victim] = "\t".join(["availability", symbols[victim].split("\t")[3], "deprecated", victim])
    cases = [
        ("a removed method (%s)" % symbols[victim].split("\t")[3],
         ({u: l for u, l in symbols.items() if u != victim}, conformances, requirements, availability)),
        ("a removed conformance (%s)" % conformance.replace("\t", " "),
         (symbols, {k: l for k, l in conformances.items() if k != conformance}, requirements, availability)),
        ("a new protocol requirement (%s)" % requirement.replace("\t", " "),
         (symbols, conformances, requirements, availability)),
        ("a method made noasync (%s)" % symbols[plain].split("\t")[3],
         (symbols, conformances, requirements, made_noasync)),
        ("a deprecated method removed (%s)" % symbols[victim].split("\t")[3],
         ({u: l for u, l in symbols.items() if u != victim}, conformances, requirements, availability)),
    ]
    failed = 0
    for index, (name, changed) in enumerate(cases):
        old = baseline
        if index == 2:
            old = (1, symbols, conformances, {k: l for k, l in requirements.items() if k != requirement}, availability)
        if index == 4:
            old = (1, symbols, conformances, requirements, deprecated)
        found = breaks(old, changed)
        expected_word = {3: "no longer callable from async code", 4: "deprecated and removed"}.get(index)
        if len(found) == 1 and (expected_word is None or expected_word in found[0]):
            print("api self-test: %s is reported: %s" % (name, found[0]))
        else:
            print("api self-test: %s gave %d reports, not 1: %s" % (name, len(found), found), file=sys.stderr)
            failed = 1
    return failed


def main():
    arguments = sys.argv[1:]
    current = current_api()
    if "--self-test" in arguments:
        return self_test(current)
    if "--update" in arguments:
        major = max(changelog_major(), 1)
        write_baseline(major, current)
        print("api: wrote %s (%d symbols, major version %d)" % (os.path.relpath(BASELINE, ROOT), len(current[0]), major))
        return 0
    baseline = read_baseline()
    compatible = []
    found = breaks(baseline, current, compatible)
    added = additions(baseline, current)
    if compatible:
        print("api: %d baseline symbols changed their identifier but not what source code sees (a type now a"
              " typealias of the same name):" % len(compatible))
        for line in compatible[:12]:
            print("  ~ " + line)
        if len(compatible) > 12:
            print("  ... and %d more" % (len(compatible) - 12))
    major, package_major = baseline[0], changelog_major()
    if added:
        print("api: %d additions to the baseline (take them with Scripts/check-api.py --update):" % len(added))
        for line in added[:40]:
            print("  + " + line)
        if len(added) > 40:
            print("  ... and %d more" % (len(added) - 40))
    if found and package_major <= major:
        print("api: %d breaking changes against the major version %d baseline (%s):"
              % (len(found), major, os.path.relpath(BASELINE, ROOT)), file=sys.stderr)
        for line in found:
            print("  - " + line, file=sys.stderr)
        print("api: a break needs a new major version: put it in CHANGELOG.md, then take the new baseline"
              " with Scripts/check-api.py --update", file=sys.stderr)
        return 1
    if found:
        print("api: %d breaking changes, allowed: CHANGELOG's version %d is a new major version (baseline: %d);"
              " take the new baseline with Scripts/check-api.py --update" % (len(found), package_major, major))
    print("api: ok, %d public symbols, no break against the major version %d baseline" % (len(current[0]), major))
    return 0


if __name__ == "__main__":
    sys.exit(main())
