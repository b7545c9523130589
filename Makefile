# Volley: the two commands a newcomer needs are `make demo` and `make test`.
.PHONY: all deps build demo test bench clean

BUILD_DIR ?= build

all: build

deps:
	@bash scripts/install-deps.sh

build: deps
	@cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build $(BUILD_DIR)

demo: build
	@bash scripts/demo.sh $(BUILD_DIR)/bin

test: deps
	@bash scripts/run-tests.sh

bench: build
	@bash bench/run-bench.sh $(BUILD_DIR)/bin

clean:
	rm -rf build build-asan build-fuzz
