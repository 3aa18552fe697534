/*
 * daemon.h: the public face of kvsnapd's wire protocol (docs/PROTOCOL.md is
 * the prose specification; this header is its C form).
 *
 * Wire format: newline-delimited JSON over a Unix stream socket.  A request
 * is one JSON object on one line: {"v":1, "id":ID, "op":OP, ...}.  Replies
 * are events, one JSON object per line, each carrying the request's id:
 * "progress", "token", "result" (the last event of a successful request)
 * or "error" (the last event of a failed one: code, class, message).
 *
 * The parser and the event builders are pure functions (no I/O, no global
 * state) so that a fuzz target can drive them (tests/fuzz/fuzz_protocol.c).
 * They are safe to call from any thread.
 */
#ifndef DAEMON_DAEMON_H
#define DAEMON_DAEMON_H

#include <stddef.h> /* for size_t */
#include <stdint.h> /* for int64_t */

#include <jansson.h> /* for json_t */

#include "common/version.h"

#define PROTO_VERSION KVSNAP_PROTOCOL_VERSION

/* Named limits (docs/PROTOCOL.md "Limits"). */
#define PROTO_LINE_MAX ((size_t)1 << 20)        /* bytes of one request line */
#define PROTO_TEXT_MAX ((size_t)512 << 10)      /* inline document text */
#define PROTO_FILE_MAX ((uint64_t)64 << 20)     /* a document passed by fd */
#define PROTO_QUESTION_MAX ((size_t)16 << 10)   /* bytes of a question */
#define PROTO_NAME_MAX 255                      /* a document name */
#define PROTO_SOURCE_MAX 1023                   /* a source description */
#define PROTO_REF_MAX 255                       /* a DOC reference */
#define PROTO_SEARCH_K_MAX 100                  /* hits of a search (= SVC_SEARCH_K_MAX) */
#define PROTO_SEARCH_K_DEFAULT 5
#define PROTO_ENCODING_MAX 63                   /* an encoding's name (iconv's) */
#define PROTO_ID_MAX 128                        /* bytes of a string id */
#define PROTO_MAX_TOKENS_MAX 4096               /* max_tokens of a query */
#define PROTO_PART_TOKENS_MAX 1048576           /* part_tokens of an ingest */
#define PROTO_TEMPERATURE_MAX 2.0               /* as OpenAI's API */
#define PROTO_MAX_TOKENS_DEFAULT 128
#define PROTO_FDS_PER_CONN 4                    /* passed fds not yet claimed */
#define PROTO_JOBS_PER_CONN 16                  /* requests in flight per connection */
#define PROTO_STOP_MAX 4                        /* stop sequences of a query (= SVC_STOP_MAX) */
#define PROTO_STOP_LEN_MAX 256                  /* bytes of one (= SVC_STOP_LEN_MAX) */
#define PROTO_DOCS_MAX 16                       /* documents of a library query (= SVC_LIB_MAX) */

/* Operations (never renumber). */
enum proto_op {
	PROTO_OP_HELLO = 0,
	PROTO_OP_INGEST = 1,
	PROTO_OP_QUERY = 2,
	PROTO_OP_HAS = 3,
	PROTO_OP_CANCEL = 4,
	PROTO_OP_LS = 5,
	PROTO_OP_INFO = 6,
	PROTO_OP_RM = 7,
	PROTO_OP_STATS = 8,
	PROTO_OP_VERIFY = 9,
	PROTO_OP_PRUNE = 10,
	PROTO_OP_SHRINK = 11,
	PROTO_OP_CHAT = 12,    /* the plain model (no document): HTTP only
	                        * (docs/HTTP.md); refused on the socket */
	PROTO_OP_MODELS = 13,  /* documents as models (GET /v1/models): HTTP only */
	PROTO_OP_SEARCH = 14   /* the parts that best match a question (the text index) */
};
const char *proto_op_name(enum proto_op op);

/* Error codes (stable: the strings are the wire spelling; never renumber,
 * retired ones stay as unused). */
