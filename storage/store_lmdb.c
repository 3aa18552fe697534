/*
 * store_lmdb.c: the LMDB backend (store_backend.h): its ops table, the
 * environment (open, close, map growth), transactions through the gate
 * (store_lmdb.h), the write-with-retry loop, keys and LMDB's errors.  The
 * read side (resolve, readers, info, ls, profiles, stats) lives in
 * store_lmdb_read.c, writes in store_lmdb_write.c and store_lmdb_prune.c,
 * metadata records in store_lmdb_meta.c, checks in store_lmdb_verify.c, the
 * data file's length against LMDB's record of it in store_lmdb_size.c.
 *
 * Environment: MDB_NOTLS, so a read transaction is not tied to its thread
 * (a query may read layers from a worker other than the one that began);
 * five named databases; default durability (every commit is synced, so a
 * snapshot whose put returned is on disk, and a killed writer leaves the
 * previous committed state).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "storage/store_lmdb.h"

#define ST_DEFAULT_MAP ((size_t)64 << 20)
#define ST_DEFAULT_MAX ((size_t)1 << 40)

/* ------------------------------------------------------------------------ */
/* Errors                                                                    */

int
st_walk_end(int rc, const char *what, char *why, size_t why_len)
{
	return rc == MDB_NOTFOUND ? 0 : st_mdb(rc, what, why, why_len);
}

/* LMDB returns its own codes and errno values; sort them into ours. */
int
st_mdb(int rc, const char *what, char *why, size_t why_len)
{
	int err;
	switch (rc) {
	case MDB_SUCCESS: return STORE_OK;
	case MDB_MAP_FULL: err = ST_MAPFULL; break;
	case MDB_TXN_FULL: /* more dirty pages than one transaction may hold */
	case ENOSPC:
	case EDQUOT: err = STORE_ERR_FULL; break;
	case MDB_NOTFOUND: err = STORE_ERR_NOT_FOUND; break;
	case MDB_KEYEXIST: err = STORE_ERR_EXISTS; break;
	case MDB_CORRUPTED:
	case MDB_PAGE_NOTFOUND:
	case MDB_INVALID:
	case MDB_VERSION_MISMATCH:
	case MDB_INCOMPATIBLE:
	case MDB_BAD_VALSIZE: err = STORE_ERR_CORRUPT; break;
	case MDB_READERS_FULL:
	case MDB_BAD_RSLOT:
	case MDB_MAP_RESIZED:
	case EAGAIN:
	case EBUSY: err = STORE_ERR_BUSY; break;
	case ENOMEM: err = STORE_ERR_NOMEM; break;
	case EINVAL: err = STORE_ERR_ARG; break;
	default: err = STORE_ERR_IO; break;
	}
	return store_fail(why, why_len, err, "%s: %s", what, mdb_strerror(rc));
}

/* ------------------------------------------------------------------------ */
/* Keys                                                                      */

