/*
 * http_parse.c: an HTTP request of the OpenAI-compatible endpoint (method,
 * URI, two headers, body) into a plain struct: the route and the job's
 * request as the socket protocol's parser would fill it (every field
 * checked for type and range, the same limits), plus the --http address.
 * Pure functions, no I/O and no global state: tests/fuzz/fuzz_http.c
 * drives them.  docs/HTTP.md is the prose form.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "common/escape.h"
#include "common/fail.h"
#include "daemon/http.h"

#define http_fail kv_fail /* a reason into msg, the code returned */
#define HTTP_CHAT_MAX PROTO_TEXT_MAX /* bytes of a whole conversation */

/* ------------------------------------------------------------------------ */
/* Statuses                                                                  */

int
http_status_of(enum proto_code code)
{
	switch (code) {
	case PROTO_E_NOT_FOUND: return 404;
	case PROTO_E_DENIED: return 403;
	case PROTO_E_PROFILE:
	case PROTO_E_NAME_TAKEN: return 409;
	case PROTO_E_TOO_LARGE:
	case PROTO_E_LINE_TOO_LONG: return 413;
	case PROTO_E_BUSY:
	case PROTO_E_TOO_MANY_CONNS: return 429;
	case PROTO_E_SHUTTING_DOWN:
	case PROTO_E_LOADING:
	case PROTO_E_TIER_UNAVAILABLE: return 503;
	case PROTO_E_TIMEOUT: return 408;
	case PROTO_E_UNSUPPORTED: return 415; /* not a document: binary data */
	case PROTO_E_BAD_JSON:
	case PROTO_E_BAD_REQUEST:
	case PROTO_E_UNKNOWN_OP:
	case PROTO_E_VERSION:
	case PROTO_E_NO_FD:
	case PROTO_E_BAD_FILE:
	case PROTO_E_AMBIGUOUS:
	case PROTO_E_TOO_LONG:
	case PROTO_E_CANCELLED: return 400;
	case PROTO_E_CORRUPT:
	case PROTO_E_STORE:
	case PROTO_E_STORE_FULL:
	case PROTO_E_ENGINE:
	case PROTO_E_INTERNAL: return 500;
	}
	return 500;
}

const char *
http_error_type(int status)
{
	switch (status) {
	case 401: return "authentication_error";
	case 403: return "permission_error";
	case 404: return "not_found_error";
	case 409: return "conflict_error";
	case 429: return "rate_limit_error";
	default: return status >= 500 ? "server_error" : "invalid_request_error";
	}
}

/* `model`: the plain model's id (or none), or a document as GET
 * /v1/models lists it, which then is the document answered from.  With
 * `document` given, `document` wins and `model` is not looked up: the
 * `openai` package needs some model, and clients written for the
 * `document` field send a placeholder there ("kvsnap"). */
static int
http_model_field(json_t *o, struct http_req *r, const char *plain, char *msg, size_t msg_len)
{
	struct proto_req *p = &r->pr;
	int rc;

	if ((rc = proto_json_str(o, "model", 0, PROTO_REF_MAX, PROTO_E_BAD_REQUEST, &r->model, NULL,
	    msg, msg_len)))
		return rc;
	if (!r->model || !r->model[0] || (plain && !strcmp(r->model, plain)))
		return 0;
	if (p->doc || p->n_docs)
		return 0;
	if (!strcmp(r->model, HTTP_LIBRARY_MODEL)) { /* over what search finds */
		p->lib_all = 1;
		return 0;
	}
	if (!(p->doc = strdup(r->model)) || !(p->plain_model = strdup(plain ? plain : "")))
		return http_fail(msg, msg_len, PROTO_E_INTERNAL, "out of memory");
	p->doc_model = 1;
	return 0;
}

/* A library question (issue 29): "documents", the DOC references to
 * answer from (docs/HTTP.md), in place of "document"; "library_mode" and
 * "min_conf" as the protocol's "mode" and "min_conf". */
