#!/usr/bin/env python3
"""Run bench/library/items.tsv: ingest bench/qa's documents 01..10 into a
fresh store (kvsnap ingest --local, each named by its file name), then ask
every item in each mode with `kvsnap query --local --docs A,B --json
--min-conf -1000` (never abstain: the threshold is chosen afterwards, by
table.py, on the tuning items only) and write one JSON line per answer.

  run.py [--build DIR] [--model GGUF] [--modes side,parts,pick] [--out FILE]
         [--state DIR] [-n N] [--limit K] [--max-doc NN]

--max-doc NN keeps the items whose documents are all numbered NN or lower
(a shorter run); documents a reused --state already holds are not ingested
again.

Times are wall-clock on whatever machine runs it: say how busy it was.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.environ.get("BUILD", "build"))
    ap.add_argument("--model", default="models/SmolLM2-135M-Instruct.Q4_1.gguf")
    ap.add_argument("--modes", default="side,parts,pick")
    ap.add_argument("--out", default="bench/results/library.jsonl")
    ap.add_argument("--state", default=None, help="reuse a store (default: a fresh one)")
    ap.add_argument("-n", type=int, default=48)
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--max-doc", default="99")
    a = ap.parse_args()
    os.chdir(ROOT)
    kv = os.path.join(a.build, "kvsnap")
    state = a.state or tempfile.mkdtemp(prefix="kvsnap-library.")
    items = []
    with open(os.path.join(HERE, "items.tsv"), encoding="utf-8") as f:
        for i, line in enumerate(f):
            p = line.rstrip("\n").split("\t")
            if i and len(p) == 5:
                items.append(dict(split=p[0], kind=p[1], docs=p[2].split(","), question=p[3],
                                  expected=p[4]))
    items = [it for it in items if all(d[:2] <= a.max_doc for d in it["docs"])]
    if a.limit:
        items = items[:a.limit]
    base = [kv, "--state", state, "-m", a.model]
    names = sorted({d for it in items for d in it["docs"]})
    t0 = time.time()
    for d in names:
        if subprocess.run([kv, "info", "--state", state, d], capture_output=True).returncode == 0:
            continue
        r = subprocess.run([kv, "ingest", "--local", "--state", state, "-m", a.model, "--name",
                            d, os.path.join("bench/qa/docs", d)], capture_output=True, text=True)
        if r.returncode:
            sys.exit("ingest %s failed: %s" % (d, r.stderr))
    print("ingested %d documents in %.0f s into %s" % (len(names), time.time() - t0, state),
          file=sys.stderr)
    os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
    with open(a.out, "w", encoding="utf-8") as out:
        for k, it in enumerate(items):
            for mode in a.modes.split(","):
                cmd = [kv, "query", "--local", "--state", state, "-m", a.model, "--json",
                       "--docs", ",".join(it["docs"]), "--mode", mode, "--min-conf", "-1000",
                       "-n", str(a.n), it["question"]]
                t = time.time()
                r = subprocess.run(cmd, capture_output=True, text=True)
                wall = time.time() - t
                text, res = "", None
                for line in r.stdout.splitlines():
                    ev = json.loads(line)
                    if ev.get("event") == "token":
                        text += ev.get("text", "")
                    elif ev.get("event") == "result":
                        res = ev
                rec = dict(it, mode=mode, answer=text, result=res, rc=r.returncode, wall=wall,
                           stderr=r.stderr[-400:])
                out.write(json.dumps(rec) + "\n")
                out.flush()
                print("%d/%d %s %s conf=%s %r" % (k + 1, len(items), mode, it["kind"],
                      res and res.get("confidence"), text[:60]), file=sys.stderr)


if __name__ == "__main__":
    main()
