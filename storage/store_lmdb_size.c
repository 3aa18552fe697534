/*
 * store_lmdb_size.c: is data.mdb as long as LMDB's own record of it says?
 * LMDB maps the file, and a page past the end of a truncated file faults
 * with SIGBUS in whichever process touches it (the CLI, or the daemon on
 * its next query).  This check reads the two meta pages with pread(2),
 * never through the map, and calls a file shorter than the pages the newest
 * meta records corrupt.  It runs before the environment is opened and
 * before every transaction of an open one (a few microseconds: one fstat
 * and two small reads), so a file cut under a running daemon is reported
 * at its next transaction.  A transaction already open when the file is cut
 * is not covered: its next read of a missing page still faults.
 *
 * The meta page (LMDB 0.9, data version 1; MDB_page, MDB_meta and MDB_db
 * in lmdb's mdb.c), for LP64 builds: the page header is 16 bytes, then the
 * meta: magic (u32, 0xBEEFC0DE) at 0, version (u32) at 4, a fixed-map
 * address and the map size (8 bytes each) at 8 and 16, the free and main
 * databases' records (48 bytes each) from 24 (the first one's leading u32
 * is the page size), the last page number in use (u64) at 120 and the id
 * of the transaction that wrote it (u64) at 128.  Pages 0 and 1 are the two
 * metas (page 1 starts at byte `page size`); LMDB reads the one with the
 * larger transaction id, and a commit writes its data pages before its
 * meta.
 *
 * The file is read after the metas: it only grows, so a commit of
 * another thread or process between the two reads cannot make a sound
 * file look short.
 *
 * Exact only if LMDB never counts a page it did not write: a page a
 * transaction allocates and frees again before it commits ("loose") is
 * not written at commit, and mdbx's copy of this meta notes that the file
 * "may be shorter if the freeDB lists the final pages".  LMDB 0.9.24 did
 * not leave such a tail in 20000 random commits (puts up to 200 KB,
 * deletes) nor after a put and delete of a 100 KB value in one
 * transaction; were it to, the store would read as corrupt until its next
 * write.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storage/store_lmdb.h"

_Static_assert(sizeof(size_t) == 8 && sizeof(void *) == 8,
    "store_lmdb_size.c reads LMDB's LP64 meta page layout");

#define SZ_HDR 16                  /* page header before the meta */
#define SZ_MAGIC 0xBEEFC0DEu
#define SZ_PSIZE (SZ_HDR + 24)     /* u32: the page size */
#define SZ_LAST (SZ_HDR + 120)     /* u64: the last page number in use */
#define SZ_TXNID (SZ_HDR + 128)    /* u64: the committing transaction */
#define SZ_END (SZ_HDR + 136)      /* bytes read of a meta page */
#define SZ_MIN_PAGE 512u           /* page sizes LMDB can have written */
#define SZ_MAX_PAGE 65536u

struct sz_meta {
	uint32_t psize;
	uint64_t last, txnid;
};

/* The meta page at byte at: 0, or -1 when the file is too short for it or
 * it does not start with LMDB's magic. */
static int
sz_read(int fd, off_t at, struct sz_meta *m)
{
	uint8_t b[SZ_END];
	uint32_t magic;

	if (pread(fd, b, sizeof(b), at) != (ssize_t)sizeof(b))
		return -1;
	memcpy(&magic, b + SZ_HDR, sizeof(magic));
	if (magic != SZ_MAGIC)
		return -1;
	memcpy(&m->psize, b + SZ_PSIZE, sizeof(m->psize));
	memcpy(&m->last, b + SZ_LAST, sizeof(m->last));
	memcpy(&m->txnid, b + SZ_TXNID, sizeof(m->txnid));
	return 0;
}

/* The file's size, read after its metas (see the top). */
static int
sz_size(int fd, const char *dir, int64_t *size, char *why, size_t why_len)
{
	struct stat st;
	if (fstat(fd, &st) != 0)
		return store_fail(why, why_len, STORE_ERR_IO, "%s/data.mdb: %s", dir,
		    strerror(errno));
	*size = (int64_t)st.st_size;
	return 0;
}

int
st_file_check(int fd, const char *dir, int opened, char *why, size_t why_len)
{
	struct sz_meta m0, m1;
	const struct sz_meta *m;
	int64_t size = 0;
	uint64_t need;
	int rc, which;

	/* Before the open, a file too short for its meta pages or without
	 * LMDB's magic is LMDB's to judge: an empty one starts a new store,
	 * anything else is "not an LMDB file".  Under an open store it was
	 * whole once, so it has been cut or overwritten. */
	if ((which = sz_read(fd, 0, &m0)) == 0 &&
	    (m0.psize < SZ_MIN_PAGE || m0.psize > SZ_MAX_PAGE || (m0.psize & (m0.psize - 1))))
		return store_fail(why, why_len, STORE_ERR_CORRUPT,
		    "%s/data.mdb: its meta page says pages of %u bytes", dir, m0.psize);
	if (which == 0 && sz_read(fd, (off_t)m0.psize, &m1) != 0)
		which = 1;
	if ((rc = sz_size(fd, dir, &size, why, why_len)) != 0)
		return rc;
	if (which != 0) {
		if (!opened)
			return 0;
		return store_fail(why, why_len, STORE_ERR_CORRUPT,
		    "%s/data.mdb is %lld bytes and lacks LMDB's %s meta page: it was truncated or "
		    "overwritten", dir, (long long)size, which < 0 ? "first" : "second");
	}
	m = m1.txnid > m0.txnid ? &m1 : &m0;
	if (m->last >= UINT64_MAX / m0.psize)
		return store_fail(why, why_len, STORE_ERR_CORRUPT,
		    "%s/data.mdb: its meta page says %llu pages", dir,
		    (unsigned long long)m->last);
	need = (m->last + 1) * m0.psize;
	if ((uint64_t)size < need)
		return store_fail(why, why_len, STORE_ERR_CORRUPT,
		    "%s/data.mdb is %lld bytes, but LMDB's meta page says it holds %llu bytes "
		    "(%llu pages of %u): the file was truncated", dir, (long long)size,
		    (unsigned long long)need, (unsigned long long)(m->last + 1), m0.psize);
	return 0;
}

int
st_file_check_path(const char *dir, char *why, size_t why_len)
{
	char path[600];
	int fd, rc;

	snprintf(path, sizeof(path), "%s/data.mdb", dir);
	/* No file, or none we may read: LMDB creates it or says why not. */
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	rc = st_file_check(fd, dir, 0, why, why_len);
	close(fd);
	return rc;
}
