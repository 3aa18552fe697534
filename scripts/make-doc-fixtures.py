#!/usr/bin/env python3
"""Write the document fixtures of the formats tests (tests/fixtures/docs/)
and the seed corpus of fuzz_formats (tests/fuzz/corpus/formats/) from one
source text: a two-page PDF written by hand (Helvetica text streams, an
exact xref table), an HTML page (with a script and a style that must not
reach the text), a Markdown file, the text in UTF-16LE with a BOM and in
Windows-1252, a PDF without a text layer (a scanned page: an image only),
an encrypted PDF and a truncated one.  Deterministic: rerunning rewrites the
same bytes.  usage: scripts/make-doc-fixtures.py"""
import os
import zlib

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
DOCS = os.path.join(ROOT, "tests", "fixtures", "docs")
SEEDS = os.path.join(ROOT, "tests", "fuzz", "corpus", "formats")

TITLE = "The Voyage of the Marigold Finch"
# (heading, paragraph) pairs; the facts the tests ask about are marked in
# tests/sh/formats.sh and tests/test_formats.c
SECTIONS = [
    ("The ship",
     "The ship was named the Marigold Finch. She was a three-masted schooner "
     "built in 1881 at the shipyard of Tobias Lund. Her hull was painted green."),
    ("The captain",
     "The captain of the Marigold Finch was Ada Quillon. Captain Quillon had "
     "sailed for twenty years before she took command."),
    ("The voyage",
     "The Marigold Finch sailed from the port of Valparaiso carrying a cargo of "
     "copper. The voyage to Lisbon took ninety-four days."),
    ("The cat",
     "The ship's cat was called Pepper. Pepper slept in the captain's cabin and "
     "caught the rats in the hold."),
]


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def pdf(pages, encrypt=False, image_only=False):
    """A PDF of len(pages) pages; each page a list of text lines set in
    Helvetica 12 pt (or, image_only, a grey 8x8 image and no text)."""
    objs = []  # bodies; object i+1 is objs[i]

    def add(body):
        objs.append(body)
        return len(objs)

    catalog = add(None)
    pages_id = add(None)
    font = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica "
               b"/Encoding /WinAnsiEncoding >>")
    kids = []
    for lines in pages:
        if image_only:
            raw = bytes(range(0, 256, 4))  # 8x8 grey
            img = add(b"<< /Type /XObject /Subtype /Image /Width 8 /Height 8 "
                      b"/ColorSpace /DeviceGray /BitsPerComponent 8 /Length %d >>\nstream\n"
                      % len(raw) + raw + b"\nendstream")
            content = b"q 400 0 0 400 100 300 cm /Im1 Do Q"
            res = b"<< /XObject << /Im1 %d 0 R >> >>" % img
        else:
            ops = [b"BT /F1 12 Tf 16 TL 72 740 Td"]
            for ln in lines:
                esc = ln.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
                ops.append(b"(" + esc.encode("cp1252") + b") Tj T*")
            ops.append(b"ET")
            content = b"\n".join(ops)
            res = b"<< /Font << /F1 %d 0 R >> >>" % font
        z = zlib.compress(content, 9)
        stream = add(b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(z) + z +
                     b"\nendstream")
        kids.append(add(b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] "
                        b"/Resources %s /Contents %d 0 R >>" % (pages_id, res, stream)))
    objs[catalog - 1] = b"<< /Type /Catalog /Pages %d 0 R >>" % pages_id
    objs[pages_id - 1] = (b"<< /Type /Pages /Kids [" +
                          b" ".join(b"%d 0 R" % k for k in kids) +
                          b"] /Count %d >>" % len(kids))
    trailer_extra = b""
    if encrypt:
        # the standard security handler, RC4 40-bit, with a user password
        # that is not empty: no reader opens it without the password
        enc = add(b"<< /Filter /Standard /V 1 /R 2 /O <" + b"11" * 32 + b"> /U <" +
                  b"22" * 32 + b"> /P -4 >>")
        trailer_extra = b" /Encrypt %d 0 R /ID [<%s> <%s>]" % (enc, b"ab" * 16, b"ab" * 16)
    out = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n"
    offs = []
    for i, body in enumerate(objs):
        offs.append(len(out))
        out += b"%d 0 obj\n" % (i + 1) + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    for o in offs:
        out += b"%010d 00000 n \n" % o
    out += (b"trailer\n<< /Size %d /Root %d 0 R%s >>\nstartxref\n%d\n%%%%EOF\n"
            % (len(objs) + 1, catalog, trailer_extra, xref))
    return out


