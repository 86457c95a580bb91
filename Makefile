# The README's two commands: `make demo` and `make test`. Both install what is
# missing (deploy/install-deps.sh), configure and build; nothing else is needed.
JOBS ?= 2
BUILD ?= build
SANITIZE_BUILD ?= build-sanitize

.PHONY: all deps build demo test test-sanitize format-check clean

all: build

deps:
	@./deploy/install-deps.sh

$(BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j$(JOBS)

# Replays the bundled example logs: one TP=2 deployment hitting the target
# fingerprint and one sibling deployment, printed as text incidents.
demo: build
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

format-check:
	clang-format --dry-run --Werror $$(git ls-files '*.cc' '*.h')

clean:
	rm -rf $(BUILD) $(SANITIZE_BUILD)
