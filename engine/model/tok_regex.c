/*
 * tok_regex.c: the small regex matcher of the pre-tokenizers that llama.cpp
 * runs through std::regex (DeepSeek's, Falcon's), with its semantics.
 *
 * llama.cpp (unicode.cpp, unicode_regex_split) runs such a pattern in one of
 * two ways, and we model both rather than Unicode regex semantics:
 *  - "collapsed", when the pattern names \p{N}, \p{L}, \p{P}, \p{M} or \p{S}:
 *    every code point of the text becomes one byte (ASCII stays itself;
 *    others become 0x0B when whitespace, else 0xD1 N, 0xD2 L, 0xD3 P, 0xD4 M,
 *    0xD5 S, 0xD0 anything else) and \p{X} becomes a class of that byte
 *    plus a fixed ASCII list (note: \p{S} lacks '~' there, so it does here);
 *  - "wide" otherwise: the code points themselves, non-ASCII whitespace
 *    replaced by 0x0B, \s meaning ASCII whitespace only (std::wregex in the
 *    "C" locale).
 * The pattern is compiled to a program for a backtracking machine (split
 * instructions that prefer their first branch), which finds the same match
 * as ECMAScript's leftmost, first-alternative, greedy search.  A pattern
 * that begins with an unbounded loop over a class skips, after a failed
 * attempt, the rest of that class's run: an attempt from inside the run can
 * only end where one from its start could, so it fails too; this keeps
 * "\s+$" linear over long space runs.
 *
 * Supported syntax (what the vocabularies need): literals, . is refused,
 * [...] and [^...] with ranges and \s \S \d \w \r \n \t \f \v \p{X} inside,
 * \-escapes, (...), (?:...), (?=...), (?!...), |, ?, *, +, {n}, {n,},
 * {n,m}, and $ (end of the piece).  A pattern outside this is refused at
 * compile time, so an unsupported pre-tokenizer fails loudly at load.
 */
#include <stdlib.h> /* for malloc */
#include <string.h> /* for strstr */

#include "common/grow.h"
#include "engine/model/tok_internal.h"

/* Machine instructions. */
enum eng_rx_op {
	RX_CLASS, /* one symbol in class arg */
	RX_SPLIT, /* try x first, then y */
	RX_JMP,   /* go to x */
	RX_END,   /* at the end of the piece */
	RX_LOOK,  /* lookahead: sub-program at x..y-1, negative if arg */
	RX_MATCH
};

struct eng_rx_inst {
	uint8_t op;
	int32_t x, y, arg;
};

/* A class: inclusive ranges (sorted and merged once compiled, for a
 * binary search) and a bitmap of its ASCII members; negated or not. */
struct eng_rx_class {
	uint32_t *lo, *hi;
	int n, cap;
	int neg;
	uint64_t ascii[2];
};

struct eng_rx {
	int collapsed;
	struct eng_rx_inst *prog;
	int n_prog;
	int64_t cap_prog;
	struct eng_rx_class *cls;
	int n_cls;
	int64_t cap_cls;
	int lead_class; /* class of a leading unbounded loop (see above), or -1 */
};

/* Parser state: the pattern as code points. */
struct eng_rx_parse {
	struct eng_rx *rx;
	const uint32_t *p;
	size_t n, i;
	int err;
	const char *what;
};

#define RX_MAX_PROG 100000 /* bound on a compiled program (our patterns are small) */

/* Collapsed bytes of the Unicode classes. */
#define RX_C_OTHER 0xD0
#define RX_C_N 0xD1
#define RX_C_L 0xD2
#define RX_C_P 0xD3
#define RX_C_M 0xD4
#define RX_C_S 0xD5

/* ------------------------------------------------------------------------ */
/* Program building                                                          */

