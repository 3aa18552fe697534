#!/usr/bin/env python3
"""The answers-per-byte table (issue 28) from bench_qa --quants JSON files.

usage: bench/qa_bytes_table.py QA.JSON [QA.JSON ...] [--heldout FILE] [--quants LIST]

The files' documents are pooled (a document in two files counts once, the
first file's).  Rows: each (ratio, stored precision).  Columns: answered
share of the full cache's answers on the tuning documents and on the
held-out ones (bench/qa/heldout.txt) apart; ROUGE-L against the full
cache's replies (all questions, both splits); stored bytes per document
token and as a share of the full cache's fp16 snapshot; the records'
decode time per 1,000 document tokens.  --quants keeps only the listed
precisions (files measured with different sets pooled: a precision only
some documents have would be a cell of fewer documents).
"""
import json
import sys

from qa_heldout import load_heldout, take_heldout_arg

FRAC = {1.0: "1", 0.5: "1/2", 0.25: "1/4", 0.125: "1/8", 0.0625: "1/16"}


def aggregate(paths, held, quants=None):
    """Pool the files' finished documents: (docs, cells, order); cells[(ratio, quant)]
    holds per split ("tune"/"held") the sums of answers, bytes, tokens and load time."""
    docs = {}   # file -> doc entry
    cells = {}  # (ratio, quant) -> per split sums
    order = []
    for path in paths:
        d = json.load(open(path))
        done = {x["file"]: x for x in d["docs"] if x.get("done") and x["file"] not in docs}
        for r in d["rows"]:
            if "quant" not in r or (quants and r["quant"] not in quants):
                continue
            key = (r["ratio"], r["quant"])
            if key not in cells:
                cells[key] = {}
                order.append(key)
            for pd in r["per_doc"]:
                f = pd["doc"]
                if f not in done or "count" not in pd:
                    continue
                split = "held" if f in held else "tune"
                c = cells[key].setdefault(split, dict(ans=0, full=0, rouge=0.0, n=0, bytes=0,
                                                      tok=0, load=0.0, fullbytes=0, docs=0))
                k = pd["count"]
                c["ans"] += k["answered"]
                c["full"] += k["full_answered"]
                c["rouge"] += (k["rougeL"] or 0.0) * k["n"]
                c["n"] += k["n"]
                c["bytes"] += pd["bytes"]
                c["tok"] += done[f]["tokens"]
                c["load"] += pd["load_s"]
                c["fullbytes"] += done[f]["full_fp16_bytes"]
                c["docs"] += 1
        docs.update(done)
    return docs, cells, order


def main():
    args = sys.argv[1:]
    held_path = take_heldout_arg(args)
    quants = None
    if "--quants" in args:
        i = args.index("--quants")
        quants = set(args[i + 1].split(","))
        del args[i:i + 2]
    if not args:
        print(__doc__, file=sys.stderr)
        return 2
    held = load_heldout(held_path)
    docs, cells, order = aggregate(args, held, quants)
    if not docs:
        print("no finished document", file=sys.stderr)
        return 1
    for split, name in (("tune", "tuning"), ("held", "held-out")):
        ds = [x for f, x in docs.items() if (f in held) == (split == "held")]
        if ds:
            print(f"{name}: {len(ds)} documents ({', '.join(sorted(x['file'] for x in ds))}), "
                  f"{sum(x['questions'] for x in ds)} questions, the full cache answers "
                  f"{sum(x['full_answered'] for x in ds)}, full fp16 snapshot "
                  f"{sum(x['full_fp16_bytes'] for x in ds) / sum(x['tokens'] for x in ds):.0f} "
                  f"B/token")
    print()
    print("| R | stored | answered, tuning | answered, held-out | ROUGE-L | B/token "
          "| of full fp16 | load ms / 1K tokens |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")

    def share(c):
        if not c or not c["full"]:
            return "—"
        return f"{100 * c['ans'] / c['full']:.0f} % ({c['ans']}/{c['full']})"

    for key in sorted(order, key=lambda k: (-k[0], order.index(k))):
        t, h = cells[key].get("tune"), cells[key].get("held")
        a = [c for c in (t, h) if c]
        if not a:
            continue
        n = sum(c["n"] for c in a)
        tok = sum(c["tok"] for c in a)
        b = sum(c["bytes"] for c in a)
        fb = sum(c["fullbytes"] for c in a)
        print(f"| {FRAC.get(key[0], key[0])} | {key[1]} | {share(t)} | {share(h)} | "
              f"{sum(c['rouge'] for c in a) / n:.2f} | {b / tok:.1f} | {100 * b / fb:.2f} % | "
              f"{1e3 * sum(c['load'] for c in a) / tok * 1e3:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
