#!/usr/bin/env python3
"""Draws `tinfer bench ladder --json` as a PNG: total tokens/s per rung (bars, speed-up over rung 0 on top) and
P99 TTFT/TPOT (lines), with dPPL in the labels.

    tinfer bench ladder -m MODEL --json | tail -1 > ladder.json
    .venv/bin/python scripts/plot_ladder.py ladder.json ladder.png
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(src, dst):
    with open(src) as f:
        text = f.read().strip().splitlines()[-1]
    rungs = json.loads(text)["rungs"]
    names = ["%d" % r["rung"] for r in rungs]
    tok = [r["total_tok_s"] for r in rungs]
    fig, ax = plt.subplots(figsize=(9, 4.8))
    bars = ax.bar(names, tok, color="#4477aa")
    for b, r in zip(bars, rungs):
        ax.text(b.get_x() + b.get_width() / 2, b.get_height(), "%.2fx\ndPPL %+.3f" % (r["total_tok_s"] / tok[0], r["dppl"]),
                ha="center", va="bottom", fontsize=8)
    ax.set_ylim(0, max(tok) * 1.25)
    ax.set_ylabel("total tokens/s")
    ax.set_xlabel("rung: " + "; ".join("%d %s" % (r["rung"], r["technique"].split(":")[0]) for r in rungs), fontsize=7)
    ax2 = ax.twinx()
    ax2.plot(names, [r["ttft_p99_s"] for r in rungs], "o-", color="#cc6677", label="P99 TTFT (s)")
    ax2.plot(names, [r["tpot_p99_s"] for r in rungs], "s--", color="#117733", label="P99 TPOT (s)")
    ax2.set_ylabel("seconds")
    ax2.legend(loc="upper left", fontsize=8)
    ax.set_title("tinfer bench ladder")
    fig.tight_layout()
    fig.savefig(dst, dpi=120)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: plot_ladder.py LADDER.json OUT.png")
    main(sys.argv[1], sys.argv[2])
