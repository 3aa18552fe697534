/*
 * snapshot.c: the snapshot codec (contract in snapshot.h): the header record,
 * the layer records, their zstd framing and checksums.  K / V row packing
 * lives in qpack.c.
 *
 * Versions 1 to 3: every record is stored as ONE zstd frame that declares
 * its content size; the decoded bytes are the layout below, all integers
 * little-endian, and end with the BLAKE2b-128 of every byte before it.  A
 * decoder reads, in order: magic, version (SNAP_ERR_VERSION if not 1 to 5),
 * checksum, fields; every count is checked against the bytes left and the
 * record must be consumed exactly.  The header further lists the
 * BLAKE2b-128 of each layer record as stored (compressed), checked before
 * anything is decompressed.
 *
 * Version 4 (issue 31; every snapshot this build writes): the same fields,
 * with three changes that make a load run at the speed of the bytes:
 *   - the header's layer_sum is the XXH3-128 of each layer record as
 *     stored (xxhash's canonical form: big-endian), not its BLAKE2b-128;
 *   - a layer record has no checksum of its own: its decoded bytes are a
 *     function of the stored ones the header's checksum covers (the old
 *     inner checksum guarded only against a zstd or encoder bug, at a
 *     second hash of every byte);
 *   - under SNAP_FLAG_RAW (header and layer flags; set exactly when
 *     snap_quant_raw(quant)) a layer record is stored as its plain bytes,
 *     no zstd frame; the loader parses it where the store keeps it.
 * The header record itself keeps its zstd frame and trailing BLAKE2b-128
 * (a few KiB; nothing else covers it).  Why a fast checksum is enough:
 * the checksums guard against damage and mix-ups (a record of another
 * layer or snapshot), not against a writer: whoever can write a layer
 * record into a store can write its header too.  What an attacker could
 * exploit by a collision stays BLAKE2b-256: doc_id (the content address a
 * shared tier and `skip` go by), profile_id, the model fingerprint; and
 * the shared tier's manifest keeps its BLAKE2b-128 per record.
 *
 * Format versions: 5 is 4 with the quant values 6 to 11 added (the
 * rotated 6/5/3/2-bit and mixed forms; snap_record_version: only those
 * write 5, and they have no legacy encoding).
 * 2 is 1 with the quant values 3, 4, 5 added; a record's
 * version is snap_quant_version(quant) (1 for quant 0..2, 2 for 3..5), and a
 * record whose version is not its quant's is refused, so every snapshot has
 * one encoding and version-1 snapshots are read and written as before.
 * 3 is a refit cache's (kvzip refit=1, any quant): the flags field set and
 * a bias section ending each layer record (snapshot_refit.h); a record's
 * version is snap_record_version(header).
 *
 * Header record (format versions 1 to 5)
 *   0   "KVSH"
 *   4   u32 version (snap_record_version: 5 for version 5's forms, else
 *                       4, or the legacy 1 to 3 by form and bias)
 *   8   u32 n_layer             1..1024
 *   12  u32 n_head              1..1024
 *   16  u32 n_head_kv           divides n_head
 *   20  u32 head_dim            2..1024, even; a multiple of 32 under q4
 *   24  u64 n_tokens
 *   32  u32 next_pos
 *   36  u8 pos_mode             enum eng_pos_mode (0, 1)
 *   37  u8 quant                enum snap_quant (0, 1, 2; version 2: 3, 4, 5;
 *                               version 5: 6 to 11)
 *   38  u8 has_pod              0, 1
 *   39  u8 F                    model_fp length: 0 or 64
 *   40  u16 P                   profile length, < SNAP_MAX_PROFILE, no NUL
 *   42  u16 flags               version 3: SNAP_FLAG_BIAS; 4: SNAP_FLAG_BIAS,
 *                               SNAP_FLAG_RAW (= snap_quant_raw(quant));
 *                               else 0
 *   44  u8[32] profile_id
 *   76  F bytes model_fp (hex), P bytes profile
 *       u32 counts[n_layer][n_head_kv]      each <= next_pos
 *       u8  layer_sum[n_layer][16]   BLAKE2b-128 (1 to 3), XXH3-128 (4)
 *       if has_pod: u32 n_s, u32 n_r (>= 1), u8 distant_own (0, 1), u8[3] 0,
 *                   u8 anc[n_head_kv][n_layer]  (a block map; pos_mode 0;
 *                   every layer of a block has its anchor's counts)
 *       u8[16] BLAKE2b-128 of all the above
 *
 * Layer record (format versions 1 to 5)
 *   0   "KVSL"
 *   4   u32 version             equal to the header's
 *   8   u32 layer               the record's own layer index
 *   12  u32 n_head_kv, 16 u32 head_dim     equal to the header's
 *   20  u8 quant, u8 has_pod    equal to the header's
 *   22  u16 flags               equal to the header's
 *   24  per KV head m = 0 … n_head_kv−1:
 *         u32 count             = header counts[layer][m]
 *         if has_pod: u32 anchor (= the header's anc[m][layer]),
 *                     u32 k_prefix, u32 k_suffix (an anchor: count, 0;
 *                     otherwise the units with pos < n_s and those with
 *                     pos >= max(n_s, next_pos − n_r + 1): spec/pod.md §3.6)
 *         positions             LEB128 varints (shortest form, <= 5 bytes):
 *                               pos[0], then pos[i] − pos[i−1] >= 1;
 *                               every pos < next_pos
 *         u16 score[count]      fp16
 *         K block               the key rows (count of them, or under PoD
 *                               k_prefix + k_suffix: the first k_prefix and
 *                               the last k_suffix units), pre-RoPE, packed
 *                               per qpack.h: fp16 (SNAP_FP16), QP_Q4
 *                               (SNAP_Q4, SNAP_Q4_H), QP_Q4_CH (SNAP_Q4_KC,
 *                               SNAP_Q4_KC_H), QP_Q8 (SNAP_Q8); version 5:
 *                               snap_forms' k scheme
 *         V block               count rows: fp16, QP_Q8 for q8, QP_Q4 for
 *                               the q4s; version 5: snap_forms' v scheme
 *       Under the rotated forms (SNAP_Q4_H, SNAP_Q4_KC_H, every form of
 *       version 5) every K and V row is multiplied by
 *       the orthonormal Hadamard matrix (hadamard.h) before it is packed;
 *       the decoder unpacks and multiplies by it again (it is its own
 *       inverse).
 *       if flags has SNAP_FLAG_BIAS: per KV head m, count fp32 biases
 *                               (finite; snapshot_refit.h)
 *       u8[16] BLAKE2b-128 of all the above (versions 1 to 3 only)
 *
 * Zip bombs: a frame is decompressed only if its declared size is at most
 * the largest record the header allows (layer: per head 16 + 7·count bytes
 * plus the K and V blocks at full count; header: the largest header the
 * dimension limits allow), into a buffer of exactly that size; a raw layer
 * record longer than that bound is refused before it is parsed.
 *
 * Thread safety: no state; any thread may call anything on its own data.
 */
#include <ctype.h>  /* for isxdigit */
#include <math.h>   /* for sqrt, NAN */
#include <sodium.h> /* for crypto_generichash (BLAKE2b), sodium_init */
#include <xxhash.h> /* for XXH3_128bits (version 4's layer checksums) */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "kernels/rope_rows.h" /* for kern_f16_to_f32_rows */
#include "snapshot/hadamard.h"
#include "snapshot/qpack.h"
#include "snapshot/snapshot.h"
#include "snapshot/snapshot_internal.h"
#include "snapshot/snapshot_refit.h"

#define SNAP_MAX_LAYER 1024
#define SNAP_MAX_HEAD 1024
#define SNAP_MAX_HEAD_DIM 1024
#define SNAP_HDR_FIXED 76
#define SNAP_POD_FIXED 12
#define SNAP_LAYER_FIXED 24
#define SNAP_HEAD_FIXED 16 /* count, anchor, k_prefix, k_suffix */
#define SNAP_VARINT_MAX 5
/* The largest header record the limits allow (the header's zip-bomb bound). */
#define SNAP_HDR_MAX                                                           \
	((uint64_t)SNAP_HDR_FIXED + 64 + SNAP_MAX_PROFILE +                    \
	    (uint64_t)SNAP_MAX_LAYER * SNAP_MAX_HEAD * 5 +                     \
	    (uint64_t)SNAP_MAX_LAYER * SNAP_SUM_BYTES + SNAP_POD_FIXED + SNAP_SUM_BYTES)

/* ------------------------------------------------------------------------ */
/* Errors and names                                                          */

const char *
snap_strerror(int err)
{
	switch (err) {
	case SNAP_OK:
		return "ok";
	case SNAP_ERR_NOMEM:
		return "out of memory";
	case SNAP_ERR_ARG:
		return "bad argument";
	case SNAP_ERR_CORRUPT:
		return "corrupt snapshot record";
	case SNAP_ERR_VERSION:
		return "unsupported snapshot format version";
	case SNAP_ERR_MISMATCH:
		return "snapshot does not match";
	}
	return "unknown error";
}

