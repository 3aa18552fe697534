/*
 * cli_args.c: kvsnap's command line, parsed in one place: the global flags
 * (-s/--socket, --json, --state, -m/--model, --backend, -h/--help,
 * --version) before or after the command, each command's own options
 * (its getopt table), usage errors in common/cmdline.c's words, operand
 * counts, and the sampling and profile flags several commands share.
 *
 * A global flag that a command would not use is an error naming why
 * ("--socket does not apply to `kvsnap tokenize` (it runs without
 * kvsnapd)"), never silently ignored: a flag that does nothing is a
 * mistake the user wants to hear about.  Environment variables
 * ($KVSNAP_SOCKET, $KVSNAP_STATE, $KVSNAP_MODEL, $KVSNAP_BACKEND) are the
 * place for settings that should hold for every command.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "clients/cli.h"
#include "service/service.h"
#include "service/service.h"

struct cli_global cli_g;

/* The globals' getopt values: above any command's own (chars). */
enum {
	CLI_V_SOCKET = 0x100, CLI_V_JSON, CLI_V_STATE, CLI_V_MODEL, CLI_V_BACKEND, CLI_V_HELP,
	CLI_V_VERSION
};

static const struct option cli_global_opts[] = {
	{ "socket", required_argument, NULL, CLI_V_SOCKET },
	{ "json", no_argument, NULL, CLI_V_JSON },
	{ "state", required_argument, NULL, CLI_V_STATE },
	{ "model", required_argument, NULL, CLI_V_MODEL },
	{ "backend", required_argument, NULL, CLI_V_BACKEND },
	{ "help", no_argument, NULL, CLI_V_HELP },
	{ "version", no_argument, NULL, CLI_V_VERSION },
	{ NULL, 0, NULL, 0 },
};
#define CLI_GLOBAL_SHORT "s:m:h"

/* One global flag (val) with its value; 1 if val is not a global. */
static int
cli_global_set(int val, const char *arg)
{
	switch (val) {
	case 's': case CLI_V_SOCKET: cli_g.socket = arg; cli_g.given |= CLI_G_SOCKET; return 0;
	case CLI_V_JSON: cli_g.json = 1; cli_g.given |= CLI_G_JSON; return 0;
	case CLI_V_STATE: cli_g.state = arg; cli_g.given |= CLI_G_STATE; return 0;
	case 'm': case CLI_V_MODEL: cli_g.model = arg; cli_g.given |= CLI_G_MODEL; return 0;
	case CLI_V_BACKEND: cli_g.backend = arg; cli_g.given |= CLI_G_BACKEND; return 0;
	case 'h': case CLI_V_HELP: cli_g.help = 1; return 0;
	case CLI_V_VERSION:
		svc_version(stdout, "kvsnap");
		exit(CLI_EXIT_OK);
	default:
		return 1;
	}
}

int
cli_global_lead(int argc, char **argv)
{
	struct cmdline cl = { .prog = "kvsnap", .help = "kvsnap -h",
		.shortopts = "+" CLI_GLOBAL_SHORT, .longopts = cli_global_opts };
	int c;

	memset(&cli_g, 0, sizeof(cli_g));
	while ((c = cmdline_next(&cl, argc, argv)) != -1)
		if (c == '?' || cli_global_set(c, optarg))
			return -1;
	return optind;
}

/* The merged table: the command's options, then the globals. */
static int
cli_merge(struct cli_opts *o)
{
	size_t n = 0, i;
	const struct option *p;

	for (p = o->longopts; p && p->name; p++) {
		if (n + 1 >= sizeof(o->all) / sizeof(o->all[0]) - 8 || p->val == 's' ||
		    p->val == 'm' || p->val == 'h' || p->val >= CLI_V_SOCKET) {
			/* a programming error: the table collides with the globals */
			cli_err("internal error: option table of %s (--%s)", o->cl.prog, p->name);
			return -1;
		}
		o->all[n++] = *p;
	}
	for (i = 0; cli_global_opts[i].name; i++)
		o->all[n++] = cli_global_opts[i];
	memset(&o->all[n], 0, sizeof(o->all[n]));
	snprintf(o->shorts, sizeof(o->shorts), "%s" CLI_GLOBAL_SHORT,
	    o->shortopts ? o->shortopts : "");
	return 0;
}

