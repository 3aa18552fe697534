/*
 * simd.h: the prologue of the kernels/cpu/ files with x86 SIMD paths
 * (quant.c, rope_rows.c, vec_dot.c, vec_dot_k.c, vec_tile.c): KERN_X86, 1
 * on x86 (with <immintrin.h>) and 0 elsewhere; and no contraction of a
 * product and a sum into an FMA under clang, whose default allows it (gcc
 * in ISO C mode never contracts), so the scalar paths give the bits the
 * SIMD ones and ggml's reference do.  The pragma holds to the end of the
 * including file: include this after the other headers.
 */
#ifndef KERNELS_CPU_SIMD_H
#define KERNELS_CPU_SIMD_H

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define KERN_X86 1
#else
#define KERN_X86 0
#endif

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

#endif /* KERNELS_CPU_SIMD_H */
