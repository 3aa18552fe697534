/*
 * snapshot_refit.h: the refit part of the snapshot format (format version
 * 3, issue 28): a kvzip refit=1 cache keeps a logit bias per unit (engine
 * eng_kv.has_bias, engine/cache/refit.c) beside its refit values (the
 * values are the layer records' V rows already).
 *
 * A snapshot of such a cache is written in version 3: the header's u16 at
 * 42 and the layer records' u16 at 22 (reserved zeros before) hold the
 * flags, SNAP_FLAG_BIAS set, and each layer record ends, after its last
 * head and before its checksum, with the bias section: for every KV head m
 * in order, count[m] values as IEEE-754 fp32, little-endian, each finite.
 * Every other snapshot keeps the version of its quantization (1 or 2) and
 * its bytes; a record's version must be snap_record_version(header), so
 * each snapshot has exactly one encoding.  A build that reads 1 to 2
 * refuses a version-3 record by its version before anything else.
 *
 * Why fp32 for the bias under every quantization: a bias is a logit added
 * unscaled before the softmax, so its error multiplies a unit's weight by
 * exp(error) (fp16 keeps 11 bits: up to 0.2 % at |b| ~ 4); it costs 4
 * bytes per unit against 256 (fp16) or 80 (q4) for SmolLM2's K and V
 * rows, and it keeps a loaded snapshot bit-identical to the pool it was
 * saved from (tests/test_kvzip.c `refit`).
 */
#ifndef SNAPSHOT_SNAPSHOT_REFIT_H
#define SNAPSHOT_SNAPSHOT_REFIT_H

#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"
#include "snapshot/snapshot.h"

#define SNAP_REFIT_VERSION 3
#define SNAP_FLAG_BIAS 1u /* the layer records carry the bias section */
#define SNAP_FLAG_RAW 2u  /* version 4: layer records stored plain (snapshot.h) */
#define SNAP_FLAGS_KNOWN (SNAP_FLAG_BIAS | SNAP_FLAG_RAW)

/* The version a snapshot with this header is written in: 5 for the forms
 * of version 5 (SNAP_BITS_VERSION) when h->version is 4 or more, 0 below
 * (they have no legacy encoding); 4 for every older form when h->version
 * is 4 or more (SNAP_FAST_VERSION, biased or not); else the legacy one: 3
 * for a biased one, else its quantization's (snap_quant_version); 0 if
 * unknown. */
int snap_record_version(const struct snap_header *h);
/* The flags field of its records (SNAP_FLAG_RAW only in version 4). */
unsigned snap_record_flags(const struct snap_header *h);
/* 1 when its layer records are stored plain (version 4 and
 * snap_quant_raw of its form): one encoding per snapshot, so a decoder
 * refuses a header whose raw flag is not this. */
int snap_record_raw(const struct snap_header *h);

/* Bytes of the bias section of a layer of `units` units (0 unbiased). */
uint64_t snap_bias_bytes(const struct snap_header *h, uint64_t units);

/* Write the bias section of kv's layer into dst (snap_bias_bytes of the
 * layer's units).  SNAP_ERR_ARG for a non-finite bias (no decoder would
 * take it back). */
int snap_bias_put(uint8_t *dst, const struct eng_kv *kv, int layer);

/* Check the bias section src of layer `layer` (the header's counts) and,
 * when kv is not NULL, write it into the layer's rows (laid out by
 * eng_kv_prepare_layer) and mark the pool biased.  SNAP_ERR_CORRUPT with
 * a reason naming the layer and head. */
int snap_bias_get(const uint8_t *src, const struct snap_header *h, int layer,
    struct eng_kv *kv, char *why, size_t why_len);

#endif /* SNAPSHOT_SNAPSHOT_REFIT_H */
