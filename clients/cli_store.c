/*
 * cli_store.c: the store commands that need no daemon (DESIGN.md §7):
 * ls, info DOC, rm DOC, rename DOC NAME, stats, verify [DOC], prune.
 * They open the LMDB store in the state directory directly (no model;
 * the lookups kvsnapd's admin jobs share are service/docs.c's); LMDB's
 * lock file lets them run next to a daemon too.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clients/cli.h"
#include "service/service.h"
#include "storage/store.h"

/* Options every store command takes. */
struct st_opts {
	const char *state;
	int json, dry_run;
	int64_t older_than_us, keep;
	uint64_t max_bytes;
};

static void
st_usage(FILE *f, const char *cmd)
{
	fprintf(f, "usage: kvsnap %s [--state DIR] [--json]%s\n", cmd,
	    !strcmp(cmd, "info") || !strcmp(cmd, "rm") ? " DOC" :
	    !strcmp(cmd, "rename") ? " DOC NAME" :
	    !strcmp(cmd, "verify") ? " [DOC]" :
	    !strcmp(cmd, "prune") ? " [--older-than AGE] [--max-size BYTES] [--keep N] [--dry-run]" :
	    "");
	fprintf(f, "  --state DIR   the store (default $KVSNAP_STATE, else $XDG_STATE_HOME/kvsnap,\n"
	    "                else ~/.local/state/kvsnap)\n"
	    "  --json        one JSON object per line\n"
	    "DOC is a full doc_id, a unique hex prefix (4+ digits) or a name.\n");
	if (!strcmp(cmd, "prune"))
		fprintf(f, "  --older-than AGE   drop snapshots last used longer ago (e.g. 90s, 30m, 12h, 7d)\n"
		    "  --max-size BYTES   keep the store's snapshots under BYTES (K, M, G suffixes)\n"
		    "  --keep N           keep at most N snapshots\n"
		    "  --dry-run          only list what would be dropped\n"
		    "Least recently used snapshots go first.\n");
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

/* Parse the common options; returns the index of the first operand or -1. */
static int
st_parse(int argc, char **argv, struct st_opts *o)
{
	static const struct option opts[] = {
		{ "state", required_argument, NULL, 'S' },
		{ "json", no_argument, NULL, 'j' },
		{ "older-than", required_argument, NULL, 'o' },
		{ "max-size", required_argument, NULL, 'b' },
		{ "keep", required_argument, NULL, 'k' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int prune = !strcmp(argv[0], "prune"), c, bad = 0;
	long keep;

	memset(o, 0, sizeof(*o));
	o->keep = -1;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (!prune && (c == 'o' || c == 'b' || c == 'k' || c == 'n'))
			c = '?';
		switch (c) {
		case 'S': o->state = optarg; break;
		case 'j': o->json = 1; break;
		case 'o': bad |= (o->older_than_us = st_parse_age(optarg)) <= 0; break;
		case 'b': o->max_bytes = st_parse_size(optarg, &bad); bad |= !o->max_bytes; break;
		case 'k': bad |= cli_parse_long(optarg, 0, 1L << 40, &keep) != 0; o->keep = keep; break;
		case 'n': o->dry_run = 1; break;
		case 'h': st_usage(stdout, argv[0]); exit(CLI_EXIT_OK);
		default: bad = 1;
		}
	}
	if (bad) {
		st_usage(stderr, argv[0]);
		return -1;
	}
	return optind;
}

/* st_parse, then lo..hi operands; the index of the first, or -1 with the
 * usage printed. */
static int
st_args(int argc, char **argv, struct st_opts *o, int lo, int hi)
{
	int i = st_parse(argc, argv, o);
	if (i >= 0 && (argc - i < lo || argc - i > hi)) {
		st_usage(stderr, argv[0]);
		return -1;
	}
	return i;
}

static int
st_open(const struct st_opts *o, int read_only, struct store **s)
{
	struct store_opts so = { 0, 0, read_only };
	char why[512] = "";
	const char *dir = cli_state_dir(o->state);
	int rc;
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

static void
st_time(int64_t us, char *buf, size_t cap)
{
	time_t t = (time_t)(us / 1000000);
	struct tm tm;
	if (us <= 0 || !gmtime_r(&t, &tm) || !strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(buf, cap, "-");
}

static void
st_print_doc(const struct store_doc *d, int json)
{
	char hex[2 * SNAP_ID_BYTES + 1], c[32], u[32], name[6 * 256];
	int i;
	store_hex(d->doc_id, SNAP_ID_BYTES, hex);
	st_time(d->created_us, c, sizeof(c));
	st_time(d->last_used_us, u, sizeof(u));
	if (!json) {
		cli_term_str(d->name[0] ? d->name : "-", name, sizeof(name));
		printf("%.12s  %-20s %8llu tok %3d snap %10llu B  used %s\n", hex, name,
		    (unsigned long long)d->tokens, d->n_profiles,
		    (unsigned long long)d->stored_bytes, u);
		return;
	}
	printf("{\"doc_id\":\"%s\",\"name\":", hex);
	cli_json_str(stdout, d->name, strlen(d->name));
	printf(",\"source\":");
	cli_json_str(stdout, d->source, strlen(d->source));
	printf(",\"format\":");
	cli_json_str(stdout, d->format, strlen(d->format));
	printf(",\"bytes\":%llu,\"tokens\":%llu,\"created\":\"%s\",\"last_used\":\"%s\","
	    "\"snapshots\":%d,\"stored_bytes\":%llu,\"shared\":%s,\"owners\":[",
	    (unsigned long long)d->bytes, (unsigned long long)d->tokens, c, u, d->n_profiles,
	    (unsigned long long)d->stored_bytes, d->shared ? "true" : "false");
	/* who kvsnapd shows it to (the store commands themselves see all) */
	for (i = 0; i < d->n_owners; i++)
		printf("%s%u", i ? "," : "", (unsigned)d->owners[i]);
	printf("]}\n");
}

static int
st_ls_cb(void *arg, const struct store_doc *d)
{
	st_print_doc(d, *(int *)arg);
	return 0;
}

int
cli_ls(int argc, char **argv)
{
	struct st_opts o;
	struct store *s;
	char why[512] = "";
	int i, rc;
	if ((rc = st_begin(argc, argv, 0, 0, 1, &o, &s, &i)))
		return rc;
	rc = store_ls(s, st_ls_cb, &o.json, why, sizeof(why));
	if (rc)
		cli_err("ls: %s", why);
	store_close(s);
	return st_exit(rc);
}

struct st_info {
	int json;
	int n;
};

static int
st_profile_cb(void *arg, const uint8_t pid[SNAP_ID_BYTES], uint64_t bytes,
    const struct snap_header *h, const char *why, int64_t last_used_us)
{
	struct st_info *in = arg;
	char hex[2 * SNAP_ID_BYTES + 1], u[32];
	int64_t units = h ? svc_snapshot_units(h) : 0;
	store_hex(pid, SNAP_ID_BYTES, hex);
	st_time(last_used_us, u, sizeof(u));
	in->n++;
	if (in->json) {
		printf("{\"profile_id\":\"%s\",\"stored_bytes\":%llu,\"last_used\":\"%s\"", hex,
		    (unsigned long long)bytes, u);
		if (h) {
			printf(",\"profile\":");
			cli_json_str(stdout, h->profile, strlen(h->profile));
			printf(",\"tokens\":%llu,\"units\":%lld,\"quant\":\"%s\",\"pos_mode\":\"%s\"",
			    (unsigned long long)h->n_tokens, (long long)units, snap_quant_name(h->quant),
			    h->pos_mode ? "slot" : "original");
		} else {
			printf(",\"error\":");
			cli_json_str(stdout, why, strlen(why));
		}
		printf("}\n");
		return 0;
	}
	printf("  snapshot %.12s  %10llu B  used %s\n", hex, (unsigned long long)bytes, u);
	if (h)
		printf("    %s\n    %llu tokens -> %lld units (%s, %s positions)\n", h->profile,
		    (unsigned long long)h->n_tokens, (long long)units, snap_quant_name(h->quant),
		    h->pos_mode ? "slot" : "original");
	else
		printf("    unreadable header: %s\n", why);
	return 0;
}

int
cli_info(int argc, char **argv)
{
	struct st_opts o;
	struct store *s;
	struct store_doc d;
	struct st_info in;
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
	st_print_doc(&d, o.json);
	if (!o.json) {
		char fmt[6 * sizeof(d.format)];
		cli_term_str(d.format[0] ? d.format : "-", fmt, sizeof(fmt));
		printf("  format: %s\n", fmt);
	}
	in.json = o.json;
	in.n = 0;
	if ((rc = snap_profiles(s, id, st_profile_cb, &in, why, sizeof(why)))) {
		cli_err("info: %s", why);
		rc = st_exit(rc);
	}
out:
	store_close(s);
	return rc;
}

int
cli_rm(int argc, char **argv)
{
	struct st_opts o;
	struct store *s;
	uint8_t id[SNAP_ID_BYTES];
	char why[512] = "", hex[2 * SNAP_ID_BYTES + 1];
	int i, rc;
	if ((rc = st_begin(argc, argv, 1, 1, 0, &o, &s, &i)))
		return rc;
	if (!(rc = st_resolve(s, argv[i], id))) {
		rc = store_rm(s, id, why, sizeof(why));
		if (rc)
			cli_err("rm: %s", why);
		store_hex(id, SNAP_ID_BYTES, hex);
		if (!rc)
			printf(o.json ? "{\"removed\":\"%s\"}\n" : "removed %s\n", hex);
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
	uint8_t id[SNAP_ID_BYTES];
	char why[512] = "";
	int i, rc;
	if ((rc = st_begin(argc, argv, 2, 2, 0, &o, &s, &i)))
		return rc;
	if (!(rc = st_resolve(s, argv[i], id))) {
		rc = store_rename(s, id, argv[i + 1], why, sizeof(why));
		if (rc)
			cli_err("rename: %s", why);
		rc = st_exit(rc);
	}
	store_close(s);
	return rc;
}

int
cli_stats(int argc, char **argv)
{
	struct st_opts o;
	struct store *s;
	struct store_stats st;
	char why[512] = "";
	int i, rc;
	if ((rc = st_begin(argc, argv, 0, 0, 1, &o, &s, &i)))
		return rc;
	rc = store_stats(s, &st, why, sizeof(why));
	if (rc)
		cli_err("stats: %s", why);
	else if (o.json)
		printf("{\"documents\":%llu,\"snapshots\":%llu,\"stored_bytes\":%llu,"
		    "\"map_size\":%llu,\"map_used\":%llu}\n", (unsigned long long)st.n_docs,
		    (unsigned long long)st.n_snapshots, (unsigned long long)st.stored_bytes,
		    (unsigned long long)st.map_size, (unsigned long long)st.map_used);
	else
		printf("%llu documents, %llu snapshots, %llu bytes stored; map %llu of %llu bytes "
		    "used\n", (unsigned long long)st.n_docs, (unsigned long long)st.n_snapshots,
		    (unsigned long long)st.stored_bytes, (unsigned long long)st.map_used,
		    (unsigned long long)st.map_size);
	store_close(s);
	return st_exit(rc);
}

struct st_verify {
	int json, bad, n;
};

static int
st_verify_cb(void *arg, const uint8_t did[SNAP_ID_BYTES], const uint8_t pid[SNAP_ID_BYTES],
    const char *why)
{
	struct st_verify *v = arg;
	char dh[2 * SNAP_ID_BYTES + 1], ph[2 * SNAP_ID_BYTES + 1];
	store_hex(did, SNAP_ID_BYTES, dh);
	store_hex(pid, SNAP_ID_BYTES, ph);
	v->n++;
	v->bad += why != NULL;
	if (v->json) {
		printf("{\"doc_id\":\"%s\",\"profile_id\":\"%s\",\"ok\":%s", dh, ph,
		    why ? "false" : "true");
		if (why) {
			printf(",\"error\":");
			cli_json_str(stdout, why, strlen(why));
		}
		printf("}\n");
	} else {
		printf("%.12s/%.12s  %s%s\n", dh, ph, why ? "CORRUPT: " : "ok", why ? why : "");
	}
	return 0;
}

int
cli_verify(int argc, char **argv)
{
	struct st_opts o;
	struct store *s;
	struct st_verify v = { 0, 0, 0 };
	uint8_t id[SNAP_ID_BYTES];
	char why[512] = "";
	int i, rc;
	if ((rc = st_begin(argc, argv, 0, 1, 1, &o, &s, &i)))
		return rc;
	if (i == argc - 1 && (rc = st_resolve(s, argv[i], id)))
		goto out;
	v.json = o.json;
	rc = snap_verify(s, i == argc - 1 ? id : NULL, st_verify_cb, &v, why, sizeof(why));
	if (rc && rc != STORE_ERR_CORRUPT)
		cli_err("verify: %s", why);
	if (!o.json)
		printf("%d snapshots checked, %d corrupt\n", v.n, v.bad);
	rc = v.bad ? CLI_EXIT_CORRUPT : st_exit(rc);
out:
	store_close(s);
	return rc;
}

static int
st_prune_cb(void *arg, const uint8_t did[SNAP_ID_BYTES], const uint8_t pid[SNAP_ID_BYTES],
    uint64_t bytes, int64_t last_used_us)
{
	const struct st_opts *o = arg;
	char dh[2 * SNAP_ID_BYTES + 1], ph[2 * SNAP_ID_BYTES + 1], u[32];
	store_hex(did, SNAP_ID_BYTES, dh);
	store_hex(pid, SNAP_ID_BYTES, ph);
	st_time(last_used_us, u, sizeof(u));
	if (o->json)
		printf("{\"doc_id\":\"%s\",\"profile_id\":\"%s\",\"bytes\":%llu,\"last_used\":\"%s\","
		    "\"dropped\":%s}\n", dh, ph, (unsigned long long)bytes, u,
		    o->dry_run ? "false" : "true");
	else
		printf("%s %.12s/%.12s  %llu B  used %s\n", o->dry_run ? "would drop" : "dropped", dh,
		    ph, (unsigned long long)bytes, u);
	return 0;
}

int
cli_prune(int argc, char **argv)
{
	struct st_opts o;
	struct store *s;
	struct store_prune p;
	int64_t n = 0;
	uint64_t bytes = 0;
	char why[512] = "";
	int i = st_args(argc, argv, &o, 0, 0), rc;
	if (i < 0)
		return CLI_EXIT_USAGE;
	if (!o.older_than_us && !o.max_bytes && o.keep < 0) {
		cli_err("prune: give at least one of --older-than, --max-size, --keep");
		return CLI_EXIT_USAGE;
	}
	if ((rc = st_open(&o, o.dry_run, &s)))
		return rc;
	p.older_than_us = o.older_than_us;
	p.max_bytes = o.max_bytes;
	p.keep = o.keep;
	p.dry_run = o.dry_run;
	rc = store_prune(s, &p, st_prune_cb, &o, &n, &bytes, why, sizeof(why));
	if (rc)
		cli_err("prune: %s", why);
	else if (!o.json)
		printf("%s %lld snapshots, %llu bytes\n", o.dry_run ? "would drop" : "dropped",
		    (long long)n, (unsigned long long)bytes);
	store_close(s);
	return st_exit(rc);
}
