# ctest `install_tree`: `cmake --install` of BUILD_DIR into BUILD_DIR/install-check, then the
# installed binary checks the installed rule pack and config. Nothing may land outside the prefix
# (the unit and config go to /lib/systemd/system and /etc only with the prefix /usr, `make deb`).
# Run as: cmake -DBUILD_DIR=... -P CheckInstall.cmake
set(prefix "${BUILD_DIR}/install-check")
file(REMOVE_RECURSE "${prefix}")
execute_process(COMMAND "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${prefix}"
                RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install ${BUILD_DIR} failed: ${rc}")
endif()
foreach(f bin/fingerprintd share/fingerprintd/rules/facts.yaml share/fingerprintd/rules/README.md
          share/doc/fingerprintd/README.md share/doc/fingerprintd/copyright
          share/doc/fingerprintd/changelog.gz lib/systemd/system/fingerprintd.service
          etc/fingerprintd/fingerprintd.yaml)
  if(NOT EXISTS "${prefix}/${f}")
    message(FATAL_ERROR "cmake --install did not install ${f}")
  endif()
endforeach()
execute_process(COMMAND "${prefix}/bin/fingerprintd" rules check "${prefix}/share/fingerprintd/rules"
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the installed fingerprintd rejects the installed rule pack: exit ${rc}")
endif()
execute_process(COMMAND "${prefix}/bin/fingerprintd" config check
                        "${prefix}/etc/fingerprintd/fingerprintd.yaml" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the installed fingerprintd rejects the installed config: exit ${rc}")
endif()
file(REMOVE_RECURSE "${prefix}")
