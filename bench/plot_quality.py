#!/usr/bin/python3
"""Plot bench_quality rows: accuracy vs KV budget, one line per policy.

usage: plot_quality.py QUALITY.JSONL OUT.PNG

One row of panels per document length; panels: passkey accuracy, multi-key
accuracy, next-token top-1 agreement with the full cache.  x is the budget as
a fraction of the document (log scale); `full` is drawn as the dashed ceiling.
Needs matplotlib (Debian: python3-matplotlib, for /usr/bin/python3).
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

PANELS = (("passkey", "passkey_hits", "passkey_n", "passkey accuracy"),
          ("multikey", "multikey_hits", "multikey_n", "multi-key accuracy"),
          ("top1", None, None, "next-token top-1 agreement"))

MARKERS = "osD^v<>pPX*h"
STYLES = ("-", "--", ":")


def value(r, key, hits, n):
    if hits:
        return r[hits] / r[n] if r.get(n) else None
    return r.get(key)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
    rows = [r for r in rows if "skip" not in r]
    if not rows:
        sys.exit("plot_quality: no rows")
    lengths = sorted({r["length"] for r in rows})
    specs = []
    for r in rows:
        if r["spec"] != "full" and r["spec"] not in specs:
            specs.append(r["spec"])
    panels = [p for p in PANELS if any(value(r, p[0], p[1], p[2]) is not None for r in rows)]
    fig, axes = plt.subplots(len(lengths), len(panels), squeeze=False,
                             figsize=(4.2 * len(panels), 3.2 * len(lengths)))
    colors = list(plt.get_cmap("tab10").colors)
    fracs = sorted({r["fraction"] for r in rows if r["spec"] != "full"})
    for i, length in enumerate(lengths):
        for j, (key, hits, n, title) in enumerate(panels):
            ax = axes[i][j]
            full = [r for r in rows if r["length"] == length and r["spec"] == "full"]
            if full and value(full[0], key, hits, n) is not None:
                ax.axhline(value(full[0], key, hits, n), color="black", linestyle="--",
                           linewidth=1, label="full")
            for k, spec in enumerate(specs):
                pts = sorted((1.0 / r["fraction"], value(r, key, hits, n)) for r in rows
                             if r["length"] == length and r["spec"] == spec
                             and value(r, key, hits, n) is not None)
                if pts:
                    # ten or more specs: colour, marker and line style apart;
                    # the trained-head family (locret*) drawn heavier
                    ax.plot([p[0] for p in pts], [p[1] for p in pts],
                            marker=MARKERS[k % len(MARKERS)], markersize=4,
                            linestyle=STYLES[(k // len(colors)) % len(STYLES)],
                            linewidth=2.0 if spec.startswith("locret") else 1.0,
                            color=colors[k % len(colors)], label=spec)
            ax.set_xscale("log", base=2)
            ax.set_xlim(0.8 / max(fracs), 1.25 / min(fracs))
            ax.set_xticks([1.0 / f for f in fracs])
            ax.set_xticklabels([f"1/{f}" for f in fracs])
            ax.set_ylim(-0.05, 1.05)
            ax.grid(alpha=0.3)
            ax.set_title(f"{title}, {length} tokens", fontsize=9)
            if i == len(lengths) - 1:
                ax.set_xlabel("budget (fraction of the document per KV head)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(len(labels), 6), frameon=False,
               fontsize=8)
    fig.tight_layout(rect=(0, 0.06 if len(lengths) == 1 else 0.03, 1, 1))
    fig.savefig(sys.argv[2], dpi=120)


if __name__ == "__main__":
    main()
