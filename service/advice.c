/*
 * advice.c: what a reader is told when a document has snapshots, but none
 * it may answer from (pick.c's rule): the stored profiles in words, the
 * flags of `kvsnap --local` that select one, and the exact command that
 * re-ingests the document for the reader's profile.  A profile is read
 * from its canonical text (snap_profile: "kvsnap-snapshot/V model=FP
 * policy=NAME:K=V,... chunk=N quant=Q").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service/service_internal.h"

/* A profile's parts, pointing into a copy of its text. */
struct prof {
	char buf[SNAP_MAX_PROFILE];
	const char *model, *policy, *opts, *chunk, *quant;
};

/* A profile text split into its fields (each "" when absent). */
static void
prof_parse(const char *text, struct prof *p)
{
	char *tok, *save = NULL, *colon;

	snprintf(p->buf, sizeof(p->buf), "%s", text);
	p->model = p->policy = p->opts = p->chunk = p->quant = "";
	for (tok = strtok_r(p->buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		if (!strncmp(tok, "model=", 6))
			p->model = tok + 6;
		else if (!strncmp(tok, "policy=", 7))
			p->policy = tok + 7;
		else if (!strncmp(tok, "chunk=", 6))
			p->chunk = tok + 6;
		else if (!strncmp(tok, "quant=", 6))
			p->quant = tok + 6;
	}
	if ((colon = strchr(p->policy, ':'))) {
		*colon = 0;
		p->opts = colon + 1;
	}
}

/* The value of option `key` in "K=V,K=V" into out ("" when absent). */
static void
prof_opt(const char *opts, const char *key, char *out, size_t cap)
{
	size_t n = strlen(key);
	const char *at = opts, *end;
	out[0] = 0;
	while (at && *at) {
		end = strchr(at, ',');
		if (!strncmp(at, key, n) && at[n] == '=') {
			at += n + 1;
			snprintf(out, cap, "%.*s", (int)(end ? (size_t)(end - at) : strlen(at)), at);
			return;
		}
		at = end ? end + 1 : NULL;
	}
}

/* A value stored by content hash (a sidecar file's fingerprint): 32 or
 * more hex digits.  It cannot be given back as a flag. */
static int
prof_is_fingerprint(const char *v, size_t n)
{
	size_t i;
	if (n < 32)
		return 0;
	for (i = 0; i < n; i++)
		if (!strchr("0123456789abcdef", v[i]))
			return 0;
	return 1;
}

void
svc_profile_words(const struct svc *v, const char *profile, char *out, size_t cap)
{
	struct prof p, mine;
	char ratio[64], budget[64], from[64];

	prof_parse(profile, &p);
	if (!p.policy[0]) {
		snprintf(out, cap, "%s", profile);
		return;
	}
	prof_opt(p.opts, "ratio", ratio, sizeof(ratio));
	prof_opt(p.opts, "budget", budget, sizeof(budget));
	prof_opt(p.opts, "from", from, sizeof(from));
	prof_parse(v ? v->profile : "", &mine);
	snprintf(out, cap, "%s %s %s%s%s, chunk %s, %s%s", p.policy, ratio[0] ? "ratio" : "budget",
	    ratio[0] ? ratio : budget[0] ? budget : "?", from[0] ? " shrunk from " : "", from,
	    p.chunk, p.quant, v && strcmp(p.model, mine.model) ? ", another model" : "");
}

void
svc_profile_flags(const char *profile, char *out, size_t cap)
{
	struct prof p;
	struct eng_policy *dp = NULL;
	char def[2048] = "", why[256], val[256], dval[256], key[64], opts[1024] = "";
	const char *at, *end, *eq;
	size_t o = 0;

	prof_parse(profile, &p);
	/* the policy's own defaults, to pass only the options that differ */
	if (!eng_policy_create(&dp, p.policy, "", 1, why, sizeof(why)))
		eng_policy_describe(dp, def, sizeof(def));
	eng_policy_free(dp);
	if ((at = strchr(def, ':')))
		memmove(def, at + 1, strlen(at + 1) + 1);
	for (at = p.opts; at && *at; at = end ? end + 1 : NULL) {
		end = strchr(at, ',');
		eq = strchr(at, '=');
		if (!eq || (end && eq > end))
			continue;
		snprintf(key, sizeof(key), "%.*s", (int)(eq - at), at);
		snprintf(val, sizeof(val), "%.*s", (int)(end ? (size_t)(end - eq - 1) : strlen(eq + 1)),
		    eq + 1);
		prof_opt(def, key, dval, sizeof(dval));
		if (!strcmp(key, "ratio") || !strcmp(key, "budget") || !strcmp(val, dval) ||
		    prof_is_fingerprint(val, strlen(val)))
			continue;
		o += (size_t)snprintf(opts + o, o < sizeof(opts) ? sizeof(opts) - o : 0, "%s%s=%s",
		    o ? "," : "", key, val);
		if (o >= sizeof(opts))
			break;
	}
	prof_opt(p.opts, "ratio", val, sizeof(val));
	prof_opt(p.opts, "budget", dval, sizeof(dval));
	snprintf(out, cap, "--policy %s %s %s --chunk %s --quant %s%s%s", p.policy,
	    val[0] ? "--ratio" : "--budget", val[0] ? val : dval, p.chunk, p.quant,
	    opts[0] ? " --opts " : "", opts);
}

/* s quoted for a POSIX shell when it holds anything but safe characters. */
static void
advice_quote(const char *s, char *out, size_t cap)
{
	size_t o = 0;
	if (!s[strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+=:,@%")]) {
		snprintf(out, cap, "%s", s);
		return;
	}
	if (cap < 3) {
		if (cap)
			out[0] = 0;
		return;
	}
	out[o++] = '\'';
	for (; *s && o + 5 < cap; s++) {
		if (*s == '\'') {
			memcpy(out + o, "'\\''", 4);
			o += 4;
		} else
			out[o++] = *s;
	}
	out[o++] = '\'';
	out[o] = 0;
}

void
svc_pick_advice(const struct svc *v, const struct svc_picked *pk, const struct store_doc *d,
    int local, char *out, size_t cap)
{
	char words[512], mine[512], flags[1200], path[1100];
	size_t o;
	int i;

	svc_profile_words(v, v->profile, mine, sizeof(mine));
	o = (size_t)snprintf(out, cap, "no snapshot of %s profile (%s); stored: ",
	    local ? "this" : "the daemon's", mine);
	for (i = 0; i < pk->n_listed && o < cap; i++) {
		svc_profile_words(v, pk->other[i], words, sizeof(words));
		o += (size_t)snprintf(out + o, cap - o, "%s%s", i ? "; " : "", words);
	}
	if (o < cap && pk->n_other > pk->n_listed)
		o += (size_t)snprintf(out + o, cap - o, "; and %d more", pk->n_other - pk->n_listed);
	/* the recorded source when it is a path (the daemon records
	 * "(descriptor)" or "(inline text)" when it had none) */
	if (d && d->source[0] == '/')
		advice_quote(d->source, path, sizeof(path));
	else
		snprintf(path, sizeof(path), "FILE");
	if (local && pk->n_listed && o < cap) {
		svc_profile_flags(pk->other[0], flags, sizeof(flags));
		o += (size_t)snprintf(out + o, cap - o, ". Answer from the stored snapshot with: "
		    "kvsnap query --local %s DOC QUESTION", flags);
	}
	if (o >= cap)
		return;
	if (local) {
		svc_profile_flags(v->profile, flags, sizeof(flags));
		snprintf(out + o, cap - o, "%s re-ingest for this profile: kvsnap ingest --local %s %s",
		    pk->n_listed ? "; or" : ".", flags, path);
	} else {
		snprintf(out + o, cap - o, "; re-ingest it for this profile: kvsnap ingest --force %s",
		    path);
	}
}
