"""Runs a command and prints `exit=N lines=L: STDERR` to stdout, so that a lit
test can check the exact exit status and that the error is one line."""
import subprocess
import sys

p = subprocess.run(sys.argv[1:], capture_output=True, text=True)
err = p.stderr.rstrip("\n")
print(f"exit={p.returncode} lines={len(err.splitlines())}: {err}")
