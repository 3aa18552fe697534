/*
 * cli_store.c: the store commands that need no daemon (DESIGN.md §7):
 * ls, info DOC, rm DOC, rename DOC NAME, stats, verify [DOC], prune.
 * They open the LMDB store in the state directory directly (no model;
 * the lookups kvsnapd's admin jobs share are service/docs.c's); LMDB's
 * lock file lets them run next to a daemon too.  With --shared ADDR they
 * act on a shared tier's store instead (kvsnapd --shared; any backend).
 * For people they name documents (the short id beside), sizes and times as
 * cli_show.c writes them; --json lines go through cli_json.c (docs/JSON.md).
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>
#include <time.h>

#include "clients/cli.h"
#include "service/service.h"
#include "snapshot/snapshot_io.h" /* pending: the store commands into service/ (issue 32 item 2) */
#include "storage/store.h"

/* Options every store command takes. */
struct st_opts {
	const char *state;
	const char *shared, *shared_auth; /* --shared ADDR: that store instead */
	const char *socket;  /* stats: the kvsnapd asked for its shared-tier counters */
	const char *profile; /* rm --profile P: one snapshot */
	int json, dry_run;
	int64_t older_than_us, keep;
	uint64_t max_bytes;
};

static void
st_usage(FILE *f, const char *cmd)
{
	fprintf(f, "usage: kvsnap %s [--state DIR | --shared ADDR [--shared-auth FILE]] [--json]%s\n",
	    cmd,
	    !strcmp(cmd, "info") ? " DOC" : !strcmp(cmd, "rm") ? " DOC [--profile P]" :
	    !strcmp(cmd, "rename") ? " DOC NAME" :
	    !strcmp(cmd, "verify") ? " [DOC]" :
	    !strcmp(cmd, "prune") ? " [--older-than AGE] [--max-size BYTES] [--keep N] [--dry-run]" :
	    "");
	fprintf(f, "  --state DIR   the store (default $KVSNAP_STATE, else $XDG_STATE_HOME/kvsnap,\n"
	    "                else ~/.local/state/kvsnap)\n"
	    "  --shared ADDR a shared tier's store instead (kvsnapd --shared: lmdb:DIR,\n"
	    "                redis-cluster:HOST:PORT,...); --shared-auth FILE its credentials\n"
	    "                (\"user = NAME\", \"password = SECRET\"; a file only you may read)\n"
	    "  --json        one JSON object per line\n");
	/* only where there is a DOC to name (not ls, stats, prune) */
	if (!strcmp(cmd, "info") || !strcmp(cmd, "rm") || !strcmp(cmd, "rename") ||
	    !strcmp(cmd, "verify"))
		fprintf(f, "DOC is a full doc_id, a unique hex prefix (4+ digits), a name or the file\n"
		    "name ls shows when no other document has it.\n");
	if (!strcmp(cmd, "rm"))
		fprintf(f, "  --profile P   only the snapshot whose profile id starts with P (4+ hex\n"
		    "                digits, as info shows it); the document goes with its last one\n");
	if (!strcmp(cmd, "stats"))
		fprintf(f, "  -s, --socket PATH  the kvsnapd whose shared-tier counters are shown, when one\n"
		    "                     answers there (default $KVSNAP_SOCKET, else the usual socket)\n");
	if (!strcmp(cmd, "prune"))
		fprintf(f, "  --older-than AGE   drop snapshots last used longer ago (e.g. 90s, 30m, 12h, 7d)\n"
		    "  --max-size BYTES   keep the store's snapshots under BYTES (K, M, G suffixes)\n"
		    "  --keep N           keep at most N snapshots\n"
		    "  --dry-run          only list what would be dropped\n"
		    "Least recently used snapshots go first; give at least one limit.\n");
}

/* "90s", "30m", "12h", "7d" or plain seconds → µs; -1 on error. */
static int64_t
st_parse_age(const char *s)
{
	char *end;
	double v = strtod(s, &end), mul = 1.0;
	if (end == s || v < 0)
		return -1;
	if (*end == 's')
		end++;
	else if (*end == 'm')
		mul = 60, end++;
	else if (*end == 'h')
		mul = 3600, end++;
	else if (*end == 'd')
		mul = 86400, end++;
	if (*end || v * mul > 1e12)
		return -1;
	return (int64_t)(v * mul * 1e6);
}

/* "123", "10K", "5M", "2G" → bytes; 0 and sets *bad on error. */
static uint64_t
st_parse_size(const char *s, int *bad)
{
	char *end;
	double v = strtod(s, &end), mul = 1.0;
	if (end == s || v < 0) {
		*bad = 1;
		return 0;
	}
	if (*end == 'K' || *end == 'k')
		mul = 1024.0, end++;
	else if (*end == 'M')
		mul = 1024.0 * 1024, end++;
	else if (*end == 'G')
		mul = 1024.0 * 1024 * 1024, end++;
	if (*end == 'B' || *end == 'i')
		end += 1 + (end[0] == 'i' && end[1] == 'B');
	if (*end || v * mul > 1.8e19) {
		*bad = 1;
		return 0;
	}
	return (uint64_t)(v * mul);
}

static int
st_exit(int rc)
{
	switch (rc) {
	case STORE_OK: return CLI_EXIT_OK;
	case STORE_ERR_NOT_FOUND: return CLI_EXIT_NOT_FOUND;
	case STORE_ERR_AMBIGUOUS: case STORE_ERR_ARG: case STORE_ERR_EXISTS:
		return CLI_EXIT_USAGE;
	case STORE_ERR_CORRUPT: return CLI_EXIT_CORRUPT;
	default: return CLI_EXIT_FAILURE;
	}
}

/* Options and lo..hi operands; the index of the first operand, or -1 with
 * a usage error printed. */