enum proto_code {
	PROTO_E_BAD_JSON = 1,        /* client: not a JSON object */
	PROTO_E_BAD_REQUEST = 2,     /* client: a field missing, mistyped or out of range */
	PROTO_E_UNKNOWN_OP = 3,      /* client */
	PROTO_E_VERSION = 4,         /* client: unsupported protocol version */
	PROTO_E_LINE_TOO_LONG = 5,   /* client: over PROTO_LINE_MAX */
	PROTO_E_TOO_LARGE = 6,       /* client: document or text over its limit */
	PROTO_E_BUSY = 7,            /* server: job queue or per-connection limit full */
	PROTO_E_TOO_MANY_CONNS = 8,  /* server: connection limit */
	PROTO_E_NO_FD = 9,           /* client: "fd":true but no descriptor was passed */
	PROTO_E_BAD_FILE = 10,       /* client: the fd is not a readable regular file */
	PROTO_E_NOT_FOUND = 11,      /* client: unknown document / no snapshot */
	PROTO_E_AMBIGUOUS = 12,      /* client: a prefix naming several documents */
	PROTO_E_PROFILE = 13,        /* client: snapshots only of other profiles: re-ingest */
	PROTO_E_CORRUPT = 14,        /* server: stored data fails its checks */
	PROTO_E_CANCELLED = 15,      /* the job was cancelled */
	PROTO_E_SHUTTING_DOWN = 16,  /* server: the daemon is stopping */
	PROTO_E_NAME_TAKEN = 17,     /* client: the name belongs to another document */
	PROTO_E_STORE = 18,          /* server: the store failed (I/O, lock) */
	PROTO_E_STORE_FULL = 19,     /* server: map or disk full; nothing written */
	PROTO_E_ENGINE = 20,         /* server: the model failed */
	PROTO_E_TOO_LONG = 21,       /* client: more tokens than the policy can place */
	PROTO_E_INTERNAL = 22,       /* server: out of memory, a bug */
	PROTO_E_TIMEOUT = 23,        /* client: idle, or a request line too slow; then closed */
	PROTO_E_DENIED = 24,         /* client: only the owners (rm, shrink) or the service
	                              * user and root (stats, verify all, prune) may */
	PROTO_E_UNSUPPORTED = 25,    /* client: not a document kvsnap reads (binary data, a
	                              * PDF without text, bytes invalid in the encoding) */
	PROTO_E_TIER_UNAVAILABLE = 26, /* server: not in the local tier, and the shared tier
	                              * is unreachable (an outage): not a missing document */
	PROTO_E_LOADING = 27         /* server: the daemon is still loading its model and
	                              * store (it listens at once): try again shortly */
};
const char *proto_code_name(enum proto_code code);
/* "client" or "server". */
const char *proto_code_class(enum proto_code code);

/* One message of a conversation (PROTO_OP_CHAT). */
struct proto_msg {
	char *role;            /* "system", "user" or "assistant" */
	char *content;
	size_t content_len;
};

/* A parsed request.  Strings are NUL-terminated copies owned by the
 * request (JSON strings holding \u0000 are refused, so none has a NUL
 * inside). */
