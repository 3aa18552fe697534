#!/usr/bin/python3
"""Plot answers against stored bytes (issue 28) from bench_qa --quants JSON.

usage: plot_qa_bytes.py [--quants LIST] OUT.PNG LABEL=QA.JSON[,QA.JSON...] [LABEL=...]

One LABEL per model (its files pooled as bench/qa_bytes_table.py pools
them).  Two panels: the tuning documents and the held-out ones
(bench/qa/heldout.txt) apart.  x: stored bytes per document token (log
scale); y: answered share of the full cache's answers.  One line per
(model, stored precision) through the kept ratios (1/2 ... 1/16, right to
left); a star marks each model's full cache as fp16 (100 %).  Dotted
verticals: 1/16, 1/32 and 1/64 of the first model's full fp16 bytes (the
issue's targets: 95 %, 85 %, 70 %).
Needs matplotlib (Debian: python3-matplotlib, for /usr/bin/python3).
"""
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qa_bytes_table import aggregate  # noqa: E402
from qa_heldout import load_heldout  # noqa: E402

COLORS = {"fp16": "C0", "q8": "C1", "q4": "C2", "q4kc": "C3", "q4h": "C4", "q4kch": "C5",
          "q6h": "C6", "q5h": "C7", "q3h": "C8", "k5v3h": "C9", "k4v2h": "#8c564b",
          "k8v4h": "#17becf"}
STYLES = ("-", "--", ":", "-.")
TARGETS = ((16, 95), (32, 85), (64, 70))


def main():
    args = sys.argv[1:]
    quants = None
    if args[:1] == ["--quants"] and len(args) > 1:
        quants = set(args[1].split(","))
        args = args[2:]
    if len(args) < 2 or any("=" not in a for a in args[1:]):
        print(__doc__, file=sys.stderr)
        return 2
    out = args[0]
    held = load_heldout()
    fig, axes = plt.subplots(1, 2, figsize=(13, 5.5), sharey=True)
    ref = None
    for m, arg in enumerate(args[1:]):
        label, files = arg.split("=", 1)
        docs, cells, _ = aggregate(files.split(","), held, quants)
        for ax, split in zip(axes, ("tune", "held")):
            ds = [x for f, x in docs.items() if (f in held) == (split == "held")]
            if not ds:
                continue
            full = sum(x["full_fp16_bytes"] for x in ds) / sum(x["tokens"] for x in ds)
            if ref is None and split == "held":
                ref = full
            ax.plot([full], [100], marker="*", ms=12, color="k", ls="none")
            # each model's label on its own line below its star: stars sit close
            ax.annotate(f"{label}: full fp16", (full, 100), textcoords="offset points",
                        xytext=(-8, -12 - 10 * m), ha="right", fontsize=8)
            for quant in COLORS:
                pts = []
                for (ratio, q), c in cells.items():
                    c = c.get(split)
                    if q != quant or not c or not c["full"]:
                        continue
                    pts.append((c["bytes"] / c["tok"], 100 * c["ans"] / c["full"], ratio))
                if not pts:
                    continue
                pts.sort()
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", ms=4,
                        color=COLORS[quant], ls=STYLES[m % len(STYLES)],
                        label=f"{label} {quant}")
    for ax, split in zip(axes, ("tuning documents", "held-out documents")):
        ax.set_xscale("log")
        ax.set_xlabel("stored bytes per document token (log)")
        ax.set_title(split)
        ax.grid(True, which="both", alpha=0.3)
        if ref:
            for div, goal in TARGETS:
                ax.axvline(ref / div, color="grey", ls=":", lw=1)
                ax.plot([ref / div], [goal], marker="_", ms=14, color="grey")
    axes[0].set_ylabel("answered (share of the full cache's answers, %)")
    axes[1].legend(fontsize=7, loc="lower right", ncol=2)
    fig.suptitle("Answers against stored bytes: kept ratio 1/2 ... 1/16 (right to left) "
                 "x stored precision")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main())