int
cli_getopt(struct cli_opts *o, int argc, char **argv)
{
	int c;

	if (!o->started) {
		o->started = 1;
		cli_g.cmd = argv[0];
		snprintf(o->prog, sizeof(o->prog), "kvsnap %s", argv[0]);
		snprintf(o->help, sizeof(o->help), "kvsnap %s -h", argv[0]);
		o->cl = (struct cmdline){ .prog = o->prog, .help = o->help, .shortopts = o->shorts,
			.longopts = o->all, .elsewhere = o->elsewhere, .hint = o->hint };
		if (cli_merge(o))
			return '?';
	}
	for (;;) {
		if (cli_g.help) { /* -h before the command, or here */
			o->usage(stdout, argv[0]);
			exit(CLI_EXIT_OK);
		}
		c = cmdline_next(&o->cl, argc, argv);
		if (c == -1 || c == '?' || cli_global_set(c, optarg))
			return c;
	}
}

void
cli_usage_err(const struct cli_opts *o, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s: %s\nrun '%s' for help\n", o->prog, msg, o->help);
	cli_json_note(msg); /* --json: the error event's message */
}

int
cli_long(const struct cli_opts *o, const char *v, long lo, long hi, long *out)
{
	return cmdline_long(&o->cl, v, lo, hi, out);
}

int
cli_double(const struct cli_opts *o, const char *v, double lo, int lo_open, double hi,
    double *out)
{
	return cmdline_double(&o->cl, v, lo, lo_open, hi, out);
}

/* Why a global flag does nothing for this command. */
static const char *
cli_why_not(const struct cli_opts *o, unsigned bit)
{
	int daemon = (o->globals & CLI_G_SOCKET) != 0; /* talks to kvsnapd */
	switch (bit) {
	case CLI_G_SOCKET:
		return "it runs without kvsnapd";
	case CLI_G_STATE:
		return daemon ? "kvsnapd's own --state is its store; add --local to use DIR here" :
		    "it uses no store";
	case CLI_G_MODEL:
		return daemon ? "kvsnapd's own --model is the daemon's model; add --local to run "
		    "GGUF here" : "it runs no model";
	case CLI_G_BACKEND:
		return daemon ? "kvsnapd's own --backend says where its model runs; add --local to "
		    "run here" : "it runs no model";
	default:
		return "it has no JSON output";
	}
}

int
cli_operands(struct cli_opts *o, int argc, char **argv, int min, int max)
{
	static const struct { unsigned bit; const char *flag; } flags[] = {
		{ CLI_G_SOCKET, "--socket" }, { CLI_G_JSON, "--json" }, { CLI_G_STATE, "--state" },
		{ CLI_G_MODEL, "--model" }, { CLI_G_BACKEND, "--backend" },
	};
	int n = argc - optind, i;
	char why[512];

	for (i = 0; i < (int)(sizeof(flags) / sizeof(flags[0])); i++)
		if (cli_g.given & flags[i].bit & ~o->globals) {
			cli_usage_err(o, "%s does not apply to `%s` (%s)", flags[i].flag, o->prog,
			    cli_why_not(o, flags[i].bit));
			return CLI_EXIT_USAGE;
		}
	if (n < min) {
		/* the operand missing: word n of "DOC QUESTION..." without [ ] ... */
		const char *w = o->operands ? o->operands : "";
		size_t len;
		for (i = 0; i < n && *w; i++) {
			w += strcspn(w, " ");
			w += strspn(w, " ");
		}
		len = strcspn(w, " ");
		while (len && (w[len - 1] == '.' || w[len - 1] == ']'))
			len--;
		if (*w == '[')
			w++, len--;
		cli_usage_err(o, "missing %.*s (%s %s)", (int)len, w, o->prog,
		    o->operands ? o->operands : "");
		return CLI_EXIT_USAGE;
	}
	if (max >= 0 && n > max) {
		cli_usage_err(o, "unexpected argument '%s' (%s%s%s)", argv[optind + max], o->prog,
		    o->operands && *o->operands ? " " : "", o->operands ? o->operands : "");
		return CLI_EXIT_USAGE;
	}
	if ((o->globals & CLI_G_BACKEND) && !o->backend_own) {
		/* in-process model work: --backend, else $KVSNAP_BACKEND, else cpu */
		if (cli_g.backend && svc_use_backend(cli_g.backend, why, sizeof(why))) {
			cli_err("backend %s: %s", cli_g.backend, why);
			return CLI_EXIT_NO_BACKEND;
		}
		if (!cli_g.backend && svc_use_backend(NULL, why, sizeof(why))) {
			cli_err("backend %s: %s", getenv("KVSNAP_BACKEND"), why);
			return CLI_EXIT_NO_BACKEND;
		}
	}
	return CLI_EXIT_OK;
}

