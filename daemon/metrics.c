/*
 * metrics.c: every counter /metrics shows, in one place (metrics.h).
 * Counters are C11 atomics, counted by whichever thread sees the event
 * (the loop for HTTP requests, the workers for job results and errors),
 * read without a lock when scraped: a scrape may see one counter of a
 * request that another does not show yet, never a torn value.
 *
 * Names follow Prometheus' conventions (a counter ends in _total, a
 * duration is in seconds, sizes in bytes); docs/HTTP.md lists them.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/version.h"
#include "daemon/daemon_internal.h"
#include "daemon/metrics.h"

#define MET_STATUS_SLOTS 24  /* distinct HTTP statuses per route (a handful in use) */
#define MET_OPS 16           /* enum proto_op values counted */
#define MET_CODES 32         /* enum proto_code values counted */

/* Upper bounds of the request-duration buckets, seconds: a health check
 * is milliseconds, a streamed answer of a small model seconds, an HTTP
 * ingest of a long document minutes. */
static const double met_le[] = { 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
	30, 60, 300 };
#define MET_N_LE (sizeof(met_le) / sizeof(met_le[0]))


struct met_status {
	atomic_int code;           /* 0: free; claimed once, never changed */
	atomic_ullong n;
};

struct met_route {
	struct met_status status[MET_STATUS_SLOTS];
	atomic_ullong le[MET_N_LE]; /* requests at or under each bound (not cumulative) */
	atomic_ullong count, usec, bytes;
};

static struct {
	struct met_route http[MR_N];
	atomic_ullong done[MET_OPS];                 /* results by op */
	atomic_ullong errors[MET_OPS][MET_CODES];    /* errors by op and code */
	atomic_ullong gen_tokens[MET_OPS], gen_usec[MET_OPS], prompt_tokens[MET_OPS];
	atomic_ullong ingest_tokens, ingest_usec, ingest_skipped;
	atomic_ullong hits_local, hits_shared;       /* queries answered, by the tier read */
} met;

void
metrics_http(enum metrics_route r, int status, size_t bytes, double seconds)
{
	struct met_route *m = &met.http[(unsigned)r < MR_N ? r : MR_OTHER];
	size_t i;
	int want;

	for (i = 0; i < MET_STATUS_SLOTS; i++) {
		want = 0;
		if (atomic_load(&m->status[i].code) == status ||
		    atomic_compare_exchange_strong(&m->status[i].code, &want, status) ||
		    want == status) {
			atomic_fetch_add(&m->status[i].n, 1);
			break;
		}
	}
	/* more distinct statuses than slots: still in the count and histogram */
	for (i = 0; i < MET_N_LE; i++)
		if (seconds <= met_le[i]) {
			atomic_fetch_add(&m->le[i], 1);
			break;
		}
	atomic_fetch_add(&m->count, 1);
	atomic_fetch_add(&m->usec, (unsigned long long)(seconds > 0 ? seconds * 1e6 : 0));
	atomic_fetch_add(&m->bytes, bytes);
}

static unsigned long long
met_int(const json_t *body, const char *key)
{
	json_int_t v = json_integer_value(json_object_get(body, key));
	return v > 0 ? (unsigned long long)v : 0;
}

static unsigned long long
met_usec(const json_t *body, const char *key)
{
	double s = json_number_value(json_object_get(body, key));
	return s > 0 ? (unsigned long long)(s * 1e6) : 0;
}

void
metrics_job_result(enum proto_op op, const json_t *body)
{
	const char *tier;
	if ((unsigned)op >= MET_OPS)
		return;
	atomic_fetch_add(&met.done[op], 1);
	if (op == PROTO_OP_QUERY || op == PROTO_OP_CHAT) {
		atomic_fetch_add(&met.gen_tokens[op], met_int(body, "tokens"));
		atomic_fetch_add(&met.prompt_tokens[op], met_int(body, "prompt_tokens"));
		atomic_fetch_add(&met.gen_usec[op], met_usec(body, "seconds"));
		if (op == PROTO_OP_QUERY && (tier = json_string_value(json_object_get(body, "tier"))))
			atomic_fetch_add(!strcmp(tier, "shared") ? &met.hits_shared : &met.hits_local, 1);
	} else if (op == PROTO_OP_INGEST) {
		if (json_is_true(json_object_get(body, "skipped")))
			atomic_fetch_add(&met.ingest_skipped, 1);
		else {
			atomic_fetch_add(&met.ingest_tokens, met_int(body, "tokens"));
			atomic_fetch_add(&met.ingest_usec, met_usec(body, "seconds"));
		}
	}
}

