/*
 * cmdline.h: getopt_long in our own words, for kvsnap and kvsnapd alike.
 * getopt's messages are off (opterr = 0); every usage error names the
 * argument and the fix on one line ("kvsnap query: unknown option
 * '--budgett' (did you mean --budget?)", "kvsnapd: --chunk needs a whole
 * number from 1 to 65536, got 'x'"), then one line "run 'PROG -h' for
 * help".  Also the value parsers whose error text is that fix
 * ("needs a whole number from LO to HI, got 'V'").
 */
#ifndef COMMON_CMDLINE_H
#define COMMON_CMDLINE_H

#include <getopt.h>
#include <stddef.h>

struct cmdline {
	const char *prog;              /* message prefix: "kvsnap query", "kvsnapd" */
	const char *help;              /* the help command: "kvsnap query -h" */
	const char *shortopts;         /* getopt's (a leading '+': stop at an operand) */
	const struct option *longopts;
	/* options of another mode of the program (NULL: none): given here,
	 * they are named with hint ("%s": the option, e.g. "engine settings
	 * such as %s belong to kvsnapd or --local") */
	const struct option *elsewhere;
	const char *hint;
	/* set by cmdline_next */
	char flag[64];                 /* the option just returned: "-n", "--budget" */
	char optstring[128];
};

/* getopt_long's next option (optarg set), -1 after the last; '?' when the
 * option is unknown, ambiguous, lacks its value or has one it takes none
 * of, with the message printed. */
int cmdline_next(struct cmdline *c, int argc, char **argv);

/* "PROG: <message>\nrun 'HELP' for help\n" on stderr. */
void cmdline_err(const struct cmdline *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The text of the last cmdline_err (without the program), "" if none. */
const char *cmdline_last_error(void);

/* Values: 0, or -1 with why = "needs a whole number from LO to HI, got 'V'"
 * (a number: "needs a number from LO to HI"; lo_open: "greater than LO and
 * at most HI"). */
int cmdline_parse_long(const char *v, long lo, long hi, long *out, char *why, size_t why_len);
int cmdline_parse_double(const char *v, double lo, int lo_open, double hi, double *out,
    char *why, size_t why_len);
/* The same, with "PROG: FLAG <why>" and the help line printed (c->flag). */
int cmdline_long(const struct cmdline *c, const char *v, long lo, long hi, long *out);
int cmdline_double(const struct cmdline *c, const char *v, double lo, int lo_open, double hi,
    double *out);

/* The word of names[0..n) nearest to s by edit distance, when it is close
 * enough to be a typo (at most 1 edit for short words, a third of the
 * length for longer ones); NULL otherwise. */
const char *cmdline_nearest(const char *s, const char *const *names, size_t n);

#endif /* COMMON_CMDLINE_H */
