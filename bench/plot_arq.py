#!/usr/bin/python3
"""Plots of `volley arq-bench` (or `volley arq-sim --out`) results: delay (or
round trip, where the scenario echoes) against sequence number, one plot per
run and one per scenario with every variant (first seed) together.
Usage: plot_arq.py RESULTS_DIR (with summary.json and the CSV files)."""
import csv
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load(path):
    seq, delay = [], []
    with open(path) as f:
        for row in csv.DictReader(f):
            seq.append(int(row["seq"]))
            delay.append(float(row["delay_ms"]))
    return seq, delay


def main():
    out = sys.argv[1]
    runs = json.load(open(os.path.join(out, "summary.json")))
    by_scenario = {}
    for run in runs:
        if not run["csv"] or not os.path.exists(os.path.join(out, run["csv"])):
            continue
        seq, delay = load(os.path.join(out, run["csv"]))
        if not seq:
            continue
        what = "round trip" if run.get("echo") else "delay"
        d = run["delay"]
        title = (f"scenario {run['scenario']}: {run['scheme']}, seed {run['seed']}\n{run['netem']}, "
                 f"every {run['interval_ms']:g} ms; mean {d['mean_ms']:.1f} ms, p99 {d['p99_ms']:.1f} ms")
        fig, ax = plt.subplots(figsize=(9, 4.5))
        ax.plot(seq, delay, linewidth=0.8)
        ax.set_xlabel("sequence number")
        ax.set_ylabel(f"{what} (ms)" if run.get("echo") else "delay (ms): delivery - input")
        ax.set_title(title, fontsize=10)
        ax.grid(True, alpha=0.3)
        fig.tight_layout()
        fig.savefig(os.path.join(out, run["name"] + ".png"), dpi=110)
        plt.close(fig)
        if run["seed"] == 1:
            by_scenario.setdefault(run["scenario"], []).append((run, seq, delay))
    for scenario, entries in by_scenario.items():
        fig, ax = plt.subplots(figsize=(9, 4.5))
        for run, seq, delay in entries:
            ax.plot(seq, delay, linewidth=0.8, label=f"{run['scheme']} (mean {run['delay']['mean_ms']:.1f} ms)")
        ax.set_yscale("log")
        ax.set_xlabel("sequence number")
        ax.set_ylabel(("round trip" if entries[0][0].get("echo") else "delay") + " (ms, log scale)")
        ax.set_title(f"scenario {scenario}: {entries[0][0]['netem']}, every {entries[0][0]['interval_ms']:g} ms",
                     fontsize=10)
        ax.legend()
        ax.grid(True, which="both", alpha=0.3)
        fig.tight_layout()
        fig.savefig(os.path.join(out, f"scenario{scenario}_all.png"), dpi=110)
        plt.close(fig)
    print(f"plots in {out}")


if __name__ == "__main__":
    main()
