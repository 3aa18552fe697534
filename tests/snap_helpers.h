/*
 * snap_helpers.h: what the snapshot tests (test_snapshot.c,
 * test_snapshot_refit.c, test_kvzip.c) encode and forge stored records
 * with: a pool's records in memory (th_snap), a stored seed checked against
 * this build, a record's plain bytes and back, a little-endian u32 read from
 * and written into them, a test run under the legacy encodings, and two
 * pools' refit biases compared.
 */
#ifndef TESTS_SNAP_HELPERS_H
#define TESTS_SNAP_HELPERS_H

#include <sodium.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "engine/engine.h"
#include "snapshot/snapshot.h"
#include "tests/tap.h"

#define TH_SNAP_MAX_L 32

/* A pool's snapshot in memory: the header and each layer's record. */
struct th_snap {
	struct snap_header h;
	uint8_t *hdr;
	size_t hdr_len;
	uint8_t *rec[TH_SNAP_MAX_L];
	size_t len[TH_SNAP_MAX_L];
};

static inline void
th_snap_free(struct th_snap *s)
{
	int l;
	free(s->hdr);
	for (l = 0; l < TH_SNAP_MAX_L; l++)
		free(s->rec[l]);
	snap_header_free(&s->h);
	memset(s, 0, sizeof(*s));
}

/* kv's snapshot in format version (SNAP_FORMAT_VERSION, a saver's; 1 for
 * the legacy encodings) at quant, profile "test:quant=NAME", zstd level
 * 3.  0 or a SNAP_ERR_ code (s freed by th_snap_free either way). */
static inline int
th_snap_encode(struct th_snap *s, const struct eng_kv *kv, int n_head, int quant,
    uint32_t version)
{
	int l, rc;
	memset(s, 0, sizeof(*s));
	if (kv->n_layer > TH_SNAP_MAX_L)
		return SNAP_ERR_ARG;
	if ((rc = snap_header_from_kv(&s->h, kv, n_head)))
		return rc;
	s->h.version = version;
	s->h.quant = quant;
	snprintf(s->h.profile, sizeof(s->h.profile), "test:quant=%s", snap_quant_name(quant));
	for (l = 0; l < kv->n_layer; l++)
		if ((rc = snap_layer_encode(kv, l, &s->h, 3, &s->rec[l], &s->len[l])))
			return rc;
	return snap_header_encode(&s->h, 3, &s->hdr, &s->hdr_len);
}

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

/* Unit by unit, the same biases, bit for bit: 1, else 0. */
static inline int
th_same_biases(const struct eng_kv *a, const struct eng_kv *b)
{
	int l, g;
	for (l = 0; l < a->n_layer; l++)
		for (g = 0; g < a->n_head_kv; g++)
			if (a->layer[l].len[g] != b->layer[l].len[g] ||
			    memcmp(a->layer[l].bias + a->layer[l].off[g], b->layer[l].bias +
			    b->layer[l].off[g], (size_t)a->layer[l].len[g] * sizeof(float)))
				return 0;
	return 1;
}

static inline uint32_t
th_get_u32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline void
th_put_u32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

/* A stored seed, tests/fuzz/corpus/snapshot/stored_NAME.seed (the
 * header's length as a little-endian u32, the header, layer 0's record;
 * run from the repository root), against this build: h its header, *back
 * a pool over shell with its layer 0 decoded (prepared from the header's
 * counts first when prepare: a version-1 record needs it), and s (this
 * build's encoding of the same pool) the same bytes.  0, else -1 with why;
 * h and *back are the caller's to free either way. */
static inline int
th_seed_check(const char *name, const struct eng_model *shell, int prepare,
    const struct th_snap *s, struct snap_header *h, struct eng_kv **back, char *why,
    size_t why_len)
{
	char path[128], e[100] = ""; /* short enough for a why of 256 */
	uint8_t *file = NULL;
	size_t len = 0, hn;
	FILE *f;
	int rc = -1;

	memset(h, 0, sizeof(*h));
	*back = NULL;
	snprintf(path, sizeof(path), "tests/fuzz/corpus/snapshot/stored_%s.seed", name);
	if (!(f = fopen(path, "rb"))) {
		snprintf(why, why_len, "%s (run from the repository root)", path);
		return -1;
	}
	if ((file = malloc(1 << 16)))
		len = fread(file, 1, 1 << 16, f);
	fclose(f);
	if (len <= 4 || len >= (1 << 16))
		snprintf(why, why_len, "%s: %zu bytes", path, len);
	else if ((hn = th_get_u32(file)) >= len - 4)
		snprintf(why, why_len, "%s: header length", path);
	else if (snap_header_decode(file + 4, hn, h, e, sizeof(e)))
		snprintf(why, why_len, "%s: %s", path, e);
	else if (eng_kv_init(back, shell, 16) ||
	    (prepare && eng_kv_prepare_layer(*back, 0, h->counts)))
		snprintf(why, why_len, "%s: pool for the load", path);
	else if (snap_layer_decode(file + 4 + hn, len - 4 - hn, h, 0, *back, e, sizeof(e)))
		snprintf(why, why_len, "%s: layer 0: %s", path, e);
	else if (s->hdr_len != hn || memcmp(s->hdr, file + 4, hn))
		snprintf(why, why_len, "%s: header bytes differ", path);
	else if (s->len[0] != len - 4 - hn || memcmp(s->rec[0], file + 4 + hn, s->len[0]))
		snprintf(why, why_len, "%s: layer 0 bytes differ", path);
	else
		rc = 0;
	free(file);
	return rc;
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

/* legacy_NAME: test_NAME run under the legacy encodings (th_legacy), the
 * encoder's version in ver. */
#define TH_LEGACY_TEST(ver, name)                                             \
	static enum tap_result legacy_##name(void)                             \
	{                                                                      \
		return th_legacy(&(ver), test_##name);                         \
	}

#endif
