/*
 * kvsnap.c: the kvsnap command-line client: dispatch to subcommands.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clients/cli.h"
#include "engine/engine.h"

static const struct cli_cmd cli_cmds[] = {
	{ "ingest", "compress documents into snapshots (--local: in-process)", cli_ingest },
	{ "query", "answer a question from a snapshot (--local: in-process)", cli_query },
	{ "shrink", "derive a smaller kvzip snapshot by its stored scores (no model run)",
	    cli_shrink },
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
	fprintf(f, "usage: kvsnap [--backend cpu|cuda] COMMAND [OPTIONS]   (kvsnap COMMAND -h for help)\n"
	    "\n--backend (or $KVSNAP_BACKEND): where the model runs in-process (default cpu)\n"
	    "\ncommands:\n");
	for (i = 0; i < sizeof(cli_cmds) / sizeof(cli_cmds[0]); i++)
		fprintf(f, "  %-14s %s\n", cli_cmds[i].name, cli_cmds[i].summary);
	fprintf(f, "\nexit codes: 0 ok, 1 usage, 2 not found, 3 daemon unreachable,\n"
	    "            4 corrupt or unsupported data, 5 other failure,\n"
	    "            6 compute backend not available\n");
}

/* The compute backend for in-process model work: --backend NAME before the
 * command, else $KVSNAP_BACKEND, else the CPU. */
static int
cli_backend(int *argc, char ***argv)
{
	char why[512];

	if (*argc >= 3 && !strcmp((*argv)[1], "--backend")) {
		const char *name = (*argv)[2];
		(*argv)[2] = (*argv)[0];
		*argv += 2;
		*argc -= 2;
		if (eng_use_backend(name, why, sizeof(why))) {
			cli_err("backend %s: %s", name, why);
			return -1;
		}
		return 0;
	}
	if (eng_use_backend_env(why, sizeof(why))) {
		cli_err("backend %s: %s", getenv("KVSNAP_BACKEND"), why);
		return -1;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	size_t i;

	if (cli_backend(&argc, &argv))
		return CLI_EXIT_NO_BACKEND;
	if (argc < 2) {
		cli_usage(stderr);
		return CLI_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		cli_usage(stdout);
		return CLI_EXIT_OK;
	}
	/* --json: failures become error events too (clients/cli_json.c) */
	cli_json_mode = cli_has_flag(argc - 1, argv + 1, "--json");
	for (i = 0; i < sizeof(cli_cmds) / sizeof(cli_cmds[0]); i++)
		if (!strcmp(argv[1], cli_cmds[i].name))
			return cli_json_finish(cli_cmds[i].run(argc - 1, argv + 1));
	cli_err("unknown command '%s' (try kvsnap -h)", argv[1]);
	return CLI_EXIT_USAGE;
}
