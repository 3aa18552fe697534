/*
 * kvsnap.c: the kvsnap command-line client: dispatch to subcommands.
 */
#include <stdio.h>
#include <string.h>

#include "clients/cli.h"

static const struct cli_cmd cli_cmds[] = {
	{ "ingest", "compress documents into snapshots (--local: in-process)", cli_ingest },
	{ "query", "answer a question from a snapshot (--local: in-process)", cli_query },
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
};

static void
cli_usage(FILE *f)
{
	size_t i;
	fprintf(f, "usage: kvsnap COMMAND [OPTIONS]   (kvsnap COMMAND -h for help)\n\ncommands:\n");
	for (i = 0; i < sizeof(cli_cmds) / sizeof(cli_cmds[0]); i++)
		fprintf(f, "  %-14s %s\n", cli_cmds[i].name, cli_cmds[i].summary);
	fprintf(f, "\nexit codes: 0 ok, 1 usage, 2 not found, 3 daemon unreachable,\n"
	    "            4 corrupt or unsupported data, 5 other failure\n");
}

int
main(int argc, char **argv)
{
	size_t i;

	if (argc < 2) {
		cli_usage(stderr);
		return CLI_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		cli_usage(stdout);
		return CLI_EXIT_OK;
	}
	for (i = 0; i < sizeof(cli_cmds) / sizeof(cli_cmds[0]); i++)
		if (!strcmp(argv[1], cli_cmds[i].name))
			return cli_cmds[i].run(argc - 1, argv + 1);
	cli_err("unknown command '%s' (try kvsnap -h)", argv[1]);
	return CLI_EXIT_USAGE;
}