static int
rx_emit(struct eng_rx_parse *ps, int op, int32_t x, int32_t y, int32_t arg)
{
	struct eng_rx_inst *np;
	struct eng_rx *rx = ps->rx;

	if (ps->err)
		return -1;
	if (rx->n_prog >= RX_MAX_PROG) {
		ps->err = ENG_ERR_TOKENIZER;
		ps->what = "pattern too large";
		return -1;
	}
	if (!(np = kv_grow(rx->prog, rx->n_prog, &rx->cap_prog, 64, sizeof(*np)))) {
		ps->err = ENG_ERR_NOMEM;
		return -1;
	}
	rx->prog = np;
	rx->prog[rx->n_prog].op = (uint8_t)op;
	rx->prog[rx->n_prog].x = x;
	rx->prog[rx->n_prog].y = y;
	rx->prog[rx->n_prog].arg = arg;
	return rx->n_prog++;
}

static int
rx_class_new(struct eng_rx_parse *ps)
{
	struct eng_rx *rx = ps->rx;
	struct eng_rx_class *np;

	if (ps->err)
		return -1;
	if (!(np = kv_grow(rx->cls, rx->n_cls, &rx->cap_cls, 16, sizeof(*np)))) {
		ps->err = ENG_ERR_NOMEM;
		return -1;
	}
	rx->cls = np;
	memset(&rx->cls[rx->n_cls], 0, sizeof(rx->cls[0]));
	return rx->n_cls++;
}

static void
rx_class_add(struct eng_rx_parse *ps, int c, uint32_t lo, uint32_t hi)
{
	struct eng_rx_class *k;

	if (ps->err || c < 0)
		return;
	k = &ps->rx->cls[c];
	if (k->n == k->cap) {
		int nc = k->cap ? 2 * k->cap : 8;
		uint32_t *a = realloc(k->lo, (size_t)nc * sizeof(*a));
		uint32_t *b;
		if (!a) {
			ps->err = ENG_ERR_NOMEM;
			return;
		}
		k->lo = a;
		b = realloc(k->hi, (size_t)nc * sizeof(*b));
		if (!b) {
			ps->err = ENG_ERR_NOMEM;
			return;
		}
		k->hi = b;
		k->cap = nc;
	}
	k->lo[k->n] = lo;
	k->hi[k->n] = hi;
	k->n++;
}

/* \p{X}'s members in collapsed mode: its category symbol, then its ASCII
 * ranges, each two characters (first, last). */
static const struct {
	char x;
	uint32_t sym;
	const char *ranges;
} rx_ucats[] = {
	{ 'N', RX_C_N, "09" },
	{ 'L', RX_C_L, "AZaz" },
	{ 'P', RX_C_P, "!#%*,/:;?@[]__{{}}" },
	{ 'M', RX_C_M, "" },
	{ 'S', RX_C_S, "$$++<>^^``||" }, /* no ~, as llama.cpp */
};

/* Add \p{X}'s members (collapsed mode) to class c; 0 if X is unknown. */
static int
rx_class_add_ucat(struct eng_rx_parse *ps, int c, uint32_t x)
{
	const char *r;
	size_t i;

	for (i = 0; i < sizeof(rx_ucats) / sizeof(rx_ucats[0]); i++) {
		if ((uint32_t)rx_ucats[i].x != x)
			continue;
		rx_class_add(ps, c, rx_ucats[i].sym, rx_ucats[i].sym);
		for (r = rx_ucats[i].ranges; *r; r += 2)
			rx_class_add(ps, c, (unsigned char)r[0], (unsigned char)r[1]);
		return 1;
	}
	return 0;
}

static int
rx_fail(struct eng_rx_parse *ps, const char *what)
{
	if (!ps->err) {
		ps->err = ENG_ERR_TOKENIZER;
		ps->what = what;
	}
	return -1;
}

/* An escape after '\' (ps->i at the letter) into class c: 1 if it was a
 * class escape (\s \d \w \p{X}), 0 if a literal (*lit set), -1 on error.
 * Negated class escapes (\S \D \W) set *neg. */
