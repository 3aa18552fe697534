/*
 * fuzz_snapshot.c: libFuzzer target for the snapshot codec's decoders
 * (snapshot/snapshot.c, snapshot/qpack.c).  Input is capped at 1 MiB:
 *
 *   u32 w (little-endian): bit 31 = plain, bits 0..30 = header length n
 *   n bytes   header record
 *   the rest  one layer record
 *
 * Stored mode (bit 31 clear): both records are passed as stored (zstd
 * frames; a version-4 raw layer record as it is), so the fuzzer works on
 * framing, bounds and checksums; the layer is decoded as layer 0.  Plain
 * mode: both records are decoded bytes without their trailing checksums:
 * the target appends the header's BLAKE2b-128 and compresses it, then
 * stores the layer record as the decoded header says (versions 1 to 3:
 * with its BLAKE2b-128, in a zstd frame; 4: no checksum of its own, raw
 * or in a frame as the form is), and sets the header's checksum of it
 * (snap_layer_sum) to match: the fuzzer then reaches every field check of
 * both parsers (no fuzzer forges a BLAKE2b or an XXH3-128).  The layer
 * record decodes as the layer its bytes 8..9 name (mod n_layer), so PoD
 * non-anchor layers are reachable.
 *
 * After a header decodes, a pool is built from its dims (a model shell
 * holding only the hyperparameters eng_kv_init reads; skipped when larger
 * than 2^22 floats per array), then snap_layer_check, snap_layer_decode,
 * snap_pod_check_blocks, eng_kv_finish_load and snap_layer_qerr run.  A
 * record that decodes must encode again: an encoder refusing what the
 * decoder accepted aborts (the two disagree on what is valid).
 *
 * A header with the refit flag (format version 3 or 4) makes the layer
 * record end with its bias section (snapshot/snapshot_refit.h), checked
 * like the rest and re-encoded with the pool's biases; the refit seeds
 * start there.  The v4_ seeds are version-4 snapshots, the v5_ ones
 * version 5's forms (6/5/3/2-bit and mixed, rotated), the others the
 * legacy encodings (the bytes builds before version 4 wrote).
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

/* plain[0..n) + its BLAKE2b-128 (when summed), as one zstd frame (when
 * not raw: then an exact copy), exactly sized. */
static uint8_t *
fz_seal(const uint8_t *plain, size_t n, int summed, int raw, size_t *out_len)
{
	size_t sum = summed ? SNAP_SUM_BYTES : 0;
	uint8_t *rec = malloc(n + sum), *z = NULL, *exact = NULL;
	size_t cap = ZSTD_compressBound(n + sum), got;
	if (!rec)
		return NULL;
	if (n)
		memcpy(rec, plain, n);
	if (summed)
		crypto_generichash(rec + n, SNAP_SUM_BYTES, rec, n, NULL, 0);
	if (raw) {
		*out_len = n;
		return rec;
	}
	if ((z = malloc(cap))) {
		got = ZSTD_compress(z, cap, rec, n + sum, 1);
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

/* Decode the header; the layer record is `in` as given (stored mode), or
 * (plain) stored as the header says, with the header's checksum of it
 * set.  `in` stays the caller's. */
static void
fz_run(const uint8_t *hdr, size_t hdr_len, const uint8_t *in, size_t in_len, int layer,
    int plain)
{
	struct snap_header h;
	struct eng_kv *kv = NULL;
	const uint8_t *lay = in;
	uint8_t *sealed = NULL;
	size_t lay_len = in_len;
	char why[256];

	if (snap_header_decode(hdr, hdr_len, &h, why, sizeof(why)))
		return;
	layer = plain ? layer % h.n_layer : 0;
	if (plain) {
		int fast = h.version >= SNAP_FAST_VERSION;
		/* raw: the form's flag, which the header decode checked */
		int raw = fast && snap_quant_raw(h.quant);
		if (!(sealed = fz_seal(in, in_len, !fast, raw, &lay_len))) {
			snap_header_free(&h);
			return;
		}
		lay = sealed;
		(void)snap_layer_sum(&h, lay, lay_len, h.layer_sum[layer]);
	}
	(void)snap_layer_check(lay, lay_len, &h, layer, why, sizeof(why));
	if ((kv = fz_pool(&h, layer)) &&
	    snap_layer_decode(lay, lay_len, &h, layer, kv, why, sizeof(why)) == 0)
		fz_after_decode(&h, kv, layer);
	eng_kv_free(kv);
	snap_header_free(&h);
	free(sealed);
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
		hdr = fz_seal(data + 4, hn, 1, 0, &hn);
		lay = fz_copy(l, ln);
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
