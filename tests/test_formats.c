/*
 * test_formats.c: formats/ against the committed fixtures
 * (tests/fixtures/docs/, written by scripts/make-doc-fixtures.py) and
 * bytes made here: each format detected by its content, the extracted
 * text holding the document's facts and none of its markup, scripts or
 * styles; UTF-16/32 with a BOM, Windows-1252 and a named encoding decoded;
 * binaries refused naming what they look like; a scanned, an encrypted, a
 * truncated and randomly damaged PDFs refused cleanly; plain prose kept as
 * text (Markdown detection is conservative) byte for byte; the output
 * bounded; several threads at once.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/formats.h"
#include "tests/helpers.h"
#include "tests/tap.h"

#define DOCS "tests/fixtures/docs/"
#define MAX ((size_t)1 << 20)

static char g_why[512];

/* A whole fixture (malloc'd), or NULL. */
static char *
slurp(const char *name, size_t *len)
{
	char path[256];
	snprintf(path, sizeof(path), DOCS "%s", name);
	return kv_slurp(path, 0, len);
}

/* Extract a fixture; rc returned, *d filled on success. */
static int
extract_file(const char *name, const char *enc, struct fmt_doc *d)
{
	size_t len;
	char *buf = slurp(name, &len);
	int rc;
	if (!buf) {
		snprintf(g_why, sizeof(g_why), "cannot read " DOCS "%s (make-doc-fixtures.py)", name);
		return -1;
	}
	rc = fmt_extract(buf, len, enc, MAX, d, g_why, sizeof(g_why));
	free(buf);
	return rc;
}

static int
has(const struct fmt_doc *d, const char *s)
{
	return d->text && strstr(d->text, s) != NULL;
}

/* The facts every rendering of the fixture holds: among them the two that
 * tests/sh/formats.sh and the demo ask the model about (the ship's name and
 * its port; "Valpara": the UTF-16 and cp1252 fixtures spell it
 * Valparaíso).  What the model answers is a near-tie that moves with the
 * BLAS kernel, so the facts are checked here, in the extracted text. */
static int
facts(const struct fmt_doc *d)
{
	return has(d, "The ship was named the Marigold Finch.") &&
	    has(d, "The captain of the Marigold Finch was Ada Quillon.") &&
	    has(d, "sailed from the port of Valpara") &&
	    has(d, "The ship's cat was called Pepper.") && has(d, "ninety-four days") &&
	    strlen(d->text) == d->len;
}

static enum tap_result
t_pdf(void)
{
	struct fmt_doc d;
	int rc = extract_file("ship.pdf", NULL, &d);
	TAP_CHECK(rc == 0, "rc %d: %s", rc, g_why);
	TAP_CHECK(d.kind == FMT_PDF && d.pages == 2 && !strcmp(d.name, "pdf (2 pages)"),
	    "kind %d, %d pages, '%s'", d.kind, d.pages, d.name);
	TAP_CHECK(facts(&d), "facts missing:\n%s", d.text);
	TAP_CHECK(!has(&d, " Tj") && !has(&d, "Helvetica") && !has(&d, "endobj"),
	    "PDF syntax in the text");
	TAP_CHECK(!strncmp(d.text, "The Voyage of the Marigold Finch\n", 33), "starts: %.40s",
	    d.text);
	fmt_doc_free(&d);
	return TAP_PASS;
}

static enum tap_result
t_pdf_refused(void)
{
	static const struct {
		const char *file, *says;
	} bad[] = {
		{ "scanned.pdf", "no text layer" },
		{ "encrypted.pdf", "encrypted PDF" },
		{ "truncated.pdf", "cannot be read" },
	};
	struct fmt_doc d;
	size_t i;
	int rc;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		rc = extract_file(bad[i].file, NULL, &d);
		TAP_CHECK(rc == FMT_ERR_UNSUPPORTED && strstr(g_why, bad[i].says) && !d.text,
		    "%s: rc %d: %s", bad[i].file, rc, g_why);
		tap_diag("%s %s", bad[i].file, g_why);
	}
	return TAP_PASS;
}

/* Every cut of the PDF and random byte damage: refused or read, never a
 * crash (ASan in the SAN build), valid text when read. */