static int
http_library_fields(json_t *o, struct http_req *r, char *msg, size_t msg_len)
{
	struct proto_req *p = &r->pr;
	json_t *v;
	int rc;

	if ((rc = proto_json_docs(o, "documents", p, msg, msg_len)))
		return rc;
	if (p->n_docs && p->doc)
		return http_fail(msg, msg_len, PROTO_E_BAD_REQUEST, "send \"document\" or "
		    "\"documents\" (a library question), not both");
	if (!p->n_docs && !(json_is_string(json_object_get(o, "model")) &&
	    !strcmp(json_string_value(json_object_get(o, "model")), HTTP_LIBRARY_MODEL)) &&
	    (json_object_get(o, "library_mode") || json_object_get(o, "min_conf")))
		return http_fail(msg, msg_len, PROTO_E_BAD_REQUEST, "\"library_mode\" and "
		    "\"min_conf\" are for a library question (\"documents\", or the model "
		    "\"library\")");
	if ((rc = proto_json_mode(o, "library_mode", &p->mode, msg, msg_len)))
		return rc;
	if ((v = json_object_get(o, "min_conf")) && !json_is_null(v)) {
		if ((rc = proto_json_num(o, "min_conf", -1000.0, 0, 0.0, &p->min_conf, msg, msg_len)))
			return rc;
		p->min_conf_set = 1;
	}
	/* the model "library": how many of the best parts (the query op's "top") */
	if ((v = json_object_get(o, "library_top")) && !json_is_null(v)) {
		if (!(json_is_string(json_object_get(o, "model")) &&
		    !strcmp(json_string_value(json_object_get(o, "model")), HTTP_LIBRARY_MODEL)))
			return http_fail(msg, msg_len, PROTO_E_BAD_REQUEST, "\"library_top\" is for "
			    "the model \"library\"");
		if ((rc = proto_json_int(o, "library_top", 1, PROTO_DOCS_MAX, &p->lib_top, msg,
		    msg_len)))
			return rc;
	}
	return 0;
}

