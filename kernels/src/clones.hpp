#pragma once
// Per-ISA clones of the vector loops (vector_ops.cpp, fused_ops.cpp): a
// portable build (no -march) would run them on SSE2 only; they are cloned for
// AVX-512, AVX2 and the baseline and picked at load time, as oneDNN does. The
// files using them are compiled with -ffp-contract=off, so every clone rounds
// alike (GCC would otherwise fuse a*x+y into an FMA in the AVX-512 clone only).

// Not under ThreadSanitizer: the clones' ifunc resolvers run while the
// dynamic loader relocates the program, before TSan's run time is set up, and
// an instrumented resolver crashes there (SIGSEGV before main).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__AVX2__) &&       \
  !defined(__SANITIZE_THREAD__)
#define ATRAIN_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define ATRAIN_CLONES
#endif

// A helper of cloned functions: inlined into each clone, so compiled for its
// ISA (a call would run the baseline copy).
#define ATRAIN_INLINE __attribute__((always_inline))
