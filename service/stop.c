/*
 * stop.c: stop sequences (OpenAI's `stop`, `kvsnap query --stop`): the
 * answer's text, as it is decoded, is matched against up to
 * SVC_STOP_MAX strings across token boundaries.  Text that could still be
 * the start of a stop string is held back until the next token decides
 * it, so a caller never shows (or streams) the beginning of a stop string
 * it must later take back.  The stop string that matches is the one whose
 * last byte comes first (what a byte-by-byte reader would see, whatever
 * the tokens); at a match the text before it is handed on and
 * the rest, the stop string included, is dropped.  The one matcher: the
 * query over a snapshot and the plain chat both decode through emit.c,
 * which feeds it.
 */
#include <string.h>

#include "common/fail.h"
#include "service/service_internal.h"

/* Bytes of new text looked at per step: with the held-back bytes (fewer
 * than SVC_STOP_LEN_MAX) it fits the step's buffer. */
#define STOP_STEP 512

int
svc_stops_check(const char *const *stops, size_t n, char *why, size_t why_len)
{
	size_t i, len;
	if (n > SVC_STOP_MAX)
		return kv_fail(why, why_len, -1, "at most %d stop sequences, got %zu", SVC_STOP_MAX,
		    n);
	for (i = 0; i < n; i++) {
		len = stops[i] ? strlen(stops[i]) : 0;
		if (len == 0 || len > SVC_STOP_LEN_MAX)
			return kv_fail(why, why_len, -1, "stop sequence %zu is %zu bytes: each must be "
			    "1 to %d bytes", i + 1, len, SVC_STOP_LEN_MAX);
	}
	return 0;
}

void
svc_stopper_init(struct svc_stopper *s, const char *const *stops, size_t n)
{
	memset(s, 0, sizeof(*s));
	s->stops = stops;
	s->n = n > SVC_STOP_MAX ? SVC_STOP_MAX : n;
	s->matched = -1;
}

/* The longest tail of b[0..n) that is a proper beginning of some stop
 * string: what must wait for more text. */
static size_t
stop_tail(const struct svc_stopper *s, const char *b, size_t n)
{
	size_t i, k, len, best = 0;
	for (i = 0; i < s->n; i++) {
		len = strlen(s->stops[i]);
		for (k = len - 1 < n ? len - 1 : n; k > best; k--)
			if (!memcmp(b + n - k, s->stops[i], k)) {
				best = k;
				break;
			}
	}
	return best;
}

/* One step: held + text[0..len), len <= STOP_STEP. */
static int
stop_step(struct svc_stopper *s, const char *text, size_t len, svc_stop_out out, void *arg)
{
	char b[SVC_STOP_LEN_MAX + STOP_STEP];
	size_t n = s->n_held + len, i, at = n, end = n + 1, k, e;
	const char *p;
	memcpy(b, s->held, s->n_held);
	memcpy(b + s->n_held, text, len);
	/* the stop string complete first (as if the text came one byte at a
	 * time, so how it is cut into tokens does not matter); of two ending
	 * at the same byte, the longer */
	for (i = 0; i < s->n; i++) {
		k = strlen(s->stops[i]);
		p = k <= n ? memmem(b, n, s->stops[i], k) : NULL;
		e = p ? (size_t)(p - b) + k : 0;
		if (p && (e < end || (e == end && (size_t)(p - b) < at))) {
			at = (size_t)(p - b);
			end = e;
			s->matched = (int)i;
		}
	}
	if (s->matched >= 0) {
		if (at && out)
			out(arg, b, at);
		s->n_held = 0;
		return 1;
	}
	k = stop_tail(s, b, n);
	if (n > k && out)
		out(arg, b, n - k);
	memmove(s->held, b + n - k, k);
	s->n_held = k;
	return 0;
}

int
svc_stopper_feed(struct svc_stopper *s, const char *text, size_t len, svc_stop_out out,
    void *arg)
{
	size_t take;
	if (s->matched >= 0)
		return 1;
	if (!s->n) {
		if (len && out)
			out(arg, text, len);
		return 0;
	}
	do {
		take = len < STOP_STEP ? len : STOP_STEP;
		if (stop_step(s, text, take, out, arg))
			return 1;
		text += take;
		len -= take;
	} while (len);
	return 0;
}

void
svc_stopper_flush(struct svc_stopper *s, svc_stop_out out, void *arg)
{
	if (s->matched < 0 && s->n_held && out)
		out(arg, s->held, s->n_held);
	s->n_held = 0;
}
