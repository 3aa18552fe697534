/*
 * store_redis_manifest.c: the manifest codec of the redis-cluster backend:
 * the value that makes a snapshot visible, listing its generation and each
 * record's length and checksum (store_redis.h).
 *
 * Layout, every integer little-endian:
 *
 *   off  size  field
 *    0    4    magic "KSrm"
 *    4    2    version (1)
 *    6    2    n records, the head included (2..65535)
 *    8    8    generation (random; part of every record's key)
 *   16    8    stamp (i64 µs, when it was put)
 *   24   24×n  per record (head first, then layers 0..n-2):
 *                length (u64), BLAKE2b-128 of its bytes
 *    …   16    BLAKE2b-128 of every byte before it
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "common/le.h"
#include "storage/store_redis.h"

#define RM_MAGIC "KSrm"
#define RM_FIXED 24
#define RM_ENTRY (8 + RS_SUM)

void
rs_sum(const uint8_t *buf, size_t len, uint8_t out[RS_SUM])
{
	st_sodium();
	crypto_generichash(out, RS_SUM, buf, len, NULL, 0);
}

size_t
rs_manifest_size(int n)
{
	return RM_FIXED + (size_t)n * RM_ENTRY + RS_SUM;
}

void
rs_manifest_encode(const struct rs_manifest *m, uint8_t *out)
{
	size_t size = rs_manifest_size(m->n);
	int k;
	memcpy(out, RM_MAGIC, 4);
	out[4] = 1;
	out[5] = 0;
	out[6] = (uint8_t)m->n;
	out[7] = (uint8_t)(m->n >> 8);
	kv_le_put64(out + 8, m->gen);
	kv_le_put64(out + 16, (uint64_t)m->stamp);
	for (k = 0; k < m->n; k++) {
		kv_le_put64(out + RM_FIXED + (size_t)k * RM_ENTRY, m->len[k]);
		memcpy(out + RM_FIXED + (size_t)k * RM_ENTRY + 8, m->sum[k], RS_SUM);
	}
	rs_sum(out, size - RS_SUM, out + size - RS_SUM);
}

int
rs_manifest_decode(const uint8_t *buf, size_t len, struct rs_manifest *m, char *why,
    size_t why_len)
{
	uint8_t sum[RS_SUM];
	int n, k;

	memset(m, 0, sizeof(*m));
	if (len < RM_FIXED + RS_SUM || memcmp(buf, RM_MAGIC, 4) != 0)
		return store_fail(why, why_len, STORE_ERR_CORRUPT, "not a manifest (%zu bytes)", len);
	if (buf[4] != 1 || buf[5] != 0)
		return store_fail(why, why_len, STORE_ERR_CORRUPT, "manifest version %u",
		    (unsigned)(buf[4] | buf[5] << 8));
	n = buf[6] | buf[7] << 8;
	if (n < 2 || len != rs_manifest_size(n))
		return store_fail(why, why_len, STORE_ERR_CORRUPT,
		    "manifest of %zu bytes for %d records", len, n);
	rs_sum(buf, len - RS_SUM, sum);
	if (sodium_memcmp(sum, buf + len - RS_SUM, RS_SUM) != 0)
		return store_fail(why, why_len, STORE_ERR_CORRUPT, "manifest checksum mismatch");
	m->gen = kv_le_get64(buf + 8);
	m->stamp = (int64_t)kv_le_get64(buf + 16);
	m->n = n;
	m->len = malloc((size_t)n * sizeof(*m->len));
	m->sum = malloc((size_t)n * sizeof(*m->sum));
	if (!m->len || !m->sum) {
		rs_manifest_free(m);
		return store_fail(why, why_len, STORE_ERR_NOMEM, "out of memory");
	}
	for (k = 0; k < n; k++) {
		m->len[k] = kv_le_get64(buf + RM_FIXED + (size_t)k * RM_ENTRY);
		memcpy(m->sum[k], buf + RM_FIXED + (size_t)k * RM_ENTRY + 8, RS_SUM);
	}
	return 0;
}

void
rs_manifest_free(struct rs_manifest *m)
{
	free(m->len);
	free(m->sum);
	m->len = NULL;
	m->sum = NULL;
	m->n = 0;
}

int
rs_record_check(const struct rs_manifest *m, int k, const uint8_t *buf, size_t len,
    const char *what, char *why, size_t why_len)
{
	uint8_t sum[RS_SUM];
	char rec[32];
	if (k == 0)
		snprintf(rec, sizeof(rec), "head record");
	else
		snprintf(rec, sizeof(rec), "record %d", k - 1);
	if (!buf)
		return store_fail(why, why_len, STORE_ERR_CORRUPT, "%s: %s missing", what, rec);
	if (len != m->len[k])
		return store_fail(why, why_len, STORE_ERR_CORRUPT,
		    "%s: %s has %zu bytes, its manifest says %llu", what, rec, len,
		    (unsigned long long)m->len[k]);
	rs_sum(buf, len, sum);
	if (sodium_memcmp(sum, m->sum[k], RS_SUM) != 0)
		return store_fail(why, why_len, STORE_ERR_CORRUPT, "%s: %s fails its checksum", what,
		    rec);
	return 0;
}
