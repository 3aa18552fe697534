/*
 * version.h: the one version of kvsnap and kvsnapd (`--version`, the
 * daemon's hello "server" field) and of the socket protocol they speak.
 */
#ifndef COMMON_VERSION_H
#define COMMON_VERSION_H

#define KVSNAP_VERSION "0.2.0"
/* docs/PROTOCOL.md: the "v" of a request.  2 added query's "stop"; the
 * daemon takes 1 and 2 alike, and kvsnap sends 2 only with --stop, so an
 * older daemon refuses that request rather than ignore the field. */
#define KVSNAP_PROTOCOL_VERSION 2

#endif /* COMMON_VERSION_H */
