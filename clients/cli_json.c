/*
 * cli_json.c: the one writer of kvsnap's --json lines (docs/JSON.md):
 * every line is one JSON object whose first member is "event" (the socket
 * protocol's names where they exist: progress, token, result, error,
 * queued), written whole and flushed.  With --json a failure is an error
 * event too, on stdout (its last line), while stderr keeps the plain
 * message for people.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clients/cli.h"
#include "common/cmdline.h"
#include "service/service.h"

int cli_json_mode;
static int json_errors;        /* error events written */
static char json_last_err[1024]; /* the last message cli_err printed */

void
cli_json_note(const char *msg)
{
	snprintf(json_last_err, sizeof(json_last_err), "%s", msg);
}

/* not UTF-8 (a path, a token's partial bytes): each byte outside ASCII
 * becomes U+FFFD, so the line stays valid JSON (the service's one rule,
 * which the document shape uses too) */
json_t *
cli_json_text(const char *s, size_t len)
{
	return svc_json_text(s, len);
}

json_t *
cli_json_cstr(const char *s)
{
	return cli_json_text(s ? s : "", s ? strlen(s) : 0);
}

void
cli_json_line(const char *event, json_t *fields)
{
	json_t *o = json_object();
	if (o) {
		json_object_set_new(o, "event", json_string(event));
		if (fields)
			json_object_update(o, fields);
		json_dumpf(o, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
		json_decref(o);
	} else {
		printf("{\"event\":\"%s\"}", event);
	}
	fputc('\n', stdout);
	fflush(stdout);
	json_decref(fields);
	if (!strcmp(event, "error"))
		json_errors++;
}

const char *
cli_exit_name(int rc)
{
	switch (rc) {
	case CLI_EXIT_USAGE: return "usage";
	case CLI_EXIT_NOT_FOUND: return "not_found";
	case CLI_EXIT_UNREACHABLE: return "unreachable";
	case CLI_EXIT_CORRUPT: return "corrupt";
	case CLI_EXIT_NO_BACKEND: return "no_backend";
	default: return "failure";
	}
}

void
cli_json_error(const char *code, int rc, const char *message, json_t *extra)
{
	json_t *o = json_pack("{s:s, s:o, s:i}", "code", code ? code : cli_exit_name(rc),
	    "message", cli_json_cstr(message), "exit", rc);
	if (o && extra)
		json_object_update(o, extra);
	json_decref(extra);
	cli_json_line("error", o);
}

void
cli_json_error_last(int rc, json_t *extra)
{
	cli_json_error(NULL, rc, json_last_err[0] ? json_last_err : "failed", extra);
}

int
cli_json_finish(int rc)
{
	if (cli_json_mode && rc != CLI_EXIT_OK && !json_errors)
		cli_json_error(NULL, rc, json_last_err[0] ? json_last_err :
		    cmdline_last_error()[0] ? cmdline_last_error() : rc == CLI_EXIT_USAGE ?
		    "usage error: see the command's -h" : "failed", NULL);
	return rc;
}
