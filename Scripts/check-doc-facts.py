#!/usr/bin/env python3
"""Checks two facts of the guides that the compiler cannot (`make test` runs it):

- every event kind a guide or a doc comment names where a kind is meant
  (`PlayerNotification.name(for: .x)`, `PlayerEventKind.x`, "(kind `.x`)") is one that Sources
  define (`static let x: PlayerEventKind`);
- no guide repeats a paragraph or list item of its own (a copy left by an edit).

  Scripts/check-doc-facts.py
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def files(folder, suffix):
    for directory, _, names in os.walk(os.path.join(ROOT, folder)):
        if "/.build" in directory:
            continue
        for name in sorted(names):
            if name.endswith(suffix):
                yield os.path.join(directory, name)


def main():
    kinds = set()
    for path in files("Sources", ".swift"):
        kinds.update(re.findall(r"static (?:let|var) (\w+): PlayerEventKind\b", open(path, encoding="utf-8").read()))
    if len(kinds) < 10:
        sys.exit(f"check-doc-facts: found only {len(kinds)} event kinds in Sources; the pattern is out of date")
    problems = []
    guides = [os.path.join(ROOT, "README.md")] + list(files("Documentation", ".md")) + list(files("Sources", ".md"))
    named = re.compile(r"PlayerNotification\.name\(for: \.(\w+)\)|PlayerEventKind\.(\w+)|kind `\.(\w+)`")
    for path in guides + list(files("Sources", ".swift")):
        text = open(path, encoding="utf-8").read()
        if path.endswith(".swift"):
            text = "\n".join(line for line in text.split("\n") if line.strip().startswith("///"))
        for match in named.finditer(text):
            kind = next(group for group in match.groups() if group)
            if kind not in kinds and kind not in ("init", "allCases", "self"):
                line = text[:match.start()].count("\n") + 1
                problems.append(f"{os.path.relpath(path, ROOT)}:{line}: names the event kind .{kind}, which Sources do not define")
    for path in guides:
        if os.path.islink(path):
            continue
        text = open(path, encoding="utf-8").read()
        text = re.sub(r"```.*?```", "", text, flags=re.S)
        seen = {}
        for block in re.split(r"\n\s*\n|\n(?=- )", text):
            block = block.strip()
            if len(block) < 200 or block.startswith("|"):
                continue
            if block in seen:
                problems.append(f"{os.path.relpath(path, ROOT)}: a paragraph is there twice: \"{block[:70]}...\"")
            seen[block] = True
    for problem in problems:
        print(f"check-doc-facts: {problem}", file=sys.stderr)
    if problems:
        sys.exit(1)
    print(f"check-doc-facts: {len(kinds)} event kinds, every one named in the docs defined; no paragraph repeated")


if __name__ == "__main__":
    main()
