/*
 * snapshot_refit.c: the bias section of a refit snapshot and the version
 * and flags its records carry (format version 3; snapshot_refit.h).
 */
#include <math.h>   /* for isfinite */

#include "common/bits.h"
#include "snapshot/snapshot_refit.h"

int
snap_record_version(const struct snap_header *h)
{
	int v = snap_quant_version(h->quant);
	if (v >= SNAP_BITS_VERSION) /* a version-5 form has no legacy encoding */
		return h->version >= SNAP_FAST_VERSION ? v : 0;
	if (v && h->version >= SNAP_FAST_VERSION)
		return SNAP_FAST_VERSION;
	return v && h->has_bias ? SNAP_REFIT_VERSION : v;
}

unsigned
snap_record_flags(const struct snap_header *h)
{
	return (h->has_bias ? SNAP_FLAG_BIAS : 0u) | (snap_record_raw(h) ? SNAP_FLAG_RAW : 0u);
}

int
snap_record_raw(const struct snap_header *h)
{
	return snap_record_version(h) >= SNAP_FAST_VERSION && snap_quant_raw(h->quant);
}

uint64_t
snap_bias_bytes(const struct snap_header *h, uint64_t units)
{
	return h->has_bias ? 4 * units : 0;
}

int
snap_bias_put(uint8_t *dst, const struct eng_kv *kv, int layer)
{
	const struct eng_kv_layer *L = &kv->layer[layer];
	int64_t i;
	int m;

	for (m = 0; m < kv->n_head_kv; m++)
		for (i = 0; i < L->len[m]; i++) {
			float b = L->bias[L->off[m] + i];
			uint32_t u = kv_f32_bits(b);
			if (!isfinite(b))
				return SNAP_ERR_ARG;
			dst[0] = (uint8_t)u;
			dst[1] = (uint8_t)(u >> 8);
			dst[2] = (uint8_t)(u >> 16);
			dst[3] = (uint8_t)(u >> 24);
			dst += 4;
		}
	return 0;
}

int
snap_bias_get(const uint8_t *src, const struct snap_header *h, int layer,
    struct eng_kv *kv, char *why, size_t why_len)
{
	struct eng_kv_layer *L = kv ? &kv->layer[layer] : NULL;
	int64_t i, count;
	int m;

	for (m = 0; m < h->n_head_kv; m++) {
		count = h->counts[(size_t)layer * (size_t)h->n_head_kv + (size_t)m];
		for (i = 0; i < count; i++) {
			uint32_t u = (uint32_t)src[0] | (uint32_t)src[1] << 8 |
			    (uint32_t)src[2] << 16 | (uint32_t)src[3] << 24;
			float b = kv_bits_f32(u);
			src += 4;
			if (!isfinite(b))
				return eng_fail(why, why_len, SNAP_ERR_CORRUPT,
				    "layer %d head %d: bias of unit %lld is not finite", layer, m,
				    (long long)i);
			if (L)
				L->bias[L->off[m] + i] = b;
		}
	}
	if (kv)
		kv->has_bias = 1;
	return 0;
}
