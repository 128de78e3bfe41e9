# smolinfer entry points. The two a newcomer needs:
#   make serve   install what is missing, build, fetch the model, serve the demo
#   make test    install what is missing, build, run every test
# Others: make native, make web, make model, make golden (reference files), make clean.

PRESET ?= release
PORT ?= 8080
# Debian's Emscripten finds its JavaScript dependencies through NODE_PATH.
EMENV := NODE_PATH=/usr/share/nodejs

.PHONY: deps native wasm web model test serve golden clean

deps:
	@scripts/install-deps

native:
	cmake --preset $(PRESET) >/dev/null
	cmake --build --preset $(PRESET)

wasm:
	$(EMENV) emcmake cmake --preset wasm-st >/dev/null
	$(EMENV) cmake --build --preset wasm-st
	$(EMENV) emcmake cmake --preset wasm-mt >/dev/null
	$(EMENV) cmake --build --preset wasm-mt

web: wasm
	cd web && node build.mjs

model:
	@scripts/fetch-model

test: deps native web
	@PRESET=$(PRESET) scripts/run-tests

serve: deps web
	@scripts/fetch-model >/dev/null
	node web/serve.mjs --port $(PORT)

golden: native
	scripts/make-golden Q4_1
	scripts/make-golden Q4_K_M

clean:
	rm -rf build
