/*
 * protocol.c: kvsnapd's wire protocol as pure functions: one request line
 * into a struct proto_req (every field checked for type and range), and
 * events back into lines.  No I/O and no global state: the fuzz target
 * (tests/fuzz/fuzz_protocol.c) drives these directly.  JSON is jansson's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fail.h"
#include "daemon/daemon.h"

/* ------------------------------------------------------------------------ */
/* Names                                                                     */

static const char *const proto_ops[] = {
	[PROTO_OP_HELLO] = "hello",
	[PROTO_OP_INGEST] = "ingest",
	[PROTO_OP_QUERY] = "query",
	[PROTO_OP_HAS] = "has",
	[PROTO_OP_CANCEL] = "cancel",
	[PROTO_OP_LS] = "ls",
	[PROTO_OP_INFO] = "info",
	[PROTO_OP_RM] = "rm",
	[PROTO_OP_STATS] = "stats",
	[PROTO_OP_VERIFY] = "verify",
	[PROTO_OP_PRUNE] = "prune",
	[PROTO_OP_SHRINK] = "shrink",
	[PROTO_OP_CHAT] = "chat",
	[PROTO_OP_MODELS] = "models",
	[PROTO_OP_SEARCH] = "search",
};
#define PROTO_N_OPS (sizeof(proto_ops) / sizeof(proto_ops[0]))

const char *
proto_op_name(enum proto_op op)
{
	return (size_t)op < PROTO_N_OPS ? proto_ops[op] : "?";
}

static const struct {
	const char *name;
	int server;
} proto_codes[] = {
	[PROTO_E_BAD_JSON] = { "bad_json", 0 },
	[PROTO_E_BAD_REQUEST] = { "bad_request", 0 },
	[PROTO_E_UNKNOWN_OP] = { "unknown_op", 0 },
	[PROTO_E_VERSION] = { "version", 0 },
	[PROTO_E_LINE_TOO_LONG] = { "line_too_long", 0 },
	[PROTO_E_TOO_LARGE] = { "too_large", 0 },
	[PROTO_E_BUSY] = { "busy", 1 },
	[PROTO_E_TOO_MANY_CONNS] = { "too_many_connections", 1 },
	[PROTO_E_NO_FD] = { "no_fd", 0 },
	[PROTO_E_BAD_FILE] = { "bad_file", 0 },
	[PROTO_E_NOT_FOUND] = { "not_found", 0 },
	[PROTO_E_AMBIGUOUS] = { "ambiguous", 0 },
	[PROTO_E_PROFILE] = { "profile_mismatch", 0 },
	[PROTO_E_CORRUPT] = { "corrupt", 1 },
	[PROTO_E_CANCELLED] = { "cancelled", 0 },
	[PROTO_E_SHUTTING_DOWN] = { "shutting_down", 1 },
	[PROTO_E_NAME_TAKEN] = { "name_taken", 0 },
	[PROTO_E_STORE] = { "store_error", 1 },
	[PROTO_E_STORE_FULL] = { "store_full", 1 },
	[PROTO_E_ENGINE] = { "engine_error", 1 },
	[PROTO_E_TOO_LONG] = { "too_long", 0 },
	[PROTO_E_INTERNAL] = { "internal", 1 },
	[PROTO_E_TIMEOUT] = { "timeout", 0 },
	[PROTO_E_DENIED] = { "denied", 0 },
	[PROTO_E_UNSUPPORTED] = { "unsupported_format", 0 },
	[PROTO_E_TIER_UNAVAILABLE] = { "tier_unavailable", 1 },
	[PROTO_E_LOADING] = { "loading", 1 },
};
#define PROTO_N_CODES (sizeof(proto_codes) / sizeof(proto_codes[0]))

const char *
proto_code_name(enum proto_code code)
{
	return (size_t)code < PROTO_N_CODES && proto_codes[code].name ? proto_codes[code].name :
	    "internal";
}

