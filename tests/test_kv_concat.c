/*
 * test_kv_concat.c: pools placed side by side (engine/cache/kv_concat.c,
 * a library question's "side" mode): every unit kept once, in order, its
 * position re-laid after the parts before it, the later parts' template
 * prefix left out, keys and values copied bit for bit, rotated keys
 * derived again at the new positions (the same rotation the pool's load
 * uses), room for the question and answer; one part alone comes back
 * exactly; slot positions and PoD layouts are refused.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "common/rng.h"
#include "engine/engine.h"
#include "kernels/rope.h"
#include "tests/tap.h"
#include "tests/tiny_model.h"

#define L 3
#define H 2
#define HD 8

/* The tiny shell of L layers, H KV heads, rotated NeoX-style. */
static void
shell(struct eng_model *m)
{
	tiny_shell(m, L, 2 * H, H, HD);
	m->hp.rope_style = KERN_ROPE_NEOX;
}
/* A pool of next_pos tokens whose heads keep different units: head m of
 * layer l keeps every position p with (p + l + m) % stride != 1, the
 * first `sinks` always; random keys and values. */
static struct eng_kv *
pool(const struct eng_model *m, uint32_t next_pos, uint32_t sinks, int stride, uint64_t seed)
{
	struct eng_kv *kv;
	int64_t counts[H];
	uint64_t s = kv_splitmix64(seed);
	int l, h, d;
	uint32_t p;

	if (eng_kv_init(&kv, m, next_pos + 4))
		return NULL;
	for (l = 0; l < L; l++) {
		struct eng_kv_layer *Y = &kv->layer[l];
		for (h = 0; h < H; h++) {
			counts[h] = 0;
			for (p = 0; p < next_pos; p++)
				counts[h] += p < sinks || (p + (uint32_t)(l + h)) % (uint32_t)stride != 1;
		}
		if (eng_kv_prepare_layer(kv, l, counts)) {
			eng_kv_free(kv);
			return NULL;
		}
		for (h = 0; h < H; h++) {
			int64_t at = Y->off[h];
			for (p = 0; p < next_pos; p++) {
				if (!(p < sinks || (p + (uint32_t)(l + h)) % (uint32_t)stride != 1))
					continue;
				Y->pos[at] = p;
				Y->score[at] = (float)p;
				for (d = 0; d < HD; d++) {
					Y->k[at * HD + d] = (float)((int64_t)(kv_xorshift64s(&s) >> 40) - (1 << 23)) / (1 << 22);
					Y->v[at * HD + d] = (float)((int64_t)(kv_xorshift64s(&s) >> 40) - (1 << 23)) / (1 << 22);
				}
				at++;
			}
		}
	}
	if (eng_kv_finish_load(kv, next_pos, ENG_POS_ORIGINAL)) {
		eng_kv_free(kv);
		return NULL;
	}
	return kv;
}

