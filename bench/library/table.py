#!/usr/bin/env python3
"""The library questions' table (bench/RESULTS.md) from run.py's lines.

Per mode: the threshold on the answer's mean log-probability chosen on the
tuning items alone (the one that maximises right answers plus right
abstentions there; ties: the lower threshold), then for tuning and
held-out items apart: answerable items answered right (the expected text
in the reply, case-insensitive, and not abstained), answerable items
abstained on, unanswerable items abstained on (right), confident answers
to unanswerable items (wrong), and the median times to the model's first
answer token, to the first token handed on, and in all.

  table.py [FILE]   (default bench/results/library.jsonl)
"""
import json
import statistics
import sys


def right(rec):
    ans = rec["answer"].lower()
    return any(e.lower() in ans for e in rec["expected"].split("|"))


def score(recs, thr):
    n = 0
    for r in recs:
        c = r["result"]["confidence"] if r["result"] else None
        abst = c is None or c < thr
        n += (abst if r["kind"] == "abstain" else (not abst and right(r)))
    return n


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "bench/results/library.jsonl"
    recs = [json.loads(l) for l in open(path, encoding="utf-8")]
    recs = [r for r in recs if r["rc"] == 0 and r["result"]]
    print("| mode | threshold (tuned) | split | answerable: right | answerable: abstained | "
          "unanswerable: abstained | unanswerable: answered | median first token (model) | "
          "median handed on | median total |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for mode in sorted({r["mode"] for r in recs}, key=lambda m: m != "side"):
        rm = [r for r in recs if r["mode"] == mode]
        tune = [r for r in rm if r["split"] == "tune"]
        cands = sorted({r["result"]["confidence"] for r in tune
                        if r["result"]["confidence"] is not None})
        thrs = [-1000.0] + [c + 1e-9 for c in cands]
        best = max(thrs, key=lambda t: (score(tune, t), -t))
        for split in ("tune", "heldout"):
            rs = [r for r in rm if r["split"] == split]
            ans = [r for r in rs if r["kind"] == "answer"]
            un = [r for r in rs if r["kind"] == "abstain"]

            def ab(r):
                c = r["result"]["confidence"]
                return c is None or c < best
            print("| %s | %.3f | %s | %d / %d | %d | %d / %d | %d | %.2f s | %.2f s | %.2f s |" % (
                mode, best, split, sum(1 for r in ans if not ab(r) and right(r)), len(ans),
                sum(1 for r in ans if ab(r)), sum(1 for r in un if ab(r)), len(un),
                sum(1 for r in un if not ab(r)),
                statistics.median(r["result"]["ttft_model_s"] for r in rs),
                statistics.median(r["result"]["ttft_s"] for r in rs),
                statistics.median(r["result"]["seconds"] for r in rs)))
        # without abstention: the raw right answers
        for split in ("tune", "heldout"):
            ans = [r for r in rm if r["split"] == split and r["kind"] == "answer"]
            print("<!-- %s %s: %d / %d right without abstention -->" % (
                mode, split, sum(1 for r in ans if right(r)), len(ans)))


if __name__ == "__main__":
    main()
