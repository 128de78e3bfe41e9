# smolinfer entry points. The two a newcomer needs:
#   make serve   install what is missing, build, fetch the model, serve the demo
#   make test    install what is missing, build, run every test (scripts/run-tests)
# Others: make check (the inner loop: release build, unit and kernel tests,
# one golden file per family), make native, make web, make package (the npm
# tarball), make model, make golden (reference files),
# make fuzz (each libFuzzer target for FUZZ_SECONDS), make soak (SOAK_SECONDS
# of random requests, disconnects and bad bodies against `smolinfer serve`:
# no crash, no leak, every valid request answered; bench/serve_soak.mjs),
# make clean.

PRESET ?= release
PORT ?= 8080
FUZZ_SECONDS ?= 60
# Debian's Emscripten driving clang-19 and a current wasm-opt (scripts/wasm-env).
EMENV := scripts/wasm-env

.PHONY: deps native asan wasm web site package model test check serve golden fuzz fuzz-build clean

deps:
	@scripts/install-deps

native:
	cmake --preset $(PRESET) >/dev/null
	cmake --build --preset $(PRESET)

# The same library and tests with AddressSanitizer + UBSan; make test runs both.
asan:
	cmake --preset asan >/dev/null
	cmake --build --preset asan

wasm:
	$(EMENV) emcmake cmake --preset wasm-st >/dev/null
	$(EMENV) cmake --build --preset wasm-st
	$(EMENV) emcmake cmake --preset wasm-mt >/dev/null
	$(EMENV) cmake --build --preset wasm-mt

web: wasm
	@$(MAKE) --no-print-directory site

# The site in build/web/site from the WebAssembly builds already made.
site:
	cd web && node build.mjs

# The npm package: build/npm/smolinfer-<version>.tgz, what `npm publish`
# would ship (web/package/pack.mjs; the examples in examples/ use it).
package: web
	@node web/package/pack.mjs

# make model fetches SmolLM2-135M-Instruct; make model MODEL=gemma-3-270m another
# model (scripts/fetch-model lists them).
model:
	@scripts/fetch-model $(MODEL)

# Both print each phase's wall time and end with one summary line; run-tests
# does the installing and building itself so that their times are measured.
test:
	@PRESET=$(PRESET) scripts/run-tests

check:
	@PRESET=$(PRESET) scripts/run-tests --check

serve: deps web
	@scripts/fetch-model >/dev/null
	node web/serve.mjs --port $(PORT)

# Builds the fuzz targets (clang, ASan + UBSan) and runs each for
# FUZZ_SECONDS; crashes are kept in build/fuzz/artifacts/ (scripts/run-fuzz).
fuzz:
	@scripts/install-deps native
	@FUZZ_SECONDS=$(FUZZ_SECONDS) scripts/run-fuzz

fuzz-build:
	cmake --preset fuzz >/dev/null
	cmake --build --preset fuzz

# Speed next to llama.cpp (native) and wllama (in Chromium) and against the
# decode roofline: prints a table, writes bench/results/<host class>.md and
# its index bench/RESULTS.md (bench/run).
.PHONY: bench
bench: native package
	$(EMENV) cmake --build --preset wasm-st --target kernel-bench-simd128 kernel-bench-relaxed
	@bench/run

# The soak run of `smolinfer serve` (not in make test or make bench): SOAK_SECONDS
# (default 600) of SOAK_CLIENTS (8) clients sending a seeded random mix
# (SOAK_SEED replays one); fails on a crash, a wrong answer or status, a
# sequence left running, or RSS growth after the warm-up (bench/serve_soak.mjs);
# then 3 minutes of the openai Python client opening new connections while
# old ones idle (tests/server/soak.py): no client error.
.PHONY: soak
soak: native
	SOAK_MODEL="$${SOAK_MODEL:-$$(scripts/fetch-model | tail -n 1)}" node bench/serve_soak.mjs
	SMOLINFER_MODEL="$${SOAK_MODEL:-$$(scripts/fetch-model | tail -n 1)}" tests/server/run --soak build/native/smolinfer --minutes 3

# The other families' tokenizers, chat templates and forward passes read
# llama.cpp's source (scripts/llama-cpp-source) for vocabularies and templates.
golden: native
	scripts/make-golden Q4_1
	scripts/make-golden Q4_K_M
	scripts/make-golden gemma-3-270m
	scripts/make-vocab-golden
	SMOLINFER_LLAMA_SRC="$$(scripts/llama-cpp-source | tail -n 1)" SMOLINFER_MODEL="$$(scripts/fetch-model | tail -n 1)" \
	    node scripts/golden/chat/make-chat-golden.mjs
	SMOLINFER_LLAMA_SRC="$$(scripts/llama-cpp-source | tail -n 1)" \
	    node scripts/golden/make-family-golden.mjs --bin build/native/tests/make_random_model
	SMOLINFER_MODEL="$$(scripts/fetch-model | tail -n 1)" \
	    node scripts/golden/make-family-golden.mjs --bin build/native/tests/make_random_model --large
	SMOLINFER_LLAMA_SRC="$$(scripts/llama-cpp-source | tail -n 1)" SMOLINFER_MODEL="$$(scripts/fetch-model | tail -n 1)" \
	    SMOLINFER_MODEL_GEMMA_3_270M="$$(scripts/fetch-model gemma-3-270m | tail -n 1)" \
	    node scripts/golden/make-embedding-golden.mjs --bin build/native/tests/make_random_model
	scripts/make-json-schema-golden

clean:
	rm -rf build
