/*
 * index_internal.h: the handle index/'s files share.
 */
#ifndef INDEX_INDEX_INTERNAL_H
#define INDEX_INDEX_INTERNAL_H

#include <pthread.h>
#include <sqlite3.h>

#include "index/index.h"

struct idx {
	sqlite3 *db;
	pthread_mutex_t mu; /* one change or one search at a time */
	int in_txn;         /* idx_begin holds mu until commit or rollback, */
	pthread_t owner;    /* for this thread, whose calls then take it no more */
	int read_only;
	char path[1024];
};

/* A SQLite result as an idx_err with "index PATH: what: SQLite's words". */
int idx_sqlite_err(struct idx *x, int rc, const char *what, char *why, size_t why_len);

#endif /* INDEX_INDEX_INTERNAL_H */