static int
st_args(int argc, char **argv, struct st_opts *o, int lo, int hi)
{
	static const struct option prune_opts[] = {
		{ "older-than", required_argument, NULL, 'o' },
		{ "max-size", required_argument, NULL, 'b' },
		{ "keep", required_argument, NULL, 'k' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "shared", required_argument, NULL, 'T' },
		{ "shared-auth", required_argument, NULL, 'A' },
		{ NULL, 0, NULL, 0 },
	};
	static const struct option shared_opts[] = {
		{ "shared", required_argument, NULL, 'T' },
		{ "shared-auth", required_argument, NULL, 'A' },
		{ NULL, 0, NULL, 0 },
	};
	static const struct option rm_opts[] = {
		{ "shared", required_argument, NULL, 'T' },
		{ "shared-auth", required_argument, NULL, 'A' },
		{ "profile", required_argument, NULL, 'P' },
		{ NULL, 0, NULL, 0 },
	};
	int prune = !strcmp(argv[0], "prune"), c;
	struct cli_opts co = { .longopts = prune ? prune_opts : !strcmp(argv[0], "rm") ? rm_opts :
		shared_opts,
		.globals = CLI_G_STATE | CLI_G_JSON | (!strcmp(argv[0], "stats") ? CLI_G_SOCKET : 0),
		.usage = st_usage,
		.operands = !strcmp(argv[0], "info") || !strcmp(argv[0], "rm") ? "DOC" :
		!strcmp(argv[0], "rename") ? "DOC NAME" : !strcmp(argv[0], "verify") ? "[DOC]" : "" };
	long keep;

	memset(o, 0, sizeof(*o));
	o->keep = -1;
	while ((c = cli_getopt(&co, argc, argv)) != -1) {
		switch (c) {
		case 'o':
			if ((o->older_than_us = st_parse_age(optarg)) <= 0) {
				cli_usage_err(&co, "--older-than needs an age such as 90s, 30m, 12h or 7d, "
				    "got '%s'", optarg);
				return -1;
			}
			break;
		case 'b': {
			int bad = 0;
			o->max_bytes = st_parse_size(optarg, &bad);
			if (bad || !o->max_bytes) {
				cli_usage_err(&co, "--max-size needs a size such as 500M or 2G, got '%s'",
				    optarg);
				return -1;
			}
			break;
		}
		case 'k':
			if (cli_long(&co, optarg, 0, 1L << 40, &keep))
				return -1;
			o->keep = keep;
			break;
		case 'n': o->dry_run = 1; break;
		case 'T': o->shared = optarg; break;
		case 'A': o->shared_auth = optarg; break;
		case 'P': o->profile = optarg; break;
		default: return -1; /* cli_getopt said why */
		}
	}
	if (cli_operands(&co, argc, argv, lo, hi))
		return -1;
	if (prune && !o->older_than_us && !o->max_bytes && o->keep < 0) {
		cli_usage_err(&co, "give at least one of --older-than AGE, --max-size BYTES, --keep N");
		return -1;
	}
	if (o->shared_auth && !o->shared) {
		cli_usage_err(&co, "--shared-auth needs --shared ADDR");
		return -1;
	}
	if (o->shared && (cli_g.given & CLI_G_STATE)) {
		cli_usage_err(&co, "--state and --shared name two stores; give one");
		return -1;
	}
	o->state = cli_g.state;
	o->json = cli_g.json;
	o->socket = cli_g.socket;
	return optind;
}

/* The shared tier's store (--shared ADDR, --shared-auth FILE). */
static int
st_open_shared(const struct st_opts *o, int read_only, struct store **s)
{
	struct store_opts so = { .read_only = read_only };
	char why[512] = "", user[256], pass[1024];
	int rc;
	if (o->shared_auth && (rc = store_redis_auth_file(o->shared_auth, user, sizeof(user), pass,
	    sizeof(pass), why, sizeof(why)))) {
		cli_err("%s", why);
		return rc == STORE_ERR_ARG ? CLI_EXIT_USAGE : CLI_EXIT_FAILURE;
	}
	if (o->shared_auth) {
		so.user = user;
		so.password = pass;
	}
	rc = store_open(s, o->shared, &so, why, sizeof(why));
	explicit_bzero(pass, sizeof(pass));
	if (rc) {
		cli_err("cannot open the shared tier %s: %s", o->shared, why);
		return rc == STORE_ERR_NOT_FOUND ? CLI_EXIT_NOT_FOUND :
		    rc == STORE_ERR_CORRUPT ? CLI_EXIT_CORRUPT :
		    rc == STORE_ERR_IO ? CLI_EXIT_UNREACHABLE : CLI_EXIT_FAILURE;
	}
	return CLI_EXIT_OK;
}

static int
st_open(const struct st_opts *o, int read_only, struct store **s)
{
	struct store_opts so = { .read_only = read_only };
	char why[512] = "";
	const char *dir = cli_state_dir(o->state);
	int rc;
	if (o->shared)
		return st_open_shared(o, read_only, s);
	if (!dir) {
		cli_err("no state directory: pass --state DIR or set KVSNAP_STATE");
		return CLI_EXIT_USAGE;
	}
	if ((rc = store_open(s, dir, &so, why, sizeof(why)))) {
		cli_err("cannot open the store in %s: %s", dir, why);
		return rc == STORE_ERR_NOT_FOUND ? CLI_EXIT_NOT_FOUND :
		    rc == STORE_ERR_CORRUPT ? CLI_EXIT_CORRUPT : CLI_EXIT_FAILURE;
	}
	return CLI_EXIT_OK;
}

/* st_args, then st_open; *first: the first operand.  An exit code. */
static int
st_begin(int argc, char **argv, int lo, int hi, int read_only, struct st_opts *o,
    struct store **s, int *first)
{
	if ((*first = st_args(argc, argv, o, lo, hi)) < 0)
		return CLI_EXIT_USAGE;
	return st_open(o, read_only, s);
}

static int
st_resolve(struct store *s, const char *ref, uint8_t id[SNAP_ID_BYTES])
{
	struct svc_status st;
	if (!svc_resolve(s, ref, id, &st))
		return CLI_EXIT_OK;
	cli_err("%s", st.why);
	return st_exit(st.rc);
}

/* A fresh machine: no store in the state directory yet (no data.mdb).
 * ls and stats answer it as an empty store and create nothing.  Only an
 * LMDB directory can be fresh: another backend's address (a network
 * store, by --state or --shared) is opened and asked. */
static int
st_fresh(const struct st_opts *o)
{
	const char *dir = cli_state_dir(o->state);
	char path[4096];
	struct stat sb;
	if (!dir || o->shared || !(dir = store_lmdb_dir(dir)))
		return 0;
	snprintf(path, sizeof(path), "%s/data.mdb", dir);
	return stat(path, &sb) != 0 && errno == ENOENT;
}

