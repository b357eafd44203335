#!/usr/bin/env python3
"""Every Swift code block in README.md and Documentation/*.md is compiled by `make test`.

Each ```swift block must follow a marker naming where it is compiled:
    <!-- snippet: PATH -->          the block is the whole file PATH
    <!-- snippet: PATH#NAME -->     the block is the region of PATH between `// snippet: NAME`
                                    and `// end snippet` (indentation removed)
The files are in targets `swift build --build-tests` builds (Tests/DocSnippets, the README's
consumer package, test files), so a block that does not compile fails the build, and this script
fails when a block has no marker or differs from what is compiled.

    python3 Scripts/check-snippets.py          checks
    python3 Scripts/check-snippets.py --fix    rewrites each marked block from what is compiled
"""
import glob, os, sys

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
docs = ["README.md"] + sorted(glob.glob(os.path.join(root, "Documentation", "*.md")))
problems, checked = [], 0
fix = "--fix" in sys.argv[1:]

def region(path, name):
    lines = open(os.path.join(root, path)).read().split("\n")
    start = next((i for i, l in enumerate(lines) if l.strip() == "// snippet: " + name), None)
    if start is None:
        return None
    end = next(i for i in range(start + 1, len(lines)) if lines[i].strip() == "// end snippet")
    body = lines[start + 1:end]
    indent = min((len(l) - len(l.lstrip(" ")) for l in body if l.strip()), default=0)
    return [l[indent:] for l in body]

for doc in docs:
    path = doc if os.path.isabs(doc) else os.path.join(root, doc)
    lines = open(path).read().split("\n")
    shown = os.path.relpath(path, root)
    for i, line in enumerate(lines):
        if not line.startswith("```swift"):
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j] == "```")
        block = lines[i + 1:end]
        marker = lines[i - 1].strip() if i > 0 else ""
        if not (marker.startswith("<!-- snippet: ") and marker.endswith(" -->")):
            problems.append(f"{shown}:{i + 1}: a swift block without a <!-- snippet: PATH[#NAME] --> marker")
            continue
        target = marker[len("<!-- snippet: "):-len(" -->")]
        file, _, name = target.partition("#")
        if not os.path.exists(os.path.join(root, file)):
            problems.append(f"{shown}:{i + 1}: {file} does not exist")
            continue
        expected = region(file, name) if name else open(os.path.join(root, file)).read().rstrip("\n").split("\n")
        if expected is None:
            problems.append(f"{shown}:{i + 1}: no region '{name}' in {file}")
        elif expected != block and fix:
            lines[i + 1:end] = expected
            open(path, "w").write("\n".join(lines))
            print(f"check-snippets: {shown}:{i + 1}: rewritten from {target}")
            checked += 1
        elif expected != block:
            diff = next((k for k in range(max(len(expected), len(block)))
                         if k >= len(expected) or k >= len(block) or expected[k] != block[k]), 0)
            problems.append(f"{shown}:{i + 1}: the block differs from {target} at its line {diff + 1}:\n"
                            f"  shown:    {block[diff] if diff < len(block) else '(end)'}\n"
                            f"  compiled: {expected[diff] if diff < len(expected) else '(end)'}")
        else:
            checked += 1

# Migrating.md: every table row's 2.0 cell is compiled code, found (spaces aside) in
# Tests/DocSnippets/Migrating.swift.
migrating = os.path.join(root, "Documentation", "Migrating.md")
if os.path.exists(migrating):
    compiled = " ".join(open(os.path.join(root, "Tests", "DocSnippets", "Migrating.swift")).read().split())
    rows = 0
    for number, line in enumerate(open(migrating).read().split("\n"), 1):
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")] if line.startswith("| `") else []
        if len(cells) < 2:
            continue
        rows += 1
        for code in cells[1].split("`")[1::2]:
            if " ".join(code.split()) not in compiled:
                problems.append(f"Documentation/Migrating.md:{number}: the 2.0 code `{code}` is not in Tests/DocSnippets/Migrating.swift")
    checked += rows

for problem in problems:
    print("check-snippets: " + problem, file=sys.stderr)
if problems:
    sys.exit(1)
print(f"check-snippets: {checked} Swift blocks in README.md and Documentation/, and Migrating.md's rows, are the code the build compiles")
