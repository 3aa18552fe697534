/*
 * parts.c: a document stored in parts (issue 29, item 1).  Part I of a
 * document in N parts (N >= 2) is a snapshot of the same doc_id under the
 * profile text of the ingest's profile with " part=I/N" added (I from 0),
 * its profile_id that text's BLAKE2b-256 like every profile's.  So the
 * store and the codec need no change and no new key: a store written
 * before parts reads as it did (every snapshot is a whole document, part
 * 0 of 1), a one-part document is stored exactly as before, and a part
 * carries its number and its document's part count in its own header.
 *
 * Parts are stored one store transaction each (one part's cache in
 * memory at a time).  A crash or a cancel between two parts leaves a set
 * with parts missing: the pick rule ignores it (the document answers as
 * if not stored, and an ingest is not skipped), `kvsnap verify` reports
 * it, and ingesting the document again stores the whole set, the same
 * split of the same text putting the same parts (replaced where there).
 */
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service/service_internal.h"

int
svc_part_profile(const char *base, unsigned part, unsigned n, char *text, size_t cap,
    uint8_t id[SNAP_ID_BYTES])
{
	int k = snprintf(text, cap, "%s part=%u/%u", base, part, n);
	if (k < 0 || (size_t)k >= cap || (size_t)k >= SNAP_MAX_PROFILE || part >= n || n < 2)
		return -1;
	if (sodium_init() < 0)
		return -1;
	crypto_generichash(id, SNAP_ID_BYTES, (const unsigned char *)text, (size_t)k, NULL, 0);
	return 0;
}

int
svc_part_parse(const char *profile, size_t *base_len, unsigned *part, unsigned *n)
{
	const char *p = strrchr(profile, ' ');
	unsigned long i, k;
	char *end;

	if (!p || strncmp(p, " part=", 6))
		return 0;
	if (p[6] < '0' || p[6] > '9')
		return 0;
	i = strtoul(p + 6, &end, 10);
	if (*end != '/' || end[1] < '0' || end[1] > '9')
		return 0;
	k = strtoul(end + 1, &end, 10);
	if (*end || k < 2 || i >= k || k > SVC_PARTS_MAX)
		return 0;
	*base_len = (size_t)(p - profile);
	*part = (unsigned)i;
	*n = (unsigned)k;
	return 1;
}

/* 1 when h is a part of a set of ps's base profile: its number and the
 * set's part count in *part and *n. */
static int
parts_scan_match(const struct parts_scan *ps, const struct snap_header *h, unsigned *part,
    unsigned *n)
{
	size_t bl;
	return h && svc_part_parse(h->profile, &bl, part, n) && bl == ps->base_len &&
	    !memcmp(h->profile, ps->base, bl);
}

void
parts_scan_init(struct parts_scan *ps, const char *base)
{
	memset(ps, 0, sizeof(*ps));
	ps->base = base;
	ps->base_len = strlen(base);
	ps->chosen = -1;
}

int
parts_scan_add(struct parts_scan *ps, const struct snap_header *h, uint64_t bytes,
    int64_t last_used_us)
{
	struct parts_group *g;
	struct svc_snap_figures f;
	unsigned part, n;
	int i;

	if (!parts_scan_match(ps, h, &part, &n))
		return 0;
	for (i = 0; i < ps->n_groups; i++)
		if (ps->g[i].n == n)
			break;
	if (i == ps->n_groups) {
		if (ps->n_groups == PARTS_GROUPS)
			return 1; /* a part all the same, of a set past the ones kept */
		ps->n_groups++;
		memset(&ps->g[i], 0, sizeof(ps->g[i]));
		ps->g[i].n = n;
	}
	g = &ps->g[i];
	g->have++; /* one snapshot per profile id: each part once */
	svc_snap_figures(h, bytes, &f);
	g->fig.bytes += f.bytes;
	g->fig.tokens += f.tokens;
	g->fig.units += f.units;
	g->fig.full_units += f.full_units;
	g->fig.full_bytes += f.full_bytes;
	(void)part;
	if (last_used_us > g->last_us) /* the set stored or used last */
		g->last_us = last_used_us;
	return 1;
}

void
parts_scan_end(struct parts_scan *ps)
{
	int i;
	ps->chosen = -1;
	for (i = 0; i < ps->n_groups; i++)
		if (ps->g[i].have == ps->g[i].n &&
		    (ps->chosen < 0 || ps->g[i].last_us > ps->g[ps->chosen].last_us))
			ps->chosen = i;
}

/* The per-part figures of the chosen set. */
struct parts_list {
	struct parts_scan ps;
	const char *base;
	unsigned n;
	struct svc_part_info *out;
	int pass;
};

