#!/usr/bin/env python3
"""gen-unicode-tables.py: write engine/model/unicode_tables.c from UnicodeData.txt.

The tokenizer's pre-tokenizers (spec/model.md section 7.1) need these
code-point classes, exactly as llama.cpp's unicode-data.cpp defines them:

  letter      general category Lu, Ll, Lt, Lm, Lo          (\\p{L})
  number      general category Nd, Nl, No                  (\\p{N})
  whitespace  U+0009-000D, 0020, 0085, 00A0, 1680, 2000-200A,
              2028, 2029, 202F, 205F, 3000                 (\\s, White_Space)
  punctuation general category Pc Pd Ps Pe Pi Pf Po        (\\p{P})
  mark        general category Mn Mc Me                    (\\p{M})
  symbol      general category Sm Sc Sk So                 (\\p{S})

Everything else (control, format, private use, surrogates, unassigned) is
"other"; whitespace wins over the general category.

llama.cpp's tables are Unicode 15.1, Debian 12's unicode-data is 15.0.  The
only 15.1 addition that is a letter or number is CJK Unified Ideographs
Extension I, U+2EBF0..U+2EE5D (Lo); the others (U+2FFC..U+2FFF, U+31EF) are
symbols (So).  When the input is 15.0 the generator adds them, so that the
classes equal llama.cpp's: `--check FILE` compares every code point with the
unicode_ranges_flags and unicode_set_whitespace of a llama.cpp
src/unicode-data.cpp (done against llama-cpp-python 0.3.16's: equal).  The output is one sorted table of disjoint
[first, last] ranges with their class, searched by binary search in
engine/model/unicode.c.  "<..., First>" / "<..., Last>" line pairs (CJK, Hangul,
Tangut, ...) cover every code point between them.

Usage: scripts/gen-unicode-tables.py [--check unicode-data.cpp] [UnicodeData.txt] \
           > engine/model/unicode_tables.c
Default input: /usr/share/unicode/UnicodeData.txt (Debian package unicode-data).
Standard library only; output is deterministic.
"""

import os
import re
import sys

MAX_CP = 0x110000
CAT_LETTER, CAT_NUMBER, CAT_SPACE, CAT_PUNCT, CAT_MARK, CAT_SYMBOL = 1, 2, 3, 4, 5, 6
CAT_NAMES = {CAT_LETTER: "ENG_UCAT_LETTER", CAT_NUMBER: "ENG_UCAT_NUMBER",
             CAT_SPACE: "ENG_UCAT_SPACE", CAT_PUNCT: "ENG_UCAT_PUNCT",
             CAT_MARK: "ENG_UCAT_MARK", CAT_SYMBOL: "ENG_UCAT_SYMBOL"}
GC_TO_CAT = {"Lu": CAT_LETTER, "Ll": CAT_LETTER, "Lt": CAT_LETTER, "Lm": CAT_LETTER,
             "Lo": CAT_LETTER, "Nd": CAT_NUMBER, "Nl": CAT_NUMBER, "No": CAT_NUMBER}
GC_TO_CAT.update({gc: CAT_PUNCT for gc in ("Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po")})
GC_TO_CAT.update({gc: CAT_MARK for gc in ("Mn", "Mc", "Me")})
GC_TO_CAT.update({gc: CAT_SYMBOL for gc in ("Sm", "Sc", "Sk", "So")})
# Unicode 15.1 additions missing from a 15.0 UnicodeData.txt (see above).
UNICODE_15_1 = [(0x2EBF0, 0x2EE5D, CAT_LETTER), (0x2FFC, 0x2FFF, CAT_SYMBOL),
                (0x31EF, 0x31EF, CAT_SYMBOL)]
# llama.cpp's unicode_cpt_flags category bits -> our classes (--check)
LLAMA_FLAG_TO_CAT = {0x0001: 0, 0x0002: CAT_NUMBER, 0x0004: CAT_LETTER, 0x0008: 0,
                     0x0010: CAT_MARK, 0x0020: CAT_PUNCT, 0x0040: CAT_SYMBOL, 0x0080: 0,
                     0x0000: 0}
WHITESPACE = list(range(0x0009, 0x000D + 1)) + list(range(0x2000, 0x200A + 1)) + \
    [0x0020, 0x0085, 0x00A0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000]


