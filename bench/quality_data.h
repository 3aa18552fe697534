/*
 * quality_data.h: the fixed texts of bench/bench_quality.c: the classic
 * repeated-noise haystack, the prose sources, the needle and question
 * templates, and the key words of the multi-key task.  Data only, so the
 * prompts can be read (and changed) in one place; bench_quality.c is the
 * only file that includes it.
 *
 * Prompt format (DESIGN.md §1).  The ingested prefix is the default system
 * turn, "<|im_start|>user\n" and the document; the question arrives after
 * compression as the rest of the user turn, then the assistant header and
 * the start of the answer (prefilled so that a 135M model answers in a form
 * that can be parsed: "The pass key is" → " 12345.").  Nothing in the
 * document says what will be asked: compression is question-agnostic.
 */
#ifndef BENCH_QUALITY_DATA_H
#define BENCH_QUALITY_DATA_H

/* The passkey haystack of Mohtashami & Jaggi (landmark attention), repeated. */
#define QUAL_NOISE \
	"The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again. "

/* The needle; both %s are the 5-digit key.  The leading space joins it to
 * the sentence before it as the tokenizer would. */
#define QUAL_PASSKEY_NEEDLE " The pass key is %s. Remember it. %s is the pass key."

/* The question: the user turn ends (nothing after the document) and the
 * assistant's answer starts.  SmolLM2-135M-Instruct with the full cache at
 * 2K tokens completes this prefix with the key at 5 of 5 depths; asked
 * "What is the pass key?" first it finds it at 1 of 5 (it starts telling
 * what a pass key is), with any phrasing we tried.  The prefix is still
 * unknown at ingest, so compression stays question-agnostic. */
#define QUAL_PASSKEY_QUESTION "<|im_end|>\n<|im_start|>assistant\nThe pass key is"

/* RULER's multi-key needle (niah_multikey), %s a word, %s a 7-digit number. */
#define QUAL_MULTIKEY_NEEDLE " One of the special magic numbers for %s is: %s."

/* Asked the same way, %s the word; the answer prefix echoes the needle
 * (5 of 8 keys with the full cache at 2K; RULER's question "What is the
 * special magic number for %s mentioned in the provided text?" before it
 * gives 2 of 4). */
#define QUAL_MULTIKEY_QUESTION \
	"<|im_end|>\n<|im_start|>assistant\nOne of the special magic numbers for %s is:"

/* Real prose on every Debian system: the license texts of base-files (an
 * Essential package), distinct ones first.  Each is reflowed (paragraphs
 * joined into lines) and they are concatenated in this order. */
static const char *const qual_prose_files[] = {
	"/usr/share/common-licenses/GPL-3",
	"/usr/share/common-licenses/GFDL-1.3",
	"/usr/share/common-licenses/MPL-2.0",
	"/usr/share/common-licenses/Apache-2.0",
	"/usr/share/common-licenses/LGPL-2.1",
	"/usr/share/common-licenses/Artistic",
	"/usr/share/common-licenses/CC0-1.0",
	"/usr/share/common-licenses/MPL-1.1",
	"/usr/share/common-licenses/GPL-2",
};

/* Keys of the multi-key task (RULER draws random words; a fixed list keeps
 * the bench free of a word-list package). */
static const char *const qual_words[] = {
	"apple", "river", "candle", "falcon", "marble", "harbor", "violet", "copper",
	"lantern", "meadow", "pepper", "quartz", "saddle", "thunder", "walnut", "glacier",
	"orchid", "pebble", "compass", "velvet", "ginger", "dolphin", "mirror", "tractor",
	"cactus", "feather", "kettle", "lobster", "nutmeg", "parrot", "rocket", "spider",
};

#endif /* BENCH_QUALITY_DATA_H */