/* A stamp for JSON: UTC, ISO 8601; "-" when never. */
static void
st_time(int64_t us, char *buf, size_t cap)
{
	time_t t = (time_t)(us / 1000000);
	struct tm tm;
	if (us <= 0 || !gmtime_r(&t, &tm) || !strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(buf, cap, "-");
}

/* "gpl (1e22ab4c9f01)", or the short id alone when it has no name and no
 * source file: how rm, prune and verify name a document. */
static void
st_label(const struct store_doc *d, char *out, size_t cap)
{
	char hex[2 * SNAP_ID_BYTES + 1], label[6 * 256];
	store_hex(d->doc_id, SNAP_ID_BYTES, hex);
	cli_show_label(d->name, d->source, hex, label, sizeof(label));
	if (!strcmp(label, hex) || !strncmp(label, hex, 12))
		snprintf(out, cap, "%.12s", hex);
	else
		snprintf(out, cap, "%s (%.12s)", label, hex);
}

/* The documents of the store, as store_ls lists them (copies). */
struct st_docs {
	struct store_doc *d;
	size_t n, cap;
	const char *warn;    /* the command warning about damaged documents, or NULL */
};

/* A document whose metadata is damaged costs only itself: named in a
 * warning and left out (issue 26); verify reports it as a problem. */
static int
st_docs_bad(void *arg, const uint8_t doc_id[SNAP_ID_BYTES], const char *why)
{
	struct st_docs *ds = arg;
	(void)doc_id;
	if (ds->warn)
		fprintf(stderr, "kvsnap: warning: %s: %s; skipped (kvsnap verify reports it, "
		    "kvsnap rm removes it)\n", ds->warn, why);
	return 0;
}

static int
st_docs_cb(void *arg, const struct store_doc *d)
{
	struct st_docs *ds = arg;
	if (ds->n == ds->cap) {
		size_t cap = ds->cap ? 2 * ds->cap : 16;
		struct store_doc *nd = realloc(ds->d, cap * sizeof(*nd));
		if (!nd)
			return -1;
		ds->d = nd;
		ds->cap = cap;
	}
	ds->d[ds->n++] = *d;
	return 0;
}

/* All readable documents into ds (0), damaged ones warned about unless
 * quiet, or an exit code with the message printed. */
static int
st_docs(struct store *s, struct st_docs *ds, const char *what, int quiet)
{
	char why[512] = "";
	int rc;
	memset(ds, 0, sizeof(*ds));
	ds->warn = quiet ? NULL : what;
	if ((rc = store_ls_each(s, st_docs_cb, st_docs_bad, ds, why, sizeof(why)))) {
		cli_err("%s: %s", what, why[0] ? why : store_strerror(rc));
		free(ds->d);
		memset(ds, 0, sizeof(*ds));
		return st_exit(rc);
	}
	return CLI_EXIT_OK;
}

/* The label of doc_id among ds (the short id when it is not there). */
static void
st_docs_label(const struct st_docs *ds, const uint8_t id[SNAP_ID_BYTES], char *out, size_t cap)
{
	char hex[2 * SNAP_ID_BYTES + 1];
	size_t i;
	for (i = 0; i < ds->n; i++)
		if (!memcmp(ds->d[i].doc_id, id, SNAP_ID_BYTES)) {
			st_label(&ds->d[i], out, cap);
			return;
		}
	store_hex(id, SNAP_ID_BYTES, hex);
	snprintf(out, cap, "%.12s", hex);
}

/* The figures of a document's largest snapshot (most units kept); a
 * document in parts (service/parts.c): its parts summed, and their count
 * (of the set with the most parts). */
struct st_fig {
	struct svc_snap_figures f, sum;
	unsigned parts;
};

static int
st_fig_cb(void *arg, const uint8_t pid[SNAP_ID_BYTES], uint64_t bytes,
    const struct snap_header *h, const char *why, int64_t last_used_us)
{
	struct st_fig *fg = arg;
	struct svc_snap_figures g;
	size_t bl;
	unsigned part, n;
	(void)pid;
	(void)why;
	(void)last_used_us;
	if (!h)
		return 0;
	svc_snap_figures(h, bytes, &g);
	if (svc_part_parse(h->profile, &bl, &part, &n)) {
		if (n > fg->parts) {
			memset(&fg->sum, 0, sizeof(fg->sum));
			fg->parts = n;
		}
		if (n == fg->parts) {
			fg->sum.bytes += g.bytes;
			fg->sum.tokens += g.tokens;
			fg->sum.units += g.units;
			fg->sum.full_units += g.full_units;
			fg->sum.full_bytes += g.full_bytes;
		}
		if (fg->sum.units > fg->f.units)
			fg->f = fg->sum;
		return 0;
	}
	if (g.units > fg->f.units)
		fg->f = g;
	return 0;
}

/* Stored bytes per document token (issue 28: what a library costs);
 * 0 for a document of no tokens. */
static double
st_per_token(uint64_t bytes, uint64_t tokens)
{
	return tokens ? (double)bytes / (double)tokens : 0.0;
}

/* A document as JSON (ls, info); fg: its largest snapshot's figures, or
 * NULL. */
static json_t *
st_doc_json(const struct store_doc *d, const struct st_fig *fg)
{
	const struct svc_snap_figures *fig = fg ? &fg->f : NULL;
	char hex[2 * SNAP_ID_BYTES + 1], c[32], u[32];
	json_t *o, *own = json_array();
	int i;
	store_hex(d->doc_id, SNAP_ID_BYTES, hex);
	st_time(d->created_us, c, sizeof(c));
	st_time(d->last_used_us, u, sizeof(u));
	/* who kvsnapd shows it to (the store commands themselves see all) */
	for (i = 0; i < d->n_owners; i++)
		json_array_append_new(own, json_integer(d->owners[i]));
	o = json_pack("{s:s, s:o, s:o, s:o, s:I, s:I, s:s, s:s, s:i, s:I, s:b, s:o}", "doc_id",
	    hex, "name", cli_json_cstr(d->name), "source", cli_json_cstr(d->source), "format",
	    cli_json_cstr(d->format[0] ? d->format : "text"),
	    "bytes", (json_int_t)d->bytes, "tokens", (json_int_t)d->tokens, "created", c,
	    "last_used", u, "snapshots", d->n_profiles, "stored_bytes",
	    (json_int_t)d->stored_bytes, "shared", d->shared, "owners", own);
	if (o)
		json_object_set_new(o, "bytes_per_token",
		    json_real(st_per_token(d->stored_bytes, d->tokens)));
	if (o && fig)
		json_object_update_new(o, json_pack("{s:I, s:I, s:I, s:I}", "units",
		    (json_int_t)fig->units, "full_units", (json_int_t)fig->full_units,
		    "snapshot_bytes", (json_int_t)fig->bytes, "full_bytes",
		    (json_int_t)fig->full_bytes));
	if (o && fg) /* the parts it is stored in (1: whole) */
		json_object_set_new(o, "parts", json_integer(fg->parts ? fg->parts : 1));
	return o;
}

/* One row of `ls` for people. */
enum { LS_NAME, LS_TOKENS, LS_SNAPS, LS_SIZE, LS_PER_TOKEN, LS_KEPT, LS_SMALLER, LS_USED, LS_ID,
	LS_COLS };
#define LS_CELL 128

static void
st_ls_row(const struct store_doc *d, const struct st_fig *fg, char row[LS_COLS][LS_CELL])
{
	const struct svc_snap_figures *f = &fg->f;
	char hex[2 * SNAP_ID_BYTES + 1], name[6 * 256];
	store_hex(d->doc_id, SNAP_ID_BYTES, hex);
	cli_show_label(d->name, d->source, hex, name, sizeof(name));
	/* a long name is cut (on a character boundary) to keep the columns */
	if (strlen(name) > 40) {
		size_t k = 37;
		while (k > 0 && ((unsigned char)name[k] & 0xC0) == 0x80)
			k--;
		snprintf(name + k, sizeof(name) - k, "...");
	}
	memcpy(row[LS_NAME], name, strlen(name) + 1); /* at most 40 bytes, cut above */
	snprintf(row[LS_TOKENS], LS_CELL, "%llu", (unsigned long long)d->tokens);
	if (!fg->parts)
		snprintf(row[LS_SNAPS], LS_CELL, "%d", d->n_profiles);
	else if ((unsigned)d->n_profiles == fg->parts) /* a document in parts */
		snprintf(row[LS_SNAPS], LS_CELL, "%u parts", fg->parts);
	else
		snprintf(row[LS_SNAPS], LS_CELL, "%d (%u parts)", d->n_profiles, fg->parts);
	cli_show_size(d->stored_bytes, row[LS_SIZE], LS_CELL);
	cli_show_size((uint64_t)(st_per_token(d->stored_bytes, d->tokens) + 0.5),
	    row[LS_PER_TOKEN], LS_CELL);
	cli_show_kept(f->units, f->full_units, f->bytes, f->full_bytes, row[LS_KEPT], LS_CELL,
	    row[LS_SMALLER], LS_CELL);
	cli_show_ago(d->last_used_us, row[LS_USED], LS_CELL);
	snprintf(row[LS_ID], LS_CELL, "%.12s", hex);
}

/* Display width of a UTF-8 string (code points; good enough for names). */
static int
st_width(const char *s)
{
	int w = 0;
	for (; *s; s++)
		w += ((unsigned char)*s & 0xC0) != 0x80;
	return w;
}

static void
st_ls_print(char (*rows)[LS_COLS][LS_CELL], size_t n)
{
	static const char *const head[LS_COLS] = { "NAME", "TOKENS", "SNAPS", "SIZE", "B/TOKEN",
		"KEPT", "SMALLER", "USED", "ID" };
	static const int left[LS_COLS] = { 1, 0, 0, 0, 0, 0, 0, 1, 1 };
	int w[LS_COLS], c, pad;
	size_t i;
	for (c = 0; c < LS_COLS; c++) {
		w[c] = st_width(head[c]);
		for (i = 0; i < n; i++)
			if (st_width(rows[i][c]) > w[c])
				w[c] = st_width(rows[i][c]);
	}
	for (i = 0; i <= n; i++) {
		for (c = 0; c < LS_COLS; c++) {
			const char *cell = i ? rows[i - 1][c] : head[c];
			pad = w[c] - st_width(cell);
			if (c == LS_COLS - 1)
				pad = 0;
			printf("%s%*s%s%*s", c ? "  " : "", left[c] ? 0 : pad, "", cell,
			    left[c] ? pad : 0, "");
		}
		printf("\n");
	}
}

int
cli_ls(int argc, char **argv)
{
	struct st_opts o;
	struct store *s;
	struct st_docs ds;
	struct st_fig *fig = NULL;
	char (*rows)[LS_COLS][LS_CELL] = NULL;
	char why[512];
	json_t *arr;
	size_t i;
	int rc;
	if (st_args(argc, argv, &o, 0, 0) < 0)
		return CLI_EXIT_USAGE;
	if (st_fresh(&o)) { /* nothing ingested yet: an empty list, nothing created */
		if (o.json)
			cli_json_line("result", json_pack("{s:[]}", "docs"));
		else
			printf("no documents yet: kvsnap ingest FILE\n");
		return CLI_EXIT_OK;
	}
	if ((rc = st_open(&o, 1, &s)))
		return rc;
	if ((rc = st_docs(s, &ds, "ls", 0)))
		goto out;
	if (ds.n && (!(fig = calloc(ds.n, sizeof(*fig))) || !(rows = calloc(ds.n, sizeof(*rows))))) {
		cli_err("ls: out of memory");
		rc = CLI_EXIT_FAILURE;
		goto out;
	}
	for (i = 0; i < ds.n; i++) /* an unreadable header leaves its figures unknown */
		(void)snap_profiles(s, ds.d[i].doc_id, st_fig_cb, &fig[i], why, sizeof(why));
	if (o.json) {
		arr = json_array();
		for (i = 0; i < ds.n; i++)
			json_array_append_new(arr, st_doc_json(&ds.d[i], &fig[i]));
		cli_json_line("result", json_pack("{s:o}", "docs", arr));
	} else if (!ds.n) {
		printf("no documents yet: kvsnap ingest FILE\n");
	} else {
		for (i = 0; i < ds.n; i++)
			st_ls_row(&ds.d[i], &fig[i], rows[i]);
		st_ls_print(rows, ds.n);
	}
out:
	free(rows);
	free(fig);
	free(ds.d);
	store_close(s);
	return rc;
}

struct st_info {
	const struct store_doc *d;
	int json;
	json_t *snaps;
};

static int
st_profile_cb(void *arg, const uint8_t pid[SNAP_ID_BYTES], uint64_t bytes,
    const struct snap_header *h, const char *why, int64_t last_used_us)
{
	struct st_info *in = arg;
	struct svc_snap_figures f;
	char hex[2 * SNAP_ID_BYTES + 1], u[32], size[32], kept[32], ratio[32], words[512],
	    per[32];
	size_t bl;
	unsigned part, n;
	json_t *o;
	store_hex(pid, SNAP_ID_BYTES, hex);
	memset(&f, 0, sizeof(f));
	if (h)
		svc_snap_figures(h, bytes, &f);
	if (in->json) {
		st_time(last_used_us, u, sizeof(u));
		o = json_pack("{s:s, s:I, s:s}", "profile_id", hex, "stored_bytes", (json_int_t)bytes,
		    "last_used", u);
		if (o && h)
			json_object_update_new(o, json_pack("{s:o, s:I, s:I, s:I, s:I, s:s, s:s, s:f}",
			    "profile", cli_json_cstr(h->profile), "tokens", (json_int_t)h->n_tokens,
			    "units", (json_int_t)f.units, "full_units", (json_int_t)f.full_units,
			    "full_bytes", (json_int_t)f.full_bytes, "quant", snap_quant_name(h->quant),
			    "pos_mode", h->pos_mode ? "slot" : "original", "bytes_per_token",
			    st_per_token(bytes, h->n_tokens)));
		else if (o)
			json_object_set_new(o, "error", cli_json_cstr(why));
		if (o && h && svc_part_parse(h->profile, &bl, &part, &n)) { /* one part of n */
			json_object_set_new(o, "part", json_integer(part));
			json_object_set_new(o, "parts", json_integer(n));
		}
		json_array_append_new(in->snaps, o);
		return 0;
	}
	cli_show_size(bytes, size, sizeof(size));
	cli_show_ago(last_used_us, u, sizeof(u));
	if (!h) {
		printf("  snapshot %.12s  %s  used %s\n    unreadable header: %s\n", hex, size, u, why);
		return 0;
	}
	svc_profile_words(NULL, h->profile, words, sizeof(words));
	cli_show_kept(f.units, f.full_units, f.bytes, f.full_bytes, kept, sizeof(kept), ratio,
	    sizeof(ratio));
	cli_show_size((uint64_t)(st_per_token(bytes, h->n_tokens) + 0.5), per, sizeof(per));
	if (svc_part_parse(h->profile, &bl, &part, &n)) /* a document in parts: which */
		printf("  snapshot %.12s  part %u/%u  %s  %s  used %s\n", hex, part + 1, n, words,
		    size, u);
	else
		printf("  snapshot %.12s  %s  %s  used %s\n", hex, words, size, u);
	printf("    %llu tokens -> %lld units (%s kept, %s smaller than the full cache; %s a "
	    "token; %s, %s positions)\n    %s\n", (unsigned long long)h->n_tokens,
	    (long long)f.units, kept, ratio, per, snap_quant_name(h->quant),
	    h->pos_mode ? "slot" : "original", h->profile);
	return 0;
}

static void
st_info_head(const struct store_doc *d)
{
	char hex[2 * SNAP_ID_BYTES + 1], label[6 * 256], src[6 * 1024], size[32], stored[32],
	    c[32], u[32], fmt[6 * sizeof(d->format)], per[32];
	int i;
	store_hex(d->doc_id, SNAP_ID_BYTES, hex);
	cli_show_label(d->name, d->source, hex, label, sizeof(label));
	cli_term_str(d->source[0] ? d->source : "-", src, sizeof(src));
	cli_show_size(d->bytes, size, sizeof(size));
	cli_show_size(d->stored_bytes, stored, sizeof(stored));
	cli_show_size((uint64_t)(st_per_token(d->stored_bytes, d->tokens) + 0.5), per,
	    sizeof(per));
	cli_show_ago(d->created_us, c, sizeof(c));
	cli_show_ago(d->last_used_us, u, sizeof(u));
	cli_term_str(d->format[0] ? d->format : "text", fmt, sizeof(fmt));
	printf("%s\n  id        %s\n  source    %s\n  format    %s\n  document  %s, %llu tokens\n"
	    "  created   %s; used %s\n  shared    %s; owners", label, hex, src, fmt, size,
	    (unsigned long long)d->tokens, c, u, d->shared ? "yes (every user)" : "no");
	for (i = 0; i < d->n_owners; i++)
		printf(" uid %u", (unsigned)d->owners[i]);
	printf("%s\n  %d snapshot%s, %s (%s per document token)\n", d->n_owners ? "" : " none",
	    d->n_profiles, d->n_profiles == 1 ? "" : "s", stored, per);
}

int
cli_info(int argc, char **argv)
{
	struct st_opts o;
	struct store *s;
	struct store_doc d;
	struct st_info in;
	struct st_fig fig;
	uint8_t id[SNAP_ID_BYTES];
	char why[512] = "";
	int i, rc;
	if ((rc = st_begin(argc, argv, 1, 1, 1, &o, &s, &i)))
		return rc;
	if ((rc = st_resolve(s, argv[i], id)))
		goto out;
	if ((rc = store_info(s, id, &d, why, sizeof(why)))) {
		cli_err("info: %s", why);
		rc = st_exit(rc);
		goto out;
	}
	memset(&in, 0, sizeof(in));
	in.d = &d;
	in.json = o.json;
	if (o.json)
		in.snaps = json_array();
	else
		st_info_head(&d);
	if ((rc = snap_profiles(s, id, st_profile_cb, &in, why, sizeof(why)))) {
		cli_err("info: %s", why);
		rc = st_exit(rc);
		json_decref(in.snaps);
		goto out;
	}
	if (o.json) {
		memset(&fig, 0, sizeof(fig));
		(void)snap_profiles(s, id, st_fig_cb, &fig, why, sizeof(why));
		cli_json_line("result", json_pack("{s:o, s:o}", "doc", st_doc_json(&d, &fig),
		    "snapshots", in.snaps));
	}
out:
	store_close(s);
	return rc;
}

/* After rm (doc) or prune (NULL): the text index beside the store follows,
 * when there is one (index_sync.c).  A failure is a warning: the index is
 * derived data, brought in step by the next search or kvsnapd start. */
static void
st_index_after(const struct st_opts *o, struct store *s, const uint8_t *doc)
{
	struct svc_index *ix = NULL;
	const char *dir = cli_state_dir(o->state);
	char why[512] = "";
	int rc;

	if (!dir || !store_lmdb_dir(dir))
		return;
	rc = svc_index_open(s, dir, 0, 0, &ix, NULL, why, sizeof(why));
	if (!rc && ix)
		rc = doc ? svc_index_forget(ix, doc, why, sizeof(why)) :
		    svc_index_sync(ix, s, NULL, why, sizeof(why));
	svc_index_close(ix);
	if (rc)
		fprintf(stderr, "kvsnap: warning: the text index: %s (the next search brings it "
		    "in step)\n", why);
}

/* rm DOC --profile P: one snapshot; the document (its index rows) with
 * its last one.  A store code. */
static int
st_rm_snapshot(const struct st_opts *o, struct store *s, const uint8_t *id,
    const struct store_doc *d, const char *label)
{
	uint8_t pid[SNAP_ID_BYTES];
	char why[512] = "", hex[2 * SNAP_ID_BYTES + 1], phex[2 * SNAP_ID_BYTES + 1];
	int gone = 0, rc;

	if ((rc = svc_profile_ref(s, id, o->profile, pid, why, sizeof(why))) ||
	    (rc = store_rm_snapshot(s, id, pid, &gone, why, sizeof(why)))) {
		cli_err("rm: %s", why);
		return rc;
	}
	if (gone && !o->shared)
		st_index_after(o, s, id);
	store_hex(id, SNAP_ID_BYTES, hex);
	store_hex(pid, SNAP_ID_BYTES, phex);
	if (o->json)
		cli_json_line("result", json_pack("{s:s, s:o, s:o, s:s, s:b}", "doc_id", hex, "name",
		    cli_json_cstr(d->name), "source", cli_json_cstr(d->source), "profile_id", phex,
		    "removed", gone));
	else
		printf("removed snapshot %.12s of %s%s\n", phex, label,
		    gone ? " (its last: the document is removed)" : "");
	return 0;
}

int
cli_rm(int argc, char **argv)
{
	struct st_opts o;
	struct store *s;
	struct store_doc d;
	uint8_t id[SNAP_ID_BYTES];
	char why[512] = "", hex[2 * SNAP_ID_BYTES + 1], label[8 * 256];
	int i, rc;
	if ((rc = st_begin(argc, argv, 1, 1, 0, &o, &s, &i)))
		return rc;
	if (!(rc = st_resolve(s, argv[i], id))) {
		if (store_info(s, id, &d, why, sizeof(why)))
			memset(&d, 0, sizeof(d)); /* unreadable metadata: named by its id */
		memcpy(d.doc_id, id, SNAP_ID_BYTES);
		st_label(&d, label, sizeof(label));
		if (o.profile)
			rc = st_rm_snapshot(&o, s, id, &d, label);
		else {
			rc = store_rm(s, id, why, sizeof(why));
			if (rc)
				cli_err("rm: %s", why);
			else if (!o.shared)
				st_index_after(&o, s, id);
			store_hex(id, SNAP_ID_BYTES, hex);
			if (!rc && o.json)
				cli_json_line("result", json_pack("{s:s, s:o, s:o, s:b}", "doc_id", hex,
				    "name", cli_json_cstr(d.name), "source", cli_json_cstr(d.source),
				    "removed", 1));
			else if (!rc)
				printf("removed %s\n", label);
		}
		rc = st_exit(rc);
	}
	store_close(s);
	return rc;
}

int
cli_rename(int argc, char **argv)
{
	struct st_opts o;
	struct store *s;
	struct store_doc d;
	uint8_t id[SNAP_ID_BYTES];
	char why[512] = "", hex[2 * SNAP_ID_BYTES + 1], old[6 * 256], name[6 * 256];
	int i, rc;
	if ((rc = st_begin(argc, argv, 2, 2, 0, &o, &s, &i)))
		return rc;
	if (!(rc = st_resolve(s, argv[i], id))) {
		if (store_info(s, id, &d, why, sizeof(why)))
			memset(&d, 0, sizeof(d));
		rc = store_rename(s, id, argv[i + 1], why, sizeof(why));
		store_hex(id, SNAP_ID_BYTES, hex);
		if (rc) {
			cli_err("rename: %s", why);
		} else if (o.json) {
			cli_json_line("result", json_pack("{s:s, s:o, s:o}", "doc_id", hex, "name",
			    cli_json_cstr(argv[i + 1]), "old_name", cli_json_cstr(d.name)));
		} else {
			cli_term_str(d.name, old, sizeof(old));
			cli_term_str(argv[i + 1], name, sizeof(name));
			if (old[0])
				printf("renamed %s (%.12s) to %s\n", old, hex, name);
			else
				printf("renamed %.12s to %s\n", hex, name);
		}
		rc = st_exit(rc);
	}
	store_close(s);
	return rc;
}

/* The shared tier of the kvsnapd at the socket, as its stats op reports
 * it, when one answers there and has one (NULL otherwise, quietly: stats
 * is about the store, the daemon is a bonus). */
static json_t *
st_daemon_tier(const char *flag)
{
	const char *path = cli_socket_path(flag);
	struct sockaddr_un sa;
	struct cli_conn c;
	struct timeval tv = { 5, 0 };
	json_t *req, *ev, *sh = NULL;
	int fd;

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa.sun_path))
		return NULL;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	/* a probe first: no daemon there is no error for stats */
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return NULL;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		close(fd);
		return NULL;
	}
	close(fd);
	if (cli_conn_open(&c, path))
		return NULL;
	/* a daemon that does not answer soon costs stats its line, not a hang */
	(void)setsockopt(c.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	req = json_pack("{s:i, s:i, s:s}", "v", 1, "id", 1, "op", "stats");
	if (!req || cli_conn_send(&c, req, -1)) {
		json_decref(req);
		cli_conn_close(&c);
		return NULL;
	}
	json_decref(req);
	/* the result's members (an error event has no "shared") */
	if ((ev = cli_conn_recv(&c)) && (sh = json_object_get(ev, "shared")) &&
	    json_is_object(sh))
		json_incref(sh);
	else
		sh = NULL;
	json_decref(ev);
	cli_conn_close(&c);
	return sh;
}

