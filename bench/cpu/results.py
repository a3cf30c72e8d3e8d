"""Where the report goes: stdout, --out, and bench/RESULTS.md's CPU
section (between its markers, made when missing)."""
import os

from .env import BENCH, log

BEGIN = "<!-- bench/serve_vs_ort.py: begin report -->"
END = "<!-- bench/serve_vs_ort.py: end report -->"


def update_results(path, text):
    """Replaces the report between the markers of bench/RESULTS.md's CPU
    section (the section and markers are made when missing)."""
    doc = open(path, encoding="utf-8").read() if os.path.exists(path) else "# Benchmark results\n"
    block = f"{BEGIN}\n{text.rstrip()}\n{END}"
    if BEGIN in doc and END in doc:
        a, b = doc.index(BEGIN), doc.index(END) + len(END)
        doc = doc[:a] + block + doc[b:]
    else:
        head = ("## CPU speed (issue 18): `bench/serve_vs_ort.py`\n\n"
                "What the script wrote, between the markers (rewritten by each full run); the notes "
                "after them are ours.\n\n")
        at = doc.find("\n## GPU")
        section = head + block + "\n\n"
        doc = doc[:at + 1] + section + doc[at + 1:] if at >= 0 else doc.rstrip() + "\n\n" + section
    open(path, "w", encoding="utf-8").write(doc)


def write_report(a, text):
    """Prints the report and writes it to --out and into --results (by
    default bench/RESULTS.md for a full run, none for --quick)."""
    log("")
    log(text)
    if a.out:
        open(a.out, "w").write(text + "\n")
    results = a.results if a.results is not None else (None if a.quick else
                                                       os.path.join(BENCH, "RESULTS.md"))
    if results:
        update_results(results, text)
        log(f"serve_vs_ort: wrote the report into {results}")
