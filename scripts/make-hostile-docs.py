#!/usr/bin/env python3
"""make-hostile-docs.py OUTDIR [SCALE]: hostile documents for the parser
budgets (issue 26, defects 7, 8, 13), generated at test time and never
committed (tests/sh/formats_hostile.sh).
make-hostile-docs.py --seeds DIR: small variants (under the fuzzer's 64 KiB
-max_len) as seeds for fuzz_formats (tests/run.sh writes them into its
working corpus).

  pdf-bomb.pdf       a Flate bomb: one small page whose content stream
                     inflates to ~SCALE*200 MB of text-showing operators
  pdf-pages.pdf      a page tree whose /Count says 2^31-1
  pdf-deep.pdf       a content stream nested 100000 arrays deep, then text
  pdf-slow.pdf       a page that takes seconds to read (~SCALE*40M operators)
  html-attrs.html    one element with SCALE*100000 attributes
  html-elements.html SCALE*3M elements (`<p>x`, 4 bytes each)
  html-deep.html     elements nested 100000 deep, with text inside and after
  md-deep.md         Markdown: block quotes nested 100000 deep, then text
  ok.pdf, ok.html    small honest documents (their text must be read)

SCALE (default 1) multiplies the bombs' sizes; the test uses the default.
Plain Python 3, no packages: PDFs are written by hand (xref offsets
computed), streams compressed with zlib.
"""
import os
import sys
import zlib


def pdf(objects):
    """A PDF from object bodies (bytes, numbered from 1; 1 is the catalog)."""
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offs = []
    for i, body in enumerate(objects, 1):
        offs.append(len(out))
        out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for o in offs:
        out += b"%010d 00000 n \n" % o
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1, xref)
    return bytes(out)


def stream(data, flate=True):
    if flate:
        z = zlib.compressobj(9)
        packed = b"".join(z.compress(c) for c in data) + z.flush()
        return b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(packed) + packed + \
            b"\nendstream"
    data = b"".join(data)
    return b"<< /Length %d >>\nstream\n" % len(data) + data + b"\nendstream"


def one_page(content, count=1, flate=True):
    return pdf([
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count %d >>" % count,
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
        b"/Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>",
        stream(content, flate),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ])


def chunks(piece, total, size=1 << 20):
    """piece repeated to about total bytes, in chunks of about size."""
    per = max(1, size // len(piece))
    n = max(1, total // len(piece))
    while n > 0:
        k = min(per, n)
        yield piece * k
        n -= k


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def seeds(out):
    os.makedirs(out, exist_ok=True)
    text = b"BT /F1 12 Tf 72 700 Td (Hostile) Tj ET\n"
    write(os.path.join(out, "hostile-pdf-pages.pdf"), one_page([text], count=2**31 - 1))
    write(os.path.join(out, "hostile-pdf-deep.pdf"), one_page([b"[" * 20000, b"\n", text]))
    write(os.path.join(out, "hostile-pdf-array.pdf"),
          one_page([b"BT ["] + list(chunks(b"0 ", 2000000)) + [b"] TJ ET\n"]))
    write(os.path.join(out, "hostile-html-attrs.html"),
          b"<html><body><p " + b" ".join(b"a%d=1" % i for i in range(1001)) + b">x</p>")
    write(os.path.join(out, "hostile-html-deep.html"),
          b"<html><body>" + b"<div>" * 300 + b"deep" + b"</div>" * 300 + b"<p>after</p>")
    write(os.path.join(out, "hostile-md-deep.md"), b"# Deep\n\n" + b">" * 30000 + b" *q*\n")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    if sys.argv[1] == "--seeds" and len(sys.argv) == 3:
        seeds(sys.argv[2])
        return
    out = sys.argv[1]
    scale = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
    os.makedirs(out, exist_ok=True)
    text = b"BT /F1 12 Tf 72 700 Td (Hostile documents say what is wrong.) Tj ET\n"

    # 7: one array operand of ~SCALE*100M numbers (200 MB inflated): poppler
    # builds it whole, an object per number, before the operator sees it
    body = [b"BT /F1 12 Tf 72 700 Td ["] + list(chunks(b"0 ", int(scale * 200e6))) + \
        [b"] TJ ET\n"]
    write(os.path.join(out, "pdf-bomb.pdf"), one_page(body))
    # 13: a page tree that claims 2^31-1 pages
    write(os.path.join(out, "pdf-pages.pdf"), one_page([text], count=2**31 - 1))
    # 13: text after arrays nested deeper than poppler's parser goes
    write(os.path.join(out, "pdf-deep.pdf"), one_page([b"[" * 100000, b"\n", text]))
    # slow, within every budget: ~SCALE*40M path operators text extraction
    # skips one by one (seconds of CPU, little memory), then text
    write(os.path.join(out, "pdf-slow.pdf"),
          one_page(list(chunks(b"0 0 m\n", int(scale * 240e6))) + [text]))
    write(os.path.join(out, "ok.pdf"), one_page([text]))

    # 8: one element, many attributes (libxml2 checks duplicates in
    # quadratic time)
    n = int(scale * 100000)
    write(os.path.join(out, "html-attrs.html"),
          b"<!DOCTYPE html><html><body><p " +
          b" ".join(b"a%d=1" % i for i in range(n)) + b">attributes</p></body></html>\n")
    # 8: many elements: each a node of libxml2's tree
    write(os.path.join(out, "html-elements.html"),
          b"<!DOCTYPE html><html><body>" + b"<p>x" * int(scale * 3000000) + b"</body></html>\n")
    # 13: nested 100000 deep, text inside and after (1M deep is also over
    # the elements limit)
    d = 100000
    write(os.path.join(out, "html-deep.html"),
          b"<!DOCTYPE html><html><body>" + b"<div>" * d + b"deep text" + b"</div>" * d +
          b"<p>The text after the nesting.</p></body></html>\n")
    write(os.path.join(out, "ok.html"),
          b"<!DOCTYPE html><html><head><title>Fine</title></head><body>"
          b"<p class=a id=b>An honest page.</p></body></html>\n")
    # Markdown: quotes nested deep, then text
    write(os.path.join(out, "md-deep.md"),
          b"# Deep\n\n" + b">" * 100000 + b" quoted\n\nThe *text* after the quotes.\n")


if __name__ == "__main__":
    main()
