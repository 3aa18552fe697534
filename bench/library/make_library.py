#!/usr/bin/env python3
"""The library bench's documents and questions (issue 29, item 5).

  make_library.py [--out DIR]     write DIR/docs/ (default build/bench-library)
  make_library.py --questions     write bench/library/questions.tsv
  make_library.py --check         compare questions.tsv with the rule (exit 1 if it differs)

The library: 50 documents of four formats (text, Markdown, HTML, PDF) made
from texts every Debian 12 system carries, by a fixed rule:
- 3 long documents, longer than SmolLM2's 8,192-token window, so stored in
  parts: the first 36,000 / 25,000 / 37,000 characters (cut at a
  paragraph) of Python 3.11's NEWS (text), GnuPG's NEWS (Markdown) and GNU
  make's NEWS (PDF);
- bench/qa's documents 01..08, their first 2,000 characters (their own
  inserted "archive" facts stay: distractors, never asked here);
- 39 copyright files from /usr/share/doc/*/copyright of 2,500 to 6,000
  bytes, distinct, in a fixed pseudo-random order (seed 29), their first
  1,200 characters.
Formats go round text, Markdown, HTML, PDF by the document's number; HTML
and PDF are made by groff (-ms -Thtml / -Tpdf, hyphenation and ligatures
off, so no word is cut or joined), Markdown gets a title heading.

Into every document invented facts are inserted as paragraphs of their
own (one into a short document at a seeded depth; three into a long one,
at 55, 75 and 92 % of its characters: its later parts), each about a
subject named nowhere else ("The lighthouse keeper of Varnholt is ..."),
so a question names no document, its answer is in exactly one, and it is
not in the model's priors.  Values are drawn without replacement.

Questions (questions.tsv, fixed by this rule before any result): every
long-document fact and every sixth short-document fact (answerable), and
8 questions about subjects in no document, of the same kinds
(unanswerable: the library should abstain).  Held out from any choice
of parameters: a third of each kind (rounded up), the questions first
when sorted by the SHA-256 of their text.

Python 3 standard library and groff (Debian's groff package).  The
generated documents are not committed (/usr/share/doc differs between
machines); questions.tsv is, and does not depend on them.
"""
import argparse
import gzip
import hashlib
import math
import os
import random
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
SEED = 29
N_COPYRIGHT = 39
FORMATS = ["txt", "md", "html", "pdf"]
# (name, source, format, characters kept: each ~8,800-10,400 SmolLM2 tokens)
LONG = [
    ("python-news", "/usr/share/doc/python3.11/NEWS.gz", "txt", 36000),
    ("gnupg-news", "/usr/share/doc/gnupg/NEWS.gz", "md", 25000),
    ("make-news", "/usr/share/doc/make/NEWS.gz", "pdf", 37000),
]
# the short documents are cut (at a paragraph) to keep the library small
# enough to ingest on a shared two-core machine (~45K tokens in all)
QA_CHARS = 2000
COPYRIGHT_CHARS = 1200
QA_DOCS = ["01-txtvsbin", "02-artistic", "03-cc0", "04-apache", "05-openssh-debian",
           "06-ijg-readme", "07-zlib-faq", "08-mpl2"]
LONG_DEPTHS = [0.55, 0.75, 0.92]

FIRST = ["Dagny", "Evander", "Ottoline", "Radomir", "Ysolde", "Casimir", "Leocadia",
         "Thaddeus", "Brunhilde", "Anselm", "Perpetua", "Ignatius", "Wilhelmina", "Barnaby",
         "Clementine", "Lazarus", "Philippa", "Octavian", "Rosalind", "Ambrose"]
LAST = ["Quennell", "Marrowby", "Ashcombe", "Pettigrew", "Vandermolen", "Kessington",
        "Ormsby", "Tolliver", "Grimsditch", "Fairweather", "Blackwood", "Hollingsworth",
        "Penhaligon", "Wetherby", "Stanislav", "Abernathy", "Cornwallis", "Lindqvist",
        "Drummond", "Featherstone"]
WORDS = ["marmalade", "avalanche", "porcupine", "lantern", "saxophone", "glacier",
         "tangerine", "harpoon", "cinnamon", "toboggan", "periscope", "walrus", "kaleidoscope",
         "thimble", "pelican", "juniper", "zeppelin", "armadillo", "trombone", "quartz"]
FLOWERS = ["foxglove", "snapdragon", "hollyhock", "larkspur", "edelweiss", "bluebell",
           "marigold", "columbine", "primrose", "cornflower", "gardenia", "anemone",
           "hyacinth", "camellia", "verbena", "heather", "magnolia", "peony", "aster", "azalea"]
SYL1 = ["Var", "Quil", "Brem", "Tor", "Ald", "Mor", "Kest", "Ulv", "Zan", "Hal", "Dre", "Pell",
        "Yar", "Cor", "Vel", "Ost", "Gan", "Rim", "Sel", "Thal"]
