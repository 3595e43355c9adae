#pragma once
// Private: PX_ROW_CLONES marks a kernel's hot loop to be compiled also for
// AVX-512 and AVX2 machines and picked once at load time (GCC function
// multiversioning, an ifunc), so a portable baseline build still runs 8-16
// lanes wide where the CPU can. A loop so marked must compute the same bits in
// every clone: no reassociation (g++ does none without -ffast-math) and no
// multiply-add contraction (the files that need it turn it off).
//
// ThreadSanitizer builds go without: the dynamic loader runs ifunc resolvers before the TSan
// runtime is set up, and an instrumented resolver crashes the program at load time.

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
#define PX_ROW_CLONES [[gnu::target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")]]
#else
#define PX_ROW_CLONES
#endif
