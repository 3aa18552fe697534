/*
 * http_library.c: a library question's sources in an OpenAI-shaped reply
 * (docs/HTTP.md, "Library questions"): beside `choices`, the members
 * `sources` (each document consulted or not, as the protocol's result
 * lists them), `answered_from` and `abstained`, in the completion object,
 * or in the last chunk of a streamed one (the one with finish_reason).
 * OpenAI's clients ignore members they do not know; a tool that shows
 * only the message's text still sees an abstention, which names the
 * documents consulted in its text.
 */
#include "daemon/http.h"

json_t *
http_library_reply(json_t *o, const json_t *result)
{
	static const char *const keys[] = { "sources", "answered_from", "abstained", "confidence" };
	json_t *v;
	size_t i;

	if (!o || !result || !json_is_array(json_object_get(result, "sources")))
		return o; /* not a library question */
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if ((v = json_object_get(result, keys[i])))
			json_object_set(o, keys[i], v);
	return o;
}