static int
parts_list_cb(void *arg, const uint8_t pid[SNAP_ID_BYTES], uint64_t bytes,
    const struct snap_header *h, const char *why, int64_t last_used_us)
{
	struct parts_list *pl = arg;
	unsigned part, n;
	(void)why;

	if (pl->pass == 0) {
		(void)parts_scan_add(&pl->ps, h, bytes, last_used_us);
		return 0;
	}
	if (!parts_scan_match(&pl->ps, h, &part, &n) || n != pl->n)
		return 0;
	pl->out[part].part = part;
	memcpy(pl->out[part].profile_id, pid, SNAP_ID_BYTES);
	svc_snap_figures(h, bytes, &pl->out[part].fig);
	pl->out[part].last_used_us = last_used_us;
	return 0;
}

int
svc_parts_list(struct svc *v, const uint8_t doc_id[SNAP_ID_BYTES], struct svc_part_info **out,
    unsigned *n, struct svc_status *st)
{
	struct parts_list pl;
	int rc;

	*out = NULL;
	*n = 0;
	memset(st, 0, sizeof(*st));
	memset(&pl, 0, sizeof(pl));
	parts_scan_init(&pl.ps, v->profile);
	if ((rc = snap_profiles(v->s, doc_id, parts_list_cb, &pl, st->why, sizeof(st->why))))
		return rc == STORE_ERR_NOT_FOUND ? 0 : svc_fail(st, SVC_AT_LOOKUP, rc);
	parts_scan_end(&pl.ps);
	if (pl.ps.chosen < 0)
		return 0;
	pl.n = pl.ps.g[pl.ps.chosen].n;
	if (!(pl.out = calloc(pl.n, sizeof(*pl.out)))) {
		snprintf(st->why, sizeof(st->why), "out of memory");
		return svc_fail(st, SVC_AT_LOOKUP, STORE_ERR_NOMEM);
	}
	pl.pass = 1;
	if ((rc = snap_profiles(v->s, doc_id, parts_list_cb, &pl, st->why, sizeof(st->why)))) {
		free(pl.out);
		return svc_fail(st, SVC_AT_LOOKUP, rc);
	}
	*out = pl.out;
	*n = pl.n;
	return 0;
}

/* verify: every set of parts of a document, complete or not. */
struct parts_check {
	struct {
		char base[SNAP_MAX_PROFILE];
		unsigned n, have;
	} g[PARTS_GROUPS];
	int n_groups;
};

static int
parts_check_cb(void *arg, const uint8_t pid[SNAP_ID_BYTES], uint64_t bytes,
    const struct snap_header *h, const char *why, int64_t last_used_us)
{
	struct parts_check *pc = arg;
	size_t bl;
	unsigned part, n;
	int i;
	(void)pid;
	(void)bytes;
	(void)why;
	(void)last_used_us;

	if (!h || !svc_part_parse(h->profile, &bl, &part, &n))
		return 0;
	for (i = 0; i < pc->n_groups; i++)
		if (pc->g[i].n == n && strlen(pc->g[i].base) == bl &&
		    !memcmp(pc->g[i].base, h->profile, bl))
			break;
	if (i == pc->n_groups) {
		if (pc->n_groups == PARTS_GROUPS)
			return 0;
		pc->n_groups++;
		snprintf(pc->g[i].base, sizeof(pc->g[i].base), "%.*s", (int)bl, h->profile);
		pc->g[i].n = n;
		pc->g[i].have = 0;
	}
	pc->g[i].have++;
	return 0;
}

int
svc_parts_check(struct store *s, const uint8_t doc_id[SNAP_ID_BYTES],
    void (*fn)(void *arg, const uint8_t doc_id[SNAP_ID_BYTES], const char *why), void *arg,
    char *why, size_t why_len)
{
	struct parts_check *pc = calloc(1, sizeof(*pc));
	char msg[256];
	int i, rc, bad = 0;

	if (!pc) {
		snprintf(why, why_len, "out of memory");
		return -1;
	}
	rc = snap_profiles(s, doc_id, parts_check_cb, pc, why, why_len);
	if (rc && rc != STORE_ERR_NOT_FOUND) {
		free(pc);
		return -1;
	}
	for (i = 0; i < pc->n_groups; i++)
		if (pc->g[i].have < pc->g[i].n) {
			snprintf(msg, sizeof(msg), "%u of its %u parts stored (an ingest stopped "
			    "between parts: it answers from none of them; ingest it again to "
			    "complete them)", pc->g[i].have, pc->g[i].n);
			if (fn)
				fn(arg, doc_id, msg);
			bad++;
		}
	free(pc);
	return bad;
}
