# The test binary of `make test-arm64` (tests/arm64/run.sh): fingerprintd_emulated_tests, built
# from only the test files whose suites run under qemu there (the parser's, the matcher's and the
# correlator's unit tests and the golden fixtures), so that the arm64 build compiles about a
# third of the tests instead of all of them. Not part of `all`.
#
#   cmake ... --toolchain cmake/aarch64-linux-gnu.cmake \
#         -DCMAKE_PROJECT_fingerprintd_INCLUDE=cmake/EmulatedTests.cmake   (the Makefile's arm64 build)
#
# Included at the end of project(fingerprintd); the target is made once CMakeLists.txt has been
# read (cmake_language(DEFER)), with fingerprintd_tests' own include directories, definitions and
# libraries copied from it, so that the two are built alike and CMakeLists.txt stays as it is.
function(fingerprintd_add_emulated_tests)
  if(NOT BUILD_TESTING OR NOT TARGET fingerprintd_tests)
    return()
  endif()
  file(GLOB sources CONFIGURE_DEPENDS
       ${CMAKE_SOURCE_DIR}/tests/parse/*_test.cc
       ${CMAKE_SOURCE_DIR}/tests/rules/*_test.cc
       ${CMAKE_SOURCE_DIR}/tests/correlate/*_test.cc
       ${CMAKE_SOURCE_DIR}/tests/integration/replay_golden_test.cc
       ${CMAKE_SOURCE_DIR}/tests/integration/golden_counts_test.cc)
  file(GLOB_RECURSE support CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/testing/*.cc)
  add_executable(fingerprintd_emulated_tests EXCLUDE_FROM_ALL ${sources} ${support})
  foreach(property INCLUDE_DIRECTORIES COMPILE_DEFINITIONS COMPILE_OPTIONS LINK_LIBRARIES)
    get_target_property(value fingerprintd_tests ${property})
    if(value)
      set_property(TARGET fingerprintd_emulated_tests PROPERTY ${property} "${value}")
    endif()
  endforeach()
endfunction()
cmake_language(DEFER DIRECTORY ${CMAKE_SOURCE_DIR} CALL fingerprintd_add_emulated_tests)
