/*
 * fingerprint.c: how the engine names a file by its content (the model, a
 * Locret sidecar, a PoD block map): BLAKE2b-256 of its bytes as 64
 * lowercase hex digits, and the check of a fingerprint a file records.
 */
#include <sodium.h> /* crypto_generichash (BLAKE2b), sodium_bin2hex */

#include "engine/base.h"
#include "engine/fingerprint.h"

int
eng_fingerprint(const void *p, size_t n, char hex[ENG_FINGERPRINT_HEX + 1])
{
	unsigned char h[ENG_FINGERPRINT_HEX / 2];
	if (sodium_init() < 0 || crypto_generichash(h, sizeof(h), p, n, NULL, 0))
		return ENG_ERR_NOMEM;
	sodium_bin2hex(hex, ENG_FINGERPRINT_HEX + 1, h, sizeof(h));
	return 0;
}

int
eng_is_hex(const char *s, size_t len, size_t max)
{
	size_t i;
	if (len > max)
		return 0;
	for (i = 0; i < len; i++)
		if (kv_hex_value((unsigned char)s[i]) < 0)
			return 0;
	return 1;
}
