// The CPU feature the SIMD paths choose at run time: the build targets plain
// x86-64, and code compiled for AVX2 (`__attribute__((target("avx2")))`) runs
// only where CpuHasAvx2() holds.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__)
#define FINGERPRINTD_AVX2_DISPATCH 1
#endif

namespace fingerprintd {

// True when the CPU runs AVX2 instructions (asked once per process).
inline bool CpuHasAvx2() {
#ifdef FINGERPRINTD_AVX2_DISPATCH
  static const bool avx2 = __builtin_cpu_supports("avx2");
  return avx2;
#else
  return false;
#endif
}

}  // namespace fingerprintd
