/*
 * snapshot_load.c: a stored snapshot into a fresh pool ready for a question
 * (snap_load, snap_load_ex in snapshot_io.h), on the caller's threads.
 *
 * The caller's thread finds every record in the store (the reader's bytes
 * stay valid until store_read_end), decodes the header and allocates the
 * pool.  Then, on every thread of the kern_ctx (kern_parallel): first a
 * share of the table of RoPE angles for positions [0, next_pos)
 * (engine/cache/kv_rotate.c; none when next_pos exceeds the keys to
 * rotate: they are rotated row by row; a pool taken again keeps its table
 * from the load before, eng_kv_rope_table_keep), then whole layers, taken in order from a
 * shared counter, each from start to end on one thread: the checksum of
 * the record as stored against the header's (XXH3-128 in format version
 * 4, BLAKE2b-128 before), zstd into the thread's scratch buffer (a raw
 * version-4 record is parsed where the store keeps it: nothing copied),
 * the record's own BLAKE2b-128 (versions 1 to 3), the rows unpacked into the pool
 * (one pass that checks every field as it writes: on an error the pool is
 * dropped, so nothing half written is ever seen), and the layer's keys
 * rotated while its rows are still in cache.  Every check of
 * snap_layer_decode runs; only the order of layers across threads differs.
 *
 * snap_load_into takes the caller's pool from an earlier load again when it
 * fits (eng_kv_reuse): its pages are faulted in already, and a 4-bit
 * form's load is mostly writing fp32 rows, 776 bytes of pool per unit
 * against ~83 stored, so the first touch of fresh pages (a fault and the
 * kernel zeroing each 4 KiB) cost more than the decoding itself.  For the
 * same reason the values of the rotated forms and the rotated keys are
 * written with streaming stores (SNAP_FILL_STREAM, kern_rope_rows): the
 * question reads the pool only after the load, and a plain store first
 * reads every line it overwrites.  The pre-RoPE keys are written plainly:
 * the rotation reads them back at once, from the cache.
 *
 * Errors: each thread keeps its first failure, which is its lowest layer
 * (it takes layers in ascending order); once one fails no thread takes
 * another, and every layer below a failed one was taken before it and so
 * ran to its end.  The lowest failed layer is reported, the same reason a
 * one-thread load gives, whatever the timing.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
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

/* CPU time since *t added to *acc; *t moves on.  Phases are timed in this
 * thread's CPU time (kv_thread_cpu_s), which a busy machine does not
 * inflate with the time a thread waited for a core. */
static void
load_lap(double *t, double *acc)
{
	double now = kv_thread_cpu_s();
	*acc += now - *t;
	*t = now;
}

/* One thread's part: its phase times and its first failure. */
struct load_part {
	struct snap_load_stats st;
	int fail_layer, rc;
	char why[512];
};

struct load_job {
	const struct snap_header *h;
	struct eng_kv *kv;
	const uint8_t **buf; /* (n_layer) the stored records */
	size_t *len;
	float *table;        /* RoPE angles, positions [0, span): the pool's */
	uint32_t span;
	int fill;            /* the table is new: filled first */
	size_t cap;          /* scratch bytes: the largest layer's bound */
	atomic_int next;     /* the next layer to take */
	atomic_int stop;     /* a layer failed: take no more */
	struct load_part *part; /* (threads) */
};

/* Rows [ith·span/nth, (ith+1)·span/nth) of the angle table. */
static void
load_table_part(void *arg, int ith, int nth)
{
	struct load_job *j = arg;
	double t = kv_thread_cpu_s();
	uint32_t a = (uint32_t)((uint64_t)j->span * (uint64_t)ith / (uint64_t)nth);
	uint32_t b = (uint32_t)((uint64_t)j->span * (uint64_t)(ith + 1) / (uint64_t)nth);
	if (j->table && j->fill)
		eng_kv_rope_table_fill(j->kv, j->table, a, b - a);
	load_lap(&t, &j->part[ith].st.place_s);
}

