/*
 * fuzz_http.c: libFuzzer target for kvsnapd's HTTP request parser
 * (daemon/http_parse.c) and the --http address parser.  Input: one byte
 * choosing the method and the Content-Type/Accept headers, the URI up to
 * the first newline, then the body.  Any input must parse or fail with a
 * known error code and an HTTP status, never crash or leak; a parsed
 * request must respect the protocol's limits for its op (a document
 * reference valid UTF-8); the error object and the reply shapes built from
 * it must be valid JSON, its message never "(unprintable message)"; the
 * log's escaper (common/escape.c) makes every input one line of printable
 * UTF-8.
 */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/escape.h"
#include "daemon/http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
fuzz_json(char *s, size_t n)
{
	json_error_t e;
	json_t *o;
	assert(s && strlen(s) == n);
	assert(!strstr(s, "\"message\":\"(unprintable message)\""));
	o = json_loads(s, 0, &e);
	assert(o && json_is_object(o));
	json_decref(o);
	free(s);
}

/* One server-sent event: "data: " JSON "\n\n". */
static void
fuzz_sse(char *s, size_t n)
{
	json_error_t e;
	json_t *o;
	assert(s && n > 8 && !memcmp(s, "data: ", 6) && !memcmp(s + n - 2, "\n\n", 2));
	assert(!memchr(s, '\n', n - 2));
	o = json_loadb(s + 6, n - 8, 0, &e);
	assert(o && json_is_object(o));
	json_decref(o);
	free(s);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const methods[] = { "GET", "POST", "DELETE", "PUT" };
	static const char *const ctypes[] = { NULL, "application/json", "text/plain",
		"application/json; charset=utf-8" };
	struct http_req r;
	struct http_addr a;
	struct http_shape sh = { 1, "chatcmpl-fuzz", 0, "m" };
	const uint8_t *nl;
	char *uri, msg[512];
	size_t ulen, n;
	int code, status;

	if (size < 1 || size > PROTO_LINE_MAX + 16)
		return 0;
	/* the escaper: printable UTF-8 on one line, whatever comes in */
	if (size <= 4096) {
		char esc[4 * 4096 + 1];
		size_t k = kv_escape(esc, sizeof(esc), (const char *)data, size), i;
		assert(k == strlen(esc) && kv_utf8_valid(esc, k));
		for (i = 0; i < k; i++)
			assert((unsigned char)esc[i] >= 0x20 && esc[i] != 0x7f);
		assert(!strstr(esc, "\xe2\x80\xa8") && !strstr(esc, "\xc2\x85"));
	}
	nl = memchr(data + 1, '\n', size - 1);
	ulen = nl ? (size_t)(nl - data - 1) : size - 1;
	if (!(uri = malloc(ulen + 1)))
		return 0;
	memcpy(uri, data + 1, ulen);
	uri[ulen] = '\0';
	/* the address parser on the same bytes */
	if (!http_addr_parse(uri, &a, msg, sizeof(msg)))
		assert(a.is_unix ? a.path[0] == '/' : a.port > 0);
	else
		assert(msg[0]);
	code = http_parse(methods[data[0] & 3], uri, ctypes[(data[0] >> 2) & 3],
	    data[0] & 16 ? "text/event-stream" : NULL, nl ? (const char *)nl + 1 : NULL,
	    nl ? size - ulen - 2 : 0, "SmolLM2-135M-Instruct", &r, &status, msg, sizeof(msg));
	if (code) {
		assert(msg[0]);
		assert(status >= 400 && status < 600);
		fuzz_json(http_error_json((enum proto_code)code, status, msg, &n), n);
	} else {
		const struct proto_req *p = &r.pr;
		assert(status == 200);
		switch (r.route) {
		case HTTP_R_CHAT:
		case HTTP_R_COMPLETIONS:
			assert(p->max_tokens >= 1 && p->max_tokens <= PROTO_MAX_TOKENS_MAX);
			assert(p->op == PROTO_OP_QUERY || p->op == PROTO_OP_CHAT);
			assert(p->op != PROTO_OP_QUERY || (p->doc && p->question &&
			    p->question_len <= PROTO_QUESTION_MAX));
			assert(p->op != PROTO_OP_CHAT || (p->raw ? p->question != NULL : p->n_msgs > 0));
			sh.chat = r.route == HTTP_R_CHAT;
			if (p->question)
				json_decref(http_completion(&sh, p->question, p->question_len, "stop",
				    http_usage(1, 2)));
			fuzz_sse(http_sse(http_chunk(&sh, p->question ? p->question : "x",
			    p->question ? p->question_len : 1, 1, NULL, NULL), &n), n);
			break;
		case HTTP_R_DOC_INGEST:
			assert(p->op == PROTO_OP_INGEST && p->text && p->text_len > 0 &&
			    p->text_len <= PROTO_TEXT_MAX);
			assert(!p->name || strlen(p->name) <= PROTO_NAME_MAX);
			break;
		case HTTP_R_DOC_INFO:
		case HTTP_R_DOC_RM:
			assert(p->doc && *p->doc && strlen(p->doc) <= PROTO_REF_MAX);
			assert(kv_utf8_valid(p->doc, strlen(p->doc)));
			break;
		case HTTP_R_DOC_LIST:
			assert(p->op == PROTO_OP_LS);
			break;
		case HTTP_R_MODELS:
		case HTTP_R_MODEL:
			break;
		}
	}
	http_req_free(&r);
	free(uri);
	return 0;
}
