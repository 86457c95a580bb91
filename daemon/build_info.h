// What `fingerprintd version` reports of the build besides the version
// (FINGERPRINTD_VERSION) and the compile definitions FINGERPRINTD_BUILD_TYPE
// and FINGERPRINTD_ARCH: the commit, written at every build by
// cmake/BuildInfo.cmake into generated/build_info.cc.
#pragma once

namespace fingerprintd {

// "1a2b3c4d5e6f"; with "-dirty" when tracked files differed from it; the
// FINGERPRINTD_COMMIT given to cmake, or "unknown", without a git checkout.
extern const char kBuildCommit[];

}  // namespace fingerprintd
