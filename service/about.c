/*
 * about.c: what a front end may read of an open service (struct svc is
 * opaque outside service/): its profile, its model, whether a shared tier
 * is configured; and the few lookups in its store the front ends make
 * beside the service's steps (a DOC reference, the advice's document, the
 * store's totals).
 */
#include <stdio.h>
#include <string.h>

#include "service/service_internal.h"

const char *
svc_model_fingerprint(const struct svc *v)
{
	return eng_model_fingerprint(v->m);
}

const char *
svc_profile_text(const struct svc *v)
{
	return v->profile;
}

const char *
svc_profile_hex(const struct svc *v)
{
	return v->profile_hex;
}

const uint8_t *
svc_profile_id(const struct svc *v)
{
	return v->profile_id;
}

int
svc_profile_quant(const struct svc *v)
{
	return v->quant;
}

int
svc_has_tier(const struct svc *v)
{
	return v->tier != NULL;
}

int
svc_doc_resolve(struct svc *v, const char *ref, const struct svc_who *w,
    uint8_t doc_id[SVC_ID_BYTES], struct svc_status *st)
{
	return svc_resolve_as(v->s, ref, w, doc_id, st);
}

void
svc_pick_advice_doc(struct svc *v, const struct svc_picked *pk,
    const uint8_t doc_id[SVC_ID_BYTES], int local, char *name, size_t name_cap, char *out,
    size_t cap)
{
	struct store_doc d;
	char why[256];
	int known = !store_info(v->s, doc_id, &d, why, sizeof(why));

	svc_pick_advice(v, pk, known ? &d : NULL, local, out, cap);
	if (name_cap)
		snprintf(name, name_cap, "%s", known ? d.name : "");
}

int
svc_store_totals(struct svc *v, struct svc_store_totals *out, char *why, size_t why_len)
{
	struct svc_target t;
	svc_target_of(v, NULL, &t);
	return svc_stats(&t, out, why, why_len);
}

struct figures_find {
	const uint8_t *profile_id;
	struct svc_snap_figures *fig;
};

static int
figures_cb(void *arg, const uint8_t pid[SNAP_ID_BYTES], uint64_t bytes,
    const struct snap_header *h, const char *why, int64_t last_used_us)
{
	struct figures_find *f = arg;
	(void)why;
	(void)last_used_us;
	if (h && !memcmp(pid, f->profile_id, SNAP_ID_BYTES))
		svc_snap_figures(h, bytes, f->fig);
	return 0;
}

void
svc_snapshot_figures(struct svc *v, const uint8_t doc_id[SVC_ID_BYTES],
    const uint8_t profile_id[SVC_ID_BYTES], struct svc_snap_figures *fig)
{
	struct figures_find f = { profile_id, fig };
	char why[256];

	memset(fig, 0, sizeof(*fig));
	(void)snap_profiles(v->s, doc_id, figures_cb, &f, why, sizeof(why));
}
