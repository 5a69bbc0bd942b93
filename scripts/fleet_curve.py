#!/usr/bin/env python3
"""The fleet-scale curve (docs/SCALE.md): reads the logs of
scripts/fleet_bench.sh --sweep (one per chain and fleet size, named
CHAIN-N.log) and writes a CSV of their figures and one SVG of four panels
against fleet size: no-op tasks/s, registration time, idle scheduler CPU,
fan-out p99.

    scripts/fleet_curve.py OUT.svg OUT.csv LOG...
"""
import math
import os
import re
import sys

FIELDS = [
    ("tasks_per_s", r"^noop \d+ tasks: JOB_SUCCEEDED in [\d.]+ s = (\d+) tasks/s", "no-op tasks/s"),
    ("register_s", r"^registered: \d+ executors in ([\d.]+) s", "registration (s)"),
    ("idle_cpu_pct", r"^idle [\d.]+ s: scheduler ([\d.]+)% of a core", "idle scheduler CPU (% of a core)"),
    ("fanout_p99_s", r"^fanout .* p99 ([\d.]+) s", "fan-out p99 (s)"),
]
COLORS = {"none": "#d62728", "default": "#1f77b4"}


def parse(path):
    chain, n = os.path.basename(path)[:-4].rsplit("-", 1)
    row = {"chain": chain, "executors": int(n), "load": ""}
    with open(path) as f:
        text = f.read()
    m = re.search(r"load ([\d.]+)", text)
    if m:
        row["load"] = m.group(1)
    for key, pattern, _ in FIELDS:
        m = re.search(pattern, text, re.M)
        row[key] = float(m.group(1)) if m else None
    return row


def panel(rows, key, title, x0, y0, w, h):
    pts = [r for r in rows if r[key] is not None]
    out = [f'<g transform="translate({x0},{y0})">',
           f'<rect width="{w}" height="{h}" fill="none" stroke="#999"/>',
           f'<text x="{w / 2}" y="-8" text-anchor="middle" font-size="13">{title}</text>']
    if not pts:
        return out + ['<text x="10" y="20" font-size="11">no data</text>', "</g>"]
    xs = sorted({r["executors"] for r in rows})
    lx0, lx1 = math.log10(min(xs)), math.log10(max(xs))
    top = max(r[key] for r in pts) * 1.1 or 1

    def sx(n):
        return 0 if lx1 == lx0 else (math.log10(n) - lx0) / (lx1 - lx0) * w

    def sy(v):
        return h - v / top * h

    for n in xs:
        out.append(f'<text x="{sx(n):.1f}" y="{h + 14}" text-anchor="middle" font-size="10">{n}</text>')
    for i in range(5):
        v = top * i / 4
        out.append(f'<text x="-4" y="{sy(v) + 3:.1f}" text-anchor="end" font-size="10">{v:.3g}</text>')
    for chain, color in COLORS.items():
        line = sorted((r["executors"], r[key]) for r in pts if r["chain"] == chain)
        if not line:
            continue
        d = " ".join(f"{sx(n):.1f},{sy(v):.1f}" for n, v in line)
        out.append(f'<polyline points="{d}" fill="none" stroke="{color}" stroke-width="2"/>')
        for n, v in line:
            out.append(f'<circle cx="{sx(n):.1f}" cy="{sy(v):.1f}" r="3" fill="{color}"/>')
    out.append("</g>")
    return out


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    svg_path, csv_path, logs = sys.argv[1], sys.argv[2], sys.argv[3:]
    rows = sorted((parse(p) for p in logs), key=lambda r: (r["chain"], r["executors"]))
    with open(csv_path, "w") as f:
        keys = ["chain", "executors", "load"] + [k for k, _, _ in FIELDS]
        f.write(",".join(keys) + "\n")
        for r in rows:
            f.write(",".join("" if r[k] is None else str(r[k]) for k in keys) + "\n")
    w, h, gap = 300, 180, 70
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" font-family="sans-serif">'.format(
        2 * w + 3 * gap, 2 * h + 3 * gap + 20)]
    for i, (key, _, title) in enumerate(FIELDS):
        out += panel(rows, key, title, gap + (i % 2) * (w + gap), gap + (i // 2) * (h + gap), w, h)
    y = 2 * h + 3 * gap + 5
    out.append(f'<text x="{gap}" y="{y}" font-size="11">executors (log scale); '
               '<tspan fill="#d62728">none</tspan>, <tspan fill="#1f77b4">default</tspan>; '
               'scripts/fleet_bench.sh BIN --sweep (docs/SCALE.md)</text>')
    out.append("</svg>")
    with open(svg_path, "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