static enum tap_result
t_pdf_damaged(void)
{
	struct fmt_doc d;
	size_t len, cut, i;
	char *pdf = slurp("ship.pdf", &len), *buf;
	uint64_t x = 88172645463325252ull;
	int k, rc, n_ok = 0, n_bad = 0;

	TAP_CHECK(pdf && (buf = malloc(len)), "fixture");
	for (cut = 5; cut < len; cut += len / 40) {
		rc = fmt_extract(pdf, cut, NULL, MAX, &d, g_why, sizeof(g_why));
		TAP_CHECK(rc == 0 || rc == FMT_ERR_UNSUPPORTED, "cut %zu: rc %d", cut, rc);
		if (!rc)
			TAP_CHECK(fmt_utf8_valid(d.text, d.len), "cut %zu: not UTF-8", cut);
		fmt_doc_free(&d);
	}
	for (k = 0; k < 200; k++) {
		memcpy(buf, pdf, len);
		for (i = 0; i < 1 + (size_t)k % 8; i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			buf[5 + x % (len - 5)] = (char)(x >> 32);
		}
		rc = fmt_extract(buf, len, NULL, MAX, &d, g_why, sizeof(g_why));
		TAP_CHECK(rc == 0 || rc == FMT_ERR_UNSUPPORTED, "variant %d: rc %d", k, rc);
		if (!rc) {
			TAP_CHECK(d.kind == FMT_PDF && fmt_utf8_valid(d.text, d.len) &&
			    strlen(d.text) == d.len, "variant %d: text", k);
			n_ok++;
		} else {
			n_bad++;
		}
		fmt_doc_free(&d);
	}
	tap_diag("200 damaged PDFs: %d read, %d refused", n_ok, n_bad);
	free(buf);
	free(pdf);
	return TAP_PASS;
}

static enum tap_result
t_html(void)
{
	struct fmt_doc d;
	int rc = extract_file("ship.html", NULL, &d);
	TAP_CHECK(rc == 0, "rc %d: %s", rc, g_why);
	TAP_CHECK(d.kind == FMT_HTML && !strcmp(d.name, "html"), "kind %d '%s'", d.kind, d.name);
	TAP_CHECK(facts(&d), "facts missing:\n%s", d.text);
	TAP_CHECK(!strncmp(d.text, "The Voyage of the Marigold Finch\n\n", 34), "title first: %.40s",
	    d.text);
	TAP_CHECK(!has(&d, "SCRIPTMARKER") && !has(&d, "#123456") && !has(&d, "<") &&
	    !has(&d, "href"), "script, style or markup in the text:\n%s", d.text);
	TAP_CHECK(has(&d, "\nThe ship\n\nThe ship was named") && has(&d, "schooner\ncopper"),
	    "blocks as lines:\n%s", d.text);
	fmt_doc_free(&d);
	return TAP_PASS;
}

/* HTML in other encodings: its <meta charset> when not UTF-8, a BOM's. */
static enum tap_result
t_html_charset(void)
{
	static const char latin[] = "<html><head><meta charset=\"iso-8859-1\"><title>Caf\xe9"
	    "</title></head><body><p>cr\xe8me br\xfbl\xe9" "e</p></body></html>";
	static const char u16[] = "\xff\xfe<\0p\0>\0\xe9\0t\0\xe9\0<\0/\0p\0>\0";
	struct fmt_doc d;
	int rc = fmt_extract(latin, sizeof(latin) - 1, NULL, MAX, &d, g_why, sizeof(g_why));
	TAP_CHECK(rc == 0 && d.kind == FMT_HTML && !strcmp(d.name, "html") &&
	    !strcmp(d.text, "Caf\xc3\xa9\n\ncr\xc3\xa8me br\xc3\xbbl\xc3\xa9" "e"), "rc %d %s '%s'", rc,
	    g_why, d.text ? d.text : "");
	fmt_doc_free(&d);
	rc = fmt_extract(u16, sizeof(u16) - 1, NULL, MAX, &d, g_why, sizeof(g_why));
	TAP_CHECK(rc == 0 && d.kind == FMT_HTML && !strcmp(d.name, "html (UTF-16LE)") &&
	    !strcmp(d.text, "\xc3\xa9t\xc3\xa9"), "rc %d %s '%s' '%s'", rc, g_why,
	    d.text ? d.text : "", d.name);
	fmt_doc_free(&d);
	return TAP_PASS;
}

