/*
 * fuzz_snapshot.c: libFuzzer target for the snapshot codec's decoders
 * (snapshot/snapshot.c, snapshot/qpack.c).  Input is capped at 1 MiB:
 *
 *   u32 w (little-endian): bit 31 = plain, bits 0..30 = header length n
 *   n bytes   header record
 *   the rest  one layer record
 *
 * Stored mode (bit 31 clear): both records are passed as stored (zstd
 * frames), so the fuzzer works on framing, bounds and checksums; the layer
 * is decoded as layer 0.  Plain mode: both records are decoded bytes
 * without their trailing BLAKE2b-128, which the target appends before
 * compressing them, and the header's checksum of the layer record is set
 * to match: the fuzzer then reaches every field check of both parsers
 * (no fuzzer forges a BLAKE2b).  The layer record decodes as the layer its
 * bytes 8..9 name (mod n_layer), so PoD non-anchor layers are reachable.
 *
 * After a header decodes, a pool is built from its dims (a model shell
 * holding only the hyperparameters eng_kv_init reads; skipped when larger
 * than 2^22 floats per array), then snap_layer_check, snap_layer_decode,
 * snap_pod_check_blocks, eng_kv_finish_load and snap_layer_qerr run.  A
 * record that decodes must encode again: an encoder refusing what the
 * decoder accepted aborts (the two disagree on what is valid).
 *
 * A header with the refit flag (format version 3) makes the layer record
 * end with its bias section (snapshot/snapshot_refit.h), checked like the
 * rest and re-encoded with the pool's biases; the refit seeds start there.
 *
 * Seeds (the .seed files in tests/fuzz/corpus/snapshot/) come from the unit test:
 *   make && KVSNAP_WRITE_SEEDS=tests/fuzz/corpus/snapshot build/tests/test_snapshot
 */
#include <sodium.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "engine/engine.h"
#include "snapshot/snapshot.h"

#define FZ_MAX_FLOATS ((int64_t)1 << 22)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* An exactly sized copy (so ASan sees any over-read). */
static uint8_t *
fz_copy(const uint8_t *p, size_t n)
{
	uint8_t *c = malloc(n ? n : 1);
	if (c && n)
		memcpy(c, p, n);
	return c;
}

/* plain[0..n) + its BLAKE2b-128, as one zstd frame (exactly sized). */
static uint8_t *
fz_seal(const uint8_t *plain, size_t n, size_t *out_len)
{
	uint8_t *rec = malloc(n + SNAP_SUM_BYTES), *z = NULL, *exact = NULL;
	size_t cap = ZSTD_compressBound(n + SNAP_SUM_BYTES), got;
	if (!rec)
		return NULL;
	if (n)
		memcpy(rec, plain, n);
	crypto_generichash(rec + n, SNAP_SUM_BYTES, rec, n, NULL, 0);
	if ((z = malloc(cap))) {
		got = ZSTD_compress(z, cap, rec, n + SNAP_SUM_BYTES, 1);
		if (!ZSTD_isError(got) && (exact = fz_copy(z, got)))
			*out_len = got;
	}
	free(rec);
	free(z);
	return exact;
}

/* A pool shaped like h with room for `layer`, or NULL when too large. */
static struct eng_kv *
fz_pool(const struct snap_header *h, int layer)
{
	struct eng_model shell;
	struct eng_kv *kv = NULL;
	int64_t total = 0, rph;
	int m;

	for (m = 0; m < h->n_head_kv; m++)
		total += h->counts[(size_t)layer * (size_t)h->n_head_kv + (size_t)m];
	rph = total / h->n_head_kv + 1;
	if ((int64_t)(h->n_layer + 1) * rph * h->n_head_kv * h->head_dim > FZ_MAX_FLOATS)
		return NULL;
	memset(&shell, 0, sizeof(shell));
	shell.hp.n_layer = h->n_layer;
	shell.hp.n_head = h->n_head;
	shell.hp.n_head_kv = h->n_head_kv;
	shell.hp.head_dim = h->head_dim;
	shell.hp.rope_base = 10000.0f;
	return eng_kv_init(&kv, &shell, rph) ? NULL : kv;
}

/* Everything after a successful layer decode. */
static void
fz_after_decode(struct snap_header *h, struct eng_kv *kv, int layer)
{
	struct snap_qerr q;
	uint8_t *out = NULL;
	size_t out_len;
	char why[256];
	int rc;

	(void)snap_pod_check_blocks(h, kv, why, sizeof(why));
	(void)snap_layer_qerr(kv, layer, h, &q);
	rc = snap_layer_encode(kv, layer, h, 1, &out, &out_len);
	if (rc && rc != SNAP_ERR_NOMEM)
		abort(); /* decoded but not encodable: encoder and decoder disagree */
	free(out);
	(void)eng_kv_finish_load(kv, h->next_pos, (enum eng_pos_mode)h->pos_mode);
}

static void
fz_run(const uint8_t *hdr, size_t hdr_len, const uint8_t *lay, size_t lay_len, int layer,
    int plain)
{
	struct snap_header h;
	struct eng_kv *kv = NULL;
	char why[256];

	if (snap_header_decode(hdr, hdr_len, &h, why, sizeof(why)))
		return;
	layer = plain ? layer % h.n_layer : 0;
	if (plain)
		crypto_generichash(h.layer_sum[layer], SNAP_SUM_BYTES, lay, lay_len, NULL, 0);
	(void)snap_layer_check(lay, lay_len, &h, layer, why, sizeof(why));
	if ((kv = fz_pool(&h, layer)) &&
	    snap_layer_decode(lay, lay_len, &h, layer, kv, why, sizeof(why)) == 0)
		fz_after_decode(&h, kv, layer);
	eng_kv_free(kv);
	snap_header_free(&h);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *hdr = NULL, *lay = NULL;
	size_t hn, ln;
	uint32_t w;
	int plain, layer = 0;

	if (size < 4 || size > (1u << 20) || sodium_init() < 0)
		return 0;
	w = (uint32_t)(data[0] | data[1] << 8 | data[2] << 16 | (uint32_t)data[3] << 24);
	plain = (int)(w >> 31);
	hn = w & 0x7fffffffu;
	if (hn > size - 4)
		return 0;
	ln = size - 4 - hn;
	if (plain) {
		const uint8_t *l = data + 4 + hn;
		layer = ln >= 10 ? l[8] | l[9] << 8 : 0;
		hdr = fz_seal(data + 4, hn, &hn);
		lay = fz_seal(l, ln, &ln);
	} else {
		hdr = fz_copy(data + 4, hn);
		lay = fz_copy(data + 4 + hn, ln);
	}
	if (hdr && lay)
		fz_run(hdr, hn, lay, ln, layer, plain);
	free(hdr);
	free(lay);
	return 0;
}
