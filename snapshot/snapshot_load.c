/*
 * snapshot_load.c: a stored snapshot into a fresh pool ready for a question
 * (snap_load, snap_load_ex in snapshot_io.h), each phase timed: the store's
 * reader, the checksums, zstd, the rows unpacked, the pool laid out and its
 * keys rotated.
 */
#include <stdlib.h>
#include <string.h>

#include "snapshot/snapshot_internal.h"
#include "snapshot/snapshot_io.h"

/* The header's shape against the model that will run it. */
static int
load_check_model(const struct snap_header *h, const struct eng_model *m, char *why,
    size_t why_len)
{
	const char *fp = eng_model_fingerprint(m);
	if (h->model_fp[0] && strcmp(h->model_fp, fp))
		return eng_fail(why, why_len, SNAPIO_ERR_MISMATCH,
		    "the snapshot was made with model %.16s…, this is %.16s…", h->model_fp, fp);
	if (h->n_layer != m->hp.n_layer || h->n_head != m->hp.n_head ||
	    h->n_head_kv != m->hp.n_head_kv || h->head_dim != m->hp.head_dim)
		return eng_fail(why, why_len, SNAPIO_ERR_MISMATCH,
		    "the snapshot's shape (%d layers, %d/%d heads, head_dim %d) is not the model's",
		    h->n_layer, h->n_head, h->n_head_kv, h->head_dim);
	return 0;
}

/* Time since *t added to *acc; *t moves on. */
static void
load_lap(double *t, double *acc)
{
	double now = eng_now();
	*acc += now - *t;
	*t = now;
}

/* One layer record: checksums, zstd, rows into the pool. */
static int
load_layer(const uint8_t *buf, size_t len, const struct snap_header *h, int l,
    struct eng_kv *kv, struct snap_load_stats *st, char *why, size_t why_len)
{
	uint8_t *rec = NULL;
	size_t n = 0;
	double t = eng_now();
	int rc;

	if ((rc = snap_layer_sum_check(buf, len, h, l, why, why_len)))
		return rc;
	load_lap(&t, &st->verify_s);
	if ((rc = snap_layer_unseal(buf, len, h, l, &rec, &n, why, why_len)))
		return rc;
	load_lap(&t, &st->unzip_s);
	/* twice, as snap_layer_decode's two parses each hashed it */
	if (!(rc = snap_record_sum_check(rec, n, l, why, why_len)))
		rc = snap_record_sum_check(rec, n, l, why, why_len);
	load_lap(&t, &st->verify_s);
	if (!rc)
		rc = snap_layer_fill(rec, n, h, l, kv, SNAP_FILL_SUMMED, why, why_len);
	load_lap(&t, &st->decode_s);
	free(rec);
	return rc;
}

int
snap_load_ex(struct store *s, const uint8_t doc_id[SNAP_ID_BYTES],
    const uint8_t profile_id[SNAP_ID_BYTES], const struct eng_model *m, int64_t n_extra,
    struct kern_ctx *kc, struct eng_kv **out, struct snap_header *h,
    struct snap_load_stats *st_out, char *why, size_t why_len)
{
	struct store_reader *r = NULL;
	struct eng_kv *kv = NULL;
	struct snap_load_stats st;
	const uint8_t *buf;
	size_t len;
	double t0 = eng_now(), t = t0;
	int l, rc;

	(void)kc;
	*out = NULL;
	memset(h, 0, sizeof(*h));
	memset(&st, 0, sizeof(st));
	st.threads = 1;
	if ((rc = store_read_begin(s, doc_id, profile_id, &r, why, why_len)))
		return snapio_from_store(rc);
	if ((rc = store_read_layer(r, SNAP_HEADER_LAYER, &buf, &len, why, why_len))) {
		rc = snapio_from_store(rc);
		goto out;
	}
	st.stored_bytes += len;
	if ((rc = snap_header_decode(buf, len, h, why, why_len))) {
		rc = snapio_from_snap(rc);
		goto out;
	}
	if ((rc = load_check_model(h, m, why, why_len)))
		goto out;
	load_lap(&t, &st.read_s);
	if ((rc = eng_kv_init(&kv, m, snap_rows_per_head(h, n_extra)))) {
		rc = eng_fail(why, why_len, SNAPIO_ERR_NOMEM, "cannot allocate the cache: %s",
		    eng_strerror(rc));
		goto out;
	}
	load_lap(&t, &st.place_s);
	for (l = 0; l < h->n_layer; l++) {
		if ((rc = store_read_layer(r, (unsigned)l, &buf, &len, why, why_len))) {
			rc = snapio_from_store(rc);
			goto out;
		}
		st.stored_bytes += len;
		load_lap(&t, &st.read_s);
		if ((rc = load_layer(buf, len, h, l, kv, &st, why, why_len))) {
			rc = snapio_from_snap(rc);
			goto out;
		}
		t = eng_now();
	}
	if (h->has_pod && (rc = snap_pod_check_blocks(h, kv, why, why_len))) {
		rc = snapio_from_snap(rc); /* a block's layers must hold the same units */
		goto out;
	}
	load_lap(&t, &st.decode_s);
	if ((rc = eng_kv_finish_load(kv, h->next_pos, (enum eng_pos_mode)h->pos_mode))) {
		rc = eng_fail(why, why_len, SNAPIO_ERR_CORRUPT, "bad position mode in the header");
		goto out;
	}
	if (h->has_pod && (rc = eng_kv_set_pod(kv, h->pod.anc, h->pod.n_s, h->pod.n_r,
	    h->pod.distant_own))) {
		rc = eng_fail(why, why_len, SNAPIO_ERR_CORRUPT, "bad PoD layout in the header");
		goto out;
	}
	load_lap(&t, &st.place_s);
	*out = kv;
	kv = NULL;
out:
	if (r)
		store_read_end(r);
	eng_kv_free(kv);
	if (rc)
		snap_header_free(h);
	st.total_s = eng_now() - t0;
	if (st_out)
		*st_out = st;
	return rc;
}

int
snap_load(struct store *s, const uint8_t doc_id[SNAP_ID_BYTES],
    const uint8_t profile_id[SNAP_ID_BYTES], const struct eng_model *m, int64_t n_extra,
    struct eng_kv **out, struct snap_header *h, char *why, size_t why_len)
{
	return snap_load_ex(s, doc_id, profile_id, m, n_extra, NULL, out, h, NULL, why, why_len);
}
