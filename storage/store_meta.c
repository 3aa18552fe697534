/*
 * store_meta.c: the document metadata codec: the bytes a backend keeps as
 * a document's value (LMDB: its `docs` record).
 *
 * Layout, version 1, every integer little-endian:
 *
 *   off  size  field
 *    0    4    magic "KSdm"
 *    4    2    version (1)
 *    6    2    name_len    (0..255; 0: unnamed)
 *    8    2    source_len  (0..1023)
 *   10    2    n_profiles  (1..65535; a document without snapshots is removed)
 *   12    4    reserved (0)
 *   16    8    bytes        document size
 *   24    8    tokens       document tokens
 *   32    8    created_us   (i64, CLOCK_REALTIME µs)
 *   40    8    last_used_us (i64)
 *   48         name bytes, then source bytes (no NUL inside either)
 *    …   48×n  profile table, ids strictly ascending:
 *                id[32], last_used_us (i64; its lru key), bytes (u64; its
 *                records as stored)
 *    …   16    BLAKE2b-128 of every byte before it
 *
 * The value is exactly that long.  The table is what makes a snapshot's lru
 * key and size findable without scanning: touch, replace and prune rebuild
 * the old lru key from it.  The checksum catches flipped bits that would
 * otherwise pass as plausible sizes or times.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "storage/store_backend.h"

#define SM_MAGIC "KSdm"
#define SM_VERSION 1
#define SM_FIXED 48
#define SM_PROF 48
#define SM_SUM 16

static void
sm_put16(uint8_t *p, unsigned v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void
sm_put64(uint8_t *p, uint64_t v)
{
	int i;
	for (i = 0; i < 8; i++, v >>= 8)
		p[i] = (uint8_t)v;
}

static unsigned
sm_get16(const uint8_t *p)
{
	return (unsigned)p[0] | (unsigned)p[1] << 8;
}

static uint64_t
sm_get64(const uint8_t *p)
{
	uint64_t v = 0;
	int i;
	for (i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void
sm_sum(const uint8_t *buf, size_t len, uint8_t out[SM_SUM])
{
	crypto_generichash(out, SM_SUM, buf, len, NULL, 0);
}

size_t
st_meta_size(const struct st_meta *m)
{
	return SM_FIXED + strlen(m->d.name) + strlen(m->d.source) + (size_t)m->n * SM_PROF +
	    SM_SUM;
}

/* out has st_meta_size(m) bytes; m was checked by the writer (name and
 * source lengths, 1..65535 profiles). */
void
st_meta_encode(const struct st_meta *m, uint8_t *out)
{
	size_t nl = strlen(m->d.name), sl = strlen(m->d.source), off = SM_FIXED;
	int i;

	memcpy(out, SM_MAGIC, 4);
	sm_put16(out + 4, SM_VERSION);
	sm_put16(out + 6, (unsigned)nl);
	sm_put16(out + 8, (unsigned)sl);
	sm_put16(out + 10, (unsigned)m->n);
	memset(out + 12, 0, 4);
	sm_put64(out + 16, m->d.bytes);
	sm_put64(out + 24, m->d.tokens);
	sm_put64(out + 32, (uint64_t)m->d.created_us);
	sm_put64(out + 40, (uint64_t)m->d.last_used_us);
	memcpy(out + off, m->d.name, nl);
	off += nl;
	memcpy(out + off, m->d.source, sl);
	off += sl;
	for (i = 0; i < m->n; i++, off += SM_PROF) {
		memcpy(out + off, m->p[i].id, STORE_ID_BYTES);
		sm_put64(out + off + 32, (uint64_t)m->p[i].last_used_us);
		sm_put64(out + off + 40, m->p[i].bytes);
	}
	sm_sum(out, off, out + off);
}

/* The fixed part: magic, version, lengths; *n_prof set. */
static int
sm_check_fixed(const uint8_t *buf, size_t len, int *n_prof, char *why, size_t why_len)
{
	size_t want;
	if (len < SM_FIXED + SM_SUM)
		return store_fail(why, why_len, STORE_ERR_CORRUPT, "%zu bytes, too short", len);
	if (memcmp(buf, SM_MAGIC, 4) != 0)
		return store_fail(why, why_len, STORE_ERR_CORRUPT, "bad magic");
	if (sm_get16(buf + 4) != SM_VERSION)
		return store_fail(why, why_len, STORE_ERR_CORRUPT,
		    "metadata version %u (this build reads %d)", sm_get16(buf + 4), SM_VERSION);
	if (sm_get16(buf + 6) > ST_NAME_MAX || sm_get16(buf + 8) > ST_SOURCE_MAX)
		return store_fail(why, why_len, STORE_ERR_CORRUPT, "name or source length out of range");
	*n_prof = (int)sm_get16(buf + 10);
	if (*n_prof < 1)
		return store_fail(why, why_len, STORE_ERR_CORRUPT, "no profiles");
	want = SM_FIXED + sm_get16(buf + 6) + sm_get16(buf + 8) + (size_t)*n_prof * SM_PROF + SM_SUM;
	if (len != want)
		return store_fail(why, why_len, STORE_ERR_CORRUPT, "%zu bytes, layout says %zu", len, want);
	return 0;
}

