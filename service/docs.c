/*
 * docs.c: the store's documents as both kvsnapd's admin jobs and the
 * kvsnap store commands read them: a DOC reference resolved, the units a
 * snapshot keeps and its figures against the full cache (the one formula
 * for the full cache's size).  (A document's snapshots with their decoded
 * headers: snap_profiles, where the store and the snapshot codec meet.)
 */
#include <stdio.h>
#include <string.h>

#include "service/service_internal.h"

int
svc_resolve(struct store *s, const char *ref, uint8_t doc_id[SNAP_ID_BYTES],
    struct svc_status *st)
{
	if (!svc_resolve_store(s, ref, doc_id, st))
		return 0;
	return svc_resolve_file(s, ref, NULL, doc_id, st);
}

int
svc_resolve_store(struct store *s, const char *ref, uint8_t doc_id[SNAP_ID_BYTES],
    struct svc_status *st)
{
	int rc;

	memset(st, 0, sizeof(*st));
	if (!(rc = store_resolve(s, ref, doc_id, st->why, sizeof(st->why))))
		return 0;
	if (!st->why[0])
		snprintf(st->why, sizeof(st->why), "%s", store_strerror(rc));
	return svc_fail(st, SVC_AT_RESOLVE, rc);
}

int64_t
svc_snapshot_units(const struct snap_header *h)
{
	int64_t units = 0, i;
	for (i = 0; i < (int64_t)h->n_layer * h->n_head_kv; i++)
		units += h->counts[i];
	return units;
}

uint64_t
svc_full_cache_bytes(int64_t n_tokens, int n_layer, int n_head_kv, int head_dim)
{
	/* K and V, 2 bytes (fp16) each */
	return (uint64_t)n_tokens * (uint64_t)n_layer * (uint64_t)n_head_kv * (uint64_t)head_dim *
	    2u * 2u;
}

void
svc_snap_figures(const struct snap_header *h, uint64_t bytes, struct svc_snap_figures *f)
{
	memset(f, 0, sizeof(*f));
	f->bytes = bytes;
	f->tokens = (int64_t)h->n_tokens;
	f->units = svc_snapshot_units(h);
	f->full_units = (int64_t)h->n_tokens * h->n_layer * h->n_head_kv;
	f->full_bytes = svc_full_cache_bytes((int64_t)h->n_tokens, h->n_layer, h->n_head_kv,
	    h->head_dim);
}
