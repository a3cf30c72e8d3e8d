"""What lockstep-run needs from the machine it runs on (run-portable.test).

It must start on any x86-64 Linux with glibc 2.39 and GCC 13's libstdc++
(Ubuntu 24.04, as on the GPU machines), where Debian's ICU 72 and
libcpp-httplib are not installed: its DT_NEEDED entries are the C and C++
runtimes (and PCRE2's, where it is not linked statically), and no symbol it
imports has a version newer than those libraries have. ICU and the CUDA
driver are opened at run time; the HTTP server is lockstep-serve, which must
be next to it, and without which `serve` says so.

Usage: check_portable.py SCRATCH_DIR. Prints one line per check; exit 1 when
one fails.
"""
import os
import re
import shutil
import subprocess
import sys

ALLOWED = {"libc.so.6", "libm.so.6", "libstdc++.so.6", "libgcc_s.so.1",
           "ld-linux-x86-64.so.2", "libpcre2-8.so.0"}
# The newest version of each library's symbols that Ubuntu 24.04 has
# (glibc 2.39, GCC 13.2).
NEWEST = {"GLIBC": (2, 39), "GLIBCXX": (3, 4, 32), "CXXABI": (1, 3, 14), "GCC": (13, 0, 0)}


def readelf(*args):
    return subprocess.run(["llvm-readelf", *args], check=True, capture_output=True,
                          text=True).stdout


def main():
    scratch = sys.argv[1]
    run = shutil.which("lockstep-run")
    failed = False
    needed = re.findall(r"^\s+(\S+)$", readelf("--needed-libs", run), re.M)
    extra = sorted(set(needed) - ALLOWED)
    if extra:
        failed = True
        print("lockstep-run: needs " + ", ".join(extra) + ", beyond " + ", ".join(sorted(ALLOWED)))
    else:
        print("lockstep-run: needs only " + ", ".join(sorted(needed)))

    too_new = set()
    for lib, ver in re.findall(r"Name: ([A-Z]+)_([0-9.]+)", readelf("-V", run)):
        if lib in NEWEST and tuple(int(x) for x in ver.split(".")) > NEWEST[lib]:
            too_new.add(lib + "_" + ver)
    if too_new:
        failed = True
        print("lockstep-run: imports symbol versions newer than Ubuntu 24.04's: " +
              ", ".join(sorted(too_new)))
    else:
        print("lockstep-run: symbol versions at most " +
              ", ".join(k + "_" + ".".join(map(str, v)) for k, v in NEWEST.items()))

    server = os.path.join(os.path.dirname(run), "lockstep-serve")
    if os.access(server, os.X_OK):
        print("lockstep-serve: next to lockstep-run")
    else:
        failed = True
        print("lockstep-serve: missing: " + server)

    # lockstep-run alone in a folder: serve says what is missing.
    lonely = os.path.join(scratch, "lockstep-run")
    shutil.copy(run, lonely)
    r = subprocess.run([lonely, "serve", "model.lsa"], capture_output=True, text=True)
    print(f"alone: exit {r.returncode}: {r.stderr.strip()}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
