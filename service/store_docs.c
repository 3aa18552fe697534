/*
 * store_docs.c: ls and info (store.h): the documents a caller may read,
 * one document with its snapshots, each with the figures of what it keeps
 * against the full cache; the same records for kvsnapd's ls and info ops
 * and the CLI's ls and info.
 */
#include <stdlib.h>
#include <string.h>

#include "service/service_internal.h"

/* A store record as the store commands report it. */
static void
doc_from(const struct store_doc *sd, const struct svc_who *who, struct svc_doc *d)
{
	memset(d, 0, sizeof(*d));
	memcpy(d->doc_id, sd->doc_id, SVC_ID_BYTES);
	memcpy(d->name, sd->name, sizeof(d->name));
	memcpy(d->source, sd->source, sizeof(d->source));
	memcpy(d->format, sd->format, sizeof(d->format));
	d->bytes = sd->bytes;
	d->tokens = sd->tokens;
	d->created_us = sd->created_us;
	d->last_used_us = sd->last_used_us;
	d->snapshots = sd->n_profiles;
	d->stored_bytes = sd->stored_bytes;
	d->shared = sd->shared;
	d->mine = who && store_doc_owned(sd, who->uid);
	d->n_owners = sd->n_owners;
	memcpy(d->owners, sd->owners, sizeof(d->owners));
}

/* The figures of a document's largest snapshot (most units kept); a
 * document in parts (parts.c): its parts summed, and their count (of the
 * set with the most parts). */
struct fig_scan {
	struct svc_doc *d;
	struct svc_snap_figures sum;
};

static int
fig_cb(void *arg, const uint8_t pid[SNAP_ID_BYTES], uint64_t bytes, const struct snap_header *h,
    const char *why, int64_t last_used_us)
{
	struct fig_scan *fs = arg;
	struct svc_doc *d = fs->d;
	struct svc_snap_figures g;
	size_t bl;
	unsigned part, n;
	(void)pid;
	(void)why;
	(void)last_used_us;
	if (!h)
		return 0;
	svc_snap_figures(h, bytes, &g);
	if (svc_part_parse(h->profile, &bl, &part, &n)) {
		if (n > d->parts) {
			memset(&fs->sum, 0, sizeof(fs->sum));
			d->parts = n;
		}
		if (n == d->parts) {
			fs->sum.bytes += g.bytes;
			fs->sum.tokens += g.tokens;
			fs->sum.units += g.units;
			fs->sum.full_units += g.full_units;
			fs->sum.full_bytes += g.full_bytes;
		}
		if (fs->sum.units > d->fig.units)
			d->fig = fs->sum;
		return 0;
	}
	if (g.units > d->fig.units)
		d->fig = g;
	return 0;
}

/* An unreadable header leaves the figures unknown (zeros): verify says
 * why. */
static void
doc_figures(struct store *s, struct svc_doc *d)
{
	struct fig_scan fs;
	char why[256];
	memset(&fs, 0, sizeof(fs));
	fs.d = d;
	d->figured = 1;
	(void)snap_profiles(s, d->doc_id, fig_cb, &fs, why, sizeof(why));
}

/* The array p (room for *cap elements of size, n of them used) with room
 * for one more: p, or a larger copy, or NULL out of memory (p kept). */
static void *
grow(void *p, size_t *cap, size_t n, size_t size)
{
	void *q;
	size_t c;
	if (n < *cap)
		return p;
	c = *cap ? 2 * *cap : 8;
	if (!(q = realloc(p, c * size)))
		return NULL;
	*cap = c;
	return q;
}

/* A store failure: rc, why given the code's words when the store gave none. */
static int
fail_words(int rc, char *why, size_t why_len)
{
	if (why_len && !why[0])
		snprintf(why, why_len, "%s", store_strerror(rc));
	return rc;
}

struct ls_scan {
	const struct svc_target *t;
	svc_damaged_fn damaged;
	void *arg;
	struct svc_doc *d;
	size_t n, cap;
};

static int
ls_bad(void *arg, const uint8_t doc_id[SNAP_ID_BYTES], const char *why)
{
	struct ls_scan *ls = arg;
	if (ls->damaged)
		ls->damaged(ls->arg, doc_id, why);
	return 0;
}

