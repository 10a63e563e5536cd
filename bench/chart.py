#!/usr/bin/env python3
"""Draws bench/compare.py's --json figures as one PNG: left, events/s of C and of each
binding (publish and drain, single and batch(10)); right, each bench process's CPU
time per event (single and batch(10)), the figure the server's speed cannot hide.

    python bench/chart.py build/bench-compare.json bench/bindings.png

Needs matplotlib (pinned: matplotlib==3.11.2, in a venv, e.g. build/bench-venv).
A file from an older compare.py, without CPU figures, gets the left panel alone.
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

LABEL = {"single": "single", "batch": "batch(10)"}


def bars(ax, names, series, value):
    width = 0.8 / len(series)
    for i, key in enumerate(series):
        xs = [j + (i - (len(series) - 1) / 2) * width for j in range(len(names))]
        ax.bar(xs, [value(n, key) for n in names], width, label=" ".join(LABEL.get(k, k) for k in key))
    ax.set_xticks(range(len(names)), names)
    ax.legend(fontsize=8, ncol=2)
    ax.grid(axis="y", alpha=0.3)


def main(src, dst):
    with open(src) as fh:
        data = json.load(fh)
    results = {k: v for k, v in data["results"].items() if v}
    names = list(results)
    has_cpu = all("cpu_us" in results[n][m] for n in names for m in LABEL)
    fig, axes = plt.subplots(1, 2 if has_cpu else 1, figsize=(12 if has_cpu else 8, 3.8), dpi=80,
                             gridspec_kw={"width_ratios": [3, 2]} if has_cpu else None, squeeze=False)
    eps, cpu = axes[0][0], axes[0][1] if has_cpu else None
    bars(eps, names, [("single", "publish"), ("single", "drain"), ("batch", "publish"), ("batch", "drain")],
         lambda n, k: results[n][k[0]][k[1]])
    eps.set_ylabel("events/s")
    w = data["workload"]
    rounds = w.get("rounds", 1)
    how = f", {w.get('stat', 'best')} of {rounds} rounds" if rounds > 1 else ""
    eps.set_title(f"events/s ({w['events']} events, {w['groups']} groups, {w['workers']} workers{how})", fontsize=10)
    if cpu is not None:
        bars(cpu, names, [("single",), ("batch",)], lambda n, k: results[n][k[0]]["cpu_us"])
        cpu.set_ylabel("µs of CPU per event")
        cpu.set_title(f"bench process CPU per event (runs of {w['events']} minus {w['base_events']})", fontsize=10)
    fig.suptitle("mongomq: the bindings beside C", fontsize=11)
    fig.tight_layout()
    fig.savefig(dst)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
