/*
 * pick.c: the one rule for the snapshot a document answers from, shared by
 * kvsnapd and `kvsnap --local`: among its snapshots this profile's, else
 * one `shrink` cut to exactly this profile's budget, else (the default
 * profile) one under a previous default, the latest first; nothing else.  The
 * others are listed for the advice a mismatch gives (advice.c).
 */
#include <stdio.h>
#include <string.h>

#include "service/service_internal.h"

struct pick {
	const struct svc *v;
	struct svc_picked *pk;
	int shrunk;                      /* a shrink cut to this profile seen */
	uint8_t shrunk_id[SNAP_ID_BYTES];
	struct svc_snap_figures shrunk_fig;
	struct parts_scan parts;         /* this profile's parts (parts.c) */
	int prev;                        /* one under a previous default seen: */
	int prev_rank;                   /* which (0 the latest) */
	uint8_t prev_id[SNAP_ID_BYTES];
	struct svc_snap_figures prev_fig;
};

static int
pick_cb(void *arg, const uint8_t pid[SNAP_ID_BYTES], uint64_t bytes,
    const struct snap_header *h, const char *why, int64_t last_used_us)
{
	struct pick *p = arg;
	struct svc_picked *pk = p->pk;
	int i;
	(void)why;
	if (parts_scan_add(&p->parts, h, bytes, last_used_us))
		return 0;
	if (!memcmp(pid, p->v->profile_id, SNAP_ID_BYTES)) {
		pk->found = 1;
		memcpy(pk->profile_id, pid, SNAP_ID_BYTES);
		if (h)
			svc_snap_figures(h, bytes, &pk->fig);
		return 0;
	}
	if (h && !p->shrunk && svc_profile_is_shrunk(h->profile, p->v->profile)) {
		memcpy(p->shrunk_id, pid, SNAP_ID_BYTES);
		svc_snap_figures(h, bytes, &p->shrunk_fig);
		p->shrunk = 1;
		return 0;
	}
	for (i = 0; i < p->v->n_prev; i++) {
		if (memcmp(pid, p->v->prev_id[i], SNAP_ID_BYTES))
			continue;
		if (!p->prev || i < p->prev_rank) {
			memcpy(p->prev_id, pid, SNAP_ID_BYTES);
			if (h)
				svc_snap_figures(h, bytes, &p->prev_fig);
			p->prev = 1;
			p->prev_rank = i;
		}
		return 0;
	}
	pk->n_other++;
	if (pk->n_listed < SVC_PICK_LISTED)
		snprintf(pk->other[pk->n_listed++], sizeof(pk->other[0]), "%s",
		    h ? h->profile : "(an unreadable snapshot)");
	return 0;
}

int
svc_pick(struct svc *v, const uint8_t doc_id[SNAP_ID_BYTES], struct svc_picked *pk,
    struct svc_status *st)
{
	return svc_pick_in(v, v->s, doc_id, pk, st);
}

int
svc_pick_in(struct svc *v, struct store *s, const uint8_t doc_id[SNAP_ID_BYTES],
    struct svc_picked *pk, struct svc_status *st)
{
	struct pick p;
	int rc;

	memset(st, 0, sizeof(*st));
	memset(pk, 0, sizeof(*pk));
	memset(&p, 0, sizeof(p));
	p.v = v;
	p.pk = pk;
	parts_scan_init(&p.parts, v->profile);
	rc = snap_profiles(s, doc_id, pick_cb, &p, st->why, sizeof(st->why));
	if (rc && rc != STORE_ERR_NOT_FOUND)
		return svc_fail(st, SVC_AT_LOOKUP, rc);
	parts_scan_end(&p.parts);
	if (p.parts.chosen >= 0) { /* a whole set of parts: over a one-part snapshot too */
		const struct parts_group *g = &p.parts.g[p.parts.chosen];
		char text[SNAP_MAX_PROFILE];
		pk->found = 1;
		pk->n_parts = g->n;
		pk->fig = g->fig;
		(void)svc_part_profile(v->profile, 0, g->n, text, sizeof(text), pk->profile_id);
		return 0;
	} else if (p.parts.n_groups) { /* the most complete set, for the advice */
		int i;
		for (i = 0; i < p.parts.n_groups; i++)
			if (p.parts.g[i].have > pk->parts_have) {
				pk->parts_have = p.parts.g[i].have;
				pk->parts_of = p.parts.g[i].n;
			}
	}
	if (!pk->found && p.shrunk) {
		pk->found = 1;
		memcpy(pk->profile_id, p.shrunk_id, SNAP_ID_BYTES);
		pk->fig = p.shrunk_fig;
	}
	if (!pk->found && p.prev) { /* an old store, under a default before */
		pk->found = 1;
		memcpy(pk->profile_id, p.prev_id, SNAP_ID_BYTES);
		pk->fig = p.prev_fig;
	}
	return 0;
}