/* The sampling fields and the limits every completion shares. */
static int
http_sampling(json_t *o, struct http_req *r, const char *plain, char *msg, size_t msg_len)
{
	struct proto_req *p = &r->pr;
	json_t *v;
	int64_t n = 1;
	int rc;

	p->max_tokens = PROTO_MAX_TOKENS_DEFAULT;
	p->top_p = 1.0;
	if ((rc = proto_json_int(o, "max_tokens", 1, PROTO_MAX_TOKENS_MAX, &p->max_tokens, msg,
	    msg_len)) ||
	    (rc = proto_json_int(o, "max_completion_tokens", 1, PROTO_MAX_TOKENS_MAX, &p->max_tokens,
	    msg, msg_len)) ||
	    (rc = proto_json_num(o, "temperature", 0.0, 0, PROTO_TEMPERATURE_MAX, &p->temperature, msg,
	    msg_len)) ||
	    (rc = proto_json_num(o, "top_p", 0.0, 1, 1.0, &p->top_p, msg, msg_len)) ||
	    (rc = proto_json_int(o, "seed", 0, INT64_MAX, &p->seed, msg, msg_len)) ||
	    (rc = proto_json_int(o, "n", INT64_MIN, INT64_MAX, &n, msg, msg_len)) ||
	    (rc = proto_json_bool(o, "stream", &r->stream, msg, msg_len)) ||
	    (rc = proto_json_str(o, "document", 0, PROTO_REF_MAX, PROTO_E_BAD_REQUEST, &p->doc, NULL,
	    msg, msg_len)) ||
	    (rc = http_library_fields(o, r, msg, msg_len)))
		return rc;
	if (n != 1)
		return http_fail(msg, msg_len, PROTO_E_BAD_REQUEST,
		    "\"n\" must be 1: kvsnapd answers with one choice");
	if ((rc = proto_json_stops(o, "stop", p, msg, msg_len)) ||
	    (rc = http_model_field(o, r, plain, msg, msg_len)))
		return rc;
	if ((v = json_object_get(o, "stream_options")) && !json_is_null(v)) {
		if (!json_is_object(v))
			return http_fail(msg, msg_len, PROTO_E_BAD_REQUEST,
			    "\"stream_options\" must be an object");
		if ((rc = proto_json_bool(v, "include_usage", &r->include_usage, msg, msg_len)))
			return rc;
	}
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Chat                                                                      */

/* A message's content: a string, or an array of {"type":"text","text":...}
 * parts (joined). */
static int
http_content(json_t *m, size_t i, char **out, size_t *len, char *msg, size_t msg_len)
{
	json_t *c = json_object_get(m, "content"), *part, *t;
	size_t k, n = 0, pn;
	char *s;

	if (c && json_is_string(c)) {
		n = json_string_length(c);
		if (!(*out = malloc(n + 1)))
			return http_fail(msg, msg_len, PROTO_E_INTERNAL, "out of memory");
		memcpy(*out, json_string_value(c), n + 1);
		*len = n;
		return 0;
	}
	if (!c || json_is_null(c)) { /* an assistant turn with tool calls only */
		*out = calloc(1, 1);
		*len = 0;
		return *out ? 0 : http_fail(msg, msg_len, PROTO_E_INTERNAL, "out of memory");
	}
	if (!json_is_array(c))
		return http_fail(msg, msg_len, PROTO_E_BAD_REQUEST,
		    "messages[%zu].content must be a string or an array of text parts", i);
	json_array_foreach(c, k, part) {
		t = json_is_object(part) ? json_object_get(part, "type") : NULL;
		if (!t || !json_is_string(t) || strcmp(json_string_value(t), "text") ||
		    !json_is_string(json_object_get(part, "text")))
			return http_fail(msg, msg_len, PROTO_E_BAD_REQUEST,
			    "messages[%zu].content[%zu]: only {\"type\":\"text\",\"text\":...} parts "
			    "are supported (the model reads text only)", i, k);
		n += json_string_length(json_object_get(part, "text"));
	}
	if (!(s = malloc(n + 1)))
		return http_fail(msg, msg_len, PROTO_E_INTERNAL, "out of memory");
	n = 0;
	json_array_foreach(c, k, part) {
		t = json_object_get(part, "text");
		pn = json_string_length(t);
		memcpy(s + n, json_string_value(t), pn);
		n += pn;
	}
	s[n] = '\0';
	*out = s;
	*len = n;
	return 0;
}

/* With a document: the last message must be the user's question (its
 * content is the request's question: one message is exactly `kvsnap
 * query`'s); the messages, every one a turn of the chat template after the
 * document (query_job.c), are at most PROTO_QUESTION_MAX bytes in all. */
static int
http_doc_question(struct proto_req *p, size_t total, char *msg, size_t msg_len)
{
	size_t last = p->n_msgs - 1;

	if (strcmp(p->msgs[last].role, "user"))
		return http_fail(msg, msg_len, PROTO_E_BAD_REQUEST, "with a document, the last "
		    "message must be the user's question (it is a '%s' message)", p->msgs[last].role);
	if (total > PROTO_QUESTION_MAX)
		return http_fail(msg, msg_len, PROTO_E_TOO_LARGE, "the messages are %zu bytes, over "
		    "the limit of %zu for a conversation about a document", total,
		    PROTO_QUESTION_MAX);
	if (!(p->question = strdup(p->msgs[last].content)))
		return http_fail(msg, msg_len, PROTO_E_INTERNAL, "out of memory");
	p->question_len = p->msgs[last].content_len;
	return 0;
}

static int
http_chat(json_t *o, struct http_req *r, const char *plain, char *msg, size_t msg_len)
{
	struct proto_req *p = &r->pr;
	json_t *ms = json_object_get(o, "messages"), *m, *role;
	size_t i, total = 0;
	const char *rs;
	int rc;

	if ((rc = http_fields_check(o, 1, msg, msg_len)) ||
	    (rc = http_sampling(o, r, plain, msg, msg_len)))
		return rc;
	if (!ms || !json_is_array(ms) || json_array_size(ms) == 0)
		return http_fail(msg, msg_len, PROTO_E_BAD_REQUEST,
		    "\"messages\" is required: a non-empty array of {\"role\",\"content\"}");
	if (!(p->msgs = calloc(json_array_size(ms), sizeof(*p->msgs))))
		return http_fail(msg, msg_len, PROTO_E_INTERNAL, "out of memory");
	json_array_foreach(ms, i, m) {
		role = json_is_object(m) ? json_object_get(m, "role") : NULL;
		if (role && (rc = http_message_check(m, i, msg, msg_len)))
			return rc;
		if (!role || !json_is_string(role))
			return http_fail(msg, msg_len, PROTO_E_BAD_REQUEST,
			    "messages[%zu] needs a \"role\" (system, user or assistant)", i);
		rs = json_string_value(role);
		if (!strcmp(rs, "developer")) /* OpenAI's newer name for system */
			rs = "system";
		if (strcmp(rs, "system") && strcmp(rs, "user") && strcmp(rs, "assistant"))
			return http_fail(msg, msg_len, PROTO_E_BAD_REQUEST, "messages[%zu]: role "
			    "'%.32s' is not supported (system, developer, user, assistant)", i, rs);
		if (!(p->msgs[i].role = strdup(rs)))
			return http_fail(msg, msg_len, PROTO_E_INTERNAL, "out of memory");
		p->n_msgs = i + 1;
		if ((rc = http_content(m, i, &p->msgs[i].content, &p->msgs[i].content_len, msg,
		    msg_len)))
			return rc;
		total += p->msgs[i].content_len;
	}
	if (total > HTTP_CHAT_MAX)
		return http_fail(msg, msg_len, PROTO_E_TOO_LARGE, "the messages are %zu bytes, over "
		    "the limit of %zu", total, (size_t)HTTP_CHAT_MAX);
	if ((p->n_docs || p->lib_all) && p->n_msgs > 1)
		return http_fail(msg, msg_len, PROTO_E_BAD_REQUEST, "with \"documents\" (a library "
		    "question), send one user message: the question");
	if (p->doc || p->n_docs || p->lib_all) {
		p->op = PROTO_OP_QUERY;
		return http_doc_question(p, total, msg, msg_len);
	}
	p->op = PROTO_OP_CHAT;
	return 0;
}

static int
http_completions(json_t *o, struct http_req *r, const char *plain, char *msg, size_t msg_len)
{
	struct proto_req *p = &r->pr;
	json_t *v = json_object_get(o, "prompt");
	int rc;

	if ((rc = http_fields_check(o, 0, msg, msg_len)) ||
	    (rc = http_sampling(o, r, plain, msg, msg_len)))
		return rc;
	if (v && json_is_array(v) && json_array_size(v) == 1 &&
	    json_is_string(json_array_get(v, 0)))
		v = json_array_get(v, 0);
	if (!v || !json_is_string(v))
		return http_fail(msg, msg_len, PROTO_E_BAD_REQUEST, "\"prompt\" is required: a string "
		    "(token arrays and several prompts are not supported)");
	if (json_string_length(v) == 0)
		return http_fail(msg, msg_len, PROTO_E_BAD_REQUEST, "\"prompt\" is empty");
	if (json_is_true(json_object_get(o, "echo")))
		return http_fail(msg, msg_len, PROTO_E_BAD_REQUEST, "\"echo\" is not supported");
	p->op = p->doc || p->n_docs || p->lib_all ? PROTO_OP_QUERY : PROTO_OP_CHAT;
	p->raw = p->op == PROTO_OP_CHAT;
	if (json_string_length(v) > (p->op == PROTO_OP_QUERY ? PROTO_QUESTION_MAX : PROTO_TEXT_MAX))
		return http_fail(msg, msg_len, PROTO_E_TOO_LARGE, "\"prompt\" is %zu bytes, over the "
		    "limit of %zu", json_string_length(v),
		    p->op == PROTO_OP_QUERY ? PROTO_QUESTION_MAX : PROTO_TEXT_MAX);
	p->question_len = json_string_length(v);
	if (!(p->question = malloc(p->question_len + 1)))
		return http_fail(msg, msg_len, PROTO_E_INTERNAL, "out of memory");
	memcpy(p->question, json_string_value(v), p->question_len + 1);
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Documents                                                                 */

/* Decode %XX and '+' in s[0..n) into a malloc'd string; NULL if a %XX is
 * bad or decodes to NUL. */
static char *
http_unescape(const char *s, size_t n, int plus)
{
	char *o = malloc(n + 1);
	size_t i, k = 0;
	int hi, lo;
	if (!o)
		return NULL;
	for (i = 0; i < n; i++) {
		if (s[i] == '%') {
			if (i + 2 >= n)
				goto bad;
			hi = kv_hex_value(s[i + 1]);
			lo = kv_hex_value(s[i + 2]);
			if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
				goto bad;
			o[k++] = (char)(hi << 4 | lo);
			i += 2;
		} else
			o[k++] = plus && s[i] == '+' ? ' ' : s[i];
	}
	o[k] = '\0';
	return o;
bad:
	free(o);
	return NULL;
}

/* A true/false query parameter ("1", "true", "yes"; "0", "false", "no"). */
static int
http_qbool(const char *key, const char *v, int *out, char *msg, size_t msg_len)
{
	if (!strcmp(v, "1") || !strcmp(v, "true") || !strcmp(v, "yes") || !*v)
		*out = 1;
	else if (!strcmp(v, "0") || !strcmp(v, "false") || !strcmp(v, "no"))
		*out = 0;
	else
		return http_fail(msg, msg_len, PROTO_E_BAD_REQUEST,
		    "query parameter %s must be true or false", key);
	return 0;
}

/* The query string of POST /v1/documents with a raw body: name, source,
 * share, force, stream. */
static int
http_doc_query(const char *q, struct http_req *r, char *msg, size_t msg_len)
{
	struct proto_req *p = &r->pr;
	const char *amp, *eq;
	char *k = NULL, *v = NULL;
	int rc = 0;

	while (q && *q && !rc) {
		amp = strchr(q, '&');
		if (!amp)
			amp = q + strlen(q);
		eq = memchr(q, '=', (size_t)(amp - q));
		k = http_unescape(q, (size_t)((eq ? eq : amp) - q), 1);
		v = eq ? http_unescape(eq + 1, (size_t)(amp - eq - 1), 1) : strdup("");
		if (!k || !v)
			rc = http_fail(msg, msg_len, PROTO_E_BAD_REQUEST,
			    "a bad %%-escape in the query string");
		else if (!strcmp(k, "name") || !strcmp(k, "source")) {
			char **dst = !strcmp(k, "name") ? &p->name : &p->source;
			size_t max = !strcmp(k, "name") ? PROTO_NAME_MAX : PROTO_SOURCE_MAX;
			if (strlen(v) > max)
				rc = http_fail(msg, msg_len, PROTO_E_BAD_REQUEST,
				    "%s is %zu bytes, over the limit of %zu", k, strlen(v), max);
			else {
				free(*dst);
				*dst = v;
				v = NULL;
			}
		} else if (!strcmp(k, "share"))
			rc = http_qbool(k, v, &p->share, msg, msg_len);
		else if (!strcmp(k, "force"))
			rc = http_qbool(k, v, &p->force, msg, msg_len);
		else if (!strcmp(k, "stream"))
			rc = http_qbool(k, v, &r->stream, msg, msg_len);
		/* others ignored, as unknown JSON fields are */
		free(k);
		free(v);
		k = v = NULL;
		q = *amp ? amp + 1 : amp;
	}
	return rc;
}

static int
http_is_json(const char *ctype)
{
	size_t n = strlen("application/json");
	return ctype && !strncasecmp(ctype, "application/json", n) &&
	    (ctype[n] == '\0' || ctype[n] == ';' || ctype[n] == ' ');
}

/* POST /v1/documents: a JSON body {"text", "name", "source", "share",
 * "force", "stream"}, or any other Content-Type: the body is the
 * document and the rest comes in the query string. */
static int
http_doc_ingest(json_t *o, const char *query, const char *body, size_t len, struct http_req *r,
    char *msg, size_t msg_len)
{
	struct proto_req *p = &r->pr;
	int rc;

	p->op = PROTO_OP_INGEST;
	if ((rc = http_doc_query(query, r, msg, msg_len)))
		return rc;
	if (o) {
		if ((rc = proto_json_str(o, "text", 1, PROTO_TEXT_MAX, PROTO_E_TOO_LARGE, &p->text,
		    &p->text_len, msg, msg_len)) ||
		    (rc = proto_json_str(o, "name", 0, PROTO_NAME_MAX, PROTO_E_BAD_REQUEST, &p->name, NULL,
		    msg, msg_len)) ||
		    (rc = proto_json_str(o, "source", 0, PROTO_SOURCE_MAX, PROTO_E_BAD_REQUEST, &p->source,
		    NULL, msg, msg_len)) ||
		    (rc = proto_json_bool(o, "share", &p->share, msg, msg_len)) ||
		    (rc = proto_json_bool(o, "force", &p->force, msg, msg_len)) ||
		    (rc = proto_json_bool(o, "stream", &r->stream, msg, msg_len)))
			return rc;
	} else {
		if (len == 0)
			return http_fail(msg, msg_len, PROTO_E_BAD_REQUEST, "the document is empty");
		if (len > PROTO_TEXT_MAX)
			return http_fail(msg, msg_len, PROTO_E_TOO_LARGE, "the document is %zu bytes, "
			    "over the limit of %zu", len, PROTO_TEXT_MAX);
		if (!(p->text = malloc(len + 1)))
			return http_fail(msg, msg_len, PROTO_E_INTERNAL, "out of memory");
		memcpy(p->text, body, len);
		p->text[len] = '\0';
		p->text_len = len;
	}
	if (p->text_len == 0)
		return http_fail(msg, msg_len, PROTO_E_BAD_REQUEST, "the document is empty");
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Routing                                                                   */

void
http_req_free(struct http_req *r)
{
	if (!r)
		return;
	free(r->model);
	proto_req_free(&r->pr);
	memset(r, 0, sizeof(*r));
}

/* The path's tail after prefix ("" for the prefix itself, NULL if path is
 * neither). */
static const char *
http_under(const char *path, size_t n, const char *prefix)
{
	size_t k = strlen(prefix);
	if (n < k || memcmp(path, prefix, k))
		return NULL;
	if (n == k)
		return "";
	return path[k] == '/' ? path + k + 1 : NULL;
}

int
http_parse(const char *method, const char *uri, const char *ctype, const char *accept,
    const char *body, size_t len, const char *plain, struct http_req *r, int *status, char *msg,
    size_t msg_len)
{
	const char *q = strchr(uri, '?'), *tail;
	size_t n = q ? (size_t)(q - uri) : strlen(uri), tn;
	int get = !strcmp(method, "GET"), post = !strcmp(method, "POST"), rc = 0, jsonb;
	json_t *o = NULL;
	json_error_t jerr;
	char *path, *ref = NULL;

	memset(r, 0, sizeof(*r));
	*status = 200;
	if (msg && msg_len)
		msg[0] = '\0';
	if (q)
		q++;
	if (!(path = malloc(n + 1)))
		return http_fail(msg, msg_len, PROTO_E_INTERNAL, "out of memory");
	memcpy(path, uri, n);
	path[n] = '\0';
	while (n > 1 && path[n - 1] == '/') /* one meaning with or without a trailing / */
		path[--n] = '\0';
	/* a JSON body wherever one is expected */
	jsonb = post && (http_is_json(ctype) || !http_under(path, n, "/v1/documents"));
	if (jsonb) {
		o = json_loadb(body ? body : "", len, JSON_REJECT_DUPLICATES, &jerr);
		if (!o || !json_is_object(o)) {
			rc = o ? http_fail(msg, msg_len, PROTO_E_BAD_JSON, "the body must be a JSON "
			    "object") : http_fail(msg, msg_len, PROTO_E_BAD_JSON, "the body is not JSON: "
			    "%s (line %d, column %d)", jerr.text, jerr.line, jerr.column);
			goto out;
		}
	}
	if (!strcmp(path, "/v1/chat/completions") || !strcmp(path, "/v1/completions")) {
		if (!post)
			goto method;
		r->route = path[4] == 'c' && path[5] == 'h' ? HTTP_R_CHAT : HTTP_R_COMPLETIONS;
		rc = r->route == HTTP_R_CHAT ? http_chat(o, r, plain, msg, msg_len) :
		    http_completions(o, r, plain, msg, msg_len);
	} else if ((tail = http_under(path, n, "/v1/models"))) {
		if (!get)
			goto method;
		r->route = *tail ? HTTP_R_MODEL : HTTP_R_MODELS;
		if (*tail && !(r->model = http_unescape(tail, strlen(tail), 0)))
			rc = http_fail(msg, msg_len, PROTO_E_BAD_REQUEST, "a bad %%-escape in the path");
	} else if ((tail = http_under(path, n, "/v1/documents"))) {
		tn = strlen(tail);
		if (!*tail && post) {
			r->route = HTTP_R_DOC_INGEST;
			rc = http_doc_ingest(o, q, body, len, r, msg, msg_len);
			if (!rc && accept && strstr(accept, "text/event-stream"))
				r->stream = 1;
		} else if (!*tail && get) {
			r->route = HTTP_R_DOC_LIST;
			r->pr.op = PROTO_OP_LS;
		} else if (*tail && !strchr(tail, '/') && (get || !strcmp(method, "DELETE"))) {
			r->route = get ? HTTP_R_DOC_INFO : HTTP_R_DOC_RM;
			r->pr.op = get ? PROTO_OP_INFO : PROTO_OP_RM;
			if (!(ref = http_unescape(tail, tn, 0)) || strlen(ref) > PROTO_REF_MAX || !*ref)
				rc = http_fail(msg, msg_len, PROTO_E_BAD_REQUEST, "the document reference "
				    "in the path must be a name, doc_id or hex prefix of 1-%d bytes, "
				    "%%-escaped", PROTO_REF_MAX);
			else if (!kv_utf8_valid(ref, strlen(ref))) {
				char esc[4 * PROTO_REF_MAX + 8];
				kv_escape(esc, sizeof(esc), ref, strlen(ref));
				rc = http_fail(msg, msg_len, PROTO_E_BAD_REQUEST, "document reference is "
				    "not valid UTF-8: '%s' (a name is UTF-8 text; a doc_id or prefix, hex "
				    "digits)", esc);
			} else {
				r->pr.doc = ref;
				ref = NULL;
			}
		} else
			goto method;
	} else {
		*status = 404;
		rc = http_fail(msg, msg_len, PROTO_E_NOT_FOUND, "no such endpoint: %s %.200s (see "
		    "docs/HTTP.md: /v1/models, /v1/chat/completions, /v1/completions, /v1/documents)",
		    method, path);
		goto out;
	}
	goto out;
method:
	*status = 405;
	rc = http_fail(msg, msg_len, PROTO_E_BAD_REQUEST, "%s is not allowed on %.200s", method,
	    path);
out:
	if (rc && *status == 200)
		*status = http_status_of((enum proto_code)rc);
	free(ref);
	free(path);
	json_decref(o);
	return rc;
}

/* ------------------------------------------------------------------------ */
/* The --http address                                                        */

int
http_addr_parse(const char *s, struct http_addr *a, char *msg, size_t msg_len)
{
	const char *colon, *host;
	char hbuf[64];
	size_t hn;
	long port;
	char *end;

	memset(a, 0, sizeof(*a));
	if (!strncmp(s, "unix:", 5)) {
		if (s[5] != '/' || strlen(s + 5) >= sizeof(a->path))
			return http_fail(msg, msg_len, -1, "--http unix:PATH needs an absolute path of "
			    "at most %zu bytes", sizeof(a->path) - 1);
		a->is_unix = 1;
		memcpy(a->path, s + 5, strlen(s + 5) + 1);
		return 0;
	}
	if (!(colon = strrchr(s, ':')) || colon == s)
		return http_fail(msg, msg_len, -1, "--http '%s': expected unix:/PATH, 127.0.0.1:PORT, "
		    "[::1]:PORT or localhost:PORT", s);
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	if (!colon[1] || *end || port < 1 || port > 65535)
		return http_fail(msg, msg_len, -1, "--http '%s': the port must be 1-65535", s);
	a->port = (uint16_t)port;
	host = s;
	hn = (size_t)(colon - s);
	if (hn >= 2 && host[0] == '[' && host[hn - 1] == ']') {
		host++;
		hn -= 2;
	}
	if (hn >= sizeof(hbuf))
		goto nonlocal;
	memcpy(hbuf, host, hn);
	hbuf[hn] = '\0';
	if (!strcmp(hbuf, "localhost")) {
		a->family = AF_INET;
		a->ip[0] = 127;
		a->ip[3] = 1;
		return 0;
	}
	if (inet_pton(AF_INET, hbuf, a->ip) == 1) {
		a->family = AF_INET;
		if (a->ip[0] == 127)
			return 0;
	} else if (inet_pton(AF_INET6, hbuf, a->ip) == 1) {
		static const uint8_t lo6[16] = { [15] = 1 };
		a->family = AF_INET6;
		if (!memcmp(a->ip, lo6, 16))
			return 0;
	}
nonlocal:
	return http_fail(msg, msg_len, -1, "--http '%s': only a Unix socket or a loopback address "
	    "(127.0.0.1, [::1], localhost) is allowed: the endpoint knows its callers by their "
	    "local uid; put a reverse proxy with authentication in front for remote use", s);
}
