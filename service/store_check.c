/*
 * store_check.c: verify and prune (store.h): every snapshot's checksums
 * and records, every set of parts whole and the text index beside the
 * local store; the least recently used snapshots over a limit dropped,
 * the text index following.
 */
#include <stdlib.h>
#include <string.h>

#include "service/service_internal.h"

struct verify_scan {
	const struct svc_verify_req *rq;
	struct svc_verified *out;
};

static int
verify_cb(void *arg, const uint8_t doc_id[SNAP_ID_BYTES], const uint8_t profile_id[SNAP_ID_BYTES],
    const char *why)
{
	struct verify_scan *vs = arg;
	vs->out->checked++;
	vs->out->corrupt += why != NULL;
	if (vs->rq->snapshot)
		vs->rq->snapshot(vs->rq->arg, doc_id, profile_id, why);
	return 0;
}

static void
parts_cb(void *arg, const uint8_t doc_id[SNAP_ID_BYTES], const char *why)
{
	struct verify_scan *vs = arg;
	vs->out->parts_bad++;
	vs->rq->parts(vs->rq->arg, doc_id, why);
}

/* Every document's sets of parts whole (the names listed quietly: a
 * damaged document is verify's snapshot finding already). */
static void
verify_parts(const struct svc_target *t, struct verify_scan *vs)
{
	struct svc_target all = *t;
	struct svc_doc *d = NULL;
	size_t n = 0, i;
	char why[512];

	if (vs->rq->doc) {
		(void)svc_parts_check(t->s, vs->rq->doc, parts_cb, vs, why, sizeof(why));
		return;
	}
	all.who = NULL;
	if (svc_ls(&all, 0, NULL, NULL, &d, &n, why, sizeof(why)))
		return;
	for (i = 0; i < n; i++)
		(void)svc_parts_check(t->s, d[i].doc_id, parts_cb, vs, why, sizeof(why));
	free(d);
}

int
svc_verify(const struct svc_target *t, const struct svc_verify_req *rq, struct svc_verified *out,
    char *why, size_t why_len)
{
	struct verify_scan vs = { rq, out };
	char iw[512] = "";
	int rc;

	memset(out, 0, sizeof(*out));
	rc = snap_verify(t->s, rq->doc, verify_cb, &vs, why, why_len);
	if (rc && rc != STORE_ERR_CORRUPT)
		return rc;
	if (rq->parts)
		verify_parts(t, &vs);
	/* the whole local store: its text records and the index beside it */
	if (rq->index && !rq->doc && t->state && svc_lmdb_dir(t->state)) {
		if (svc_index_verify(t->s, t->state, rq->index, rq->arg, &out->index, iw,
		    sizeof(iw))) {
			snprintf(why, why_len, "the text index: %s", iw);
			return STORE_ERR_IO;
		}
		out->index_checked = 1;
	}
	return rc;
}

/* prune's report: each snapshot with its document's record (the names
 * are listed first: the callback runs inside prune's write transaction). */
struct prune_scan {
	const struct svc_prune_req *rq;
	const struct svc_doc *d;
	size_t n;
};

static int
prune_cb(void *arg, const uint8_t doc_id[SNAP_ID_BYTES], const uint8_t profile_id[SNAP_ID_BYTES],
    uint64_t bytes, int64_t last_used_us)
{
	struct prune_scan *ps = arg;
	const struct svc_doc *d = NULL;
	size_t i;
	for (i = 0; i < ps->n && !d; i++)
		if (!memcmp(ps->d[i].doc_id, doc_id, SVC_ID_BYTES))
			d = &ps->d[i];
	if (ps->rq->snapshot)
		ps->rq->snapshot(ps->rq->arg, doc_id, d, profile_id, bytes, last_used_us);
	return 0;
}

int
svc_prune(const struct svc_target *t, const struct svc_prune_req *rq, struct svc_pruned *out,
    char *why, size_t why_len)
{
	struct svc_target all = *t;
	struct store_prune p;
	struct svc_doc *d = NULL;
	struct prune_scan ps = { rq, NULL, 0 };
	int rc;

	memset(out, 0, sizeof(*out));
	all.who = NULL; /* prune sees every document (root's and the service user's) */
	if ((rc = svc_ls(&all, 0, NULL, NULL, &d, &ps.n, why, why_len)))
		return rc;
	ps.d = d;
	memset(&p, 0, sizeof(p));
	p.older_than_us = rq->older_than_us;
	p.max_bytes = rq->max_bytes;
	p.keep = rq->keep;
	p.dry_run = rq->dry_run;
	p.damaged = rq->damaged;
	p.damaged_arg = rq->arg;
	rc = store_prune(t->s, &p, prune_cb, &ps, &out->dropped, &out->bytes, why, why_len);
	free(d);
	if (rc)
		return rc;
	if (!rq->dry_run && out->dropped) /* documents gone with their last snapshot */
		store_index_follow(t, NULL, out->index_why, sizeof(out->index_why));
	return 0;
}