/* Only the documents the caller may read. */
static int
ls_cb(void *arg, const struct store_doc *sd)
{
	struct ls_scan *ls = arg;
	struct svc_doc *d;
	if (!svc_may_read(sd, ls->t->who))
		return 0;
	if (!(d = grow(ls->d, &ls->cap, ls->n, sizeof(*d))))
		return -1;
	ls->d = d;
	doc_from(sd, ls->t->who, &ls->d[ls->n++]);
	return 0;
}

int
svc_ls(const struct svc_target *t, int figures, svc_damaged_fn damaged, void *arg,
    struct svc_doc **out, size_t *n, char *why, size_t why_len)
{
	struct ls_scan ls = { t, damaged, arg, NULL, 0, 0 };
	size_t i;
	int rc;

	*out = NULL;
	*n = 0;
	if ((rc = store_ls_each(t->s, ls_cb, ls_bad, &ls, why, why_len))) {
		free(ls.d);
		return fail_words(rc, why, why_len);
	}
	for (i = 0; figures && i < ls.n; i++)
		doc_figures(t->s, &ls.d[i]);
	*out = ls.d;
	*n = ls.n;
	return 0;
}

int
svc_doc_get(const struct svc_target *t, const uint8_t doc_id[SVC_ID_BYTES], int figures,
    struct svc_doc *d, char *why, size_t why_len)
{
	struct store_doc sd;
	int rc;
	if ((rc = store_info(t->s, doc_id, &sd, why, why_len)))
		return fail_words(rc, why, why_len);
	doc_from(&sd, t->who, d);
	if (figures)
		doc_figures(t->s, d);
	return 0;
}

int
svc_doc_may_change(const struct svc_doc *d, const struct svc_who *who)
{
	int i;
	if (!who || who->all)
		return 1;
	for (i = 0; i < d->n_owners; i++)
		if (d->owners[i] == who->uid)
			return 1;
	return 0;
}

struct info_scan {
	const struct svc_target *t;
	struct svc_snap *sn;
	size_t n, cap;
};

static int
info_cb(void *arg, const uint8_t pid[SNAP_ID_BYTES], uint64_t bytes, const struct snap_header *h,
    const char *why, int64_t last_used_us)
{
	struct info_scan *in = arg;
	struct svc_snap *sn;
	size_t bl;
	if (!(sn = grow(in->sn, &in->cap, in->n, sizeof(*sn))))
		return -1;
	in->sn = sn;
	sn = &in->sn[in->n++];
	memset(sn, 0, sizeof(*sn));
	memcpy(sn->profile_id, pid, SVC_ID_BYTES);
	sn->stored_bytes = bytes;
	sn->last_used_us = last_used_us;
	sn->active = in->t->active && !memcmp(pid, in->t->active, SVC_ID_BYTES);
	if (!h) {
		snprintf(sn->error, sizeof(sn->error), "%s", why ? why : "unreadable header");
		return 0;
	}
	sn->readable = 1;
	snprintf(sn->profile, sizeof(sn->profile), "%s", h->profile);
	sn->quant = h->quant;
	sn->pos_slot = h->pos_mode != 0;
	svc_snap_figures(h, bytes, &sn->fig);
	if (!svc_part_parse(h->profile, &bl, &sn->part, &sn->parts))
		sn->part = sn->parts = 0;
	return 0;
}

int
svc_info(const struct svc_target *t, const uint8_t doc_id[SVC_ID_BYTES], struct svc_doc *d,
    struct svc_snap **snaps, size_t *n, char *why, size_t why_len)
{
	struct info_scan in = { t, NULL, 0, 0 };
	int rc;

	*snaps = NULL;
	*n = 0;
	if ((rc = svc_doc_get(t, doc_id, 1, d, why, why_len)))
		return rc;
	if ((rc = snap_profiles(t->s, doc_id, info_cb, &in, why, why_len))) {
		free(in.sn);
		return fail_words(rc, why, why_len);
	}
	*snaps = in.sn;
	*n = in.n;
	return 0;
}
