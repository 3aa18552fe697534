/*
 * fuzz_creds.c: libFuzzer target for the credentials file parser
 * (store_redis_auth_parse in storage/store.h, what store_redis_auth_file
 * runs over the file's bytes): any bytes are refused with a reason and
 * nothing set, or give a non-empty password and a user (maybe "") without
 * a blank at either end or a newline, never an overread (ASan).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "storage/store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
ragged(const char *s)
{
	size_t n = strlen(s);
	return n && (s[0] == ' ' || s[0] == '\t' || s[n - 1] == ' ' || s[n - 1] == '\t' ||
	    strchr(s, '\n'));
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf, user[64], pass[128], why[256] = "";

	if (!(buf = malloc(size ? size : 1))) /* exactly the input: no NUL after it */
		return 0;
	memcpy(buf, data, size);
	if (store_redis_auth_parse(buf, size, user, sizeof(user), pass, sizeof(pass), why,
	    sizeof(why)) == 0) {
		if (!pass[0] || ragged(pass) || ragged(user))
			abort();
	} else if (!why[0] || user[0] || pass[0]) {
		abort();
	}
	free(buf);
	return 0;
}
