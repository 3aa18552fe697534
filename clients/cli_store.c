/*
 * cli_store.c: the store commands that need no daemon (DESIGN.md §7):
 * ls, info DOC, rm DOC, rename DOC NAME, stats, verify [DOC], prune.
 * They open the LMDB store in the state directory directly (no model) and
 * run the same service calls as kvsnapd's admin jobs (service/store.h);
 * LMDB's lock file lets them run next to a daemon too.  With --shared ADDR they
 * act on a shared tier's store instead (kvsnapd --shared; any backend).
 * For people they name documents (the short id beside), sizes and times as
 * cli_show.c writes them; --json lines go through cli_json.c, a document
 * and a snapshot in the service's one shape (docs/JSON.md).  Helpers here
 * are sc_ (store command); st_ is storage/'s own prefix.
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

/* Options every store command takes. */
struct sc_opts {
	const char *state;
	const char *shared, *shared_auth; /* --shared ADDR: that store instead */
	const char *socket;  /* stats: the kvsnapd asked for its shared-tier counters */
	const char *profile; /* rm --profile P: one snapshot */
	int json, dry_run;
	int64_t older_than_us, keep;
	uint64_t max_bytes;
};

static void
sc_usage(FILE *f, const char *cmd)
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
sc_parse_age(const char *s)
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
sc_parse_size(const char *s, int *bad)
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
sc_exit(int rc)
{
	switch (rc) {
	case SVC_STORE_OK: return CLI_EXIT_OK;
	case SVC_STORE_ERR_NOT_FOUND: return CLI_EXIT_NOT_FOUND;
	case SVC_STORE_ERR_AMBIGUOUS: case SVC_STORE_ERR_ARG: case SVC_STORE_ERR_EXISTS:
		return CLI_EXIT_USAGE;
	case SVC_STORE_ERR_CORRUPT: return CLI_EXIT_CORRUPT;
	default: return CLI_EXIT_FAILURE;
	}
}

/* Options and lo..hi operands; the index of the first operand, or -1 with
 * a usage error printed. */
