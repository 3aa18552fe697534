/*
 * ids_fmt.h: token ids as "1 2 3" for a test's failure messages (the
 * tokenizer and vocabulary tests print the ids they got and wanted).
 */
#ifndef TESTS_IDS_FMT_H
#define TESTS_IDS_FMT_H

#include <stdint.h>
#include <stdio.h>

/* "1 2 3" for ids (a static buffer: one call per message; truncated with
 * " ..." past 1 KiB). */
static inline const char *
ids_fmt(const int32_t *ids, int64_t n)
{
	static char buf[1024];
	size_t o = 0;
	int64_t i;

	buf[0] = '\0';
	for (i = 0; i < n && o + 16 < sizeof(buf); i++)
		o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s%d", i ? " " : "", ids[i]);
	if (i < n)
		snprintf(buf + o, sizeof(buf) - o, " ...");
	return buf;
}

#endif
