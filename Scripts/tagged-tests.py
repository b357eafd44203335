#!/usr/bin/env python3
"""Prints the Swift Testing filter (a regular expression over test IDs) that selects the suites and
tests tagged `TAG` in Tests/ (`@Suite(..., .tags(.TAG))` or `@Test(..., .tags(.TAG))`), for
Scripts/test-suite.sh's passes.

Swift Testing 6.3's command line cannot filter by tag (its `--filter tag:` prefix came later):
the tag in the source decides the pass, and this turns it into the suites' and tests' IDs.

  Scripts/tagged-tests.py timingPass      ->  \\.(TimingTests|...)/|\\.SyncGroupTests/stalledMember\\(
Exits non-zero when nothing carries the tag (a misspelt tag would run nothing apart)."""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def tagged(tag):
    suites, tests = [], []
    marker = re.compile(r"\.tags\([^)]*\." + re.escape(tag) + r"\b")
    for folder, _, files in os.walk(os.path.join(ROOT, "Tests")):
        for name in sorted(files):
            if not name.endswith(".swift"):
                continue
            text = open(os.path.join(folder, name), encoding="utf-8").read()
            # Each attribute with its traits, then the declaration it is on.
            # Comment lines and other attributes may stand between them.
            found = 0
            for match in re.finditer(
                    r"@(Suite|Test)\(((?:[^()]|\((?:[^()]|\([^()]*\))*\))*)\)[ \t]*\n(?:[ \t]*(?://[^\n]*|@\w+[^\n]*)?\n)*"
                    r"[ \t]*(?:[a-z]+\s+)*(struct|final class|class|func)\s+(\w+)", text):
                kind, traits, _, declared = match.groups()
                if not marker.search(traits):
                    continue
                found += 1
                if kind == "Suite":
                    suites.append(declared)
                else:
                    owner = None
                    for suite in re.finditer(r"\n(?:@Suite\([^\n]*\)\s*\n)?(?:final\s+)?(?:struct|class)\s+(\w+)", text[:match.start()]):
                        owner = suite.group(1)
                    if owner is None:
                        sys.exit(f"tagged-tests: {name}: the test {declared} is in no suite")
                    tests.append(f"{owner}/{declared}")
            # A tag on an attribute this could not tie to its declaration would put its tests in
            # the wrong pass without a word: refuse it.
            written = sum(1 for attribute in re.finditer(r"@(?:Suite|Test)\(", text)
                          if marker.search(text[attribute.start():text.find("\n", attribute.start())]))
            if written != found:
                sys.exit(f"tagged-tests: {name}: {written} attributes tagged .{tag}, {found} tied to a suite or test")
    return sorted(set(suites)), sorted(set(tests))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: Scripts/tagged-tests.py TAG")
    suites, tests = tagged(sys.argv[1])
    if not suites and not tests:
        sys.exit(f"tagged-tests: nothing in Tests/ is tagged .{sys.argv[1]}")
    parts = []
    if suites:
        parts.append(r"\.(" + "|".join(suites) + ")/")
    parts += [r"\." + test.replace("/", "/") + r"\(" for test in tests]
    print("|".join(parts))


if __name__ == "__main__":
    main()
