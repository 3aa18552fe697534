/*
 * text_record.c: a document part's text record, encoded and checked
 * (layout in text_record.h).  Decoding is bounded: the stated length is
 * checked against SVC_DOC_MAX and the zstd frame's own content size before
 * any allocation, and the frame must fill exactly that many bytes.
 */
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "common/fail.h"
#include "common/le.h"
#include "service/service_internal.h"
#include "service/text_record.h"

#define TEXTREC_VERSION 1
#define TEXTREC_ZLEVEL 3

/* BLAKE2b-128 of the head's first 24 bytes and the text. */
static void
tr_sum(const uint8_t *head, const char *text, size_t len, uint8_t sum[TEXTREC_SUM])
{
	crypto_generichash_state st;
	if (sodium_init() < 0) { /* idempotent; fails only without a random source */
		memset(sum, 0, TEXTREC_SUM);
		return;
	}
	crypto_generichash_init(&st, NULL, 0, TEXTREC_SUM);
	crypto_generichash_update(&st, head, 24);
	crypto_generichash_update(&st, (const unsigned char *)text, len);
	crypto_generichash_final(&st, sum, TEXTREC_SUM);
}

int
textrec_encode(unsigned part, const char *text, size_t len, uint8_t **out, size_t *out_len,
    char *why, size_t why_len)
{
	size_t bound = ZSTD_compressBound(len), n;
	uint8_t *b;

	*out = NULL;
	*out_len = 0;
	if (len > SVC_DOC_MAX)
		return kv_fail(why, why_len, -1, "text record: %zu bytes of text (at most %zu)", len,
		    (size_t)SVC_DOC_MAX);
	if (!(b = malloc(TEXTREC_HEAD + bound)))
		return kv_fail(why, why_len, -1, "text record: out of memory");
	memcpy(b, "KVTX", 4);
	b[4] = TEXTREC_VERSION;
	b[5] = b[6] = b[7] = 0;
	kv_le_put32(b + 8, part);
	kv_le_put32(b + 12, 0);
	kv_le_put64(b + 16, len);
	tr_sum(b, text, len, b + 24);
	n = ZSTD_compress(b + TEXTREC_HEAD, bound, text, len, TEXTREC_ZLEVEL);
	if (ZSTD_isError(n)) {
		free(b);
		return kv_fail(why, why_len, -1, "text record: %s", ZSTD_getErrorName(n));
	}
	*out = b;
	*out_len = TEXTREC_HEAD + n;
	return 0;
}

int
textrec_peek(const uint8_t *buf, size_t len, unsigned *part, uint8_t sum[TEXTREC_SUM],
    char *why, size_t why_len)
{
	if (len < TEXTREC_HEAD || memcmp(buf, "KVTX", 4) != 0)
		return kv_fail(why, why_len, -1, "not a text record (%zu bytes)", len);
	if (buf[4] != TEXTREC_VERSION || buf[5] || buf[6] || buf[7] || kv_le_get32(buf + 12))
		return kv_fail(why, why_len, -1, "text record of an unknown version %u", buf[4]);
	if (kv_le_get64(buf + 16) > SVC_DOC_MAX)
		return kv_fail(why, why_len, -1, "text record states %llu bytes of text (at most %zu)",
		    (unsigned long long)kv_le_get64(buf + 16), (size_t)SVC_DOC_MAX);
	*part = kv_le_get32(buf + 8);
	memcpy(sum, buf + 24, TEXTREC_SUM);
	return 0;
}

int
textrec_decode(const uint8_t *buf, size_t len, unsigned *part, uint8_t sum[TEXTREC_SUM],
    char **text, size_t *text_len, char *why, size_t why_len)
{
	uint8_t got[TEXTREC_SUM];
	unsigned long long fsz;
	size_t n, want;
	char *t;

	*text = NULL;
	*text_len = 0;
	if (textrec_peek(buf, len, part, sum, why, why_len))
		return -1;
	want = (size_t)kv_le_get64(buf + 16);
	fsz = ZSTD_getFrameContentSize(buf + TEXTREC_HEAD, len - TEXTREC_HEAD);
	if (fsz != want)
		return kv_fail(why, why_len, -1, "text record: its frame holds %s, the head says %zu "
		    "bytes", fsz == ZSTD_CONTENTSIZE_ERROR ? "no zstd frame" :
		    fsz == ZSTD_CONTENTSIZE_UNKNOWN ? "an unknown length" : "another length", want);
	if (!(t = malloc(want + 1)))
		return kv_fail(why, why_len, -1, "text record: out of memory");
	n = ZSTD_decompress(t, want, buf + TEXTREC_HEAD, len - TEXTREC_HEAD);
	if (ZSTD_isError(n) || n != want) {
		free(t);
		return kv_fail(why, why_len, -1, "text record: %s", ZSTD_isError(n) ?
		    ZSTD_getErrorName(n) : "short frame");
	}
	tr_sum(buf, t, want, got);
	if (sodium_memcmp(got, sum, TEXTREC_SUM) != 0) {
		free(t);
		return kv_fail(why, why_len, -1, "text record fails its checksum");
	}
	t[want] = '\0';
	*text = t;
	*text_len = want;
	return 0;
}
