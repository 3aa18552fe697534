/*
 * formats.c: fmt_extract, the one entry point: which format the bytes are
 * in, by content alone, and their text.
 *
 *   1. "%PDF-" at the start: a PDF (unless an encoding was named).
 *   2. The encoding: the one named; else a BOM's (UTF-8, UTF-16LE/BE,
 *      UTF-32LE/BE); else binary data is refused here (fmt_sniff_binary);
 *      else UTF-8 when the bytes are valid UTF-8; else an HTML page is left
 *      to libxml2 (its <meta charset>, else ISO-8859-1); else Windows-1252.
 *      Decoded text is checked for binary content again (NULs, controls).
 *   3. The text's format: HTML by its start, Markdown by its structure,
 *      else plain text, which is kept byte for byte (a BOM dropped): the
 *      doc_id of a UTF-8 text file is the hash of its bytes, as before.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/parser.h>

#include "common/fail.h"
#include "formats/formats.h"

static const char *const fx_kinds[] = {
	[FMT_TEXT] = "text",
	[FMT_MARKDOWN] = "markdown",
	[FMT_HTML] = "html",
	[FMT_PDF] = "pdf",
};

const char *
fmt_kind_name(enum fmt_kind k)
{
	return (size_t)k < sizeof(fx_kinds) / sizeof(fx_kinds[0]) ? fx_kinds[k] : "?";
}

static pthread_once_t fx_once = PTHREAD_ONCE_INIT;

static void
fx_init_once(void)
{
	xmlInitParser(); /* libxml2's globals, once, before threads parse */
}

void
fmt_init(void)
{
	pthread_once(&fx_once, fx_init_once);
}

void
fmt_doc_free(struct fmt_doc *d)
{
	free(d->text);
	d->text = NULL;
	d->len = 0;
}

#define FX_KINDS "kvsnap reads PDF, HTML, Markdown and plain text"

/* A library's output made safe: invalid UTF-8 bytes as '?', NULs dropped
 * (in place: never longer). */
static void
fx_clean(struct fmt_buf *b)
{
	size_t i = 0, o = 0;
	while (i < b->len) {
		unsigned char c = (unsigned char)b->p[i];
		size_t n = c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 :
		    c >= 0xf0 && c <= 0xf4 ? 4 : 0;
		if (c == 0) {
			i++;
			continue;
		}
		if (n && i + n <= b->len && fmt_utf8_valid(b->p + i, n)) {
			memmove(b->p + o, b->p + i, n);
			o += n;
			i += n;
			continue;
		}
		b->p[o++] = '?';
		i++;
	}
	b->len = o;
}

/* UTF-16 without a BOM: in its first 4 KiB, a NUL in every other byte
 * (the high byte of ASCII) and none in the others.  Only a hint: such text
 * is refused, with the --encoding that reads it. */
static const char *
fx_utf16_guess(const unsigned char *p, size_t len)
{
	size_t i, z[2] = { 0, 0 }, n = len < 4096 ? len & ~(size_t)1 : 4096;
	for (i = 0; i < n; i++)
		z[i & 1] += p[i] == 0;
	if (n >= 8 && z[1] * 10 >= n * 4 && z[0] == 0)
		return "UTF-16LE";
	if (n >= 8 && z[0] * 10 >= n * 4 && z[1] == 0)
		return "UTF-16BE";
	return NULL;
}

/* 1 if s holds anything but white space. */
static int
fx_has_text(const char *s, size_t n)
{
	size_t i;
	for (i = 0; i < n; i++)
		if (!strchr(" \t\r\n\f\v", s[i]))
			return 1;
	return 0;
}

/* Plain text kept as it is (no trimming: the doc_id of a UTF-8 file is
 * its bytes' hash), from the decoded buffer when there is one. */
static int
fx_plain(const char *t, size_t tl, struct fmt_buf *dec, struct fmt_buf *res, char *why,
    size_t why_len)
{
	if (!fx_has_text(t, tl))
		return kv_fail(why, why_len, FMT_ERR_UNSUPPORTED, "has no text (only white space)");
	if (tl > res->max)
		return kv_fail(why, why_len, FMT_ERR_TOO_LARGE, "is over %zu bytes as UTF-8 text",
		    res->max);
	if (t == dec->p) { /* decoded: take the buffer over */
		free(res->p);
		*res = *dec;
		memset(dec, 0, sizeof(*dec));
	} else {
		fmt_buf_put(res, t, tl);
	}
	if (res->err || (!res->p && !(res->p = malloc(1))))
		return kv_fail(why, why_len, FMT_ERR_NOMEM, "out of memory");
	res->p[res->len] = '\0'; /* put keeps room for it */
	return 0;
}

/* An extractor's output made final: safe UTF-8, trimmed, not empty. */
static int
fx_finish(struct fmt_buf *res, enum fmt_kind kind, char *why, size_t why_len)
{
	int rc;
	fx_clean(res);
	if ((rc = fmt_buf_finish(res)))
		return kv_fail(why, why_len, rc, rc == FMT_ERR_NOMEM ? "out of memory" :
		    "is over %zu bytes as text", res->max);
	if (!res->len)
		return kv_fail(why, why_len, FMT_ERR_UNSUPPORTED, "is %s with no text in it",
		    kind == FMT_HTML ? "an HTML page" : kind == FMT_MARKDOWN ? "Markdown" : "a PDF");
	return 0;
}

