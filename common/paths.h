/*
 * paths.h: the lookups kvsnap and kvsnapd share: where the bundled model is
 * (README "Installing"): $KVSNAP_MODEL, else the share directory beside the
 * running binary, else the source tree's models/; and the XDG defaults of
 * the state and cache directories, with missing parents created as XDG asks.
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

/*
 * Where this program's documentation is, for --help texts to point at
 * (make install puts README.md and the docs/ pages there): PREFIX/share/doc/kvsnap
 * for an installed binary (PREFIX as above), PREFIX/docs for a binary in
 * the source tree's build/, else "docs" (neither found).  The first call
 * decides; the string is static.
 */
const char *kv_doc_dir(void);

/*
 * The XDG default of the state directory (what each program uses when no
 * --state and no $KVSNAP_STATE names one): $XDG_STATE_HOME/kvsnap when
 * XDG_STATE_HOME is set to an absolute path (the XDG Base Directory spec
 * says a relative one is to be ignored), else $HOME/.local/state/kvsnap.
 * 0 with the path in out[cap]; -1 when neither is set.
 */
int kv_state_default(char *out, size_t cap);

/*
 * The same for the cache directory (what can be recomputed, e.g. model
 * fingerprints: engine/fingerprint_cache.c): $XDG_CACHE_HOME/kvsnap when
 * absolute, else $HOME/.cache/kvsnap; -1 when neither is set.
 */
int kv_cache_default(char *out, size_t cap);

/*
 * Create the missing parents of directory dir (not dir itself: the store
 * creates that, 0700, when it opens for writing), each with mode 0700, as
 * the XDG spec asks of a tool that writes under $XDG_STATE_HOME (a fresh
 * home has no ~/.local/state).  Existing parents are left as they are.
 * 0, or -1 with why naming the directory that could not be made.
 */
int kv_mkdir_parents(const char *dir, char *why, size_t why_len);

#endif /* COMMON_PATHS_H */
