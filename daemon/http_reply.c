/*
 * http_reply.c: OpenAI's reply objects, built from what a job reports:
 * chat.completion and text_completion (whole, or as server-sent event
 * chunks), usage, the error object, the model list, and the document
 * endpoints' objects from the admin and ingest jobs' results.  Pure
 * functions over jansson values.
 */
#include <stdlib.h>
#include <string.h>

#include "common/escape.h"
#include "daemon/http.h"

char *
http_error_json(enum proto_code code, int status, const char *msg, size_t *len)
{
	json_t *o = json_pack("{s:{s:s, s:s, s:s, s:n}}", "error", "message", msg ? msg : "",
	    "type", http_error_type(status), "code", proto_code_name(code), "param");
	char *s;
	if (!o && msg) { /* a message that is not UTF-8: its bytes escaped */
		size_t n = strlen(msg), cap = 4 * n + 1;
		char *esc = malloc(cap);
		if (esc) {
			kv_escape(esc, cap, msg, n);
			o = json_pack("{s:{s:s, s:s, s:s, s:n}}", "error", "message", esc, "type",
			    http_error_type(status), "code", proto_code_name(code), "param");
			free(esc);
		}
	}
	s = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
	json_decref(o);
	if (s)
		*len = strlen(s);
	return s;
}

char *
http_sse(json_t *o, size_t *len)
{
	char *s = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL, *out = NULL;
	size_t n;
	json_decref(o);
	if (!s)
		return NULL;
	n = strlen(s);
	if ((out = malloc(n + 9))) {
		memcpy(out, "data: ", 6);
		memcpy(out + 6, s, n);
		memcpy(out + 6 + n, "\n\n", 3);
		*len = n + 8;
	}
	free(s);
	return out;
}

const char *
http_finish_reason(const char *stop)
{
	return stop && !strcmp(stop, "length") ? "length" : "stop";
}

json_t *
http_usage(int64_t prompt, int64_t completion)
{
	return json_pack("{s:I, s:I, s:I}", "prompt_tokens", (json_int_t)prompt,
	    "completion_tokens", (json_int_t)completion, "total_tokens",
	    (json_int_t)(prompt + completion));
}

/* The members every completion object starts with. */
static json_t *
http_head(const struct http_shape *s, const char *object)
{
	return json_pack("{s:s, s:s, s:I, s:s, s:s}", "id", s->id, "object", object, "created",
	    (json_int_t)s->created, "model", s->model, "system_fingerprint", "kvsnap");
}

static json_t *
http_text(const char *text, size_t n)
{
	json_t *v = json_stringn(text ? text : "", text ? n : 0);
	return v ? v : json_string("\xEF\xBF\xBD");
}

json_t *
http_chunk(const struct http_shape *s, const char *text, size_t n, int first,
    const char *finish, json_t *usage)
{
	json_t *o = http_head(s, s->chat ? "chat.completion.chunk" : "text_completion");
	json_t *choice, *choices = json_array();

	if (!o || !choices)
		goto fail;
	if (usage) { /* stream_options.include_usage: no choices, the usage */
		json_object_set_new(o, "choices", choices);
		json_object_set_new(o, "usage", usage);
		return o;
	}
	if (s->chat) {
		json_t *delta = json_object();
		if (first)
			json_object_set_new(delta, "role", json_string("assistant"));
		if (text)
			json_object_set_new(delta, "content", http_text(text, n));
		choice = json_pack("{s:i, s:o, s:n, s:s?}", "index", 0, "delta", delta, "logprobs",
		    "finish_reason", finish);
	} else {
		choice = json_pack("{s:i, s:o, s:n, s:s?}", "index", 0, "text", http_text(text, n),
		    "logprobs", "finish_reason", finish);
	}
	if (choice && !finish)
		json_object_set_new(choice, "finish_reason", json_null());
	json_array_append_new(choices, choice);
	json_object_set_new(o, "choices", choices);
	return o;
fail:
	json_decref(o);
	json_decref(choices);
	json_decref(usage);
	return NULL;
}

json_t *
http_completion(const struct http_shape *s, const char *text, size_t n, const char *finish,
    json_t *usage)
{
	json_t *o = http_head(s, s->chat ? "chat.completion" : "text_completion"), *choice;
	if (s->chat)
		choice = json_pack("{s:i, s:{s:s, s:o, s:n}, s:n, s:s}", "index", 0, "message", "role",
		    "assistant", "content", http_text(text, n), "refusal", "logprobs",
		    "finish_reason", finish);
	else
		choice = json_pack("{s:i, s:o, s:n, s:s}", "index", 0, "text", http_text(text, n),
		    "logprobs", "finish_reason", finish);
	if (!o || !choice) {
		json_decref(o);
		json_decref(choice);
		json_decref(usage);
		return NULL;
	}
	json_object_set_new(o, "choices", json_pack("[o]", choice));
	json_object_set_new(o, "usage", usage);
	return o;
}

/* A document as the protocol's ls/info give it, with OpenAI's "id" and
 * "object" first. */
static json_t *
http_doc(const json_t *d)
{
	json_t *o = json_object(), *v;
	const char *k;
	if (!o)
		return NULL;
	json_object_set(o, "id", json_object_get(d, "doc_id"));
	json_object_set_new(o, "object", json_string("document"));
	json_object_foreach((json_t *)(uintptr_t)d, k, v)
		if (strcmp(k, "doc_id"))
			json_object_set(o, k, v);
	return o;
}

json_t *
http_doc_reply(enum http_route route, const json_t *body)
{
	json_t *o, *arr, *d;
	size_t i;

	switch (route) {
	case HTTP_R_DOC_LIST:
		arr = json_array();
		json_array_foreach(json_object_get(body, "docs"), i, d)
			json_array_append_new(arr, http_doc(d));
		o = json_pack("{s:s, s:o}", "object", "list", "data", arr);
		/* documents with unreadable metadata, as the ls op lists them (for
		 * root and the daemon's user): {doc_id, error} each */
		if (o && (d = json_object_get(body, "damaged")))
			json_object_set(o, "damaged", d);
		return o;
	case HTTP_R_DOC_INFO:
		if ((o = http_doc(json_object_get(body, "doc"))))
			json_object_set(o, "snapshots", json_object_get(body, "snapshots"));
		return o;
	case HTTP_R_DOC_RM:
		return json_pack("{s:O, s:s, s:b}", "id", json_object_get(body, "doc_id"), "object",
		    "document.deleted", "deleted", 1);
	case HTTP_R_DOC_INGEST:
		return http_doc(body);
	case HTTP_R_MODELS:
	case HTTP_R_MODEL:
	case HTTP_R_CHAT:
	case HTTP_R_COMPLETIONS:
		break;
	}
	return json_deep_copy(body);
}

json_t *
http_model(const char *name, int64_t created)
{
	return json_pack("{s:s, s:s, s:I, s:s}", "id", name, "object", "model", "created",
	    (json_int_t)created, "owned_by", "kvsnap");
}

json_t *
http_models(const char *name, int64_t created)
{
	return json_pack("{s:s, s:[o]}", "object", "list", "data", http_model(name, created));
}
