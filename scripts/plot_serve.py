#!/usr/bin/env python3
"""Latency against throughput across concurrencies, from `tinfer bench serve --json` reports.

Each input is a file holding bench serve's output (its last line is the JSON report) or the report alone,
optionally labelled as LABEL=FILE; each becomes one line per panel, a point per concurrency (annotated with
it): generated tokens/s on x, and on y the median TTFT (left) and the median TPOT (right). The playbook's
reading, "latency at concurrency 1 against throughput at 16", is the line's two ends.

  scripts/plot_serve.py tinfer=out/tinfer.json llama-server=out/llama.json -o serve.png
"""
import argparse
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load(spec):
    label, _, path = spec.rpartition("=")
    with open(path) as f:
        lines = [l for l in f.read().splitlines() if l.strip().startswith("{")]
    if not lines:
        sys.exit("%s: no JSON report (run bench serve with --json)" % path)
    report = json.loads(lines[-1])
    return label or os.path.splitext(os.path.basename(path))[0], report


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("reports", nargs="+", help="[LABEL=]FILE of bench serve --json output")
    ap.add_argument("-o", "--output", default="serve.png", help="image to write (png, svg, pdf)")
    ap.add_argument("--title", default="")
    a = ap.parse_args()

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    panels = [("ttft_p50_s", "median TTFT (ms)"), ("tpot_p50_s", "median TPOT (ms)")]
    for label, rep in map(load, a.reports):
        rows = [r for r in rep["results"] if r["completed"] > 0]
        xs = [r["output_tok_s"] for r in rows]
        for ax, (key, _) in zip(axes, panels):
            ys = [1e3 * r[key] for r in rows]
            ax.plot(xs, ys, marker="o", label=label)
            for x, y, r in zip(xs, ys, rows):
                ax.annotate("c=%d" % r["concurrency"], (x, y), textcoords="offset points", xytext=(4, 4), fontsize=8)
    for ax, (_, ylabel) in zip(axes, panels):
        ax.set_xlabel("generated tokens/s")
        ax.set_ylabel(ylabel)
        ax.set_yscale("log")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.suptitle(a.title or "latency against throughput across concurrencies (bench serve)")
    fig.tight_layout()
    fig.savefig(a.output, dpi=120)
    print("wrote " + a.output)


if __name__ == "__main__":
    main()