/* A text field: no NUL inside (it becomes a C string). */
static int
sm_text(char *dst, const uint8_t *src, size_t n)
{
	if (memchr(src, 0, n))
		return -1;
	memcpy(dst, src, n);
	dst[n] = '\0';
	return 0;
}

/* The profile table: ids strictly ascending, times not negative. */
static int
sm_table(struct st_meta *m, const uint8_t *p, char *why, size_t why_len)
{
	int i;
	for (i = 0; i < m->n; i++, p += SM_PROF) {
		memcpy(m->p[i].id, p, STORE_ID_BYTES);
		m->p[i].last_used_us = (int64_t)sm_get64(p + 32);
		m->p[i].bytes = sm_get64(p + 40);
		if (m->p[i].last_used_us < 0)
			return store_fail(why, why_len, STORE_ERR_CORRUPT, "profile %d: negative time", i);
		if (i > 0 && memcmp(m->p[i - 1].id, m->p[i].id, STORE_ID_BYTES) >= 0)
			return store_fail(why, why_len, STORE_ERR_CORRUPT, "profile table out of order");
		if (m->d.stored_bytes + m->p[i].bytes < m->d.stored_bytes)
			return store_fail(why, why_len, STORE_ERR_CORRUPT, "stored bytes overflow");
		m->d.stored_bytes += m->p[i].bytes;
	}
	return 0;
}

int
st_meta_decode(const uint8_t *buf, size_t len, struct st_meta *m, char *why, size_t why_len)
{
	uint8_t sum[SM_SUM];
	size_t nl, sl;
	int rc, n;

	memset(m, 0, sizeof(*m));
	if ((rc = sm_check_fixed(buf, len, &n, why, why_len)) != 0)
		return rc;
	sm_sum(buf, len - SM_SUM, sum);
	if (memcmp(sum, buf + len - SM_SUM, SM_SUM) != 0)
		return store_fail(why, why_len, STORE_ERR_CORRUPT, "checksum mismatch");
	nl = sm_get16(buf + 6);
	sl = sm_get16(buf + 8);
	m->d.bytes = sm_get64(buf + 16);
	m->d.tokens = sm_get64(buf + 24);
	m->d.created_us = (int64_t)sm_get64(buf + 32);
	m->d.last_used_us = (int64_t)sm_get64(buf + 40);
	if (sm_text(m->d.name, buf + SM_FIXED, nl) || sm_text(m->d.source, buf + SM_FIXED + nl, sl))
		return store_fail(why, why_len, STORE_ERR_CORRUPT, "NUL inside name or source");
	if (!(m->p = calloc((size_t)n, sizeof(*m->p))))
		return store_fail(why, why_len, STORE_ERR_NOMEM, "out of memory");
	m->n = m->d.n_profiles = n;
	if ((rc = sm_table(m, buf + SM_FIXED + nl + sl, why, why_len)) != 0) {
		st_meta_free(m);
		return rc;
	}
	return 0;
}

void
st_meta_free(struct st_meta *m)
{
	free(m->p);
	m->p = NULL;
	m->n = 0;
}

int
st_meta_find(const struct st_meta *m, const uint8_t *prof)
{
	int i;
	for (i = 0; i < m->n; i++)
		if (memcmp(m->p[i].id, prof, STORE_ID_BYTES) == 0)
			return i;
	return -1;
}

/* Keeps the derived fields (n_profiles, stored_bytes) in step. */
static void
sm_derive(struct st_meta *m)
{
	int i;
	m->d.n_profiles = m->n;
	m->d.stored_bytes = 0;
	for (i = 0; i < m->n; i++)
		m->d.stored_bytes += m->p[i].bytes;
}

int
st_meta_set(struct st_meta *m, const uint8_t *prof, int64_t last_used_us, uint64_t bytes)
{
	int i = st_meta_find(m, prof), at;
	if (i < 0) {
		struct st_prof *p = realloc(m->p, (size_t)(m->n + 1) * sizeof(*p));
		if (!p)
			return STORE_ERR_NOMEM;
		m->p = p;
		for (at = 0; at < m->n && memcmp(p[at].id, prof, STORE_ID_BYTES) < 0; at++)
			;
		memmove(p + at + 1, p + at, (size_t)(m->n - at) * sizeof(*p));
		memcpy(p[at].id, prof, STORE_ID_BYTES);
		m->n++;
		i = at;
	}
	m->p[i].last_used_us = last_used_us;
	m->p[i].bytes = bytes;
	sm_derive(m);
	return 0;
}

void
st_meta_del(struct st_meta *m, int idx)
{
	memmove(m->p + idx, m->p + idx + 1, (size_t)(m->n - idx - 1) * sizeof(*m->p));
	m->n--;
	sm_derive(m);
}
