#!/usr/bin/env python3
"""Draws the bar chart of bench/compare.py's figures: events/s of each binding and of C,
publish and drain, single and batch(10).

    python bench/chart.py build/bench-compare.json bench/bindings.png

Needs matplotlib (pinned: matplotlib==3.11.2, in a venv, e.g. build/bench-venv).
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(src, dst):
    with open(src) as fh:
        data = json.load(fh)
    results = {k: v for k, v in data["results"].items() if v}
    names = list(results)
    series = [("single", "publish"), ("single", "drain"), ("batch", "publish"), ("batch", "drain")]
    label = {"single": "single", "batch": "batch(10)"}
    fig, ax = plt.subplots(figsize=(8, 3.6), dpi=80)
    width = 0.8 / len(series)
    for i, (m, f) in enumerate(series):
        xs = [j + (i - (len(series) - 1) / 2) * width for j in range(len(names))]
        ax.bar(xs, [results[n][m][f] for n in names], width, label=f"{label[m]} {f}")
    ax.set_xticks(range(len(names)), names)
    ax.set_ylabel("events/s")
    w = data["workload"]
    rounds = f", best of {w['rounds']}" if w.get("rounds", 1) > 1 else ""
    ax.set_title(f"mongomq bindings beside C ({w['events']} events, {w['groups']} groups, {w['workers']} workers{rounds})",
                 fontsize=10)
    ax.legend(fontsize=8, ncol=2)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(dst)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