SYL2 = ["holt", "ory", "wick", "mere", "stad", "akin", "oven", "brook", "dun", "avik",
        "enz", "ister", "ova", "ethe", "ombe", "uin", "arra", "ilde", "ensk", "oria"]


def person(rng):
    return "%s %s" % (rng.choice(FIRST), rng.choice(LAST))


def coined(rng):
    return rng.choice(SYL1) + rng.choice(SYL2)


# kind: (statement, question, value maker, expected from value)
KINDS = {
    "pier": ("The ferry to {s} leaves from pier number {v}.",
             "From which pier does the ferry to {s} leave?",
             lambda r: str(r.randint(11, 98)), lambda v: v),
    "keeper": ("The lighthouse keeper of {s} is {v}.", "Who is the lighthouse keeper of {s}?",
               person, lambda v: v + "|" + v.split()[1]),
    "bell": ("The bell of the {s} tower weighs {v} kilograms.",
             "How much does the bell of the {s} tower weigh?",
             lambda r: str(r.randint(120, 990)), lambda v: v),
    "expedition": ("The {s} expedition was led by {v}.", "Who led the {s} expedition?",
                   person, lambda v: v + "|" + v.split()[1]),
    "guild": ("The secret word of the {s} guild is {v}.",
              "What is the secret word of the {s} guild?",
              lambda r: r.choice(WORDS), lambda v: v),
    "observatory": ("The {s} observatory stands on Mount {v}.",
                    "On which mountain does the {s} observatory stand?",
                    coined, lambda v: v),
    "flower": ("The official flower of {s} is the {v}.", "What is the official flower of {s}?",
               lambda r: r.choice(FLOWERS), lambda v: v),
    "river": ("The river that flows through {s} is called the {v}.",
              "What is the river that flows through {s} called?",
              coined, lambda v: v),
}
KIND_ORDER = sorted(KINDS)


def read(path):
    raw = open(path, "rb").read()
    if path.endswith(".gz"):
        raw = gzip.decompress(raw)
    t = raw.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\f", "\n")
    t = "\n".join(l.rstrip() for l in t.split("\n"))
    return re.sub(r"\n{3,}", "\n\n", t).strip() + "\n"


def cut(text, n):
    if len(text) <= n:
        return text
    i = text.rfind("\n\n", 0, n)
    if i <= 0:
        i = text.rfind("\n", 0, n)
    return text[:i if i > 0 else n].rstrip() + "\n"


def copyright_files():
    """The 39 copyright files: 2,500..6,000 bytes, distinct, seeded order."""
    seen, cands = set(), []
    base = "/usr/share/doc"
    for pkg in sorted(os.listdir(base)):
        p = os.path.join(base, pkg, "copyright")
        if not os.path.isfile(p) or os.path.islink(p):
            continue
        sz = os.path.getsize(p)
        if not 2500 <= sz <= 6000:
            continue
        h = hashlib.sha256(open(p, "rb").read()).hexdigest()
        if h in seen:
            continue
        seen.add(h)
        cands.append((pkg, p))
    random.Random(SEED).shuffle(cands)
    return cands[:N_COPYRIGHT]


def plan():
    """[(number, name, format, long?, n_facts)] in a fixed order: no text read."""
    docs = []
    n = 0
    for name, _, fmt, _ in LONG:
        n += 1
        docs.append((n, name, fmt, True))
    for q in QA_DOCS:
        n += 1
        docs.append((n, "qa-" + q[3:], FORMATS[n % 4], False))
    for k in range(N_COPYRIGHT):
        n += 1
        docs.append((n, "copyright-%02d" % (k + 1), FORMATS[n % 4], False))
    return docs


def facts():
    """Every inserted fact and the unanswerable questions, from SEED alone."""
    rng = random.Random(SEED)
    used_s, used_v = set(), set()

    def fresh(make):
        while True:
            x = make(rng)
            if x not in used_s and x not in used_v:
                return x

    out = []
    for num, name, fmt, long_ in plan():
        for j in range(3 if long_ else 1):
            kind = KIND_ORDER[len(out) % len(KIND_ORDER)]
            st, q, mk, ex = KINDS[kind]
            s = fresh(coined)
            used_s.add(s)
            v = fresh(mk)
            used_v.add(v)
            depth = LONG_DEPTHS[j] if long_ else round(rng.uniform(0.15, 0.85), 2)
            out.append(dict(doc="%02d-%s.%s" % (num, name, fmt), long=long_, depth=depth, subject=s,
                            kind=kind, statement=st.format(s=s, v=v), question=q.format(s=s),
                            expected=ex(v)))
    none = []
    for k in range(8):
        kind = KIND_ORDER[(k * 3) % len(KIND_ORDER)]
        s = fresh(coined)
        used_s.add(s)
        none.append(dict(kind=kind, subject=s, question=KINDS[kind][1].format(s=s)))
    return out, none


