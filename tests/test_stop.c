/*
 * test_stop.c: service/stop.c, the stop-sequence matcher: matches across
 * piece boundaries, never hands on text that a later piece could turn into
 * a stop string, drops the stop string and what follows, flushes what was
 * held back when no stop string comes; the earliest match wins; the set's
 * limits.  Then random texts cut into random pieces against the plain
 * rule (the text up to the stop string complete first), and
 * at every step what was handed on is a prefix of that answer.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rng.h"
#include "service/service.h"
#include "tests/tap.h"

struct sink {
	char buf[8192];
	size_t n;
	int calls;
};

static void
sink_out(void *arg, const char *text, size_t len)
{
	struct sink *k = arg;
	if (k->n + len < sizeof(k->buf)) {
		memcpy(k->buf + k->n, text, len);
		k->n += len;
		k->buf[k->n] = '\0';
	}
	k->calls++;
}

/* Feed pieces (NULL-terminated) through stops; the text handed on and the
 * matched index. */
static int
run(const char *const *stops, size_t n_stop, const char *const *pieces, struct sink *k)
{
	struct svc_stopper s;
	size_t i;
	memset(k, 0, sizeof(*k));
	svc_stopper_init(&s, stops, n_stop);
	for (i = 0; pieces[i]; i++)
		if (svc_stopper_feed(&s, pieces[i], strlen(pieces[i]), sink_out, k))
			break;
	svc_stopper_flush(&s, sink_out, k);
	return s.matched;
}

static enum tap_result
test_across_pieces(void)
{
	static const char *const stops[] = { "\nUser:" };
	static const char *const p1[] = { "Hello", " there\n", "Us", "er: more", NULL };
	struct sink k;
	TAP_CHECK(run(stops, 1, p1, &k) == 0, "matched %d", run(stops, 1, p1, &k));
	TAP_CHECK(!strcmp(k.buf, "Hello there"), "got '%s'", k.buf);
	return TAP_PASS;
}

static enum tap_result
test_held_back(void)
{
	static const char *const stops[] = { "END" };
	struct svc_stopper s;
	struct sink k;
	memset(&k, 0, sizeof(k));
	svc_stopper_init(&s, stops, 1);
	svc_stopper_feed(&s, "abcE", 4, sink_out, &k);
	TAP_CHECK(!strcmp(k.buf, "abc"), "an 'E' that may begin END is held: '%s'", k.buf);
	svc_stopper_feed(&s, "N", 1, sink_out, &k);
	TAP_CHECK(!strcmp(k.buf, "abc"), "'EN' still held: '%s'", k.buf);
	svc_stopper_feed(&s, "Dx", 2, sink_out, &k);
	TAP_CHECK(!strcmp(k.buf, "abc") && s.matched == 0, "END and after it dropped: '%s'",
	    k.buf);
	/* held text that turns out not to be a stop string goes on */
	memset(&k, 0, sizeof(k));
	svc_stopper_init(&s, stops, 1);
	svc_stopper_feed(&s, "xEN", 3, sink_out, &k);
	svc_stopper_feed(&s, "o", 1, sink_out, &k);
	TAP_CHECK(!strcmp(k.buf, "xENo"), "released: '%s'", k.buf);
	memset(&k, 0, sizeof(k));
	svc_stopper_init(&s, stops, 1);
	svc_stopper_feed(&s, "yE", 2, sink_out, &k);
	svc_stopper_flush(&s, sink_out, &k);
	TAP_CHECK(!strcmp(k.buf, "yE") && s.matched < 0, "flushed at the end: '%s'", k.buf);
	return TAP_PASS;
}

static enum tap_result
test_earliest_wins(void)
{
	static const char *const stops[] = { "cd", "b", "abcdef", "zz" };
	static const char *const p[] = { "xa", "bcdef", NULL };
	struct sink k;
	int m = run(stops, 4, p, &k);
	/* "b" is complete first, though "abcdef" begins before it; as a
	 * byte-by-byte reader sees it, whatever the pieces */
	TAP_CHECK(m == 1 && !strcmp(k.buf, "xa"), "matched %d, '%s'", m, k.buf);
	return TAP_PASS;
}

static enum tap_result
test_at_start_and_utf8(void)
{
	static const char *const stops[] = { "\xc3\xa9t\xc3\xa9" }; /* "été" */
	static const char *const p[] = { "\xc3\xa9", "t", "\xc3\xa9 rest", NULL };
	static const char *const q[] = { "caf\xc3\xa9", " \xc3\xa9t", "age", NULL };
	struct sink k;
	TAP_CHECK(run(stops, 1, p, &k) == 0 && k.n == 0, "at the start: nothing, got '%s'",
	    k.buf);
	TAP_CHECK(run(stops, 1, q, &k) < 0 && !strcmp(k.buf, "caf\xc3\xa9 \xc3\xa9tage"),
	    "a near miss goes on whole: '%s'", k.buf);
	return TAP_PASS;
}

