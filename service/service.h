/*
 * service.h: the steps the daemon and the CLI both take, written once.
 * A service call works on an open store and a loaded model and reports in
 * plain values; turning its result into a protocol event or a line on a
 * terminal is the caller's business.  (The first step here is shrink; the
 * structure issue moves ingest and query here too.)
 */
#ifndef KVSNAP_SERVICE_H
#define KVSNAP_SERVICE_H

#include <stdint.h>

#include "engine/engine.h"
#include "snapshot/snapshot_io.h"
#include "storage/store.h"

/* What a shrink made. */
struct svc_shrunk {
	uint8_t profile_id[SNAP_ID_BYTES]; /* the new snapshot's profile */
	char profile[SNAP_MAX_PROFILE];
	int64_t units_from;                /* units of the snapshot it was cut from */
	int64_t units;                     /* units kept */
	uint64_t n_tokens;                 /* the document's tokens */
};

/* Derive a snapshot of doc keeping share `ratio` of its units from its
 * largest kvzip snapshot, by the stored scores (no model run), and store
 * it under the kvzip profile with ratio=R,from=<the source's budget form>.
 * Returns SNAPIO_OK, SNAPIO_ERR_NOT_FOUND (no kvzip snapshot to cut),
 * SNAPIO_ERR_ARG (a ratio that keeps no fewer units than the source),
 * SNAPIO_ERR_CORRUPT / _MISMATCH / _FULL / _IO / _NOMEM, with a reason. */
int svc_shrink(struct store *s, const struct eng_model *m, const uint8_t doc[SNAP_ID_BYTES],
    double ratio, struct svc_shrunk *out, char *why, size_t why_len);

/* 1 if stored profile `have` is `want` with one ",from=..." option added
 * to its policy: a snapshot svc_shrink cut to exactly that profile's
 * budget, which a reader of `want` may answer from. */
int svc_profile_is_shrunk(const char *have, const char *want);

#endif
