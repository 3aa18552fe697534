/*
 * store_commands.h: what the store commands, still written twice
 * (daemon/admin_job.c for kvsnapd, clients/cli_store.c for the CLI), take
 * from an open service until issue 32 item 2 moves them into service/:
 * its store and its text index.  Transitional: nothing else includes it
 * (tests/sh/layers.sh names the files that may); a new caller wants a
 * service call instead.
 */
#ifndef SERVICE_STORE_COMMANDS_H
#define SERVICE_STORE_COMMANDS_H

#include "service/service.h"

/* v's local store (thread-safe) and its text index (NULL when none is
 * open: svc_index_forget and svc_index_sync take NULL as nothing to do). */
struct store *svc_store(struct svc *v);
struct svc_index *svc_text_index(struct svc *v);

#endif /* SERVICE_STORE_COMMANDS_H */
