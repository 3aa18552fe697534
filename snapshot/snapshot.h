/*
 * snapshot.h: the snapshot codec (DESIGN.md §5): a snapshot is one header
 * record plus one record per layer, each a self-checking byte string that
 * the store (store.h) keeps under doc_id ‖ profile_id ‖ layer.
 *
 * Records are a little-endian binary layout (written at the top of
 * snapshot/snapshot.c).  The header is a zstd frame whose decoded bytes end
 * with their BLAKE2b-128.  The header lists a checksum of every layer
 * record as stored, so `verify` can check a snapshot without decoding it
 * and a record from another snapshot is refused: in format versions 1 to 3
 * a layer record is a zstd frame whose decoded bytes end with their own
 * BLAKE2b-128 and the header's is BLAKE2b-128; in version 4 (what this
 * build writes) the header's is XXH3-128, each byte is hashed once (the
 * record has no checksum of its own), and a form's layer records are
 * stored as their plain bytes, not in a zstd frame, when
 * snap_quant_raw() says so (SNAP_FLAG_RAW).
 *
 * Layer record, per KV head: count, positions (delta-coded varints,
 * strictly increasing), scores (fp16), then K rows and V rows as fp16 or q4
 * (asymmetric, groups of 32 along head_dim, fp16 scale and min; SNAP_Q4_KC
 * groups the keys per channel instead: 32 consecutive units of one channel),
 * or q8, and under the _H forms K and V rows are rotated by the orthonormal
 * Hadamard matrix before packing and rotated back when loaded.
 * K rows are the pre-RoPE keys.  Under PoD a non-anchor (layer, head) stores
 * only the k_prefix + k_suffix key rows the windows still need
 * (spec/pod.md §3.6); values are always complete.
 *
 * Every decoder validates every length and count against the bytes present
 * and against the header; a bad record is SNAP_ERR_CORRUPT with a reason that
 * names the layer (the caller adds the document).  Nothing here runs the
 * model: loading fills the pool's rows, and eng_kv_finish_load() (engine)
 * re-derives the rotated keys.
 */
#ifndef SNAPSHOT_SNAPSHOT_H
#define SNAPSHOT_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"   /* struct eng_kv, enum eng_pos_mode */
#include "storage/store.h"   /* STORE_ID_BYTES, STORE_HEAD_RECORD */

/* The newest record format this build writes and reads.  Versions 1 to 3
 * (the legacy encodings, still read and, for a header whose version is set
 * below 4, written): a snapshot's records carry the oldest version that
 * has its quantization (snap_quant_version): version 2 added q8 and the
 * Hadamard-rotated forms and nothing else; version 3 is a refit cache's
 * (kvzip refit=1): a flag and a bias section per layer record
 * (snapshot_refit.h), any quantization.  Version 4 (issue 31, the load at
 * disk speed) is every new snapshot's, any form, biased or not: the same
 * fields, hashed once with XXH3-128, layer records raw for the forms zstd
 * barely shrinks.  Profiles still name snap_quant_version (what a snapshot
 * means, not how its bytes are laid out), so a store's old snapshots keep
 * answering under the profiles they were made for. */
#define SNAP_FORMAT_VERSION 5
#define SNAP_FAST_VERSION 4 /* the first version hashed once (XXH3-128) */
/* Version 5 (issue 28) is version 4's layout with the quant values 6 to 11
 * added (the 6/5/3/2-bit and mixed rotated forms); only those forms write
 * it, every older form still writes 4 (snap_record_version). */
#define SNAP_BITS_VERSION 5
#define SNAP_HEADER_LAYER STORE_HEAD_RECORD /* the header is the store's head record */
#define SNAP_SUM_BYTES 16                   /* BLAKE2b-128; XXH3-128 (version 4) */
#define SNAP_ID_BYTES STORE_ID_BYTES        /* doc_id, profile_id: BLAKE2b-256 */
#define SNAP_MAX_PROFILE 1024     /* canonical profile text, NUL included */

enum snap_err {
	SNAP_OK = 0,
	SNAP_ERR_NOMEM = -1,
	SNAP_ERR_ARG = -2,
	SNAP_ERR_CORRUPT = -3, /* bytes that are not a valid record */
	SNAP_ERR_VERSION = -4, /* a format version this build does not read */
	SNAP_ERR_MISMATCH = -5 /* valid, but not for this model / pool / header */
};
const char *snap_strerror(int err);

enum snap_quant {
	SNAP_FP16 = 0,   /* K and V as fp16 */
	SNAP_Q4 = 1,     /* K and V q4, groups of 32 along head_dim */
	SNAP_Q4_KC = 2,  /* V as SNAP_Q4; K q4 grouped per channel (32 units) */
	/* format version 2: */
	SNAP_Q8 = 3,     /* K and V q8, groups of 32 along head_dim */
	SNAP_Q4_H = 4,   /* SNAP_Q4 of the rows rotated by H (hadamard.h) */
	SNAP_Q4_KC_H = 5, /* SNAP_Q4_KC of the rows rotated by H */
	/* format version 5 (issue 28): rows rotated by H, K and V along the
	 * row at the bits named (qpack.h's b-bit scheme; q4, q8 their own) */
	SNAP_Q6_H = 6,   /* K and V 6-bit */
	SNAP_Q5_H = 7,   /* K and V 5-bit */
	SNAP_Q3_H = 8,   /* K and V 3-bit */
	SNAP_K5V3_H = 9, /* K 5-bit, V 3-bit */
	SNAP_K4V2_H = 10, /* K q4, V 2-bit */
	SNAP_K8V4_H = 11  /* K q8, V q4 */
};
#define SNAP_QUANT_MAX SNAP_K8V4_H
/* The names, in enum order, as help texts list them. */
#define SNAP_QUANT_NAMES "fp16, q4, q4kc, q8, q4h, q4kch, q6h, q5h, q3h, k5v3h, k4v2h, k8v4h"
/* "fp16", "q4", "q4kc", "q8", "q4h", "q4kch", "q6h", "q5h", "q3h",
 * "k5v3h", "k4v2h", "k8v4h" <-> enum; -1 for an unknown name. */
