/*
 * config.c: kvsnapd's settings: built-in defaults, then the config file,
 * then command-line flags (DESIGN.md §7: flags override the file).
 *
 * The config file is plain text, one "key = value" per line; '#' starts a
 * comment; blank lines are ignored; keys are the long flag names without
 * the dashes (socket, state, model, heads, policy, opts, budget, chunk,
 * quant, threads, backend, workers, max-connections, max-connections-per-user,
 * idle-timeout, request-timeout, max-jobs, log-level, share, http, http-allow,
 * shared, shared-auth).  An
 * unknown key or a bad value is a startup error naming the line.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cmdline.h"
#include "common/paths.h"
#include "daemon/daemon_internal.h"
#include "daemon/http.h"

#define DCFG_EXIT_USAGE 1

static void
dcfg_usage(FILE *f)
{
	fprintf(f,
	    "usage: kvsnapd [--config FILE] [--socket PATH] [--state DIR] [--model GGUF]\n"
	    "               [--heads FILE] [--policy NAME] [--opts K=V,...] [--budget N]\n"
	    "               [--chunk N] [--quant Q] [--threads N] [--backend cpu|cuda] [--workers N]\n"
	    "               [--max-connections N] [--max-connections-per-user N] [--idle-timeout S]\n"
	    "               [--request-timeout S] [--max-jobs N] [--log-level L] [--share yes|no]\n"
	    "               [--http unix:PATH|127.0.0.1:PORT|[::1]:PORT|localhost:PORT]\n"
	    "               [--http-allow LIST]\n"
	    "               [--foreground] [--version]\n"
	    "               [--shared ADDR] [--shared-auth FILE]\n"
	    "  --config FILE       key = value settings (keys: the long flags); flags override\n"
	    "  --socket PATH       Unix socket (default $KVSNAP_SOCKET, else\n"
	    "                      $XDG_RUNTIME_DIR/kvsnap/kvsnapd.sock, else /run/kvsnap/kvsnapd.sock);\n"
	    "                      under systemd socket activation the passed socket is used\n"
	    "  --state DIR         the store (default $KVSNAP_STATE, else $STATE_DIRECTORY,\n"
	    "                      else $XDG_STATE_HOME/kvsnap, else ~/.local/state/kvsnap;\n"
	    "                      the last two are made with their parents, 0700)\n"
	    "  --model GGUF        the model (default $KVSNAP_MODEL, else the bundled one)\n"
	    "  --heads FILE        Locret retaining heads (policy locret; same as --opts heads=FILE)\n"
	    "  --policy NAME       eviction policy (default kvzip); --opts its options\n"
	    "  --ratio R           share of each document's units kept (default 1/2)\n"
	    "  --budget N          units kept per KV head per layer instead of a ratio\n"
	    "                      (the later of budget and ratio, file then flags, wins)\n"
	    "  --chunk N           ingest chunk size, 1 to 65536 (default 512)\n"
	    "  --quant Q           fp16, q8, q4, q4kc, q4h, q4kch, q6h, q5h, q3h,\n"
	    "                      k5v3h, k4v2h or k8v4h (default q6h)\n"
	    "  -t, --threads N     threads per model worker (default: all cores)\n"
	    "  --backend NAME      cpu (default) or cuda: where the model runs\n"
	    "  --workers N         model workers (default 2; one is kept free of ingests)\n"
	    "  --max-connections N (default 64)   --max-jobs N  queued jobs (default 64)\n"
	    "  --max-connections-per-user N  connections one uid may hold (default 16; every\n"
	    "                      uid, root included); over it: too_many_connections\n"
	    "  --idle-timeout S    close a connection with no request and no job in flight\n"
	    "                      for S seconds (default 60; 0: never); error code timeout\n"
	    "  --request-timeout S close a connection whose request line takes over S seconds\n"
	    "                      to arrive (default 10; 0: never); error code timeout; on\n"
	    "                      HTTP a whole request (headers and body)\n"
	    "  --log-level L       error, warn, info (default), debug\n"
	    "  --share yes|no      every ingest readable by every user of the socket (default\n"
	    "                      no: a document is its owners', root's and this user's)\n"
	    "  --http ADDR         also serve the OpenAI-compatible HTTP API (HTTP.md) on\n"
	    "                      unix:/PATH (mode 0660) or a loopback port (127.0.0.1:PORT,\n"
	    "                      [::1]:PORT, localhost:PORT); other addresses are refused.\n"
	    "                      Off by default\n"
	    "  --http-allow LIST   who may use it besides root and this daemon's user: socket-group\n"
	    "                      (default: the members of the main socket's group, as the\n"
	    "                      socket's mode allows), any (every local user), users (NAME,\n"
	    "                      UID) and groups (@NAME, @GID), separated by commas\n"
	    "  --shared ADDR       a shared snapshot tier behind the local store, shared by\n"
	    "                      every host (lmdb:DIR, redis-cluster:HOST:PORT,...): ingests\n"
	    "                      skip what it holds and copy what they store there; a local\n"
	    "                      miss is answered from its copy.  Unreachable: a warning,\n"
	    "                      the local store answers, retried later\n"
	    "  --shared-auth FILE  its credentials: lines \"user = NAME\", \"password = SECRET\" in a\n"
	    "                      file only this user may read (mode 0600); never on the\n"
	    "                      command line\n"
	    "  --foreground        accepted for compatibility: kvsnapd never daemonizes\n"
	    "  -h, --help          this help;  --version  version, formats and backends\n"
	    "SIGTERM, SIGINT and SIGHUP stop it gracefully (no reload: restart to change\n"
	    "settings): running queries finish, ingests are abandoned, exit 0\n"
	    "Documentation: %s (README.md, PROTOCOL.md, HTTP.md, POLICIES.md, ...)\n",
	    kv_doc_dir());
}

static int
dcfg_set_str(char **dst, const char *v)
{
	char *s = strdup(v);
	if (!s)
		return -1;
	free(*dst);
	*dst = s;
	return 0;
}

/* The keys: the long flags that take a value (--config and --foreground
 * aside), for a typo's nearest key. */
