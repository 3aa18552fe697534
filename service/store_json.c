/*
 * store_json.c: the one JSON shape of a document and of a snapshot
 * (docs/JSON.md, types `document` and `snapshot`), for kvsnapd's ls and
 * info ops (and HTTP's /v1/documents over them) and `kvsnap ls/info
 * --json` alike; of a library question's result (docs/PROTOCOL.md,
 * "Library questions"), for kvsnapd's query op and `kvsnap query --local
 * --docs` alike; and of search hits, for kvsnapd's search op and `kvsnap
 * search --local` alike.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "service/service_internal.h"

json_t *
svc_json_text(const char *s, size_t len)
{
	json_t *j = json_stringn(s, len);
	char *fix;
	size_t i, o = 0;

	if (j)
		return j;
	/* not UTF-8 (a path, a name from an older store): each byte outside
	 * ASCII becomes U+FFFD, so the line stays valid JSON */
	if (!(fix = malloc(3 * len + 1)))
		return json_string("");
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x80 && c) {
			fix[o++] = (char)c;
		} else {
			memcpy(fix + o, "\xEF\xBF\xBD", 3);
			o += 3;
		}
	}
	j = json_stringn(fix, o);
	free(fix);
	return j ? j : json_string("");
}

static json_t *
json_cstr(const char *s)
{
	return svc_json_text(s, strlen(s));
}

