/*
 * cli_search.c: `kvsnap search QUESTION...`: the parts of documents that
 * best match a question's words (BM25 over the text index beside the
 * store: service/search.c), best first, with their document, part, score
 * and a snippet.  Through kvsnapd (the protocol's `search`, which answers
 * with what the caller may read), or --local over the store in the state
 * directory (the file system is the gate: every document), which brings
 * the index in step with the store first (index_sync.c).  No model runs.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clients/cli.h"
#include "service/service.h"

#define SEARCH_K_DEFAULT 5

static void
search_usage(FILE *f, const char *cmd)
{
	(void)cmd;
	fprintf(f,
	    "usage: kvsnap search [-k N] [--local [--state DIR]] [-s SOCK] [--json] QUESTION...\n"
	    "The parts of stored documents whose text best matches the question's words\n"
	    "(BM25: any of its words, rarer ones count more; no model runs), best first:\n"
	    "score, document, part and a snippet.  Through kvsnapd (only the documents you may\n"
	    "read), or --local over the store in the state directory.\n"
	    "  -k, --top N   how many parts (1 to %d, default %d)\n"
	    "  --local       without the daemon: the store in --state DIR (its text index is\n"
	    "                brought in step with the store first)\n",
	    SVC_SEARCH_K_MAX, SEARCH_K_DEFAULT);
}

/* One hit for people: "  12.41  NAME (1e22b3c4d5e6)  part 0" and the
 * snippet below; both made safe for a terminal. */
static void
search_print(int rank, const char *hex, const char *name, long long part, double score,
    const char *snippet)
{
	char label[6 * 256], snip[6 * SVC_SNIPPET_MAX];
	cli_term_str(name && name[0] ? name : "", label, sizeof(label));
	cli_term_str(snippet ? snippet : "", snip, sizeof(snip));
	printf("%2d. %7.3f  %s%s%.12s%s  part %lld\n    %s\n", rank, score, label,
	    label[0] ? " (" : "", hex, label[0] ? ")" : "", part, snip);
}

/* The hits, as the daemon's result holds them: printed, or --json lines. */
static int
search_show(json_t *hits)
{
	size_t i;
	json_t *h;
	json_array_foreach(hits, i, h) {
		if (cli_g.json) {
			json_t *o = json_deep_copy(h);
			if (o)
				json_object_set_new(o, "rank", json_integer((json_int_t)i + 1));
			cli_json_line("hit", o);
		} else {
			search_print((int)i + 1, json_string_value(json_object_get(h, "doc_id")),
			    json_string_value(json_object_get(h, "name")),
			    (long long)json_integer_value(json_object_get(h, "part")),
			    json_number_value(json_object_get(h, "score")),
			    json_string_value(json_object_get(h, "snippet")));
		}
	}
	if (cli_g.json)
		cli_json_line("result", json_pack("{s:I}", "hits", (json_int_t)json_array_size(hits)));
	else if (!json_array_size(hits))
		printf("no part matches\n");
	return CLI_EXIT_OK;
}

/* --local: the store read-only, the index beside it (rebuilt or brought in
 * step, in memory when the directory is not ours to write). */
static int
search_local(const char *question, long k)
{
	struct svc_hit *hits = NULL;
	struct svc_index_sync sy;
	struct svc_index *ix = NULL;
	struct store *s = NULL;
	const char *dir = cli_state_dir(cli_g.state);
	char why[512] = "";
	unsigned n = 0;
	json_t *arr;
	int rc;

	if (!dir) {
		cli_err("no state directory: pass --state DIR or set KVSNAP_STATE");
		return CLI_EXIT_USAGE;
	}
	if ((rc = svc_store_open(&s, dir, 1, why, sizeof(why)))) {
		cli_err("cannot open the store in %s: %s", dir, why);
		return rc == SVC_STORE_ERR_CORRUPT ? CLI_EXIT_CORRUPT : CLI_EXIT_FAILURE;
	}
	if (svc_index_open(s, dir, access(dir, W_OK) != 0, 1, &ix, &sy, why, sizeof(why))) {
		cli_err("search: the text index: %s", why);
		svc_store_close(s);
		return CLI_EXIT_FAILURE;
	}
	if (sy.bad)
		fprintf(stderr, "kvsnap: warning: %ld text record%s fail their checks (kvsnap verify "
		    "names them)\n", sy.bad, sy.bad == 1 ? "" : "s");
	if (!(hits = calloc((size_t)k, sizeof(*hits))) ||
	    svc_search_in(s, ix, NULL, question, NULL, (unsigned)k, hits, &n, why, sizeof(why))) {
		cli_err("search: %s", hits ? why : "out of memory");
		free(hits);
		svc_index_close(ix);
		svc_store_close(s);
		return CLI_EXIT_FAILURE;
	}
	arr = svc_hits_json(hits, n, cli_json_cstr);
	rc = arr ? search_show(arr) : CLI_EXIT_FAILURE;
	json_decref(arr);
	free(hits);
	svc_index_close(ix);
	svc_store_close(s);
	return rc;
}

