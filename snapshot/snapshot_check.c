/*
 * snapshot_check.c: the codec's reading of what the store keeps as bytes:
 * a document's profiles with their headers decoded (snap_profiles), and
 * verify's content check of a snapshot's records against its header
 * (snap_verify).  The store checks its own structure; this file checks
 * what the records say.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "snapshot/snapshot_io.h"

#define SC_WHY 320

struct sc_profiles {
	int (*fn)(void *arg, const uint8_t profile_id[SNAP_ID_BYTES], uint64_t bytes,
	    const struct snap_header *h, const char *why, int64_t last_used_us);
	void *arg;
};

static int
sc_profile_cb(void *arg, const uint8_t profile_id[SNAP_ID_BYTES], uint64_t bytes,
    const uint8_t *head, size_t head_len, const char *why, int64_t last_used_us)
{
	struct sc_profiles *a = arg;
	struct snap_header h;
	char hw[256] = "";
	int rc, stop;

	if (!head)
		return a->fn(a->arg, profile_id, bytes, NULL, why, last_used_us);
	memset(&h, 0, sizeof(h));
	rc = snap_header_decode(head, head_len, &h, hw, sizeof(hw));
	stop = a->fn(a->arg, profile_id, bytes, rc == 0 ? &h : NULL, rc == 0 ? NULL : hw,
	    last_used_us);
	if (rc == 0)
		snap_header_free(&h);
	return stop;
}

int
snap_profiles(struct store *s, const uint8_t doc_id[SNAP_ID_BYTES],
    int (*fn)(void *arg, const uint8_t profile_id[SNAP_ID_BYTES], uint64_t bytes,
        const struct snap_header *h, const char *why, int64_t last_used_us),
    void *arg, char *why, size_t why_len)
{
	struct sc_profiles a = { fn, arg };
	if (!fn)
		return store_profiles(s, doc_id, NULL, NULL, why, why_len);
	return store_profiles(s, doc_id, sc_profile_cb, &a, why, why_len);
}

/* Layer records (rec[0..n_rec-1] minus the header, in index order) against
 * the header: each of 0..n_layer-1 once, nothing beyond. */
static int
sc_layers(const struct store_rec *rec, int n_rec, const struct snap_header *h, char *why,
    size_t why_len)
{
	int i, want = 0;
	char w[SC_WHY];

	for (i = 0; i < n_rec; i++) {
		unsigned l = rec[i].index;
		if (l == SNAP_HEADER_LAYER)
			continue;
		if (l >= (unsigned)h->n_layer) {
			snprintf(why, why_len, "record for layer %u, header has %d layers", l, h->n_layer);
			return SNAP_ERR_CORRUPT;
		}
		/* Records come in index order, so layer l must be the want-th one. */
		if (l != (unsigned)want) {
			snprintf(why, why_len, "layer %d record missing", want);
			return SNAP_ERR_CORRUPT;
		}
		if (snap_layer_check(rec[i].buf, rec[i].len, h, (int)l, w, sizeof(w)) != 0) {
			snprintf(why, why_len, "%s", w);
			return SNAP_ERR_CORRUPT;
		}
		want++;
	}
	if (want != h->n_layer) {
		snprintf(why, why_len, "layer %d record missing", want);
		return SNAP_ERR_CORRUPT;
	}
	return 0;
}

int
snap_verify_records(void *arg, const uint8_t profile_id[SNAP_ID_BYTES],
    const struct store_rec *rec, int n_rec, char *why, size_t why_len)
{
	const struct store_rec *hr = n_rec ? &rec[n_rec - 1] : NULL;
	struct snap_header h;
	char w[SC_WHY - 64];
	int rc;

	(void)arg;
	if (!hr || hr->index != SNAP_HEADER_LAYER) {
		snprintf(why, why_len, "header record missing");
		return SNAP_ERR_CORRUPT;
	}
	memset(&h, 0, sizeof(h));
	if (snap_header_decode(hr->buf, hr->len, &h, w, sizeof(w)) != 0) {
		snprintf(why, why_len, "header: %s", w);
		return SNAP_ERR_CORRUPT;
	}
	if (memcmp(h.profile_id, profile_id, SNAP_ID_BYTES) != 0) {
		snprintf(why, why_len, "header is of another profile");
		rc = SNAP_ERR_CORRUPT;
	} else {
		rc = sc_layers(rec, n_rec, &h, why, why_len);
	}
	snap_header_free(&h);
	return rc;
}

int
snap_verify(struct store *s, const uint8_t *doc_id,
    int (*fn)(void *arg, const uint8_t doc_id[SNAP_ID_BYTES],
        const uint8_t profile_id[SNAP_ID_BYTES], const char *why),
    void *arg, char *why, size_t why_len)
{
	return store_verify(s, doc_id, snap_verify_records, NULL, fn, arg, why, why_len);
}
