/*
 * version.h: the one version of kvsnap and kvsnapd (`--version`, the
 * daemon's hello "server" field) and of the socket protocol they speak.
 */
#ifndef COMMON_VERSION_H
#define COMMON_VERSION_H

#define KVSNAP_VERSION "0.2.0"
#define KVSNAP_PROTOCOL_VERSION 1 /* docs/PROTOCOL.md: the "v" of every request */

#endif /* COMMON_VERSION_H */
