/*
 * snapshot_copy.c: one snapshot from one store to another, as stored (the
 * same record bytes, no decode and re-encode), verified on the way: every
 * record is read in one consistent view of the source, the header and each
 * layer record pass the codec's content check (snap_verify_records: the
 * header decodes and names the profile, each layer's checksum is the
 * header's, its own checksum (versions 1 to 3) and shape hold), and only then is the whole
 * snapshot put into the destination in one store_put.  A bad record copies
 * nothing.  The shared tier's fetch and push (service/tiers.c) are this.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "snapshot/snapshot_io.h"

struct copy_recs {
	struct store_rec *rec;   /* layers 0..n-1, then the header */
	uint8_t **buf;
	int n;
};

static void
copy_free(struct copy_recs *c)
{
	int i;
	for (i = 0; c->buf && i < c->n; i++)
		free(c->buf[i]);
	free(c->buf);
	free(c->rec);
}

/* Keep a record's bytes (the reader's are valid until its next call). */
static int
copy_keep(struct copy_recs *c, int slot, unsigned index, const uint8_t *b, size_t len)
{
	if (!(c->buf[slot] = malloc(len ? len : 1)))
		return SNAPIO_ERR_NOMEM;
	memcpy(c->buf[slot], b, len);
	c->rec[slot].index = index;
	c->rec[slot].buf = c->buf[slot];
	c->rec[slot].len = len;
	return 0;
}

/* Every record of the snapshot from one reader; the layer count is the
 * header's.  SNAPIO_ codes. */
static int
copy_read(struct store *from, const uint8_t *doc, const uint8_t *prof, struct copy_recs *c,
    char *why, size_t why_len)
{
	struct store_reader *r = NULL;
	struct snap_header h;
	const uint8_t *b;
	size_t len;
	char w[256];
	int rc, l;

	memset(&h, 0, sizeof(h));
	if ((rc = store_read_begin(from, doc, prof, &r, why, why_len)))
		return snapio_from_store(rc);
	if ((rc = store_read_layer(r, STORE_HEAD_RECORD, &b, &len, why, why_len))) {
		rc = snapio_from_store(rc);
		goto out;
	}
	if (snap_header_decode(b, len, &h, w, sizeof(w))) {
		snprintf(why, why_len, "header: %s", w);
		rc = SNAPIO_ERR_CORRUPT;
		goto out;
	}
	c->n = h.n_layer + 1;
	if (!(c->rec = calloc((size_t)c->n, sizeof(*c->rec))) ||
	    !(c->buf = calloc((size_t)c->n, sizeof(*c->buf)))) {
		rc = SNAPIO_ERR_NOMEM;
		goto out;
	}
	if ((rc = copy_keep(c, h.n_layer, STORE_HEAD_RECORD, b, len)))
		goto out;
	for (l = 0; l < h.n_layer; l++) {
		if ((rc = store_read_layer(r, (unsigned)l, &b, &len, why, why_len))) {
			rc = snapio_from_store(rc);
			goto out;
		}
		if ((rc = copy_keep(c, l, (unsigned)l, b, len)))
			goto out;
	}
out:
	if (rc == SNAPIO_ERR_NOMEM)
		snprintf(why, why_len, "out of memory");
	snap_header_free(&h);
	store_read_end(r);
	return rc;
}

int
snap_copy(struct store *from, struct store *to, const uint8_t doc_id[SNAP_ID_BYTES],
    const uint8_t profile_id[SNAP_ID_BYTES], const struct store_doc *d, int *at_write,
    char *why, size_t why_len)
{
	struct copy_recs c = { NULL, NULL, 0 };
	struct store_snapshot sn;
	struct store_doc dd;
	const uint8_t **layer = NULL;
	size_t *layer_len = NULL;
	char w[256];
	int rc, l;

	*at_write = 0;
	if ((rc = copy_read(from, doc_id, profile_id, &c, why, why_len)))
		goto out;
	if ((rc = snap_verify_records(NULL, profile_id, c.rec, c.n, w, sizeof(w)))) {
		rc = rc == SNAP_ERR_NOMEM ? SNAPIO_ERR_NOMEM : SNAPIO_ERR_CORRUPT;
		snprintf(why, why_len, "%s", w);
		goto out;
	}
	*at_write = 1;
	if (!(layer = calloc((size_t)c.n, sizeof(*layer))) ||
	    !(layer_len = calloc((size_t)c.n, sizeof(*layer_len)))) {
		rc = SNAPIO_ERR_NOMEM;
		snprintf(why, why_len, "out of memory");
		goto out;
	}
	for (l = 0; l < c.n - 1; l++) {
		layer[l] = c.rec[l].buf;
		layer_len[l] = c.rec[l].len;
	}
	memset(&sn, 0, sizeof(sn));
	memcpy(sn.profile_id, profile_id, SNAP_ID_BYTES);
	sn.header = c.rec[c.n - 1].buf;
	sn.header_len = c.rec[c.n - 1].len;
	sn.layer = layer;
	sn.layer_len = layer_len;
	sn.n_layer = c.n - 1;
	dd = *d;
	rc = store_put(to, &dd, &sn, why, why_len);
	if (rc == STORE_ERR_EXISTS && dd.name[0]) {
		/* the name is another document's there: the snapshot matters
		 * more than the name, which stays with its owner */
		dd.name[0] = '\0';
		rc = store_put(to, &dd, &sn, why, why_len);
	}
	rc = snapio_from_store(rc);
out:
	free(layer);
	free(layer_len);
	copy_free(&c);
	return rc;
}
