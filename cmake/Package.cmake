# The Debian package: `cpack -G DEB` in a build configured with -DCMAKE_INSTALL_PREFIX=/usr
# (`make deb`, and deploy/Dockerfile's build stage) packs exactly what `cmake --install` installs
# (CMakeLists.txt's install rules), plus what only a package has: its maintainer scripts, conffiles,
# copyright and changelog (deploy/debian). Runtime dependencies are computed from the binary by
# dpkg-shlibdeps, never listed by hand; adduser is for the postinst's system user.
#
#   fingerprintd_<version>_<arch>.deb: /usr/bin/fingerprintd, /usr/share/fingerprintd/rules/,
#   /usr/share/doc/fingerprintd/{README.md,copyright,changelog.gz},
#   /lib/systemd/system/fingerprintd.service, /etc/fingerprintd/fingerprintd.yaml (a conffile)
set(FINGERPRINTD_DEBIAN_DIR ${CMAKE_SOURCE_DIR}/deploy/debian)

# What Debian builds its packages with (dpkg-buildflags, hardening=+all): fortified libc calls, stack
# protector and stack clash protection, full RELRO. `make deb` and the image turn it on; the tests'
# and benchmarks' builds stay as they are.
option(FINGERPRINTD_HARDEN "Build with Debian's hardening flags" OFF)
if(FINGERPRINTD_HARDEN)
  foreach(target fingerprintd_core fingerprintd)
    target_compile_options(${target} PRIVATE -D_FORTIFY_SOURCE=2 -fstack-protector-strong
                                             -fstack-clash-protection)
  endforeach()
  target_link_options(fingerprintd PRIVATE LINKER:-z,relro LINKER:-z,now)
endif()

# Debian wants the changelog gzip'd with no timestamp in the header (gzip -n), as a native
# package's changelog.gz; its version is the project's.
configure_file(${FINGERPRINTD_DEBIAN_DIR}/changelog.in ${CMAKE_BINARY_DIR}/debian/changelog @ONLY)
add_custom_command(
  OUTPUT ${CMAKE_BINARY_DIR}/debian/changelog.gz
  COMMAND gzip -9nf --keep ${CMAKE_BINARY_DIR}/debian/changelog
  DEPENDS ${CMAKE_BINARY_DIR}/debian/changelog
  COMMENT "Compressing the Debian changelog")
add_custom_target(fingerprintd_debian_changelog ALL DEPENDS ${CMAKE_BINARY_DIR}/debian/changelog.gz)
install(FILES ${CMAKE_BINARY_DIR}/debian/changelog.gz ${FINGERPRINTD_DEBIAN_DIR}/copyright
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
# The lintian tags `make deb` leaves, each with its reason (deploy/debian/lintian-overrides).
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  install(FILES ${FINGERPRINTD_DEBIAN_DIR}/lintian-overrides
          DESTINATION ${CMAKE_INSTALL_DATADIR}/lintian/overrides RENAME fingerprintd)
endif()

set(CPACK_PACKAGE_NAME fingerprintd)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "fingerprintd maintainers <maintainers@users.noreply.a-seed-54e6d117.example>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "failure fingerprints in LLM inference worker logs")
set(CPACK_GENERATOR DEB)
set(CPACK_STRIP_FILES ON)
set(CPACK_INSTALL_DEFAULT_DIRECTORY_PERMISSIONS
    OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # fingerprintd_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# procps: the unit's ExecReload= runs /bin/kill, which minimal systems (containers) do not have.
# No ca-certificates: it pulls the openssl tool into the image and leaves files behind on purge;
# an https:// Alertmanager is verified against alertmanager.tls_config.ca_file, or the system's
# CAs where the host has them (README "A TLS Alertmanager").
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser, procps")
# The extended description (CPack puts the summary above it and a space before each line).
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "fingerprintd reads the logs of LLM inference workers (vLLM, SGLang,
TensorRT-LLM), recognises known failure fingerprints with a rule set, groups
the tensor-parallel workers of one deployment into one incident, and exposes
it to Prometheus alerting. The same binary replays historical logs.

This package has the daemon, its rule pack and a hardened systemd unit
(Type=notify) with its default configuration in /etc/fingerprintd.")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${FINGERPRINTD_DEBIAN_DIR}/postinst ${FINGERPRINTD_DEBIAN_DIR}/prerm
    ${FINGERPRINTD_DEBIAN_DIR}/postrm ${FINGERPRINTD_DEBIAN_DIR}/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