static enum tap_result
test_no_stops(void)
{
	static const char *const p[] = { "a", "", "b", NULL };
	struct sink k;
	TAP_CHECK(run(NULL, 0, p, &k) < 0 && !strcmp(k.buf, "ab"), "'%s'", k.buf);
	return TAP_PASS;
}

static enum tap_result
test_long_piece(void)
{
	static const char *const stops[] = { "STOP" };
	char *big = malloc(3001), *p[2];
	struct sink k;
	int m;
	memset(big, 'a', 3000);
	memcpy(big + 1300, "STOP", 4); /* past the matcher's 512-byte step */
	big[3000] = '\0';
	p[0] = big;
	p[1] = NULL;
	m = run(stops, 1, (const char *const *)p, &k);
	free(big);
	TAP_CHECK(m == 0 && k.n == 1300, "matched %d after %zu bytes", m, k.n);
	return TAP_PASS;
}

static enum tap_result
test_check(void)
{
	static const char *const four[] = { "a", "b", "c", "d", "e" };
	static const char *const empty[] = { "a", "" };
	char why[128], big[SVC_STOP_LEN_MAX + 2];
	const char *one[1] = { big };
	TAP_CHECK(svc_stops_check(four, 4, why, sizeof(why)) == 0, "four are fine");
	TAP_CHECK(svc_stops_check(four, 5, why, sizeof(why)) < 0 && strstr(why, "at most 4"),
	    "five: '%s'", why);
	TAP_CHECK(svc_stops_check(empty, 2, why, sizeof(why)) < 0 && strstr(why, "stop sequence 2"),
	    "an empty one: '%s'", why);
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	TAP_CHECK(svc_stops_check(one, 1, why, sizeof(why)) < 0, "%zu bytes refused",
	    sizeof(big) - 1);
	big[SVC_STOP_LEN_MAX] = '\0';
	TAP_CHECK(svc_stops_check(one, 1, why, sizeof(why)) == 0, "%d bytes taken: %s",
	    SVC_STOP_LEN_MAX, why);
	return TAP_PASS;
}

/* Random texts over a small alphabet (so stop strings occur), cut at random. */
static enum tap_result
test_random(void)
{
	uint64_t rng = 0x5eed5709ULL;
	char text[400], stops_buf[4][8], want[400];
	const char *stops[4];
	int round;
	for (round = 0; round < 20000; round++) {
		size_t n = kv_xorshift64s(&rng) % sizeof(text), i, n_stop = 1 + kv_xorshift64s(&rng) % 4, at = n;
		size_t pos = 0, cut;
		struct svc_stopper s;
		struct sink k;
		int want_m = -1, m;
		for (i = 0; i < n; i++)
			text[i] = "abc\n"[kv_xorshift64s(&rng) % 4];
		for (i = 0; i < n_stop; i++) {
			size_t len = 1 + kv_xorshift64s(&rng) % 6, j;
			for (j = 0; j < len; j++)
				stops_buf[i][j] = "abc\n"[kv_xorshift64s(&rng) % 4];
			stops_buf[i][len] = '\0';
			stops[i] = stops_buf[i];
		}
		for (i = 0; i < n_stop; i++) { /* the plain rule: the first to end */
			size_t len = strlen(stops[i]), e;
			const char *p = memmem(text, n, stops[i], len);
			e = p ? (size_t)(p - text) + len : 0;
			if (p && (want_m < 0 || e < at + strlen(stops[want_m]) ||
			    (e == at + strlen(stops[want_m]) && (size_t)(p - text) < at))) {
				at = (size_t)(p - text);
				want_m = (int)i;
			}
		}
		memcpy(want, text, at);
		memset(&k, 0, sizeof(k));
		svc_stopper_init(&s, stops, n_stop);
		while (pos < n) {
			cut = 1 + kv_xorshift64s(&rng) % 7;
			if (cut > n - pos)
				cut = n - pos;
			m = svc_stopper_feed(&s, text + pos, cut, sink_out, &k);
			pos += cut;
			TAP_CHECK(k.n <= at && !memcmp(k.buf, want, k.n), "round %d: handed on text "
			    "beyond the answer", round);
			if (m)
				break;
		}
		svc_stopper_flush(&s, sink_out, &k);
		TAP_CHECK(s.matched == want_m && k.n == at && !memcmp(k.buf, want, at),
		    "round %d: matched %d (want %d), %zu bytes (want %zu)", round, s.matched,
		    want_m, k.n, at);
	}
	return TAP_PASS;
}

static const struct tap_test tests[] = {
	{ "across_pieces", test_across_pieces },
	{ "held_back", test_held_back },
	{ "earliest_wins", test_earliest_wins },
	{ "at_start_and_utf8", test_at_start_and_utf8 },
	{ "no_stops", test_no_stops },
	{ "long_piece", test_long_piece },
	{ "check", test_check },
	{ "random", test_random },
};

TAP_MAIN(NULL, NULL)
