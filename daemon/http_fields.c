/*
 * http_fields.c: which members of a completion request kvsnapd takes
 * (docs/HTTP.md, "Fields"): those it reads, those OpenAI's clients send
 * that change nothing here (accepted, unused), and those whose default
 * value changes nothing (accepted at that value).  Any other member, or
 * one of the last kind set to anything else (tools, JSON mode, logprobs,
 * penalties), is a 400 naming it: a request kvsnapd cannot honour is
 * refused, never answered as if the field were not there.  Pure.
 */
#include <string.h>

#include "common/fail.h"
#include "daemon/http.h"

/* Read by http_parse.c: both routes, then chat, then completions. */
static const char *const read_both[] = { "model", "document", "documents", "library_mode",
	"min_conf", "library_top", "max_tokens",
	"max_completion_tokens", "temperature", "top_p", "seed", "n", "stream", "stream_options",
	"stop", NULL };
static const char *const read_chat[] = { "messages", NULL };
static const char *const read_comp[] = { "prompt", "echo", NULL };
/* What OpenAI's clients send that changes nothing in kvsnapd's answer:
 * bookkeeping for OpenAI's own service. */
static const char *const harmless[] = { "user", "metadata", "store", "service_tier",
	"safety_identifier", "prompt_cache_key", "parallel_tool_calls", NULL };

static int
fields_in(const char *const *list, const char *k)
{
	for (; *list; list++)
		if (!strcmp(*list, k))
			return 1;
	return 0;
}

/* Whether v is the value that changes nothing for member k (1), or k is
 * not one of those (-1). */
static int
fields_default(const char *k, json_t *v)
{
	if (!strcmp(k, "frequency_penalty") || !strcmp(k, "presence_penalty"))
		return json_is_number(v) && json_number_value(v) == 0.0;
	if (!strcmp(k, "logprobs"))
		return json_is_false(v);
	if (!strcmp(k, "top_logprobs"))
		return json_is_integer(v) && json_integer_value(v) == 0;
	if (!strcmp(k, "logit_bias"))
		return json_is_object(v) && json_object_size(v) == 0;
	if (!strcmp(k, "tools") || !strcmp(k, "functions"))
		return json_is_array(v) && json_array_size(v) == 0;
	if (!strcmp(k, "tool_choice") || !strcmp(k, "function_call"))
		return json_is_string(v) && !strcmp(json_string_value(v), "none");
	if (!strcmp(k, "response_format"))
		return json_is_object(v) && json_object_size(v) == 1 &&
		    json_is_string(json_object_get(v, "type")) &&
		    !strcmp(json_string_value(json_object_get(v, "type")), "text");
	if (!strcmp(k, "modalities"))
		return json_is_array(v) && json_array_size(v) == 1 &&
		    json_is_string(json_array_get(v, 0)) &&
		    !strcmp(json_string_value(json_array_get(v, 0)), "text");
	if (!strcmp(k, "best_of"))
		return json_is_integer(v) && json_integer_value(v) == 1;
	if (!strcmp(k, "suffix"))
		return json_is_string(v) && json_string_length(v) == 0;
	return -1;
}

/* Why a member is refused, in words a user can act on. */
static const char *
fields_why(const char *k)
{
	if (!strcmp(k, "tools") || !strcmp(k, "functions") || !strcmp(k, "tool_choice") ||
	    !strcmp(k, "function_call"))
		return "tool and function calling is not supported";
	if (!strcmp(k, "response_format"))
		return "JSON mode and structured outputs are not supported (only {\"type\":\"text\"})";
	if (!strcmp(k, "logprobs") || !strcmp(k, "top_logprobs"))
		return "log probabilities are not returned";
	if (!strcmp(k, "frequency_penalty") || !strcmp(k, "presence_penalty") ||
	    !strcmp(k, "logit_bias"))
		return "kvsnapd samples with temperature, top_p and seed only";
	return "kvsnapd does not support it";
}

int
http_fields_check(json_t *o, int chat, char *msg, size_t msg_len)
{
	const char *k;
	json_t *v;
	int d;

	json_object_foreach(o, k, v) {
		if (fields_in(read_both, k) || fields_in(chat ? read_chat : read_comp, k) ||
		    fields_in(harmless, k) || json_is_null(v))
			continue;
		if ((d = fields_default(k, v)) == 1)
			continue;
		return kv_fail(msg, msg_len, PROTO_E_BAD_REQUEST, "\"%.64s\" %s: %s (docs/HTTP.md "
		    "lists the fields kvsnapd takes)", k, d == 0 ? "is set" : "is not a field "
		    "kvsnapd knows", d == 0 ? fields_why(k) : "leave it out");
	}
	return 0;
}

int
http_message_check(json_t *m, size_t i, char *msg, size_t msg_len)
{
	const char *k;
	json_t *v;

	json_object_foreach(m, k, v) {
		if (!strcmp(k, "role") || !strcmp(k, "content") || !strcmp(k, "name") ||
		    json_is_null(v) || (!strcmp(k, "tool_calls") && json_is_array(v) &&
		    json_array_size(v) == 0))
			continue;
		return kv_fail(msg, msg_len, PROTO_E_BAD_REQUEST, "messages[%zu].%.64s is not "
		    "supported: %s", i, k, !strcmp(k, "tool_calls") || !strcmp(k, "function_call") ?
		    "tool and function calling is not supported" : "a message is a role, a "
		    "content and optionally a name");
	}
	return 0;
}
