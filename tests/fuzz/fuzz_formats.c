/*
 * fuzz_formats.c: libFuzzer target for formats/ (fmt_extract, detection
 * and extraction of PDF, HTML, Markdown and text): any bytes are read or
 * refused with a known code and a reason, never a crash or a leak; text
 * that is read is valid UTF-8 without NULs, within the limit, and its
 * format has a name.  The first byte picks a named encoding now and then,
 * so iconv's paths are driven too.  Seeds: tests/fuzz/corpus/formats/
 * (scripts/make-doc-fixtures.py), and those tests/run.sh generates (the
 * hostile documents, the head of tests/fixtures/docs/ship.html).
 */
#include <assert.h>
#include <stdint.h>
#include <string.h>

#include "formats/formats.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_MAX ((size_t)1 << 20)

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const enc[] = { "UTF-16LE", "UTF-16", "ISO-8859-15", "SHIFT_JIS",
		"UTF-8", "UTF-32" };
	struct fmt_doc d;
	const char *e = NULL;
	char why[512];
	int rc;

	/* a leading 0xEE byte names an encoding (seeds never start with it) */
	if (size >= 2 && data[0] == 0xee) {
		e = enc[data[1] % (sizeof(enc) / sizeof(enc[0]))];
		data += 2;
		size -= 2;
	}
	why[0] = '\0';
	rc = fmt_extract(data, size, e, FUZZ_MAX, &d, why, sizeof(why));
	if (rc) {
		assert(rc == FMT_ERR_UNSUPPORTED || rc == FMT_ERR_TOO_LARGE || rc == FMT_ERR_NOMEM);
		assert(why[0] && !d.text);
		return 0;
	}
	assert(d.text && d.len <= FUZZ_MAX && strlen(d.text) == d.len);
	assert(fmt_utf8_valid(d.text, d.len));
	assert(d.name[0] && strstr(d.name, fmt_kind_name(d.kind)) == d.name);
	assert(d.kind != FMT_PDF || (d.pages >= 1 && d.pages <= FMT_PDF_PAGES_MAX));
	fmt_doc_free(&d);
	return 0;
}
