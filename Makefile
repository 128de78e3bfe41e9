# smolinfer entry points. The two a newcomer needs:
#   make serve   build, fetch the model, serve the demo
#   make test    build and run every test
# Others: make native, make model, make golden (regenerate reference files), make clean.

PRESET ?= release
BUILD_DIR := build/native

.PHONY: native model test serve golden clean

native:
	cmake --preset $(PRESET) >/dev/null
	cmake --build --preset $(PRESET)

model:
	@scripts/fetch-model

test: native
	@model="$$(scripts/fetch-model | tail -n 1)" && \
	SMOLINFER_MODEL="$$model" ctest --preset $(PRESET) --timeout 900

serve: native
	@model="$$(scripts/fetch-model | tail -n 1)" && \
	echo "smolinfer is built ($(BUILD_DIR)/smolinfer) and the model is at $$model." && \
	echo "The browser demo comes with the web build; for now, try:" && \
	echo "  $(BUILD_DIR)/smolinfer run -m $$model --chat -p \"What is the capital of France?\""

golden:
	scripts/make-golden

clean:
	rm -rf build