void
svc_json_time(int64_t us, char *buf, size_t cap)
{
	time_t t = (time_t)(us / 1000000);
	struct tm tm;
	if (us <= 0 || !gmtime_r(&t, &tm) || !strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(buf, cap, "-");
}

double
svc_per_token(uint64_t bytes, uint64_t tokens)
{
	return tokens ? (double)bytes / (double)tokens : 0.0;
}

json_t *
svc_doc_json(const struct svc_doc *d, const struct svc_who *who)
{
	char hex[2 * SVC_ID_BYTES + 1], c[32], u[32];
	json_t *o;
	int i;

	store_hex(d->doc_id, SVC_ID_BYTES, hex);
	svc_json_time(d->created_us, c, sizeof(c));
	svc_json_time(d->last_used_us, u, sizeof(u));
	o = json_pack("{s:s, s:o, s:o, s:o, s:I, s:I, s:s, s:s, s:i, s:I, s:f, s:b}", "doc_id", hex,
	    "name", json_cstr(d->name), "source", json_cstr(d->source), "format",
	    json_cstr(d->format[0] ? d->format : "text"), "bytes", (json_int_t)d->bytes, "tokens",
	    (json_int_t)d->tokens, "created", c, "last_used", u, "snapshots", d->snapshots,
	    "stored_bytes", (json_int_t)d->stored_bytes, "bytes_per_token",
	    svc_per_token(d->stored_bytes, d->tokens), "shared", d->shared);
	if (!o)
		return NULL;
	if (who) /* a caller of kvsnapd: whether it is one of the owners */
		json_object_set_new(o, "mine", json_boolean(d->mine));
	if (!who || who->all) { /* the others' uids: for who sees all */
		json_t *own = json_array();
		for (i = 0; own && i < d->n_owners; i++)
			json_array_append_new(own, json_integer(d->owners[i]));
		json_object_set_new(o, "owners", own);
	}
	if (d->figured)
		json_object_update_new(o, json_pack("{s:I, s:I, s:I, s:I, s:I}", "units",
		    (json_int_t)d->fig.units, "full_units", (json_int_t)d->fig.full_units,
		    "snapshot_bytes", (json_int_t)d->fig.bytes, "full_bytes",
		    (json_int_t)d->fig.full_bytes, "parts", (json_int_t)(d->parts ? d->parts : 1)));
	return o;
}

json_t *
svc_snap_json(const struct svc_snap *sn, int with_active)
{
	char hex[2 * SVC_ID_BYTES + 1], u[32];
	json_t *o;

	store_hex(sn->profile_id, SVC_ID_BYTES, hex);
	svc_json_time(sn->last_used_us, u, sizeof(u));
	o = json_pack("{s:s, s:I, s:s}", "profile_id", hex, "stored_bytes",
	    (json_int_t)sn->stored_bytes, "last_used", u);
	if (o && sn->readable)
		json_object_update_new(o, json_pack("{s:o, s:I, s:I, s:I, s:I, s:s, s:s, s:f}",
		    "profile", json_cstr(sn->profile), "tokens", (json_int_t)sn->fig.tokens, "units",
		    (json_int_t)sn->fig.units, "full_units", (json_int_t)sn->fig.full_units,
		    "full_bytes", (json_int_t)sn->fig.full_bytes, "quant", snap_quant_name(sn->quant),
		    "pos_mode", sn->pos_slot ? "slot" : "original", "bytes_per_token",
		    svc_per_token(sn->stored_bytes, (uint64_t)sn->fig.tokens)));
	else if (o)
		json_object_set_new(o, "error", json_cstr(sn->error));
	if (o && sn->parts) { /* one part of parts */
		json_object_set_new(o, "part", json_integer(sn->part));
		json_object_set_new(o, "parts", json_integer(sn->parts));
	}
	if (o && with_active) /* kvsnapd: the profile it answers from */
		json_object_set_new(o, "active", json_boolean(sn->active));
	return o;
}

json_t *
svc_hits_json(const struct svc_hit *hits, unsigned n, json_t *(*str)(const char *))
{
	char hex[2 * SVC_ID_BYTES + 1];
	json_t *arr = json_array();
	unsigned i;

	for (i = 0; arr && i < n; i++) {
		svc_hex(hits[i].doc_id, SVC_ID_BYTES, hex);
		json_array_append_new(arr, json_pack("{s:s, s:o, s:I, s:f, s:o}", "doc_id", hex,
		    "name", str(hits[i].name), "part", (json_int_t)hits[i].part, "score",
		    hits[i].score, "snippet", str(hits[i].snippet)));
	}
	return arr;
}

json_t *
svc_lib_json(const struct svc_lib_answer *a, enum svc_lib_mode mode)
{
	json_t *srcs = json_array(), *o;
	char hex[2 * SVC_ID_BYTES + 1];
	size_t i;

	for (i = 0; srcs && i < a->n_src; i++) {
		const struct svc_lib_source *s = &a->src[i];
		svc_hex(s->doc_id, SVC_ID_BYTES, hex);
		json_array_append_new(srcs, json_pack("{s:s, s:o, s:b, s:o, s:o, s:o, s:I}", "doc_id",
		    hex, "label", json_cstr(s->label), "consulted", s->used,
		    "score", isnan(s->score) ? json_null() : json_real(s->score),
		    "bm25", isnan(s->bm25) ? json_null() : json_real(s->bm25),
		    "why", s->used ? json_null() : json_cstr(s->why), "tokens",
		    (json_int_t)s->tokens));
		/* the part (from 0) of how many (1: stored whole) */
		json_object_set_new(json_array_get(srcs, json_array_size(srcs) - 1), "part",
		    json_integer((json_int_t)s->part));
		json_object_set_new(json_array_get(srcs, json_array_size(srcs) - 1), "parts",
		    json_integer(s->n_parts ? (json_int_t)s->n_parts : 1));
	}
	if (a->chosen >= 0)
		svc_hex(a->src[a->chosen].doc_id, SVC_ID_BYTES, hex);
	o = json_pack("{s:s, s:o, s:o, s:b, s:o, s:I, s:I, s:s, s:f, s:f, s:f}", "mode",
	    svc_lib_mode_name(mode), "sources", srcs ? srcs : json_array(),
	    "answered_from", a->chosen >= 0 && !a->abstained ? json_string(hex) : json_null(),
	    "abstained", a->abstained,
	    "confidence", isfinite(a->confidence) ? json_real(a->confidence) : json_null(),
	    "tokens", (json_int_t)a->tokens, "prompt_tokens", (json_int_t)a->prompt_tokens,
	    "stop", svc_stop_name(a->stop), "ttft_s", a->ttft, "ttft_model_s", a->ttft_model,
	    "seconds", a->seconds);
	if (o) { /* the first tokens judged before any was handed on */
		json_object_set_new(o, "judged_confidence", isfinite(a->judged_confidence) ?
		    json_real(a->judged_confidence) : json_null());
		json_object_set_new(o, "judged_tokens", json_integer((json_int_t)a->judged_tokens));
	}
	if (o) /* the part answered from (from 0), when it is one */
		json_object_set_new(o, "answered_part", a->chosen >= 0 && !a->abstained &&
		    a->src[a->chosen].n_parts ? json_integer((json_int_t)a->src[a->chosen].part) :
		    json_null());
	return o;
}
