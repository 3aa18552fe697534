/*
 * fuzz_redis_reply.c: libFuzzer target for what a Redis node sends the
 * redis-cluster store backend: arbitrary bytes go through hiredis's reader
 * (redisReaderCreate / Feed / GetReply, with the element limit of
 * rc_reader_limit, as on every connection) and each reply that comes out
 * into our handling of it: CLUSTER SLOTS parsing (rc_parse_slots),
 * redirects and retryable errors (rc_parse_redirect, rc_retryable), and
 * the values a GET or MGET hands back: manifests (rs_manifest_decode) and
 * document metadata (st_meta_decode).  A value that carries a manifest's
 * or metadata's magic is also decoded with its trailing BLAKE2b-128 fixed
 * up, so the fuzzer reaches every field check behind the checksum.
 *
 * The input is fed in two pieces (split at its first byte's value) so the
 * reader's partial-reply paths run too.  Seeds (tests/fuzz/corpus/
 * redis_reply/) are replies captured from a real redis-server 7.0 cluster:
 * CLUSTER SLOTS, MOVED, ASK, TRYAGAIN, SCAN, GET of a manifest and of
 * metadata, MGET of records.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>
#include <sodium.h>

#include "storage/rcluster.h"
#include "storage/store_redis.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct rc_map fz_map;

/* Decode buf as a manifest and as metadata, as stored and with the
 * trailing checksum made to match. */
static void
fz_value(const char *buf, size_t len)
{
	struct rs_manifest mf;
	struct st_meta m;
	uint8_t *fixed;

	if (rs_manifest_decode((const uint8_t *)buf, len, &mf, NULL, 0) == 0)
		rs_manifest_free(&mf);
	if (st_meta_decode((const uint8_t *)buf, len, &m, NULL, 0) == 0)
		st_meta_free(&m);
	if (len < 16 + 4 || !(fixed = malloc(len)))
		return;
	memcpy(fixed, buf, len);
	crypto_generichash(fixed + len - 16, 16, fixed, len - 16, NULL, 0);
	if (memcmp(fixed, "KSrm", 4) == 0 && rs_manifest_decode(fixed, len, &mf, NULL, 0) == 0) {
		/* a decoded manifest must check a record against itself */
		if (mf.n > 0)
			rs_record_check(&mf, 0, fixed, len, "fuzz", NULL, 0);
		rs_manifest_free(&mf);
	}
	if (memcmp(fixed, "KSdm", 4) == 0 && st_meta_decode(fixed, len, &m, NULL, 0) == 0) {
		uint8_t *again = malloc(st_meta_size(&m));
		if (again) /* what decodes encodes */
			st_meta_encode(&m, again);
		free(again);
		st_meta_free(&m);
	}
	free(fixed);
}

static void
fz_reply(const redisReply *r, int depth)
{
	struct rc_addr a;
	unsigned slot;
	size_t i;

	switch (r->type) {
	case REDIS_REPLY_ERROR:
		rc_parse_redirect(r->str, r->len, &slot, &a);
		rc_retryable(r->str, r->len);
		break;
	case REDIS_REPLY_STRING:
	case REDIS_REPLY_STATUS:
		fz_value(r->str, r->len);
		rc_slot(r->str, r->len);
		break;
	case REDIS_REPLY_ARRAY:
		rc_parse_slots(r, "127.0.0.1", &fz_map, NULL, 0);
		for (i = 0; i < r->elements && depth < 8; i++)
			fz_reply(r->element[i], depth + 1);
		break;
	default:
		break;
	}
}

/* Every whole reply the reader holds (64 at the most), each parsed. */
static void
fz_drain(redisReader *rd)
{
	void *reply;
	int n;

	for (n = 0; n < 64; n++) {
		reply = NULL;
		if (redisReaderGetReply(rd, &reply) != REDIS_OK || !reply)
			break;
		fz_reply(reply, 0);
		freeReplyObject(reply);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	redisReader *rd;
	size_t cut;

	if (size == 0 || size > (1u << 20))
		return 0;
	if (sodium_init() < 0)
		return 0;
	if (!(rd = redisReaderCreate()))
		return 0;
	rc_reader_limit(rd);
	cut = data[0] % size;
	redisReaderFeed(rd, (const char *)data, cut);
	fz_drain(rd);
	redisReaderFeed(rd, (const char *)data + cut, size - cut);
	fz_drain(rd);
	redisReaderFree(rd);
	return 0;
}
