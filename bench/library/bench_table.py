#!/usr/bin/env python3
"""The library bench's table (bench/RESULTS.md) from bench.py's lines.

Per way (library, text baseline, oracle) and split (tune, held out):
answerable questions answered right (an accepted answer in the reply,
case-insensitive, and not abstained), answerable abstained on,
unanswerable abstained on and answered (confidently: a wrong answer), the
library's sources (the right document among the consulted parts, and the
part answered from), and the median time to first token.

Abstention: the library's default threshold (-0.4 on the mean
log-probability of the answer's judged first tokens, judged_confidence, or
of the whole answer in lines from before it, SVC_LIB_MIN_CONF_DEFAULT), not
retuned here, and the grounding check's own abstentions (judged_tokens 0); the text
baseline and the oracle have none (kvsnap generate answers whatever it
reads), so their answers to unanswerable questions are counted as given,
and a reply that itself says the text does not tell (NOT_SAID) is counted
as an abstention.

  bench_table.py [FILE...] [--min-conf X]   (default bench/results/library-bench.jsonl;
                                            several: the passes' lines merged by question)
  bench_table.py --merge OUT FILE...        write the merged lines to OUT, no table
  bench_table.py --sweep FILE...            the library's abstention threshold swept over
                                            the TUNING items only (every confidence seen
                                            there, and the default), the rule's pick marked

The sweep's rule (chosen before looking at any result of the passages
index): the threshold that answers the most tuning questions right while
answering at most 1 in 10 of the tuning unanswerable ones; of equals, the
lowest (the least abstention).  Held-out items are never read by it.
"""
import json
import re
import statistics
import sys

MIN_CONF = -0.4
NOT_SAID = re.compile(r"\b(not (mentioned|specified|stated|provided|given)|does not (say|mention|"
                      r"specify|state)|no information|not known|unknown|cannot be determined|"
                      r"does not contain)\b", re.I)


def right(ans, exp):
    return any(e.lower() in ans.lower() for e in exp.split("|"))


def abstained(way, r, thr):
    w = r.get(way)
    if way == "library":
        if w.get("abstained") and w.get("judged_tokens") == 0:  # grounding: no model ran
            return True
        c = judged(w)
        return c is None or c < thr
    return bool(NOT_SAID.search(w.get("answer", "")))


def judged(w):
    """The confidence abstention decides on: the judged first tokens' mean
    (lines from before the judging: the whole answer's)."""
    return w.get("judged_confidence", w.get("confidence"))


def med(xs):
    xs = [x for x in xs if x is not None]
    return "%.2f s" % statistics.median(xs) if xs else "-"


def main():
    args = sys.argv[1:]
    thr = MIN_CONF
    if "--min-conf" in args:
        i = args.index("--min-conf")
        thr = float(args[i + 1])
        del args[i:i + 2]
    merge = None
    if "--merge" in args:
        i = args.index("--merge")
        merge = args[i + 1]
        del args[i:i + 2]
    sweep = "--sweep" in args
    if sweep:
        args.remove("--sweep")
    merged = {}  # the passes' lines of one question, merged
    for path in args or ["bench/results/library-bench.jsonl"]:
        for line in open(path, encoding="utf-8"):
            r = json.loads(line)
            merged.setdefault(r["question"], {}).update(r)
    recs = list(merged.values())
    if merge:
        with open(merge, "w", encoding="utf-8") as f:
            for r in recs:
                f.write(json.dumps(r) + "\n")
        return
    if sweep:
        return print_sweep(recs)
    print("| way | split | answerable: right | answerable: abstained | unanswerable: abstained |"
          " unanswerable: answered | right document consulted | answered from it |"
          " median time to first token |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for way in ("library", "text", "oracle"):
        for split in ("tune", "heldout", "all"):
            rs = [r for r in recs if way in r and (split == "all" or r["split"] == split)
                  and r[way].get("rc") == 0]
            if not rs:
                continue
            ans = [r for r in rs if r["kind"] == "answer"]
            un = [r for r in rs if r["kind"] == "abstain"]
            ok = sum(1 for r in ans if not abstained(way, r, thr) and
                     right(r[way]["answer"], r["expected"]))
            src = frm = "-"
            if way in ("library", "text"):
                lib = [r for r in ans if "library" in r]
                src = "%d / %d" % (sum(1 for r in lib if any(
                    s["consulted"] and s["doc"] == r["doc"] for s in r["library"]["sources"])),
                    len(lib))
                if way == "library":
                    frm = "%d / %d" % (sum(1 for r in lib if r["library"]["answered_from"] ==
                                           r["doc"]), len(lib))
            if way == "library":
                # what the caller waits for: the answer is decoded and judged before it is
                # handed on (ttft_s); the model's own first token is ttft_model_s
                t = "%s (model: %s)" % (med(r["library"]["ttft_s"] for r in rs),
                                        med(r["library"]["ttft_model_s"] for r in rs))
            else:
                t = med(r[way]["ttft_s"] for r in rs)
            print("| %s | %s | %d / %d | %d | %s | %s | %s | %s | %s |" % (
                way, split, ok, len(ans), sum(1 for r in ans if abstained(way, r, thr)),
                "%d / %d" % (sum(1 for r in un if abstained(way, r, thr)), len(un)) if un else "-",
                sum(1 for r in un if not abstained(way, r, thr)) if un else "-", src, frm, t))
    for way in ("library", "text", "oracle"):
        ans = [r for r in recs if way in r and r["kind"] == "answer" and r[way].get("rc") == 0]
        lng = [r for r in ans if r["depth"] > 0.5 and r["doc"][:2] <= "03"]
        print("<!-- %s: %d / %d right with no abstention; long documents' later parts: "
              "%d / %d -->" % (way, sum(1 for r in ans if right(r[way]["answer"], r["expected"])),
                               len(ans), sum(1 for r in lng if right(r[way]["answer"],
                                                                      r["expected"])), len(lng)))


def print_sweep(recs):
    tune = [r for r in recs if r["split"] == "tune" and "library" in r and
            r["library"].get("rc") == 0]
    ans = [r for r in tune if r["kind"] == "answer"]
    un = [r for r in tune if r["kind"] == "abstain"]
    confs = sorted({judged(r["library"]) for r in tune
                    if judged(r["library"]) is not None} | {MIN_CONF})
    # a threshold just above each confidence seen (that answer then abstains), and the lowest
    thrs = sorted({round(c + 1e-4, 4) for c in confs} | {round(confs[0] - 1e-4, 4), MIN_CONF})
    rows = []
    for t in thrs:
        ok = sum(1 for r in ans if not abstained("library", r, t) and
                 right(r["library"]["answer"], r["expected"]))
        bad = sum(1 for r in un if not abstained("library", r, t))
        rows.append((t, ok, bad))
    allowed = [x for x in rows if x[2] <= len(un) / 10]
    pick = max(allowed, key=lambda x: (x[1], -x[0]))[0] if allowed else None
    print("tuning items: %d answerable, %d unanswerable" % (len(ans), len(un)))
    print("| --min-conf | answerable: right | unanswerable: answered | |")
    print("|---:|---:|---:|---|")
    for t, ok, bad in rows:
        print("| %.4f | %d / %d | %d / %d | %s |" % (t, ok, len(ans), bad, len(un),
              ("rule's pick" if t == pick else "") + (" default" if t == MIN_CONF else "")))


if __name__ == "__main__":
    main()
