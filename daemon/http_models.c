/*
 * http_models.c: documents as models on the OpenAI-compatible endpoint
 * (docs/HTTP.md, "Documents as models").  GET /v1/models lists the plain
 * model, `library` (a question over them all) when there is any document,
 * and then every document the caller may read, by the id
 * service/models.c gives it (name, else file name, else doc_id), so that a
 * tool that picks a model (Open WebUI, LangChain's `model=`) picks a
 * document; a completion whose `model` is such an id answers from that
 * document (http_parse.c, query_job.c).  The listing runs as a job on the
 * admin worker (the loop never reads the store); this file makes its
 * request and turns its result into OpenAI's objects.
 */
#include <stdlib.h>
#include <string.h>

#include "daemon/http.h"

int
http_models_route(struct http_req *r, const char *plain)
{
	if (r->route == HTTP_R_MODEL && !strcmp(r->model, plain))
		return 1;
	if (r->route == HTTP_R_MODEL && !strcmp(r->model, HTTP_LIBRARY_MODEL))
		return 2;
	r->pr.op = PROTO_OP_MODELS;
	if (!(r->pr.plain_model = strdup(plain)))
		return -1;
	if (r->route == HTTP_R_MODEL && !(r->pr.doc = strdup(r->model)))
		return -1;
	return 0;
}

/* One document as OpenAI's model object; its doc_id, owner and sharing
 * beside OpenAI's members. */
static json_t *
http_models_doc(const json_t *m)
{
	const char *owner = json_string_value(json_object_get(m, "owner"));
	json_int_t us = json_integer_value(json_object_get(m, "created_us"));
	json_t *o = json_pack("{s:O, s:s, s:I, s:s}", "id", json_object_get(m, "id"), "object",
	    "model", "created", (json_int_t)(us / 1000000), "owned_by", owner ? owner : "kvsnap");
	if (o) {
		json_object_set(o, "doc_id", json_object_get(m, "doc_id"));
		json_object_set(o, "shared", json_object_get(m, "shared"));
	}
	return o;
}

json_t *
http_models_reply(enum http_route route, const json_t *body, const char *plain,
    int64_t created)
{
	const json_t *ms = json_object_get(body, "models");
	json_t *arr, *m;
	size_t i;

	if (route == HTTP_R_MODEL)
		return http_models_doc(json_array_get(ms, 0));
	if (!(arr = json_array()))
		return NULL;
	json_array_append_new(arr, http_model(plain, created));
	/* the library question's model, for tools that can only pick a model,
	 * once the caller has a document to ask (issue 29) */
	if (json_array_size(ms))
		json_array_append_new(arr, http_model(HTTP_LIBRARY_MODEL, created));
	json_array_foreach((json_t *)(uintptr_t)ms, i, m)
		json_array_append_new(arr, http_models_doc(m));
	return json_pack("{s:s, s:o}", "object", "list", "data", arr);
}

char *
http_model_error_json(const char *msg, size_t *len)
{
	json_t *o = json_pack("{s:{s:s, s:s, s:s, s:s}}", "error", "message", msg, "type",
	    "invalid_request_error", "code", "model_not_found", "param", "model");
	char *s = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
	json_decref(o);
	if (s)
		*len = strlen(s);
	return s;
}
