/*
 * log.c: leveled log lines on stderr ("kvsnapd[PID] LEVEL: message"), one
 * write per line so threads do not interleave; journald adds the time.
 *
 * Every message goes through kv_escape (common/escape.h) here, the one
 * place: what a client chose (a document reference, a request path, a
 * name) is part of many messages, and it must not start a line of its
 * own, drive the terminal that shows the log (ESC) or put bytes that are
 * not UTF-8 into it.  Each log line is one line of printable UTF-8.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/escape.h"
#include "daemon/daemon_internal.h"

#define DLOG_RAW_MAX 2048   /* a message before escaping */
#define DLOG_LINE_MAX 4096  /* a line after: an escape is up to 4 bytes a byte */

int dlog_level = DLOG_INFO;

static const char *const dlog_names[] = { "error", "warn", "info", "debug" };

static void
dlog_write(int level, const char *fmt, va_list ap)
{
	char raw[DLOG_RAW_MAX], line[DLOG_LINE_MAX];
	int n, m;

	m = vsnprintf(raw, sizeof(raw), fmt, ap);
	if (m < 0)
		m = 0;
	if (m >= (int)sizeof(raw))
		m = (int)sizeof(raw) - 1;
	n = snprintf(line, sizeof(line), "kvsnapd[%d] %s: ", (int)getpid(),
	    dlog_names[level < 0 ? 0 : level > 3 ? 3 : level]);
	n += (int)kv_escape(line + n, sizeof(line) - (size_t)n - 1, raw, (size_t)m);
	line[n++] = '\n';
	if (write(STDERR_FILENO, line, (size_t)n) < 0) {
		/* nowhere left to say it */
	}
}

void
dlog(int level, const char *fmt, ...)
{
	va_list ap;

	if (level > dlog_level)
		return;
	va_start(ap, fmt);
	dlog_write(level, fmt, ap);
	va_end(ap);
}

void
dlog_limited(struct dlog_limit *l, int level, const char *fmt, ...)
{
	double now;
	char msg[DLOG_RAW_MAX];
	va_list ap;

	if (level > dlog_level)
		return;
	now = svc_now();
	if (l->logged && now - l->last < DLOG_LIMIT_S) {
		l->held++;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (l->held)
		dlog(level, "%s (and %ld more like it in the last %.0f s)", msg, l->held,
		    now - l->last);
	else
		dlog(level, "%s", msg);
	l->logged = 1;
	l->last = now;
	l->held = 0;
}

int
dlog_parse_level(const char *s)
{
	int i;
	for (i = 0; i < 4; i++)
		if (!strcmp(s, dlog_names[i]) || (s[0] == '0' + i && !s[1]))
			return i;
	return -1;
}