const char *
proto_code_class(enum proto_code code)
{
	return (size_t)code < PROTO_N_CODES && proto_codes[code].name && !proto_codes[code].server ?
	    "client" : "server";
}

/* ------------------------------------------------------------------------ */
/* Parsing                                                                   */

#define proto_fail kv_fail /* a reason into msg, the code returned */

/* Member `key` as a share in (0, 1] (a JSON number); required. */
static int
proto_get_ratio(json_t *o, const char *key, double *out, char *msg, size_t msg_len)
{
	json_t *v = json_object_get(o, key);
	double x;
	if (!v || json_is_null(v))
		return proto_fail(msg, msg_len, PROTO_E_BAD_REQUEST, "\"%s\" is required", key);
	x = json_is_number(v) ? json_number_value(v) : -1.0;
	if (!(x > 0.0 && x <= 1.0))
		return proto_fail(msg, msg_len, PROTO_E_BAD_REQUEST,
		    "\"%s\" must be a number in (0, 1]: the share of the document's units kept", key);
	*out = x;
	return 0;
}

/* An id is an integer or a short string. */
static int
proto_id_ok(const json_t *v)
{
	return json_is_integer(v) || (json_is_string(v) && json_string_length(v) <= PROTO_ID_MAX);
}

/* The fields of each op. */
static int
proto_parse_fields(json_t *o, struct proto_req *r, char *msg, size_t msg_len)
{
	int rc = 0;
	json_t *t;

	switch (r->op) {
	case PROTO_OP_HELLO:
	case PROTO_OP_LS:
	case PROTO_OP_STATS:
		return 0;
	case PROTO_OP_INGEST:
		if ((rc = proto_json_bool(o, "fd", &r->use_fd, msg, msg_len)) ||
		    (rc = proto_json_str(o, "text", 0, PROTO_TEXT_MAX, PROTO_E_TOO_LARGE, &r->text, &r->text_len, msg, msg_len)) ||
		    (rc = proto_json_str(o, "name", 0, PROTO_NAME_MAX, PROTO_E_BAD_REQUEST, &r->name, NULL, msg, msg_len)) ||
		    (rc = proto_json_str(o, "source", 0, PROTO_SOURCE_MAX, PROTO_E_BAD_REQUEST, &r->source, NULL, msg, msg_len)) ||
		    (rc = proto_json_str(o, "encoding", 0, PROTO_ENCODING_MAX, PROTO_E_BAD_REQUEST, &r->encoding, NULL, msg, msg_len)) ||
		    (rc = proto_json_bool(o, "force", &r->force, msg, msg_len)) ||
		    (rc = proto_json_bool(o, "share", &r->share, msg, msg_len)) ||
		    (rc = proto_json_int(o, "part_tokens", 1, PROTO_PART_TOKENS_MAX, &r->part_tokens,
		    msg, msg_len)))
			return rc;
		if (!r->use_fd == !r->text)
			return proto_fail(msg, msg_len, PROTO_E_BAD_REQUEST,
			    "ingest needs exactly one of \"fd\":true and \"text\"");
		if (r->text && r->text_len == 0)
			return proto_fail(msg, msg_len, PROTO_E_BAD_REQUEST, "\"text\" is empty");
		if (r->text && r->encoding)
			return proto_fail(msg, msg_len, PROTO_E_BAD_REQUEST, "\"encoding\" is for a "
			    "document passed by \"fd\" (inline \"text\" is JSON: UTF-8)");
		return 0;
	case PROTO_OP_QUERY:
		r->max_tokens = PROTO_MAX_TOKENS_DEFAULT;
		r->top_p = 1.0;
		if ((rc = proto_json_docs(o, "docs", r, msg, msg_len)) ||
		    (rc = proto_json_bool(o, "all", &r->lib_all, msg, msg_len)) ||
		    (rc = proto_json_str(o, "doc", !r->n_docs && !r->lib_all, PROTO_REF_MAX, PROTO_E_BAD_REQUEST, &r->doc, NULL, msg, msg_len)) ||
		    (rc = proto_json_str(o, "question", 1, PROTO_QUESTION_MAX, PROTO_E_TOO_LARGE, &r->question, &r->question_len, msg, msg_len)) ||
		    (rc = proto_json_int(o, "max_tokens", 1, PROTO_MAX_TOKENS_MAX, &r->max_tokens, msg,
		    msg_len)) ||
		    (rc = proto_json_num(o, "temperature", 0.0, 0, PROTO_TEMPERATURE_MAX,
		    &r->temperature, msg, msg_len)) ||
		    (rc = proto_json_num(o, "top_p", 0.0, 1, 1.0, &r->top_p, msg, msg_len)) ||
		    (rc = proto_json_int(o, "seed", 0, INT64_MAX, &r->seed, msg, msg_len)) ||
		    (rc = proto_json_bool(o, "fd", &r->use_fd, msg, msg_len)) ||
		    (rc = proto_json_str(o, "encoding", 0, PROTO_ENCODING_MAX, PROTO_E_BAD_REQUEST, &r->encoding, NULL, msg, msg_len)) ||
		    (rc = proto_json_stops(o, "stop", r, msg, msg_len)))
			return rc;
		if (!!r->doc + !!r->n_docs + !!r->lib_all > 1)
			return proto_fail(msg, msg_len, PROTO_E_BAD_REQUEST, "a query takes one of "
			    "\"doc\", \"docs\" and \"all\"");
		if (r->lib_all && r->use_fd)
			return proto_fail(msg, msg_len, PROTO_E_BAD_REQUEST, "\"fd\" proves one "
			    "document (\"doc\"), not a library question");
		if (!r->n_docs && !r->lib_all && (json_object_get(o, "mode") ||
		    json_object_get(o, "min_conf")))
			return proto_fail(msg, msg_len, PROTO_E_BAD_REQUEST, "\"mode\" and \"min_conf\" "
			    "are for a library question (\"docs\")");
		if (r->n_docs && r->use_fd)
			return proto_fail(msg, msg_len, PROTO_E_BAD_REQUEST, "\"fd\" proves one "
			    "document (\"doc\"), not a library question");
		if ((rc = proto_json_mode(o, "mode", &r->mode, msg, msg_len)))
			return rc;
		if ((rc = proto_json_int(o, "top", 1, PROTO_DOCS_MAX, &r->lib_top, msg, msg_len)))
			return rc;
		if (r->lib_top && !r->lib_all)
			return proto_fail(msg, msg_len, PROTO_E_BAD_REQUEST, "\"top\" is for \"all\"");
		if ((rc = proto_json_int(o, "judge_tokens", 1, 4096, &r->lib_judge, msg, msg_len)))
			return rc;
		if (r->lib_judge && !r->n_docs && !r->lib_all)
			return proto_fail(msg, msg_len, PROTO_E_BAD_REQUEST, "\"judge_tokens\" is for a "
			    "library question (\"docs\" or \"all\")");
		if (json_object_get(o, "min_conf") && !json_is_null(json_object_get(o, "min_conf"))) {
			if ((rc = proto_json_num(o, "min_conf", -1000.0, 0, 0.0, &r->min_conf, msg, msg_len)))
				return rc;
			r->min_conf_set = 1;
		}
		return 0;
	case PROTO_OP_HAS:
	case PROTO_OP_INFO:
		return proto_json_str(o, "doc", 1, PROTO_REF_MAX, PROTO_E_BAD_REQUEST, &r->doc, NULL, msg, msg_len);
	case PROTO_OP_RM:
		if ((rc = proto_json_str(o, "doc", 1, PROTO_REF_MAX, PROTO_E_BAD_REQUEST, &r->doc, NULL, msg, msg_len)))
			return rc;
		/* one snapshot: a hex prefix of its profile id (checked by the job) */
		return proto_json_str(o, "profile", 0, 64, PROTO_E_BAD_REQUEST, &r->profile, NULL,
		    msg, msg_len);
	case PROTO_OP_SHRINK:
		if ((rc = proto_json_str(o, "doc", 1, PROTO_REF_MAX, PROTO_E_BAD_REQUEST, &r->doc, NULL, msg, msg_len)) ||
		    (rc = proto_json_bool(o, "replace", &r->replace, msg, msg_len)))
			return rc;
		return proto_get_ratio(o, "ratio", &r->ratio, msg, msg_len);
	case PROTO_OP_VERIFY:
		return proto_json_str(o, "doc", 0, PROTO_REF_MAX, PROTO_E_BAD_REQUEST, &r->doc, NULL, msg, msg_len);
	case PROTO_OP_CANCEL:
		t = json_object_get(o, "target");
		if (!t || !proto_id_ok(t))
			return proto_fail(msg, msg_len, PROTO_E_BAD_REQUEST,
			    "cancel needs \"target\": the id of a request");
		r->target = json_deep_copy(t);
		return r->target ? 0 : proto_fail(msg, msg_len, PROTO_E_INTERNAL, "out of memory");
	case PROTO_OP_PRUNE:
		r->keep = -1;
		if ((rc = proto_json_int(o, "older_than_s", 0, INT64_C(1) << 40, &r->older_than_s, msg,
		    msg_len)) ||
		    (rc = proto_json_int(o, "max_bytes", 0, INT64_MAX, &r->max_bytes, msg, msg_len)) ||
		    (rc = proto_json_int(o, "keep", -1, INT64_C(1) << 40, &r->keep, msg, msg_len)) ||
		    (rc = proto_json_bool(o, "dry_run", &r->dry_run, msg, msg_len)))
			return rc;
		if (!r->older_than_s && !r->max_bytes && r->keep < 0)
			return proto_fail(msg, msg_len, PROTO_E_BAD_REQUEST,
			    "prune needs at least one of older_than_s, max_bytes, keep");
		return 0;
	case PROTO_OP_SEARCH:
		r->k = PROTO_SEARCH_K_DEFAULT;
		if ((rc = proto_json_str(o, "question", 1, PROTO_QUESTION_MAX, PROTO_E_TOO_LARGE, &r->question, &r->question_len, msg, msg_len)))
			return rc;
		return proto_json_int(o, "k", 1, PROTO_SEARCH_K_MAX, &r->k, msg, msg_len);
	case PROTO_OP_CHAT:
		return proto_fail(msg, msg_len, PROTO_E_UNKNOWN_OP, "the plain model is served over "
		    "HTTP only (kvsnapd --http ADDR, POST /v1/chat/completions; docs/HTTP.md)");
	case PROTO_OP_MODELS:
		return proto_fail(msg, msg_len, PROTO_E_UNKNOWN_OP, "documents as models are listed "
		    "over HTTP only (GET /v1/models; docs/HTTP.md); ls lists them here");
	}
	return proto_fail(msg, msg_len, PROTO_E_UNKNOWN_OP, "unknown op");
}

