#!/usr/bin/python3
"""Plot bench_qa's summary: answers from compressed caches vs the share kept.

usage: plot_qa.py QA.JSON OUT.PNG

Two panels, one line per policy: the share of the questions the full cache
answers that the policy's cache answers too, and ROUGE-L of its replies
against the full cache's; x is R, the share of the document's units kept
per KV head (log2 scale).  `full` is the dashed ceiling.
Needs matplotlib (Debian: python3-matplotlib, for /usr/bin/python3).
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

MARKERS = "osD^v<>pPX*h"
STYLES = ("-", "--", ":")
PANELS = (("share", "answered (share of the full cache's right answers)"),
          ("rougeL", "ROUGE-L vs the full cache's replies"))


def value(row, key):
    c = row["all"]
    return c.get(key)


def label(r):
    inv = 1.0 / r
    return f"1/{inv:.0f}" if abs(inv - round(inv)) < 1e-9 and inv >= 1.5 else f"{r:g}"


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    data = json.load(open(sys.argv[1]))
    rows = [r for r in data["rows"] if r.get("docs_run")]
    if not rows:
        sys.exit("plot_qa: no rows")
    specs = []
    for r in rows:
        if r["spec"] != "full" and r["spec"] not in specs:
            specs.append(r["spec"])
    ratios = sorted({r["ratio"] for r in rows if r["spec"] != "full"}) or [1.0]
    n_docs = sum(1 for d in data["docs"] if d.get("done"))
    n_q = sum(d["questions"] for d in data["docs"] if d.get("done"))
    full_ok = sum(d.get("full_answered", 0) for d in data["docs"] if d.get("done"))
    fig, axes = plt.subplots(1, len(PANELS), squeeze=False, figsize=(5.2 * len(PANELS), 3.8))
    colors = list(plt.get_cmap("tab10").colors)
    for j, (key, title) in enumerate(PANELS):
        ax = axes[0][j]
        full = [r for r in rows if r["spec"] == "full"]
        if full and value(full[0], key) is not None:
            ax.axhline(value(full[0], key), color="black", linestyle="--", linewidth=1,
                       label="full")
        for k, spec in enumerate(specs):
            pts = sorted((r["ratio"], value(r, key)) for r in rows
                         if r["spec"] == spec and value(r, key) is not None)
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts],
                        marker=MARKERS[k % len(MARKERS)], markersize=4,
                        linestyle=STYLES[(k // len(colors)) % len(STYLES)],
                        color=colors[k % len(colors)], label=spec)
        ax.set_xscale("log", base=2)
        ax.set_xlim(min(ratios) / 1.25, max(ratios) * 1.25)
        ax.set_xticks(ratios)
        ax.set_xticklabels([label(r) for r in ratios])
        ax.set_ylim(-0.05, 1.05)
        ax.grid(alpha=0.3)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("R (share of the document's units kept per KV head)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(len(labels), 6), frameon=False,
               fontsize=8)
    docs = f"{n_docs} document" + ("s" if n_docs != 1 else "")
    fig.suptitle(f"bench_qa: {docs}, {n_q} questions, the full cache answers {full_ok}",
                 fontsize=9)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    fig.savefig(sys.argv[2], dpi=120)


if __name__ == "__main__":
    main()