/* "shared tier ADDR (kvsnapd at SOCK): up, 3 hits, 1 miss, 0 errors, ..." */
static void
st_print_tier(const json_t *sh)
{
	const char *err = json_string_value(json_object_get(sh, "error"));
	char addr[1024];
	cli_term_str(json_string_value(json_object_get(sh, "addr")) ?
	    json_string_value(json_object_get(sh, "addr")) : "?", addr, sizeof(addr));
	printf("shared tier %s (via kvsnapd): %s%s%s, %lld hit%s, %lld miss%s, %lld error%s, "
	    "%lld written, %lld failed writes\n", addr,
	    json_is_true(json_object_get(sh, "up")) ? "up" : "DOWN", err ? ": " : "", err ? err : "",
	    (long long)json_integer_value(json_object_get(sh, "hits")),
	    json_integer_value(json_object_get(sh, "hits")) == 1 ? "" : "s",
	    (long long)json_integer_value(json_object_get(sh, "misses")),
	    json_integer_value(json_object_get(sh, "misses")) == 1 ? "" : "es",
	    (long long)json_integer_value(json_object_get(sh, "errors")),
	    json_integer_value(json_object_get(sh, "errors")) == 1 ? "" : "s",
	    (long long)json_integer_value(json_object_get(sh, "writes")),
	    (long long)json_integer_value(json_object_get(sh, "write_errors")));
}

