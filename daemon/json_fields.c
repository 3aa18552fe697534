/*
 * json_fields.c: reading one member of a request's JSON object, checked,
 * for both request parsers (protocol.c's NDJSON lines and http_parse.c's
 * HTTP bodies), so a field's type and range errors read alike in both.
 * Each returns 0, or a PROTO_E_ code with the reason in msg; an absent or
 * null member leaves *out as it was (unless required).
 */
#include <stdlib.h>
#include <string.h>

#include "common/fail.h"
#include "daemon/daemon.h"

int
proto_json_str(json_t *o, const char *key, int required, size_t max, int code_long, char **out,
    size_t *out_len, char *msg, size_t msg_len)
{
	json_t *v = json_object_get(o, key);
	size_t n;

	if (!v || json_is_null(v))
		return required ? kv_fail(msg, msg_len, PROTO_E_BAD_REQUEST, "\"%s\" is required",
		    key) : 0;
	if (!json_is_string(v))
		return kv_fail(msg, msg_len, PROTO_E_BAD_REQUEST, "\"%s\" must be a string", key);
	n = json_string_length(v);
	if (n > max)
		return kv_fail(msg, msg_len, code_long, "\"%s\" is %zu bytes, over the limit of %zu",
		    key, n, max);
	free(*out); /* a member read twice (HTTP: a later alias) keeps the last */
	if (!(*out = malloc(n + 1)))
		return kv_fail(msg, msg_len, PROTO_E_INTERNAL, "out of memory");
	memcpy(*out, json_string_value(v), n);
	(*out)[n] = '\0';
	if (out_len)
		*out_len = n;
	return 0;
}

int
proto_json_int(json_t *o, const char *key, int64_t lo, int64_t hi, int64_t *out, char *msg,
    size_t msg_len)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
		return kv_fail(msg, msg_len, PROTO_E_BAD_REQUEST,
		    "\"%s\" must be an integer in [%lld, %lld]", key, (long long)lo, (long long)hi);
	*out = json_integer_value(v);
	return 0;
}

int
proto_json_num(json_t *o, const char *key, double lo, int lo_open, double hi, double *out,
    char *msg, size_t msg_len)
{
	json_t *v = json_object_get(o, key);
	double x;
	if (!v || json_is_null(v))
		return 0;
	x = json_is_number(v) ? json_number_value(v) : lo - 1.0;
	if (!(x >= lo && x <= hi) || (lo_open && x == lo))
		return kv_fail(msg, msg_len, PROTO_E_BAD_REQUEST,
		    "\"%s\" must be a number in %c%g, %g]", key, lo_open ? '(' : '[', lo, hi);
	*out = x;
	return 0;
}

int
proto_json_bool(json_t *o, const char *key, int *out, char *msg, size_t msg_len)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_boolean(v))
		return kv_fail(msg, msg_len, PROTO_E_BAD_REQUEST, "\"%s\" must be true or false",
		    key);
	*out = json_is_true(v);
	return 0;
}

int
proto_json_stops(json_t *o, const char *key, struct proto_req *r, char *msg, size_t msg_len)
{
	json_t *v = json_object_get(o, key), *e;
	size_t i, n;

	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v) && !json_is_array(v))
		return kv_fail(msg, msg_len, PROTO_E_BAD_REQUEST, "\"%s\" must be a string or an "
		    "array of up to %d strings", key, PROTO_STOP_MAX);
	n = json_is_string(v) ? 1 : json_array_size(v);
	if (n > PROTO_STOP_MAX)
		return kv_fail(msg, msg_len, PROTO_E_BAD_REQUEST, "\"%s\" has %zu sequences: at most "
		    "%d", key, n, PROTO_STOP_MAX);
	for (i = 0; i < n; i++) {
		e = json_is_string(v) ? v : json_array_get(v, i);
		if (!json_is_string(e) || json_string_length(e) == 0 ||
		    json_string_length(e) > PROTO_STOP_LEN_MAX)
			return kv_fail(msg, msg_len, PROTO_E_BAD_REQUEST, "\"%s\"[%zu] must be a "
			    "string of 1 to %d bytes", key, i, PROTO_STOP_LEN_MAX);
		free(r->stop[i]);
		if (!(r->stop[i] = strdup(json_string_value(e))))
			return kv_fail(msg, msg_len, PROTO_E_INTERNAL, "out of memory");
		r->n_stop = i + 1;
	}
	return 0;
}

int
proto_json_docs(json_t *o, const char *key, struct proto_req *r, char *msg, size_t msg_len)
{
	json_t *a = json_object_get(o, key), *e;
	size_t i;

	if (!a || json_is_null(a))
		return 0;
	if (!json_is_array(a) || json_array_size(a) < 1 || json_array_size(a) > PROTO_DOCS_MAX)
		return kv_fail(msg, msg_len, PROTO_E_BAD_REQUEST, "\"%s\" must be an array of 1 to "
		    "%d DOC references", key, PROTO_DOCS_MAX);
	for (i = 0; i < r->n_docs; i++) /* read twice (HTTP: an alias): the last */
		free(r->docs[i]);
	r->n_docs = 0;
	json_array_foreach(a, i, e) {
		if (!json_is_string(e) || !json_string_length(e) ||
		    json_string_length(e) > PROTO_REF_MAX ||
		    strlen(json_string_value(e)) != json_string_length(e))
			return kv_fail(msg, msg_len, PROTO_E_BAD_REQUEST, "\"%s\"[%zu] must be a DOC "
			    "reference of 1 to %d bytes", key, i, PROTO_REF_MAX);
		if (!(r->docs[i] = strdup(json_string_value(e))))
			return kv_fail(msg, msg_len, PROTO_E_INTERNAL, "out of memory");
		r->n_docs = i + 1;
	}
	return 0;
}

int
proto_json_mode(json_t *o, const char *key, char **out, char *msg, size_t msg_len)
{
	int rc = proto_json_str(o, key, 0, 16, PROTO_E_BAD_REQUEST, out, NULL, msg, msg_len);
	if (rc)
		return rc;
	if (*out && strcmp(*out, "side") && strcmp(*out, "parts") && strcmp(*out, "pick"))
		return kv_fail(msg, msg_len, PROTO_E_BAD_REQUEST, "\"%s\" must be \"side\", "
		    "\"parts\" or \"pick\"", key);
	return 0;
}
