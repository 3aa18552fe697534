#!/usr/bin/env python3
"""Library questions over bench/qa's documents (issue 29, items 3-4):
questions that name no document, asked of a small set of documents, with
the answer in exactly one of them, or in none (the library should abstain).

Made from bench/qa/questions.tsv by a fixed rule (no result was seen):
- documents 01..10 (small enough that two of them fit SmolLM2's 8192-token
  window side by side);
- answerable items: every other inserted-fact question of those documents
  (kind `fact`), asked of its document D and one companion C that holds no
  fact of the same kind (so the answer is unique in the set), the first
  such document in a fixed pseudo-random order whose characters with D's
  stay under 30,000 (~7,000 tokens); D comes first in every other item;
- abstention items: for each document and the ones 1 and 3 after it (in
  a ring: 01+02, 01+04, 02+03, 02+05, ..., 10+01, 10+03) whose characters
  together stay under 30,000, the first fact kind (in a fixed order)
  neither holds; expected answer "-" (abstain);
- held out from the choice of the threshold and the mode: items whose
  answer document (abstention: the first document) is one of
  bench/qa/heldout.txt's (issue 28's rule, fixed before any result).

  make_items.py           write items.tsv
  make_items.py --check   compare with items.tsv (exit 1 if it differs)
"""
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
QA = os.path.join(HERE, "..", "qa")
KINDS = [
    "How many seats does the reading room of the archive have?",
    "On what date was this copy archived?",
    "Who is the chief librarian of the archive?",
    "What is the mascot of the archive?",
    "What is the password for the archive?",
    "What colour is the binding of the printed edition?",
    "Where is the printed edition of this text kept?",
    "What is the catalogue number of this copy?",
    "Who transcribed this copy?",
    "What is the telephone extension of the archive?",
]
MAX_CHARS = 30000


def load():
    facts = {}
    with open(os.path.join(QA, "questions.tsv"), encoding="utf-8") as f:
        for i, line in enumerate(f):
            p = line.rstrip("\n").split("\t")
            if i == 0 or len(p) < 5 or p[1] != "fact":
                continue
            facts.setdefault(p[0], []).append((p[3], p[4]))
    docs = [d for d in sorted(facts) if int(os.path.basename(d)[:2]) <= 10]
    size = {d: os.path.getsize(os.path.join(QA, d)) for d in docs}
    with open(os.path.join(QA, "heldout.txt"), encoding="utf-8") as f:
        held = {l.strip() for l in f if l.strip() and not l.startswith("#")}
    return facts, docs, size, held


def items():
    facts, docs, size, held = load()
    rng = random.Random(29)
    out = []
    n = 0
    for d in docs:
        for qi, (q, exp) in enumerate(facts[d]):
            n += 1
            if n % 2:
                continue  # every other question
            order = docs[:]
            rng.shuffle(order)
            comp = next((c for c in order if c != d and size[c] + size[d] < MAX_CHARS and
                         all(fq != q for fq, _ in facts[c])), None)
            if comp is None:
                continue
            pair = [d, comp] if len(out) % 2 == 0 else [comp, d]
            out.append(("heldout" if d in held else "tune", "answer", pair, q, exp))
    for i, a in enumerate(docs):
        for step in (1, 3):
            b = docs[(i + step) % len(docs)]
            if size[a] + size[b] >= MAX_CHARS:
                continue
            have = {fq for fq, _ in facts[a]} | {fq for fq, _ in facts[b]}
            q = next((k for k in KINDS if k not in have), None)
            if q:
                out.append(("heldout" if a in held else "tune", "abstain", [a, b], q, "-"))
    return out


def render():
    lines = ["split\tkind\tdocs\tquestion\texpected"]
    for split, kind, pair, q, exp in items():
        lines.append("\t".join([split, kind, ",".join(os.path.basename(p) for p in pair), q, exp]))
    return "\n".join(lines) + "\n"


def main():
    path = os.path.join(HERE, "items.tsv")
    text = render()
    if sys.argv[1:] == ["--check"]:
        with open(path, encoding="utf-8") as f:
            sys.exit(0 if f.read() == text else 1)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


if __name__ == "__main__":
    main()
