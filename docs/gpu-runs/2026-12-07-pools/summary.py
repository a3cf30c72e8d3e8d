#!/usr/bin/env python3
"""Summarizes an ncu --csv --page raw file (here, after a device run):
one line a kernel launch: device time, grid x block, registers, DRAM bytes
read, and, where the file has the warp-state metrics (commands.sh prof's
prof1.csv), achieved occupancy and the four largest stall reasons in warp
cycles per issued instruction.

usage: summary.py FILE.csv [FIRST [COUNT]]
"""
import csv
import sys


def num(s):
    try:
        return float(s.replace(",", ""))
    except ValueError:
        return None


def main():
    rows = list(csv.reader(open(sys.argv[1])))
    start = next(i for i, r in enumerate(rows) if r and r[0] == "ID")
    hdr = rows[start]
    data = [r for r in rows[start + 2:] if len(r) == len(hdr)]
    first = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    count = int(sys.argv[3]) if len(sys.argv) > 3 else len(data)
    ix = {h: i for i, h in enumerate(hdr)}
    stalls = [h for h in hdr if "issue_stalled" in h and h.endswith("per_issue_active.ratio")]
    total = 0.0
    for r in data[first:first + count]:
        def get(k):
            return num(r[ix[k]]) if k in ix else None
        t = get("gpu__time_duration.sum") or 0.0
        total += t
        line = (f"{r[ix['ID']]:>5} {t / 1e3:8.2f} us  grid {r[ix.get('launch__grid_size', 0)]:>6}"
                f" x {r[ix.get('launch__block_size', 0)]:>4}  regs {r[ix.get('launch__registers_per_thread', 0)]:>4}")
        b = get("dram__bytes_read.sum")
        if b is not None:
            line += f"  read {b / 1e6:8.2f} MB"
        occ = get("sm__warps_active.avg.pct_of_peak_sustained_active")
        if occ is not None:
            line += f"  occupancy {occ:5.1f}%"
        ws = sorted(((get(h) or 0.0, h) for h in stalls), reverse=True)[:4]
        if ws:
            line += "  stalls " + ", ".join(
                f"{h.split('issue_stalled_')[1].split('_per_issue')[0]} {v:.1f}" for v, h in ws)
        print(line)
    print(f"total {total / 1e3:.1f} us over {min(count, len(data) - first)} launches")


if __name__ == "__main__":
    main()