static void
st_be64(uint8_t *p, uint64_t v)
{
	int i;
	for (i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

void
st_snap_key(uint8_t k[ST_SNAP_KEY], const uint8_t *doc, const uint8_t *prof, unsigned layer)
{
	memcpy(k, doc, STORE_ID_BYTES);
	memcpy(k + STORE_ID_BYTES, prof, STORE_ID_BYTES);
	k[ST_PREFIX] = (uint8_t)(layer >> 8);
	k[ST_PREFIX + 1] = (uint8_t)layer;
}

/* Stamps are never negative (st_stamp keeps them above the clock's 0). */
void
st_lru_key(uint8_t k[ST_LRU_KEY], int64_t stamp, const uint8_t *doc, const uint8_t *prof)
{
	st_be64(k, (uint64_t)stamp);
	memcpy(k + 8, doc, STORE_ID_BYTES);
	memcpy(k + 8 + STORE_ID_BYTES, prof, STORE_ID_BYTES);
}

int64_t
st_lru_stamp(const uint8_t *k)
{
	uint64_t v = 0;
	int i;
	for (i = 0; i < 8; i++)
		v = v << 8 | k[i];
	return (int64_t)(v & INT64_MAX);
}

/* ------------------------------------------------------------------------ */
/* The transaction gate and map growth                                       */

static void
st_gate_enter(struct store_lmdb *s)
{
	pthread_mutex_lock(&s->gate_mu);
	while (s->growing)
		pthread_cond_wait(&s->gate_cv, &s->gate_mu);
	s->n_txn++;
	pthread_mutex_unlock(&s->gate_mu);
}

static void
st_gate_leave(struct store_lmdb *s)
{
	pthread_mutex_lock(&s->gate_mu);
	if (--s->n_txn == 0)
		pthread_cond_broadcast(&s->gate_cv);
	pthread_mutex_unlock(&s->gate_mu);
}

static size_t
st_env_mapsize(MDB_env *env)
{
	MDB_envinfo info;
	mdb_env_info(env, &info);
	return info.me_mapsize;
}

/* The map size; under the gate's mutex, since a remap changes it. */
static size_t
st_map_size(struct store_lmdb *s)
{
	size_t n;
	pthread_mutex_lock(&s->gate_mu);
	n = st_env_mapsize(s->env);
	pthread_mutex_unlock(&s->gate_mu);
	return n;
}

/* Page-size multiple at or above n (LMDB wants whole OS pages). */
static size_t
st_round_page(size_t n)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	return (n + pg - 1) / pg * pg;
}

/* The size to grow a full map of cur bytes to: twice as large, and by at
 * least twice the payload so one big snapshot fits, never past max_map. */
static size_t
st_grow_target(const struct store_lmdb *s, size_t cur, size_t payload)
{
	size_t want = cur > SIZE_MAX / 2 ? SIZE_MAX : cur * 2;
	if (payload <= (SIZE_MAX - cur) / 2 && cur + 2 * payload > want)
		want = cur + 2 * payload;
	if (want > s->max_map)
		want = s->max_map;
	return st_round_page(want);
}

/* Remap once no transaction of ours is open: adopt (seen == 0) the size
 * another process committed, or grow a map that was `seen` bytes when our
 * write found it full (unless another thread grew it meanwhile).  A
 * thread that itself holds a reader would wait for ever, hence the bound:
 * STORE_ERR_BUSY after ST_GROW_WAIT_S. */
static int
st_remap(struct store_lmdb *s, size_t seen, size_t payload, char *why, size_t why_len)
{
	struct timespec until;
	size_t cur = 0, want = 0;
	int rc = 0;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += ST_GROW_WAIT_S;
	pthread_mutex_lock(&s->gate_mu);
	while (s->growing && rc == 0)
		rc = pthread_cond_timedwait(&s->gate_cv, &s->gate_mu, &until);
	if (rc == 0) {
		s->growing = 1;
		while (s->n_txn > 0 && rc == 0)
			rc = pthread_cond_timedwait(&s->gate_cv, &s->gate_mu, &until);
		cur = st_env_mapsize(s->env);
		want = seen ? st_grow_target(s, cur, payload) : 0;
		if (rc != 0)
			rc = ETIMEDOUT;
		else if (seen && cur > seen)
			rc = 0; /* another thread grew it */
		else if (seen && want <= cur)
			rc = MDB_MAP_FULL;
		else
			rc = mdb_env_set_mapsize(s->env, want);
		s->growing = 0;
		pthread_cond_broadcast(&s->gate_cv);
	} else {
		rc = ETIMEDOUT;
	}
	pthread_mutex_unlock(&s->gate_mu);
	if (rc == ETIMEDOUT)
		return store_fail(why, why_len, STORE_ERR_BUSY,
		    "map resize waited %d s for open transactions of this process",
		    ST_GROW_WAIT_S);
	if (rc == MDB_MAP_FULL)
		return store_fail(why, why_len, STORE_ERR_FULL,
		    "map full at %zu MiB (limit %zu MiB): nothing written", cur >> 20,
		    s->max_map >> 20);
	return rc ? st_mdb(rc, "map resize", why, why_len) : 0;
}

int
st_begin(struct store_lmdb *s, int write, MDB_txn **t, char *why, size_t why_len)
{
	int rc, tries;
	/* A data.mdb cut short would fault (SIGBUS) on the first page past
	 * its end: say corrupt instead. */
	if (s->fd >= 0 && (rc = st_file_check(s->fd, s->dir, 1, why, why_len)) != 0)
		return rc;
	for (tries = 0;; tries++) {
		st_gate_enter(s);
		rc = mdb_txn_begin(s->env, NULL, write ? 0 : MDB_RDONLY, t);
		if (rc == 0)
			return 0;
		st_gate_leave(s);
		/* Another process grew the map: adopt its size, then retry. */
		if (rc != MDB_MAP_RESIZED || tries > 0)
			break;
		if ((rc = st_remap(s, 0, 0, why, why_len)) != 0)
			return rc;
	}
	return st_mdb(rc, write ? "begin write transaction" : "begin read transaction", why,
	    why_len);
}

void
st_abort(struct store_lmdb *s, MDB_txn *t)
{
	mdb_txn_abort(t);
	st_gate_leave(s);
}

/* LMDB reports a short write (a file system that filled up mid-write) as
 * EIO; call that a full disk when the file system has no room left for
 * twice what we tried to write. */
static int
st_disk_full(const struct store_lmdb *s, size_t payload)
{
	struct statvfs v;
	if (statvfs(s->dir, &v) != 0)
		return 0;
	return (uint64_t)v.f_bavail * v.f_frsize < 2 * (uint64_t)payload + ((uint64_t)4 << 20);
}

int
st_commit(struct store_lmdb *s, MDB_txn *t, size_t payload, char *why, size_t why_len)
{
	int rc = mdb_txn_commit(t); /* frees t whatever happens */
	st_gate_leave(s);
	if (rc == 0)
		return 0;
	if (rc == ENOSPC || rc == EDQUOT || (rc == EIO && st_disk_full(s, payload)))
		return store_fail(why, why_len, STORE_ERR_FULL, "disk full in %s (%s): nothing written",
		    s->dir, rc == EIO ? "short write" : mdb_strerror(rc));
	return st_mdb(rc, "commit", why, why_len);
}

int
st_write(struct store_lmdb *s, st_op_fn op, void *arg, size_t payload, char *why,
    size_t why_len)
{
	int attempt, rc;
	size_t seen;

	if (s->read_only)
		return store_fail(why, why_len, STORE_ERR_ARG, "store %s is open read-only", s->dir);
	for (attempt = 0;; attempt++) {
		MDB_txn *t;
		if ((rc = st_begin(s, 1, &t, why, why_len)) != 0)
			return rc;
		seen = st_env_mapsize(s->env); /* stable while our transaction is open */
		rc = op(s, t, arg, why, why_len);
		if (rc == 0)
			rc = st_commit(s, t, payload, why, why_len);
		else
			st_abort(s, t);
		if (rc != ST_MAPFULL)
			return rc;
		/* Retry in a larger map.  Another thread may have grown it and
		 * filled it again before our retry, so retry as long as the map
		 * grows; st_remap says STORE_ERR_FULL once it cannot. */
		if (attempt == ST_WRITE_TRIES)
			break;
		if ((rc = st_remap(s, seen, payload, why, why_len)) != 0)
			return rc;
	}
	return store_fail(why, why_len, STORE_ERR_FULL,
	    "map full at %zu MiB after growing (limit %zu MiB): nothing written",
	    st_map_size(s) >> 20, s->max_map >> 20);
}

/* ------------------------------------------------------------------------ */
/* Open and close                                                            */

/* The state directory: created 0700 when missing (unless read-only). */
static int
st_dir(const char *dir, int read_only, char *why, size_t why_len)
{
	struct stat st;
	char path[600];

	if (stat(dir, &st) != 0) {
		if (errno != ENOENT || read_only)
			return store_fail(why, why_len, STORE_ERR_IO, "state directory %s: %s", dir,
			    strerror(errno));
		if (mkdir(dir, 0700) != 0 && errno != EEXIST)
			return store_fail(why, why_len, STORE_ERR_IO, "create state directory %s: %s",
			    dir, strerror(errno));
		return 0;
	}
	if (!S_ISDIR(st.st_mode))
		return store_fail(why, why_len, STORE_ERR_IO, "state directory %s: not a directory",
		    dir);
	snprintf(path, sizeof(path), "%s/data.mdb", dir);
	if (read_only && access(path, R_OK) != 0)
		return store_fail(why, why_len, STORE_ERR_IO, "no store in %s (%s)", dir,
		    strerror(errno));
	return 0;
}

/* lock.mdb and data.mdb, where they exist, must be plain files of their
 * own: LMDB opens them by name and writes its lock header into lock.mdb
 * even for a read-only open, so a link planted by whoever owns the state
 * directory would make root's `kvsnap ls --state DIR` overwrite the link's
 * target.  Symbolic links, hard links (a second name for another file),
 * FIFOs, devices and directories are refused before LMDB sees them. */
static int
st_files_check(const char *dir, char *why, size_t why_len)
{
	static const char *const names[2] = { "lock.mdb", "data.mdb" };
	struct stat st;
	char path[600];
	int i;

	for (i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		if (lstat(path, &st) != 0) {
			if (errno == ENOENT)
				continue;
			return store_fail(why, why_len, STORE_ERR_IO, "state directory %s: %s: %s", dir,
			    names[i], strerror(errno));
		}
		if (S_ISLNK(st.st_mode) || !S_ISREG(st.st_mode) || st.st_nlink > 1)
			return store_fail(why, why_len, STORE_ERR_IO, "state directory %s: %s is %s, "
			    "not a plain file: refused (a store's files are never links; remove it if "
			    "you did not put it there)", dir, names[i], S_ISLNK(st.st_mode) ?
			    "a symbolic link" : S_ISDIR(st.st_mode) ? "a directory" :
			    S_ISREG(st.st_mode) ? "a hard link (it has other names)" : "a special file");
	}
	return 0;
}

/* The map: as large as the opts ask, or as the file says another process
 * grew it to, whichever is larger. */
static int
st_adopt_size(struct store_lmdb *s, size_t initial, char *why, size_t why_len)
{
	int rc = mdb_env_set_mapsize(s->env, 0);
	if (rc == 0 && st_map_size(s) < initial)
		rc = mdb_env_set_mapsize(s->env, initial);
	return rc ? st_mdb(rc, "set map size", why, why_len) : 0;
}

static int
st_open_dbis(struct store_lmdb *s, char *why, size_t why_len)
{
	static const char *const names[5] = { "docs", "snaps", "names", "lru", "texts" };
	MDB_dbi *dbi[5] = { &s->docs, &s->snaps, &s->names, &s->lru, &s->texts };
	unsigned flags = s->read_only ? 0 : MDB_CREATE;
	MDB_txn *t;
	int i, rc;

	if ((rc = st_begin(s, !s->read_only, &t, why, why_len)) != 0)
		return rc;
	for (i = 0; i < 5; i++) {
		rc = mdb_dbi_open(t, names[i], flags, dbi[i]);
		if (rc == MDB_NOTFOUND && i == 4)
			break; /* a store from before text records, read-only: none */
		if (rc == 0 && i == 4)
			s->has_texts = 1;
		if (rc == MDB_NOTFOUND) {
			st_abort(s, t);
			return store_fail(why, why_len, STORE_ERR_IO,
			    "%s is not a kvsnap store (no '%s' database)", s->dir, names[i]);
		}
		if (rc) {
			st_abort(s, t);
			return st_mdb(rc, "open databases", why, why_len);
		}
	}
	/* A read-only transaction's handles survive its commit, not its abort. */
	return st_commit(s, t, 0, why, why_len);
}

static int
st_env_open(struct store_lmdb *s, size_t initial, char *why, size_t why_len)
{
	unsigned flags = MDB_NOTLS | (s->read_only ? MDB_RDONLY : 0);
	int rc, dead;

	/* A data.mdb shorter than LMDB's record of it: corrupt, before LMDB
	 * maps it (store_lmdb_size.c). */
	if ((rc = st_files_check(s->dir, why, why_len)) != 0 ||
	    (rc = st_file_check_path(s->dir, why, why_len)) != 0)
		return rc;
	if ((rc = mdb_env_create(&s->env)) != 0)
		return st_mdb(rc, "create environment", why, why_len);
	if ((rc = mdb_env_set_maxdbs(s->env, 5)) == 0)
		rc = mdb_env_set_mapsize(s->env, initial);
	if (rc == 0)
		rc = mdb_env_open(s->env, s->dir, flags, 0600);
	if (rc) {
		int err = st_mdb(rc, "open environment", why, why_len);
		if (err == STORE_ERR_ARG || err == STORE_ERR_NOT_FOUND)
			err = STORE_ERR_IO;
		if (why && why_len)
			snprintf(why, why_len, "open store %s: %s", s->dir, mdb_strerror(rc));
		return err;
	}
	if (mdb_env_get_fd(s->env, &s->fd) != 0)
		s->fd = -1;
	/* Reader slots of processes that died (a killed CLI, a crashed
	 * daemon) would pin old pages for ever. */
	(void)mdb_reader_check(s->env, &dead);
	return st_adopt_size(s, initial, why, why_len);
}

int
stl_open(struct store *fs, const char *dir, const struct store_opts *o, char *why,
    size_t why_len)
{
	struct store_lmdb *s;
	size_t initial = o && o->map_size ? o->map_size : ST_DEFAULT_MAP;
	size_t max_map = o && o->max_map ? o->max_map : ST_DEFAULT_MAX;
	int rc;

	if (strlen(dir) >= sizeof(s->dir))
		return store_fail(why, why_len, STORE_ERR_ARG, "state directory name empty or too long");
	if (max_map < initial)
		max_map = initial;
	if ((rc = st_dir(dir, o && o->read_only, why, why_len)) != 0)
		return rc;
	if (!(s = calloc(1, sizeof(*s))))
		return store_fail(why, why_len, STORE_ERR_NOMEM, "out of memory");
	snprintf(s->dir, sizeof(s->dir), "%s", dir);
	s->read_only = o && o->read_only;
	s->max_map = max_map;
	s->fd = -1;
	pthread_mutex_init(&s->gate_mu, NULL);
	pthread_cond_init(&s->gate_cv, NULL);
	fs->be = s;
	rc = st_env_open(s, st_round_page(initial), why, why_len);
	if (rc == 0)
		rc = st_open_dbis(s, why, why_len);
	if (rc) {
		stl_close(fs);
		return rc;
	}
	return 0;
}

void
stl_close(struct store *fs)
{
	struct store_lmdb *s = fs->be;
	if (!s)
		return;
	if (s->env)
		mdb_env_close(s->env);
	pthread_cond_destroy(&s->gate_cv);
	pthread_mutex_destroy(&s->gate_mu);
	free(s);
	fs->be = NULL;
}

const struct store_ops store_lmdb_ops = {
	.name = "lmdb",
	.open = stl_open,
	.close = stl_close,
	.put = stl_put,
	.resolve = stl_resolve,
	.read_begin = stl_read_begin,
	.read_record = stl_read_record,
	.read_end = stl_read_end,
	.touch = stl_touch,
	.info = stl_info,
	.ls = stl_ls,
	.profiles = stl_profiles,
	.rm = stl_rm,
	.rm_snapshot = stl_rm_snapshot,
	.rename = stl_rename,
	.prune = stl_prune,
	.verify = stl_verify,
	.stats = stl_stats,
	.texts = stl_texts,
};
