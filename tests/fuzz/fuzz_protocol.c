/*
 * fuzz_protocol.c: libFuzzer target for kvsnapd's request parser
 * (daemon/protocol.c): any bytes as one request line must parse or fail
 * with a known error code, never crash or leak; a parsed request's fields
 * must respect the named limits; the error and result events built from
 * it must be one valid JSON line carrying the same id.
 */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/daemon.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* An event line is one JSON object ending in exactly one newline. */
static void
fuzz_check_line(char *line, size_t n, const json_t *id)
{
	json_error_t e;
	json_t *o;
	assert(line && n > 0 && line[n - 1] == '\n');
	assert(!memchr(line, '\n', n - 1));
	o = json_loadb(line, n - 1, 0, &e);
	assert(o && json_is_object(o));
	if (id)
		assert(json_equal(json_object_get(o, "id"), (json_t *)(uintptr_t)id));
	json_decref(o);
	free(line);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proto_req r;
	char msg[512];
	size_t n;
	char *line;
	int code;

	if (size > PROTO_LINE_MAX + 16)
		return 0;
	code = proto_parse((const char *)data, size, &r, msg, sizeof(msg));
	if (code) {
		assert(code >= PROTO_E_BAD_JSON && code <= PROTO_E_INTERNAL);
		assert(strcmp(proto_code_name(code), "internal") || code == PROTO_E_INTERNAL);
		assert(msg[0]);
		line = proto_error(r.id, code, msg, &n);
		fuzz_check_line(line, n, r.id);
	} else {
		assert(r.id);
		assert(strcmp(proto_op_name(r.op), "?"));
		assert(!r.text || (r.text_len <= PROTO_TEXT_MAX && strlen(r.text) == r.text_len));
		assert(!r.question || r.question_len <= PROTO_QUESTION_MAX);
		assert(!r.name || strlen(r.name) <= PROTO_NAME_MAX);
		assert(!r.encoding || strlen(r.encoding) <= PROTO_ENCODING_MAX);
		assert(r.op != PROTO_OP_QUERY ||
		    (r.max_tokens >= 1 && r.max_tokens <= PROTO_MAX_TOKENS_MAX && r.doc));
		assert(r.op != PROTO_OP_INGEST || (!r.use_fd != !r.text));
		line = proto_event(r.id, "result", json_pack("{s:s}", "op", proto_op_name(r.op)), &n);
		fuzz_check_line(line, n, r.id);
	}
	proto_req_free(&r);
	return 0;
}