def read_categories(path, ver):
    """Return a bytearray: class of every code point (0 = other)."""
    cat = bytearray(MAX_CP)
    first = None
    with open(path, encoding="utf-8") as f:
        for line in f:
            fields = line.rstrip("\n").split(";")
            if len(fields) < 3:
                continue
            cp = int(fields[0], 16)
            name, gc = fields[1], fields[2].strip()
            if name.endswith(", First>"):
                first = cp
                continue
            lo = cp
            if name.endswith(", Last>"):
                if first is None:
                    sys.exit("gen-unicode-tables: <Last> without <First> at %04X" % cp)
                lo, first = first, None
            c = GC_TO_CAT.get(gc, 0)
            for x in range(lo, cp + 1):
                cat[x] = c
    if ver.startswith("Unicode 15.0."):
        for lo, hi, c in UNICODE_15_1:
            for x in range(lo, hi + 1):
                cat[x] = c
    for cp in WHITESPACE:
        if cat[cp] in (CAT_LETTER, CAT_NUMBER):
            sys.exit("gen-unicode-tables: whitespace U+%04X is also L or N" % cp)
        cat[cp] = CAT_SPACE
    return cat


def ranges(cat):
    """Merge runs of equal non-zero class into (first, last, class)."""
    out = []
    cp = 0
    while cp < MAX_CP:
        c = cat[cp]
        if c == 0:
            cp += 1
            continue
        lo = cp
        while cp + 1 < MAX_CP and cat[cp + 1] == c:
            cp += 1
        out.append((lo, cp, c))
        cp += 1
    return out


def version(path):
    """Unicode version from the ReadMe next to the file, if any."""
    readme = os.path.join(os.path.dirname(path), "ReadMe.txt")
    try:
        with open(readme, encoding="utf-8") as f:
            for line in f:
                m = re.search(r"Version (\d+\.\d+\.\d+)", line)
                if m:
                    return "Unicode " + m.group(1)
    except OSError:
        pass
    return "unknown version"


def check(cat, path):
    """Compare cat with llama.cpp's unicode-data.cpp; exit non-zero on a difference."""
    with open(path, encoding="utf-8") as f:
        src = f.read()
    body = src[src.index("unicode_ranges_flags"):]
    body = body[:body.index("};")]
    starts = [(int(a, 16), int(b, 16)) for a, b in
              re.findall(r"\{0x([0-9A-Fa-f]+), 0x([0-9A-Fa-f]+)\}", body)]
    ws = src[src.index("unicode_set_whitespace"):]
    ws = {int(x, 16) for x in re.findall(r"0x([0-9A-Fa-f]+)", ws[:ws.index("};")])}
    bad = 0
    for (lo, flags), (hi, _) in zip(starts, starts[1:]):
        for cp in range(lo, min(hi, MAX_CP)):
            want = CAT_SPACE if cp in ws else LLAMA_FLAG_TO_CAT[flags & 0xFF]
            if cat[cp] != want:
                if bad < 10:
                    sys.stderr.write("U+%04X: ours %d, llama.cpp %d\n" % (cp, cat[cp], want))
                bad += 1
    if bad:
        sys.exit("gen-unicode-tables: %d code points differ from %s" % (bad, path))
    sys.stderr.write("gen-unicode-tables: every code point equals %s\n" % path)


def main():
    args = sys.argv[1:]
    check_path = None
    if len(args) >= 2 and args[0] == "--check":
        check_path = args[1]
        args = args[2:]
    path = args[0] if args else "/usr/share/unicode/UnicodeData.txt"
    ver = version(path)
    cat = read_categories(path, ver)
    if check_path:
        check(cat, check_path)
    rs = ranges(cat)
    counts = {c: sum(1 for r in rs if r[2] == c) for c in CAT_NAMES}
    w = sys.stdout.write
    w("/*\n")
    w(" * unicode_tables.c: GENERATED by scripts/gen-unicode-tables.py; do not edit.\n")
    w(" *\n")
    w(" * Source: %s (%s)%s.\n" % (os.path.basename(path), ver,
      " plus Unicode 15.1's additions" if ver.startswith("Unicode 15.0.") else ""))
    w(" * Code-point classes for the tokenizer's pre-tokenizers: letter (Lu Ll Lt\n")
    w(" * Lm Lo), number (Nd Nl No), whitespace (White_Space list of spec/model.md\n")
    w(" * section 7.1), punctuation (P*), mark (M*), symbol (S*).  Sorted,\n")
    w(" * disjoint [first, last] ranges; anything not listed is ENG_UCAT_OTHER.\n")
    w(" * Ranges: %d letter, %d number, %d whitespace, %d punctuation, %d mark,\n"
      % (counts[CAT_LETTER], counts[CAT_NUMBER], counts[CAT_SPACE], counts[CAT_PUNCT],
         counts[CAT_MARK]))
    w(" * %d symbol.\n" % counts[CAT_SYMBOL])
    w(" */\n")
    w('#include "engine/model/unicode.h"\n\n')
    w("const struct eng_ucd_range eng_ucd_ranges[] = {\n")
    for lo, hi, c in rs:
        w("\t{0x%06X, 0x%06X, %s},\n" % (lo, hi, CAT_NAMES[c]))
    w("};\n\n")
    w("const size_t eng_ucd_n_ranges = sizeof(eng_ucd_ranges) / sizeof(eng_ucd_ranges[0]);\n")


if __name__ == "__main__":
    main()
