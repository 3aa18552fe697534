/*
 * cli_library.c: what `kvsnap query --docs A,B QUESTION` adds to a query,
 * for the daemon path (cli_daemon.c) and --local (cli_local.c) alike:
 * its flags, and the sources line printed from the result (the
 * protocol's result event; --local builds the same object).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "clients/cli.h"
#include "service/service.h"

_Static_assert(CLI_LIB_MAX == SVC_LIB_MAX, "the CLI's document limit is the service's");

int
cli_lib_flag(const struct cli_opts *o, int c, const char *v, struct cli_lib *lib)
{
	enum svc_lib_mode m;
	char *p, *save = NULL;

	switch (c) {
	case CLI_O_DOCS:
		free(lib->list);
		lib->n = 0;
		if (!(lib->list = strdup(v))) {
			cli_err("out of memory");
			return -1;
		}
		for (p = strtok_r(lib->list, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
			if (lib->n == CLI_LIB_MAX) {
				cli_usage_err(o, "--docs names at most %d documents", CLI_LIB_MAX);
				return -1;
			}
			lib->refs[lib->n++] = p;
		}
		if (!lib->n) {
			cli_usage_err(o, "--docs needs documents: --docs A,B (names, ids or prefixes)");
			return -1;
		}
		lib->on = 1;
		return 0;
	case CLI_O_ALL:
		lib->all = lib->on = 1;
		return 0;
	case CLI_O_MODE:
		if (svc_lib_mode_parse(v, &m)) {
			cli_usage_err(o, "--mode needs side, parts or pick, got '%s'", v);
			return -1;
		}
		lib->mode = v;
		return 0;
	case CLI_O_TOP:
		if (cli_long(o, v, 1, CLI_LIB_MAX, &lib->top))
			return -1;
		return 0;
	case CLI_O_JUDGE:
		if (cli_long(o, v, 1, 4096, &lib->judge))
			return -1;
		return 0;
	case CLI_O_MIN_CONF:
		if (cli_double(o, v, -1000.0, 0, 0.0, &lib->min_conf))
			return -1;
		lib->min_conf_set = 1;
		return 0;
	}
	return 1;
}

int
cli_lib_done(const struct cli_opts *o, const struct cli_lib *lib)
{
	if (lib->all && lib->n) {
		cli_usage_err(o, "--all asks the whole library; --docs A,B names the documents: "
		    "one of them");
		return -1;
	}
	if (lib->top && !lib->all) {
		cli_usage_err(o, "--top N is for --all (the best N parts the index finds)");
		return -1;
	}
	if (!lib->on && (lib->mode || lib->min_conf_set || lib->judge)) {
		cli_usage_err(o, "%s is for a library question (--docs A,B or --all)",
		    lib->mode ? "--mode" : lib->judge ? "--judge-tokens" : "--min-conf");
		return -1;
	}
	return 0;
}

void
cli_lib_free(struct cli_lib *lib)
{
	free(lib->list);
	lib->list = NULL;
}

void
cli_lib_print(json_t *res, int verbose)
{
	json_t *srcs = json_object_get(res, "sources"), *s;
	const char *from = json_string_value(json_object_get(res, "answered_from"));
	json_t *apart = json_object_get(res, "answered_part");
	size_t i;
	int k = 0, skipped = 0;
	char label[6 * 256];

	printf("sources:");
	json_array_foreach(srcs, i, s) {
		json_t *sc = json_object_get(s, "score");
		const char *id = json_string_value(json_object_get(s, "doc_id"));
		if (!json_is_true(json_object_get(s, "consulted"))) {
			skipped++;
			continue;
		}
		int this;
		cli_term_str(json_string_value(json_object_get(s, "label")), label, sizeof(label));
		printf("%s %s", k++ ? "," : "", label);
		/* a document in parts: the part answered from */
		this = from && id && !strcmp(from, id) && (!json_is_integer(apart) ||
		    json_integer_value(apart) == json_integer_value(json_object_get(s, "part")));
		if (this)
			printf(" (answered from%s", json_is_number(sc) ? "" : ")");
		else if (json_is_number(sc))
			printf(" (");
		if (json_is_number(sc))
			printf("%sscore %.2f)", this ? ", " : "", json_number_value(sc));
	}
	if (!k)
		printf(" none");
	printf("\n");
	if (skipped) {
		k = 0;
		printf("not consulted:");
		json_array_foreach(srcs, i, s) {
			if (json_is_true(json_object_get(s, "consulted")))
				continue;
			cli_term_str(json_string_value(json_object_get(s, "label")), label,
			    sizeof(label));
			printf("%s %s (%s)", k++ ? ";" : "", label,
			    json_string_value(json_object_get(s, "why")));
		}
		printf("\n");
	}
	fflush(stdout);
	if (verbose)
		fprintf(stderr, "kvsnap: library question (%s, %zu documents): confidence %.3f%s, "
		    "first answer token after %.3f s, handed on after %.3f s (%lld question "
		    "tokens), %lld answer tokens in %.2f s\n",
		    json_string_value(json_object_get(res, "mode")), json_array_size(srcs),
		    json_number_value(json_object_get(res, "confidence")),
		    json_is_true(json_object_get(res, "abstained")) ? " (abstained)" : "",
		    json_number_value(json_object_get(res, "ttft_model_s")),
		    json_number_value(json_object_get(res, "ttft_s")),
		    (long long)json_integer_value(json_object_get(res, "prompt_tokens")),
		    (long long)json_integer_value(json_object_get(res, "tokens")),
		    json_number_value(json_object_get(res, "seconds")));
}