/* Layer l start to end (see the top of the file); 0 or a SNAP_ code. */
static int
load_layer(struct load_job *j, struct load_part *p, int l, ZSTD_DCtx *dctx, uint8_t *scratch)
{
	const struct snap_header *h = j->h;
	const uint8_t *rec = NULL;
	size_t n = 0;
	double t = kv_thread_cpu_s();
	int rc;

	if ((rc = snap_layer_sum_check(j->buf[l], j->len[l], h, l, p->why, sizeof(p->why))))
		return rc;
	load_lap(&t, &p->st.verify_s);
	rc = snap_layer_unseal_into(j->buf[l], j->len[l], h, l, dctx, scratch, j->cap, &rec, &n,
	    p->why, sizeof(p->why));
	load_lap(&t, &p->st.unzip_s);
	if (rc || (rc = snap_record_sum_check(rec, n, h, l, p->why, sizeof(p->why))))
		return rc;
	load_lap(&t, &p->st.verify_s);
	rc = snap_layer_fill(rec, n, h, l, j->kv, SNAP_FILL_SUMMED | SNAP_FILL_ONE_PASS |
	    SNAP_FILL_STREAM, p->why, sizeof(p->why));
	load_lap(&t, &p->st.decode_s);
	if (rc)
		return rc;
	eng_kv_derive_layer(j->kv, l, (enum eng_pos_mode)h->pos_mode, j->table);
	load_lap(&t, &p->st.place_s);
	return 0;
}

static void
load_layers_part(void *arg, int ith, int nth)
{
	struct load_job *j = arg;
	struct load_part *p = &j->part[ith];
	uint8_t *scratch = malloc(j->cap ? j->cap : 1);
	ZSTD_DCtx *dctx = ZSTD_createDCtx(); /* NULL: a new one per record */
	int l, rc;

	(void)nth;
	while (!atomic_load(&j->stop) && (l = atomic_fetch_add(&j->next, 1)) < j->h->n_layer) {
		rc = scratch ? load_layer(j, p, l, dctx, scratch) : SNAP_ERR_NOMEM;
		if (rc) {
			if (rc == SNAP_ERR_NOMEM)
				snprintf(p->why, sizeof(p->why), "layer %d: out of memory", l);
			p->fail_layer = l;
			p->rc = rc;
			atomic_store(&j->stop, 1);
			break;
		}
	}
	ZSTD_freeDCtx(dctx);
	free(scratch);
}

/* Every layer record into kv on kc's threads (NULL: this one); 0, or the
 * lowest failed layer's SNAPIO_ code and reason.  Phase times into st. */
static int
load_run(struct load_job *j, struct kern_ctx *kc, struct snap_load_stats *st, char *why,
    size_t why_len)
{
	int nth = kc ? kern_ctx_threads(kc) : 1, i, l, best = -1;

	st->threads = nth;
	if (!(j->part = calloc((size_t)nth, sizeof(*j->part))))
		return eng_fail(why, why_len, SNAPIO_ERR_NOMEM, "out of memory");
	for (i = 0; i < nth; i++)
		j->part[i].fail_layer = -1;
	if (kc && j->fill)
		kern_parallel(kc, load_table_part, j);
	else if (j->fill)
		load_table_part(j, 0, 1);
	if (j->fill)
		eng_kv_rope_table_filled(j->kv, j->span);
	if (kc)
		kern_parallel(kc, load_layers_part, j);
	else
		load_layers_part(j, 0, 1);
	for (i = 0; i < nth; i++) {
		struct load_part *p = &j->part[i];
		st->verify_s += p->st.verify_s;
		st->unzip_s += p->st.unzip_s;
		st->decode_s += p->st.decode_s;
		st->place_s += p->st.place_s;
		l = p->fail_layer;
		if (l >= 0 && (best < 0 || l < j->part[best].fail_layer))
			best = i;
	}
	l = best < 0 ? 0 : eng_fail(why, why_len, snapio_from_snap(j->part[best].rc), "%s",
	    j->part[best].why);
	free(j->part);
	j->part = NULL;
	return l;
}

/* The pool for rows_per_head: *held taken again when it fits (cleared),
 * else a new one (*held freed and NULL first). */
static int
load_pool(struct eng_kv **held, const struct eng_model *m, int64_t rows_per_head,
    struct eng_kv **kv)
{
	if (*held && !eng_kv_reuse(*held, m, rows_per_head)) {
		*kv = *held;
		*held = NULL;
		return 0;
	}
	eng_kv_free(*held);
	*held = NULL;
	return eng_kv_init(kv, m, rows_per_head);
}

int
snap_load_into(struct store *s, const uint8_t doc_id[SNAP_ID_BYTES],
    const uint8_t profile_id[SNAP_ID_BYTES], const struct eng_model *m, int64_t n_extra,
    struct kern_ctx *kc, struct eng_kv **pool, struct snap_header *h,
    struct snap_load_stats *st_out, char *why, size_t why_len)
{
	struct store_reader *r = NULL;
	struct load_job j;
	struct snap_load_stats st;
	const uint8_t *buf;
	size_t len;
	double t0 = eng_now(), t = kv_thread_cpu_s();
	int64_t units = 0;
	int l, rc;

