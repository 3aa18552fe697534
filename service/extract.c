/*
 * extract.c: a document's bytes as the service reads them: its text by
 * formats/ (the format by content, binaries refused), and the doc_id, the
 * hash of that text, which every caller that names a document by its
 * bytes uses (ingest; the daemon's query --file proof).  Every document is
 * read in a child process (formats/isolate.c): poppler and libxml2 cannot
 * be bounded from inside, a child's memory and time can, and its memory
 * goes back when it exits.
 */
#include <string.h>

#include "service/service_internal.h"

int
svc_extract(const void *bytes, size_t len, const char *encoding, atomic_int *cancel,
    struct fmt_doc *out, struct svc_status *st)
{
	int rc;
	memset(st, 0, sizeof(*st));
	if ((rc = fmt_extract_isolated(bytes, len, encoding, SVC_DOC_MAX, cancel, out, st->why,
	    sizeof(st->why))) == FMT_ERR_CANCELLED)
		return svc_fail(st, SVC_AT_INGEST, ENG_ERR_CANCELLED);
	if (rc)
		return svc_fail(st, SVC_AT_FORMAT, rc);
	return 0;
}

int
svc_doc_id(const void *bytes, size_t len, const char *encoding, atomic_int *cancel,
    uint8_t doc_id[SNAP_ID_BYTES], struct svc_status *st)
{
	struct fmt_doc d;
	if (svc_extract(bytes, len, encoding, cancel, &d, st))
		return -1;
	store_doc_id(d.text, d.len, doc_id);
	fmt_doc_free(&d);
	return 0;
}
