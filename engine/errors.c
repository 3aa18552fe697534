/*
 * errors.c: the engine's error strings and the helper every failure path
 * that explains itself goes through.
 */
#include <stdarg.h>
#include <stdio.h>

#include "engine/engine_internal.h"

int
eng_fail(char *why, size_t why_len, int err, const char *fmt, ...)
{
	va_list ap;
	if (why && why_len) {
		va_start(ap, fmt);
		vsnprintf(why, why_len, fmt, ap);
		va_end(ap);
	}
	return err;
}
