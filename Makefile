# The README's two commands: `make demo` and `make test`. Both install what is
# missing (deploy/install-deps.sh), configure and build; nothing else is needed.
# `make demo` builds only the daemon it runs; `make test` builds everything.
JOBS ?= 2
BUILD ?= build
SANITIZE_BUILD ?= build-sanitize
VERSION := $(shell grep -oP '^project.fingerprintd VERSION \K[0-9.]+' CMakeLists.txt)

.PHONY: all deps build daemon demo test test-sanitize test-tsan memcheck fuzz fuzz-smoke \
	fuzz-build check-real-corpus check-message-coverage check-live-corpus format-check clean image-base image test-image deb test-deb \
	deb-arm64 test-arm64 test-deb-arm64

all: build

deps:
	@./deploy/install-deps.sh

$(BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j$(JOBS)

daemon: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j$(JOBS) --target fingerprintd

# The main job live: `fingerprintd run` on a temp dir while the bundled example
# logs are written into it in pieces (examples/demo_live.sh prints each
# incident as it appears and stops all it started); then a replay of the same
# logs: one TP=2 deployment hitting the target fingerprint and one sibling
# deployment, printed as text incidents.
demo: daemon
	@echo "== fingerprintd run: the example logs written live into a temp dir =="
	@examples/demo_live.sh $(BUILD)/fingerprintd
	@echo
	@echo "== fingerprintd replay examples/*/ (text) =="
	@$(BUILD)/fingerprintd replay --deployment-from '^examples/([^/]+)/' examples/*/ ; \
	  rc=$$?; if [ $$rc -ne 0 ]; then echo "replay exited $$rc"; exit $$rc; fi

test: build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

# The tests under AddressSanitizer + UndefinedBehaviorSanitizer, built with clang in the tree
# the libFuzzer targets are built in (fuzz-build): the library is compiled once, instrumented
# for both (-fsanitize=fuzzer-no-link only adds coverage counters the tests never read).
$(SANITIZE_BUILD)/CMakeCache.txt: | deps
	CC=clang CXX=clang++ cmake -S . -B $(SANITIZE_BUILD) -DCMAKE_BUILD_TYPE=Debug \
	  -DFINGERPRINTD_SANITIZE=ON -DFINGERPRINTD_FUZZ=ON

test-sanitize: deps $(SANITIZE_BUILD)/CMakeCache.txt
	cmake --build $(SANITIZE_BUILD) -j$(JOBS)
	cd $(SANITIZE_BUILD) && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --output-on-failure -j$(JOBS)

# Replays the real reference logs kept outside the repository (by hand; CI has none).
CORPUS ?= ../shared/corpus/real
check-real-corpus: build
	tests/corpus/check_real_logs.sh $(CORPUS) $(BUILD)/fingerprintd

# Replays every message the engines' and kernel libraries' fatal checks raise (harvested
# outside the repository by tools/harvest_messages.py) as a worker's fatal exception, and
# prints how many got the class the harvest gives them (by hand; CI has none). tools/README.md
BIN ?= $(BUILD)/fingerprintd
HARVEST ?= /work/harvest/messages.jsonl
check-message-coverage: daemon
	python3 -B tools/check_message_coverage.py --bin $(BIN) --harvest $(HARVEST) $(COVERAGE_ARGS)

# The same files written into a directory one running daemon tails: each
# file's incidents (ids included) must be replay's (by hand; CI has none).
check-live-corpus: daemon
	tests/corpus/check_live_corpus.sh $(CORPUS) $(BUILD)/fingerprintd

# ThreadSanitizer over the tests that run the real daemon (run, sockets, HTTP,
# Alertmanager, systemd notify, the Prometheus/Alertmanager end-to-end tests):
# the daemon and the tests built with -fsanitize=thread (clang). The daemon is
# single-threaded; the tests' own threads (fake peers, clients) are checked too.
TSAN_BUILD ?= build-tsan
TSAN_TESTS ?= (RunTest|RunTimeTest|SocketTest|ReplayReaderTest|HttpTest|HttpServerTest|AlertmanagerSinkTest|AlertmanagerUrlTest|SystemdUnitTest)\.|_e2e$$
$(TSAN_BUILD)/CMakeCache.txt: | deps
	CC=clang CXX=clang++ cmake -S . -B $(TSAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DCMAKE_CXX_FLAGS="-fsanitize=thread -fno-omit-frame-pointer" \
	  -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread
test-tsan: deps $(TSAN_BUILD)/CMakeCache.txt
	cmake --build $(TSAN_BUILD) -j$(JOBS) --target fingerprintd fingerprintd_tests
	cd $(TSAN_BUILD) && TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
	  ctest --output-on-failure -j$(JOBS) -R '$(TSAN_TESTS)'

# valgrind memcheck over `fingerprintd replay` of the examples and the golden
# fixtures (RelWithDebInfo, no tests built): any error or leak fails.
MEMCHECK_BUILD ?= build-memcheck
$(MEMCHECK_BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(MEMCHECK_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=OFF
memcheck: deps $(MEMCHECK_BUILD)/CMakeCache.txt
	cmake --build $(MEMCHECK_BUILD) -j$(JOBS) --target fingerprintd
	valgrind --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite,indirect,possible \
	  --suppressions=tests/sanitizers/valgrind.supp -q \
	  $(MEMCHECK_BUILD)/fingerprintd replay --deployment-from '^(?:examples|tests/golden)/([^/.]+)' \
	  examples/ tests/golden/ >/dev/null

# libFuzzer under ASan+UBSan (clang, the sanitizer build's tree): the whole
# pipeline and one target per parser (tests/fuzz/*_fuzz.cc), FUZZ_SECONDS
# each, one after the other (tests/fuzz/run.sh prints runs, coverage and
# corpus size per target). fuzz-smoke: FUZZ_SMOKE_SECONDS each, in .ci/run.
FUZZ_SECONDS ?= 120
FUZZ_SMOKE_SECONDS ?= 10
fuzz-build: deps $(SANITIZE_BUILD)/CMakeCache.txt
	cmake --build $(SANITIZE_BUILD) -j$(JOBS) --target fingerprintd_fuzzers
fuzz: fuzz-build
	tests/fuzz/run.sh $(SANITIZE_BUILD) $(FUZZ_SECONDS)
fuzz-smoke: fuzz-build
	tests/fuzz/run.sh $(SANITIZE_BUILD) $(FUZZ_SMOKE_SECONDS)

# The container image (deploy/Dockerfile) built with podman from the package
# `make deb` built (its `package` stage replaced by it: the daemon is compiled
# once for both; deploy/image/build.sh), and run as users run it
# (tests/deploy/image_test.py: replay against the host binary, the sidecar's
# `run` read-only as 65532, SIGTERM, resume from the checkpoint). image-base
# makes the Debian 12 base images where they are missing (image and test-deb
# do it too; .ci/run times it apart). The podman, runc and mmdebstrap they
# need are installed only for these.
#
# With arm64 in IMAGE_ARCHES (the default), IMAGE is a manifest list of the
# amd64 image and the arm64 one, the latter made from `make deb-arm64`'s
# package under qemu FROM an arm64 base made the same way (base.sh arm64);
# each is also tagged IMAGE-<arch>. test-image runs the amd64 one, then the
# arm64 one the same way (tests/arm64/image_test.py): read-only, as 65532.
IMAGE ?= fingerprintd:$(VERSION)
IMAGE_ARCHES ?= amd64 arm64
IMAGE_ARM64 := $(filter arm64,$(IMAGE_ARCHES))
image-base:
	@./deploy/install-deps.sh containers $(IMAGE_ARM64)
	deploy/image/base.sh
	$(if $(IMAGE_ARM64),deploy/image/base.sh arm64 12-slim)
image: deb
	$(if $(IMAGE_ARM64),$(MAKE) deb-arm64)
	@./deploy/install-deps.sh containers $(IMAGE_ARM64)
	deploy/image/build.sh $(IMAGE) $(DEB_BUILD)/fingerprintd_$(VERSION)_*.deb \
	  $(if $(IMAGE_ARM64),$(ARM64_BUILD)/fingerprintd_$(VERSION)_arm64.deb)
test-image: daemon
	@./deploy/install-deps.sh containers $(IMAGE_ARM64)
	python3 -B tests/deploy/image_test.py $(IMAGE) $(BUILD)/fingerprintd
	$(if $(IMAGE_ARM64),deploy/image/binfmt.sh)
	$(if $(IMAGE_ARM64),python3 -B tests/arm64/image_test.py $(IMAGE)-arm64 $(BUILD)/fingerprintd)

# The Debian package fingerprintd_$(VERSION)_<arch>.deb from the install rules
# (cmake/Package.cmake), with the configure deploy/Dockerfile's package stage
# runs; lintian on it. test-deb installs it into a fresh Debian 12 container.
DEB_BUILD ?= build-deb
$(DEB_BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(DEB_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=OFF -DCMAKE_INSTALL_PREFIX=/usr -DFINGERPRINTD_HARDEN=ON
deb: deps $(DEB_BUILD)/CMakeCache.txt
	@./deploy/install-deps.sh deb
	cmake --build $(DEB_BUILD) -j$(JOBS) --target fingerprintd fingerprintd_debian_changelog
	rm -f $(DEB_BUILD)/fingerprintd_*.deb
	cd $(DEB_BUILD) && cpack -G DEB
	lintian --display-info --fail-on error,warning $(DEB_BUILD)/fingerprintd_$(VERSION)_*.deb
	@ls -l $(DEB_BUILD)/fingerprintd_$(VERSION)_*.deb
test-deb:
	@./deploy/install-deps.sh containers
	python3 -B tests/deploy/deb_test.py $(DEB_BUILD)/fingerprintd_$(VERSION)_*.deb

# arm64 (aarch64: GB10 / DGX Spark, Grace hosts), cross-built on this amd64 host with Debian's
# cross toolchain and the :arm64 libraries (cmake/aarch64-linux-gnu.cmake; the arm64 group of
# deploy/install-deps.sh, installed for these targets only) and run under qemu-aarch64-static.
# One build directory serves both: deb-arm64 builds the daemon and packs
# $(ARM64_BUILD)/fingerprintd_$(VERSION)_arm64.deb as `deb` packs the amd64 one (same configure,
# install rules, hardening, dpkg-shlibdeps, lintian); test-arm64 adds the test binary and runs the
# rule pack's tests, the golden fixtures, the real corpus (where it is) and the parser, matcher
# and correlator unit tests under qemu (tests/arm64/run.sh says what it leaves out and why).
# test-deb-arm64 installs the package into an arm64 Debian 12 container run through qemu.
# The tests are configured in (BUILD_TESTING stays ON), so cpack's install must not build `all`
# (CMAKE_SKIP_INSTALL_ALL_DEPENDENCY): deb-arm64 compiles the daemon only, as `deb` does; and
# test-arm64 compiles only the test files it runs (cmake/EmulatedTests.cmake), not all of them.
ARM64_BUILD ?= build-deb-arm64
$(ARM64_BUILD)/CMakeCache.txt: | deps
	@./deploy/install-deps.sh arm64
	cmake -S . -B $(ARM64_BUILD) --toolchain cmake/aarch64-linux-gnu.cmake \
	  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=/usr -DFINGERPRINTD_HARDEN=ON \
	  -DCMAKE_SKIP_INSTALL_ALL_DEPENDENCY=ON -DCMAKE_PROJECT_fingerprintd_INCLUDE=cmake/EmulatedTests.cmake
deb-arm64: deps $(ARM64_BUILD)/CMakeCache.txt
	@./deploy/install-deps.sh arm64 deb
	cmake --build $(ARM64_BUILD) -j$(JOBS) --target fingerprintd fingerprintd_debian_changelog
	rm -f $(ARM64_BUILD)/fingerprintd_*.deb
	cd $(ARM64_BUILD) && cpack -G DEB
	lintian --display-info --fail-on error,warning $(ARM64_BUILD)/fingerprintd_$(VERSION)_arm64.deb
	@ls -l $(ARM64_BUILD)/fingerprintd_$(VERSION)_arm64.deb
test-arm64: deps $(ARM64_BUILD)/CMakeCache.txt
	@./deploy/install-deps.sh arm64
	cmake --build $(ARM64_BUILD) -j$(JOBS) --target fingerprintd fingerprintd_emulated_tests
	tests/arm64/run.sh $(ARM64_BUILD) $(CORPUS)
test-deb-arm64:
	@./deploy/install-deps.sh containers arm64
	python3 -B tests/arm64/deb_test.py $(ARM64_BUILD)/fingerprintd_$(VERSION)_arm64.deb

format-check:
	clang-format --dry-run --Werror $$(git ls-files '*.cc' '*.h')

clean:
	rm -rf $(BUILD) $(SANITIZE_BUILD) $(TSAN_BUILD) $(MEMCHECK_BUILD) $(DEB_BUILD) $(ARM64_BUILD)