/* HTML by its start, whatever follows; not by a '<' somewhere. */
static enum tap_result
t_html_sniff(void)
{
	static const char *const yes[] = {
		"<!DOCTYPE html><p>x", "  \n<html><body>x", "\xef\xbb\xbf<p>hi</p>", "<P CLASS=a>x",
		"<?xml version=\"1.0\"?>\n<html xmlns=\"http://www.w3.org/1999/xhtml\">",
		"<!-- a comment --><div>x</div>", "<title>t</title>",
	};
	static const char *const no[] = {
		"a < b and c > d", "<pretty>", "<ul", "x<html>", "<?xml version=\"1.0\"?><svg/>", "",
	};
	size_t i;
	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		TAP_CHECK(fmt_sniff_html(yes[i], strlen(yes[i])), "not HTML: %s", yes[i]);
	for (i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		TAP_CHECK(!fmt_sniff_html(no[i], strlen(no[i])), "HTML: %s", no[i]);
	return TAP_PASS;
}

static enum tap_result
t_markdown(void)
{
	struct fmt_doc d;
	int rc = extract_file("ship.md", NULL, &d);
	TAP_CHECK(rc == 0, "rc %d: %s", rc, g_why);
	TAP_CHECK(d.kind == FMT_MARKDOWN && !strcmp(d.name, "markdown"), "kind %d '%s'", d.kind,
	    d.name);
	TAP_CHECK(facts(&d), "facts missing:\n%s", d.text);
	TAP_CHECK(!has(&d, "**") && !has(&d, "#") && !has(&d, "](") && !has(&d, "example.org") &&
	    !has(&d, "`"), "markup in the text:\n%s", d.text);
	TAP_CHECK(has(&d, "\n- a chart of the route\n- the log book"), "list items:\n%s", d.text);
	fmt_doc_free(&d);
	return TAP_PASS;
}

/* Markdown needs a link, a fence, or two kinds of markers one of which is
 * a heading, emphasis or code: prose with a list, quotes, an underlined
 * title or a "#" line stays text, kept as it is; so do Debian's licenses. */
static enum tap_result
t_markdown_sniff(void)
{
	static const char *const yes[] = {
		"# Title\n\nSome **bold** text.\n", "See [the docs](https://x.org/a) for more.\n",
		"Intro\n\n```\ncode\n```\n", "Title\n=====\n\nSome `code` here.\n",
		"> quoted **text**\n\n1. first\n2. second\n",
	};
	static const char *const no[] = {
		"Dear Ann,\n\nThe meeting is at 10. Bring the notes.\n",
		"Shopping:\n- milk\n- bread\n", "# not a heading in a config file\nkey = value\n",
		"a * b * c = d\n", "see [1] and (2)\n", "2 + 2 = 4\n3 * 3 = 9\n",
		"1. Definitions\n--------------\n\n> quoted\n- a\n- b\n",
		"Build\n-----\n\n # apt-get install x\n $ make\n",
	};
	static const char *const lic[] = { "GPL-3", "GPL-2", "LGPL-2.1", "Apache-2.0", "MPL-2.0",
		"Artistic", "BSD", "GFDL-1.3" };
	static char big[200000];
	struct fmt_doc d;
	size_t i;
	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		TAP_CHECK(fmt_sniff_markdown(yes[i], strlen(yes[i])), "not Markdown: %s", yes[i]);
	for (i = 0; i < sizeof(lic) / sizeof(lic[0]); i++) {
		char path[128];
		FILE *f;
		size_t n;
		snprintf(path, sizeof(path), "/usr/share/common-licenses/%s", lic[i]);
		if (!(f = fopen(path, "rb")))
			continue;
		n = fread(big, 1, sizeof(big), f);
		fclose(f);
		TAP_CHECK(!fmt_sniff_markdown(big, n), "%s reads as Markdown", path);
	}
	for (i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
		TAP_CHECK(!fmt_sniff_markdown(no[i], strlen(no[i])), "Markdown: %s", no[i]);
		TAP_CHECK(fmt_extract(no[i], strlen(no[i]), NULL, MAX, &d, g_why, sizeof(g_why)) == 0 &&
		    d.kind == FMT_TEXT && !strcmp(d.name, "text") && d.len == strlen(no[i]) &&
		    !memcmp(d.text, no[i], d.len), "not kept byte for byte: %s", no[i]);
		fmt_doc_free(&d);
	}
	return TAP_PASS;
}

/* UTF-8 text is kept byte for byte (its doc_id is its bytes' hash, as
 * before formats), less a BOM. */
static enum tap_result
t_text_utf8(void)
{
	const char *t = "Caf\xc3\xa9 au lait \xe2\x80\x94 2 \xe2\x82\xac.\r\n\n\n  ";
	char bom[64];
	struct fmt_doc d;
	TAP_CHECK(fmt_extract(t, strlen(t), NULL, MAX, &d, g_why, sizeof(g_why)) == 0, "%s", g_why);
	TAP_CHECK(d.kind == FMT_TEXT && !strcmp(d.name, "text") && d.len == strlen(t) &&
	    !memcmp(d.text, t, d.len), "'%s' %zu bytes", d.name, d.len);
	fmt_doc_free(&d);
	snprintf(bom, sizeof(bom), "\xef\xbb\xbf%s", t);
	TAP_CHECK(fmt_extract(bom, strlen(bom), NULL, MAX, &d, g_why, sizeof(g_why)) == 0, "%s",
	    g_why);
	TAP_CHECK(d.len == strlen(t) && !memcmp(d.text, t, d.len), "BOM not dropped");
	fmt_doc_free(&d);
	TAP_CHECK(fmt_utf8_valid(t, strlen(t)) && !fmt_utf8_valid("\xc0\xaf", 2) &&
	    !fmt_utf8_valid("\xed\xa0\x80", 3) && !fmt_utf8_valid("\xf4\x90\x80\x80", 4) &&
	    !fmt_utf8_valid("\xe2\x82", 2) && fmt_utf8_valid("\xf0\x9f\x98\x80", 4),
	    "UTF-8 validation");
	return TAP_PASS;
}

/* UTF-16 and UTF-32 with their BOMs; Windows-1252 when not UTF-8. */
static enum tap_result
t_text_encodings(void)
{
	static const struct {
		const char *bytes;
		size_t len;
		const char *name;
	} v[] = {
		{ "\xfe\xff\0C\0a\0f\0\xe9\0!", 12, "text (UTF-16BE)" },
		{ "\xff\xfe\0\0C\0\0\0a\0\0\0f\0\0\0\xe9\0\0\0!\0\0\0", 24, "text (UTF-32LE)" },
		{ "\0\0\xfe\xff\0\0\0C\0\0\0a\0\0\0f\0\0\0\xe9\0\0\0!", 24, "text (UTF-32BE)" },
		{ "Caf\xe9!", 5, "text (WINDOWS-1252)" },
	};
	struct fmt_doc d;
	size_t i;
	int rc;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		rc = fmt_extract(v[i].bytes, v[i].len, NULL, MAX, &d, g_why, sizeof(g_why));
		TAP_CHECK(rc == 0 && !strcmp(d.text, "Caf\xc3\xa9!") && !strcmp(d.name, v[i].name),
		    "%zu: rc %d %s '%s' '%s'", i, rc, g_why, d.text ? d.text : "", d.name);
		fmt_doc_free(&d);
	}
	rc = extract_file("ship-utf16.txt", NULL, &d);
	TAP_CHECK(rc == 0 && !strcmp(d.name, "text (UTF-16LE)") && facts(&d) &&
	    has(&d, "port of Valpara\xc3\xadso"), "rc %d %s '%s'", rc, g_why, d.name);
	fmt_doc_free(&d);
	/* 0x96: Windows-1252's en dash; 0x81 (undefined there): ISO-8859-1's U+0081 */
	rc = extract_file("ship-cp1252.txt", NULL, &d);
	TAP_CHECK(rc == 0 && !strcmp(d.name, "text (WINDOWS-1252)") &&
	    has(&d, "Valpara\xc3\xadso") && has(&d, "Pepper \xe2\x80\x93 a tabby"), "rc %d %s '%s'",
	    rc, g_why, d.name);
	fmt_doc_free(&d);
	rc = fmt_extract("a\x81z", 3, NULL, MAX, &d, g_why, sizeof(g_why));
	TAP_CHECK(rc == 0 && !strcmp(d.text, "a\xc2\x81z"), "undefined byte: rc %d", rc);
	fmt_doc_free(&d);
	return TAP_PASS;
}

