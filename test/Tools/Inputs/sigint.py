"""Runs a command, sends it SIGINT once its stderr shows WAIT_FOR (or, when
WAIT_FOR is @SECONDS, after that long), and prints its exit status, then its
stdout and stderr (for FileCheck).

usage: sigint.py WAIT_FOR COMMAND...
"""
import signal
import subprocess
import sys
import threading
import time

wait_for, cmd = sys.argv[1], sys.argv[2:]
p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
err_lines = []
sent = threading.Event()


def read_err():
    for line in p.stderr:
        err_lines.append(line)
        if not wait_for.startswith("@") and wait_for in line and not sent.is_set():
            time.sleep(0.5)  # well inside the run
            p.send_signal(signal.SIGINT)
            sent.set()


t = threading.Thread(target=read_err)
t.start()
if wait_for.startswith("@"):
    time.sleep(float(wait_for[1:]))
    if p.poll() is None:
        p.send_signal(signal.SIGINT)
        sent.set()
out = p.stdout.read()
rc = p.wait(timeout=120)
t.join()
print(f"sigint sent: {sent.is_set()}")
print(f"exit status: {rc}")
sys.stdout.write(out)
sys.stdout.write("".join(err_lines))
