/*
 * cmdline.c: getopt_long with our own error messages and the value
 * parsers that go with them (common/cmdline.h).
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cmdline.h"

#define CMD_NAME_MAX 64 /* longest option name compared for typos */

/* The last usage error's text (the program is single-threaded while it
 * parses its arguments). */
static char cmdline_last[1024];

void
cmdline_err(const struct cmdline *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmdline_last, sizeof(cmdline_last), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s: %s\nrun '%s' for help\n", c->prog, cmdline_last, c->help);
}

const char *
cmdline_last_error(void)
{
	return cmdline_last;
}

/* Edit distance with adjacent transpositions (optimal string alignment). */
static size_t
cmd_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), i, j;
	size_t d[CMD_NAME_MAX + 1][CMD_NAME_MAX + 1];

	if (la > CMD_NAME_MAX || lb > CMD_NAME_MAX)
		return (size_t)-1;
	for (i = 0; i <= la; i++)
		d[i][0] = i;
	for (j = 0; j <= lb; j++)
		d[0][j] = j;
	for (i = 1; i <= la; i++)
		for (j = 1; j <= lb; j++) {
			size_t cost = a[i - 1] != b[j - 1], v = d[i - 1][j - 1] + cost;
			if (d[i - 1][j] + 1 < v)
				v = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < v)
				v = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    d[i - 2][j - 2] + 1 < v)
				v = d[i - 2][j - 2] + 1;
			d[i][j] = v;
		}
	return d[la][lb];
}

const char *
cmdline_nearest(const char *s, const char *const *names, size_t n)
{
	size_t i, best = (size_t)-1, len = strlen(s), limit;
	const char *pick = NULL;

	/* a third of the word, at least one edit: "budgett", "qeury", "sttae" */
	limit = len / 3 > 1 ? len / 3 : 1;
	for (i = 0; i < n; i++) {
		size_t dist = cmd_distance(s, names[i]);
		if (dist < best) {
			best = dist;
			pick = names[i];
		}
	}
	return best <= limit ? pick : NULL;
}

/* The hint with "%s" replaced by flag, into out. */
static void
cmd_hint(const char *hint, const char *flag, char *out, size_t cap)
{
	const char *p = strstr(hint, "%s");
	if (p)
		snprintf(out, cap, "%.*s%s%s", (int)(p - hint), hint, flag, p + 2);
	else
		snprintf(out, cap, "%s", hint);
}

static const struct option *
cmd_find(const struct option *t, const char *name, size_t len)
{
	for (; t && t->name; t++)
		if (strlen(t->name) == len && !strncmp(t->name, name, len))
			return t;
	return NULL;
}

/* The option "--name" names as getopt_long reads it: exactly, or as the
 * unique option it abbreviates; NULL if none or several. */
static const struct option *
cmd_resolve(const struct option *t, const char *name, size_t len)
{
	const struct option *o = cmd_find(t, name, len), *hit = NULL;
	if (o || !len)
		return o;
	for (o = t; o && o->name; o++)
		if (!strncmp(o->name, name, len)) {
			if (hit)
				return NULL;
			hit = o;
		}
	return hit;
}

/* An unknown, ambiguous or malformed long option: "--name[=value]". */
static void
cmd_bad_long(const struct cmdline *c, const char *arg)
{
	const char *name = arg + 2, *names[128];
	size_t len = strcspn(name, "="), n = 0, n_pre = 0;
	const struct option *o, *tables[2] = { c->longopts, c->elsewhere };
	char amb[512] = "", hint[256], flag[CMD_NAME_MAX + 3];
	const char *near;
	int t;

	if ((o = cmd_resolve(c->longopts, name, len))) {
		if (o->has_arg == no_argument && name[len] == '=')
			cmdline_err(c, "--%s takes no value, got '%s'", o->name, arg);
		else
			cmdline_err(c, "--%s needs a value", o->name);
		return;
	}
	for (o = c->longopts; o && o->name; o++)
		if (!strncmp(o->name, name, len) && len) {
			size_t k = strlen(amb);
			snprintf(amb + k, sizeof(amb) - k, "%s--%s", n_pre ? ", " : "", o->name);
			n_pre++;
		}
	if (n_pre > 1) {
		cmdline_err(c, "'%.*s' is ambiguous: %s", (int)len + 2, arg, amb);
		return;
	}
	if ((o = cmd_find(c->elsewhere, name, len))) {
		snprintf(flag, sizeof(flag), "--%s", o->name);
		cmd_hint(c->hint ? c->hint : "", flag, hint, sizeof(hint));
		cmdline_err(c, "%s is not an option here (%s)", flag, hint);
		return;
	}
	for (t = 0; t < 2; t++)
		for (o = tables[t]; o && o->name && n < sizeof(names) / sizeof(names[0]); o++)
			names[n++] = o->name;
	{
		char typed[CMD_NAME_MAX + 1];
		snprintf(typed, sizeof(typed), "%.*s", (int)(len < CMD_NAME_MAX ? len : CMD_NAME_MAX),
		    name);
		near = len <= CMD_NAME_MAX ? cmdline_nearest(typed, names, n) : NULL;
	}
	if (!near) {
		cmdline_err(c, "unknown option '%.*s'", (int)len + 2, arg);
		return;
	}
	snprintf(flag, sizeof(flag), "--%s", near);
	hint[0] = 0;
	if (c->hint && cmd_find(c->elsewhere, near, strlen(near)) &&
	    !cmd_find(c->longopts, near, strlen(near))) {
		strcpy(hint, " ");
		cmd_hint(c->hint, flag, hint + 1, sizeof(hint) - 1);
	}
	cmdline_err(c, "unknown option '%.*s' (did you mean %s?%s)", (int)len + 2, arg, flag, hint);
}

