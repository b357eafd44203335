"""What the benchmark drivers share: building playerkit-bench (Benchmarks/compare.py,
Benchmarks/mpris.py, Benchmarks/peers.py) and writing a table into the docs (every driver's --write).
"""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "Scripts"))
import docfigures  # noqa: E402


def today():
    return time.strftime("%Y-%m-%d")


def write_figures(name, text, *, markers, command, machine, date=None, results=None):
    """A driver's --write: saves `text` (the Markdown it made for its part of
    Documentation/Performance.md) as the record Documentation/Figures/NAME.json, with what
    measured it and its raw `results`, then renders the page's part between `markers` from that
    record (Scripts/docfigures.py, the renderer `make docs-figures` uses). Returns the record's
    path."""
    return docfigures.record(name, text, markers=markers, command=command, machine=machine,
                             date=date or today(), results=results)


def build_bench(root, log):
    """Builds playerkit-bench in release mode (warnings are errors, as in the project's builds);
    returns the executable's path."""
    log("building playerkit-bench (release)")
    env = dict(os.environ, PLAYERKIT_WARNINGS_AS_ERRORS="1")
    subprocess.run(["swift", "build", "-c", "release", "--product", "playerkit-bench"], check=True, cwd=root, env=env,
                   stdout=subprocess.DEVNULL)
    bin_path = subprocess.run(["swift", "build", "-c", "release", "--show-bin-path"], check=True, cwd=root,
                              capture_output=True, text=True).stdout.strip()
    return os.path.join(bin_path, "playerkit-bench")