def questions():
    fs, none = facts()
    short = [f for f in fs if not f["long"]]
    ans = [f for f in fs if f["long"]] + short[::6]
    rows = [("answer", f["doc"], f["depth"], f["question"], f["expected"]) for f in ans]
    rows += [("abstain", "-", -1, q["question"], "-") for q in none]
    held = set()
    for kind in ("answer", "abstain"):
        qs = sorted((r[3] for r in rows if r[0] == kind),
                    key=lambda q: hashlib.sha256(q.encode()).hexdigest())
        held |= set(qs[:math.ceil(len(qs) / 3)])
    return [("heldout" if r[3] in held else "tune",) + r for r in rows]


def render_questions():
    lines = ["split\tkind\tdoc\tdepth\tquestion\texpected"]
    for r in questions():
        lines.append("\t".join(str(x) for x in r))
    return "\n".join(lines) + "\n"


def insert(text, stmts):
    """Each (depth, sentence) as a paragraph at the boundary nearest depth."""
    paras = text.split("\n\n")
    ends, pos = [], 0
    for p in paras:
        pos += len(p) + 2
        ends.append(pos)
    at = {}
    for depth, s in stmts:
        i = min(range(max(1, len(ends) - 1)), key=lambda k: abs(ends[k] - depth * len(text)))
        at.setdefault(i, []).append(s)
    out = []
    for i, p in enumerate(paras):
        out.append(p)
        out.extend(at.get(i, []))
    return "\n\n".join(out)


def roff(title, text):
    def esc(line):
        line = line.replace("\\", "\\e").replace("\t", " ")
        return "\\&" + line if line[:1] in (".", "'") else line
    out = [".hy 0", ".lg 0", ".TL", esc(title), ".LP"]
    for p in text.split("\n\n"):
        out.append(".LP")
        out.extend(esc(l) for l in p.split("\n") if l.strip())
    return "\n".join(out) + "\n"


def write_doc(path, fmt, title, text):
    if fmt == "txt":
        data = text.encode()
    elif fmt == "md":
        data = ("# %s\n\n%s" % (title, text)).encode()
    else:
        dev = "-Thtml" if fmt == "html" else "-Tpdf"
        r = subprocess.run(["groff", "-k", "-ms", dev], input=roff(title, text).encode(),
                           capture_output=True, env=dict(os.environ, SOURCE_DATE_EPOCH="0"))
        if r.returncode or not r.stdout:
            sys.exit("groff %s failed on %s: %s" % (dev, path, r.stderr.decode()[-300:]))
        # the same bytes every run: gropdf dates the file whatever SOURCE_DATE_EPOCH
        # says (same length, so the cross-reference offsets hold)
        data = re.sub(rb"/(CreationDate|ModDate) \(D:\d{14}", rb"/\1 (D:19700101000000",
                      r.stdout)
    with open(path, "wb") as f:
        f.write(data)


def build(out):
    docs = os.path.join(out, "docs")
    os.makedirs(docs, exist_ok=True)
    for f in os.listdir(docs):
        os.unlink(os.path.join(docs, f))
    texts = {}
    for name, src, _, chars in LONG:
        texts[name] = (name, cut(read(src), chars))
    for q in QA_DOCS:
        texts["qa-" + q[3:]] = (q[3:], cut(read(os.path.join(ROOT, "bench/qa/docs", q + ".txt")),
                                           QA_CHARS))
    for k, (pkg, p) in enumerate(copyright_files()):
        texts["copyright-%02d" % (k + 1)] = ("Copyright of %s" % pkg, cut(read(p), COPYRIGHT_CHARS))
    fs, none = facts()
    every = "".join(t for _, t in texts.values()).lower()
    for q in none:  # an unanswerable question's subject is in no document
        if q["subject"].lower() in every:
            sys.exit("a document names %s: change SEED" % q["subject"])
    for num, name, fmt, _ in plan():
        fn = "%02d-%s.%s" % (num, name, fmt)
        title, text = texts[name]
        low = text.lower()
        mine = [f for f in fs if f["doc"] == fn]
        for f in mine:  # the subject must be named nowhere else
            if f["subject"].lower() in low:
                sys.exit("%s already names %s: change SEED" % (fn, f["subject"]))
        text = insert(text, [(f["depth"], f["statement"]) for f in mine])
        write_doc(os.path.join(docs, fn), fmt, title, text)
    print("wrote %d documents into %s" % (len(plan()), docs), file=sys.stderr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "bench-library"))
    ap.add_argument("--questions", action="store_true")
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    path = os.path.join(HERE, "questions.tsv")
    if a.check:
        with open(path, encoding="utf-8") as f:
            sys.exit(0 if f.read() == render_questions() else 1)
    if a.questions:
        with open(path, "w", encoding="utf-8") as f:
            f.write(render_questions())
        return
    build(a.out)


if __name__ == "__main__":
    main()