/* --encoding: any name iconv knows; unknown names and invalid bytes. */
static enum tap_result
t_text_named(void)
{
	struct fmt_doc d;
	int rc = fmt_extract("5 \xa4 caf\xe9", 8, "ISO-8859-15", MAX, &d, g_why, sizeof(g_why));
	TAP_CHECK(rc == 0 && !strcmp(d.text, "5 \xe2\x82\xac caf\xc3\xa9") &&
	    !strcmp(d.name, "text (ISO-8859-15)"), "rc %d %s '%s'", rc, g_why, d.text);
	fmt_doc_free(&d);
	/* a named UTF-16 without a BOM; a PDF's magic means nothing then */
	rc = fmt_extract("%\0P\0D\0F\0-\0", 10, "UTF-16LE", MAX, &d, g_why, sizeof(g_why));
	TAP_CHECK(rc == 0 && d.kind == FMT_TEXT && !strcmp(d.text, "%PDF-"), "rc %d %s", rc, g_why);
	fmt_doc_free(&d);
	rc = fmt_extract("abc", 3, "NO-SUCH-CHARSET", MAX, &d, g_why, sizeof(g_why));
	TAP_CHECK(rc == FMT_ERR_ENCODING && strstr(g_why, "NO-SUCH-CHARSET") && !d.text, "rc %d %s",
	    rc, g_why);
	rc = fmt_extract("ab\xff\xfe", 4, "UTF-8", MAX, &d, g_why, sizeof(g_why));
	TAP_CHECK(rc == FMT_ERR_UNSUPPORTED && strstr(g_why, "not valid UTF-8") &&
	    strstr(g_why, "byte 2"), "rc %d %s", rc, g_why);
	rc = fmt_extract("abc", 3, "UTF-16LE", MAX, &d, g_why, sizeof(g_why));
	TAP_CHECK(rc == FMT_ERR_UNSUPPORTED && strstr(g_why, "cut short"), "rc %d %s", rc, g_why);
	tap_diag("%s", g_why);
	return TAP_PASS;
}

