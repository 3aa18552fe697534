/*
 * pick.c: the snapshot a document answers from: among its snapshots this
 * profile's, else (as the caller asks) one `shrink` cut to exactly this
 * profile's budget, or the document's only snapshot.
 */
#include <stdio.h>
#include <string.h>

#include "service/service_internal.h"

struct pick {
	const struct svc *v;
	int found, other, shrunk;
	uint8_t shrunk_id[SNAP_ID_BYTES]; /* a snapshot shrink cut to this profile */
	uint8_t last_id[SNAP_ID_BYTES];   /* the last one seen (the only one if other == 1) */
};

static int
pick_cb(void *arg, const uint8_t pid[SNAP_ID_BYTES], uint64_t bytes,
    const struct snap_header *h, const char *why, int64_t last_used_us)
{
	struct pick *pk = arg;
	(void)bytes;
	(void)why;
	(void)last_used_us;
	if (!memcmp(pid, pk->v->profile_id, SNAP_ID_BYTES)) {
		pk->found = 1;
		return 0;
	}
	pk->other++;
	memcpy(pk->last_id, pid, SNAP_ID_BYTES);
	if (h && !pk->shrunk && svc_profile_is_shrunk(h->profile, pk->v->profile)) {
		memcpy(pk->shrunk_id, pid, SNAP_ID_BYTES);
		pk->shrunk = 1;
	}
	return 0;
}

int
svc_pick(struct svc *v, const uint8_t doc_id[SNAP_ID_BYTES], int flags,
    uint8_t profile_id[SNAP_ID_BYTES], int *n_other, struct svc_status *st)
{
	struct pick pk;
	int rc;

	memset(st, 0, sizeof(*st));
	memset(&pk, 0, sizeof(pk));
	pk.v = v;
	*n_other = 0;
	rc = snap_profiles(v->s, doc_id, pick_cb, &pk, st->why, sizeof(st->why));
	if (rc && rc != STORE_ERR_NOT_FOUND)
		return svc_fail(st, SVC_AT_LOOKUP, rc);
	*n_other = pk.other;
	if (pk.found)
		memcpy(profile_id, v->profile_id, SNAP_ID_BYTES);
	else if ((flags & SVC_PICK_SHRUNK) && pk.shrunk)
		memcpy(profile_id, pk.shrunk_id, SNAP_ID_BYTES);
	else if ((flags & SVC_PICK_ONLY) && pk.other == 1)
		memcpy(profile_id, pk.last_id, SNAP_ID_BYTES);
	else
		return 0;
	return 1;
}