/* The format's name, and the text handed over to out. */
static void
fx_done(struct fmt_doc *out, struct fmt_buf *res)
{
	if (out->kind == FMT_PDF)
		snprintf(out->name, sizeof(out->name), "pdf (%d page%s)", out->pages,
		    out->pages == 1 ? "" : "s");
	else if (out->encoding[0] && strcmp(out->encoding, "UTF-8"))
		snprintf(out->name, sizeof(out->name), "%s (%.32s)", fmt_kind_name(out->kind),
		    out->encoding);
	else
		snprintf(out->name, sizeof(out->name), "%s", fmt_kind_name(out->kind));
	out->text = res->p;
	out->len = res->len;
	res->p = NULL;
}

int
fmt_extract(const void *bytes, size_t len, const char *encoding, size_t max,
    struct fmt_doc *out, char *why, size_t why_len)
{
	const unsigned char *p = bytes;
	struct fmt_buf dec, res;
	const char *t = bytes, *enc = NULL, *what, *html_enc = "UTF-8";
	size_t tl = len, bom;
	int rc = 0, sniffed = 0;

	memset(out, 0, sizeof(*out));
	memset(&dec, 0, sizeof(dec));
	memset(&res, 0, sizeof(res));
	res.max = max;
	fmt_init();
	if (len == 0)
		return kv_fail(why, why_len, FMT_ERR_UNSUPPORTED, "is empty");
	if (encoding && encoding[0] && strlen(encoding) > FMT_ENCODING_MAX)
		return kv_fail(why, why_len, FMT_ERR_ENCODING, "the encoding's name is over %d bytes",
		    FMT_ENCODING_MAX);

	/* 1. PDF */
	if (!(encoding && encoding[0]) && len >= 5 && !memcmp(p, "%PDF-", 5)) {
		out->kind = FMT_PDF;
		if (!(rc = fmt_pdf(bytes, len, &res, &out->pages, why, why_len)) &&
		    !(rc = fx_finish(&res, out->kind, why, why_len)))
			fx_done(out, &res);
		goto out;
	}

	/* 2. the encoding */
	if (encoding && encoding[0])
		enc = encoding;
	else if ((enc = fmt_sniff_bom(p, len, &bom))) {
		t += bom;
		tl -= bom;
		if (!strcmp(enc, "UTF-8") && !fmt_utf8_valid(t, tl)) {
			rc = kv_fail(why, why_len, FMT_ERR_UNSUPPORTED, "starts with a UTF-8 byte order "
			    "mark but is not valid UTF-8 (name its encoding with --encoding)");
			goto out;
		}
	} else if (sniffed = 1, (what = fmt_sniff_binary(p, len))) {
		const char *u16 = fx_utf16_guess(p, len);
		if (u16)
			rc = kv_fail(why, why_len, FMT_ERR_UNSUPPORTED, "looks like %s text without a "
			    "byte order mark: name its encoding with --encoding %s", u16, u16);
		else
			rc = kv_fail(why, why_len, FMT_ERR_UNSUPPORTED, "looks like binary data (%s), "
			    "not a document: " FX_KINDS, what);
		goto out;
	} else if (fmt_utf8_valid(t, tl)) {
		enc = "UTF-8";
	} else if (fmt_sniff_html(t, tl)) {
		html_enc = NULL; /* libxml2 reads its <meta charset> */
		enc = "";
	} else {
		enc = "WINDOWS-1252";
	}
	/* a named encoding always through iconv: a named UTF-8 is checked too */
	if ((encoding && encoding[0]) || (enc[0] && strcmp(enc, "UTF-8"))) {
		if ((rc = fmt_decode(t, tl, enc, max, &dec, why, why_len)))
			goto out;
		t = dec.p ? dec.p : "";
		tl = dec.len;
		if (!fmt_utf8_valid(t, tl)) { /* iconv writes UTF-8: a bug if not */
			rc = kv_fail(why, why_len, FMT_ERR_UNSUPPORTED, "does not decode from %s to "
			    "valid UTF-8", enc);
			goto out;
		}
	}
	/* what a BOM or a name said is checked as text too (NULs, controls) */
	if (!sniffed && (what = fmt_sniff_binary((const unsigned char *)t, tl))) {
		rc = kv_fail(why, why_len, FMT_ERR_UNSUPPORTED, "read as %s, holds %s: binary data, "
		    "not a document (name its encoding with --encoding if that is not %s)", enc,
		    what, enc);
		goto out;
	}
	snprintf(out->encoding, sizeof(out->encoding), "%s", enc);

	/* 3. the text's format */
	if (fmt_sniff_html(t, tl)) {
		out->kind = FMT_HTML;
		rc = fmt_html(t, tl, html_enc, &res, why, why_len);
	} else if (fmt_sniff_markdown(t, tl)) {
		out->kind = FMT_MARKDOWN;
		rc = fmt_markdown(t, tl, &res, why, why_len);
	} else {
		out->kind = FMT_TEXT;
		rc = fx_plain(t, tl, &dec, &res, why, why_len);
	}
	if (!rc && out->kind != FMT_TEXT)
		rc = fx_finish(&res, out->kind, why, why_len);
	if (!rc)
		fx_done(out, &res);
out:
	free(res.p);
	free(dec.p);
	return rc;
}
