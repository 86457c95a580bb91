# Cross build for arm64 (aarch64: GB10 / DGX Spark, Grace) on a Debian 12 amd64 host, with Debian's
# cross toolchain (crossbuild-essential-arm64) and the build's libraries installed as :arm64
# multiarch packages beside the amd64 ones (deploy/install-deps.sh arm64). Everything
# architecture-specific of the cross build is here, so CMakeLists.txt stays as it is:
#
#   cmake -S . -B build-deb-arm64 --toolchain cmake/aarch64-linux-gnu.cmake ...   (make deb-arm64)
#
# Headers and libraries come from the host's /usr: the compiler searches /usr/include and the
# multiarch directories /usr/lib/aarch64-linux-gnu and /usr/include/aarch64-linux-gnu, and CMake
# looks for package configs in /usr/lib/aarch64-linux-gnu/cmake (CMAKE_LIBRARY_ARCHITECTURE, which
# CMake reads from the compiler). No sysroot: the arm64 packages are installed on the host itself.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

# The arm64 programs this build makes (the tests' discovery, ctest's commands) run under qemu's
# user-mode emulator; the arm64 dynamic loader and libraries are the host's multiarch ones.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64-static)

# Programs the build runs (pkg-config, python3, promtool, ...) are the host's; libraries, headers
# and package configs are never taken from the host's amd64 directories.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)

# libyaml-cpp-dev and prometheus-cpp-dev are Multi-Arch: no (their :arm64 packages would remove the
# amd64 ones), so deploy/install-deps.sh unpacks them here instead, their libraries linked to the
# installed :arm64 runtime packages. Searched first.
set(FINGERPRINTD_ARM64_DEV_ROOT "/opt/fingerprintd-cross/arm64" CACHE PATH
    "Where deploy/install-deps.sh arm64 unpacked the arm64 -dev packages that are not Multi-Arch")
list(PREPEND CMAKE_PREFIX_PATH ${FINGERPRINTD_ARM64_DEV_ROOT}/usr)

# pkg-config (re2) reads the arm64 .pc files only; Debian 12 ships no aarch64-linux-gnu-pkg-config.
set(ENV{PKG_CONFIG_LIBDIR}
    "${FINGERPRINTD_ARM64_DEV_ROOT}/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")

# The Debian package's architecture (cmake/Package.cmake): CPack otherwise asks dpkg, which answers
# the host's, amd64. dpkg-shlibdeps reads the binary's own ELF class and finds its libraries in
# /usr/lib/aarch64-linux-gnu, owned by the :arm64 packages the Depends then name.
set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE arm64)