int
cli_stats(int argc, char **argv)
{
	struct st_opts o;
	struct store *s;
	struct store_stats st;
	char why[512] = "", stored[32], used[32], size[32];
	json_t *sh;
	int rc;
	if (st_args(argc, argv, &o, 0, 0) < 0)
		return CLI_EXIT_USAGE;
	memset(&st, 0, sizeof(st));
	if (st_fresh(&o)) {
		s = NULL;
		rc = STORE_OK;
	} else if ((rc = st_open(&o, 1, &s))) {
		return rc;
	} else {
		rc = store_stats(s, &st, why, sizeof(why));
	}
	sh = rc || o.shared ? NULL : st_daemon_tier(o.socket);
	if (rc)
		cli_err("stats: %s", why);
	else if (o.json) {
		json_t *r = json_pack("{s:I, s:I, s:I, s:I, s:I}", "documents",
		    (json_int_t)st.n_docs, "snapshots", (json_int_t)st.n_snapshots, "stored_bytes",
		    (json_int_t)st.stored_bytes, "map_size", (json_int_t)st.map_size, "map_used",
		    (json_int_t)st.map_used);
		if (r && sh)
			json_object_set(r, "shared", sh);
		cli_json_line("result", r);
	} else {
		cli_show_size(st.stored_bytes, stored, sizeof(stored));
		cli_show_size(st.map_used, used, sizeof(used));
		cli_show_size(st.map_size, size, sizeof(size));
		printf("%llu document%s, %llu snapshot%s, %s stored; the store's file uses %s of "
		    "%s reserved\n", (unsigned long long)st.n_docs, st.n_docs == 1 ? "" : "s",
		    (unsigned long long)st.n_snapshots, st.n_snapshots == 1 ? "" : "s", stored, used,
		    size);
		if (sh)
			st_print_tier(sh);
	}
	json_decref(sh);
	if (s)
		store_close(s);
	return st_exit(rc);
}