static const char *const dcfg_keys[] = {
	"socket", "state", "model", "heads", "policy", "opts", "budget", "ratio", "chunk", "quant",
	"threads", "backend", "workers", "max-connections", "max-connections-per-user",
	"idle-timeout", "request-timeout", "max-jobs", "log-level", "share", "http", "http-allow",
	"foreground",
};

/* One setting by its long name: 0, 1 for an unknown key, -1 for a bad
 * value with why ("needs ..., got 'V'"). */
static int
dcfg_set(struct dcfg *c, const char *key, const char *v, char *why, size_t why_len)
{
	static const struct { const char *key; long lo, hi; size_t off; } nums[] = {
		{ "threads", 0, 1024, offsetof(struct dcfg, threads) },
		{ "workers", 1, 64, offsetof(struct dcfg, workers) },
		{ "max-connections", 1, 65536, offsetof(struct dcfg, max_conns) },
		{ "max-connections-per-user", 1, 65536, offsetof(struct dcfg, max_conns_user) },
		{ "idle-timeout", 0, 86400, offsetof(struct dcfg, idle_timeout) },
		{ "request-timeout", 0, 86400, offsetof(struct dcfg, request_timeout) },
		{ "max-jobs", 1, 1L << 20, offsetof(struct dcfg, max_jobs) },
	};
	/* the profile's settings: the service's one parser (as kvsnap --local) */
	struct svc_conf pc = { .policy = c->policy, .opts = c->opts, .budget = c->budget,
		.ratio = c->ratio, .chunk = c->chunk };
	size_t i;
	int lvl, r;

	if ((r = svc_profile_flag(&pc, key, v, why, why_len)) <= 0) {
		if (r < 0)
			return -1;
		c->budget = pc.budget;
		c->ratio = pc.ratio;
		c->chunk = pc.chunk;
		if (!strcmp(key, "policy"))
			return dcfg_set_str(&c->policy, v);
		if (!strcmp(key, "opts"))
			return dcfg_set_str(&c->opts, v);
		if (!strcmp(key, "quant"))
			return dcfg_set_str(&c->quant, v);
		return 0;
	}
	if (!strcmp(key, "socket")) return dcfg_set_str(&c->socket, v);
	if (!strcmp(key, "state")) return dcfg_set_str(&c->state, v);
	if (!strcmp(key, "model")) return dcfg_set_str(&c->model, v);
	if (!strcmp(key, "heads")) return dcfg_set_str(&c->heads, v);
	if (!strcmp(key, "backend")) return dcfg_set_str(&c->backend, v);
	for (i = 0; i < sizeof(nums) / sizeof(nums[0]); i++)
		if (!strcmp(key, nums[i].key))
			return cmdline_parse_long(v, nums[i].lo, nums[i].hi,
			    (long *)(void *)((char *)c + nums[i].off), why, why_len);
	if (!strcmp(key, "log-level")) {
		if ((lvl = dlog_parse_level(v)) < 0) {
			snprintf(why, why_len, "needs error, warn, info or debug, got '%s'", v);
			return -1;
		}
		c->log_level = lvl;
		return 0;
	}
	if (!strcmp(key, "share")) {
		if (!strcmp(v, "yes") || !strcmp(v, "true") || !strcmp(v, "1"))
			c->share = 1;
		else if (!strcmp(v, "no") || !strcmp(v, "false") || !strcmp(v, "0"))
			c->share = 0;
		else {
			snprintf(why, why_len, "needs yes or no, got '%s'", v);
			return -1;
		}
		return 0;
	}
	if (!strcmp(key, "http")) {
		struct http_addr a;
		if (http_addr_parse(v, &a, why, why_len))
			return -1;
		return dcfg_set_str(&c->http, v);
	}
	if (!strcmp(key, "http-allow")) {
		struct http_allow a;
		if (http_allow_parse(v, &a, why, why_len))
			return -1;
		return dcfg_set_str(&c->http_allow, v);
	}
	if (!strcmp(key, "shared")) return dcfg_set_str(&c->shared, v);
	if (!strcmp(key, "shared-auth")) return dcfg_set_str(&c->shared_auth, v);
	if (!strcmp(key, "foreground")) return 0;
	return 1;
}

