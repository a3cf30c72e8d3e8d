"""Starting and stopping `lockstep-run serve` in a test.

The server is started on port 0 (a free port: parallel lit workers never
clash) and the port is read from its "listening on http://HOST:PORT" line.
Every test arms a watchdog (`watchdog(seconds)`): when it fires, the server is
killed and the test fails, so that no test can hang the suite. Leaving the
`Server` context kills a server that is still running.
"""
import json
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time

_servers = []


def watchdog(seconds):
    def fire():
        sys.stderr.write("serve test: watchdog: %d s passed, killing the server\n" % seconds)
        for s in _servers:
            s.kill()
        sys.stderr.flush()
        os._exit(1)

    t = threading.Timer(seconds, fire)
    t.daemon = True
    t.start()
    return t


class Server:
    def __init__(self, artifact, *args, start_timeout=60):
        self.log = tempfile.NamedTemporaryFile(prefix="serve-", suffix=".log", delete=False)
        cmd = ["lockstep-run", "serve", artifact, "--port", "0", *args]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.log, text=True)
        _servers.append(self)
        deadline = time.time() + start_timeout
        line = ""
        while time.time() < deadline:
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.2)
            if ready:
                line = self.proc.stdout.readline()
                break
            if self.proc.poll() is not None:
                break
        m = re.search(r"listening on http://([0-9.]+):(\d+)", line)
        if not m:
            self.kill()
            raise RuntimeError("the server did not start: %r; log: %s" % (line, self.stderr()))
        self.banner = line.strip()
        self.host, self.port = m.group(1), int(m.group(2))
        self.base = "http://%s:%d" % (self.host, self.port)

    def stderr(self):
        with open(self.log.name) as f:
            return f.read()

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def stop(self, sig=signal.SIGTERM, timeout=60):
        """Sends `sig` and waits for the exit status."""
        self.proc.send_signal(sig)
        return self.proc.wait(timeout=timeout)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.kill()
        os.unlink(self.log.name)
        return False


def sse_events(lines):
    """The JSON events of a server-sent event stream (an iterator of text
    lines), up to data: [DONE]; a last item True when [DONE] came."""
    for line in lines:
        if not line.startswith("data: "):
            continue
        data = line[len("data: "):]
        if data == "[DONE]":
            yield True
            return
        yield json.loads(data)
