#!/usr/bin/env python3
"""Build the question-answering fixtures of bench/bench_qa.c.

usage: bench/qa/make_docs.py [--out DIR] [--check]

Takes real prose that every Debian 12 system carries (the license texts in
/usr/share/common-licenses and a few long READMEs / FAQs under
/usr/share/doc), inserts 5-6 invented facts into each text at paragraph
boundaries spread over its depth, and writes

  DIR/docs/NN-name.txt   one document per source (NN orders them by length in characters)
  DIR/questions.tsv      doc, kind, depth, question, expected

kind is `fact` (an inserted sentence; depth = where it went, 0..1 of the
document's characters) or `subject` (about the text itself; depth -1).
expected holds the accepted answers separated by `|`, matched
case-insensitively as substrings of the model's reply.

Everything random comes from SEED, so the same sources give the same bytes.
The output is checked in (the files under /usr/share/doc differ between
machines); --check regenerates into a temporary directory and compares.
Python 3 standard library only.
"""
import argparse
import filecmp
import gzip
import os
import random
import re
import sys
import tempfile

SEED = 20240518

# (file name, source path, max characters (0: all), subject questions)
# Sizes are chosen for ~1K to ~7.4K model tokens (these texts run 3.9 to 4.6
# characters per SmolLM2 token); bench_qa prints the real counts.
SOURCES = [
    ("txtvsbin", "/usr/share/doc/zlib1g-dev/txtvsbin.txt.gz", 4200, [
        ("Which alphabets does the new scheme work on?", "ASCII|Unicode"),
    ]),
    ("artistic", "/usr/share/common-licenses/Artistic", 0, [
        ("What license is this text?", "Artistic"),
        ("What does this license call the person who owns the copyright?", "Copyright Holder"),
    ]),
    ("cc0", "/usr/share/common-licenses/CC0-1.0", 0, [
        ("What is the name of this legal text?", "CC0|Creative Commons"),
        ("Who wrote this legal code?", "Creative Commons"),
    ]),
    ("apache", "/usr/share/common-licenses/Apache-2.0", 0, [
        ("What is the name of this license?", "Apache"),
        ("Which version of the license is this?", "2.0"),
    ]),
    ("openssh-debian", "/usr/share/doc/openssh-client/README.Debian.gz", 0, [
        ("Which software package is this document about?", "OpenSSH|SSH"),
        ("Which Linux distribution is this document written for?", "Debian"),
    ]),
    ("ijg-readme", "/usr/share/doc/libjpeg-dev/README.ijg.gz", 0, [
        ("Which group wrote this JPEG software?", "Independent JPEG Group|IJG"),
        ("Which image format does this software work with?", "JPEG"),
    ]),
    ("mpl2", "/usr/share/common-licenses/MPL-2.0", 0, [
        ("What license is this text?", "Mozilla Public License|Mozilla|MPL"),
        ("Which version of the license is this?", "2.0"),
    ]),
    ("gpl2", "/usr/share/common-licenses/GPL-2", 0, [
        ("What license is this text?", "General Public License|GPL"),
        ("Who publishes this license?", "Free Software Foundation|FSF"),
    ]),
    ("zlib-faq", "/usr/share/doc/zlib1g-dev/FAQ.gz", 0, [
        ("Which software library is this FAQ about?", "zlib"),
    ]),
    ("systemd-uids", "/usr/share/doc/systemd/UIDS-GIDS.md.gz", 0, [
        ("Which software project is this document about?", "systemd"),
        ("Which user has the UID 0?", "root"),
    ]),
    ("gfdl13", "/usr/share/common-licenses/GFDL-1.3", 0, [
        ("What license is this text?", "Free Documentation License|FDL"),
        ("Who publishes this license?", "Free Software Foundation|FSF"),
    ]),
    ("lgpl21", "/usr/share/common-licenses/LGPL-2.1", 0, [
        ("What license is this text?", "Lesser General Public License|LGPL|Lesser GPL"),
        ("Who publishes this license?", "Free Software Foundation|FSF"),
    ]),
    ("gpl3", "/usr/share/common-licenses/GPL-3", 33500, [
        ("What license is this text?", "General Public License|GPL"),
        ("Who publishes this license?", "Free Software Foundation|FSF"),
    ]),
]

FIRST = ["Marguerite", "Tobias", "Ingrid", "Rafael", "Yuki", "Desmond", "Ottilie", "Kwame",
         "Svetlana", "Ignatius", "Beatrix", "Lorenzo", "Amara", "Casimir", "Henrietta",
         "Bartholomew", "Priya", "Evander", "Philippa", "Anselm", "Dagny", "Cornelius",
         "Esperanza", "Leopold", "Rosalind", "Thaddeus"]