static char *
dcfg_trim(char *s)
{
	char *e;
	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

/* Read the config file; 0 or -1 with a message. */
static int
dcfg_file(struct dcfg *c, const char *path)
{
	FILE *f = fopen(path, "r");
	char line[4096], *k, *v, *eq, why[256];
	int n = 0, rc = 0, r;

	if (!f) {
		fprintf(stderr, "kvsnapd: cannot open config %s: %s\n", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		n++;
		if ((k = strchr(line, '#')))
			*k = '\0';
		k = dcfg_trim(line);
		if (!*k)
			continue;
		if (!(eq = strchr(k, '='))) {
			fprintf(stderr, "kvsnapd: %s:%d: expected key = value\n", path, n);
			rc = -1;
			break;
		}
		*eq = '\0';
		k = dcfg_trim(k);
		v = dcfg_trim(eq + 1);
		if ((r = dcfg_set(c, k, v, why, sizeof(why)))) {
			const char *near = r > 0 ? cmdline_nearest(k, dcfg_keys,
			    sizeof(dcfg_keys) / sizeof(dcfg_keys[0])) : NULL;
			if (r < 0)
				fprintf(stderr, "kvsnapd: %s:%d: %s %s\n", path, n, k, why);
			else if (near)
				fprintf(stderr, "kvsnapd: %s:%d: unknown setting '%s' (did you mean %s?)\n",
				    path, n, k, near);
			else
				fprintf(stderr, "kvsnapd: %s:%d: unknown setting '%s' (the keys are "
				    "kvsnapd's long flags: kvsnapd -h)\n", path, n, k);
			rc = -1;
			break;
		}
	}
	fclose(f);
	return rc;
}

/* Where the socket goes when nothing says. */
/* No --model, no model = line: the lookup kvsnap shares (common/paths.h:
 * $KVSNAP_MODEL, the installed share directory, the source tree). */
static int
dcfg_default_model(struct dcfg *c)
{
	char path[PATH_MAX], why[4096];
	if (kv_model_find(path, sizeof(path), why, sizeof(why))) {
		fprintf(stderr, "kvsnapd: %s (or set model = in --config FILE)\n", why);
		return -1;
	}
	return dcfg_set_str(&c->model, path);
}

static int
dcfg_default_socket(struct dcfg *c)
{
	const char *e = getenv("KVSNAP_SOCKET"), *x = getenv("XDG_RUNTIME_DIR");
	char buf[PATH_MAX];
	if (e && *e)
		return dcfg_set_str(&c->socket, e);
	if (x && *x) {
		snprintf(buf, sizeof(buf), "%s/kvsnap/kvsnapd.sock", x);
		return dcfg_set_str(&c->socket, buf);
	}
	return dcfg_set_str(&c->socket, "/run/kvsnap/kvsnapd.sock");
}

static int
dcfg_default_state(struct dcfg *c)
{
	const char *e = getenv("KVSNAP_STATE"), *sd = getenv("STATE_DIRECTORY");
	char buf[PATH_MAX];
	if (e && *e)
		return dcfg_set_str(&c->state, e);
	if (sd && *sd) /* systemd StateDirectory= (first entry) */
		return dcfg_set_str(&c->state, sd);
	if (kv_state_default(buf, sizeof(buf)))
		return -1;
	c->state_xdg = 1;
	return dcfg_set_str(&c->state, buf);
}

int
dcfg_load(struct dcfg *c, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'C' },
		{ "socket", required_argument, NULL, 's' },
		{ "state", required_argument, NULL, 'S' },
		{ "model", required_argument, NULL, 'm' },
		{ "heads", required_argument, NULL, 'H' },
		{ "policy", required_argument, NULL, 'P' },
		{ "opts", required_argument, NULL, 'o' },
		{ "budget", required_argument, NULL, 'b' },
		{ "ratio", required_argument, NULL, 'R' },
		{ "chunk", required_argument, NULL, 'c' },
		{ "quant", required_argument, NULL, 'q' },
		{ "threads", required_argument, NULL, 't' },
		{ "backend", required_argument, NULL, 'B' },
		{ "workers", required_argument, NULL, 'w' },
		{ "max-connections", required_argument, NULL, 'X' },
		{ "max-connections-per-user", required_argument, NULL, 'U' },
		{ "idle-timeout", required_argument, NULL, 'I' },
		{ "request-timeout", required_argument, NULL, 'Q' },
		{ "max-jobs", required_argument, NULL, 'J' },
		{ "log-level", required_argument, NULL, 'l' },
		{ "share", required_argument, NULL, 'Z' },
		{ "http", required_argument, NULL, 'W' },
		{ "http-allow", required_argument, NULL, 'L' },
		{ "shared", required_argument, NULL, 'T' },
		{ "shared-auth", required_argument, NULL, 'A' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct cmdline cl = { .prog = "kvsnapd", .help = "kvsnapd -h", .shortopts = "s:m:t:h",
		.longopts = opts };
	char why[256];
	int ch, i;

	memset(c, 0, sizeof(*c));
	/* the default profile (service.h); the quantization by its name */
	c->budget = SVC_DEFAULT_BUDGET;
	c->ratio = SVC_DEFAULT_RATIO;
	c->chunk = SVC_DEFAULT_CHUNK;
	c->workers = 2;
	c->max_conns = 64;
	c->max_conns_user = 16; /* four users can fill the default 64 */
	c->idle_timeout = 60;
	c->request_timeout = 10;
	c->max_jobs = 64;
	c->log_level = DLOG_INFO;
	if (dcfg_set_str(&c->policy, SVC_DEFAULT_POLICY) || dcfg_set_str(&c->opts, "") ||
	    dcfg_set_str(&c->quant, svc_quant_name(SVC_DEFAULT_QUANT)) ||
	    dcfg_set_str(&c->backend, "cpu"))
		return DCFG_EXIT_USAGE;
	/* the config file first, so that flags override it */
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--config") && i + 1 < argc)
			dcfg_set_str(&c->config, argv[i + 1]);
		else if (!strncmp(argv[i], "--config=", 9))
			dcfg_set_str(&c->config, argv[i] + 9);
	}
	if (c->config && dcfg_file(c, c->config))
		return DCFG_EXIT_USAGE;
	while ((ch = cmdline_next(&cl, argc, argv)) != -1) {
		const char *key = NULL;
		switch (ch) {
		case 'C': continue;
		case 's': key = "socket"; break;
		case 'S': key = "state"; break;
		case 'm': key = "model"; break;
		case 'H': key = "heads"; break;
		case 'P': key = "policy"; break;
		case 'o': key = "opts"; break;
		case 'b': key = "budget"; break;
		case 'R': key = "ratio"; break;
		case 'c': key = "chunk"; break;
		case 'q': key = "quant"; break;
		case 't': key = "threads"; break;
		case 'B': key = "backend"; break;
		case 'w': key = "workers"; break;
		case 'X': key = "max-connections"; break;
		case 'U': key = "max-connections-per-user"; break;
		case 'I': key = "idle-timeout"; break;
		case 'Q': key = "request-timeout"; break;
		case 'J': key = "max-jobs"; break;
		case 'l': key = "log-level"; break;
		case 'Z': key = "share"; break;
		case 'W': key = "http"; break;
		case 'L': key = "http-allow"; break;
		case 'T': key = "shared"; break;
		case 'A': key = "shared-auth"; break;
		case 'f': c->foreground = 1; continue;
		case 'h': dcfg_usage(stdout); return -1;
		case 'V': svc_version(stdout, "kvsnapd"); return -1;
		default: return DCFG_EXIT_USAGE; /* cmdline_next said why */
		}
		if (dcfg_set(c, key, optarg, why, sizeof(why))) {
			cmdline_err(&cl, "%s %s", cl.flag, why);
			return DCFG_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		cmdline_err(&cl, "unexpected argument '%s' (kvsnapd takes options only)", argv[optind]);
		return DCFG_EXIT_USAGE;
	}
	if (!c->model && dcfg_default_model(c))
		return DCFG_EXIT_USAGE;
	if (!c->socket && dcfg_default_socket(c))
		return DCFG_EXIT_USAGE;
	if (!c->state && dcfg_default_state(c)) {
		fprintf(stderr, "kvsnapd: no state directory: pass --state DIR\n");
		return DCFG_EXIT_USAGE;
	}
	if (c->heads) { /* --heads FILE is the locret policy's heads= option */
		size_t n = strlen(c->opts) + strlen(c->heads) + 8;
		char *o = malloc(n);
		if (!o)
			return DCFG_EXIT_USAGE;
		snprintf(o, n, "%s%sheads=%s", c->opts, *c->opts ? "," : "", c->heads);
		free(c->opts);
		c->opts = o;
	}
	return 0;
}

void
dcfg_free(struct dcfg *c)
{
	free(c->socket);
	free(c->state);
	free(c->model);
	free(c->heads);
	free(c->policy);
	free(c->opts);
	free(c->quant);
	free(c->backend);
	free(c->config);
	free(c->http);
	free(c->http_allow);
	free(c->shared);
	free(c->shared_auth);
}
