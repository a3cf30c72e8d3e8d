"""Shared by the benchmarks: run a command and measure it."""
import subprocess
import sys
import time


def measure(cmd):
    """Wall seconds and peak RSS (MiB) of a command, by /usr/bin/time."""
    t = time.perf_counter()
    r = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if r.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{r.stderr}")
    return wall, int(r.stderr.strip().splitlines()[-1]) / 1024, r.stdout
