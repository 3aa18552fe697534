#!/usr/bin/env python3
"""kvzip's variants against answers and what they keep (issue 28, item 3).

usage: bench/qa_units_table.py QA.JSON [QA.JSON ...] [--heldout FILE]

From bench_qa JSON files (--quants rows, with the "units" fields of
bench/qa_units.h).  The files' rows are pooled by (policy spec, ratio,
stored precision); a document counts once per row.  Table 1, per row:
answered share of the full cache's answers on the tuning and the held-out
documents (bench/qa/heldout.txt) apart, ROUGE-L against the full cache's
replies, stored bytes per token, and the share of each kind of the
documents' units the cut holds (template prefix, the facts' answers, the
rest of the facts' sentences, the last 16 tokens, structural tokens, the
rest).  Table 2: the fact questions the full cache answers, split by
whether the cut answers them, with the mean share of their answer's and
sentence's units held: what a lost answer lost.
"""
import json
import sys

from qa_heldout import load_heldout, take_heldout_arg

FRAC = {1.0: "1", 0.5: "1/2", 0.25: "1/4", 0.125: "1/8", 0.0625: "1/16"}
KINDS = ["template", "answer", "fact", "tail", "structural", "rest"]


def variant(spec):
    s = spec.split(":", 1)[1] if ":" in spec else ""
    s = ",".join(x for x in s.split(",") if x and not x.startswith("from="))
    return s or "kvzip"


def main():
    args = sys.argv[1:]
    held_path = take_heldout_arg(args)
    if not args:
        print(__doc__, file=sys.stderr)
        return 2
    held = load_heldout(held_path)
    cells, order, facts = {}, [], {}
    for path in args:
        d = json.load(open(path))
        done = {x["file"]: x for x in d["docs"] if x.get("done")}
        qs = {q["i"]: q for q in d["questions"]}
        for r in d["rows"]:
            if "quant" not in r:
                continue
            key = (variant(r["spec"]), r["ratio"], r["quant"])
            if key not in cells:
                cells[key] = dict(seen=set(), tune=[0, 0], held=[0, 0], rouge=0.0, n=0,
                                  bytes=0, tok=0, units={k: [0.0, 0] for k in KINDS})
                order.append(key)
            c = cells[key]
            ran = set()
            for pd in r["per_doc"]:
                f = pd["doc"]
                if f not in done or "count" not in pd or f in c["seen"]:
                    continue
                c["seen"].add(f)
                ran.add(f)
                k = pd["count"]
                sp = c["held" if f in held else "tune"]
                sp[0] += k["answered"]
                sp[1] += k["full_answered"]
                c["rouge"] += (k["rougeL"] or 0.0) * k["n"]
                c["n"] += k["n"]
                c["bytes"] += pd.get("bytes", 0)
                c["tok"] += done[f]["tokens"]
                for kind in KINDS:
                    v = pd.get("units", {}).get(kind)
                    if v is not None:
                        c["units"][kind][0] += v
                        c["units"][kind][1] += 1
            for rep in r["replies"]:
                q = qs[rep["i"]]
                if q["doc"] not in ran or q["kind"] != "fact" or not q.get("full_ok"):
                    continue
                if "answer_kept" not in rep:
                    continue
                fk = facts.setdefault(key, {True: [0, 0.0, 0.0], False: [0, 0.0, 0.0]})
                e = fk[bool(rep["ok"])]
                e[0] += 1
                e[1] += rep["answer_kept"]
                e[2] += rep["fact_kept"]

    def pct(a, b):
        return f"{100 * a / b:.0f} % ({a}/{b})" if b else "-"

    print("| variant | R | stored | answered, tuning | answered, held-out | ROUGE-L | B/token | "
          + " | ".join(f"held: {k}" for k in KINDS) + " |")
    print("|---|---|---|---:|---:|---:|---:|" + "---:|" * len(KINDS))
    for key in order:
        c = cells[key]
        v, r, q = key
        units = " | ".join(f"{c['units'][k][0] / c['units'][k][1]:.2f}" if c["units"][k][1]
                           else "-" for k in KINDS)
        print(f"| {v} | {FRAC.get(r, r)} | {q} | {pct(*c['tune'])} | {pct(*c['held'])} | "
              f"{c['rouge'] / c['n'] if c['n'] else 0:.2f} | "
              f"{c['bytes'] / c['tok'] if c['tok'] else 0:.0f} | {units} |")
    print()
    print("| variant | R | stored | facts answered: n, answer held, sentence held | "
          "facts lost: n, answer held, sentence held |")
    print("|---|---|---|---:|---:|")
    for key in order:
        if key not in facts:
            continue
        v, r, q = key
        out = []
        for ok in (True, False):
            n, a, s = facts[key][ok]
            out.append(f"{n}, {a / n:.2f}, {s / n:.2f}" if n else "0")
        print(f"| {v} | {FRAC.get(r, r)} | {q} | {out[0]} | {out[1]} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
