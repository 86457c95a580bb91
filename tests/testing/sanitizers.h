// FINGERPRINTD_ASAN is defined when the tests are built with AddressSanitizer,
// by gcc (__SANITIZE_ADDRESS__) or by clang (__has_feature), for the few
// tests whose figures (memory, throughput) the sanitizer changes, and
// kSanitizerSlowdown, the factor a wait for the daemon is stretched by there
// (the sanitizer build is unoptimized and instrumented: 200 connections' worth
// of work that takes 0.6 s in release takes about 15 s in it, alone on a core).
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define FINGERPRINTD_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FINGERPRINTD_ASAN 1
#endif
#endif

namespace fingerprintd::testing {
#ifdef FINGERPRINTD_ASAN
inline constexpr int kSanitizerSlowdown = 4;
#else
inline constexpr int kSanitizerSlowdown = 1;
#endif
}  // namespace fingerprintd::testing