static enum tap_result
test_two_parts(void)
{
	struct eng_model m;
	struct eng_kv *a, *b, *c = NULL, *parts[2];
	uint32_t skip[2] = { 5, 5 }, want_next = 40 + (57 - 5);
	float rot[HD];
	int l, h, ok = 1;

	shell(&m);
	a = pool(&m, 40, 5, 3, 1);
	b = pool(&m, 57, 5, 4, 2);
	TAP_CHECK(a && b, "pools");
	parts[0] = a;
	parts[1] = b;
	TAP_EXPECT(eng_kv_concat(&c, &m, parts, skip, 2, 30) == 0, "concat");
	TAP_EXPECT(c->next_pos == want_next, "next_pos %u, want %u", c->next_pos, want_next);
	TAP_EXPECT(c->pos_mode == ENG_POS_ORIGINAL && !c->pod, "mode");
	for (l = 0; l < L; l++)
		for (h = 0; h < H; h++) {
			const struct eng_kv_layer *A = &a->layer[l], *B = &b->layer[l], *C = &c->layer[l];
			int64_t i, j = 0, nb = 0;
			for (i = 0; i < B->len[h]; i++)
				nb += B->pos[B->off[h] + i] >= skip[1];
			TAP_EXPECT(C->len[h] == A->len[h] + nb, "layer %d head %d: %lld units, want "
			    "%lld", l, h, (long long)C->len[h], (long long)(A->len[h] + nb));
			TAP_EXPECT(C->cap[h] - C->len[h] >= 30, "layer %d head %d: room %lld", l, h,
			    (long long)(C->cap[h] - C->len[h]));
			for (i = 0; i < A->len[h]; i++, j++) { /* the first part as it was */
				int64_t r = A->off[h] + i, q = C->off[h] + j;
				TAP_EXPECT(C->pos[q] == A->pos[r] && C->score[q] == A->score[r] &&
				    !memcmp(C->k + q * HD, A->k + r * HD, sizeof(float) * HD) &&
				    !memcmp(C->v + q * HD, A->v + r * HD, sizeof(float) * HD) &&
				    !memcmp(C->kr + q * HD, A->kr + r * HD, sizeof(float) * HD),
				    "part 0, layer %d head %d unit %lld differs", l, h, (long long)i);
			}
			for (i = 0; i < B->len[h]; i++) { /* then the second, shifted, its sinks out */
				int64_t r = B->off[h] + i, q = C->off[h] + j;
				uint32_t want = B->pos[r] - skip[1] + a->next_pos;
				if (B->pos[r] < skip[1])
					continue;
				TAP_EXPECT(C->pos[q] == want, "part 1 unit %lld at %u, want %u",
				    (long long)i, C->pos[q], want);
				TAP_EXPECT(!memcmp(C->k + q * HD, B->k + r * HD, sizeof(float) * HD) &&
				    !memcmp(C->v + q * HD, B->v + r * HD, sizeof(float) * HD) &&
				    C->score[q] == B->score[r], "part 1 unit %lld copied", (long long)i);
				kern_rope_head_at(rot, B->k + r * HD, want,
				    kern_rope_theta_scale(m.hp.rope_base, HD), NULL, HD, m.hp.rope_style);
				TAP_EXPECT(!memcmp(C->kr + q * HD, rot, sizeof(rot)),
				    "part 1 unit %lld: rotated key not at its new position", (long long)i);
				/* and no longer at its old one (p shifted by 35) */
				TAP_EXPECT(memcmp(C->kr + q * HD, B->kr + r * HD, sizeof(rot)),
				    "part 1 unit %lld: rotated key unchanged", (long long)i);
				j++;
			}
		}
out:
	eng_kv_free(a);
	eng_kv_free(b);
	eng_kv_free(c);
	return ok ? TAP_PASS : TAP_FAIL;
}

static enum tap_result
test_one_part(void)
{
	struct eng_model m;
	struct eng_kv *a, *c = NULL;
	uint32_t skip = 5;
	int l, h, ok = 1;

	shell(&m);
	TAP_CHECK((a = pool(&m, 33, 5, 3, 3)) != NULL, "pool");
	TAP_EXPECT(eng_kv_concat(&c, &m, &a, &skip, 1, 7) == 0, "concat");
	TAP_EXPECT(c->next_pos == a->next_pos, "next_pos");
	for (l = 0; l < L; l++)
		for (h = 0; h < H; h++) {
			const struct eng_kv_layer *A = &a->layer[l], *C = &c->layer[l];
			TAP_EXPECT(C->len[h] == A->len[h], "len");
			TAP_EXPECT(!memcmp(C->pos + C->off[h], A->pos + A->off[h], sizeof(uint32_t) * A->len[h]) &&
			    !memcmp(C->kr + C->off[h] * HD, A->kr + A->off[h] * HD,
			    sizeof(float) * HD * A->len[h]), "layer %d head %d differs", l, h);
		}
out:
	eng_kv_free(a);
	eng_kv_free(c);
	return ok ? TAP_PASS : TAP_FAIL;
}

static enum tap_result
test_refused(void)
{
	struct eng_model m;
	struct eng_kv *a, *b, *c = NULL, *parts[2];
	uint32_t skip[2] = { 5, 5 };
	int ok = 1;

	shell(&m);
	a = pool(&m, 20, 5, 3, 4);
	b = pool(&m, 20, 5, 3, 5);
	TAP_CHECK(a && b, "pools");
	parts[0] = a;
	parts[1] = b;
	b->pos_mode = ENG_POS_SLOT;
	TAP_EXPECT(eng_kv_concat(&c, &m, parts, skip, 2, 4) == ENG_ERR_ARG && !c, "slot positions");
	b->pos_mode = ENG_POS_ORIGINAL;
	skip[1] = 21;
	TAP_EXPECT(eng_kv_concat(&c, &m, parts, skip, 2, 4) == ENG_ERR_ARG && !c, "skip past the end");
	skip[1] = 5;
	TAP_EXPECT(eng_kv_concat(&c, &m, parts, skip, 0, 4) == ENG_ERR_ARG && !c, "no parts");
out:
	eng_kv_free(a);
	eng_kv_free(b);
	eng_kv_free(c);
	return ok ? TAP_PASS : TAP_FAIL;
}

static const struct tap_test tests[] = {
	{ "two_parts", test_two_parts },
	{ "one_part", test_one_part },
	{ "refused", test_refused },
};

TAP_MAIN(NULL, NULL)
