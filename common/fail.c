/*
 * fail.c: the failure helper and hex digits every folder shares (fail.h).
 */
#include <stdarg.h>
#include <stdio.h>

#include "common/fail.h"

int
kv_fail(char *why, size_t why_len, int err, const char *fmt, ...)
{
	va_list ap;
	if (why && why_len) {
		va_start(ap, fmt);
		vsnprintf(why, why_len, fmt, ap);
		va_end(ap);
	}
	return err;
}

int
kv_hex_value(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}
