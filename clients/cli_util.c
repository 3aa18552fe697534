/*
 * cli_util.c: small helpers shared by the kvsnap subcommands.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "clients/cli.h"
#include "common/paths.h"
#include "service/service.h"

void
cli_err(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "kvsnap: %s\n", msg);
	cli_json_note(msg); /* --json: the error event's message */
}

int
cli_exit_for_engine(int err)
{
	switch (err) {
	case SVC_ENG_OK:
		return CLI_EXIT_OK;
	case SVC_ENG_ERR_IO:
	case SVC_ENG_ERR_NOT_FOUND:
		return CLI_EXIT_NOT_FOUND;
	case SVC_ENG_ERR_FORMAT:
	case SVC_ENG_ERR_VERSION:
	case SVC_ENG_ERR_ARCH:
	case SVC_ENG_ERR_TYPE:
	case SVC_ENG_ERR_SHAPE:
	case SVC_ENG_ERR_TOKENIZER:
		return CLI_EXIT_CORRUPT;
	case SVC_ENG_ERR_CONTEXT:
	case SVC_ENG_ERR_TOKEN:
	case SVC_ENG_ERR_ARG:
		return CLI_EXIT_USAGE;
	default:
		return CLI_EXIT_FAILURE;
	}
}

void
cli_json_str(FILE *f, const char *s, size_t len)
{
	size_t i;
	fputc('"', f);
	for (i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)s[i];
		switch (ch) {
		case '"': fputs("\\\"", f); break;
		case '\\': fputs("\\\\", f); break;
		case '\n': fputs("\\n", f); break;
		case '\r': fputs("\\r", f); break;
		case '\t': fputs("\\t", f); break;
		default:
			if (ch < 0x20)
				fprintf(f, "\\u%04x", ch);
			else
				fputc(ch, f);
		}
	}
	fputc('"', f);
}

void
cli_term_str(const char *s, char *out, size_t cap)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t o = 0;
	char esc[8];
	if (!cap)
		return;
	while (*p) {
		unsigned cp = 0;
		size_t skip = 1;
		if (*p < 0x20 || *p == 0x7f)
			snprintf(esc, sizeof(esc), "\\x%02x", *p);
		else if (*p == '\\')
			snprintf(esc, sizeof(esc), "\\\\");
		else if (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)
			cp = p[1], skip = 2; /* C1 */
		else if (p[0] == 0xe2 && p[1] == 0x80 && (p[2] == 0x8e || p[2] == 0x8f ||
		    (p[2] >= 0xaa && p[2] <= 0xae)))
			cp = 0x2000u + (p[2] - 0x80u), skip = 3;
		else if (p[0] == 0xe2 && p[1] == 0x81 && p[2] >= 0xa6 && p[2] <= 0xa9)
			cp = 0x2040u + (p[2] - 0x80u), skip = 3;
		else
			esc[0] = 0;
		if (cp)
			snprintf(esc, sizeof(esc), "\\u%04x", cp);
		if (!esc[0]) {
			if (o + 1 >= cap)
				break;
			out[o++] = (char)*p++;
			continue;
		}
		if (o + strlen(esc) >= cap)
			break;
		memcpy(out + o, esc, strlen(esc));
		o += strlen(esc);
		p += skip;
	}
	out[o] = 0;
}

/* Why the last cli_default_model() found nothing (cli_model_missing). */
static char cli_model_why[4096];

const char *
cli_default_model(void)
{
	static char path[PATH_MAX];
	return kv_model_find(path, sizeof(path), cli_model_why, sizeof(cli_model_why)) ?
	    NULL : path;
}

int
cli_model_missing(void)
{
	cli_err("%s", cli_model_why);
	return CLI_EXIT_NOT_FOUND;
}

char *
cli_read_file(const char *path, size_t max, size_t *len)
{
	int in = !strcmp(path, "-");
	FILE *f = in ? stdin : fopen(path, "rb");
	char *buf;
	size_t n = 0, cap = 1 << 16;

	if (!f) {
		cli_err("cannot open %s", path);
		return NULL;
	}
	buf = malloc(cap);
	while (buf) {
		size_t r = fread(buf + n, 1, cap - n, f);
		n += r;
		if (r == 0)
			break;
		if (n == cap) {
			char *nb;
			if (cap >= max) {
				cli_err("%s is larger than %zu MiB", in ? "stdin" : path, max >> 20);
				free(buf);
				buf = NULL;
				break;
			}
			nb = realloc(buf, cap * 2);
			if (!nb) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = nb;
			cap *= 2;
		}
	}
	if (!in)
		fclose(f);
	*len = n;
	return buf;
}

const char *
cli_state_dir(const char *flag)
{
	static char buf[4096];
	const char *e;
	if (flag && *flag)
		return flag;
	if ((e = getenv("KVSNAP_STATE")) && *e)
		return e;
	return kv_state_default(buf, sizeof(buf)) ? NULL : buf;
}

int
cli_state_parents(const char *flag)
{
	const char *dir = cli_state_dir(flag), *e = getenv("KVSNAP_STATE");
	char why[PATH_MAX + 128];
	if (!dir || (flag && *flag) || (e && *e))
		return 0; /* a directory named explicitly is taken as given */
	if (kv_mkdir_parents(dir, why, sizeof(why)) == 0)
		return 0;
	cli_err("cannot make the state directory %s: %s", dir, why);
	return -1;
}

static int
cli_name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int
cli_path_join(char *out, size_t cap, const char *dir, const char *name)
{
	size_t d = strlen(dir);
	int k;
	while (d > 1 && dir[d - 1] == '/')
		d--;
	k = snprintf(out, cap, "%.*s%s%s", (int)d, dir, dir[d - 1] == '/' ? "" : "/", name);
	return k < 0 || (size_t)k >= cap ? -1 : 0;
}

int
cli_dir_names(const char *dir, char ***names, size_t *n)
{
	struct dirent *de;
	size_t cap = 0;
	DIR *d;

	*names = NULL;
	*n = 0;
	if (!(d = opendir(dir)))
		return -1;
	while ((de = readdir(d))) {
		char *nm;
		if (de->d_name[0] == '.')
			continue;
		if (*n == cap) {
			char **nb = realloc(*names, (cap = cap ? 2 * cap : 64) * sizeof(**names));
			if (!nb)
				break;
			*names = nb;
		}
		if ((nm = strdup(de->d_name)))
			(*names)[(*n)++] = nm;
	}
	closedir(d);
	if (*n)
		qsort(*names, *n, sizeof(**names), cli_name_cmp);
	return 0;
}
