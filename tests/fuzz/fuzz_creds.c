/*
 * fuzz_creds.c: libFuzzer target for the credentials file parser
 * (common/creds.c): any bytes up to the file's limit are refused with a
 * reason or give a user (or none) and a non-empty password without a blank
 * at either end, never an overread (ASan) or a leak (LSan).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/creds.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf, *user = NULL, *pass = NULL, why[256];
	size_t n;

	if (size >= KV_CREDS_MAX)
		return 0;
	if (!(buf = malloc(size + 1))) /* room for the NUL the parser writes, no more */
		return 0;
	memcpy(buf, data, size);
	if (kv_creds_parse(buf, size, &user, &pass, why, sizeof(why)) == 0) {
		n = strlen(pass);
		if (!n || pass[0] == ' ' || pass[0] == '\t' || pass[n - 1] == ' ' ||
		    pass[n - 1] == '\t' || strchr(pass, '\n') || (user && (!*user ||
		    strpbrk(user, " \t\n"))))
			abort();
	} else if (!why[0] || user || pass) {
		abort();
	}
	free(user);
	free(pass);
	free(buf);
	return 0;
}