static int
sc_args(int argc, char **argv, struct sc_opts *o, int lo, int hi)
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
		.usage = sc_usage,
		.operands = !strcmp(argv[0], "info") || !strcmp(argv[0], "rm") ? "DOC" :
		!strcmp(argv[0], "rename") ? "DOC NAME" : !strcmp(argv[0], "verify") ? "[DOC]" : "" };
	long keep;

	memset(o, 0, sizeof(*o));
	o->keep = -1;
	while ((c = cli_getopt(&co, argc, argv)) != -1) {
		switch (c) {
		case 'o':
			if ((o->older_than_us = sc_parse_age(optarg)) <= 0) {
				cli_usage_err(&co, "--older-than needs an age such as 90s, 30m, 12h or 7d, "
				    "got '%s'", optarg);
				return -1;
			}
			break;
		case 'b': {
			int bad = 0;
			o->max_bytes = sc_parse_size(optarg, &bad);
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

/* The store of --state DIR, or of --shared ADDR [--shared-auth FILE]; for
 * the local one, its text index too (rm, prune, verify).  An exit code,
 * the reason printed. */
static int
sc_open(const struct sc_opts *o, int read_only, struct svc_target *t)
{
	struct svc_status st;
	const char *dir = o->shared ? o->shared : cli_state_dir(o->state);
	if (!dir) {
		cli_err("no state directory: pass --state DIR or set KVSNAP_STATE");
		return CLI_EXIT_USAGE;
	}
	if (!svc_target_open(t, dir, o->shared_auth, read_only, !o->shared, &st))
		return CLI_EXIT_OK;
	if (st.step == SVC_AT_SHARED_AUTH) {
		cli_err("%s", st.why);
		return st.rc == SVC_STORE_ERR_ARG ? CLI_EXIT_USAGE : CLI_EXIT_FAILURE;
	}
	if (o->shared) {
		cli_err("cannot open the shared tier %s: %s", o->shared, st.why);
		return st.rc == SVC_STORE_ERR_NOT_FOUND ? CLI_EXIT_NOT_FOUND :
		    st.rc == SVC_STORE_ERR_CORRUPT ? CLI_EXIT_CORRUPT :
		    st.rc == SVC_STORE_ERR_IO ? CLI_EXIT_UNREACHABLE : CLI_EXIT_FAILURE;
	}
	cli_err("cannot open the store in %s: %s", dir, st.why);
	return st.rc == SVC_STORE_ERR_NOT_FOUND ? CLI_EXIT_NOT_FOUND :
	    st.rc == SVC_STORE_ERR_CORRUPT ? CLI_EXIT_CORRUPT : CLI_EXIT_FAILURE;
}

/* sc_args, then sc_open; *first: the first operand.  An exit code. */
static int
sc_begin(int argc, char **argv, int lo, int hi, int read_only, struct sc_opts *o,
    struct svc_target *t, int *first)
{
	if ((*first = sc_args(argc, argv, o, lo, hi)) < 0)
		return CLI_EXIT_USAGE;
	return sc_open(o, read_only, t);
}

static int
sc_resolve(const struct svc_target *t, const char *ref, uint8_t id[SVC_ID_BYTES])
{
	struct svc_status st;
	if (!svc_resolve(t->s, ref, id, &st))
		return CLI_EXIT_OK;
	cli_err("%s", st.why);
	return sc_exit(st.rc);
}

/* A fresh machine: no store in the state directory yet (no data.mdb).
 * ls and stats answer it as an empty store and create nothing.  Only an
 * LMDB directory can be fresh: another backend's address (a network
 * store, by --state or --shared) is opened and asked. */
static int
sc_fresh(const struct sc_opts *o)
{
	const char *dir = cli_state_dir(o->state);
	char path[4096];
	struct stat sb;
	if (!dir || o->shared || !(dir = svc_lmdb_dir(dir)))
		return 0;
	snprintf(path, sizeof(path), "%s/data.mdb", dir);
	return stat(path, &sb) != 0 && errno == ENOENT;
}

/* "gpl (1e22ab4c9f01)", or the short id alone when it has no name and no
 * source file: how rm, prune and verify name a document. */
static void
sc_label(const struct svc_doc *d, char *out, size_t cap)
{
	char hex[2 * SVC_ID_BYTES + 1], label[6 * 256];
	svc_hex(d->doc_id, SVC_ID_BYTES, hex);
	cli_show_label(d->name, d->source, hex, label, sizeof(label));
	if (!strcmp(label, hex) || !strncmp(label, hex, 12))
		snprintf(out, cap, "%.12s", hex);
	else
		snprintf(out, cap, "%s (%.12s)", label, hex);
}

/* The documents of the store (svc_ls). */
struct sc_docs {
	struct svc_doc *d;
	size_t n;
};

/* A document whose metadata is damaged costs only itself: named in a
 * warning and left out (issue 26); verify reports it as a problem. */
static void
sc_docs_bad(void *arg, const uint8_t doc_id[SVC_ID_BYTES], const char *why)
{
	(void)doc_id;
	fprintf(stderr, "kvsnap: warning: %s: %s; skipped (kvsnap verify reports it, "
	    "kvsnap rm removes it)\n", (const char *)arg, why);
}

/* All readable documents into ds (0), with their figures when figures is
 * set, damaged ones warned about unless quiet; or an exit code with the
 * message printed. */
static int
sc_docs(const struct svc_target *t, struct sc_docs *ds, const char *what, int quiet,
    int figures)
{
	char why[512] = "";
	int rc;
	memset(ds, 0, sizeof(*ds));
	if ((rc = svc_ls(t, figures, quiet ? NULL : sc_docs_bad, (void *)(uintptr_t)what, &ds->d,
	    &ds->n, why, sizeof(why)))) {
		cli_err("%s: %s", what, why);
		return sc_exit(rc);
	}
	return CLI_EXIT_OK;
}

/* The label of doc_id among ds (the short id when it is not there). */
static void
sc_docs_label(const struct sc_docs *ds, const uint8_t id[SVC_ID_BYTES], char *out, size_t cap)
{
	char hex[2 * SVC_ID_BYTES + 1];
	size_t i;
	for (i = 0; i < ds->n; i++)
		if (!memcmp(ds->d[i].doc_id, id, SVC_ID_BYTES)) {
			sc_label(&ds->d[i], out, cap);
			return;
		}
	svc_hex(id, SVC_ID_BYTES, hex);
	snprintf(out, cap, "%.12s", hex);
}

/* One row of `ls` for people. */
enum { LS_NAME, LS_TOKENS, LS_SNAPS, LS_SIZE, LS_PER_TOKEN, LS_KEPT, LS_SMALLER, LS_USED, LS_ID,
	LS_COLS };
#define LS_CELL 128

static void
sc_ls_row(const struct svc_doc *d, char row[LS_COLS][LS_CELL])
{
	const struct svc_snap_figures *f = &d->fig;
	char hex[2 * SVC_ID_BYTES + 1], name[6 * 256];
	svc_hex(d->doc_id, SVC_ID_BYTES, hex);
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
	if (!d->parts)
		snprintf(row[LS_SNAPS], LS_CELL, "%d", d->snapshots);
	else if ((unsigned)d->snapshots == d->parts) /* a document in parts */
		snprintf(row[LS_SNAPS], LS_CELL, "%u parts", d->parts);
	else
		snprintf(row[LS_SNAPS], LS_CELL, "%d (%u parts)", d->snapshots, d->parts);
	cli_show_size(d->stored_bytes, row[LS_SIZE], LS_CELL);
	cli_show_size((uint64_t)(svc_per_token(d->stored_bytes, d->tokens) + 0.5),
	    row[LS_PER_TOKEN], LS_CELL);
	cli_show_kept(f->units, f->full_units, f->bytes, f->full_bytes, row[LS_KEPT], LS_CELL,
	    row[LS_SMALLER], LS_CELL);
	cli_show_ago(d->last_used_us, row[LS_USED], LS_CELL);
	snprintf(row[LS_ID], LS_CELL, "%.12s", hex);
}

/* Display width of a UTF-8 string (code points; good enough for names). */
static int
sc_width(const char *s)
{
	int w = 0;
	for (; *s; s++)
		w += ((unsigned char)*s & 0xC0) != 0x80;
	return w;
}

static void
sc_ls_print(char (*rows)[LS_COLS][LS_CELL], size_t n)
{
	static const char *const head[LS_COLS] = { "NAME", "TOKENS", "SNAPS", "SIZE", "B/TOKEN",
		"KEPT", "SMALLER", "USED", "ID" };
	static const int left[LS_COLS] = { 1, 0, 0, 0, 0, 0, 0, 1, 1 };
	int w[LS_COLS], c, pad;
	size_t i;
	for (c = 0; c < LS_COLS; c++) {
		w[c] = sc_width(head[c]);
		for (i = 0; i < n; i++)
			if (sc_width(rows[i][c]) > w[c])
				w[c] = sc_width(rows[i][c]);
	}
	for (i = 0; i <= n; i++) {
		for (c = 0; c < LS_COLS; c++) {
			const char *cell = i ? rows[i - 1][c] : head[c];
			pad = w[c] - sc_width(cell);
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
	struct sc_opts o;
	struct svc_target t;
	struct sc_docs ds;
	char (*rows)[LS_COLS][LS_CELL] = NULL;
	json_t *arr;
	size_t i;
	int rc;
	if (sc_args(argc, argv, &o, 0, 0) < 0)
		return CLI_EXIT_USAGE;
	if (sc_fresh(&o)) { /* nothing ingested yet: an empty list, nothing created */
		if (o.json)
			cli_json_line("result", json_pack("{s:[]}", "docs"));
		else
			printf("no documents yet: kvsnap ingest FILE\n");
		return CLI_EXIT_OK;
	}
	if ((rc = sc_open(&o, 1, &t)))
		return rc;
	if ((rc = sc_docs(&t, &ds, "ls", 0, 1)))
		goto out;
	if (o.json) {
		arr = json_array();
		for (i = 0; i < ds.n; i++)
			json_array_append_new(arr, svc_doc_json(&ds.d[i], NULL));
		cli_json_line("result", json_pack("{s:o}", "docs", arr));
	} else if (!ds.n) {
		printf("no documents yet: kvsnap ingest FILE\n");
	} else if (!(rows = calloc(ds.n, sizeof(*rows)))) {
		cli_err("ls: out of memory");
		rc = CLI_EXIT_FAILURE;
	} else {
		for (i = 0; i < ds.n; i++)
			sc_ls_row(&ds.d[i], rows[i]);
		sc_ls_print(rows, ds.n);
	}
out:
	free(rows);
	free(ds.d);
	svc_target_close(&t);
	return rc;
}

/* One snapshot of info for people. */
static void
sc_snap_print(const struct svc_snap *sn)
{
	const struct svc_snap_figures *f = &sn->fig;
	char hex[2 * SVC_ID_BYTES + 1], u[32], size[32], kept[32], ratio[32], words[512],
	    per[32];
	svc_hex(sn->profile_id, SVC_ID_BYTES, hex);
	cli_show_size(sn->stored_bytes, size, sizeof(size));
	cli_show_ago(sn->last_used_us, u, sizeof(u));
	if (!sn->readable) {
		printf("  snapshot %.12s  %s  used %s\n    unreadable header: %s\n", hex, size, u,
		    sn->error);
		return;
	}
	svc_profile_words(NULL, sn->profile, words, sizeof(words));
	cli_show_kept(f->units, f->full_units, f->bytes, f->full_bytes, kept, sizeof(kept), ratio,
	    sizeof(ratio));
	cli_show_size((uint64_t)(svc_per_token(sn->stored_bytes, (uint64_t)f->tokens) + 0.5), per,
	    sizeof(per));
	if (sn->parts) /* a document in parts: which */
		printf("  snapshot %.12s  part %u/%u  %s  %s  used %s\n", hex, sn->part + 1,
		    sn->parts, words, size, u);
	else
		printf("  snapshot %.12s  %s  %s  used %s\n", hex, words, size, u);
	printf("    %llu tokens -> %lld units (%s kept, %s smaller than the full cache; %s a "
	    "token; %s, %s positions)\n    %s\n", (unsigned long long)f->tokens,
	    (long long)f->units, kept, ratio, per, svc_quant_name(sn->quant),
	    sn->pos_slot ? "slot" : "original", sn->profile);
}

static void
sc_info_head(const struct svc_doc *d)
{
	char hex[2 * SVC_ID_BYTES + 1], label[6 * 256], src[6 * 1024], size[32], stored[32],
	    c[32], u[32], fmt[6 * sizeof(d->format)], per[32];
	int i;
	svc_hex(d->doc_id, SVC_ID_BYTES, hex);
	cli_show_label(d->name, d->source, hex, label, sizeof(label));
	cli_term_str(d->source[0] ? d->source : "-", src, sizeof(src));
	cli_show_size(d->bytes, size, sizeof(size));
	cli_show_size(d->stored_bytes, stored, sizeof(stored));
	cli_show_size((uint64_t)(svc_per_token(d->stored_bytes, d->tokens) + 0.5), per,
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
	    d->snapshots, d->snapshots == 1 ? "" : "s", stored, per);
}

/* What info, rm and rename share: the store opened, DOC (the first
 * operand) resolved, the command run on it (an exit code), the store
 * closed.  rest: the operands after DOC. */
typedef int (*sc_doc_fn)(const struct sc_opts *o, const struct svc_target *t,
    const uint8_t id[SVC_ID_BYTES], char **rest);

static int
sc_on_doc(int argc, char **argv, int operands, int read_only, sc_doc_fn fn)
{
	struct sc_opts o;
	struct svc_target t;
	uint8_t id[SVC_ID_BYTES];
	int i, rc;
	if ((rc = sc_begin(argc, argv, operands, operands, read_only, &o, &t, &i)))
		return rc;
	if (!(rc = sc_resolve(&t, argv[i], id)))
		rc = fn(&o, &t, id, argv + i + 1);
	svc_target_close(&t);
	return rc;
}

static int
sc_info(const struct sc_opts *o, const struct svc_target *t, const uint8_t id[SVC_ID_BYTES],
    char **rest)
{
	struct svc_doc d;
	struct svc_snap *sn = NULL;
	char why[512] = "";
	json_t *arr;
	size_t n = 0, k;
	int rc;
	(void)rest;
	if ((rc = svc_info(t, id, &d, &sn, &n, why, sizeof(why)))) {
		cli_err("info: %s", why);
		return sc_exit(rc);
	}
	if (o->json) {
		arr = json_array();
		for (k = 0; k < n; k++)
			json_array_append_new(arr, svc_snap_json(&sn[k], 0));
		cli_json_line("result", json_pack("{s:o, s:o}", "doc", svc_doc_json(&d, NULL),
		    "snapshots", arr));
	} else {
		sc_info_head(&d);
		for (k = 0; k < n; k++)
			sc_snap_print(&sn[k]);
	}
	free(sn);
	return CLI_EXIT_OK;
}

int
cli_info(int argc, char **argv)
{
	return sc_on_doc(argc, argv, 1, 1, sc_info);
}

/* The text index not brought in step after rm or prune: a warning, it is
 * derived data the next search or kvsnapd start brings in step. */
static void
sc_index_warn(const char *why)
{
	if (why[0])
		fprintf(stderr, "kvsnap: warning: the text index: %s (the next search brings it "
		    "in step)\n", why);
}

/* rm DOC [--profile P]: one snapshot, the document with its last one; or
 * the document. */
static int
sc_rm(const struct sc_opts *o, const struct svc_target *t, const uint8_t id[SVC_ID_BYTES],
    char **rest)
{
	struct svc_removed rm;
	char why[512] = "", hex[2 * SVC_ID_BYTES + 1], phex[2 * SVC_ID_BYTES + 1],
	    label[8 * 256];
	int rc;
	(void)rest;
	if ((rc = svc_rm(t, id, o->profile, &rm, why, sizeof(why)))) {
		cli_err("rm: %s", why);
		return sc_exit(rc);
	}
	sc_index_warn(rm.index_why);
	sc_label(&rm.doc, label, sizeof(label));
	svc_hex(id, SVC_ID_BYTES, hex);
	svc_hex(rm.profile_id, SVC_ID_BYTES, phex);
	if (o->json && rm.one)
		cli_json_line("result", json_pack("{s:s, s:o, s:o, s:s, s:b}", "doc_id", hex, "name",
		    cli_json_cstr(rm.doc.name), "source", cli_json_cstr(rm.doc.source),
		    "profile_id", phex, "removed", rm.gone));
	else if (o->json)
		cli_json_line("result", json_pack("{s:s, s:o, s:o, s:b}", "doc_id", hex, "name",
		    cli_json_cstr(rm.doc.name), "source", cli_json_cstr(rm.doc.source), "removed",
		    1));
	else if (rm.one)
		printf("removed snapshot %.12s of %s%s\n", phex, label,
		    rm.gone ? " (its last: the document is removed)" : "");
	else
		printf("removed %s\n", label);
	return CLI_EXIT_OK;
}

int
cli_rm(int argc, char **argv)
{
	return sc_on_doc(argc, argv, 1, 0, sc_rm);
}

static int
sc_rename(const struct sc_opts *o, const struct svc_target *t, const uint8_t id[SVC_ID_BYTES],
    char **rest)
{
	char why[512] = "", hex[2 * SVC_ID_BYTES + 1], was[256], old[6 * 256], name[6 * 256];
	int rc;
	svc_hex(id, SVC_ID_BYTES, hex);
	if ((rc = svc_rename(t, id, rest[0], was, why, sizeof(why)))) {
		cli_err("rename: %s", why);
		return sc_exit(rc);
	}
	if (o->json) {
		cli_json_line("result", json_pack("{s:s, s:o, s:o}", "doc_id", hex, "name",
		    cli_json_cstr(rest[0]), "old_name", cli_json_cstr(was)));
		return CLI_EXIT_OK;
	}
	cli_term_str(was, old, sizeof(old));
	cli_term_str(rest[0], name, sizeof(name));
	if (old[0])
		printf("renamed %s (%.12s) to %s\n", old, hex, name);
	else
		printf("renamed %.12s to %s\n", hex, name);
	return CLI_EXIT_OK;
}

int
cli_rename(int argc, char **argv)
{
	return sc_on_doc(argc, argv, 2, 0, sc_rename);
}

/* The shared tier of the kvsnapd at the socket, as its stats op reports
 * it, when one answers there and has one (NULL otherwise, quietly: stats
 * is about the store, the daemon is a bonus). */
static json_t *
sc_daemon_tier(const char *flag)
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
sc_print_tier(const json_t *sh)
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
	struct sc_opts o;
	struct svc_target t;
	struct svc_store_totals st;
	char why[512] = "", stored[32], used[32], size[32];
	json_t *sh;
	int rc;
	if (sc_args(argc, argv, &o, 0, 0) < 0)
		return CLI_EXIT_USAGE;
	memset(&st, 0, sizeof(st));
	memset(&t, 0, sizeof(t));
	if (sc_fresh(&o))
		rc = SVC_STORE_OK;
	else if ((rc = sc_open(&o, 1, &t)))
		return rc;
	else
		rc = svc_stats(&t, &st, why, sizeof(why));
	sh = rc || o.shared ? NULL : sc_daemon_tier(o.socket);
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
			sc_print_tier(sh);
	}
	json_decref(sh);
	svc_target_close(&t);
	return sc_exit(rc);
}

struct sc_verify {
	const struct sc_docs *ds;
	int json;
};

/* A document whose set of parts lacks some (service/parts.c). */
static void
sc_parts_cb(void *arg, const uint8_t did[SVC_ID_BYTES], const char *why)
{
	struct sc_verify *v = arg;
	char dh[2 * SVC_ID_BYTES + 1], label[8 * 256];
	svc_hex(did, SVC_ID_BYTES, dh);
	if (v->json) {
		cli_json_line("parts", json_pack("{s:s, s:b, s:o}", "doc_id", dh, "ok", 0, "error",
		    cli_json_cstr(why)));
		return;
	}
	sc_docs_label(v->ds, did, label, sizeof(label));
	printf("%s  INCOMPLETE: %s\n", label, why);
}

static void
sc_verify_cb(void *arg, const uint8_t did[SVC_ID_BYTES], const uint8_t pid[SVC_ID_BYTES],
    const char *why)
{
	struct sc_verify *v = arg;
	char dh[2 * SVC_ID_BYTES + 1], ph[2 * SVC_ID_BYTES + 1], label[8 * 256];
	const struct svc_doc *d = NULL;
	size_t i;
	svc_hex(did, SVC_ID_BYTES, dh);
	svc_hex(pid, SVC_ID_BYTES, ph);
	for (i = 0; i < v->ds->n; i++)
		if (!memcmp(v->ds->d[i].doc_id, did, SVC_ID_BYTES))
			d = &v->ds->d[i];
	if (v->json) {
		json_t *o = json_pack("{s:s, s:o, s:s, s:b}", "doc_id", dh, "name",
		    cli_json_cstr(d ? d->name : ""), "profile_id", ph, "ok", why == NULL);
		if (o && why)
			json_object_set_new(o, "error", cli_json_cstr(why));
		cli_json_line("snapshot", o);
	} else {
		sc_docs_label(v->ds, did, label, sizeof(label));
		printf("%s  snapshot %.12s  %s%s\n", label, ph, why ? "CORRUPT: " : "ok",
		    why ? why : "");
	}
}

/* verify's look at the text index (svc_index_verify): each finding. */
static void
sc_index_cb(void *arg, const uint8_t doc[SVC_ID_BYTES], long part, int problem,
    const char *why)
{
	struct sc_verify *v = arg;
	char hex[2 * SVC_ID_BYTES + 1], label[8 * 256], where[32] = "";
	static const uint8_t zero[SVC_ID_BYTES];
	svc_hex(doc, SVC_ID_BYTES, hex);
	if (v->json) {
		cli_json_line("index", json_pack("{s:s, s:I, s:b, s:o}", "doc_id", hex, "part",
		    (json_int_t)part, "problem", problem, "message", cli_json_cstr(why)));
		return;
	}
	if (part >= 0)
		snprintf(where, sizeof(where), " part %ld", part);
	if (!memcmp(doc, zero, SVC_ID_BYTES))
		snprintf(label, sizeof(label), "the index");
	else
		sc_docs_label(v->ds, doc, label, sizeof(label));
	printf("%s%s  %s%s\n", label, where, problem ? "INDEX: " : "note: ", why);
}

static void
sc_index_summary(const struct svc_index_verified *r)
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

int
cli_verify(int argc, char **argv)
{
	struct sc_opts o;
	struct svc_target t;
	struct sc_docs ds;
	struct sc_verify v = { &ds, 0 };
	struct svc_verify_req rq = { NULL, sc_verify_cb, sc_parts_cb, sc_index_cb, &v };
	struct svc_verified vd;
	const struct svc_index_verified *ix = &vd.index;
	uint8_t id[SVC_ID_BYTES];
	char why[512] = "";
	int i, rc;
	memset(&ds, 0, sizeof(ds));
	memset(&vd, 0, sizeof(vd));
	if ((rc = sc_begin(argc, argv, 0, 1, 1, &o, &t, &i)))
		return rc;
	if (i == argc - 1 && (rc = sc_resolve(&t, argv[i], id)))
		goto out;
	/* the names first: the reports name documents */
	if ((rc = sc_docs(&t, &ds, "verify", 1, 0)) && rc != CLI_EXIT_CORRUPT)
		goto out;
	v.json = o.json;
	rq.doc = i == argc - 1 ? id : NULL;
	rc = svc_verify(&t, &rq, &vd, why, sizeof(why));
	if (rc && rc != SVC_STORE_ERR_CORRUPT)
		cli_err("verify: %s", why);
	if (o.json) {
		json_t *res = json_pack("{s:i, s:i, s:i}", "checked", (int)vd.checked, "corrupt",
		    (int)vd.corrupt, "incomplete_parts", (int)vd.parts_bad);
		if (res && vd.index_checked)
			json_object_set_new(res, "index", json_pack("{s:b, s:I, s:I, s:I, s:I}",
			    "exists", ix->exists, "rows", (json_int_t)ix->rows, "texts",
			    (json_int_t)ix->texts, "problems", (json_int_t)ix->problems,
			    "without_text", (json_int_t)ix->docs_without_text));
		cli_json_line("result", res);
	} else {
		printf("%ld snapshot%s checked, %ld corrupt\n", vd.checked, vd.checked == 1 ? "" : "s",
		    vd.corrupt);
		if (vd.parts_bad)
			printf("%ld document%s with parts missing\n", vd.parts_bad,
			    vd.parts_bad == 1 ? "" : "s");
		if (vd.index_checked)
			sc_index_summary(ix);
	}
	rc = vd.corrupt || vd.parts_bad || (vd.index_checked && ix->problems) ? CLI_EXIT_CORRUPT :
	    sc_exit(rc);
	if (rc && o.json && vd.corrupt)
		cli_json_error("corrupt", rc, "corrupt snapshots found (see the snapshot lines)",
		    NULL);
	else if (rc && o.json && vd.parts_bad)
		cli_json_error("corrupt", rc, "documents with parts missing (see the parts lines; "
		    "ingest them again)", NULL);
	else if (rc && o.json && vd.index_checked && ix->problems)
		cli_json_error("corrupt", rc, "the text index is out of step with the store (see the "
		    "index lines; the next search or kvsnapd start rebuilds it)", NULL);
out:
	free(ds.d);
	svc_target_close(&t);
	return rc;
}

static void
sc_prune_cb(void *arg, const uint8_t did[SVC_ID_BYTES], const struct svc_doc *d,
    const uint8_t pid[SVC_ID_BYTES], uint64_t bytes, int64_t last_used_us)
{
	const struct sc_opts *o = arg;
	char dh[2 * SVC_ID_BYTES + 1], ph[2 * SVC_ID_BYTES + 1], u[32], label[8 * 256],
	    size[32];
	svc_hex(did, SVC_ID_BYTES, dh);
	svc_hex(pid, SVC_ID_BYTES, ph);
	if (o->json) {
		svc_json_time(last_used_us, u, sizeof(u));
		cli_json_line("snapshot", json_pack("{s:s, s:o, s:s, s:I, s:s, s:b}", "doc_id", dh,
		    "name", cli_json_cstr(d ? d->name : ""), "profile_id", ph, "bytes",
		    (json_int_t)bytes, "last_used", u, "dropped", !o->dry_run));
	} else {
		if (d)
			sc_label(d, label, sizeof(label));
		else
			snprintf(label, sizeof(label), "%.12s", dh);
		cli_show_size(bytes, size, sizeof(size));
		cli_show_ago(last_used_us, u, sizeof(u));
		printf("%s %s  snapshot %.12s  %s  used %s\n", o->dry_run ? "would drop" :
		    "dropped", label, ph, size, u);
	}
}

/* A document prune skipped for its damaged metadata: named. */
static void
sc_prune_damaged(void *arg, const uint8_t doc_id[SVC_ID_BYTES], const char *why)
{
	(void)arg;
	(void)doc_id;
	fprintf(stderr, "kvsnap: warning: prune: %s; skipped, nothing of it dropped (kvsnap "
	    "verify reports it, kvsnap rm removes it)\n", why);
}

int
cli_prune(int argc, char **argv)
{
	struct sc_opts o;
	struct svc_target t;
	struct svc_prune_req p = { 0, 0, 0, 0, sc_prune_cb, sc_prune_damaged, &o };
	struct svc_pruned pd;
	char why[512] = "", size[32];
	int i = sc_args(argc, argv, &o, 0, 0), rc;
	if (i < 0)
		return CLI_EXIT_USAGE;
	if ((rc = sc_open(&o, o.dry_run, &t)))
		return rc;
	p.older_than_us = o.older_than_us;
	p.max_bytes = o.max_bytes;
	p.keep = o.keep;
	p.dry_run = o.dry_run;
	rc = svc_prune(&t, &p, &pd, why, sizeof(why));
	if (rc) {
		cli_err("prune: %s", why);
	} else {
		sc_index_warn(pd.index_why);
		if (o.json) {
			cli_json_line("result", json_pack("{s:I, s:I, s:b}", "snapshots",
			    (json_int_t)pd.dropped, "bytes", (json_int_t)pd.bytes, "dry_run",
			    o.dry_run));
		} else {
			cli_show_size(pd.bytes, size, sizeof(size));
			printf("%s %lld snapshot%s, %s\n", o.dry_run ? "would drop" : "dropped",
			    (long long)pd.dropped, pd.dropped == 1 ? "" : "s", size);
		}
	}
	svc_target_close(&t);
	return sc_exit(rc);
}