static int
search_daemon(const char *question, long k)
{
	struct cli_conn c;
	json_t *req, *ev;
	int ret = CLI_EXIT_UNREACHABLE, r;

	if (!(req = json_pack("{s:i, s:i, s:s, s:s, s:i}", "v", 1, "id", 1, "op", "search",
	    "question", question, "k", (int)k))) {
		cli_err("the question is not valid UTF-8");
		return CLI_EXIT_USAGE;
	}
	if (cli_conn_open(&c, cli_socket_path(cli_g.socket))) {
		json_decref(req);
		return CLI_EXIT_UNREACHABLE;
	}
	r = cli_conn_send(&c, req, -1);
	json_decref(req);
	if (r) {
		cli_conn_close(&c);
		return r;
	}
	while ((ev = cli_conn_recv(&c))) {
		const char *kind = json_string_value(json_object_get(ev, "event"));
		if (kind && !strcmp(kind, "result")) {
			ret = search_show(json_object_get(ev, "hits"));
			json_decref(ev);
			break;
		}
		if (kind && !strcmp(kind, "error")) {
			const char *code = json_string_value(json_object_get(ev, "code"));
			const char *msg = json_string_value(json_object_get(ev, "message"));
			ret = cli_exit_for_code(code);
			cli_err("search: %s (%s)", msg ? msg : "error", code ? code : "?");
			if (cli_json_mode)
				cli_json_error(code, ret, msg ? msg : "error", NULL);
			json_decref(ev);
			break;
		}
		json_decref(ev);
	}
	cli_conn_close(&c);
	return ret;
}

int
cli_search(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "top", required_argument, NULL, 'k' },
		{ "local", no_argument, NULL, 'L' },
		{ NULL, 0, NULL, 0 }
	};
	struct cli_opts o = { .shortopts = "k:", .longopts = opts,
		.globals = CLI_G_SOCKET | CLI_G_STATE | CLI_G_JSON, .operands = "QUESTION...",
		.usage = search_usage };
	long k = SEARCH_K_DEFAULT;
	int local = 0, c, rc;
	char *question;

	while ((c = cli_getopt(&o, argc, argv)) != -1) {
		switch (c) {
		case 'k':
			if (cli_long(&o, optarg, 1, SVC_SEARCH_K_MAX, &k))
				return CLI_EXIT_USAGE;
			break;
		case 'L': local = 1; break;
		default: return CLI_EXIT_USAGE; /* cli_getopt said why */
		}
	}
	if ((rc = cli_operands(&o, argc, argv, 1, -1)))
		return rc;
	if (local && (cli_g.given & CLI_G_SOCKET)) {
		cli_usage_err(&o, "-s/--socket names a daemon; --local runs without one");
		return CLI_EXIT_USAGE;
	}
	if (!local && (cli_g.given & CLI_G_STATE)) {
		cli_usage_err(&o, "--state is for --local (kvsnapd has its own store)");
		return CLI_EXIT_USAGE;
	}
	if (cli_blank(argc - optind, argv + optind)) {
		cli_usage_err(&o, "the question is empty");
		return CLI_EXIT_USAGE;
	}
	if (!(question = cli_join(argc - optind, argv + optind))) {
		cli_err("out of memory");
		return CLI_EXIT_FAILURE;
	}
	rc = local ? search_local(question, k) : search_daemon(question, k);
	free(question);
	return rc;
}