int
proto_parse(const char *line, size_t len, struct proto_req *r, char *msg, size_t msg_len)
{
	json_error_t jerr;
	json_t *o, *v;
	const char *op;
	size_t i;
	int rc;

	memset(r, 0, sizeof(*r));
	if (msg && msg_len)
		msg[0] = '\0';
	if (len > PROTO_LINE_MAX)
		return proto_fail(msg, msg_len, PROTO_E_LINE_TOO_LONG,
		    "request line over %zu bytes", PROTO_LINE_MAX);
	/* JSON_REJECT_DUPLICATES: one meaning per line; NULs inside strings
	 * are refused by default. */
	o = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!o)
		return proto_fail(msg, msg_len, PROTO_E_BAD_JSON, "not JSON: %s (column %d)",
		    jerr.text, jerr.column);
	if (!json_is_object(o)) {
		rc = proto_fail(msg, msg_len, PROTO_E_BAD_JSON, "a request is a JSON object");
		goto out;
	}
	if ((v = json_object_get(o, "id")) && proto_id_ok(v))
		r->id = json_deep_copy(v);
	if (!v || !proto_id_ok(v)) {
		rc = proto_fail(msg, msg_len, PROTO_E_BAD_REQUEST,
		    "\"id\" is required: an integer or a string of at most %d bytes", PROTO_ID_MAX);
		goto out;
	}
	if ((v = json_object_get(o, "v")) && (!json_is_integer(v) || json_integer_value(v) < 1 ||
	    json_integer_value(v) > PROTO_VERSION)) {
		rc = proto_fail(msg, msg_len, PROTO_E_VERSION,
		    "protocol versions 1 to %d are the ones this daemon speaks", PROTO_VERSION);
		goto out;
	}
	v = json_object_get(o, "op");
	if (!v || !json_is_string(v)) {
		rc = proto_fail(msg, msg_len, PROTO_E_BAD_REQUEST, "\"op\" is required (a string)");
		goto out;
	}
	op = json_string_value(v);
	for (i = 0; i < PROTO_N_OPS; i++)
		if (!strcmp(op, proto_ops[i]))
			break;
	if (i == PROTO_N_OPS) {
		rc = proto_fail(msg, msg_len, PROTO_E_UNKNOWN_OP, "unknown op \"%.64s\"", op);
		goto out;
	}
	r->op = (enum proto_op)i;
	rc = proto_parse_fields(o, r, msg, msg_len);