static int
rx_escape(struct eng_rx_parse *ps, int c, uint32_t *lit, int *neg)
{
	uint32_t ch;

	*neg = 0;
	if (ps->i >= ps->n)
		return rx_fail(ps, "pattern ends in '\\'");
	ch = ps->p[ps->i++];
	switch (ch) {
	case 'S':
		*neg = 1;
		/* fall through */
	case 's':
		rx_class_add(ps, c, 0x09, 0x0D);
		rx_class_add(ps, c, 0x20, 0x20);
		return 1;
	case 'D':
		*neg = 1;
		/* fall through */
	case 'd':
		rx_class_add(ps, c, '0', '9');
		return 1;
	case 'W':
		*neg = 1;
		/* fall through */
	case 'w':
		rx_class_add(ps, c, '0', '9');
		rx_class_add(ps, c, 'A', 'Z');
		rx_class_add(ps, c, 'a', 'z');
		rx_class_add(ps, c, '_', '_');
		return 1;
	case 'p':
		if (ps->i + 2 < ps->n && ps->p[ps->i] == '{' && ps->p[ps->i + 2] == '}' &&
		    ps->rx->collapsed && rx_class_add_ucat(ps, c, ps->p[ps->i + 1])) {
			ps->i += 3;
			return 1;
		}
		return rx_fail(ps, "unsupported \\p{...}");
	case 'r':
		*lit = '\r';
		return 0;
	case 'n':
		*lit = '\n';
		return 0;
	case 't':
		*lit = '\t';
		return 0;
	case 'f':
		*lit = '\f';
		return 0;
	case 'v':
		*lit = '\v';
		return 0;
	default:
		if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9'))
			return rx_fail(ps, "unsupported escape");
		*lit = ch;
		return 0;
	}
}

/* A bracket expression (ps->i after '['); returns its class. */
static int
rx_bracket(struct eng_rx_parse *ps)
{
	int c = rx_class_new(ps);

	if (c < 0)
		return -1;
	if (ps->i < ps->n && ps->p[ps->i] == '^') {
		ps->rx->cls[c].neg = 1;
		ps->i++;
	}
	for (;;) {
		uint32_t lo, hi;
		int neg, k;
		if (ps->i >= ps->n)
			return rx_fail(ps, "unterminated [");
		if (ps->p[ps->i] == ']') { /* ECMAScript: "[]" is the empty class */
			ps->i++;
			return c;
		}
		lo = ps->p[ps->i++];
		if (lo == '\\') {
			k = rx_escape(ps, c, &lo, &neg);
			if (k < 0)
				return -1;
			if (k == 1) {
				if (neg)
					return rx_fail(ps, "negated class escape inside []");
				continue;
			}
		} else if (lo == '[') {
			return rx_fail(ps, "nested [");
		}
		hi = lo;
		if (ps->i + 1 < ps->n && ps->p[ps->i] == '-' && ps->p[ps->i + 1] != ']') {
			ps->i++;
			hi = ps->p[ps->i++];
			if (hi == '\\') {
				k = rx_escape(ps, c, &hi, &neg);
				if (k != 0)
					return rx_fail(ps, "class escape as a range end");
			}
			if (hi < lo)
				return rx_fail(ps, "range out of order");
		}
		rx_class_add(ps, c, lo, hi);
	}
}

static int rx_alt(struct eng_rx_parse *ps);

/* One atom: emits its code; returns 0, or -1 on error. *lead gets the class
 * of a plain class atom (for lead_class), else -1. */
static int
rx_atom(struct eng_rx_parse *ps, int *lead)
{
	uint32_t ch = ps->p[ps->i++];
	int c, neg, k;
	uint32_t lit;

	*lead = -1;
	switch (ch) {
	case '(':
		if (ps->i + 1 < ps->n && ps->p[ps->i] == '?') {
			uint32_t kind = ps->p[ps->i + 1];
			int look, start, end;
			ps->i += 2;
			if (kind == ':') {
				if (rx_alt(ps) < 0)
					return -1;
			} else if (kind == '=' || kind == '!') {
				look = rx_emit(ps, RX_LOOK, 0, 0, kind == '!');
				start = ps->rx->n_prog;
				if (rx_alt(ps) < 0 || rx_emit(ps, RX_MATCH, 0, 0, 0) < 0)
					return -1;
				end = ps->rx->n_prog;
				ps->rx->prog[look].x = start;
				ps->rx->prog[look].y = end;
			} else {
				return rx_fail(ps, "unsupported (?");
			}
		} else if (rx_alt(ps) < 0) {
			return -1;
		}
		if (ps->i >= ps->n || ps->p[ps->i] != ')')
			return rx_fail(ps, "missing )");
		ps->i++;
		return 0;
	case '[':
		c = rx_bracket(ps);
		if (c < 0)
			return -1;
		*lead = c;
		return rx_emit(ps, RX_CLASS, 0, 0, c) < 0 ? -1 : 0;
	case '$':
		return rx_emit(ps, RX_END, 0, 0, 0) < 0 ? -1 : 0;
	case '.':
	case '^':
	case ')':
	case '|':
	case '?':
	case '*':
	case '+':
	case '{':
		return rx_fail(ps, "unsupported or misplaced metacharacter");
	case '\\':
		c = rx_class_new(ps);
		k = rx_escape(ps, c, &lit, &neg);
		if (k < 0)
			return -1;
		if (k == 0)
			rx_class_add(ps, c, lit, lit);
		else
			ps->rx->cls[c].neg = neg;
		*lead = c;
		return rx_emit(ps, RX_CLASS, 0, 0, c) < 0 ? -1 : 0;
	default:
		c = rx_class_new(ps);
		rx_class_add(ps, c, ch, ch);
		*lead = c;
		return rx_emit(ps, RX_CLASS, 0, 0, c) < 0 ? -1 : 0;
	}
}

