/*
 * version.c: what `kvsnap --version` and `kvsnapd --version` print: the
 * version, the formats this build reads and writes, its compute backends.
 */
#include <stdio.h>

#include "common/version.h"
#include "kernels/kernels.h"
#include "service/service_internal.h"

void
svc_version(FILE *f, const char *prog)
{
	fprintf(f, "%s %s\n"
	    "protocol %d, snapshot format %d\n"
	    "backends: cpu; cuda: %s\n", prog, KVSNAP_VERSION, KVSNAP_PROTOCOL_VERSION,
	    SNAP_FORMAT_VERSION, kern_have_cuda() ? "compiled in" :
	    "not compiled in (build with nvcc: make CUDA=1)");
}