const char *
cli_model(void)
{
	return cli_g.model ? cli_g.model : cli_default_model();
}

char *
cli_join(int n, char **words)
{
	size_t len = 1, k = 0;
	char *s;
	int i;

	for (i = 0; i < n; i++)
		len += strlen(words[i]) + 1;
	if (!(s = malloc(len)))
		return NULL;
	for (i = 0; i < n; i++) {
		size_t w = strlen(words[i]);
		if (i)
			s[k++] = ' ';
		memcpy(s + k, words[i], w);
		k += w;
	}
	s[k] = 0;
	return s;
}

int
cli_blank(int n, char **words)
{
	int i;
	const char *p;
	for (i = 0; i < n; i++)
		for (p = words[i]; *p; p++)
			if (!strchr(" \t\n\r\v\f", *p))
				return 0;
	return 1;
}

int
cli_sample_flag(const struct cli_opts *o, int c, const char *v, struct cli_sample *s)
{
	long seed;
	switch (c) {
	case CLI_O_TEMP:
		return cli_double(o, v, 0.0, 0, CLI_TEMP_MAX, &s->temp) ? -1 : 0;
	case CLI_O_TOP_P:
		return cli_double(o, v, 0.0, 1, 1.0, &s->top_p) ? -1 : 0;
	case CLI_O_SEED:
		if (cli_long(o, v, 0, CLI_SEED_MAX, &seed))
			return -1;
		s->seed = (uint64_t)seed;
		return 0;
	case CLI_O_STOP: { /* the service's own rule, as the daemon's */
		char why[128];
		_Static_assert(CLI_STOP_MAX == SVC_STOP_MAX, "the service's limit");
		if (s->n_stop == CLI_STOP_MAX) {
			cli_usage_err(o, "--stop: at most %d stop sequences", CLI_STOP_MAX);
			return -1;
		}
		s->stop[s->n_stop] = v;
		if (svc_stops_check(s->stop + s->n_stop, 1, why, sizeof(why))) {
			cli_usage_err(o, "--stop: each is 1 to %d bytes, got %zu", SVC_STOP_LEN_MAX,
			    strlen(v));
			return -1;
		}
		s->n_stop++;
		return 0;
	}
	default:
		return 1;
	}
}

int
cli_profile_flag(struct cli_opts *o, struct svc_conf *sc, const char *v)
{
	char why[256];
	const char *name = o->cl.flag + 2; /* "--budget" */
	int r = svc_profile_flag(sc, name, v, why, sizeof(why));
	if (r < 0)
		cli_usage_err(o, "%s %s", o->cl.flag, why);
	if (!strcmp(name, "budget"))
		o->budget_set = 1;
	if (!strcmp(name, "ratio"))
		o->ratio_set = 1;
	return r;
}

int
cli_profile_done(const struct cli_opts *o)
{
	if (o->budget_set && o->ratio_set) {
		cli_usage_err(o, "give --budget or --ratio, not both");
		return -1;
	}
	return 0;
}

const char *
cli_nearest_cmd(const char *name, const struct cli_cmd *cmds, size_t n)
{
	const char *names[64];
	size_t i;
	for (i = 0; i < n && i < 64; i++)
		names[i] = cmds[i].name;
	return cmdline_nearest(name, names, i);
}
