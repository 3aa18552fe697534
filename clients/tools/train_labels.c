/*
 * train_labels.c: the on-disk cache of kvzip labels for `kvsnap train-heads
 * --labels kvzip`.  kvzip's scores cost a prefill and a reconstruction pass
 * per example; a resumed run, the held-out evaluation and a second recipe
 * over the same examples read them back instead.
 *
 * One file per example, named by its key: BLAKE2b-256 of (model
 * fingerprint, the kvzip policy's description, the example's token ids), so
 * any change of model, scorer or text is a different file.  Layout
 * (little-endian): "KVSNAPLB" | u32 version 1 | u32 n_layer, n_head_kv |
 * u64 n_p | key[32] | f32 labels (n_layer, n_head_kv, n_p) | BLAKE2b-256 of
 * all the bytes before it.  Written to PATH.tmp and renamed; a file that
 * fails any check is recomputed and replaced.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "clients/cli.h"
#include "clients/tools/tools.h"
#include "engine/engine.h"

#define TL_MAGIC "KVSNAPLB"
#define TL_VERSION 1u
#define TL_HEAD (8 + 4 + 8 + 8 + TL_KEY_BYTES)

void
tl_key(const char *model_fp, const char *scorer, const int32_t *ids, int64_t n,
    uint8_t key[TL_KEY_BYTES])
{
	crypto_generichash_state st;
	uint64_t n64 = (uint64_t)n;
	crypto_generichash_init(&st, NULL, 0, TL_KEY_BYTES);
	crypto_generichash_update(&st, (const unsigned char *)model_fp, strlen(model_fp) + 1);
	crypto_generichash_update(&st, (const unsigned char *)scorer, strlen(scorer) + 1);
	crypto_generichash_update(&st, (const unsigned char *)&n64, sizeof(n64));
	crypto_generichash_update(&st, (const unsigned char *)ids, (size_t)n * sizeof(int32_t));
	crypto_generichash_final(&st, key, TL_KEY_BYTES);
}

static void
tl_path(const char *dir, const uint8_t key[TL_KEY_BYTES], char *out, size_t cap)
{
	char hex[2 * TL_KEY_BYTES + 1];
	sodium_bin2hex(hex, sizeof(hex), key, TL_KEY_BYTES);
	snprintf(out, cap, "%s/%.32s.lab", dir, hex);
}

static size_t
tl_n_labels(const struct eng_train_example *ex)
{
	return (size_t)ex->n_layer * (size_t)ex->n_head_kv * (size_t)ex->n_p;
}

int
tl_read(const char *dir, const uint8_t key[TL_KEY_BYTES], struct eng_train_example *ex)
{
	char path[4200];
	unsigned char *buf = NULL, sum[32];
	size_t n_lab = tl_n_labels(ex), want = TL_HEAD + n_lab * sizeof(float) + 32;
	uint32_t v, nl, nh;
	uint64_t np;
	FILE *f;
	int ok = 0;

	tl_path(dir, key, path, sizeof(path));
	if (!(f = fopen(path, "rb")))
		return -1;
	buf = malloc(want + 1);
	/* one byte more than expected: a longer file is not ours */
	if (buf && fread(buf, 1, want + 1, f) == want) {
		memcpy(&v, buf + 8, 4);
		memcpy(&nl, buf + 12, 4);
		memcpy(&nh, buf + 16, 4);
		memcpy(&np, buf + 20, 8);
		crypto_generichash(sum, 32, buf, want - 32, NULL, 0);
		ok = !memcmp(buf, TL_MAGIC, 8) && v == TL_VERSION && nl == (uint32_t)ex->n_layer &&
		    nh == (uint32_t)ex->n_head_kv && np == (uint64_t)ex->n_p &&
		    !memcmp(buf + 28, key, TL_KEY_BYTES) && !memcmp(buf + want - 32, sum, 32);
		if (ok)
			memcpy(ex->s, buf + TL_HEAD, n_lab * sizeof(float));
	}
	fclose(f);
	free(buf);
	return ok ? 0 : -1;
}

int
tl_write(const char *dir, const uint8_t key[TL_KEY_BYTES], const struct eng_train_example *ex)
{
	char path[4200], tmp[4300];
	size_t n_lab = tl_n_labels(ex), len = TL_HEAD + n_lab * sizeof(float) + 32;
	unsigned char *buf;
	uint32_t v = TL_VERSION, nl = (uint32_t)ex->n_layer, nh = (uint32_t)ex->n_head_kv;
	uint64_t np = (uint64_t)ex->n_p;
	FILE *f;
	int rc = -1;

	if (mkdir(dir, 0755) && errno != EEXIST)
		return -1;
	if (!(buf = malloc(len)))
		return -1;
	memcpy(buf, TL_MAGIC, 8);
	memcpy(buf + 8, &v, 4);
	memcpy(buf + 12, &nl, 4);
	memcpy(buf + 16, &nh, 4);
	memcpy(buf + 20, &np, 8);
	memcpy(buf + 28, key, TL_KEY_BYTES);
	memcpy(buf + TL_HEAD, ex->s, n_lab * sizeof(float));
	crypto_generichash(buf + len - 32, 32, buf, len - 32, NULL, 0);
	tl_path(dir, key, path, sizeof(path));
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if ((f = fopen(tmp, "wb"))) {
		rc = fwrite(buf, 1, len, f) == len ? 0 : -1;
		if (fclose(f))
			rc = -1;
		if (!rc && rename(tmp, path))
			rc = -1;
		if (rc)
			unlink(tmp);
	}
	free(buf);
	return rc;
}