void
metrics_job_error(enum proto_op op, enum proto_code code)
{
	if ((unsigned)op < MET_OPS && (unsigned)code < MET_CODES)
		atomic_fetch_add(&met.errors[op][code], 1);
}

/* ------------------------------------------------------------------------ */
/* The exposition                                                            */

static void
met_head(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* One sample line: NAME{LABELS} V, or NAME V when labels is NULL. */
static void
met_value(FILE *f, const char *name, const char *labels, unsigned long long v)
{
	if (labels)
		fprintf(f, "%s{%s} %llu\n", name, labels, v);
	else
		fprintf(f, "%s %llu\n", name, v);
}

/* A metric of one sample without labels: its HELP and TYPE, then v. */
static void
met_one(FILE *f, const char *name, const char *type, const char *help, unsigned long long v)
{
	met_head(f, name, type, help);
	met_value(f, name, NULL, v);
}

static double
met_sec(unsigned long long usec)
{
	return (double)usec / 1e6;
}

static void
met_render_http(FILE *f)
{
	unsigned long long cum;
	size_t r, i;
	int code;

	met_head(f, "kvsnap_http_requests_total", "counter",
	    "HTTP requests answered, by route and status (499: the client left first).");
	for (r = 0; r < MR_N; r++)
		for (i = 0; i < MET_STATUS_SLOTS; i++)
			if ((code = atomic_load(&met.http[r].status[i].code)))
				fprintf(f, "kvsnap_http_requests_total{route=\"%s\",status=\"%d\"} %llu\n",
				    metrics_route_name(r), code, atomic_load(&met.http[r].status[i].n));
	met_head(f, "kvsnap_http_request_duration_seconds", "histogram",
	    "From a whole request to its reply's last byte handed to the socket.");
	for (r = 0; r < MR_N; r++) {
		struct met_route *m = &met.http[r];
		unsigned long long count = atomic_load(&m->count);
		if (!count)
			continue;
		for (cum = 0, i = 0; i < MET_N_LE; i++) {
			cum += atomic_load(&m->le[i]);
			fprintf(f, "kvsnap_http_request_duration_seconds_bucket{route=\"%s\",le=\"%g\"} "
			    "%llu\n", metrics_route_name(r), met_le[i], cum);
		}
		/* +Inf is the count; a bucket counted after count was read is
		 * capped so the series stays cumulative */
		fprintf(f, "kvsnap_http_request_duration_seconds_bucket{route=\"%s\",le=\"+Inf\"} "
		    "%llu\n", metrics_route_name(r), count > cum ? count : cum);
		fprintf(f, "kvsnap_http_request_duration_seconds_sum{route=\"%s\"} %.6f\n",
		    metrics_route_name(r), met_sec(atomic_load(&m->usec)));
		fprintf(f, "kvsnap_http_request_duration_seconds_count{route=\"%s\"} %llu\n",
		    metrics_route_name(r), count > cum ? count : cum);
	}
	met_head(f, "kvsnap_http_response_bytes_total", "counter",
	    "Bytes of HTTP reply bodies, by route.");
	for (r = 0; r < MR_N; r++)
		if (atomic_load(&met.http[r].count))
			fprintf(f, "kvsnap_http_response_bytes_total{route=\"%s\"} %llu\n",
			    metrics_route_name(r), atomic_load(&met.http[r].bytes));
}

/* A counter of the ops that generate (query, chat), by op: v[op] as a
 * count, or (seconds) as microseconds shown in seconds. */
static void
met_gen_counter(FILE *f, const char *name, const char *help, atomic_ullong *v, int seconds)
{
	static const enum proto_op gen[] = { PROTO_OP_QUERY, PROTO_OP_CHAT };
	size_t i;

	met_head(f, name, "counter", help);
	for (i = 0; i < 2; i++) {
		unsigned long long n = atomic_load(&v[gen[i]]);
		if (seconds)
			fprintf(f, "%s{op=\"%s\"} %.6f\n", name, proto_op_name(gen[i]), met_sec(n));
		else
			fprintf(f, "%s{op=\"%s\"} %llu\n", name, proto_op_name(gen[i]), n);
	}
}

static void
met_render_jobs(FILE *f)
{
	size_t op, c;
	unsigned long long n;

	met_head(f, "kvsnap_jobs_total", "counter",
	    "Requests done without an error (socket protocol and HTTP), by op.");
	for (op = 0; op < MET_OPS; op++)
		if ((n = atomic_load(&met.done[op])))
			fprintf(f, "kvsnap_jobs_total{op=\"%s\"} %llu\n", proto_op_name(op), n);
	met_head(f, "kvsnap_job_errors_total", "counter",
	    "Requests that ended in an error (socket protocol and HTTP), by op and error code "
	    "(docs/PROTOCOL.md).");
	for (op = 0; op < MET_OPS; op++)
		for (c = 0; c < MET_CODES; c++)
			if ((n = atomic_load(&met.errors[op][c])))
				fprintf(f, "kvsnap_job_errors_total{op=\"%s\",code=\"%s\"} %llu\n",
				    proto_op_name(op), proto_code_name(c), n);
	met_gen_counter(f, "kvsnap_generated_tokens_total",
	    "Tokens generated by answered queries and chats; tokens per second is its rate over "
	    "kvsnap_generation_seconds_total's.", met.gen_tokens, 0);
	met_gen_counter(f, "kvsnap_generation_seconds_total",
	    "Seconds spent answering (the question's prefill and the decode), by op.", met.gen_usec, 1);
	met_gen_counter(f, "kvsnap_prompt_tokens_total",
	    "Prompt tokens of answered queries (the question) and chats (the conversation).",
	    met.prompt_tokens, 0);
	met_one(f, "kvsnap_ingested_tokens_total", "counter",
	    "Document tokens read through the model by ingests (skipped ones not counted).",
	    atomic_load(&met.ingest_tokens));
	met_head(f, "kvsnap_ingest_seconds_total", "counter", "Seconds spent by stored ingests.");
	fprintf(f, "kvsnap_ingest_seconds_total %.6f\n", met_sec(atomic_load(&met.ingest_usec)));
	met_one(f, "kvsnap_ingests_skipped_total", "counter",
	    "Ingests of a document already stored for this profile (no model pass).",
	    atomic_load(&met.ingest_skipped));
	met_head(f, "kvsnap_snapshot_hits_total", "counter",
	    "Queries answered from a snapshot, by the tier it was read from (shared: copied in "
	    "from the shared tier first).");
	met_value(f, "kvsnap_snapshot_hits_total", "tier=\"local\"", atomic_load(&met.hits_local));
	met_value(f, "kvsnap_snapshot_hits_total", "tier=\"shared\"", atomic_load(&met.hits_shared));
}

static void
met_render_gauges(FILE *f, struct daemon *d)
{
	struct svc_store_totals ss;
	struct svc_tier_stats ts;
	char why[256];
	int queued = 0, running = 0;

	jobs_depth(&queued, &running);
	met_one(f, "kvsnap_queue_depth", "gauge", "Jobs waiting for a worker.",
	    (unsigned long long)queued);
	met_one(f, "kvsnap_jobs_running", "gauge", "Jobs a worker is running.",
	    (unsigned long long)running);
	if (d && d->v && !svc_store_totals(d->v, &ss, why, sizeof(why))) {
		met_one(f, "kvsnap_store_documents", "gauge", "Documents in the local store.",
		    ss.n_docs);
		met_one(f, "kvsnap_store_snapshots", "gauge", "Snapshots in the local store.",
		    ss.n_snapshots);
		met_one(f, "kvsnap_store_bytes", "gauge", "Bytes of the stored snapshots.",
		    ss.stored_bytes);
		met_one(f, "kvsnap_store_map_used_bytes", "gauge",
		    "Bytes of the store's file in use (LMDB's map).", ss.map_used);
	} else {
		dlog(DLOG_WARN, "metrics: store statistics: %s", why);
	}
	if (d && d->v) {
		svc_tier_stats(d->v, &ts);
		if (ts.configured) {
			const char *lk = "kvsnap_shared_tier_lookups_total";
			const char *wr = "kvsnap_shared_tier_writes_total";
			met_one(f, "kvsnap_shared_tier_up", "gauge",
			    "1 when the shared tier answered at the last try.", ts.up ? 1 : 0);
			met_head(f, lk, "counter", "Snapshots looked for in the shared tier, by outcome.");
			met_value(f, lk, "result=\"hit\"", ts.hits);
			met_value(f, lk, "result=\"miss\"", ts.misses);
			met_value(f, lk, "result=\"error\"", ts.errors);
			met_head(f, wr, "counter", "Snapshots copied out to the shared tier, by outcome.");
			met_value(f, wr, "result=\"ok\"", ts.writes);
			met_value(f, wr, "result=\"error\"", ts.write_errors);
		}
	}
}

char *
metrics_render(struct daemon *d, size_t *len)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);

	if (!f)
		return NULL;
	met_head(f, "kvsnap_build_info", "gauge", "kvsnapd's version (the value is always 1).");
	fprintf(f, "kvsnap_build_info{version=\"%s\"} 1\n", KVSNAP_VERSION);
	met_render_http(f);
	met_render_jobs(f);
	met_render_gauges(f, d);
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	*len = n;
	return buf;
}
