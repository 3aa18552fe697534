/*
 * tools.h: the engine tools of kvsnap (train-heads, pod-calibrate,
 * selftest): the one folder of clients/ that may include engine/ (and
 * kernels/), since these commands work on the model itself, below the
 * service layer (docs/ARCHITECTURE.md; tests/sh/layers.sh keeps the rest
 * of clients/ and daemon/ to service/ and common/).
 */
#ifndef CLIENTS_TOOLS_H
#define CLIENTS_TOOLS_H

#include <stddef.h>
#include <stdint.h>

/* The commands (argv[0] is the command's name). */
int cli_pod_calibrate(int argc, char **argv);
int cli_train_heads(int argc, char **argv);
int cli_selftest(int argc, char **argv);

/* Training data of the retaining heads (train_data.c): a corpus of
 * Debian-packaged prose (fortunes) and key words (wamerican), and example
 * i of a recipe with a seed, a pure function of both. */
struct td_corpus {
	char **para;        /* fortune entries (point into blobs) */
	size_t n_para;
	char **words;       /* lowercase words, 4..10 letters */
	size_t n_words;
	char **blobs;       /* the files read, owned */
	size_t n_blobs, blob_cap;
};

struct td_example {
	int kind;           /* 0 code retrieval, 2 key-value facts, 1/3 document QA */
	char *doc;          /* the document (user turn, before the question) */
	char *question;
	char *answer;       /* gold answer, or NULL: the backbone answers */
};

int td_corpus_load(struct td_corpus *c, const char *fortune_dir, const char *words_path);
void td_corpus_free(struct td_corpus *c);
/* Example `index` with a document of about doc_chars characters; -1 on OOM. */
int td_make(const struct td_corpus *c, uint64_t seed, int64_t index, size_t doc_chars,
    struct td_example *ex);
void td_example_free(struct td_example *ex);
const char *td_kind_name(int kind);

/* The cache of kvzip labels (train_labels.c): one checksummed file
 * per example in dir, keyed by (model fingerprint, scorer description,
 * token ids).  tl_read fills ex->s (0) or finds no valid file (-1);
 * tl_write creates dir if needed (0 / -1). */
#define TL_KEY_BYTES 32
struct eng_train_example;
void tl_key(const char *model_fp, const char *scorer, const int32_t *ids, int64_t n,
    uint8_t key[TL_KEY_BYTES]);
int tl_read(const char *dir, const uint8_t key[TL_KEY_BYTES], struct eng_train_example *ex);
int tl_write(const char *dir, const uint8_t key[TL_KEY_BYTES],
    const struct eng_train_example *ex);

#endif /* CLIENTS_TOOLS_H */
