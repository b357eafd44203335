#!/usr/bin/env python3
"""`make docs-figures`: renders the docs' generated tables from their records, and runs nothing else.

- every benchmark table in Documentation/Performance.md from its JSON record,
  Documentation/Figures/NAME.json (which the benchmark wrote when it ran with --write), between
  the record's markers;
- Architecture.md's table of layers from Package.swift (each module's dependencies, read as text)
  and Documentation/Figures/layers.json (what each module holds).

Scripts/check-figures.py (in `make test`) fails when a page differs from what this writes.

  Scripts/docs-figures.py           rewrites the pages whose generated parts differ
  Scripts/docs-figures.py --check   only says which differ (exit status 1 if any)
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import docfigures  # noqa: E402


def main():
    write = "--check" not in sys.argv[1:]
    try:
        changed = docfigures.render_pages(write=write)
        for path, texts in docfigures.render_layers(write=write).items():
            changed[path] = texts
    except (OSError, ValueError) as error:
        sys.exit(f"docs-figures: {error}")
    names = docfigures.names()
    for path in sorted(changed):
        print(f"docs-figures: {'rewrote' if write else 'differs from its records:'} {os.path.relpath(path, docfigures.ROOT)}")
    if not changed:
        print(f"docs-figures: {len(names)} benchmark records and the table of layers rendered; every page already held them")
    if changed and not write:
        sys.exit(1)


if __name__ == "__main__":
    main()