LAST = ["Okonkwo", "Vasquez-Thorne", "Lindqvist", "Abernathy", "Castellano", "Fitzgerald",
        "Nakamura", "Pemberton", "Oyelaran", "Kowalczyk", "Haverford", "Delacroix",
        "Ferreira", "Mbeki", "Thistlewood", "Achterberg", "Quintero", "Rasmussen",
        "Wolstenholme", "Marchetti", "Szabo", "Blackwood", "Ivanova", "Carrington",
        "Everhart", "Montgomery"]
CITIES = ["Reykjavik", "Timbuktu", "Ulaanbaatar", "Zanzibar", "Kathmandu", "Samarkand",
          "Montevideo", "Vladivostok", "Marrakesh", "Valparaiso", "Tromso", "Hobart",
          "Antananarivo", "Thimphu", "Windhoek", "Nuuk", "Ushuaia", "Cuzco", "Tbilisi",
          "Ljubljana"]
WORDS = ["heliotrope", "marmalade", "quicksilver", "tambourine", "lighthouse", "pumpernickel",
         "wanderlust", "gossamer", "kaleidoscope", "thunderbolt", "periwinkle", "saxophone",
         "cinnamon", "zeppelin", "labyrinth", "buttercup", "nightingale", "origami",
         "avalanche", "porcupine"]
COLOURS = ["vermilion", "turquoise", "ochre", "magenta", "lavender", "crimson", "indigo",
           "chartreuse", "burgundy", "saffron", "teal", "mauve", "amber", "cerulean"]