/* Decimal number at ps->i, or -1. */
static long
rx_number(struct eng_rx_parse *ps)
{
	long v = -1;

	while (ps->i < ps->n && ps->p[ps->i] >= '0' && ps->p[ps->i] <= '9') {
		v = (v < 0 ? 0 : v) * 10 + (long)(ps->p[ps->i++] - '0');
		if (v > 1000)
			return -1;
	}
	return v;
}

/* A sequence of quantified atoms up to '|' or ')'. *lead: the class of a
 * leading unbounded loop over one class, else -1. */
static int
rx_seq(struct eng_rx_parse *ps, int *lead_out)
{
	int first = 1;

	*lead_out = -1;
	while (ps->i < ps->n && ps->p[ps->i] != '|' && ps->p[ps->i] != ')') {
		int start = ps->rx->n_prog, end, lead, k;
		long mn = 1, mx = 1;

		if (rx_atom(ps, &lead) < 0)
			return -1;
		end = ps->rx->n_prog;
		if (ps->i < ps->n) {
			uint32_t q = ps->p[ps->i];
			if (q == '?' || q == '*' || q == '+') {
				ps->i++;
				mn = q == '+';
				mx = q == '?' ? 1 : -1;
			} else if (q == '{') {
				ps->i++;
				mn = rx_number(ps);
				mx = mn;
				if (ps->i < ps->n && ps->p[ps->i] == ',') {
					ps->i++;
					mx = (ps->i < ps->n && ps->p[ps->i] == '}') ? -1 : rx_number(ps);
					if (mx == -1 && ps->p[ps->i] != '}')
						return rx_fail(ps, "bad {n,m}");
				}
				if (mn < 0 || ps->i >= ps->n || ps->p[ps->i] != '}' ||
				    (mx >= 0 && mx < mn))
					return rx_fail(ps, "bad {n,m}");
				ps->i++;
			}
			if (ps->i < ps->n && (ps->p[ps->i] == '?' || ps->p[ps->i] == '+') &&
			    (q == '?' || q == '*' || q == '+' || q == '{'))
				return rx_fail(ps, "lazy or possessive quantifier");
		}
		if (first && mn >= 1 && mx < 0 && lead >= 0)
			*lead_out = lead;
		first = 0;
		if (mn == 1 && mx == 1)
			continue;
		/* the atom is at [start, end): move it out, then lay out
		 * mn copies, then (mx - mn) optional copies or a loop */
		{
			int len = end - start, body, s;
			struct eng_rx_inst *save = malloc((size_t)len * sizeof(*save));
			if (!save) {
				ps->err = ENG_ERR_NOMEM;
				return -1;
			}
			memcpy(save, ps->rx->prog + start, (size_t)len * sizeof(*save));
			ps->rx->n_prog = start;
			for (k = 0; k < mn && !ps->err; k++) {
				body = ps->rx->n_prog;
				for (s = 0; s < len; s++) {
					struct eng_rx_inst in = save[s];
					if (in.op == RX_SPLIT || in.op == RX_JMP || in.op == RX_LOOK) {
						in.x += body - start;
						in.y += body - start;
					}
					rx_emit(ps, in.op, in.x, in.y, in.arg);
				}
			}
			if (mx < 0) {
				/* L: split body, out; body; jmp L */
				int split = rx_emit(ps, RX_SPLIT, 0, 0, 0);
				body = ps->rx->n_prog;
				for (s = 0; s < len && !ps->err; s++) {
					struct eng_rx_inst in = save[s];
					if (in.op == RX_SPLIT || in.op == RX_JMP || in.op == RX_LOOK) {
						in.x += body - start;
						in.y += body - start;
					}
					rx_emit(ps, in.op, in.x, in.y, in.arg);
				}
				rx_emit(ps, RX_JMP, split, 0, 0);
				if (!ps->err) {
					ps->rx->prog[split].x = body;
					ps->rx->prog[split].y = ps->rx->n_prog;
				}
			} else {
				for (k = (int)mn; k < mx && !ps->err; k++) {
					int split = rx_emit(ps, RX_SPLIT, 0, 0, 0);
					body = ps->rx->n_prog;
					for (s = 0; s < len; s++) {
						struct eng_rx_inst in = save[s];
						if (in.op == RX_SPLIT || in.op == RX_JMP ||
						    in.op == RX_LOOK) {
							in.x += body - start;
							in.y += body - start;
						}
						rx_emit(ps, in.op, in.x, in.y, in.arg);
					}
					if (!ps->err) {
						ps->rx->prog[split].x = body;
						ps->rx->prog[split].y = ps->rx->n_prog;
					}
				}
			}
			free(save);
		}
		if (ps->err)
			return -1;
	}
	return 0;
}

