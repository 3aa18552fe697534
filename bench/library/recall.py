#!/usr/bin/env python3
"""The library bench's retrieval alone, no model: for every answerable
question of questions.tsv, is the right document among the K best parts
`kvsnap search --local -k K` lists (the parts `query --all` consults)?
Run it with the kvsnap of each index schema over the same ingested state
to compare rankings (a kvsnap of another schema rebuilds the index first).

  recall.py KVSNAP STATE [K]      (default K: 3)
"""
import csv
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import stored  # noqa: E402  {doc_id: file name}


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    kv, state = sys.argv[1:3]
    k = sys.argv[3] if len(sys.argv) > 3 else "3"
    qs = os.path.join(os.path.dirname(os.path.abspath(__file__)), "questions.tsv")
    names_of = stored(kv, state)
    n = hit = 0
    for q in csv.DictReader(open(qs, encoding="utf-8"), delimiter="\t"):
        if q["kind"] != "answer":
            continue
        out = subprocess.run([kv, "search", "--local", "--state", state, "-k", k, "--json",
                              q["question"]], capture_output=True, text=True).stdout
        hits = [json.loads(line) for line in out.splitlines() if line.strip()]
        names = ["%s#%s" % (names_of.get(h["doc_id"], h["doc_id"][:12]), h["part"])
                 for h in hits if h.get("event") == "hit"]
        ok = any(x.split("#")[0] == q["doc"] for x in names)
        n += 1
        hit += ok
        print("%s %-20s %-52s | %s" % ("Y" if ok else "-", q["doc"], q["question"][:52],
                                       " ".join(names)))
    print("right document among the %s best parts: %d / %d" % (k, hit, n))
    return 0


if __name__ == "__main__":
    sys.exit(main())