int
cmdline_next(struct cmdline *c, int argc, char **argv)
{
	const struct option *o;
	const char *arg;
	int r, li = -1;

	if (!c->optstring[0]) {
		const char *s = c->shortopts ? c->shortopts : "";
		int plus = *s == '+';
		/* ':' first: a missing value is told apart from an unknown option */
		snprintf(c->optstring, sizeof(c->optstring), "%s:%s", plus ? "+" : "", s + plus);
		optind = 0; /* glibc: start afresh (another parse may have run) */
	}
	opterr = 0;
	c->flag[0] = 0;
	r = getopt_long(argc, argv, c->optstring, c->longopts, &li);
	if (r == -1)
		return -1;
	if (r != '?' && r != ':') {
		if (li >= 0)
			snprintf(c->flag, sizeof(c->flag), "--%s", c->longopts[li].name);
		else
			snprintf(c->flag, sizeof(c->flag), "-%c", r);
		return r;
	}
	/* a long option's trouble: optopt is 0 (unknown, ambiguous) or its
	 * val (a value missing or not taken); else a short option's, whose
	 * element may still be ahead of optind (a cluster such as -vx) */
	arg = optind > 0 && optind <= argc ? argv[optind - 1] : "";
	if (!strncmp(arg, "--", 2) && arg[2] && (optopt == 0 || ((o = cmd_resolve(c->longopts,
	    arg + 2, strcspn(arg + 2, "="))) && o->val == optopt))) {
		cmd_bad_long(c, arg);
	} else if (r == ':') {
		cmdline_err(c, "-%c needs a value", optopt);
	} else {
		for (o = c->elsewhere; o && o->name; o++)
			if (!o->flag && o->val == optopt)
				break;
		if (o && o->name) {
			char flag[8], hint[256];
			snprintf(flag, sizeof(flag), "-%c", optopt);
			cmd_hint(c->hint ? c->hint : "", flag, hint, sizeof(hint));
			cmdline_err(c, "%s is not an option here (%s)", flag, hint);
		} else if (optopt > 0x20 && optopt < 0x7f) {
			cmdline_err(c, "unknown option '-%c'", optopt);
		} else {
			cmdline_err(c, "unknown option '%s'", arg);
		}
	}
	return '?';
}

int
cmdline_parse_long(const char *v, long lo, long hi, long *out, char *why, size_t why_len)
{
	char *end;
	long x;

	errno = 0;
	x = v && *v ? strtol(v, &end, 10) : 0;
	if (!v || !*v || errno || *end || x < lo || x > hi) {
		snprintf(why, why_len, "needs a whole number from %ld to %ld, got '%s'", lo, hi,
		    v ? v : "");
		return -1;
	}
	*out = x;
	return 0;
}

int
cmdline_parse_double(const char *v, double lo, int lo_open, double hi, double *out,
    char *why, size_t why_len)
{
	char *end;
	double x;

	errno = 0;
	x = v && *v ? strtod(v, &end) : 0.0;
	if (!v || !*v || errno || *end || !isfinite(x) || x > hi || x < lo || (lo_open && x <= lo)) {
		if (lo_open)
			snprintf(why, why_len, "needs a number greater than %g and at most %g, got '%s'",
			    lo, hi, v ? v : "");
		else
			snprintf(why, why_len, "needs a number from %g to %g, got '%s'", lo, hi,
			    v ? v : "");
		return -1;
	}
	*out = x;
	return 0;
}

int
cmdline_long(const struct cmdline *c, const char *v, long lo, long hi, long *out)
{
	char why[256];
	if (!cmdline_parse_long(v, lo, hi, out, why, sizeof(why)))
		return 0;
	cmdline_err(c, "%s %s", c->flag, why);
	return -1;
}

int
cmdline_double(const struct cmdline *c, const char *v, double lo, int lo_open, double hi,
    double *out)
{
	char why[256];
	if (!cmdline_parse_double(v, lo, lo_open, hi, out, why, sizeof(why)))
		return 0;
	cmdline_err(c, "%s %s", c->flag, why);
	return -1;
}
