/*
 * snapshot_io.c: profiles, saving a pool into the store, loading one back
 * (snapshot_io.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "snapshot/snapshot_internal.h"
#include "snapshot/snapshot_io.h"

int
snapio_from_store(int rc)
{
	switch (rc) {
	case STORE_OK: return SNAPIO_OK;
	case STORE_ERR_NOMEM: return SNAPIO_ERR_NOMEM;
	case STORE_ERR_NOT_FOUND: return SNAPIO_ERR_NOT_FOUND;
	case STORE_ERR_CORRUPT: return SNAPIO_ERR_CORRUPT;
	case STORE_ERR_FULL: return SNAPIO_ERR_FULL;
	case STORE_ERR_IO: case STORE_ERR_BUSY: return SNAPIO_ERR_IO;
	default: return SNAPIO_ERR_ARG;
	}
}

int
snapio_from_snap(int rc)
{
	switch (rc) {
	case SNAP_OK: return SNAPIO_OK;
	case SNAP_ERR_NOMEM: return SNAPIO_ERR_NOMEM;
	case SNAP_ERR_CORRUPT: return SNAPIO_ERR_CORRUPT;
	case SNAP_ERR_VERSION: return SNAPIO_ERR_CORRUPT;
	case SNAP_ERR_MISMATCH: return SNAPIO_ERR_MISMATCH;
	default: return SNAPIO_ERR_ARG;
	}
}

int
snap_profile(char *text, size_t cap, uint8_t id[SNAP_ID_BYTES], const char *model_fp,
    const struct eng_policy *p, int64_t chunk, int quant)
{
	char pol[SNAP_MAX_PROFILE];
	int n;
	if (!text || cap == 0)
		return SNAPIO_ERR_ARG;
	if (!snap_quant_name(quant) || eng_policy_profile(p, pol, sizeof(pol)) >= sizeof(pol))
		return SNAPIO_ERR_ARG;
	n = snprintf(text, cap, "kvsnap-snapshot/%d model=%s policy=%s chunk=%lld quant=%s",
	    snap_quant_version(quant), model_fp, pol, (long long)chunk, snap_quant_name(quant));
	if (n < 0 || (size_t)n >= cap || (size_t)n >= SNAP_MAX_PROFILE)
		return SNAPIO_ERR_ARG;
	if (sodium_init() < 0)
		return SNAPIO_ERR_NOMEM;
	crypto_generichash(id, SNAP_ID_BYTES, (const unsigned char *)text, (size_t)n, NULL, 0);
	return SNAPIO_OK;
}

int
snap_save(struct store *s, const struct store_doc *d, const struct eng_kv *kv, int n_head,
    const char *model_fp, const char *profile, const uint8_t profile_id[SNAP_ID_BYTES],
    int quant, int zlevel, uint64_t n_tokens, char *why, size_t why_len)
{
	return snap_save_text(s, d, kv, n_head, model_fp, profile, profile_id, quant, zlevel,
	    n_tokens, NULL, why, why_len);
}

static int io_save(struct store *s, const struct store_doc *d, const struct eng_kv *kv,
    int n_head, const char *model_fp, const char *profile,
    const uint8_t profile_id[SNAP_ID_BYTES], int quant, int zlevel, uint64_t n_tokens,
    const struct store_text *text, const uint8_t *replaces, char *why, size_t why_len);

int
snap_save_text(struct store *s, const struct store_doc *d, const struct eng_kv *kv, int n_head,
    const char *model_fp, const char *profile, const uint8_t profile_id[SNAP_ID_BYTES],
    int quant, int zlevel, uint64_t n_tokens, const struct store_text *text, char *why,
    size_t why_len)
{
	return io_save(s, d, kv, n_head, model_fp, profile, profile_id, quant, zlevel, n_tokens,
	    text, NULL, why, why_len);
}

int
snap_save_replacing(struct store *s, const struct store_doc *d, const struct eng_kv *kv,
    int n_head, const char *model_fp, const char *profile,
    const uint8_t profile_id[SNAP_ID_BYTES], int quant, int zlevel, uint64_t n_tokens,
    const uint8_t replaces[SNAP_ID_BYTES], char *why, size_t why_len)
{
	return io_save(s, d, kv, n_head, model_fp, profile, profile_id, quant, zlevel, n_tokens,
	    NULL, replaces, why, why_len);
}

/* Every layer of kv encoded under header h into rec[l] (len[l] bytes):
 * 0, or a SNAPIO_ code with why (the layers before the failed one encoded:
 * the caller frees rec either way). */
static int
io_encode_layers(const struct eng_kv *kv, struct snap_header *h, int zlevel, uint8_t **rec,
    size_t *len, char *why, size_t why_len)
{
	int l, rc;
	for (l = 0; l < kv->n_layer; l++)
		if ((rc = snap_layer_encode(kv, l, h, zlevel, &rec[l], &len[l])))
			return eng_fail(why, why_len, snapio_from_snap(rc), "layer %d: cannot encode: %s",
			    l, snap_strerror(rc));
	return 0;
}