struct proto_req {
	json_t *id;            /* the request's id (a string or an integer), or NULL */
	enum proto_op op;
	int use_fd;            /* ingest: the document is the passed descriptor;
	                        * query: the descriptor proves the caller holds it */
	char *text;            /* ingest: inline document text */
	size_t text_len;
	char *name;            /* ingest: optional name */
	char *source;          /* ingest: optional source description */
	char *encoding;        /* ingest, query with fd: the document's encoding (NULL:
	                        * detected) */
	int force;             /* ingest: re-ingest even if stored */
	int share;             /* ingest: readable by every user of the socket */
	int64_t part_tokens;   /* ingest: parts of at most this many tokens (0: past the
	                        * window's limit only) */
	char *doc;             /* query/has/info/rm/verify/shrink: DOC reference */
	char *question;        /* query; search: its words */
	size_t question_len;
	int64_t k;             /* search: how many parts */
	int64_t max_tokens;    /* query */
	double temperature;    /* query: 0 = greedy */
	double top_p;          /* query: (0, 1], 1 = off */
	int64_t seed;          /* query: the sampler's seed */
	json_t *target;        /* cancel: the id of the request to cancel */
	int64_t older_than_s;  /* prune: 0 = no age limit */
	int64_t max_bytes;     /* prune: 0 = no size limit */
	int64_t keep;          /* prune: -1 = no count limit */
	int dry_run;           /* prune */
	double ratio;          /* shrink: share of the document's units kept, (0, 1] */
	int replace;           /* shrink: remove the source in the same transaction */
	char *profile;         /* rm: one snapshot, a hex prefix of its profile id */
	struct proto_msg *msgs; /* chat: the conversation, in order */
	size_t n_msgs;
	int raw;               /* chat: question is a raw prompt (no chat template) */
	char *stop[PROTO_STOP_MAX]; /* query, chat: stop sequences */
	size_t n_stop;
	/* query: a library question over these documents (instead of "doc"),
	 * answered as "mode" says ("side", "parts"; NULL: the default),
	 * abstaining below min_conf (min_conf_set) */
	char *docs[PROTO_DOCS_MAX];
	size_t n_docs;
	int lib_all;           /* query "all": over what search finds (svc_search);
	                        * HTTP's `model` "library" */
	char *mode;
	double min_conf;
	int min_conf_set;
	int64_t lib_top;       /* "all": the best parts retrieved (0: the default, 3) */
	int64_t lib_judge;     /* "judge_tokens": the answer tokens judged before any is
	                        * handed on (0: the default) */
	/* HTTP only: the plain model's id (models, and a query whose document
	 * came from `model`); doc_model: doc is the request's `model`, looked
	 * up as GET /v1/models lists it (service/models.c) */
	char *plain_model;
	int doc_model;
};

/* One member of a request object, checked (daemon/json_fields.c; both
 * request parsers): 0, or a PROTO_E_ code with the reason in msg.  Absent
 * or null leaves *out (a required string is bad_request).  A string over
 * max bytes is code_long (too_large or bad_request); *out is freed and
 * replaced. */
int proto_json_str(json_t *o, const char *key, int required, size_t max, int code_long,
    char **out, size_t *out_len, char *msg, size_t msg_len);
int proto_json_int(json_t *o, const char *key, int64_t lo, int64_t hi, int64_t *out, char *msg,
    size_t msg_len);
/* A number in [lo, hi]; lo_open: lo itself refused. */
int proto_json_num(json_t *o, const char *key, double lo, int lo_open, double hi, double *out,
    char *msg, size_t msg_len);
int proto_json_bool(json_t *o, const char *key, int *out, char *msg, size_t msg_len);
/* "stop": a string or an array of at most PROTO_STOP_MAX strings of 1 to
 * PROTO_STOP_LEN_MAX bytes (null or [] : none), into r->stop. */
int proto_json_stops(json_t *o, const char *key, struct proto_req *r, char *msg,
    size_t msg_len);

/* "docs" (a library question): an array of 1 to PROTO_DOCS_MAX DOC
 * references of 1 to PROTO_REF_MAX bytes, into r->docs (null: none). */
int proto_json_docs(json_t *o, const char *key, struct proto_req *r, char *msg,
    size_t msg_len);
/* A library question's mode: "side", "parts" or "pick", into *out. */
int proto_json_mode(json_t *o, const char *key, char **out, char *msg, size_t msg_len);

/* Parse one request line (without its newline).  Returns 0, or an error
 * code with a message in msg (and req->id set when the id could be read,
 * so the error reply can carry it).  Call proto_req_free either way. */
int proto_parse(const char *line, size_t len, struct proto_req *req, char *msg,
    size_t msg_len);
void proto_req_free(struct proto_req *req);

/* One event line, "\n"-terminated, malloc'd: {"id":ID,"event":EVENT, ...}
 * with the members of body (may be NULL; a reference is stolen).  NULL on
 * out of memory.  *len receives the length. */
char *proto_event(const json_t *id, const char *event, json_t *body, size_t *len);
/* An error event: code, class and message. */
char *proto_error(const json_t *id, enum proto_code code, const char *msg, size_t *len);

#endif /* DAEMON_DAEMON_H */