/* Alternatives separated by '|': split a, (split b, c)...  The lead class
 * is kept only for a pattern without alternatives. */
static int
rx_alt(struct eng_rx_parse *ps)
{
	int split = -1, jmps[64], n_jmps = 0, lead, k, alts = 0;

	for (;;) {
		int here = ps->rx->n_prog;
		if (ps->i < ps->n && ps->p[ps->i] == '|') {
			/* empty alternative: never in our patterns */
			return rx_fail(ps, "empty alternative");
		}
		if (rx_seq(ps, &lead) < 0)
			return -1;
		alts++;
		if (split >= 0)
			ps->rx->prog[split].y = here;
		if (ps->i < ps->n && ps->p[ps->i] == '|') {
			int s, body;
			ps->i++;
			if (n_jmps == (int)(sizeof(jmps) / sizeof(jmps[0])))
				return rx_fail(ps, "too many alternatives");
			jmps[n_jmps++] = rx_emit(ps, RX_JMP, 0, 0, 0);
			/* put a split in front of the alternative just emitted */
			s = rx_emit(ps, RX_SPLIT, 0, 0, 0);
			if (ps->err)
				return -1;
			/* move [here, s) one down, the split first */
			{
				struct eng_rx_inst sp = ps->rx->prog[s];
				memmove(ps->rx->prog + here + 1, ps->rx->prog + here,
				    (size_t)(s - here) * sizeof(sp));
				for (body = here + 1; body <= s; body++) {
					struct eng_rx_inst *in = &ps->rx->prog[body];
					if (in->op == RX_SPLIT || in->op == RX_JMP || in->op == RX_LOOK) {
						in->x += 1;
						in->y += 1;
					}
				}
				for (k = 0; k < n_jmps; k++)
					jmps[k] += (jmps[k] >= here) ? 1 : 0;
				ps->rx->prog[here] = sp;
				ps->rx->prog[here].x = here + 1;
				split = here;
			}
			continue;
		}
		break;
	}
	for (k = 0; k < n_jmps; k++)
		ps->rx->prog[jmps[k]].x = ps->rx->n_prog;
	if (ps->rx->n_prog == 0 || alts > 1)
		lead = -1;
	ps->rx->lead_class = alts == 1 ? lead : -1;
	return 0;
}

void
eng_rx_free(struct eng_rx *rx)
{
	int i;

	if (!rx)
		return;
	for (i = 0; i < rx->n_cls; i++) {
		free(rx->cls[i].lo);
		free(rx->cls[i].hi);
	}
	free(rx->cls);
	free(rx->prog);
	free(rx);
}

