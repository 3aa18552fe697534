/*
 * fail.h: what every folder shares, below everything else (common/ depends
 * on libc only): the shape of a failure that explains itself, and hex
 * digits.  The engine's eng_fail, the store's store_fail and the protocol
 * parser's proto_fail are kv_fail under their folder's name.
 */
#ifndef COMMON_FAIL_H
#define COMMON_FAIL_H

#include <stddef.h>

/* Write a one-line human reason into why (when given) and return err. */
int kv_fail(char *why, size_t why_len, int err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The value of hex digit c (either case), -1 if it is not one. */
int kv_hex_value(int c);

#endif /* COMMON_FAIL_H */
