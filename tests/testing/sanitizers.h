// FINGERPRINTD_ASAN is defined when the tests are built with AddressSanitizer,
// by gcc (__SANITIZE_ADDRESS__) or by clang (__has_feature), for the few
// tests whose figures (memory, throughput) the sanitizer changes.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define FINGERPRINTD_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FINGERPRINTD_ASAN 1
#endif
#endif