	memset(h, 0, sizeof(*h));
	memset(&st, 0, sizeof(st));
	memset(&j, 0, sizeof(j));
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
	j.h = h;
	j.buf = calloc((size_t)h->n_layer, sizeof(*j.buf));
	j.len = calloc((size_t)h->n_layer, sizeof(*j.len));
	if (!j.buf || !j.len) {
		rc = eng_fail(why, why_len, SNAPIO_ERR_NOMEM, "out of memory");
		goto out;
	}
	for (l = 0; l < h->n_layer; l++) {
		if ((rc = store_read_layer(r, (unsigned)l, &j.buf[l], &j.len[l], why,
		    why_len))) {
			rc = snapio_from_store(rc);
			goto out;
		}
		st.stored_bytes += j.len[l];
		if (snap_layer_max_bytes(h, l) > j.cap)
			j.cap = (size_t)snap_layer_max_bytes(h, l);
	}
	load_lap(&t, &st.read_s);
	if ((rc = load_pool(pool, m, snap_rows_per_head(h, n_extra), &j.kv))) {
		rc = eng_fail(why, why_len, SNAPIO_ERR_NOMEM, "cannot allocate the cache: %s",
		    eng_strerror(rc));
		goto out;
	}
	/* slots run below the largest count, which is below next_pos; a table
	 * only when it has fewer rows than the keys to rotate (a header's
	 * next_pos alone must not size it), else the angles row by row */
	for (l = 0; l < h->n_layer * h->n_head_kv; l++)
		units += h->counts[l];
	j.span = h->next_pos;
	if (eng_kv_rope_table_worth(j.span, units) &&
	    !(j.table = eng_kv_rope_table_keep(j.kv, j.span, &j.fill))) {
		rc = eng_fail(why, why_len, SNAPIO_ERR_NOMEM, "out of memory");
		goto out;
	}
	load_lap(&t, &st.place_s);
	if ((rc = load_run(&j, kc, &st, why, why_len)))
		goto out;
	t = kv_thread_cpu_s();
	if (h->has_pod && (rc = snap_pod_check_blocks(h, j.kv, why, why_len))) {
		rc = snapio_from_snap(rc); /* a block's layers must hold the same units */
		goto out;
	}
	load_lap(&t, &st.decode_s);
	if ((rc = eng_kv_set_loaded(j.kv, h->next_pos, (enum eng_pos_mode)h->pos_mode))) {
		rc = eng_fail(why, why_len, SNAPIO_ERR_CORRUPT, "bad position mode in the header");
		goto out;
	}
	if (h->has_pod && (rc = eng_kv_set_pod(j.kv, h->pod.anc, h->pod.n_s, h->pod.n_r,
	    h->pod.distant_own))) {
		rc = eng_fail(why, why_len, SNAPIO_ERR_CORRUPT, "bad PoD layout in the header");
		goto out;
	}
	load_lap(&t, &st.place_s);
	*pool = j.kv;
	j.kv = NULL;
out:
	if (r)
		store_read_end(r);
	if (rc) { /* a pool half written is never kept: the caller's goes too */
		eng_kv_free(*pool);
		*pool = NULL;
	}
	eng_kv_free(j.kv); /* and its table */
	free(j.buf);
	free(j.len);
	if (rc)
		snap_header_free(h);
	st.total_s = eng_now() - t0;
	if (st_out)
		*st_out = st;
	return rc;
}

int
snap_load_ex(struct store *s, const uint8_t doc_id[SNAP_ID_BYTES],
    const uint8_t profile_id[SNAP_ID_BYTES], const struct eng_model *m, int64_t n_extra,
    struct kern_ctx *kc, struct eng_kv **out, struct snap_header *h,
    struct snap_load_stats *st, char *why, size_t why_len)
{
	*out = NULL;
	return snap_load_into(s, doc_id, profile_id, m, n_extra, kc, out, h, st, why, why_len);
}

int
snap_load(struct store *s, const uint8_t doc_id[SNAP_ID_BYTES],
    const uint8_t profile_id[SNAP_ID_BYTES], const struct eng_model *m, int64_t n_extra,
    struct eng_kv **out, struct snap_header *h, char *why, size_t why_len)
{
	return snap_load_ex(s, doc_id, profile_id, m, n_extra, NULL, out, h, NULL, why, why_len);
}