struct st_verify {
	const struct st_docs *ds;
	int json, bad, n;
	int parts_bad;           /* sets of parts with parts missing */
};

/* A document whose set of parts lacks some (service/parts.c). */
static void
st_parts_cb(void *arg, const uint8_t did[SNAP_ID_BYTES], const char *why)
{
	struct st_verify *v = arg;
	char dh[2 * SNAP_ID_BYTES + 1], label[8 * 256];
	store_hex(did, SNAP_ID_BYTES, dh);
	v->parts_bad++;
	if (v->json) {
		cli_json_line("parts", json_pack("{s:s, s:b, s:o}", "doc_id", dh, "ok", 0, "error",
		    cli_json_cstr(why)));
		return;
	}
	st_docs_label(v->ds, did, label, sizeof(label));
	printf("%s  INCOMPLETE: %s\n", label, why);
}

static int
st_verify_cb(void *arg, const uint8_t did[SNAP_ID_BYTES], const uint8_t pid[SNAP_ID_BYTES],
    const char *why)
{
	struct st_verify *v = arg;
	char dh[2 * SNAP_ID_BYTES + 1], ph[2 * SNAP_ID_BYTES + 1], label[8 * 256];
	const struct store_doc *d = NULL;
	size_t i;
	store_hex(did, SNAP_ID_BYTES, dh);
	store_hex(pid, SNAP_ID_BYTES, ph);
	v->n++;
	v->bad += why != NULL;
	for (i = 0; i < v->ds->n; i++)
		if (!memcmp(v->ds->d[i].doc_id, did, SNAP_ID_BYTES))
			d = &v->ds->d[i];
	if (v->json) {
		json_t *o = json_pack("{s:s, s:o, s:s, s:b}", "doc_id", dh, "name",
		    cli_json_cstr(d ? d->name : ""), "profile_id", ph, "ok", why == NULL);
		if (o && why)
			json_object_set_new(o, "error", cli_json_cstr(why));
		cli_json_line("snapshot", o);
	} else {
		st_docs_label(v->ds, did, label, sizeof(label));
		printf("%s  snapshot %.12s  %s%s\n", label, ph, why ? "CORRUPT: " : "ok",
		    why ? why : "");
	}
	return 0;
}

