/*
 * cuda_absent.c: linked instead of kernels/cuda/ when the build has no nvcc,
 * so `--backend cuda` can say plainly that this build has no CUDA.
 */
#include "kernels/backend.h"

const struct kern_dev_backend *
kern_cuda_backend(void)
{
	return NULL;
}
