/*
 * snap_helpers.h: what the snapshot tests (test_snapshot.c,
 * test_snapshot_refit.c) forge stored records with: a record's plain bytes
 * and back, a little-endian u32 written into them, and a test run under
 * the legacy encodings.
 */
#ifndef TESTS_SNAP_HELPERS_H
#define TESTS_SNAP_HELPERS_H

#include <sodium.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "snapshot/snapshot.h"
#include "tests/tap.h"

/* Plain bytes of a stored record (checksum included), malloc'd with 16
 * spare bytes; a raw version-4 layer record (it starts with its magic) is
 * copied.  -1 when it is no zstd frame of known size. */
static inline int
th_unseal(const uint8_t *buf, size_t len, uint8_t **plain, size_t *n)
{
	unsigned long long size;
	if (len >= 4 && !memcmp(buf, "KVSL", 4)) {
		*plain = malloc(len + 16);
		memcpy(*plain, buf, len);
		*n = len;
		return 0;
	}
	size = ZSTD_getFrameContentSize(buf, len);
	if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN)
		return -1;
	*plain = malloc(size + 16);
	*n = ZSTD_decompress(*plain, size, buf, len);
	return ZSTD_isError(*n) ? -1 : 0;
}

/* Recompute the trailing checksum of plain[0..n) (when fix), compress. */
static inline void
th_reseal(uint8_t *plain, size_t n, int fix, uint8_t **out, size_t *out_len)
{
	size_t cap = ZSTD_compressBound(n);
	if (fix && n >= SNAP_SUM_BYTES)
		crypto_generichash(plain + n - SNAP_SUM_BYTES, SNAP_SUM_BYTES, plain,
		    n - SNAP_SUM_BYTES, NULL, 0);
	*out = malloc(cap);
	*out_len = ZSTD_compress(*out, cap, plain, n, 1);
}

static inline void
th_put_u32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

/* Run fn with the encoder writing the legacy encodings (*ver 1: zstd
 * frames with their inner BLAKE2b-128, what every store held before
 * version 4), then back to the current version. */
static inline enum tap_result
th_legacy(uint32_t *ver, enum tap_result (*fn)(void))
{
	enum tap_result r;
	*ver = 1;
	r = fn();
	*ver = SNAP_FORMAT_VERSION;
	return r;
}

#endif