out:
	json_decref(o);
	return rc;
}

void
proto_req_free(struct proto_req *r)
{
	if (!r)
		return;
	json_decref(r->id);
	json_decref(r->target);
	free(r->text);
	free(r->name);
	free(r->source);
	free(r->encoding);
	free(r->doc);
	free(r->profile);
	free(r->question);
	for (size_t i = 0; i < r->n_msgs; i++) {
		free(r->msgs[i].role);
		free(r->msgs[i].content);
	}
	free(r->msgs);
	for (size_t i = 0; i < r->n_stop; i++)
		free(r->stop[i]);
	free(r->plain_model);
	for (size_t i = 0; i < r->n_docs; i++)
		free(r->docs[i]);
	free(r->mode);
	memset(r, 0, sizeof(*r));
}

/* ------------------------------------------------------------------------ */
/* Events                                                                    */

char *
proto_event(const json_t *id, const char *event, json_t *body, size_t *len)
{
	json_t *o = json_object();
	char *s = NULL, *line = NULL;
	size_t n;

	if (!o)
		goto out;
	if (json_object_set_new(o, "id", id ? json_deep_copy(id) : json_null()) ||
	    json_object_set_new(o, "event", json_string(event)))
		goto out;
	if (body && json_is_object(body) && json_object_update(o, body))
		goto out;
	/* compact, and escape nothing beyond JSON's needs: one line */
	if (!(s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER)))
		goto out;
	n = strlen(s);
	if ((line = malloc(n + 2))) {
		memcpy(line, s, n);
		line[n] = '\n';
		line[n + 1] = '\0';
		*len = n + 1;
	}
out:
	free(s);
	json_decref(o);
	json_decref(body);
	return line;
}

char *
proto_error(const json_t *id, enum proto_code code, const char *msg, size_t *len)
{
	json_t *b = json_pack("{s:s, s:s, s:s}", "code", proto_code_name(code), "class",
	    proto_code_class(code), "message", msg ? msg : "");
	if (!b) /* a message that is not UTF-8 */
		b = json_pack("{s:s, s:s, s:s}", "code", proto_code_name(code), "class",
		    proto_code_class(code), "message", "(unprintable message)");
	return proto_event(id, "error", b, len);
}