/* verify's look at the text index (svc_index_verify). */
struct st_ix {
	int on;
	const struct st_verify *v;
	struct svc_index_verified r;
};

static void
st_index_cb(void *arg, const uint8_t doc[SNAP_ID_BYTES], long part, int problem,
    const char *why)
{
	struct st_ix *x = arg;
	char hex[2 * SNAP_ID_BYTES + 1], label[8 * 256], where[32] = "";
	static const uint8_t zero[SNAP_ID_BYTES];
	store_hex(doc, SNAP_ID_BYTES, hex);
	if (x->v->json) {
		cli_json_line("index", json_pack("{s:s, s:I, s:b, s:o}", "doc_id", hex, "part",
		    (json_int_t)part, "problem", problem, "message", cli_json_cstr(why)));
		return;
	}
	if (part >= 0)
		snprintf(where, sizeof(where), " part %ld", part);
	if (!memcmp(doc, zero, SNAP_ID_BYTES))
		snprintf(label, sizeof(label), "the index");
	else
		st_docs_label(x->v->ds, doc, label, sizeof(label));
	printf("%s%s  %s%s\n", label, where, problem ? "INDEX: " : "note: ", why);
}

static void
st_index_summary(const struct svc_index_verified *r)
{
	if (!r->exists)
		printf("text index: none yet (the next search or kvsnapd start builds it); %ld text "
		    "record%s checked\n", r->texts, r->texts == 1 ? "" : "s");
	else
		printf("text index: %ld row%s, %ld text record%s, %ld problem%s\n", r->rows,
		    r->rows == 1 ? "" : "s", r->texts, r->texts == 1 ? "" : "s", r->problems,
		    r->problems == 1 ? "" : "s");
	if (r->docs_without_text)
		printf("%ld document%s without a text record (stored before text records): not "
		    "searchable until ingested again with --force\n", r->docs_without_text,
		    r->docs_without_text == 1 ? "" : "s");
}

/* 0, or -1 with the reason printed (the store could not be read). */
static int
st_verify_index(const struct st_opts *o, struct store *s, const struct st_verify *v,
    struct st_ix *ix)
{
	const char *dir = cli_state_dir(o->state);
	char why[512] = "";
	if (!dir || !store_lmdb_dir(dir))
		return 0;
	ix->v = v;
	if (svc_index_verify(s, dir, st_index_cb, ix, &ix->r, why, sizeof(why))) {
		cli_err("verify: the text index: %s", why);
		return -1;
	}
	ix->on = 1;
	return 0;
}

