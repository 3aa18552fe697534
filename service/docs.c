/*
 * docs.c: the store's documents as both kvsnapd's admin jobs and the
 * kvsnap store commands read them: a DOC reference resolved, the units a
 * snapshot keeps and its figures against the full cache (the one formula
 * for the full cache's size).  (A document's snapshots with their decoded
 * headers: snap_profiles, where the store and the snapshot codec meet.)
 * And a profile reference (`rm DOC --profile P`, the rm op's "profile"):
 * a hex prefix of one of the document's profile ids.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h> /* for strncasecmp */

#include "common/fail.h"
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

/* Matching a profile reference against a document's snapshots. */
struct prof_ref {
	const char *ref;
	size_t n;
	int hits;
	uint8_t id[SNAP_ID_BYTES];
};

static int
prof_ref_cb(void *arg, const uint8_t pid[SNAP_ID_BYTES], uint64_t bytes, const uint8_t *head,
    size_t head_len, const char *why, int64_t last_used_us)
{
	struct prof_ref *p = arg;
	char hex[2 * SNAP_ID_BYTES + 1];
	(void)bytes;
	(void)head;
	(void)head_len;
	(void)why;
	(void)last_used_us;
	store_hex(pid, SNAP_ID_BYTES, hex);
	if (!strncasecmp(hex, p->ref, p->n)) {
		if (!p->hits++)
			memcpy(p->id, pid, SNAP_ID_BYTES);
	}
	return 0;
}

int
svc_profile_ref(struct store *s, const uint8_t doc_id[SNAP_ID_BYTES], const char *ref,
    uint8_t profile_id[SNAP_ID_BYTES], char *why, size_t why_len)
{
	struct prof_ref p;
	size_t i;
	int rc;

	memset(&p, 0, sizeof(p));
	p.ref = ref;
	p.n = ref ? strlen(ref) : 0;
	for (i = 0; i < p.n && kv_hex_value(ref[i]) >= 0; i++)
		;
	if (p.n < 4 || p.n > 2 * SNAP_ID_BYTES || i < p.n)
		return kv_fail(why, why_len, STORE_ERR_ARG, "a profile is 4 to %d hex digits of "
		    "its id (as info shows it), not '%.80s'", 2 * SNAP_ID_BYTES, ref ? ref : "");
	if ((rc = store_profiles(s, doc_id, prof_ref_cb, &p, why, why_len)))
		return rc;
	if (!p.hits)
		return kv_fail(why, why_len, STORE_ERR_NOT_FOUND,
		    "the document has no snapshot %.64s (kvsnap info DOC lists them)", ref);
	if (p.hits > 1)
		return kv_fail(why, why_len, STORE_ERR_AMBIGUOUS,
		    "%.64s names %d of the document's snapshots: give more digits", ref, p.hits);
	memcpy(profile_id, p.id, SNAP_ID_BYTES);
	return 0;
}

int
svc_store_open(struct store **out, const char *state, int read_only, char *why, size_t why_len)
{
	struct store_opts so = { .read_only = read_only };
	return store_open(out, state, &so, why, why_len);
}

void
svc_store_close(struct store *s)
{
	store_close(s);
}
