/*
 * errors.c: the engine's error strings (eng_strerror, one per enum eng_err
 * in engine/base.h).  The failure helper, eng_fail, is common/fail.c's
 * kv_fail under the engine's name.
 */
#include "engine/base.h"

const char *
eng_strerror(int err)
{
	switch (err) {
	case ENG_OK: return "ok";
	case ENG_ERR_NOMEM: return "out of memory";
	case ENG_ERR_IO: return "cannot read file";
	case ENG_ERR_FORMAT: return "malformed file";
	case ENG_ERR_VERSION: return "unsupported file version";
	case ENG_ERR_NOT_FOUND: return "not found";
	case ENG_ERR_ARCH: return "unsupported model architecture";
	case ENG_ERR_TYPE: return "unsupported tensor type";
	case ENG_ERR_SHAPE: return "tensor shape does not fit the model";
	case ENG_ERR_TOKENIZER: return "tokenizer data missing or inconsistent";
	case ENG_ERR_CONTEXT: return "more tokens than the context window";
	case ENG_ERR_TOKEN: return "token id out of range";
	case ENG_ERR_ARG: return "bad argument";
	case ENG_ERR_CANCELLED: return "cancelled";
	case ENG_ERR_KERNEL: return "kernel failure";
	case ENG_ERR_BACKEND: return "compute backend not usable";
	default: return "unknown engine error";
	}
}
