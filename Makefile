# The README's two commands: `make demo` and `make test`. Both install what is
# missing (deploy/install-deps.sh), configure and build; nothing else is needed.
JOBS ?= 2
BUILD ?= build
SANITIZE_BUILD ?= build-sanitize

.PHONY: all deps build demo test test-sanitize fuzz check-real-corpus format-check clean

all: build

deps:
	@./deploy/install-deps.sh

$(BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j$(JOBS)

# The main job live: `fingerprintd run` on a temp dir while the bundled example
# logs are written into it in pieces (examples/demo_live.sh prints each
# incident as it appears and stops all it started); then a replay of the same
# logs: one TP=2 deployment hitting the target fingerprint and one sibling
# deployment, printed as text incidents.
demo: build
	@echo "== fingerprintd run: the example logs written live into a temp dir =="
	@examples/demo_live.sh $(BUILD)/fingerprintd
	@echo
	@echo "== fingerprintd replay examples/*/ (text) =="
	@$(BUILD)/fingerprintd replay --deployment-from '^examples/([^/]+)/' examples/*/ ; \
	  rc=$$?; if [ $$rc -ne 0 ]; then echo "replay exited $$rc"; exit $$rc; fi

test: build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

$(SANITIZE_BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(SANITIZE_BUILD) -DCMAKE_BUILD_TYPE=Debug -DFINGERPRINTD_SANITIZE=ON

test-sanitize: deps $(SANITIZE_BUILD)/CMakeCache.txt
	cmake --build $(SANITIZE_BUILD) -j$(JOBS)
	cd $(SANITIZE_BUILD) && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --output-on-failure -j$(JOBS)

# Replays the real reference logs kept outside the repository (by hand; CI has none).
CORPUS ?= ../shared/corpus/real
check-real-corpus: build
	tests/corpus/check_real_logs.sh $(CORPUS) $(BUILD)/fingerprintd

# Fuzzes the whole pipeline with libFuzzer under ASan+UBSan (clang), FUZZ_SECONDS long.
FUZZ_SECONDS ?= 120
FUZZ_BUILD ?= build-fuzz
fuzz: deps
	CC=clang CXX=clang++ cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=Debug \
	  -DFINGERPRINTD_SANITIZE=ON -DFINGERPRINTD_FUZZ=ON
	cmake --build $(FUZZ_BUILD) -j$(JOBS) --target fingerprintd_fuzz
	mkdir -p $(FUZZ_BUILD)/corpus
	$(FUZZ_BUILD)/fingerprintd_fuzz -max_total_time=$(FUZZ_SECONDS) -max_len=4096 \
	  $(FUZZ_BUILD)/corpus tests/golden examples

format-check:
	clang-format --dry-run --Werror $$(git ls-files '*.cc' '*.h')

clean:
	rm -rf $(BUILD) $(SANITIZE_BUILD) $(FUZZ_BUILD)
