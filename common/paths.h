/*
 * paths.h: where the bundled model is, the one lookup kvsnap and kvsnapd
 * share (README "Installing"): $KVSNAP_MODEL, else the share directory
 * beside the running binary, else the source tree's models/.
 */
#ifndef COMMON_PATHS_H
#define COMMON_PATHS_H

#include <stddef.h>

/* The bundled model's file name (scripts/fetch-model.sh fetches it; make
 * install puts it in $(PREFIX)/share/kvsnap/ with its heads sidecar). */
#define KV_MODEL_FILE "SmolLM2-135M-Instruct.Q4_1.gguf"

/*
 * The default model (what runs when no -m / --model / model = is given),
 * in this order:
 *   1. $KVSNAP_MODEL when set and not empty: an explicit choice, taken as
 *      given (a file it names that cannot be read is an error, not a reason
 *      to fall back to another model);
 *   2. PREFIX/share/kvsnap/KV_MODEL_FILE, PREFIX being the parent of the
 *      running executable's directory (/proc/self/exe): an installed binary;
 *   3. PREFIX/models/KV_MODEL_FILE: a binary in the source tree's build/.
 * 0 with the path in out[cap]; -1 with why naming every place looked and
 * how to fix it.  Never looks in the current directory.
 */
int kv_model_find(char *out, size_t cap, char *why, size_t why_len);

#endif /* COMMON_PATHS_H */