int snap_quant_parse(const char *name);
const char *snap_quant_name(int quant);
/* The record format version a snapshot of this quantization is written in
 * (1, 2, or 5 for the forms only version 5 has; 0 for an unknown one). */
int snap_quant_version(int quant);
/* 1 when the form rotates K and V rows by H before packing them (head_dim
 * must then be a power of two). */
int snap_quant_rotated(int quant);
/* 1 when format version 4 stores this form's layer records as their plain
 * bytes (SNAP_FLAG_RAW): zstd shrinks them too little for its decode time
 * (measured in bench/RESULTS.md, "Snapshot load: format version 4"). */
int snap_quant_raw(int quant);

/* PoD metadata of a snapshot (spec/pod.md §3.6). */
struct snap_pod {
	uint32_t n_s, n_r;
	int distant_own;
	uint8_t *anc; /* (n_head_kv, n_layer) */
};

/* Everything the header record holds.  Arrays are owned by the struct
 * after snap_header_decode (free with snap_header_free); for encode the
 * caller owns them. */
struct snap_header {
	uint32_t version;                 /* decoded: the record's; encoding writes
	                                   * snap_record_version (snapshot_refit.h):
	                                   * 4 when this is 4, else the legacy one;
	                                   * snap_header_from_kv sets 4 */
	char model_fp[65];                /* eng_model_fingerprint(), hex */
	uint8_t profile_id[SNAP_ID_BYTES];
	char profile[SNAP_MAX_PROFILE];   /* the canonical text profile_id hashes */
	int n_layer, n_head, n_head_kv, head_dim;
	uint64_t n_tokens;                /* document tokens ingested */
	uint32_t next_pos;                /* position of the next token */
	int pos_mode;                     /* enum eng_pos_mode */
	int quant;                        /* enum snap_quant */
	int64_t *counts;                  /* (n_layer, n_head_kv) units per head */
	uint8_t (*layer_sum)[SNAP_SUM_BYTES]; /* (n_layer) checksum of each stored
	                                   * record (snap_layer_sum) */
	int has_pod;
	struct snap_pod pod;              /* when has_pod */
	int has_bias;                     /* version 3: a refit bias per unit (fp32) in
	                                   * every layer record (snapshot_refit.h) */
};

/* Fill the header's shape fields (dims, counts, next_pos, pos_mode, PoD)
 * from a pool; allocates counts and layer_sum (sums zeroed) and pod.anc. */
int snap_header_from_kv(struct snap_header *h, const struct eng_kv *kv, int n_head);
void snap_header_free(struct snap_header *h);

/* Encode / decode the header record (zstd level zlevel; *out malloc'd). */
int snap_header_encode(const struct snap_header *h, int zlevel, uint8_t **out, size_t *out_len);
int snap_header_decode(const uint8_t *buf, size_t len, struct snap_header *h, char *why,
    size_t why_len);

/* The header's checksum of a stored layer record: BLAKE2b-128 for a
 * version 1 to 3 header, XXH3-128 (canonical, big-endian bytes) for 4.
 * 0, or SNAP_ERR_NOMEM when libsodium cannot start. */
int snap_layer_sum(const struct snap_header *h, const uint8_t *buf, size_t len,
    uint8_t out[SNAP_SUM_BYTES]);

/* Encode layer `layer` of kv with h->quant (h gives the PoD map and the
 * next position that fix the key rows; its version and raw flag the
 * encoding).  Writes the stored record's snap_layer_sum into
 * h->layer_sum[layer]. */
int snap_layer_encode(const struct eng_kv *kv, int layer, struct snap_header *h, int zlevel,
    uint8_t **out, size_t *out_len);

/* Check a stored layer record against the header without loading it: its
 * checksum as stored, then (versions 1 to 3) the decoded bytes' own
 * checksum, and its shape. */
int snap_layer_check(const uint8_t *buf, size_t len, const struct snap_header *h, int layer,
    char *why, size_t why_len);

/* Decode a stored layer record into kv's layer `layer`: the pool must have
 * the header's shape and room (eng_kv_prepare_layer sets the segments from
 * h->counts); rows get pos, score, pre-RoPE k (NaN where PoD dropped it)
 * and v, and under h->has_bias their bias (the pool is marked biased).  Call eng_kv_finish_load() after the last layer. */
int snap_layer_decode(const uint8_t *buf, size_t len, const struct snap_header *h, int layer,
    struct eng_kv *kv, char *why, size_t why_len);

/* PoD (spec/pod.md §3.6): after every layer is decoded into kv, check that
 * every layer of a block holds exactly its anchor layer's positions (a
 * cross-layer property no single record can show).  0 for a dense header;
 * SNAP_ERR_CORRUPT naming the layer; SNAP_ERR_ARG if kv and h differ. */
int snap_pod_check_blocks(const struct snap_header *h, const struct eng_kv *kv, char *why,
    size_t why_len);

/* Reconstruction error of a quantization scheme on one layer of a pool, for
 * reports: max |x − x̂| and RMS error over K and V separately. */
struct snap_qerr {
	double k_max, k_rms, v_max, v_rms;
};
int snap_layer_qerr(const struct eng_kv *kv, int layer, const struct snap_header *h,
    struct snap_qerr *out);

#endif /* SNAPSHOT_SNAPSHOT_H */
