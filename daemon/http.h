/*
 * http.h: what kvsnapd's HTTP front end shares between its files (the
 * OpenAI-compatible endpoint, docs/HTTP.md): routes and the request
 * parser (http_parse.c, pure: the fuzz target drives it), the reply
 * shapes (http_reply.c), the peer's uid (http_peer.c).  http.c is the
 * server on the daemon's event loop.
 */
#ifndef DAEMON_HTTP_H
#define DAEMON_HTTP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "daemon/daemon.h"

enum http_route {
	HTTP_R_MODELS = 0,   /* GET /v1/models */
	HTTP_R_MODEL,        /* GET /v1/models/{id} */
	HTTP_R_CHAT,         /* POST /v1/chat/completions */
	HTTP_R_COMPLETIONS,  /* POST /v1/completions */
	HTTP_R_DOC_INGEST,   /* POST /v1/documents */
	HTTP_R_DOC_LIST,     /* GET /v1/documents */
	HTTP_R_DOC_INFO,     /* GET /v1/documents/{ref} */
	HTTP_R_DOC_RM        /* DELETE /v1/documents/{ref} */
};

/* A parsed HTTP request: the route, how to reply, and the job's request
 * (op and fields, as the socket protocol's parser fills them). */
/* The model id a library question over everything the caller may read
 * goes to (docs/HTTP.md; a document of that name is reached by
 * "document"). */
#define HTTP_LIBRARY_MODEL "library" /* service.h's SVC_LIBRARY_MODEL: this header is
                                       * built without service/ (fuzz_http) */

struct http_req {
	enum http_route route;
	int stream;          /* server-sent events */
	int include_usage;   /* stream_options.include_usage: a last chunk with usage */
	char *model;         /* GET /v1/models/{id}: the id asked for; a completion's `model` */
	struct proto_req pr;
};

/* Parse one request: method ("GET", ...), the URI's path and query
 * ("/v1/documents?name=x"), the Content-Type and Accept headers (NULL when
 * absent), the body, and the plain model's id (a completion's `model`
 * other than it names a document).  Returns 0, or a proto_code with a
 * message in msg; *status is the HTTP status to answer with (200 when 0).
 * Call http_req_free either way.  No I/O, no global state. */
int http_parse(const char *method, const char *uri, const char *ctype, const char *accept,
    const char *body, size_t len, const char *plain, struct http_req *r, int *status, char *msg,
    size_t msg_len);
/* A completion request's members (http_fields.c): 0 when kvsnapd takes
 * each (reads it, or it changes nothing here), else bad_request naming
 * the first it does not (tools, response_format, logprobs, ...). */
int http_fields_check(json_t *o, int chat, char *msg, size_t msg_len);
/* The same for messages[i]: role, content, name. */
int http_message_check(json_t *m, size_t i, char *msg, size_t msg_len);
void http_req_free(struct http_req *r);

/* The HTTP status of a protocol error code, and OpenAI's error type for a
 * status ("invalid_request_error", "not_found_error", ...). */
int http_status_of(enum proto_code code);
const char *http_error_type(int status);

/* --http ADDR: unix:/path, 127.0.0.1:PORT (any 127/8), [::1]:PORT or
 * localhost:PORT; anything else is refused (the endpoint has no
 * authentication beyond the peer's uid, which only a local peer has). */
struct http_addr {
	int is_unix;
	char path[108];      /* sun_path */
	int family;          /* AF_INET or AF_INET6 */
	uint8_t ip[16];      /* network order */
	uint16_t port;
};
int http_addr_parse(const char *s, struct http_addr *a, char *msg, size_t msg_len);

/* ------------------------------------------------------------------------ */
/* Reply shapes (http_reply.c): OpenAI's objects, built from a job's events */

struct http_shape {
	int chat;            /* chat.completion(.chunk), else text_completion */
	char id[48];         /* "chatcmpl-..." / "cmpl-..." */
	int64_t created;     /* Unix seconds */
	const char *model;
};
/* {"error":{"message","type","code","param":null}} as a malloc'd string. */
char *http_error_json(enum proto_code code, int status, const char *msg, size_t *len);
/* "data: JSON\n\n" (o stolen), malloc'd. */
char *http_sse(json_t *o, size_t *len);
/* OpenAI's finish_reason of a job's stop ("eos" -> "stop", "length"). */
const char *http_finish_reason(const char *stop);
/* A streamed chunk: the text so far (first: the chat's role too), or the
 * finish_reason (text NULL), or only usage (finish NULL, text NULL,
 * usage non-NULL: stolen). */
json_t *http_chunk(const struct http_shape *s, const char *text, size_t n, int first,
    const char *finish, json_t *usage);
/* The whole answer (non-streamed). */
json_t *http_completion(const struct http_shape *s, const char *text, size_t n,
    const char *finish, json_t *usage);
/* A library question's members (sources, answered_from, abstained,
 * confidence) from the job's result copied into reply object o (a
 * completion or its last chunk); o unchanged for any other result.
 * Returns o (http_library.c). */
json_t *http_library_reply(json_t *o, const json_t *result);
json_t *http_usage(int64_t prompt, int64_t completion);
/* The document endpoints' replies from the admin and ingest jobs' results
 * (body borrowed). */
json_t *http_doc_reply(enum http_route route, const json_t *body);
/* GET /v1/models: the one model. */
json_t *http_models(const char *name, int64_t created);
json_t *http_model(const char *name, int64_t created);

/* ------------------------------------------------------------------------ */
/* Documents as models (http_models.c)                                       */

/* GET /v1/models and /v1/models/{id}: 1 when the plain model answers it
 * now, 2 when the model `library` does (GET /v1/models/library; the list
 * is never answered so), else 0 with r made the models job's request (the
 * caller's documents). */
int http_models_route(struct http_req *r, const char *plain);
/* The list (the plain model first, then the caller's documents) or one
 * model, from the models job's result (body borrowed). */
json_t *http_models_reply(enum http_route route, const json_t *body, const char *plain,
    int64_t created);
/* OpenAI's error for a model that is not there: 404, code
 * "model_not_found", param "model" (malloc'd). */
char *http_model_error_json(const char *msg, size_t *len);

/* ------------------------------------------------------------------------ */
/* The peer (http_peer.c)                                                    */

/* The uid of the process at the other end of connected socket fd: Unix
 * sockets by SO_PEERCRED, loopback TCP by the kernel's socket table
 * (NETLINK_SOCK_DIAG: the socket whose addresses are this one's reversed).
 * 0 with *uid, or -1 with a reason. */
int http_peer_uid(int fd, uid_t *uid, char *why, size_t why_len);

/* http-allow: who besides root and the daemon's own user may use the HTTP
 * listener: "socket-group" (the default: the members of the main
 * socket's group), "any" (every local user), users (NAME or UID) and
 * groups (@NAME or @GID), separated by commas or spaces.  Membership is
 * the user database's (primary group or getgrouplist). */
#define HTTP_ALLOW_MAX 64
struct http_allow {
	int any, socket_group;
	uid_t uids[HTTP_ALLOW_MAX];
	gid_t gids[HTTP_ALLOW_MAX];
	int n_uids, n_gids;
};
/* Parse (names resolved now); 0, or -1 with a message. */
int http_allow_parse(const char *s, struct http_allow *a, char *msg, size_t msg_len);
/* 0 if uid may call (sock_gid: the main socket's group), else -1 with why. */
int http_allow_check(const struct http_allow *a, gid_t sock_gid, uid_t uid, char *why,
    size_t why_len);

#endif /* DAEMON_HTTP_H */
