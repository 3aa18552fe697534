/*
 * shrink.c: a smaller kvzip snapshot cut from a stored one by the scores
 * it carries, with no model run (`kvsnap shrink`, the protocol's shrink).
 * The source is the document's kvzip snapshot with the most units; the
 * result is filed under the source's kvzip options with ratio=R and
 * from=<the source's ratio or budget>, so it never passes for an ingest.
 * With replace (`--replace`), the put that stores it removes the source in
 * the same store transaction: a reader sees the one or the other.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service/service_internal.h"

struct shrink_pick {
	uint8_t id[SNAP_ID_BYTES];
	char profile[SNAP_MAX_PROFILE];
	int64_t units;
	uint64_t n_tokens;
	int quant, n;
	unsigned parts;          /* parts seen: a document in parts is not shrunk */
};

static int
shrink_pick_cb(void *arg, const uint8_t pid[SNAP_ID_BYTES], uint64_t bytes,
    const struct snap_header *h, const char *why, int64_t last_used_us)
{
	struct shrink_pick *sp = arg;
	int64_t units;
	(void)bytes;
	(void)why;
	(void)last_used_us;
	size_t bl;
	unsigned part, n;
	if (h && svc_part_parse(h->profile, &bl, &part, &n)) { /* a document in parts */
		sp->parts = n;
		return 0;
	}
	if (!h || !strstr(h->profile, " policy=kvzip:"))
		return 0;
	units = svc_snapshot_units(h);
	sp->n++;
	if (units > sp->units) {
		memcpy(sp->id, pid, SNAP_ID_BYTES);
		snprintf(sp->profile, sizeof(sp->profile), "%s", h->profile);
		sp->units = units;
		sp->n_tokens = h->n_tokens;
		sp->quant = h->quant;
	}
	return 0;
}

/* From a profile's "policy=kvzip:FORM,OPTS chunk=N": the options without
 * from=, then ",from=FORM" (the source's ratio or budget), and the chunk. */
static int
shrink_target_opts(const char *profile, char *opts, size_t cap, long *chunk)
{
	const char *pol = strstr(profile, " policy=kvzip:"), *end, *ch = strstr(profile, " chunk=");
	char form[64], *item, *save = NULL, buf[SNAP_MAX_PROFILE];
	size_t n = 0;
	if (!pol || !ch || (*chunk = strtol(ch + 7, NULL, 10)) <= 0)
		return -1;
	pol += strlen(" policy=kvzip:");
	end = strchr(pol, ' ');
	if (!end || (size_t)(end - pol) >= sizeof(buf))
		return -1;
	memcpy(buf, pol, (size_t)(end - pol));
	buf[end - pol] = 0;
	form[0] = 0;
	opts[0] = 0;
	for (item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		if (!strncmp(item, "ratio=", 6))
			snprintf(form, sizeof(form), "%s", item + 6);
		else if (!strncmp(item, "budget=", 7))
			snprintf(form, sizeof(form), "budget%s", item + 7);
		else if (strncmp(item, "from=", 5))
			n += (size_t)snprintf(opts + n, n < cap ? cap - n : 0, "%s%s", n ? "," : "",
			    item);
	}
	if (!form[0])
		return -1;
	n += (size_t)snprintf(opts + n, n < cap ? cap - n : 0, "%sfrom=%s", n ? "," : "", form);
	return n < cap ? 0 : -1;
}

int
svc_shrink(struct svc *v, const uint8_t doc[SNAP_ID_BYTES], double ratio, int replace,
    struct svc_shrunk *out, char *why, size_t why_len)
{
	struct store *s = v->s;
	const struct eng_model *m = v->m;
	struct shrink_pick sp;
	struct store_doc d;
	struct snap_header h;
	struct eng_policy *p = NULL;
	struct eng_kv *kv = NULL;
	char opts[SNAP_MAX_PROFILE];
	long chunk;
	int l, g, rc;

	memset(out, 0, sizeof(*out));
	memset(&h, 0, sizeof(h));
	memset(&sp, 0, sizeof(sp));
	if ((rc = snap_profiles(s, doc, shrink_pick_cb, &sp, why, why_len)))
		return snapio_from_store(rc);
	if (!sp.n && sp.parts) {
		snprintf(why, why_len, "the document is stored in %u parts, and shrink cuts a "
		    "whole document's snapshot only (not built for parts: ingest it again with "
		    "--ratio R instead)", sp.parts);
		return SNAPIO_ERR_ARG;
	}
	if (!sp.n) {
		snprintf(why, why_len, "the document has no kvzip snapshot to shrink (shrink "
		    "selects by kvzip's stored scores: ingest it with --policy kvzip)");
		return SNAPIO_ERR_NOT_FOUND;
	}
	if (shrink_target_opts(sp.profile, opts, sizeof(opts), &chunk)) {
		snprintf(why, why_len, "cannot read the kvzip options of profile '%s'", sp.profile);
		return SNAPIO_ERR_CORRUPT;
	}
	if ((rc = eng_policy_create_ratio(&p, "kvzip", opts, ratio, why, why_len))) {
		rc = rc == ENG_ERR_ARG ? SNAPIO_ERR_ARG : SNAPIO_ERR_CORRUPT;
		goto out;
	}
	if (snap_profile(out->profile, sizeof(out->profile), out->profile_id,
	    eng_model_fingerprint(m), p, chunk, sp.quant)) {
		snprintf(why, why_len, "the derived profile is over %d bytes", SNAP_MAX_PROFILE);
		rc = SNAPIO_ERR_ARG;
		goto out;
	}
	if ((rc = snap_load(s, doc, sp.id, m, 0, &kv, &h, why, why_len)))
		goto out;
	if ((rc = eng_kvzip_shrink(p, kv, (int64_t)sp.n_tokens, why, why_len))) {
		if (!why[0])
			snprintf(why, why_len, "%s", eng_strerror(rc));
		rc = rc == ENG_ERR_ARG ? SNAPIO_ERR_ARG :
		    rc == ENG_ERR_NOMEM ? SNAPIO_ERR_NOMEM : SNAPIO_ERR_ENGINE;
		goto out;
	}
	if ((rc = store_info(s, doc, &d, why, why_len))) {
		rc = snapio_from_store(rc);
		goto out;
	}
	if ((rc = snap_save_replacing(s, &d, kv, m->hp.n_head, eng_model_fingerprint(m),
	    out->profile, out->profile_id, sp.quant, SNAP_ZLEVEL_DEFAULT, sp.n_tokens,
	    replace ? sp.id : NULL, why, why_len)))
		goto out;
	out->replaced = replace;
	memcpy(out->from_id, sp.id, SNAP_ID_BYTES);
	for (l = 0; l < kv->n_layer; l++)
		for (g = 0; g < kv->n_head_kv; g++)
			out->units += eng_kv_len(kv, l, g);
	out->units_from = sp.units;
	out->n_tokens = sp.n_tokens;
out:
	snap_header_free(&h);
	eng_kv_free(kv);
	eng_policy_free(p);
	return rc;
}

int
svc_profile_is_shrunk(const char *have, const char *want)
{
	const char *pol = strstr(have, " policy=kvzip:"), *f, *end;
	size_t pre;
	if (!pol || !(f = strstr(pol, ",from=")) || !(end = strchr(pol + 1, ' ')) || f > end)
		return 0;
	pre = (size_t)(f - have);
	f += strlen(",from=");
	f += strcspn(f, ", ");
	return !strncmp(have, want, pre) && !strcmp(f, want + pre);
}
