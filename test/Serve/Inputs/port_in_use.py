"""`lockstep-run serve --port P` where P is taken: exit status 1 and why.

usage: port_in_use.py MODEL.lsa
"""
import socket
import subprocess
import sys

with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    s.listen()
    port = s.getsockname()[1]
    r = subprocess.run(["lockstep-run", "serve", sys.argv[1], "--port", str(port)],
                       capture_output=True, text=True, timeout=60)
    print("exit status:", r.returncode)
    print(r.stderr.strip().replace(str(port), "PORT"))
