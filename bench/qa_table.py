#!/usr/bin/env python3
"""Markdown tables for bench/RESULTS.md from bench_qa's JSON.

usage: bench/qa_table.py QA.JSON [QA.JSON ...]

One row per policy: for each ratio R, the questions answered right as a
share of those the full cache answers (count in brackets) and the mean
ROUGE-L against the full cache's replies; then the same split by kind
(fact / subject) and by the depth of the fact, and the ingest time.
Several files (runs over different documents, e.g. two runs side by side)
are summed per (policy, R): counts added, ROUGE-L weighted by questions.
"""
import json
import sys


def add_count(a, b):
    """a + b of two count dicts (n, full_answered, answered, ...)."""
    n = a["n"] + b["n"]
    out = {k: a[k] + b[k] for k in ("n", "full_answered", "answered", "raw_answered")}
    out["share"] = out["answered"] / out["full_answered"] if out["full_answered"] else 0.0
    out["raw_share"] = out["raw_answered"] / n if n else 0.0
    out["rougeL"] = (a["rougeL"] * a["n"] + b["rougeL"] * b["n"]) / n if n else 0.0
    return out


def add_row(a, b):
    out = dict(a)
    out["all"] = add_count(a["all"], b["all"])
    out["by_kind"] = {k: add_count(a["by_kind"][k], b["by_kind"][k]) for k in a["by_kind"]}
    out["by_depth"] = [dict(x, count=add_count(x["count"], y["count"]))
                       for x, y in zip(a["by_depth"], b["by_depth"])]
    out["ingest_s"] = a["ingest_s"] + b["ingest_s"]
    return out


def load(paths):
    """The first file's JSON with every other file's documents and rows added."""
    d = json.load(open(paths[0]))
    for p in paths[1:]:
        e = json.load(open(p))
        d["docs"] += e["docs"]
        have = {(r["spec"], r["ratio"]): i for i, r in enumerate(d["rows"])}
        for r in e["rows"]:
            i = have.get((r["spec"], r["ratio"]))
            if i is None:
                d["rows"].append(r)
            else:
                d["rows"][i] = add_row(d["rows"][i], r)
    return d


def main():
    d = load(sys.argv[1:])
    rows = d["rows"]
    ratios = sorted({r["ratio"] for r in rows if r["spec"] != "full"}, reverse=True)
    specs = []
    for r in rows:
        if r["spec"] not in specs and r["spec"] != "full":
            specs.append(r["spec"])
    by = {(r["spec"], r["ratio"]): r for r in rows}
    docs = [x for x in d["docs"] if x.get("done")]
    nq = sum(x["questions"] for x in docs)
    nfull = sum(x["full_answered"] for x in docs)
    print(f"{len(docs)} documents ({min(x['tokens'] for x in docs)}–"
          f"{max(x['tokens'] for x in docs)} tokens), {nq} questions, of which the full "
          f"cache answers {nfull}.\n")
    frac = {0.5: "1/2", 0.25: "1/4", 0.125: "1/8", 0.0625: "1/16"}
    head = " | ".join(f"R={frac.get(R, R)} answered | R={frac.get(R, R)} ROUGE-L" for R in ratios)
    print(f"| policy | {head} |")
    print("|---|" + "---:|---:|" * len(ratios))
    for s in specs:
        cells = []
        for R in ratios:
            r = by.get((s, R))
            if not r:
                cells += ["—", "—"]
                continue
            a = r["all"]
            cells += [f"{100 * a['share']:.0f} % ({a['answered']}/{a['full_answered']})",
                      f"{a['rougeL']:.2f}"]
        print(f"| {s} | " + " | ".join(cells) + " |")
    print()
    print("By kind (answered / full-cache answered) and ingest time for all documents:\n")
    print("| policy | R | facts | subject | depth 0–0.2 | 0.2–0.4 | 0.4–0.6 | 0.6–0.8 | 0.8–1 "
          "| ingest s |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for s in specs:
        for R in ratios:
            r = by.get((s, R))
            if not r:
                continue
            k = r["by_kind"]
            dep = [f"{b['count']['answered']}/{b['count']['full_answered']}"
                   for b in r["by_depth"]]
            print(f"| {s} | {frac.get(R, R)} | {k['fact']['answered']}/{k['fact']['full_answered']} "
                  f"| {k['subject']['answered']}/{k['subject']['full_answered']} | "
                  + " | ".join(dep) + f" | {r['ingest_s']:.0f} |")


if __name__ == "__main__":
    main()