int
cli_verify(int argc, char **argv)
{
	struct st_opts o;
	struct store *s;
	struct st_docs ds;
	struct st_verify v = { &ds, 0, 0, 0, 0 };
	struct st_ix ix;
	uint8_t id[SNAP_ID_BYTES];
	char why[512] = "";
	int i, rc;
	memset(&ds, 0, sizeof(ds));
	memset(&ix, 0, sizeof(ix));
	if ((rc = st_begin(argc, argv, 0, 1, 1, &o, &s, &i)))
		return rc;
	if (i == argc - 1 && (rc = st_resolve(s, argv[i], id)))
		goto out;
	/* the names first: the reports name documents */
	if ((rc = st_docs(s, &ds, "verify", 1)) && rc != CLI_EXIT_CORRUPT)
		goto out;
	v.json = o.json;
	rc = snap_verify(s, i == argc - 1 ? id : NULL, st_verify_cb, &v, why, sizeof(why));
	if (rc && rc != STORE_ERR_CORRUPT)
		cli_err("verify: %s", why);
	/* documents in parts: every set whole */
	if (i == argc - 1)
		(void)svc_parts_check(s, id, st_parts_cb, &v, why, sizeof(why));
	else
		for (size_t k = 0; k < ds.n; k++)
			(void)svc_parts_check(s, ds.d[k].doc_id, st_parts_cb, &v, why, sizeof(why));
	/* the whole local store: its text records and the index beside it */
	if (i != argc - 1 && !o.shared && (!rc || rc == STORE_ERR_CORRUPT) &&
	    st_verify_index(&o, s, &v, &ix))
		rc = STORE_ERR_IO;
	if (o.json) {
		json_t *res = json_pack("{s:i, s:i, s:i}", "checked", v.n, "corrupt", v.bad,
		    "incomplete_parts", v.parts_bad);
		if (res && ix.on)
			json_object_set_new(res, "index", json_pack("{s:b, s:I, s:I, s:I, s:I}",
			    "exists", ix.r.exists, "rows", (json_int_t)ix.r.rows, "texts",
			    (json_int_t)ix.r.texts, "problems", (json_int_t)ix.r.problems,
			    "without_text", (json_int_t)ix.r.docs_without_text));
		cli_json_line("result", res);
	} else {
		printf("%d snapshot%s checked, %d corrupt\n", v.n, v.n == 1 ? "" : "s", v.bad);
		if (v.parts_bad)
			printf("%d document%s with parts missing\n", v.parts_bad,
			    v.parts_bad == 1 ? "" : "s");
		if (ix.on)
			st_index_summary(&ix.r);
	}
	rc = v.bad || v.parts_bad || (ix.on && ix.r.problems) ? CLI_EXIT_CORRUPT : st_exit(rc);
	if (rc && o.json && v.bad)
		cli_json_error("corrupt", rc, "corrupt snapshots found (see the snapshot lines)",
		    NULL);
	else if (rc && o.json && v.parts_bad)
		cli_json_error("corrupt", rc, "documents with parts missing (see the parts lines; "
		    "ingest them again)", NULL);
	else if (rc && o.json && ix.on && ix.r.problems)
		cli_json_error("corrupt", rc, "the text index is out of step with the store (see the "
		    "index lines; the next search or kvsnapd start rebuilds it)", NULL);
out:
	free(ds.d);
	store_close(s);
	return rc;
}

struct st_prune {
	const struct st_opts *o;
	const struct st_docs *ds;
};

static int
st_prune_cb(void *arg, const uint8_t did[SNAP_ID_BYTES], const uint8_t pid[SNAP_ID_BYTES],
    uint64_t bytes, int64_t last_used_us)
{
	const struct st_prune *p = arg;
	char dh[2 * SNAP_ID_BYTES + 1], ph[2 * SNAP_ID_BYTES + 1], u[32], label[8 * 256],
	    size[32];
	const struct store_doc *d = NULL;
	size_t i;
	store_hex(did, SNAP_ID_BYTES, dh);
	store_hex(pid, SNAP_ID_BYTES, ph);
	for (i = 0; i < p->ds->n; i++)
		if (!memcmp(p->ds->d[i].doc_id, did, SNAP_ID_BYTES))
			d = &p->ds->d[i];
	if (p->o->json) {
		st_time(last_used_us, u, sizeof(u));
		cli_json_line("snapshot", json_pack("{s:s, s:o, s:s, s:I, s:s, s:b}", "doc_id", dh,
		    "name", cli_json_cstr(d ? d->name : ""), "profile_id", ph, "bytes",
		    (json_int_t)bytes, "last_used", u, "dropped", !p->o->dry_run));
	} else {
		st_docs_label(p->ds, did, label, sizeof(label));
		cli_show_size(bytes, size, sizeof(size));
		cli_show_ago(last_used_us, u, sizeof(u));
		printf("%s %s  snapshot %.12s  %s  used %s\n", p->o->dry_run ? "would drop" :
		    "dropped", label, ph, size, u);
	}
	return 0;
}

/* A document prune skipped for its damaged metadata: named. */
static void
st_prune_damaged(void *arg, const uint8_t doc_id[SNAP_ID_BYTES], const char *why)
{
	(void)arg;
	(void)doc_id;
	fprintf(stderr, "kvsnap: warning: prune: %s; skipped, nothing of it dropped (kvsnap "
	    "verify reports it, kvsnap rm removes it)\n", why);
}

int
cli_prune(int argc, char **argv)
{
	struct st_opts o;
	struct store *s;
	struct store_prune p;
	struct st_docs ds;
	struct st_prune sp = { &o, &ds };
	int64_t n = 0;
	uint64_t bytes = 0;
	char why[512] = "", size[32];
	int i = st_args(argc, argv, &o, 0, 0), rc;
	if (i < 0)
		return CLI_EXIT_USAGE;
	if ((rc = st_open(&o, o.dry_run, &s)))
		return rc;
	/* the names first (prune's callback runs inside its write transaction) */
	if ((rc = st_docs(s, &ds, "prune", 1))) { /* prune itself names what it skips */
		store_close(s);
		return rc;
	}
	p.older_than_us = o.older_than_us;
	p.max_bytes = o.max_bytes;
	p.keep = o.keep;
	p.dry_run = o.dry_run;
	p.damaged = st_prune_damaged;
	p.damaged_arg = NULL;
	rc = store_prune(s, &p, st_prune_cb, &sp, &n, &bytes, why, sizeof(why));
	if (!rc && !o.dry_run && n && !o.shared) /* documents gone with their last snapshot */
		st_index_after(&o, s, NULL);
	if (rc)
		cli_err("prune: %s", why);
	else if (o.json)
		cli_json_line("result", json_pack("{s:I, s:I, s:b}", "snapshots", (json_int_t)n,
		    "bytes", (json_int_t)bytes, "dry_run", o.dry_run));
	else {
		cli_show_size(bytes, size, sizeof(size));
		printf("%s %lld snapshot%s, %s\n", o.dry_run ? "would drop" : "dropped", (long long)n,
		    n == 1 ? "" : "s", size);
	}
	free(ds.d);
	store_close(s);
	return st_exit(rc);
}