/* Each form: its name, the K and V schemes (qpack.h), the record format
 * version that introduced it, and whether rows are rotated by H first. */
static const struct snap_form {
	const char *name;
	enum qp_scheme k, v;
	int version, rotated;
} snap_forms[SNAP_QUANT_MAX + 1] = {
	[SNAP_FP16] = { "fp16", QP_F16, QP_F16, 1, 0 },
	[SNAP_Q4] = { "q4", QP_Q4, QP_Q4, 1, 0 },
	[SNAP_Q4_KC] = { "q4kc", QP_Q4_CH, QP_Q4, 1, 0 },
	[SNAP_Q8] = { "q8", QP_Q8, QP_Q8, 2, 0 },
	[SNAP_Q4_H] = { "q4h", QP_Q4, QP_Q4, 2, 1 },
	[SNAP_Q4_KC_H] = { "q4kch", QP_Q4_CH, QP_Q4, 2, 1 },
	[SNAP_Q6_H] = { "q6h", QP_B6, QP_B6, SNAP_BITS_VERSION, 1 },
	[SNAP_Q5_H] = { "q5h", QP_B5, QP_B5, SNAP_BITS_VERSION, 1 },
	[SNAP_Q3_H] = { "q3h", QP_B3, QP_B3, SNAP_BITS_VERSION, 1 },
	[SNAP_K5V3_H] = { "k5v3h", QP_B5, QP_B3, SNAP_BITS_VERSION, 1 },
	[SNAP_K4V2_H] = { "k4v2h", QP_Q4, QP_B2, SNAP_BITS_VERSION, 1 },
	[SNAP_K8V4_H] = { "k8v4h", QP_Q8, QP_Q4, SNAP_BITS_VERSION, 1 },
};

static const struct snap_form *
snap_form(int quant)
{
	return quant >= SNAP_FP16 && quant <= SNAP_QUANT_MAX ? &snap_forms[quant] : NULL;
}

int
snap_quant_parse(const char *name)
{
	int q;
	for (q = 0; name && q <= SNAP_QUANT_MAX; q++)
		if (!strcmp(name, snap_forms[q].name))
			return q;
	return -1;
}

const char *
snap_quant_name(int quant)
{
	const struct snap_form *f = snap_form(quant);
	return f ? f->name : NULL;
}

int
snap_quant_version(int quant)
{
	const struct snap_form *f = snap_form(quant);
	return f ? f->version : 0;
}

int
snap_quant_rotated(int quant)
{
	const struct snap_form *f = snap_form(quant);
	return f ? f->rotated : 0;
}

int
snap_quant_raw(int quant)
{
	/* every form: zstd saves 6-10 % of these records' bytes on prose
	 * (fp16 9.7 %, q4 9.5 %, q4kc 6.3 %, q4h 8.2 %) for 18-30 % of a
	 * legacy load's CPU (bench/RESULTS.md, "Format version 4";
	 * tests/test_snapshot_load.c legacy_equal prints the sizes per form) */
	return quant >= SNAP_FP16 && quant <= SNAP_QUANT_MAX;
}

/* Put prefix before the reason a check left in why; returns err. */
static int
snap_refail(char *why, size_t why_len, int err, const char *prefix)
{
	char tmp[256] = "";
	if (why && why_len)
		snprintf(tmp, sizeof(tmp), "%s", why);
	return eng_fail(why, why_len, err, "%s%s", prefix, tmp);
}

/* ------------------------------------------------------------------------ */
/* Byte writer and reader                                                    */

/* A writer into a buffer sized from the record's bound; `bad` records an
 * overrun (the bound was wrong: our bug), so nothing past cap is written. */
struct snap_w {
	uint8_t *p;
	size_t at, cap;
	int bad;
};

static uint8_t *
snap_w_take(struct snap_w *w, uint64_t n)
{
	uint8_t *at;
	if (w->bad || n > w->cap - w->at) {
		w->bad = 1;
		return NULL;
	}
	at = w->p + w->at;
	w->at += (size_t)n;
	return at;
}

static void
snap_w_bytes(struct snap_w *w, const void *src, size_t n)
{
	uint8_t *d = snap_w_take(w, n);
	if (d && n)
		memcpy(d, src, n);
}

static void
snap_w_uint(struct snap_w *w, uint64_t v, int bytes)
{
	uint8_t *d = snap_w_take(w, (uint64_t)bytes);
	int i;
	if (d)
		for (i = 0; i < bytes; i++)
			d[i] = (uint8_t)(v >> (8 * i));
}

static void
snap_w_varint(struct snap_w *w, uint32_t v)
{
	uint8_t b[SNAP_VARINT_MAX];
	size_t n = 0;
	do {
		b[n] = (uint8_t)(v & 0x7f);
		v >>= 7;
		if (v)
			b[n] |= 0x80;
		n++;
	} while (v);
	snap_w_bytes(w, b, n);
}

/* A reader over rec[0..len); `bad` is sticky: reads past the end yield 0. */
struct snap_r {
	const uint8_t *p;
	size_t at, len;
	int bad;
};

static const uint8_t *
snap_r_take(struct snap_r *r, uint64_t n)
{
	const uint8_t *at;
	if (r->bad || n > r->len - r->at) {
		r->bad = 1;
		return NULL;
	}
	at = r->p + r->at;
	r->at += (size_t)n;
	return at;
}

static uint64_t
snap_r_uint(struct snap_r *r, int bytes)
{
	const uint8_t *s = snap_r_take(r, (uint64_t)bytes);
	uint64_t v = 0;
	int i;
	if (s)
		for (i = 0; i < bytes; i++)
			v |= (uint64_t)s[i] << (8 * i);
	return v;
}

/* A u32 varint in its shortest form; 0, or -1 (short, too long, overlong). */
static int
snap_r_varint(struct snap_r *r, uint32_t *out)
{
	uint64_t v = 0;
	int i;
	for (i = 0; i < SNAP_VARINT_MAX; i++) {
		const uint8_t *b = snap_r_take(r, 1);
		if (!b)
			return -1;
		v |= (uint64_t)(*b & 0x7f) << (7 * i);
		if (!(*b & 0x80)) {
			if ((i && *b == 0) || v > UINT32_MAX)
				return -1; /* a trailing zero group is not the shortest form */
			*out = (uint32_t)v;
			return 0;
		}
	}
	return -1;
}

/* ------------------------------------------------------------------------ */
/* Checksums and zstd frames                                                 */

static int
snap_sum(uint8_t out[SNAP_SUM_BYTES], const uint8_t *p, size_t n)
{
	if (sodium_init() < 0)
		return SNAP_ERR_NOMEM; /* libsodium could not initialise: no better code */
	crypto_generichash(out, SNAP_SUM_BYTES, p, n, NULL, 0);
	return 0;
}

int
snap_layer_sum(const struct snap_header *h, const uint8_t *buf, size_t len,
    uint8_t out[SNAP_SUM_BYTES])
{
	XXH128_canonical_t c;
	if (h->version < SNAP_FAST_VERSION)
		return snap_sum(out, buf, len);
	XXH128_canonicalFromHash(&c, XXH3_128bits(buf, len));
	memcpy(out, c.digest, SNAP_SUM_BYTES);
	return 0;
}

/* Append the BLAKE2b-128 of w's bytes (when `summed`: every record but a
 * version-4 layer's), then compress into *out (when `raw`: an exact copy
 * instead).  Frees nothing. */
static int
snap_seal(struct snap_w *w, int zlevel, int summed, int raw, uint8_t **out, size_t *out_len)
{
	uint8_t sum[SNAP_SUM_BYTES], *dst;
	size_t cap, got;
	int rc;

	if (w->bad)
		return SNAP_ERR_ARG; /* unreachable: the record outgrew its bound */
	if (summed && (rc = snap_sum(sum, w->p, w->at)))
		return rc;
	if (summed)
		snap_w_bytes(w, sum, sizeof(sum));
	if (w->bad)
		return SNAP_ERR_ARG;
	if (raw) {
		if (!(dst = malloc(w->at ? w->at : 1)))
			return SNAP_ERR_NOMEM;
		memcpy(dst, w->p, w->at);
		*out = dst;
		*out_len = w->at;
		return 0;
	}
	cap = ZSTD_compressBound(w->at);
	if (!(dst = malloc(cap)))
		return SNAP_ERR_NOMEM;
	/* ZSTD_compress always records the content size in the frame header */
	got = ZSTD_compress(dst, cap, w->p, w->at, zlevel);
	if (ZSTD_isError(got)) {
		free(dst);
		return SNAP_ERR_NOMEM;
	}
	*out = dst;
	*out_len = got;
	return 0;
}

