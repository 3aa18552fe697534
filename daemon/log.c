/*
 * log.c: leveled log lines on stderr ("kvsnapd[PID] LEVEL: message"), one
 * write per line so threads do not interleave; journald adds the time.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/daemon_internal.h"

int dlog_level = DLOG_INFO;

static const char *const dlog_names[] = { "error", "warn", "info", "debug" };

void
dlog(int level, const char *fmt, ...)
{
	char buf[2048];
	va_list ap;
	int n;

	if (level > dlog_level)
		return;
	n = snprintf(buf, sizeof(buf), "kvsnapd[%d] %s: ", (int)getpid(),
	    dlog_names[level < 0 ? 0 : level > 3 ? 3 : level]);
	va_start(ap, fmt);
	n += vsnprintf(buf + n, sizeof(buf) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(buf) - 2)
		n = (int)sizeof(buf) - 2;
	buf[n++] = '\n';
	if (write(STDERR_FILENO, buf, (size_t)n) < 0) {
		/* nowhere left to say it */
	}
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
