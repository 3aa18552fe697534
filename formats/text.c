/*
 * text.c: bytes in a named encoding into UTF-8 with iconv(3).  Strict for
 * an encoding the caller named (a byte sequence invalid in it is an error
 * naming its offset); lenient for the Windows-1252 guess made when the
 * bytes are not UTF-8: a byte Windows-1252 leaves undefined (0x81, 0x8D,
 * 0x8F, 0x90, 0x9D) is read as ISO-8859-1, so that guess never fails.
 */
#include <errno.h>
#include <iconv.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/fail.h"
#include "formats/formats.h"

#define TX_CHUNK 16384

/* One byte as ISO-8859-1 (U+0000..U+00FF) in UTF-8. */
static void
tx_latin1(struct fmt_buf *out, unsigned char c)
{
	char u[2];
	if (c < 0x80) {
		u[0] = (char)c;
		fmt_buf_put(out, u, 1);
		return;
	}
	u[0] = (char)(0xc0 | c >> 6);
	u[1] = (char)(0x80 | (c & 0x3f));
	fmt_buf_put(out, u, 2);
}

/* from: the encoding; lenient: an invalid byte as ISO-8859-1, else an
 * error.  The caller has checked that iconv knows `from`. */
static int
tx_convert(iconv_t cd, const char *p, size_t len, const char *from, int lenient,
    struct fmt_buf *out, char *why, size_t why_len)
{
	char chunk[TX_CHUNK];
	char *in = (char *)(uintptr_t)p, *o;
	size_t in_left = len, o_left;

	while (in_left && !out->err) {
		size_t r;
		o = chunk;
		o_left = sizeof(chunk);
		r = iconv(cd, &in, &in_left, &o, &o_left);
		fmt_buf_put(out, chunk, sizeof(chunk) - o_left);
		if (r != (size_t)-1 || errno == E2BIG)
			continue;
		if (!lenient)
			return kv_fail(why, why_len, FMT_ERR_UNSUPPORTED,
			    "is not valid %s: %s at byte %zu (name the encoding it is in with "
			    "--encoding)", from, errno == EINVAL ? "a character cut short" :
			    "an invalid sequence", (size_t)(in - p));
		tx_latin1(out, (unsigned char)*in);
		in++;
		in_left--;
		iconv(cd, NULL, NULL, NULL, NULL); /* back to the initial state */
	}
	/* a stateful encoding's closing bytes */
	o = chunk;
	o_left = sizeof(chunk);
	if (iconv(cd, NULL, NULL, &o, &o_left) != (size_t)-1)
		fmt_buf_put(out, chunk, sizeof(chunk) - o_left);
	return out->err;
}

int
fmt_decode(const char *p, size_t len, const char *from, size_t max, struct fmt_buf *out,
    char *why, size_t why_len)
{
	int lenient = !strcmp(from, "WINDOWS-1252"), rc;
	iconv_t cd;

	memset(out, 0, sizeof(*out));
	out->max = max;
	if ((cd = iconv_open("UTF-8", from)) == (iconv_t)-1)
		return kv_fail(why, why_len, FMT_ERR_ENCODING, "unknown encoding \"%.*s\" (iconv "
		    "knows the names `iconv -l` lists, e.g. UTF-16LE, ISO-8859-15, SHIFT_JIS)",
		    FMT_ENCODING_MAX, from);
	rc = tx_convert(cd, p, len, from, lenient, out, why, why_len);
	iconv_close(cd);
	if (rc == FMT_ERR_TOO_LARGE)
		kv_fail(why, why_len, rc, "is over %zu bytes as UTF-8 text", max);
	else if (rc == FMT_ERR_NOMEM)
		kv_fail(why, why_len, rc, "out of memory");
	/* a BOM the named encoding kept (iconv drops UTF-16's own) */
	if (!rc && out->len >= 3 && !memcmp(out->p, "\xef\xbb\xbf", 3)) {
		memmove(out->p, out->p + 3, out->len - 3);
		out->len -= 3;
	}
	return rc;
}