/* Sort and merge a class's ranges; fill its ASCII bitmap. */
static void
rx_class_finish(struct eng_rx_class *k)
{
	int i, j, m = 0;
	uint32_t c;

	for (i = 1; i < k->n; i++) /* insertion sort: classes are small */
		for (j = i; j > 0 && k->lo[j] < k->lo[j - 1]; j--) {
			uint32_t a = k->lo[j], b = k->hi[j];
			k->lo[j] = k->lo[j - 1];
			k->hi[j] = k->hi[j - 1];
			k->lo[j - 1] = a;
			k->hi[j - 1] = b;
		}
	for (i = 0; i < k->n; i++) {
		if (m > 0 && k->lo[i] <= k->hi[m - 1] + 1) {
			if (k->hi[i] > k->hi[m - 1])
				k->hi[m - 1] = k->hi[i];
			continue;
		}
		k->lo[m] = k->lo[i];
		k->hi[m] = k->hi[i];
		m++;
	}
	k->n = m;
	k->ascii[0] = k->ascii[1] = 0;
	for (i = 0; i < k->n; i++)
		for (c = k->lo[i]; c <= k->hi[i] && c < 128; c++)
			k->ascii[c >> 6] |= (uint64_t)1 << (c & 63);
}

/* Compile pattern (UTF-8). */
int
eng_rx_compile(const char *pattern, struct eng_rx **out, char *why, size_t why_len)
{
	struct eng_rx_parse ps;
	struct eng_rx *rx;
	uint32_t *cps;
	size_t len = strlen(pattern), i = 0, n = 0, adv;
	static const char *const ucats[] = { "\\p{N}", "\\p{L}", "\\p{P}", "\\p{M}", "\\p{S}" };

	*out = NULL;
	rx = calloc(1, sizeof(*rx));
	cps = malloc((len + 1) * sizeof(*cps));
	if (!rx || !cps) {
		free(rx);
		free(cps);
		return ENG_ERR_NOMEM;
	}
	for (i = 0; i < sizeof(ucats) / sizeof(ucats[0]); i++)
		if (strstr(pattern, ucats[i]))
			rx->collapsed = 1;
	for (i = 0; i < len; i += adv)
		cps[n++] = eng_utf8_decode((const uint8_t *)pattern + i, len - i, &adv);
	memset(&ps, 0, sizeof(ps));
	ps.rx = rx;
	ps.p = cps;
	ps.n = n;
	rx->lead_class = -1;
	if (rx->collapsed)
		for (i = 0; i < n; i++)
			if (cps[i] >= 0x80)
				rx_fail(&ps, "non-ASCII in a pattern with \\p{...}");
	if (!ps.err && n == 0)
		rx_fail(&ps, "empty pattern");
	if (!ps.err)
		rx_alt(&ps);
	if (!ps.err && ps.i < ps.n)
		rx_fail(&ps, "unbalanced )");
	rx_emit(&ps, RX_MATCH, 0, 0, 0);
	free(cps);
	if (ps.err) {
		int rc = ps.err;
		eng_rx_free(rx);
		if (rc == ENG_ERR_NOMEM)
			return rc;
		return eng_fail(why, why_len, rc, "pre-tokenizer regex '%s': %s", pattern,
		    ps.what ? ps.what : "invalid");
	}
	for (i = 0; i < (size_t)rx->n_cls; i++)
		rx_class_finish(&rx->cls[i]);
	*out = rx;
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Matching                                                                  */

/* The symbol the pattern sees for code point cp (see the top). */
uint32_t
eng_rx_symbol(const struct eng_rx *rx, uint32_t cp)
{
	enum eng_ucat c;

	if (cp < 0x80)
		return cp;
	c = eng_ucd_class(cp);
	if (c == ENG_UCAT_SPACE)
		return 0x0B;
	if (!rx->collapsed)
		return cp;
	switch (c) {
	case ENG_UCAT_NUMBER:
		return RX_C_N;
	case ENG_UCAT_LETTER:
		return RX_C_L;
	case ENG_UCAT_PUNCT:
		return RX_C_P;
	case ENG_UCAT_MARK:
		return RX_C_M;
	case ENG_UCAT_SYMBOL:
		return RX_C_S;
	case ENG_UCAT_OTHER:
	case ENG_UCAT_SPACE:
	default:
		return RX_C_OTHER;
	}
}

static int
rx_in_class(const struct eng_rx_class *k, uint32_t s)
{
	int lo = 0, hi = k->n;

	if (s < 128)
		return (int)((k->ascii[s >> 6] >> (s & 63)) & 1) != k->neg;
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		if (s < k->lo[mid])
			hi = mid;
		else if (s > k->hi[mid])
			lo = mid + 1;
		else
			return !k->neg;
	}
	return k->neg;
}