/* Binaries refused, saying what they look like and what kvsnap reads. */
static enum tap_result
t_binary(void)
{
	static const struct {
		const char *bytes;
		size_t len;
		const char *says;
	} v[] = {
		{ "\x7f" "ELF\x02\x01\x01\0\0\0\0\0\0\0\0\0", 16, "an ELF executable" },
		{ "PK\x03\x04\x14\0\0\0\x08\0", 10, "a ZIP archive" },
		{ "\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16, "a PNG image" },
		{ "\x1f\x8b\x08\0\0\0\0\0", 8, "gzip-compressed data" },
		{ "\xff\xd8\xff\xe0\0\x10JFIF", 10, "a JPEG image" },
		{ "SQLite format 3\0\x10\0", 18, "an SQLite database" },
		{ "hello\0world, this is text with a NUL", 36, "NUL bytes" },
		{ "a\x01\x02\x03\x04\x05\x06 b", 9, "many control bytes" },
		{ "MZ\x90\0\x03\0\0\0", 8, "a DOS/Windows executable" },
	};
	struct fmt_doc d;
	size_t i;
	int rc;
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		rc = fmt_extract(v[i].bytes, v[i].len, NULL, MAX, &d, g_why, sizeof(g_why));
		TAP_CHECK(rc == FMT_ERR_UNSUPPORTED && strstr(g_why, v[i].says) &&
		    strstr(g_why, "looks like binary data") &&
		    strstr(g_why, "kvsnap reads PDF, HTML, Markdown and plain text") && !d.text,
		    "%zu: rc %d: %s", i, rc, g_why);
	}
	tap_diag("%s", g_why);
	/* ...but text that starts like them is text */
	rc = fmt_extract("MZ is a postcode area.\n", 23, NULL, MAX, &d, g_why, sizeof(g_why));
	TAP_CHECK(rc == 0 && d.kind == FMT_TEXT, "MZ prose: rc %d %s", rc, g_why);
	fmt_doc_free(&d);
	rc = fmt_extract("\x1b[31mred\x1b[0m log line\n", 22, NULL, MAX, &d, g_why, sizeof(g_why));
	TAP_CHECK(rc == 0, "terminal colours: rc %d %s", rc, g_why);
	fmt_doc_free(&d);
	/* UTF-16 without a BOM: refused, naming the --encoding that reads it */
	rc = fmt_extract("H\0e\0l\0l\0o\0!\0", 12, NULL, MAX, &d, g_why, sizeof(g_why));
	TAP_CHECK(rc == FMT_ERR_UNSUPPORTED && strstr(g_why, "--encoding UTF-16LE"), "rc %d %s", rc,
	    g_why);
	rc = fmt_extract("\0H\0e\0l\0l\0o\0!", 12, NULL, MAX, &d, g_why, sizeof(g_why));
	TAP_CHECK(rc == FMT_ERR_UNSUPPORTED && strstr(g_why, "--encoding UTF-16BE"), "rc %d %s", rc,
	    g_why);
	rc = fmt_extract("H\0e\0l\0l\0o\0!\0", 12, "UTF-16LE", MAX, &d, g_why, sizeof(g_why));
	TAP_CHECK(rc == 0 && !strcmp(d.text, "Hello!"), "named: rc %d %s", rc, g_why);
	fmt_doc_free(&d);
		/* UTF-16 decoding to NULs is binary too */
	rc = fmt_extract("\xff\xfe\0\0\0\0", 6, NULL, MAX, &d, g_why, sizeof(g_why));
	TAP_CHECK(rc == FMT_ERR_UNSUPPORTED, "UTF-32 NULs: rc %d %s", rc, g_why);
	return TAP_PASS;
}

