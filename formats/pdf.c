/*
 * pdf.c: a PDF's text with poppler's glib API: every page's text in page
 * order, a blank line between pages.  Refused with a reason: a file
 * poppler cannot open (damaged, truncated), one encrypted with a password,
 * one with more than FMT_PDF_PAGES_MAX pages, one with no text layer at all
 * (scanned pages: images, which need OCR first), and, each saying what is
 * really wrong, one whose page tree poppler cannot read (a /Count of 2^31-1
 * reads as 0 pages) and one with neither text nor images poppler can read
 * (content damaged or nested deeper than poppler's parser goes): never
 * "scanned" unless a page holds an image.
 *
 * poppler prints what it repairs in a damaged file ("Syntax Error: ...")
 * on stderr; its glib API has no switch for that.
 */
#include <stdio.h>
#include <string.h>

#include <poppler.h>

#include "common/fail.h"
#include "formats/formats.h"

/* 1 if s holds anything but white space. */
static int
pdf_has_text(const char *s)
{
	for (; *s; s++)
		if (!strchr(" \t\r\n\f\v", *s))
			return 1;
	return 0;
}

/* The largest "/Count N" in the bytes as they are (a page tree's claim;
 * one inside a compressed object stream is not seen): -1 if none. */
static long long
pdf_claimed_pages(const char *p, size_t len)
{
	long long best = -1, v;
	const char *c, *e = p + len;
	while ((c = memmem(p, (size_t)(e - p), "/Count", 6))) {
		p = c + 6;
		while (p < e && (*p == ' ' || *p == '\r' || *p == '\n' || *p == '\t'))
			p++;
		for (v = 0; p < e && *p >= '0' && *p <= '9' && v < (1LL << 40); p++)
			v = v * 10 + (*p - '0');
		if (p > c + 6 && p[-1] >= '0' && p[-1] <= '9' && v > best)
			best = v;
	}
	return best;
}

/* 1 if any page of doc holds an image. */
static int
pdf_has_images(PopplerDocument *doc, int n)
{
	int i, any = 0;
	for (i = 0; i < n && !any; i++) {
		PopplerPage *pg = poppler_document_get_page(doc, i);
		GList *l;
		if (!pg)
			continue;
		if ((l = poppler_page_get_image_mapping(pg))) {
			any = 1;
			poppler_page_free_image_mapping(l);
		}
		g_object_unref(pg);
	}
	return any;
}

int
fmt_pdf(const void *p, size_t len, struct fmt_buf *out, int *pages, char *why, size_t why_len)
{
	PopplerDocument *doc;
	GBytes *bytes;
	GError *err = NULL;
	int n, i, rc = 0, any = 0;

	*pages = 0;
	bytes = g_bytes_new_static(p, len); /* no copy: p outlives the document */
	doc = poppler_document_new_from_bytes(bytes, NULL, &err);
	g_bytes_unref(bytes);
	if (!doc) {
		int enc = err && err->domain == POPPLER_ERROR && err->code == POPPLER_ERROR_ENCRYPTED;
		rc = kv_fail(why, why_len, FMT_ERR_UNSUPPORTED, enc ?
		    "is an encrypted PDF: it needs a password (save a decrypted copy, e.g. "
		    "`qpdf --decrypt --password=PW in.pdf out.pdf`)" :
		    "is a PDF that cannot be read (%s): damaged or truncated",
		    err && err->message ? err->message : "no details");
		g_clear_error(&err);
		return rc;
	}
	n = poppler_document_get_n_pages(doc);
	if (n <= 0) {
		long long claim = pdf_claimed_pages(p, len);
		g_object_unref(doc);
		if (claim > FMT_PDF_PAGES_MAX)
			return kv_fail(why, why_len, FMT_ERR_UNSUPPORTED, "is a PDF whose page tree "
			    "claims %lld pages, over the limit of %d, and poppler finds none it can "
			    "read: damaged", claim, FMT_PDF_PAGES_MAX);
		return kv_fail(why, why_len, FMT_ERR_UNSUPPORTED, "is a PDF whose page tree poppler "
		    "cannot read (no pages found): damaged or truncated");
	}
	if (n > FMT_PDF_PAGES_MAX) {
		g_object_unref(doc);
		return kv_fail(why, why_len, FMT_ERR_UNSUPPORTED,
		    "is a PDF of %d pages, over the limit of %d (split it)", n, FMT_PDF_PAGES_MAX);
	}
	for (i = 0; i < n && !out->err; i++) {
		PopplerPage *pg = poppler_document_get_page(doc, i);
		char *t;
		if (!pg)
			continue;
		if ((t = poppler_page_get_text(pg))) {
			if (pdf_has_text(t)) {
				any = 1;
				fmt_buf_break(out, 1);
				fmt_buf_put(out, t, strlen(t));
			}
			g_free(t);
		}
		g_object_unref(pg);
	}
	if (!any && !out->err && !pdf_has_images(doc, n)) {
		g_object_unref(doc);
		*pages = n;
		return kv_fail(why, why_len, FMT_ERR_UNSUPPORTED, "is a PDF of %d page%s with "
		    "neither text nor images poppler can read: its content is empty, damaged or "
		    "nested deeper than poppler's parser goes", n, n == 1 ? "" : "s");
	}
	g_object_unref(doc);
	*pages = n;
	if (out->err)
		return fmt_buf_fail(out, "a PDF", why, why_len);
	if (!any)
		return kv_fail(why, why_len, FMT_ERR_UNSUPPORTED, "is a PDF of %d page%s with no "
		    "text layer (scanned pages are images: make it searchable first, e.g. "
		    "`ocrmypdf in.pdf out.pdf`)", n, n == 1 ? "" : "s");
	return 0;
}
