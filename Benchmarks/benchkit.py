"""What the benchmark drivers share (Benchmarks/compare.py, Benchmarks/mpris.py)."""
import os
import subprocess


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
