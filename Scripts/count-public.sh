#!/bin/sh
# Counts the public declarations in Sources (each line that declares something `public`, with
# or without attributes before it), deprecated ones apart (with their attribute, or inside a
# deprecated type or extension), and fails when the others exceed the
# budget in Documentation/API/budget.txt (its first number). `make test` runs it. Adding a public
# symbol raises the budget in the same commit, with a CHANGELOG line saying what was added.
#   Scripts/count-public.sh             the count against the budget
#   Scripts/count-public.sh --modules   also the count per module
# Issue 41 took 1,109 as its baseline (2026-11-26); 1.0.0 shipped with 776; issue 51 asks for at
# most 800 with the sync engine's API in.
set -eu
cd "$(dirname "$0")/.."
exec python3 - "$@" <<'PYTHON'
import os, re, sys

declaration = re.compile(r'^\s*(@[A-Za-z_]+(\([^)]*\))?\s+)*public\s')
deprecated = re.compile(r'@available\([^)]*\bdeprecated\b')

def code_of(line):
    """The line without its comment and string literals, for counting braces."""
    line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
    return line.split('//', 1)[0]

def count(folder):
    live = old = 0
    for directory, _, files in os.walk(folder):
        for name in files:
            if not name.endswith('.swift'):
                continue
            lines = open(os.path.join(directory, name), encoding='utf-8').read().split('\n')
            depth = 0
            # The depths of the deprecated scopes the line is in (a deprecated type's or
            # extension's members are deprecated with it).
            deprecated_scopes = []
            for index, line in enumerate(lines):
                # The attributes on the lines right above it (and on its own line).
                attributes = [line]
                above = index - 1
                while above >= 0 and lines[above].strip().startswith('@'):
                    attributes.append(lines[above])
                    above -= 1
                is_deprecated = bool(deprecated_scopes) or any(deprecated.search(attribute) for attribute in attributes)
                if declaration.match(line):
                    if is_deprecated:
                        old += 1
                    else:
                        live += 1
                code = code_of(line)
                opened = depth + code.count('{') - code.count('}')
                if is_deprecated and not deprecated_scopes and opened > depth:
                    deprecated_scopes.append(depth)
                depth = opened
                while deprecated_scopes and depth <= deprecated_scopes[-1]:
                    deprecated_scopes.pop()
    return live, old

if '--modules' in sys.argv[1:]:
    rows = []
    for module in sorted(os.listdir('Sources')):
        live, old = count(os.path.join('Sources', module))
        if live or old:
            rows.append((live, old, module))
    for live, old, module in sorted(rows, reverse=True):
        print(f'{live:6d} {module}' + (f' (and {old} deprecated)' if old else ''))
live, old = count('Sources')
budget_file = 'Documentation/API/budget.txt'
budget = int(re.search(r'\d+', open(budget_file).read()).group())
print(f'public declarations: {live} (budget {budget}, {budget_file}), and {old} deprecated')
if live > budget:
    print(f'count-public: {live} public declarations, over the budget of {budget}: remove some, or raise the budget in '
          f'{budget_file} in the same commit with a CHANGELOG line saying what was added', file=sys.stderr)
    sys.exit(1)
PYTHON