/* The frame's declared size, if it is exactly one frame declaring at most
 * `bound` bytes.  `what` names the record in reasons. */
static int
snap_frame_size(const uint8_t *buf, size_t len, uint64_t bound, const char *what,
    uint64_t *size_out, char *why, size_t why_len)
{
	unsigned long long size = ZSTD_getFrameContentSize(buf, len);
	size_t got;

	if (size == ZSTD_CONTENTSIZE_ERROR)
		return eng_fail(why, why_len, SNAP_ERR_CORRUPT, "%s: not a zstd frame", what);
	if (size == ZSTD_CONTENTSIZE_UNKNOWN)
		return eng_fail(why, why_len, SNAP_ERR_CORRUPT,
		    "%s: zstd frame does not declare its size", what);
	if (size > bound)
		return eng_fail(why, why_len, SNAP_ERR_CORRUPT,
		    "%s: frame declares %llu bytes, at most %llu expected", what, size,
		    (unsigned long long)bound);
	got = ZSTD_findFrameCompressedSize(buf, len);
	if (ZSTD_isError(got) || got != len)
		return eng_fail(why, why_len, SNAP_ERR_CORRUPT,
		    "%s: not exactly one zstd frame", what);
	*size_out = size;
	return 0;
}

/* One checked frame (snap_frame_size) of `size` bytes into dst, with the
 * caller's context (NULL: a new one for this call). */
static int
snap_frame_decompress(ZSTD_DCtx *dctx, const uint8_t *buf, size_t len, uint64_t size,
    const char *what, uint8_t *dst, char *why, size_t why_len)
{
	size_t got = dctx ? ZSTD_decompressDCtx(dctx, dst, (size_t)size, buf, len) :
	    ZSTD_decompress(dst, (size_t)size, buf, len);
	if (ZSTD_isError(got) || got != size)
		return eng_fail(why, why_len, SNAP_ERR_CORRUPT, "%s: zstd: %s", what,
		    ZSTD_isError(got) ? ZSTD_getErrorName(got) : "short frame");
	return 0;
}

/* Decompress one frame of at most `bound` declared bytes into an exactly
 * sized buffer.  `what` names the record in reasons. */
static int
snap_unseal(const uint8_t *buf, size_t len, uint64_t bound, const char *what, uint8_t **out,
    size_t *out_len, char *why, size_t why_len)
{
	uint64_t size = 0;
	uint8_t *dst;
	int rc;

	*out = NULL;
	*out_len = 0;
	if ((rc = snap_frame_size(buf, len, bound, what, &size, why, why_len)))
		return rc;
	if (!(dst = malloc(size ? (size_t)size : 1)))
		return SNAP_ERR_NOMEM;
	if ((rc = snap_frame_decompress(NULL, buf, len, size, what, dst, why, why_len))) {
		free(dst);
		return rc;
	}
	*out = dst;
	*out_len = (size_t)size;
	return 0;
}

/* Magic, version and trailing checksum of a decoded record (the checksum
 * skipped when `summed`: the caller checked it, snap_record_sum_check; a
 * version-4 layer record has none: `layer` says this is a layer record);
 * on success r covers the fields (the checksum excluded). */