/* Empty, white space, a page with nothing but a script; over the limit. */
static enum tap_result
t_limits(void)
{
	static const char html[] = "<html><head><script>x()</script></head><body> </body></html>";
	struct fmt_doc d;
	size_t len, n;
	char *big;
	int rc;

	TAP_CHECK(fmt_extract("", 0, NULL, MAX, &d, g_why, sizeof(g_why)) == FMT_ERR_UNSUPPORTED &&
	    strstr(g_why, "empty"), "empty: %s", g_why);
	TAP_CHECK(fmt_extract(" \n\t\n", 4, NULL, MAX, &d, g_why, sizeof(g_why)) ==
	    FMT_ERR_UNSUPPORTED && strstr(g_why, "no text"), "white space: %s", g_why);
	rc = fmt_extract(html, sizeof(html) - 1, NULL, MAX, &d, g_why, sizeof(g_why));
	TAP_CHECK(rc == FMT_ERR_UNSUPPORTED && strstr(g_why, "no text"), "rc %d: %s", rc, g_why);
	rc = extract_file("ship.pdf", NULL, &d);
	TAP_CHECK(rc == 0, "pdf %s", g_why);
	n = d.len;
	fmt_doc_free(&d);
	{
		char *pdf = slurp("ship.pdf", &len);
		TAP_CHECK(pdf, "fixture");
		rc = fmt_extract(pdf, len, NULL, n / 2, &d, g_why, sizeof(g_why));
		free(pdf);
		TAP_CHECK(rc == FMT_ERR_TOO_LARGE && !d.text, "pdf over the limit: rc %d %s", rc, g_why);
	}
	/* 1 MiB of HTML paragraphs into a 64 KiB limit */
	len = (size_t)1 << 20;
	TAP_CHECK((big = malloc(len)), "oom");
	memcpy(big, "<html><body>", 12);
	for (n = 12; n + 16 < len; n += 16)
		memcpy(big + n, "<p>lorem ipsum  ", 16);
	rc = fmt_extract(big, n, NULL, 65536, &d, g_why, sizeof(g_why));
	TAP_CHECK(rc == FMT_ERR_TOO_LARGE && !d.text, "html over the limit: rc %d %s", rc, g_why);
	memset(big, 'a', len);
	rc = fmt_extract(big, len, NULL, 65536, &d, g_why, sizeof(g_why));
	TAP_CHECK(rc == FMT_ERR_TOO_LARGE, "text over the limit: rc %d %s", rc, g_why);
	free(big);
	return TAP_PASS;
}