def wrap(text, width=80):
    lines, cur = [], ""
    for w in text.split():
        if cur and len(cur) + 1 + len(w) > width:
            lines.append(cur)
            cur = w
        else:
            cur = (cur + " " + w).strip()
    if cur:
        lines.append(cur)
    return lines


def main():
    # the PDF: title and the first two sections on page 1, the rest on page 2
    p1 = [TITLE, ""]
    p2 = []
    for i, (h, para) in enumerate(SECTIONS):
        page = p1 if i < 2 else p2
        page += [h, *wrap(para), ""]
    write(os.path.join(DOCS, "ship.pdf"), pdf([p1, p2]))
    write(os.path.join(DOCS, "scanned.pdf"), pdf([[]], image_only=True))
    write(os.path.join(DOCS, "encrypted.pdf"), pdf([["secret"]], encrypt=True))
    full = pdf([p1, p2])
    write(os.path.join(DOCS, "truncated.pdf"), full[:len(full) // 3])

    body = "".join("<h2>%s</h2>\n<p>%s</p>\n" % (h, p) for h, p in SECTIONS)
    html = ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<title>%s</title>\n<style>body { color: #123456; }</style>\n"
            "<script>var hidden = \"SCRIPTMARKER\";</script>\n</head>\n<body>\n"
            "<nav><a href=\"#top\">Top</a></nav>\n<h1>%s</h1>\n%s"
            "<ul><li>schooner</li><li>copper</li></ul>\n</body>\n</html>\n"
            % (TITLE, TITLE, body))
    write(os.path.join(DOCS, "ship.html"), html.encode())

    md = "# %s\n\n" % TITLE + "".join(
        "## %s\n\n%s\n\n" % (h, p.replace("Marigold Finch", "**Marigold Finch**", 1))
        for h, p in SECTIONS)
    md += "- a [chart](https://example.org/chart.png) of the route\n- the `log` book\n"
    write(os.path.join(DOCS, "ship.md"), md.encode())

    plain = TITLE + "\n\n" + "".join("%s\n\n" % p for _, p in SECTIONS)
    write(os.path.join(DOCS, "ship-utf16.txt"), b"\xff\xfe" + plain.replace(
        "Valparaiso", "Valparaíso").encode("utf-16-le"))
    write(os.path.join(DOCS, "ship-cp1252.txt"), plain.replace(
        "Valparaiso", "Valparaíso").replace("Pepper.", "Pepper \u2013 a tabby.").encode("cp1252"))

    # the fuzz seeds: each format, small
    write(os.path.join(SEEDS, "ship.pdf"), pdf([["The ship was named the Marigold Finch."]]))
    # (the HTML seed, the fixture's first 600 bytes, tests/run.sh cuts)
    write(os.path.join(SEEDS, "ship.md"), md.encode()[:400])
    write(os.path.join(SEEDS, "utf16.txt"), b"\xff\xfe" + "Pepper the cat.\n".encode("utf-16-le"))
    write(os.path.join(SEEDS, "latin1.txt"), "Valparaíso, caf\xe9\n".encode("latin-1"))
    write(os.path.join(SEEDS, "binary.elf"), b"\x7fELF\x02\x01\x01" + bytes(57))
    write(os.path.join(SEEDS, "encrypted.pdf"), pdf([["x"]], encrypt=True))


if __name__ == "__main__":
    main()