static int
snap_open_record(const uint8_t *rec, size_t len, const char *magic, size_t min_len,
    const char *what, int summed, int layer, struct snap_r *r, uint32_t *version_out,
    char *why, size_t why_len)
{
	uint8_t sum[SNAP_SUM_BYTES];
	uint32_t version;
	size_t trail = SNAP_SUM_BYTES;
	int rc;

	if (len < 4 || memcmp(rec, magic, 4))
		return eng_fail(why, why_len, SNAP_ERR_CORRUPT, "%s: bad magic", what);
	if (len < 8 + SNAP_SUM_BYTES) /* no version field before the checksum */
		return eng_fail(why, why_len, SNAP_ERR_CORRUPT, "%s: truncated (%zu bytes)", what,
		    len);
	version = (uint32_t)(rec[4] | rec[5] << 8 | rec[6] << 16 | (uint32_t)rec[7] << 24);
	if (version < 1 || version > SNAP_FORMAT_VERSION)
		return eng_fail(why, why_len, SNAP_ERR_VERSION,
		    "%s: format version %u, this build reads 1 to %d", what, version,
		    SNAP_FORMAT_VERSION);
	if (layer && version >= SNAP_FAST_VERSION)
		trail = 0; /* the header's checksum of the stored record covers it */
	if (len < min_len + trail)
		return eng_fail(why, why_len, SNAP_ERR_CORRUPT, "%s: truncated (%zu bytes)", what,
		    len);
	if (trail && !summed && (rc = snap_sum(sum, rec, len - trail)))
		return rc;
	if (trail && !summed && memcmp(sum, rec + len - trail, trail))
		return eng_fail(why, why_len, SNAP_ERR_CORRUPT, "%s: checksum mismatch", what);
	r->p = rec;
	r->at = 8;
	r->len = len - trail;
	r->bad = 0;
	*version_out = version;
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Header                                                                    */

static int64_t
snap_count(const struct snap_header *h, int layer, int m)
{
	return h->counts[(size_t)layer * (size_t)h->n_head_kv + (size_t)m];
}

static uint64_t
snap_layer_units(const struct snap_header *h, int layer)
{
	uint64_t n = 0;
	int m;
	for (m = 0; m < h->n_head_kv; m++)
		n += (uint64_t)h->counts[(size_t)layer * (size_t)h->n_head_kv + (size_t)m];
	return n;
}

static int
snap_anchor(const struct snap_header *h, int layer, int m)
{
	return h->pod.anc[(size_t)m * (size_t)h->n_layer + (size_t)layer];
}

static int
snap_dims_check(const struct snap_header *h, char *why, size_t why_len)
{
	if (h->n_layer < 1 || h->n_layer > SNAP_MAX_LAYER || h->n_head < 1 ||
	    h->n_head > SNAP_MAX_HEAD || h->n_head_kv < 1 || h->n_head % h->n_head_kv)
		return eng_fail(why, why_len, -1, "bad dimensions: %d layers, %d heads, %d KV heads",
		    h->n_layer, h->n_head, h->n_head_kv);
	if (h->head_dim < 2 || h->head_dim > SNAP_MAX_HEAD_DIM || h->head_dim % 2)
		return eng_fail(why, why_len, -1, "bad head_dim %d", h->head_dim);
	if (h->pos_mode != ENG_POS_ORIGINAL && h->pos_mode != ENG_POS_SLOT)
		return eng_fail(why, why_len, -1, "bad position mode %d", h->pos_mode);
	if (!snap_quant_name(h->quant))
		return eng_fail(why, why_len, -1, "bad quantization %d", h->quant);
	if (h->quant != SNAP_FP16 && h->head_dim % QP_GROUP)
		return eng_fail(why, why_len, -1, "%s needs head_dim a multiple of %d, not %d",
		    snap_quant_name(h->quant), QP_GROUP, h->head_dim);
	if (snap_quant_rotated(h->quant) && !hd_dim_ok(h->head_dim))
		return eng_fail(why, why_len, -1, "%s needs head_dim a power of two, not %d",
		    snap_quant_name(h->quant), h->head_dim);
	return 0;
}

static int
snap_text_check(const struct snap_header *h, char *why, size_t why_len)
{
	size_t n = strnlen(h->model_fp, sizeof(h->model_fp)), i;
	if (n != 0 && n != 64)
		return eng_fail(why, why_len, -1, "model fingerprint of %zu characters", n);
	for (i = 0; i < n; i++)
		if (!isxdigit((unsigned char)h->model_fp[i]))
			return eng_fail(why, why_len, -1, "model fingerprint is not hex");
	if (strnlen(h->profile, SNAP_MAX_PROFILE) >= SNAP_MAX_PROFILE)
		return eng_fail(why, why_len, -1, "profile text not terminated within %d bytes",
		    SNAP_MAX_PROFILE);
	return 0;
}

/* The PoD block: a block map, usable windows, original positions, and the
 * same counts in every layer of a block (they hold the same units). */
static int
snap_pod_meta_check(const struct snap_header *h, char *why, size_t why_len)
{
	int m, l;
	if (!h->pod.anc || h->pod.n_r < 1 || (h->pod.distant_own != 0 && h->pod.distant_own != 1))
		return eng_fail(why, why_len, -1, "bad PoD parameters");
	if (h->pos_mode != ENG_POS_ORIGINAL)
		return eng_fail(why, why_len, -1, "PoD needs original positions");
	for (m = 0; m < h->n_head_kv; m++)
		for (l = 0; l < h->n_layer; l++) {
			int a = snap_anchor(h, l, m);
			if (l == 0 ? a != 0 : a != l && a != snap_anchor(h, l - 1, m))
				return eng_fail(why, why_len, -1,
				    "PoD map: layer %d head %d has anchor %d, not a block map", l, m, a);
			if (snap_count(h, l, m) != snap_count(h, a, m))
				return eng_fail(why, why_len, -1,
				    "PoD: layer %d head %d holds %lld units, its anchor %lld", l, m,
				    (long long)snap_count(h, l, m), (long long)snap_count(h, a, m));
		}
	return 0;
}

/* Everything a valid header satisfies; 0 or -1 with a reason (the caller
 * picks the code: SNAP_ERR_ARG to encode, SNAP_ERR_CORRUPT decoded). */
static int
snap_header_check(const struct snap_header *h, char *why, size_t why_len)
{
	int l, m;
	if (h->version < 1 || h->version > SNAP_FORMAT_VERSION)
		return eng_fail(why, why_len, -1, "format version %u", h->version);
	if (snap_dims_check(h, why, why_len) || snap_text_check(h, why, why_len))
		return -1;
	if (!snap_record_version(h)) /* a version-5 form asked in a legacy encoding */
		return eng_fail(why, why_len, -1, "%s has no format version %u encoding",
		    snap_quant_name(h->quant), h->version);
	if (!h->counts || !h->layer_sum)
		return eng_fail(why, why_len, -1, "no counts or layer checksums");
	for (l = 0; l < h->n_layer; l++)
		for (m = 0; m < h->n_head_kv; m++) {
			int64_t c = snap_count(h, l, m);
			if (c < 0 || c > (int64_t)h->next_pos)
				return eng_fail(why, why_len, -1,
				    "layer %d head %d: %lld units with next position %u", l, m,
				    (long long)c, h->next_pos);
		}
	if (h->has_pod != 0 && h->has_pod != 1)
		return eng_fail(why, why_len, -1, "bad PoD flag %d", h->has_pod);
	if (h->has_bias != 0 && h->has_bias != 1)
		return eng_fail(why, why_len, -1, "bad bias flag %d", h->has_bias);
	return h->has_pod ? snap_pod_meta_check(h, why, why_len) : 0;
}

int
snap_header_from_kv(struct snap_header *h, const struct eng_kv *kv, int n_head)
{
	size_t L, H, l, m;

	if (!h)
		return SNAP_ERR_ARG;
	memset(h, 0, sizeof(*h));
	if (!kv || n_head <= 0 || kv->n_head_kv <= 0 || n_head % kv->n_head_kv)
		return SNAP_ERR_ARG;
	L = (size_t)kv->n_layer;
	H = (size_t)kv->n_head_kv;
	h->version = SNAP_FORMAT_VERSION;
	h->n_layer = kv->n_layer;
	h->n_head = n_head;
	h->n_head_kv = kv->n_head_kv;
	h->head_dim = kv->head_dim;
	h->n_tokens = kv->next_pos; /* a default: the caller knows better */
	h->next_pos = kv->next_pos;
	h->pos_mode = kv->pos_mode;
	h->quant = SNAP_FP16;
	h->has_bias = kv->has_bias != 0;
	h->counts = malloc(L * H * sizeof(*h->counts));
	h->layer_sum = calloc(L, sizeof(*h->layer_sum));
	if (!h->counts || !h->layer_sum)
		goto oom;
	for (l = 0; l < L; l++)
		for (m = 0; m < H; m++)
			h->counts[l * H + m] = kv->layer[l].len[m];
	if (kv->pod) {
		h->has_pod = 1;
		h->pod.n_s = kv->pod->n_s;
		h->pod.n_r = kv->pod->n_r;
		h->pod.distant_own = kv->pod->distant_own;
		if (!(h->pod.anc = malloc(L * H)))
			goto oom;
		memcpy(h->pod.anc, kv->pod->anc, L * H);
	}
	return 0;
oom:
	snap_header_free(h);
	return SNAP_ERR_NOMEM;
}

void
snap_header_free(struct snap_header *h)
{
	if (!h)
		return;
	free(h->counts);
	free(h->layer_sum);
	free(h->pod.anc);
	h->counts = NULL;
	h->layer_sum = NULL;
	h->pod.anc = NULL;
}

/* Decoded size of a header with these dimensions and text lengths. */
static uint64_t
snap_header_size(uint64_t L, uint64_t H, int has_pod, size_t fp_len, size_t prof_len)
{
	return SNAP_HDR_FIXED + fp_len + prof_len + L * H * 4 + L * SNAP_SUM_BYTES +
	    (has_pod ? SNAP_POD_FIXED + L * H : 0) + SNAP_SUM_BYTES;
}

int
snap_header_encode(const struct snap_header *h, int zlevel, uint8_t **out, size_t *out_len)
{
	size_t fp_len, prof_len, LH, i;
	struct snap_w w = { 0 };
	int rc;

	if (!out || !out_len)
		return SNAP_ERR_ARG;
	*out = NULL;
	*out_len = 0;
	if (!h || snap_header_check(h, NULL, 0))
		return SNAP_ERR_ARG;
	fp_len = strlen(h->model_fp);
	prof_len = strlen(h->profile);
	LH = (size_t)h->n_layer * (size_t)h->n_head_kv;
	w.cap = (size_t)snap_header_size((uint64_t)h->n_layer, (uint64_t)h->n_head_kv, h->has_pod,
	    fp_len, prof_len);
	if (!(w.p = malloc(w.cap)))
		return SNAP_ERR_NOMEM;
	snap_w_bytes(&w, "KVSH", 4);
	snap_w_uint(&w, (uint64_t)snap_record_version(h), 4);
	snap_w_uint(&w, (uint64_t)h->n_layer, 4);
	snap_w_uint(&w, (uint64_t)h->n_head, 4);
	snap_w_uint(&w, (uint64_t)h->n_head_kv, 4);
	snap_w_uint(&w, (uint64_t)h->head_dim, 4);
	snap_w_uint(&w, h->n_tokens, 8);
	snap_w_uint(&w, h->next_pos, 4);
	snap_w_uint(&w, (uint64_t)h->pos_mode, 1);
	snap_w_uint(&w, (uint64_t)h->quant, 1);
	snap_w_uint(&w, (uint64_t)h->has_pod, 1);
	snap_w_uint(&w, fp_len, 1);
	snap_w_uint(&w, prof_len, 2);
	snap_w_uint(&w, snap_record_flags(h), 2);
	snap_w_bytes(&w, h->profile_id, SNAP_ID_BYTES);
	snap_w_bytes(&w, h->model_fp, fp_len);
	snap_w_bytes(&w, h->profile, prof_len);
	for (i = 0; i < LH; i++)
		snap_w_uint(&w, (uint64_t)h->counts[i], 4);
	snap_w_bytes(&w, h->layer_sum, (size_t)h->n_layer * SNAP_SUM_BYTES);
	if (h->has_pod) {
		snap_w_uint(&w, h->pod.n_s, 4);
		snap_w_uint(&w, h->pod.n_r, 4);
		snap_w_uint(&w, (uint64_t)h->pod.distant_own, 4); /* u8 + 3 reserved zeros */
		snap_w_bytes(&w, h->pod.anc, LH);
	}
	rc = snap_seal(&w, zlevel, 1, 0, out, out_len);
	free(w.p);
	return rc;
}

/* The fixed part of a header record into h (no arrays yet). */
static void
snap_header_read_fixed(struct snap_r *r, struct snap_header *h, size_t *fp_len,
    size_t *prof_len, unsigned *flags)
{
	h->n_layer = (int)snap_r_uint(r, 4);
	h->n_head = (int)snap_r_uint(r, 4);
	h->n_head_kv = (int)snap_r_uint(r, 4);
	h->head_dim = (int)snap_r_uint(r, 4);
	h->n_tokens = snap_r_uint(r, 8);
	h->next_pos = (uint32_t)snap_r_uint(r, 4);
	h->pos_mode = (int)snap_r_uint(r, 1);
	h->quant = (int)snap_r_uint(r, 1);
	h->has_pod = (int)snap_r_uint(r, 1);
	*fp_len = (size_t)snap_r_uint(r, 1);
	*prof_len = (size_t)snap_r_uint(r, 2);
	*flags = (unsigned)snap_r_uint(r, 2);
	memcpy(h->profile_id, snap_r_take(r, SNAP_ID_BYTES), SNAP_ID_BYTES);
}

/* The variable part: texts, counts, sums, PoD block (arrays allocated). */
static int
snap_header_read_arrays(struct snap_r *r, struct snap_header *h, size_t fp_len, size_t prof_len,
    char *why, size_t why_len)
{
	size_t LH = (size_t)h->n_layer * (size_t)h->n_head_kv, i;
	const uint8_t *p;

	memcpy(h->model_fp, snap_r_take(r, fp_len), fp_len);
	memcpy(h->profile, snap_r_take(r, prof_len), prof_len);
	if (memchr(h->model_fp, 0, fp_len) || memchr(h->profile, 0, prof_len))
		return eng_fail(why, why_len, SNAP_ERR_CORRUPT, "header: NUL inside a text field");
	h->counts = malloc(LH * sizeof(*h->counts));
	h->layer_sum = malloc((size_t)h->n_layer * sizeof(*h->layer_sum));
	if (h->has_pod)
		h->pod.anc = malloc(LH);
	if (!h->counts || !h->layer_sum || (h->has_pod && !h->pod.anc))
		return SNAP_ERR_NOMEM;
	for (i = 0; i < LH; i++)
		h->counts[i] = (int64_t)snap_r_uint(r, 4);
	memcpy(h->layer_sum, snap_r_take(r, (size_t)h->n_layer * SNAP_SUM_BYTES),
	    (size_t)h->n_layer * SNAP_SUM_BYTES);
	if (h->has_pod) {
		h->pod.n_s = (uint32_t)snap_r_uint(r, 4);
		h->pod.n_r = (uint32_t)snap_r_uint(r, 4);
		h->pod.distant_own = (int)snap_r_uint(r, 1);
		p = snap_r_take(r, 3);
		if (p[0] | p[1] | p[2])
			return eng_fail(why, why_len, SNAP_ERR_CORRUPT, "header: reserved bytes set");
		memcpy(h->pod.anc, snap_r_take(r, LH), LH);
	}
	return 0;
}

/* Parse a checksummed header record (r after the version; the fixed part
 * is there, snap_open_record checked). */
static int
snap_header_parse(struct snap_r *r, struct snap_header *h, char *why, size_t why_len)
{
	size_t fp_len, prof_len;
	uint64_t want;
	unsigned flags;
	int rc;

	snap_header_read_fixed(r, h, &fp_len, &prof_len, &flags);
	h->has_bias = (flags & SNAP_FLAG_BIAS) != 0;
	/* dims and lengths before allocating anything they size; the raw flag
	 * is the form's in version 4 (one encoding per snapshot), else unset */
	if ((flags & ~SNAP_FLAGS_KNOWN) || (fp_len != 0 && fp_len != 64) ||
	    ((flags & SNAP_FLAG_RAW) != 0) != (snap_record_raw(h) != 0) ||
	    prof_len >= SNAP_MAX_PROFILE || (h->has_pod != 0 && h->has_pod != 1))
		return eng_fail(why, why_len, SNAP_ERR_CORRUPT, "header: bad field");
	if (snap_dims_check(h, why, why_len)) {
		return snap_refail(why, why_len, SNAP_ERR_CORRUPT, "header: ");
	}
	if ((int)h->version != snap_record_version(h))
		return eng_fail(why, why_len, SNAP_ERR_CORRUPT,
		    "header: quantization %s%s in a format version %u record",
		    snap_quant_name(h->quant), h->has_bias ? " with refit biases" : "", h->version);
	want = snap_header_size((uint64_t)h->n_layer, (uint64_t)h->n_head_kv, h->has_pod, fp_len,
	    prof_len);
	if (want != (uint64_t)r->len + SNAP_SUM_BYTES)
		return eng_fail(why, why_len, SNAP_ERR_CORRUPT,
		    "header: %zu bytes, its fields need %llu", r->len + SNAP_SUM_BYTES,
		    (unsigned long long)want);
	if ((rc = snap_header_read_arrays(r, h, fp_len, prof_len, why, why_len)))
		return rc;
	if (r->bad || r->at != r->len) /* cannot happen after the size check */
		return eng_fail(why, why_len, SNAP_ERR_CORRUPT, "header: bad length");
	if (snap_header_check(h, why, why_len)) {
		return snap_refail(why, why_len, SNAP_ERR_CORRUPT, "header: ");
	}
	return 0;
}

int
snap_header_decode(const uint8_t *buf, size_t len, struct snap_header *h, char *why,
    size_t why_len)
{
	struct snap_r r = { 0 };
	uint8_t *rec = NULL;
	size_t n;
	int rc;

	if (!h)
		return SNAP_ERR_ARG;
	memset(h, 0, sizeof(*h));
	if (!buf)
		return eng_fail(why, why_len, SNAP_ERR_ARG, "header: no bytes");
	rc = snap_unseal(buf, len, SNAP_HDR_MAX, "header", &rec, &n, why, why_len);
	if (!rc)
		rc = snap_open_record(rec, n, "KVSH", SNAP_HDR_FIXED, "header", 0, 0, &r,
		    &h->version, why, why_len);
	if (!rc)
		rc = snap_header_parse(&r, h, why, why_len);
	free(rec);
	if (rc) {
		snap_header_free(h);
		memset(h, 0, sizeof(*h));
	}
	return rc;
}

/* ------------------------------------------------------------------------ */
/* Layer records: shape shared by encoder and decoder                        */

static enum qp_scheme
snap_k_scheme(int quant)
{
	return snap_forms[quant].k; /* quant checked by snap_dims_check */
}

static enum qp_scheme
snap_v_scheme(int quant)
{
	return snap_forms[quant].v;
}

/* rows (n, hd) rotated by H into a new buffer (*tmp), or rows themselves
 * when the form does not rotate; NULL when out of memory. */
static const float *
snap_rotated(int quant, const float *rows, int64_t n, int hd, float **tmp)
{
	size_t nv = (size_t)n * (size_t)hd;
	*tmp = NULL;
	if (!snap_quant_rotated(quant))
		return rows;
	if (!(*tmp = malloc((nv ? nv : 1) * sizeof(float))))
		return NULL;
	memcpy(*tmp, rows, nv * sizeof(float));
	hd_rotate_rows(*tmp, n, hd);
	return *tmp;
}

/* The largest record a head of n units can take (the zip-bomb bound). */
static uint64_t
snap_head_bound(uint64_t n, int hd, int quant)
{
	return SNAP_HEAD_FIXED + (SNAP_VARINT_MAX + 2) * n + qp_bytes(snap_k_scheme(quant), n, hd) +
	    qp_bytes(snap_v_scheme(quant), n, hd);
}

static uint64_t
snap_layer_bound(const struct snap_header *h, int layer)
{
	uint64_t b = SNAP_LAYER_FIXED + SNAP_SUM_BYTES;
	int m;
	for (m = 0; m < h->n_head_kv; m++)
		b += snap_head_bound((uint64_t)snap_count(h, layer, m), h->head_dim, h->quant);
	return b + snap_bias_bytes(h, snap_layer_units(h, layer));
}

/* First position of the recent key window: max(n_s, next_pos − n_r + 1). */
static uint32_t
snap_recent_from(const struct snap_header *h)
{
	uint64_t e1 = (uint64_t)h->next_pos + 1;
	uint64_t r = e1 > h->pod.n_r ? e1 - h->pod.n_r : 0;
	return r > h->pod.n_s ? (uint32_t)r : h->pod.n_s;
}

/* The key rows of (layer, m) over positions pos[0..n) (spec/pod.md §3.3),
 * as eng_kv_pod_key_rows computes them but from the header. */
static void
snap_key_rows(const struct snap_header *h, int layer, int m, const uint32_t *pos, int64_t n,
    int64_t *k_prefix, int64_t *k_suffix)
{
	uint32_t from;
	int64_t a = 0, b = n;
	if (!h->has_pod || snap_anchor(h, layer, m) == layer) {
		*k_prefix = n;
		*k_suffix = 0;
		return;
	}
	from = snap_recent_from(h);
	while (a < n && pos[a] < h->pod.n_s)
		a++;
	while (b > a && pos[b - 1] >= from)
		b--;
	*k_prefix = a;
	*k_suffix = n - b;
}

/* Pool and header agree on shape; 0 or -1. */
static int
snap_kv_shape_ok(const struct eng_kv *kv, const struct snap_header *h)
{
	return kv->n_layer == h->n_layer && kv->n_head_kv == h->n_head_kv &&
	    kv->head_dim == h->head_dim;
}

/* Rows of (layer, m) that hold keys, gathered into one block: the pool's
 * rows themselves when they are contiguous, else a copy in *tmp. */
static const float *
snap_key_block(const struct eng_kv *kv, int layer, int m, int64_t kp, int64_t ks, float **tmp)
{
	const struct eng_kv_layer *L = &kv->layer[layer];
	size_t hd = (size_t)kv->head_dim, row0 = (size_t)L->off[m];
	int64_t n = L->len[m];
	*tmp = NULL;
	if (kp + ks == n)
		return L->k + row0 * hd;
	if (!(*tmp = malloc(((size_t)(kp + ks) ? (size_t)(kp + ks) : 1) * hd * sizeof(float))))
		return NULL;
	memcpy(*tmp, L->k + row0 * hd, (size_t)kp * hd * sizeof(float));
	memcpy(*tmp + (size_t)kp * hd, L->k + (row0 + (size_t)(n - ks)) * hd,
	    (size_t)ks * hd * sizeof(float));
	return *tmp;
}

/* ------------------------------------------------------------------------ */
/* Layer encode                                                              */

/* Unpack n rows packed under s for quant (dst NULL: validate only): the
 * rotated forms' rows rotated back as they are unpacked (H is its own
 * inverse), streamed past the cache when asked (hd_unpack_rows).  0, or
 * -1 for a corrupt block. */
static int
snap_unpack(int quant, enum qp_scheme s, const uint8_t *src, int64_t n, int hd, float *dst,
    int stream)
{
	if (snap_quant_rotated(quant))
		return hd_unpack_rows(s, src, n, hd, dst, stream);
	return qp_decode(s, src, n, hd, dst);
}

/* Pack n rows under the K or V scheme of quant (rotated first under _H). */
static int
snap_put_block(struct snap_w *w, int quant, enum qp_scheme s, const float *src, int64_t n,
    int hd)
{
	uint8_t *dst = snap_w_take(w, qp_bytes(s, (uint64_t)n, hd));
	const float *rows;
	float *tmp;
	int rc;
	if (!dst)
		return SNAP_ERR_ARG; /* unreachable: the bound covers it */
	if (!(rows = snap_rotated(quant, src, n, hd, &tmp)))
		return SNAP_ERR_NOMEM;
	rc = qp_encode(s, rows, n, hd, dst) ? SNAP_ERR_ARG : 0;
	free(tmp);
	return rc;
}

static int
snap_head_encode(struct snap_w *w, const struct eng_kv *kv, int layer, int m,
    const struct snap_header *h)
{
	const struct eng_kv_layer *L = &kv->layer[layer];
	const uint32_t *pos = L->pos + L->off[m];
	const float *score = L->score + L->off[m], *keys;
	size_t hd = (size_t)h->head_dim;
	int64_t n = L->len[m], kp, ks, i;
	float *tmp;
	int rc;

	for (i = 0; i < n; i++)
		if (pos[i] >= h->next_pos || (i && pos[i] <= pos[i - 1]))
			return SNAP_ERR_ARG; /* a pool no decoder would accept */
	snap_key_rows(h, layer, m, pos, n, &kp, &ks);
	snap_w_uint(w, (uint64_t)n, 4);
	if (h->has_pod) {
		snap_w_uint(w, (uint64_t)snap_anchor(h, layer, m), 4);
		snap_w_uint(w, (uint64_t)kp, 4);
		snap_w_uint(w, (uint64_t)ks, 4);
	}
	for (i = 0; i < n; i++)
		snap_w_varint(w, i ? pos[i] - pos[i - 1] : pos[0]);
	for (i = 0; i < n; i++)
		snap_w_uint(w, kern_f32_to_f16(score[i]), 2);
	if (!(keys = snap_key_block(kv, layer, m, kp, ks, &tmp)))
		return SNAP_ERR_NOMEM;
	rc = snap_put_block(w, h->quant, snap_k_scheme(h->quant), keys, kp + ks, h->head_dim);
	free(tmp);
	if (!rc)
		rc = snap_put_block(w, h->quant, snap_v_scheme(h->quant),
		    L->v + (size_t)L->off[m] * hd, n, h->head_dim);
	return rc;
}

/* The header, pool and layer fit together for encoding (or qerr). */
static int
snap_encode_args_ok(const struct eng_kv *kv, int layer, const struct snap_header *h)
{
	int m;
	if (!kv || !h || snap_header_check(h, NULL, 0) || layer < 0 || layer >= h->n_layer ||
	    !snap_kv_shape_ok(kv, h) || !kv->has_bias != !h->has_bias)
		return 0;
	for (m = 0; m < h->n_head_kv; m++)
		if (kv->layer[layer].len[m] != snap_count(h, layer, m))
			return 0;
	return 1;
}

int
snap_layer_encode(const struct eng_kv *kv, int layer, struct snap_header *h, int zlevel,
    uint8_t **out, size_t *out_len)
{
	struct snap_w w = { 0 };
	int rc = 0, m;

	if (!out || !out_len)
		return SNAP_ERR_ARG;
	*out = NULL;
	*out_len = 0;
	if (!snap_encode_args_ok(kv, layer, h))
		return SNAP_ERR_ARG;
	w.cap = (size_t)snap_layer_bound(h, layer);
	if (!(w.p = malloc(w.cap)))
		return SNAP_ERR_NOMEM;
	snap_w_bytes(&w, "KVSL", 4);
	snap_w_uint(&w, (uint64_t)snap_record_version(h), 4);
	snap_w_uint(&w, (uint64_t)layer, 4);
	snap_w_uint(&w, (uint64_t)h->n_head_kv, 4);
	snap_w_uint(&w, (uint64_t)h->head_dim, 4);
	snap_w_uint(&w, (uint64_t)h->quant, 1);
	snap_w_uint(&w, (uint64_t)h->has_pod, 1);
	snap_w_uint(&w, snap_record_flags(h), 2);
	for (m = 0; m < h->n_head_kv && !rc; m++)
		rc = snap_head_encode(&w, kv, layer, m, h);
	if (!rc && h->has_bias) {
		uint8_t *dst = snap_w_take(&w, snap_bias_bytes(h,
		    (uint64_t)eng_kv_layer_units(kv, layer)));
		rc = dst ? snap_bias_put(dst, kv, layer) : SNAP_ERR_ARG;
	}
	if (!rc)
		rc = snap_seal(&w, zlevel, snap_record_version(h) < SNAP_FAST_VERSION,
		    snap_record_raw(h), out, out_len);
	free(w.p);
	if (!rc && (rc = snap_layer_sum(h, *out, *out_len, h->layer_sum[layer]))) {
		free(*out);
		*out = NULL;
		*out_len = 0;
	}
	return rc;
}

/* ------------------------------------------------------------------------ */
/* Layer decode                                                              */

/* One parse of a layer record: kv == NULL only validates; otherwise the
 * record was validated before and its rows go into kv's layer. */
struct snap_lp {
	const struct snap_header *h;
	int layer;
	struct eng_kv *kv;
	char *why;
	size_t why_len;
	int summed; /* the record's own checksum was checked by the caller */
	int stream; /* SNAP_FILL_STREAM: values streamed into the pool */
};

static int
snap_lp_fail(const struct snap_lp *p, int m, const char *what)
{
	if (m < 0)
		return eng_fail(p->why, p->why_len, SNAP_ERR_CORRUPT, "layer %d: %s", p->layer,
		    what);
	return eng_fail(p->why, p->why_len, SNAP_ERR_CORRUPT, "layer %d head %d: %s", p->layer,
	    m, what);
}

/* Positions of head m: strictly increasing, below next_pos; counts the
 * units inside the PoD key windows (kp_win: pos < n_s, ks_win: pos >= from). */
static int
snap_head_positions(const struct snap_lp *p, struct snap_r *r, int m, int64_t count,
    uint32_t *dst, int64_t *kp_win, int64_t *ks_win)
{
	const struct snap_header *h = p->h;
	uint32_t from = h->has_pod ? snap_recent_from(h) : 0, d;
	uint64_t pos = 0;
	int64_t i;

	*kp_win = *ks_win = 0;
	for (i = 0; i < count; i++) {
		if (snap_r_varint(r, &d))
			return snap_lp_fail(p, m, r->bad ? "truncated positions" : "bad position varint");
		if (i && d == 0)
			return snap_lp_fail(p, m, "positions not increasing");
		pos = i ? pos + d : d;
		if (pos >= h->next_pos)
			return snap_lp_fail(p, m, "position not below the next position");
		if (dst)
			dst[i] = (uint32_t)pos;
		*kp_win += h->has_pod && pos < h->pod.n_s;
		*ks_win += h->has_pod && pos >= from;
	}
	return 0;
}

/* The PoD fields of head m against the header and its positions. */
static int
snap_head_pod_check(const struct snap_lp *p, int m, int64_t count, uint32_t anchor,
    int64_t kp, int64_t ks, int64_t kp_win, int64_t ks_win)
{
	int want = snap_anchor(p->h, p->layer, m);
	char msg[128];
	if ((int64_t)anchor != want) {
		snprintf(msg, sizeof(msg), "anchor %u, the header's map says %d", anchor, want);
		return snap_lp_fail(p, m, msg);
	}
	if (want == p->layer ? kp != count || ks != 0 : kp != kp_win || ks != ks_win) {
		snprintf(msg, sizeof(msg), "key rows %lld + %lld, expected %lld + %lld",
		    (long long)kp, (long long)ks, (long long)(want == p->layer ? count : kp_win),
		    (long long)(want == p->layer ? 0 : ks_win));
		return snap_lp_fail(p, m, msg);
	}
	return 0;
}

/* Unpack a K or V block of n rows into dst (NULL: validate only). */
static int
snap_get_block(const struct snap_lp *p, struct snap_r *r, int m, enum qp_scheme s, int64_t n,
    float *dst, int stream, const char *what)
{
	const uint8_t *src = snap_r_take(r, qp_bytes(s, (uint64_t)n, p->h->head_dim));
	char msg[64];
	if (!src) {
		snprintf(msg, sizeof(msg), "truncated %s", what);
		return snap_lp_fail(p, m, msg);
	}
	if (snap_unpack(p->h->quant, s, src, n, p->h->head_dim, dst, stream)) {
		snprintf(msg, sizeof(msg), "bad scale or min in the %s", what);
		return snap_lp_fail(p, m, msg);
	}
	return 0;
}

/* Key rows kp + ks were unpacked at the head's first rows: move the suffix
 * to the end and mark the dropped middle with NaN (what the pool holds). */
static void
snap_spread_keys(float *k, int64_t count, int64_t kp, int64_t ks, int hd)
{
	size_t d = (size_t)hd, i;
	memmove(k + (size_t)(count - ks) * d, k + (size_t)kp * d, (size_t)ks * d * sizeof(float));
	for (i = (size_t)kp * d; i < (size_t)(count - ks) * d; i++)
		k[i] = NAN;
}

static int
snap_head_parse(const struct snap_lp *p, struct snap_r *r, int m)
{
	const struct snap_header *h = p->h;
	struct eng_kv_layer *L = p->kv ? &p->kv->layer[p->layer] : NULL;
	size_t row0 = L ? (size_t)L->off[m] : 0, hd = (size_t)h->head_dim;
	int64_t count = (int64_t)snap_r_uint(r, 4), kp = count, ks = 0, kp_win, ks_win;
	uint32_t anchor = 0;
	const uint8_t *sc;
	int rc;

	if (h->has_pod) {
		anchor = (uint32_t)snap_r_uint(r, 4);
		kp = (int64_t)snap_r_uint(r, 4);
		ks = (int64_t)snap_r_uint(r, 4);
	}
	if (r->bad)
		return snap_lp_fail(p, m, "truncated");
	if (count != snap_count(h, p->layer, m))
		return snap_lp_fail(p, m, "unit count differs from the header's");
	if ((rc = snap_head_positions(p, r, m, count, L ? L->pos + row0 : NULL, &kp_win, &ks_win)))
		return rc;
	if (h->has_pod &&
	    (rc = snap_head_pod_check(p, m, count, anchor, kp, ks, kp_win, ks_win)))
		return rc;
	if (!(sc = snap_r_take(r, 2 * (uint64_t)count)))
		return snap_lp_fail(p, m, "truncated scores");
	if (L) /* kern_f16_to_f32 of each, SIMD where the CPU has it */
		kern_f16_to_f32_rows(sc, L->score + row0, count);
	if ((rc = snap_get_block(p, r, m, snap_k_scheme(h->quant), kp + ks,
	         L ? L->k + row0 * hd : NULL, 0, "keys")))
		return rc;
	if (L && kp + ks < count)
		snap_spread_keys(L->k + row0 * hd, count, kp, ks, h->head_dim);
	return snap_get_block(p, r, m, snap_v_scheme(h->quant), count,
	    L ? L->v + row0 * hd : NULL, p->stream, "values");
}

/* Parse a decoded layer record (see struct snap_lp). */
static int
snap_layer_parse(const struct snap_lp *p, const uint8_t *rec, size_t len)
{
	const struct snap_header *h = p->h;
	char what[32];
	struct snap_r r = { 0 };
	uint32_t version = 0;
	int rc, m;

	snprintf(what, sizeof(what), "layer %d", p->layer);
	if ((rc = snap_open_record(rec, len, "KVSL", SNAP_LAYER_FIXED, what, p->summed, 1, &r,
	         &version, p->why, p->why_len)))
		return rc;
	if ((int)version != snap_record_version(h))
		return snap_lp_fail(p, -1, "format version differs from the header's");
	if (snap_r_uint(&r, 4) != (uint64_t)p->layer)
		return snap_lp_fail(p, -1, "record is for another layer");
	if (snap_r_uint(&r, 4) != (uint64_t)h->n_head_kv ||
	    snap_r_uint(&r, 4) != (uint64_t)h->head_dim || snap_r_uint(&r, 1) != (uint64_t)h->quant ||
	    snap_r_uint(&r, 1) != (uint64_t)h->has_pod ||
	    snap_r_uint(&r, 2) != snap_record_flags(h))
		return snap_lp_fail(p, -1, "record shape differs from the header's");
	for (m = 0; m < h->n_head_kv; m++)
		if ((rc = snap_head_parse(p, &r, m)))
			return rc;
	if (h->has_bias) {
		const uint8_t *b = snap_r_take(&r, snap_bias_bytes(h, snap_layer_units(h, p->layer)));
		if (!b)
			return snap_lp_fail(p, -1, "truncated biases");
		if ((rc = snap_bias_get(b, h, p->layer, p->kv, p->why, p->why_len)))
			return rc;
	}
	if (r.at != r.len)
		return snap_lp_fail(p, -1, "bytes left over");
	return 0;
}

/* Arguments shared by check and decode: a valid header and a layer of it. */
static int
snap_layer_args(const uint8_t *buf, const struct snap_header *h, int layer, char *why,
    size_t why_len)
{
	char tmp[200];
	if (!buf || !h)
		return eng_fail(why, why_len, SNAP_ERR_ARG, "layer %d: no record or header", layer);
	if (snap_header_check(h, tmp, sizeof(tmp)))
		return eng_fail(why, why_len, SNAP_ERR_ARG, "layer %d: bad header: %s", layer, tmp);
	if (layer < 0 || layer >= h->n_layer)
		return eng_fail(why, why_len, SNAP_ERR_ARG, "layer %d: out of range (0..%d)", layer,
		    h->n_layer - 1);
	return 0;
}

/* The stored record against the header's checksum of it. */
int
snap_layer_sum_check(const uint8_t *buf, size_t len, const struct snap_header *h, int layer,
    char *why, size_t why_len)
{
	uint8_t sum[SNAP_SUM_BYTES];
	int rc;
	if ((rc = snap_layer_sum(h, buf, len, sum)))
		return rc;
	if (memcmp(sum, h->layer_sum[layer], SNAP_SUM_BYTES))
		return eng_fail(why, why_len, SNAP_ERR_CORRUPT,
		    "layer %d: record does not match the header's checksum (damaged, or from another "
		    "layer or snapshot)", layer);
	return 0;
}

uint64_t
snap_layer_max_bytes(const struct snap_header *h, int layer)
{
	return snap_layer_bound(h, layer);
}

/* A raw record (version 4, SNAP_FLAG_RAW) within the layer's bound. */
static int
snap_raw_check(size_t len, const struct snap_header *h, int layer, char *why, size_t why_len)
{
	uint64_t bound = snap_layer_bound(h, layer);
	if ((uint64_t)len > bound)
		return eng_fail(why, why_len, SNAP_ERR_CORRUPT,
		    "layer %d: raw record of %zu bytes, at most %llu expected", layer, len,
		    (unsigned long long)bound);
	return 0;
}

int
snap_layer_unseal(const uint8_t *buf, size_t len, const struct snap_header *h, int layer,
    uint8_t **rec, size_t *rec_len, char *why, size_t why_len)
{
	char what[32];
	int rc;
	snprintf(what, sizeof(what), "layer %d", layer);
	if (!snap_record_raw(h))
		return snap_unseal(buf, len, snap_layer_bound(h, layer), what, rec, rec_len, why,
		    why_len);
	*rec = NULL;
	*rec_len = 0;
	if ((rc = snap_raw_check(len, h, layer, why, why_len)))
		return rc;
	if (!(*rec = malloc(len ? len : 1)))
		return SNAP_ERR_NOMEM;
	memcpy(*rec, buf, len);
	*rec_len = len;
	return 0;
}

int
snap_layer_unseal_into(const uint8_t *buf, size_t len, const struct snap_header *h, int layer,
    ZSTD_DCtx *dctx, uint8_t *dst, size_t cap, const uint8_t **rec, size_t *rec_len, char *why,
    size_t why_len)
{
	uint64_t size = 0;
	char what[32];
	int rc;

	*rec = NULL;
	*rec_len = 0;
	if (snap_record_raw(h)) {
		if ((rc = snap_raw_check(len, h, layer, why, why_len)))
			return rc;
		*rec = buf; /* parsed where the store keeps it */
		*rec_len = len;
		return 0;
	}
	snprintf(what, sizeof(what), "layer %d", layer);
	if ((rc = snap_frame_size(buf, len, snap_layer_bound(h, layer), what, &size, why, why_len)))
		return rc;
	if (size > cap)
		return eng_fail(why, why_len, SNAP_ERR_ARG, "%s: %llu bytes, the buffer holds %zu",
		    what, (unsigned long long)size, cap); /* the caller's bound was wrong */
	if ((rc = snap_frame_decompress(dctx, buf, len, size, what, dst, why, why_len)))
		return rc;
	*rec = dst;
	*rec_len = (size_t)size;
	return 0;
}

int
snap_record_sum_check(const uint8_t *rec, size_t len, const struct snap_header *h, int layer,
    char *why, size_t why_len)
{
	uint8_t sum[SNAP_SUM_BYTES];
	int rc;
	if (h->version >= SNAP_FAST_VERSION) /* none: snap_layer_sum_check covered it */
		return 0;
	if (len < 8 + SNAP_SUM_BYTES) /* snap_open_record names what is short */
		return 0;
	if ((rc = snap_sum(sum, rec, len - SNAP_SUM_BYTES)))
		return rc;
	if (memcmp(sum, rec + len - SNAP_SUM_BYTES, SNAP_SUM_BYTES))
		return eng_fail(why, why_len, SNAP_ERR_CORRUPT, "layer %d: checksum mismatch", layer);
	return 0;
}

/* Stored checksum against the header, then the decoded bytes. */
static int
snap_layer_open(const uint8_t *buf, size_t len, const struct snap_header *h, int layer,
    uint8_t **rec, size_t *rec_len, char *why, size_t why_len)
{
	int rc;
	*rec = NULL;
	if ((rc = snap_layer_sum_check(buf, len, h, layer, why, why_len)))
		return rc;
	return snap_layer_unseal(buf, len, h, layer, rec, rec_len, why, why_len);
}

int
snap_layer_check(const uint8_t *buf, size_t len, const struct snap_header *h, int layer,
    char *why, size_t why_len)
{
	struct snap_lp p = { h, layer, NULL, why, why_len, 0, 0 };
	uint8_t *rec;
	size_t n;
	int rc;

	if ((rc = snap_layer_args(buf, h, layer, why, why_len)))
		return rc;
	if ((rc = snap_layer_open(buf, len, h, layer, &rec, &n, why, why_len)))
		return rc;
	rc = snap_layer_parse(&p, rec, n);
	free(rec);
	return rc;
}

/* The pool can take the layer: same shape, and the units fit its arena. */
static int
snap_layer_fits(const struct eng_kv *kv, const struct snap_header *h, int layer, char *why,
    size_t why_len)
{
	int64_t total = 0;
	int m;
	if (!snap_kv_shape_ok(kv, h))
		return eng_fail(why, why_len, SNAP_ERR_MISMATCH,
		    "layer %d: pool is %d layers x %d KV heads x %d, snapshot %d x %d x %d", layer,
		    kv->n_layer, kv->n_head_kv, kv->head_dim, h->n_layer, h->n_head_kv, h->head_dim);
	for (m = 0; m < h->n_head_kv; m++)
		total += snap_count(h, layer, m);
	if (total > kv->rows)
		return eng_fail(why, why_len, SNAP_ERR_MISMATCH,
		    "layer %d: %lld units do not fit the pool's %lld rows", layer, (long long)total,
		    (long long)kv->rows);
	return 0;
}

int
snap_layer_fill(const uint8_t *rec, size_t len, const struct snap_header *h, int layer,
    struct eng_kv *kv, int flags, char *why, size_t why_len)
{
	struct snap_lp p = { h, layer, NULL, why, why_len, !!(flags & SNAP_FILL_SUMMED),
		!!(flags & SNAP_FILL_STREAM) };
	int rc;

	if ((rc = snap_layer_args(rec, h, layer, why, why_len)))
		return rc;
	if (!kv)
		return eng_fail(why, why_len, SNAP_ERR_ARG, "layer %d: no pool", layer);
	if ((rc = snap_layer_fits(kv, h, layer, why, why_len)))
		return rc;
	/* validate everything first, so a bad record leaves the pool as it was
	 * (one pass checks the same while it writes) */
	if (!(flags & SNAP_FILL_ONE_PASS) && (rc = snap_layer_parse(&p, rec, len)))
		return rc;
	if (eng_kv_prepare_layer(kv, layer, h->counts + (size_t)layer * (size_t)h->n_head_kv))
		return eng_fail(why, why_len, SNAP_ERR_MISMATCH, "layer %d: pool refused the layout",
		    layer); /* unreachable after snap_layer_fits */
	p.kv = kv;
	return snap_layer_parse(&p, rec, len);
}

int
snap_layer_decode(const uint8_t *buf, size_t len, const struct snap_header *h, int layer,
    struct eng_kv *kv, char *why, size_t why_len)
{
	uint8_t *rec = NULL;
	size_t n;
	int rc;

	if ((rc = snap_layer_args(buf, h, layer, why, why_len)))
		return rc;
	if (!kv)
		return eng_fail(why, why_len, SNAP_ERR_ARG, "layer %d: no pool", layer);
	if ((rc = snap_layer_fits(kv, h, layer, why, why_len)))
		return rc;
	if ((rc = snap_layer_open(buf, len, h, layer, &rec, &n, why, why_len)))
		return rc;
	rc = snap_layer_fill(rec, n, h, layer, kv, 0, why, why_len);
	free(rec);
	return rc;
}

/* ------------------------------------------------------------------------ */
/* PoD blocks after loading                                                  */

int
snap_pod_check_blocks(const struct snap_header *h, const struct eng_kv *kv, char *why,
    size_t why_len)
{
	int l, m;
	if (!h || !kv || !snap_kv_shape_ok(kv, h))
		return eng_fail(why, why_len, SNAP_ERR_ARG, "PoD check: pool and header differ");
	if (!h->has_pod)
		return 0;
	for (m = 0; m < h->n_head_kv; m++)
		for (l = 0; l < h->n_layer; l++) {
			const struct eng_kv_layer *L = &kv->layer[l];
			const struct eng_kv_layer *A = &kv->layer[snap_anchor(h, l, m)];
			if (L->len[m] != A->len[m] ||
			    memcmp(L->pos + L->off[m], A->pos + A->off[m],
			        (size_t)L->len[m] * sizeof(uint32_t)))
				return eng_fail(why, why_len, SNAP_ERR_CORRUPT,
				    "layer %d head %d: positions differ from its anchor layer %d's", l, m,
				    snap_anchor(h, l, m));
		}
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Reconstruction error (reports)                                            */

struct snap_acc {
	double max, sum2;
	uint64_t n;
};

/* Pack and unpack n rows of src under s, accumulating |x − x̂|. */
static int
snap_qerr_block(int quant, enum qp_scheme s, const float *src, int64_t n, int hd,
    struct snap_acc *acc)
{
	size_t nv = (size_t)n * (size_t)hd, i;
	uint8_t *bytes = malloc(qp_bytes(s, (uint64_t)n, hd) + 1);
	float *back = malloc((nv ? nv : 1) * sizeof(float)), *tmp = NULL;
	const float *rows = snap_rotated(quant, src, n, hd, &tmp);
	int rc = SNAP_ERR_NOMEM;

	if (bytes && back && rows) {
		rc = qp_encode(s, rows, n, hd, bytes) || snap_unpack(quant, s, bytes, n, hd, back, 0)
		    ? SNAP_ERR_ARG
		    : 0;
		for (i = 0; !rc && i < nv; i++) {
			double e = fabs((double)src[i] - (double)back[i]);
			acc->max = e > acc->max ? e : acc->max;
			acc->sum2 += e * e;
		}
		acc->n += rc ? 0 : nv;
	}
	free(bytes);
	free(back);
	free(tmp);
	return rc;
}

int
snap_layer_qerr(const struct eng_kv *kv, int layer, const struct snap_header *h,
    struct snap_qerr *out)
{
	struct snap_acc ka = { 0, 0, 0 }, va = { 0, 0, 0 };
	int rc = 0, m;

	if (!out || !snap_encode_args_ok(kv, layer, h))
		return SNAP_ERR_ARG;
	for (m = 0; m < h->n_head_kv && !rc; m++) {
		const struct eng_kv_layer *L = &kv->layer[layer];
		int64_t kp, ks;
		float *tmp;
		const float *keys;
		snap_key_rows(h, layer, m, L->pos + L->off[m], L->len[m], &kp, &ks);
		if (!(keys = snap_key_block(kv, layer, m, kp, ks, &tmp)))
			return SNAP_ERR_NOMEM;
		rc = snap_qerr_block(h->quant, snap_k_scheme(h->quant), keys, kp + ks, h->head_dim,
		    &ka);
		free(tmp);
		if (!rc)
			rc = snap_qerr_block(h->quant, snap_v_scheme(h->quant),
			    L->v + (size_t)L->off[m] * (size_t)h->head_dim, L->len[m], h->head_dim, &va);
	}
	if (rc)
		return rc;
	out->k_max = ka.max;
	out->k_rms = ka.n ? sqrt(ka.sum2 / (double)ka.n) : 0.0;
	out->v_max = va.max;
	out->v_rms = va.n ? sqrt(va.sum2 / (double)va.n) : 0.0;
	return 0;
}