static int
io_save(struct store *s, const struct store_doc *d, const struct eng_kv *kv, int n_head,
    const char *model_fp, const char *profile, const uint8_t profile_id[SNAP_ID_BYTES],
    int quant, int zlevel, uint64_t n_tokens, const struct store_text *text,
    const uint8_t *replaces, char *why, size_t why_len)
{
	struct snap_header h;
	struct store_snapshot snap;
	uint8_t **rec = NULL, *hdr = NULL;
	size_t *len = NULL, hdr_len = 0;
	int l, rc;

	memset(&h, 0, sizeof(h));
	if (strlen(profile) >= sizeof(h.profile) || strlen(model_fp) >= sizeof(h.model_fp))
		return eng_fail(why, why_len, SNAPIO_ERR_ARG, "profile or fingerprint too long");
	if ((rc = snap_header_from_kv(&h, kv, n_head)))
		return eng_fail(why, why_len, snapio_from_snap(rc), "cannot describe the pool: %s",
		    snap_strerror(rc));
	snprintf(h.model_fp, sizeof(h.model_fp), "%s", model_fp);
	snprintf(h.profile, sizeof(h.profile), "%s", profile);
	memcpy(h.profile_id, profile_id, SNAP_ID_BYTES);
	h.n_tokens = n_tokens;
	h.quant = quant;
	rec = calloc((size_t)kv->n_layer, sizeof(*rec));
	len = calloc((size_t)kv->n_layer, sizeof(*len));
	if (!rec || !len) {
		rc = eng_fail(why, why_len, SNAPIO_ERR_NOMEM, "out of memory");
		goto out;
	}
	if ((rc = io_encode_layers(kv, &h, zlevel, rec, len, why, why_len)))
		goto out;
	if ((rc = snap_header_encode(&h, zlevel, &hdr, &hdr_len))) {
		rc = eng_fail(why, why_len, snapio_from_snap(rc), "cannot encode the header: %s",
		    snap_strerror(rc));
		goto out;
	}
	memset(&snap, 0, sizeof(snap));
	memcpy(snap.profile_id, profile_id, SNAP_ID_BYTES);
	snap.text = text;
	snap.replaces = replaces;
	snap.header = hdr;
	snap.header_len = hdr_len;
	snap.layer = (const uint8_t *const *)rec;
	snap.layer_len = len;
	snap.n_layer = kv->n_layer;
	rc = snapio_from_store(store_put(s, d, &snap, why, why_len));
out:
	if (rec)
		for (l = 0; l < kv->n_layer; l++)
			free(rec[l]);
	free(rec);
	free(len);
	free(hdr);
	snap_header_free(&h);
	return rc;
}

int64_t
snap_rows_per_head(const struct snap_header *h, int64_t n_extra)
{
	int64_t most = 0, t;
	int l, m;
	for (l = 0; l < h->n_layer; l++) {
		t = 0;
		for (m = 0; m < h->n_head_kv; m++)
			t += h->counts[l * h->n_head_kv + m];
		most = t > most ? t : most;
	}
	return (most + h->n_head_kv - 1) / h->n_head_kv + n_extra + 1;
}

int
snap_roundtrip(const struct eng_kv *kv, const struct eng_model *m, int quant, int64_t n_extra,
    struct eng_kv **out, char *why, size_t why_len)
{
	return snap_roundtrip_measured(kv, m, quant, 1, n_extra, out, NULL, why, why_len);
}

int
snap_roundtrip_measured(const struct eng_kv *kv, const struct eng_model *m, int quant,
    int zlevel, int64_t n_extra, struct eng_kv **out, struct snap_rt_stats *st, char *why,
    size_t why_len)
{
	struct snap_header h;
	struct eng_kv *back = NULL;
	uint8_t **rec = NULL, *hdr = NULL;
	size_t *len = NULL, hdr_len = 0;
	double t0;
	int l, rc;

	*out = NULL;
	memset(&h, 0, sizeof(h));
	if (st)
		memset(st, 0, sizeof(*st));
	if ((rc = snap_header_from_kv(&h, kv, m->hp.n_head)))
		return eng_fail(why, why_len, snapio_from_snap(rc), "cannot describe the pool");
	h.quant = quant;
	rec = calloc((size_t)kv->n_layer, sizeof(*rec));
	len = calloc((size_t)kv->n_layer, sizeof(*len));
	if (!rec || !len || (rc = eng_kv_init(&back, m, snap_rows_per_head(&h, n_extra)))) {
		rc = eng_fail(why, why_len, SNAPIO_ERR_NOMEM, "cannot allocate the cache");
		goto out;
	}
	/* every record first (the header lists their checksums), then the
	 * decode alone is what a load does after reading the store */
	if ((rc = io_encode_layers(kv, &h, zlevel, rec, len, why, why_len)))
		goto out;
	if (st) {
		if ((rc = snap_header_encode(&h, zlevel, &hdr, &hdr_len))) {
			rc = eng_fail(why, why_len, snapio_from_snap(rc), "header: %s", snap_strerror(rc));
			goto out;
		}
		st->bytes = hdr_len;
		for (l = 0; l < kv->n_layer; l++)
			st->bytes += len[l];
	}
	t0 = eng_now();
	for (l = 0; l < kv->n_layer; l++)
		if ((rc = snap_layer_decode(rec[l], len[l], &h, l, back, why, why_len))) {
			rc = eng_fail(why, why_len, snapio_from_snap(rc), "layer %d: %s", l,
			    snap_strerror(rc));
			goto out;
		}
	if ((rc = eng_kv_finish_load(back, h.next_pos, (enum eng_pos_mode)h.pos_mode)) ||
	    (h.has_pod && (rc = eng_kv_set_pod(back, h.pod.anc, h.pod.n_s, h.pod.n_r,
	    h.pod.distant_own)))) {
		rc = eng_fail(why, why_len, SNAPIO_ERR_ENGINE, "cannot finish the cache");
		goto out;
	}
	if (st)
		st->load_s = eng_now() - t0;
	*out = back;
	back = NULL;
out:
	for (l = 0; rec && l < kv->n_layer; l++)
		free(rec[l]);
	free(rec);
	free(len);
	free(hdr);
	eng_kv_free(back);
	snap_header_free(&h);
	return rc;
}
