/*
 * base.c: what the front ends take from the folders below under service/'s
 * name (a clock, hex, the name rule, the compute backend, quantization
 * names, the document reader's child), so that daemon/ and clients/
 * include service.h and common/ alone (tests/sh/layers.sh); each is the
 * lower folder's one implementation, called through.  And the agreement
 * of service.h's copies of the lower folders' sizes and codes with theirs.
 */
#include "service/service_internal.h"

_Static_assert(SVC_ID_BYTES == SNAP_ID_BYTES && SVC_ID_BYTES == STORE_ID_BYTES, "id bytes");
_Static_assert(SVC_PROFILE_MAX == SNAP_MAX_PROFILE, "profile text");
_Static_assert(SVC_FORMAT_MAX == STORE_FORMAT_MAX, "format description");
_Static_assert(SVC_QUANT_FP16 == SNAP_FP16, "quantization");
_Static_assert(SVC_DEFAULT_QUANT == SNAP_Q6_H, "the default quantization");

#define SAME(a, b) _Static_assert((int)(a) == (int)(b), #a)
SAME(SVC_ENG_OK, ENG_OK);
SAME(SVC_ENG_ERR_NOMEM, ENG_ERR_NOMEM);
SAME(SVC_ENG_ERR_IO, ENG_ERR_IO);
SAME(SVC_ENG_ERR_FORMAT, ENG_ERR_FORMAT);
SAME(SVC_ENG_ERR_VERSION, ENG_ERR_VERSION);
SAME(SVC_ENG_ERR_NOT_FOUND, ENG_ERR_NOT_FOUND);
SAME(SVC_ENG_ERR_ARCH, ENG_ERR_ARCH);
SAME(SVC_ENG_ERR_TYPE, ENG_ERR_TYPE);
SAME(SVC_ENG_ERR_SHAPE, ENG_ERR_SHAPE);
SAME(SVC_ENG_ERR_TOKENIZER, ENG_ERR_TOKENIZER);
SAME(SVC_ENG_ERR_CONTEXT, ENG_ERR_CONTEXT);
SAME(SVC_ENG_ERR_TOKEN, ENG_ERR_TOKEN);
SAME(SVC_ENG_ERR_ARG, ENG_ERR_ARG);
SAME(SVC_ENG_ERR_CANCELLED, ENG_ERR_CANCELLED);
SAME(SVC_ENG_ERR_KERNEL, ENG_ERR_KERNEL);
SAME(SVC_ENG_ERR_BACKEND, ENG_ERR_BACKEND);
SAME(SVC_STORE_OK, STORE_OK);
SAME(SVC_STORE_ERR_NOMEM, STORE_ERR_NOMEM);
SAME(SVC_STORE_ERR_ARG, STORE_ERR_ARG);
SAME(SVC_STORE_ERR_IO, STORE_ERR_IO);
SAME(SVC_STORE_ERR_FULL, STORE_ERR_FULL);
SAME(SVC_STORE_ERR_NOT_FOUND, STORE_ERR_NOT_FOUND);
SAME(SVC_STORE_ERR_AMBIGUOUS, STORE_ERR_AMBIGUOUS);
SAME(SVC_STORE_ERR_CORRUPT, STORE_ERR_CORRUPT);
SAME(SVC_STORE_ERR_EXISTS, STORE_ERR_EXISTS);
SAME(SVC_STORE_ERR_BUSY, STORE_ERR_BUSY);
SAME(SVC_SNAPIO_OK, SNAPIO_OK);
SAME(SVC_SNAPIO_ERR_NOMEM, SNAPIO_ERR_NOMEM);
SAME(SVC_SNAPIO_ERR_ARG, SNAPIO_ERR_ARG);
SAME(SVC_SNAPIO_ERR_NOT_FOUND, SNAPIO_ERR_NOT_FOUND);
SAME(SVC_SNAPIO_ERR_CORRUPT, SNAPIO_ERR_CORRUPT);
SAME(SVC_SNAPIO_ERR_MISMATCH, SNAPIO_ERR_MISMATCH);
SAME(SVC_SNAPIO_ERR_FULL, SNAPIO_ERR_FULL);
SAME(SVC_SNAPIO_ERR_IO, SNAPIO_ERR_IO);
SAME(SVC_SNAPIO_ERR_ENGINE, SNAPIO_ERR_ENGINE);
SAME(SVC_FMT_OK, FMT_OK);
SAME(SVC_FMT_ERR_UNSUPPORTED, FMT_ERR_UNSUPPORTED);
SAME(SVC_FMT_ERR_ENCODING, FMT_ERR_ENCODING);
SAME(SVC_FMT_ERR_TOO_LARGE, FMT_ERR_TOO_LARGE);
SAME(SVC_FMT_ERR_NOMEM, FMT_ERR_NOMEM);
SAME(SVC_FMT_ERR_CANCELLED, FMT_ERR_CANCELLED);

const char *
svc_eng_strerror(int rc)
{
	return eng_strerror(rc);
}

double
svc_now(void)
{
	return eng_now();
}

void
svc_hex(const uint8_t *bytes, size_t n, char *out)
{
	store_hex(bytes, n, out);
}

int
svc_name_check(const char *name, char *why, size_t why_len)
{
	return store_name_check(name, why, why_len);
}

int
svc_use_backend(const char *name, char *why, size_t why_len)
{
	return name ? eng_use_backend(name, why, why_len) : eng_use_backend_env(why, why_len);
}

const char *
svc_quant_name(int quant)
{
	return snap_quant_name(quant);
}

int
svc_quant_parse(const char *name)
{
	return snap_quant_parse(name);
}

void
svc_child_main(int argc, char **argv)
{
	fmt_child_main(argc, argv);
}