ANIMALS = ["pangolin", "axolotl", "narwhal", "capybara", "wombat", "flamingo", "armadillo",
           "platypus", "lemur", "walrus", "tapir", "ocelot", "meerkat", "okapi"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December"]


class Draw:
    """Values drawn without replacement, so no two facts share an answer."""

    def __init__(self, rng):
        self.rng = rng
        self.used = set()

    def pick(self, pool):
        free = [v for v in pool if v not in self.used]
        v = self.rng.choice(free)
        self.used.add(v)
        return v

    def number(self, lo, hi):
        while True:
            v = str(self.rng.randint(lo, hi))
            if v not in self.used and len(set(v)) > 1:
                self.used.add(v)
                return v


def fact_catalogue(d):
    n = d.number(10000, 99999)
    return (f"The catalogue number of this copy is {n}.",
            "What is the catalogue number of this copy?", n)


def fact_transcriber(d):
    first, last = d.pick(FIRST), d.pick(LAST)
    return (f"This copy was transcribed by {first} {last}.",
            "Who transcribed this copy?", f"{first} {last}|{last}")


def fact_librarian(d):
    first, last = d.pick(FIRST), d.pick(LAST)
    return (f"The chief librarian of the archive is {first} {last}.",
            "Who is the chief librarian of the archive?", f"{first} {last}|{last}")


def fact_place(d):
    city = d.pick(CITIES)
    alt = "|Tromsø" if city == "Tromso" else "|Valparaíso" if city == "Valparaiso" else ""
    return (f"The printed edition of this text is kept in {city}.",
            "Where is the printed edition of this text kept?", city + alt)


def fact_password(d):
    w = d.pick(WORDS)
    return (f"The password for the archive is {w}.",
            "What is the password for the archive?", w)


def fact_date(d):
    day, month, year = d.rng.randint(2, 28), d.pick(MONTHS), d.number(1952, 1998)
    return (f"This copy was archived on {day} {month} {year}.",
            "On what date was this copy archived?", f"{day} {month}|{month} {day}")


def fact_colour(d):
    c = d.pick(COLOURS)
    return (f"The binding of the printed edition is {c}.",
            "What colour is the binding of the printed edition?", c)


def fact_mascot(d):
    a = d.pick(ANIMALS)
    return (f"The mascot of the archive is a {a}.",
            "What is the mascot of the archive?", a)


def fact_seats(d):
    n = d.number(23, 97)
    return (f"The reading room of the archive has {n} seats.",
            "How many seats does the reading room of the archive have?", n)


def fact_extension(d):
    n = d.number(2000, 8999)
    return (f"The telephone extension of the archive is {n}.",
            "What is the telephone extension of the archive?", n)


FACTS = [fact_catalogue, fact_transcriber, fact_librarian, fact_place, fact_password,
         fact_date, fact_colour, fact_mascot, fact_seats, fact_extension]


def read_source(path, max_chars):
    """The text, normalized: no form feeds or trailing blanks, at most one
    blank line in a row; cut at a paragraph boundary at max_chars."""
    if not os.path.exists(path):
        sys.exit(f"make_docs: {path} is missing (a Debian 12 system with the packages "
                 f"of bench/qa/README.md is needed to regenerate)")
    raw = gzip.open(path, "rb").read() if path.endswith(".gz") else open(path, "rb").read()
    text = raw.decode("utf-8").replace("\r", "").replace("\f", "")
    text = "\n".join(line.rstrip() for line in text.split("\n"))
    text = re.sub(r"\n{3,}", "\n\n", text).strip("\n")
    paras = text.split("\n\n")
    if max_chars:
        out, n = [], 0
        for p in paras:
            if n + len(p) + 2 > max_chars:
                break
            out.append(p)
            n += len(p) + 2
        paras = out
    return paras


def build(name, paras, n_facts, draw):
    """Insert n_facts facts at paragraph boundaries near depths (k+½)/n;
    return the document and its (kind, depth, question, expected) rows."""
    source = "\n\n".join(paras).lower()
    facts = []
    kinds = draw.rng.sample(FACTS, len(FACTS))
    for make in kinds:
        if len(facts) == n_facts:
            break
        for _ in range(20):  # an answer must not occur in the text already
            sentence, question, expected = make(draw)
            if not any(a.lower() in source for a in expected.split("|")):
                break
        else:
            continue
        facts.append((sentence, question, expected))
    assert len(facts) == n_facts, name
    # boundaries: after paragraph i (i = 0..len-2), at char offset ends[i]
    ends, at = [], 0
    for p in paras[:-1]:
        at += len(p) + 2
        ends.append(at)
    total = at + len(paras[-1])
    chosen = []
    for k in range(n_facts):
        target = (k + 0.5) / n_facts * total
        free = [i for i in range(len(ends)) if i not in chosen]
        chosen.append(min(free, key=lambda i: (abs(ends[i] - target), i)))
    by_boundary = {chosen[k]: facts[k] for k in range(n_facts)}
    out, placed = [], []
    for i, p in enumerate(paras):
        out.append(p)
        if i in by_boundary:
            placed.append((len(out), by_boundary[i]))
            out.append(by_boundary[i][0])
    text = "\n\n".join(out) + "\n"
    rows = []
    for j, (sentence, question, expected) in placed:
        at = sum(len(x) + 2 for x in out[:j])  # the sentence's offset in text
        assert text[at:at + len(sentence)] == sentence
        rows.append(("fact", f"{at / len(text):.2f}", question, expected))
    return text, rows


def generate(out_dir):
    rng = random.Random(SEED)
    draw = Draw(rng)
    docs = []
    for name, path, max_chars, subject in SOURCES:
        paras = read_source(path, max_chars)
        docs.append((sum(len(p) + 2 for p in paras), name, paras, subject))
    docs.sort(key=lambda d: (d[0], d[1]))
    os.makedirs(os.path.join(out_dir, "docs"), exist_ok=True)
    lines = ["doc\tkind\tdepth\tquestion\texpected"]
    for idx, (size, name, paras, subject) in enumerate(docs):
        fname = f"{idx + 1:02d}-{name}.txt"
        n_facts = 5 if size < 12000 else 6
        text, rows = build(name, paras, n_facts, draw)
        with open(os.path.join(out_dir, "docs", fname), "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        for kind, depth, q, e in rows:
            lines.append(f"docs/{fname}\t{kind}\t{depth}\t{q}\t{e}")
        for q, e in subject:
            lines.append(f"docs/{fname}\tsubject\t-1\t{q}\t{e}")
    with open(os.path.join(out_dir, "questions.tsv"), "w", encoding="utf-8", newline="\n") as f:
        f.write("\n".join(lines) + "\n")
    return len(docs), len(lines) - 1


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=here, help="output directory (default: bench/qa)")
    ap.add_argument("--check", action="store_true",
                    help="regenerate into a temporary directory and compare with --out")
    a = ap.parse_args()
    if not a.check:
        n_docs, n_q = generate(a.out)
        print(f"make_docs: {n_docs} documents, {n_q} questions in {a.out}")
        return
    with tempfile.TemporaryDirectory() as tmp:
        generate(tmp)
        names = ["questions.tsv"] + ["docs/" + f for f in sorted(os.listdir(os.path.join(tmp, "docs")))]
        have = sorted(os.listdir(os.path.join(a.out, "docs"))) if os.path.isdir(
            os.path.join(a.out, "docs")) else []
        bad = [n for n in names if not os.path.exists(os.path.join(a.out, n)) or
               not filecmp.cmp(os.path.join(tmp, n), os.path.join(a.out, n), shallow=False)]
        bad += ["docs/" + f + " (extra)" for f in have if "docs/" + f not in names]
        if bad:
            sys.exit("make_docs: differs: " + ", ".join(bad))
        print(f"make_docs: {len(names)} files identical")


if __name__ == "__main__":
    main()