/* Nested markup deeper than any page: no recursion blows the stack. */
static enum tap_result
t_deep(void)
{
	size_t n = 100000, i;
	char *b = malloc(n * 5 + 64);
	struct fmt_doc d;
	int rc;
	TAP_CHECK(b, "oom");
	strcpy(b, "<html><body>");
	for (i = 0; i < n; i++)
		memcpy(b + 12 + i * 5, "<div>", 5);
	strcpy(b + 12 + n * 5 - 5, "deep");
	rc = fmt_extract(b, strlen(b), NULL, MAX, &d, g_why, sizeof(g_why));
	TAP_CHECK(rc == 0 || rc == FMT_ERR_UNSUPPORTED, "html: rc %d %s", rc, g_why);
	fmt_doc_free(&d);
	n = 20000; /* the Markdown sniff reads the first 64 KiB */
	for (i = 0; i < n; i++)
		memcpy(b + i * 2, "> ", 2);
	strcpy(b + n * 2, "- [a](b) **deep**");
	rc = fmt_extract(b, strlen(b), NULL, MAX, &d, g_why, sizeof(g_why));
	TAP_CHECK(rc == 0 && d.kind == FMT_MARKDOWN && has(&d, "deep"), "markdown: rc %d %s", rc,
	    g_why);
	fmt_doc_free(&d);
	free(b);
	return TAP_PASS;
}

/* The HTML budgets (issue 26): attributes counted as HTML tokenizes them
 * (quoted '>' and '<' in values, comments and scripts not counted), the
 * limits exact, the depth halt of libxml2 named. */
static enum tap_result
t_html_budgets(void)
{
	size_t cap = (FMT_HTML_ATTRS_MAX + 10) * 12 + 256, n, i; /* " a1000=\"1\"": 11 */
	char *b = malloc(cap);
	struct fmt_doc d;
	int rc;
	static const char fine[] = "<p title=\"a > b\" data-x='<q z=1 y=2>' hidden>text</p>"
	    "<!-- <p a b c d> --><script>if (a<b) x = '<p q r s>';</script>";
	TAP_CHECK(b, "oom");
	TAP_CHECK(fmt_html_scan(fine, sizeof(fine) - 1, g_why, sizeof(g_why)) == 0, "%s", g_why);
	for (int k = 0; k < 2; k++) { /* the limit, then one over */
		n = (size_t)sprintf(b, "<html><body><p");
		for (i = 0; i < (size_t)FMT_HTML_ATTRS_MAX + (size_t)k; i++)
			n += (size_t)sprintf(b + n, " a%zu=\"1\"", i);
		n += (size_t)sprintf(b + n, ">attributes</p></body></html>");
		rc = fmt_extract(b, n, NULL, MAX, &d, g_why, sizeof(g_why));
		TAP_CHECK(k ? rc == FMT_ERR_TOO_LARGE && strstr(g_why, "attributes") :
		    rc == 0 && has(&d, "attributes"), "%d attributes: rc %d %s",
		    FMT_HTML_ATTRS_MAX + k, rc, g_why);
		fmt_doc_free(&d);
		/* the same element in a comment or a script: not an element */
		memmove(b + 12 + 4, b + 12, n - 12);
		memcpy(b + 12, "<!--", 4);
		memcpy(b + n + 4, "-->", 4);
		TAP_CHECK(fmt_html_scan(b, n + 7, g_why, sizeof(g_why)) == 0, "comment: %s", g_why);
	}
	free(b);
	for (int deep = 200; deep <= 300; deep += 100) { /* libxml2 stops at 256 */
		b = malloc((size_t)deep * 11 + 128);
		TAP_CHECK(b, "oom");
		n = (size_t)sprintf(b, "<html><body>");
		for (i = 0; i < (size_t)deep; i++)
			n += (size_t)sprintf(b + n, "<div>");
		n += (size_t)sprintf(b + n, "deep");
		for (i = 0; i < (size_t)deep; i++)
			n += (size_t)sprintf(b + n, "</div>");
		n += (size_t)sprintf(b + n, "<p>after</p></body></html>");
		rc = fmt_extract(b, n, NULL, MAX, &d, g_why, sizeof(g_why));
		free(b);
		TAP_CHECK(deep < 256 ? rc == 0 && has(&d, "after") : rc == FMT_ERR_UNSUPPORTED &&
		    strstr(g_why, "nested over 256"), "%d deep: rc %d %s", deep, rc, g_why);
		fmt_doc_free(&d);
	}
	return TAP_PASS;
}

