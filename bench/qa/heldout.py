#!/usr/bin/env python3
"""The held-out documents of bench/qa: a third of them (rounded up), kept
out of every choice of parameters and reported apart (issue 28).

Rule, fixed before any result was looked at: sort the documents of
questions.tsv by the SHA-256 of their file name as written there
("docs/01-txtvsbin.txt"), hex, and hold out the first ceil(n/3).

  heldout.py           print the list (what heldout.txt holds)
  heldout.py --check   compare with heldout.txt (exit 1 if it differs)
"""
import hashlib
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def docs():
    seen = []
    with open(os.path.join(HERE, "questions.tsv"), encoding="utf-8") as f:
        for i, line in enumerate(f):
            if not line.strip() or line.startswith("#"):
                continue
            doc = line.split("\t")[0]
            if i == 0 and doc == "doc":
                continue
            if doc not in seen:
                seen.append(doc)
    return seen


def heldout():
    d = docs()
    k = math.ceil(len(d) / 3)
    return sorted(sorted(d, key=lambda x: hashlib.sha256(x.encode()).hexdigest())[:k])


def main():
    want = heldout()
    if sys.argv[1:] == ["--check"]:
        with open(os.path.join(HERE, "heldout.txt"), encoding="utf-8") as f:
            have = [l.strip() for l in f if l.strip() and not l.startswith("#")]
        if have != want:
            print("heldout.txt differs from the rule: %s" % want, file=sys.stderr)
            return 1
        return 0
    if sys.argv[1:]:
        print(__doc__, file=sys.stderr)
        return 2
    for d in want:
        print(d)
    return 0


if __name__ == "__main__":
    sys.exit(main())
