/*
 * kvsnap.c: the kvsnap command-line client: dispatch to subcommands.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clients/cli.h"
#include "clients/tools/tools.h"
#include "common/paths.h"
#include "service/service.h"

static const struct cli_cmd cli_cmds[] = {
	{ "ingest", "compress documents into snapshots (--local: in-process)", cli_ingest },
	{ "query", "answer a question from a snapshot (--local: in-process)", cli_query },
	{ "shrink", "derive a smaller kvzip snapshot by its stored scores (no model run)",
	    cli_shrink },
	{ "search", "the parts of documents that best match a question's words (no model)",
	    cli_search },
	{ "ls", "list stored documents", cli_ls },
	{ "info", "show a document and its snapshots", cli_info },
	{ "rm", "remove a document and its snapshots", cli_rm },
	{ "rename", "name a document", cli_rename },
	{ "stats", "store totals", cli_stats },
	{ "verify", "check every checksum of every snapshot", cli_verify },
	{ "prune", "drop snapshots, least recently used first", cli_prune },
	{ "generate", "run the model in-process on a prompt (no daemon)", cli_generate },
	{ "tokenize", "print the token ids of a text", cli_tokenize },
	{ "ask", "compress a document, then answer a question from it (in-process)", cli_ask },
	{ "pod-calibrate", "group layers for the pod policy (writes a block map)",
	    cli_pod_calibrate },
	{ "train-heads", "train Locret retaining heads (writes a sidecar)", cli_train_heads },
	{ "selftest", "check a compute backend (--backend cuda) against the CPU",
	    cli_selftest },
};

static void
cli_usage(FILE *f)
{
	size_t i;
	fprintf(f, "usage: kvsnap [GLOBAL FLAGS] COMMAND [OPTIONS] [ARGS]   (kvsnap COMMAND -h for help)\n"
	    "\nglobal flags, before or after the command (a command they do not apply to says so):\n"
	    "  -s, --socket SOCK  kvsnapd's socket (ingest, query; default $KVSNAP_SOCKET, else\n"
	    "                     $XDG_RUNTIME_DIR/kvsnap/kvsnapd.sock, else /run/kvsnap/kvsnapd.sock)\n"
	    "  --state DIR        the store (--local, shrink and the store commands; default\n"
	    "                     $KVSNAP_STATE, else ~/.local/state/kvsnap)\n"
	    "  -m, --model GGUF   the model of in-process commands (default $KVSNAP_MODEL, else\n"
	    "                     the bundled one)\n"
	    "  --backend cpu|cuda where in-process model work runs (default $KVSNAP_BACKEND, else cpu)\n"
	    "  --json             one JSON object per line\n"
	    "  -h, --help         help (of the command, after or before it)\n"
	    "  --version          version, formats and compute backends\n"
	    "\ncommands:\n");
	for (i = 0; i < sizeof(cli_cmds) / sizeof(cli_cmds[0]); i++)
		fprintf(f, "  %-14s %s\n", cli_cmds[i].name, cli_cmds[i].summary);
	fprintf(f, "\nexit codes: 0 ok, 1 usage, 2 not found, 3 daemon unreachable,\n"
	    "            4 corrupt or unsupported data, 5 other failure,\n"
	    "            6 compute backend not available\n"
	    "documentation: %s (README.md, PROTOCOL.md, HTTP.md, JSON.md, ...)\n", kv_doc_dir());
}

int
main(int argc, char **argv)
{
	size_t i, n = sizeof(cli_cmds) / sizeof(cli_cmds[0]);
	const char *near;
	int at;

	svc_child_main(argc, argv); /* a document's extraction (formats/isolate.c) */
	if ((at = cli_global_lead(argc, argv)) < 0)
		return CLI_EXIT_USAGE;
	if (at < argc && !strcmp(argv[at], "help")) { /* kvsnap help [COMMAND] */
		if (at + 1 >= argc) {
			cli_usage(stdout);
			return CLI_EXIT_OK;
		}
		cli_g.help = 1;
		at++;
	}
	if (at >= argc) {
		if (cli_g.help) {
			cli_usage(stdout);
			return CLI_EXIT_OK;
		}
		fprintf(stderr, "kvsnap: missing COMMAND (kvsnap COMMAND [OPTIONS] [ARGS])\n"
		    "run 'kvsnap -h' for help\n");
		return CLI_EXIT_USAGE;
	}
	/* the command sees argv[0] = its name; with --json (before or after
	 * it), failures become error events too (clients/cli_json.c) */
	cli_json_mode = cli_g.json || cli_has_flag(argc - at, argv + at, "--json");
	for (i = 0; i < n; i++)
		if (!strcmp(argv[at], cli_cmds[i].name))
			return cli_json_finish(cli_cmds[i].run(argc - at, argv + at));
	if ((near = cli_nearest_cmd(argv[at], cli_cmds, n)))
		fprintf(stderr, "kvsnap: unknown command '%s' (did you mean %s?)\n", argv[at], near);
	else
		fprintf(stderr, "kvsnap: unknown command '%s'\n", argv[at]);
	fprintf(stderr, "run 'kvsnap -h' for the commands\n");
	return CLI_EXIT_USAGE;
}
