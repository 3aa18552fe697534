/*
 * store_meta.c: the document metadata codec: the bytes a backend keeps as
 * a document's value (LMDB: its `docs` record).
 *
 * Layout, version 3, every integer little-endian:
 *
 *   off  size  field
 *    0    4    magic "KSdm"
 *    4    2    version (3; 1 and 2 are read too)
 *    6    2    name_len    (0..255; 0: unnamed)
 *    8    2    source_len  (0..1023)
 *   10    2    n_profiles  (1..65535; a document without snapshots is removed)
 *   12    2    flags       (bit 0: shared; the others 0)
 *   14    2    n_owners    (0..STORE_OWNERS_MAX)
 *   16    8    bytes        document size
 *   24    8    tokens       document tokens
 *   32    8    created_us   (i64, CLOCK_REALTIME µs)
 *   40    8    last_used_us (i64)
 *   48         name bytes, then source bytes (no NUL inside either)
 *    …   48×n  profile table, ids strictly ascending:
 *                id[32], last_used_us (i64; its lru key), bytes (u64; its
 *                records as stored)
 *    …   4×n   owners: uids (u32), strictly ascending
 *    …   1     format_len (0..STORE_FORMAT_MAX)
 *    …   f     format bytes: what the document was read as ("pdf (3
 *              pages)", "html", "text (UTF-16LE)"; no NUL inside)
 *    …   16    BLAKE2b-128 of every byte before it
 *
 * Version 1 (before owners) had 4 reserved zero bytes at 12 and no owner
 * table: it reads as no owners, not shared (the safe reading: only the
 * daemon's own user and root see such a document).  Version 2 (before
 * formats) had no format_len and format: it reads as "text", which is all
 * kvsnap read then.  Writes are version 3.
 *
 * The value is exactly that long.  The table is what makes a snapshot's lru
 * key and size findable without scanning: touch, replace and prune rebuild
 * the old lru key from it.  The checksum catches flipped bits that would
 * otherwise pass as plausible sizes or times.
 *
 * Also the rules on a decoded document both backends follow: its owner
 * set, and what a later put changes of it (st_doc_merge).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "common/le.h"
#include "storage/store_backend.h"

#define SM_MAGIC "KSdm"
#define SM_VERSION 3
#define SM_FLAG_SHARED 1u
#define SM_FIXED 48
#define SM_PROF 48
#define SM_SUM 16

static void
sm_sum(const uint8_t *buf, size_t len, uint8_t out[SM_SUM])
{
	crypto_generichash(out, SM_SUM, buf, len, NULL, 0);
}

size_t
st_meta_size(const struct st_meta *m)
{
	return SM_FIXED + strlen(m->d.name) + strlen(m->d.source) + (size_t)m->n * SM_PROF +
	    (size_t)m->d.n_owners * 4 + 1 + strlen(m->d.format) + SM_SUM;
}

/* out has st_meta_size(m) bytes; m was checked by the writer (name and
 * source lengths, 1..65535 profiles). */
void
st_meta_encode(const struct st_meta *m, uint8_t *out)
{
	size_t nl = strlen(m->d.name), sl = strlen(m->d.source), fl = strlen(m->d.format);
	size_t off = SM_FIXED;
	int i;

	memcpy(out, SM_MAGIC, 4);
	kv_le_put16(out + 4, SM_VERSION);
	kv_le_put16(out + 6, (unsigned)nl);
	kv_le_put16(out + 8, (unsigned)sl);
	kv_le_put16(out + 10, (unsigned)m->n);
	kv_le_put16(out + 12, m->d.shared ? SM_FLAG_SHARED : 0);
	kv_le_put16(out + 14, (unsigned)m->d.n_owners);
	kv_le_put64(out + 16, m->d.bytes);
	kv_le_put64(out + 24, m->d.tokens);
	kv_le_put64(out + 32, (uint64_t)m->d.created_us);
	kv_le_put64(out + 40, (uint64_t)m->d.last_used_us);
	memcpy(out + off, m->d.name, nl);
	off += nl;
	memcpy(out + off, m->d.source, sl);
	off += sl;
	for (i = 0; i < m->n; i++, off += SM_PROF) {
		memcpy(out + off, m->p[i].id, STORE_ID_BYTES);
		kv_le_put64(out + off + 32, (uint64_t)m->p[i].last_used_us);
		kv_le_put64(out + off + 40, m->p[i].bytes);
	}
	for (i = 0; i < m->d.n_owners; i++, off += 4)
		kv_le_put32(out + off, m->d.owners[i]);
	out[off++] = (uint8_t)fl;
	memcpy(out + off, m->d.format, fl);
	off += fl;
	sm_sum(out, off, out + off);
}