/* fmt_extract_isolated (this binary is its own child: main calls
 * fmt_child_main): the same result as in-process, a refusal's reason
 * carried over, and a set cancel flag kills the child. */
static enum tap_result
t_isolated(void)
{
	struct fmt_doc a, b;
	atomic_int cancel = 0;
	size_t len;
	char *pdf = slurp("ship.pdf", &len);
	int rc;
	TAP_CHECK(pdf, "fixture");
	rc = fmt_extract(pdf, len, NULL, MAX, &a, g_why, sizeof(g_why));
	TAP_CHECK(rc == 0, "in-process: %s", g_why);
	rc = fmt_extract_isolated(pdf, len, NULL, MAX, &cancel, &b, g_why, sizeof(g_why));
	TAP_CHECK(rc == 0 && b.len == a.len && !memcmp(a.text, b.text, a.len) &&
	    !strcmp(a.name, b.name) && b.kind == FMT_PDF && b.pages == a.pages,
	    "isolated: rc %d %s", rc, g_why);
	fmt_doc_free(&b);
	rc = fmt_extract_isolated(pdf, len / 2, NULL, MAX, NULL, &b, g_why, sizeof(g_why));
	TAP_CHECK(rc == FMT_ERR_UNSUPPORTED && strstr(g_why, "cannot be read") && !b.text,
	    "truncated: rc %d %s", rc, g_why);
	rc = fmt_extract_isolated(pdf, len, NULL, a.len / 2, NULL, &b, g_why, sizeof(g_why));
	TAP_CHECK(rc == FMT_ERR_TOO_LARGE && !b.text, "over max: rc %d %s", rc, g_why);
	atomic_store(&cancel, 1);
	rc = fmt_extract_isolated(pdf, len, NULL, MAX, &cancel, &b, g_why, sizeof(g_why));
	TAP_CHECK(rc == FMT_ERR_CANCELLED && !b.text, "cancelled: rc %d %s", rc, g_why);
	fmt_doc_free(&a);
	free(pdf);
	return TAP_PASS;
}

/* Several threads at once, each format: the same text every time. */
static void *
worker(void *arg)
{
	static const char *const files[] = { "ship.pdf", "ship.html", "ship.md", "ship-utf16.txt" };
	size_t len[4], i;
	char *buf[4], why[256];
	intptr_t bad = 0;
	int k;
	(void)arg;
	for (i = 0; i < 4; i++)
		buf[i] = slurp(files[i], &len[i]);
	for (k = 0; k < 20; k++)
		for (i = 0; i < 4; i++) {
			struct fmt_doc d;
			if (!buf[i] || fmt_extract(buf[i], len[i], NULL, MAX, &d, why, sizeof(why)) ||
			    !facts(&d))
				bad++;
			fmt_doc_free(&d);
		}
	for (i = 0; i < 4; i++)
		free(buf[i]);
	return (void *)bad;
}

static enum tap_result
t_threads(void)
{
	pthread_t th[4];
	void *r;
	int i, bad = 0;
	for (i = 0; i < 4; i++)
		TAP_CHECK(pthread_create(&th[i], NULL, worker, NULL) == 0, "thread");
	for (i = 0; i < 4; i++) {
		pthread_join(th[i], &r);
		bad += (int)(intptr_t)r;
	}
	TAP_CHECK(bad == 0, "%d extractions failed or differed", bad);
	return TAP_PASS;
}

static const struct tap_test tests[] = {
	{ "pdf", t_pdf },
	{ "pdf_refused", t_pdf_refused },
	{ "pdf_damaged", t_pdf_damaged },
	{ "html", t_html },
	{ "html_sniff", t_html_sniff },
	{ "html_charset", t_html_charset },
	{ "markdown", t_markdown },
	{ "markdown_sniff", t_markdown_sniff },
	{ "text_utf8", t_text_utf8 },
	{ "text_encodings", t_text_encodings },
	{ "text_named", t_text_named },
	{ "binary", t_binary },
	{ "limits", t_limits },
	{ "deep", t_deep },
	{ "html_budgets", t_html_budgets },
	{ "isolated", t_isolated },
	{ "threads", t_threads },
};

int
main(int argc, char **argv)
{
	fmt_child_main(argc, argv); /* t_isolated's child */
	return tap_main(tests, sizeof(tests) / sizeof(tests[0]), argc, argv);
}