/* A backtrack point. */
struct rx_thread {
	int32_t pc;
	size_t pos;
};

/* Backtracking run of prog from pc at pos over sym[0..n); the end of the
 * first match found, or (size_t)-1.  stack: scratch, grown as needed. */
static size_t
rx_run(const struct eng_rx *rx, const uint32_t *sym, size_t n, int32_t pc, size_t pos,
    struct rx_thread **stack, size_t *cap, int *err)
{
	size_t sp = 0;

	for (;;) {
		const struct eng_rx_inst *in = &rx->prog[pc];
		int ok = 1;

		switch (in->op) {
		case RX_CLASS:
			if (pos < n && rx_in_class(&rx->cls[in->arg], sym[pos])) {
				pos++;
				pc++;
			} else {
				ok = 0;
			}
			break;
		case RX_SPLIT:
			if (sp == *cap) {
				size_t nc = *cap ? 2 * *cap : 64;
				struct rx_thread *ns = realloc(*stack, nc * sizeof(*ns));
				if (!ns) {
					*err = ENG_ERR_NOMEM;
					return (size_t)-1;
				}
				*stack = ns;
				*cap = nc;
			}
			(*stack)[sp].pc = in->y;
			(*stack)[sp].pos = pos;
			sp++;
			pc = in->x;
			break;
		case RX_JMP:
			pc = in->x;
			break;
		case RX_END:
			if (pos == n)
				pc++;
			else
				ok = 0;
			break;
		case RX_LOOK: {
			/* the sub-program runs on its own stack: lookaheads are rare
			 * and short in our patterns (one symbol) */
			struct rx_thread *sub = NULL;
			size_t sub_cap = 0;
			size_t r = rx_run(rx, sym, n, in->x, pos, &sub, &sub_cap, err);
			free(sub);
			if (*err)
				return (size_t)-1;
			if ((r != (size_t)-1) != (in->arg != 0))
				pc = in->y;
			else
				ok = 0;
			break;
		}
		case RX_MATCH:
		default:
			return pos;
		}
		if (!ok) {
			if (sp == 0)
				return (size_t)-1;
			sp--;
			pc = (*stack)[sp].pc;
			pos = (*stack)[sp].pos;
		}
	}
}

/* Cut the piece sym[0..n) (already mapped) by rx, llama.cpp's
 * unicode_regex_split_stl: every match is a piece, and so is every gap
 * between matches.  Each piece's length goes to sink(arg, len). */
int
eng_rx_pieces(const struct eng_rx *rx, const uint32_t *sym, size_t n,
    void (*sink)(void *arg, size_t len), void *arg)
{
	struct rx_thread *stack = NULL;
	size_t cap = 0, pos = 0, done = 0;
	int err = 0;

	while (pos < n) {
		size_t end = rx_run(rx, sym, n, 0, pos, &stack, &cap, &err);
		if (err)
			break;
		if (end == (size_t)-1 || end == pos) {
			/* no (non-empty) match here; skip the rest of a run that
			 * cannot match either (see the top) */
			if (end == (size_t)-1 && rx->lead_class >= 0 &&
			    rx_in_class(&rx->cls[rx->lead_class], sym[pos]))
				while (pos + 1 < n && rx_in_class(&rx->cls[rx->lead_class], sym[pos + 1]))
					pos++;
			pos++;
			continue;
		}
		if (pos > done)
			sink(arg, pos - done);
		sink(arg, end - pos);
		done = pos = end;
	}
	if (!err && done < n)
		sink(arg, n - done);
	free(stack);
	return err;
}