/* The fixed part: magic, version, lengths; *n_prof, *n_own and *fmt_at
 * (the offset of format_len; 0 before version 3) set. */
static int
sm_check_fixed(const uint8_t *buf, size_t len, int *n_prof, int *n_own, size_t *fmt_at,
    char *why, size_t why_len)
{
	unsigned ver;
	size_t want;
	if (len < SM_FIXED + SM_SUM)
		return store_fail(why, why_len, STORE_ERR_CORRUPT, "%zu bytes, too short", len);
	if (memcmp(buf, SM_MAGIC, 4) != 0)
		return store_fail(why, why_len, STORE_ERR_CORRUPT, "bad magic");
	ver = kv_le_get16(buf + 4);
	if (ver < 1 || ver > SM_VERSION)
		return store_fail(why, why_len, STORE_ERR_CORRUPT,
		    "metadata version %u (this build reads 1 to %d)", ver, SM_VERSION);
	*n_own = ver == 1 ? 0 : (int)kv_le_get16(buf + 14);
	if (ver == 1 ? kv_le_get32(buf + 12) != 0 :
	    (kv_le_get16(buf + 12) & ~SM_FLAG_SHARED) != 0 || *n_own > STORE_OWNERS_MAX)
		return store_fail(why, why_len, STORE_ERR_CORRUPT,
		    "flags or owner count out of range");
	if (kv_le_get16(buf + 6) > ST_NAME_MAX || kv_le_get16(buf + 8) > ST_SOURCE_MAX)
		return store_fail(why, why_len, STORE_ERR_CORRUPT, "name or source length out of range");
	*n_prof = (int)kv_le_get16(buf + 10);
	if (*n_prof < 1)
		return store_fail(why, why_len, STORE_ERR_CORRUPT, "no profiles");
	want = SM_FIXED + kv_le_get16(buf + 6) + kv_le_get16(buf + 8) + (size_t)*n_prof * SM_PROF +
	    (size_t)*n_own * 4 + SM_SUM;
	*fmt_at = 0;
	if (ver >= 3) {
		*fmt_at = want - SM_SUM;
		if (len < want + 1)
			return store_fail(why, why_len, STORE_ERR_CORRUPT, "%zu bytes, too short", len);
		if (buf[*fmt_at] > STORE_FORMAT_MAX)
			return store_fail(why, why_len, STORE_ERR_CORRUPT, "format length out of range");
		want += 1 + buf[*fmt_at];
	}
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
		m->p[i].last_used_us = (int64_t)kv_le_get64(p + 32);
		m->p[i].bytes = kv_le_get64(p + 40);
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

/* The flags and the owner table: uids strictly ascending. */
static int
sm_owners(struct st_meta *m, const uint8_t *buf, int n_own, const uint8_t *p, char *why,
    size_t why_len)
{
	int i;
	m->d.shared = kv_le_get16(buf + 4) != 1 && (kv_le_get16(buf + 12) & SM_FLAG_SHARED);
	m->d.n_owners = n_own;
	for (i = 0; i < n_own; i++, p += 4) {
		m->d.owners[i] = kv_le_get32(p);
		if (i > 0 && m->d.owners[i - 1] >= m->d.owners[i])
			return store_fail(why, why_len, STORE_ERR_CORRUPT,
			    "owner table out of order");
	}
	return 0;
}

int
st_meta_decode(const uint8_t *buf, size_t len, struct st_meta *m, char *why, size_t why_len)
{
	uint8_t sum[SM_SUM];
	size_t nl, sl, fmt_at = 0;
	int rc, n, n_own;

	memset(m, 0, sizeof(*m));
	if ((rc = sm_check_fixed(buf, len, &n, &n_own, &fmt_at, why, why_len)) != 0)
		return rc;
	sm_sum(buf, len - SM_SUM, sum);
	if (memcmp(sum, buf + len - SM_SUM, SM_SUM) != 0)
		return store_fail(why, why_len, STORE_ERR_CORRUPT, "checksum mismatch");
	nl = kv_le_get16(buf + 6);
	sl = kv_le_get16(buf + 8);
	m->d.bytes = kv_le_get64(buf + 16);
	m->d.tokens = kv_le_get64(buf + 24);
	m->d.created_us = (int64_t)kv_le_get64(buf + 32);
	m->d.last_used_us = (int64_t)kv_le_get64(buf + 40);
	if (sm_text(m->d.name, buf + SM_FIXED, nl) || sm_text(m->d.source, buf + SM_FIXED + nl, sl))
		return store_fail(why, why_len, STORE_ERR_CORRUPT, "NUL inside name or source");
	if (!fmt_at) /* before version 3: plain text was all there was */
		snprintf(m->d.format, sizeof(m->d.format), "text");
	else if (sm_text(m->d.format, buf + fmt_at + 1, buf[fmt_at]))
		return store_fail(why, why_len, STORE_ERR_CORRUPT, "NUL inside the format");
	if (!(m->p = calloc((size_t)n, sizeof(*m->p))))
		return store_fail(why, why_len, STORE_ERR_NOMEM, "out of memory");
	m->n = m->d.n_profiles = n;
	if ((rc = sm_table(m, buf + SM_FIXED + nl + sl, why, why_len)) != 0 ||
	    (rc = sm_owners(m, buf, n_own, buf + SM_FIXED + nl + sl + (size_t)n * SM_PROF, why,
	    why_len)) != 0) {
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

int
store_doc_owned(const struct store_doc *d, uint32_t uid)
{
	int i;
	for (i = 0; i < d->n_owners; i++)
		if (d->owners[i] == uid)
			return 1;
	return 0;
}

/* Kept ascending: the metadata's layout wants it so (one encoding per set). */
int
store_doc_add_owner(struct store_doc *d, uint32_t uid)
{
	int at;
	if (store_doc_owned(d, uid))
		return 0;
	if (d->n_owners >= STORE_OWNERS_MAX)
		return STORE_ERR_FULL;
	for (at = d->n_owners; at > 0 && d->owners[at - 1] > uid; at--)
		d->owners[at] = d->owners[at - 1];
	d->owners[at] = uid;
	d->n_owners++;
	return 0;
}

int
st_doc_merge(struct store_doc *stored, const struct store_doc *d, char *why, size_t why_len)
{
	int i;
	for (i = 0; i < d->n_owners && i < STORE_OWNERS_MAX; i++)
		if (store_doc_add_owner(stored, d->owners[i]) != 0)
			return store_fail(why, why_len, STORE_ERR_FULL,
			    "the document already has %d owners (share it instead)",
			    STORE_OWNERS_MAX);
	stored->shared |= d->shared;
	if (d->source[0])
		memcpy(stored->source, d->source, sizeof(stored->source));
	if (d->format[0])
		memcpy(stored->format, d->format, sizeof(stored->format));
	if (d->bytes)
		stored->bytes = d->bytes;
	if (d->tokens)
		stored->tokens = d->tokens;
	return 0;
}
