# Volley: the two commands a newcomer needs are `make demo` and `make test`.
.PHONY: all deps build demo test tsan test-uring bench fuzz install install-wireshark-plugin package docs clean

BUILD_DIR ?= build
PREFIX ?= /usr/local

all: build

deps:
	@bash scripts/install-deps.sh

build: deps
	@cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build $(BUILD_DIR)

# Builds only the two programs the demo runs (not the tests, benchmarks and
# examples `make build` adds), then runs them.
demo: deps
	@cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build $(BUILD_DIR) --target volley traffic_generator
	@bash scripts/demo.sh $(BUILD_DIR)/bin

test: deps
	@bash scripts/run-tests.sh

# `make test`'s ThreadSanitizer stage alone: the library, tools and tests in
# build-tsan, then the tests of the code that shares state between threads
# (the thread pool, the loops' handovers, sessions, metrics scrapes, the server
# programs under the abuse matrices).
tsan: deps
	@bash scripts/run-tsan.sh

# The integration tests on Asio's io_uring backend alone (build-uring/, where
# the kernel allows io_uring), without sanitizers: quicker than `make test`,
# whose sanitizer stage runs every test on that backend.
test-uring: deps
	@bash scripts/run-uring.sh

bench: build
	@bash bench/run-bench.sh $(BUILD_DIR)/bin

# The libraries, public headers, CMake package and programs under $(PREFIX).
install: build
	@cmake --install $(BUILD_DIR) --prefix $(PREFIX)

# The Wireshark dissectors of Volley's protocols, for the user running make.
WIRESHARK_PLUGINS ?= $(HOME)/.local/lib/wireshark/plugins
install-wireshark-plugin:
	@mkdir -p $(WIRESHARK_PLUGINS)
	@cp tools/wireshark/volley.lua $(WIRESHARK_PLUGINS)/volley.lua
	@echo "installed $(WIRESHARK_PLUGINS)/volley.lua (Wireshark: Help > About > Plugins lists it)"

# A Debian package of the same tree (build/volley_<version>_<arch>.deb).
package: build
	@cd $(BUILD_DIR) && cpack -G DEB
	@ls $(BUILD_DIR)/volley_*.deb

# The API reference of the public headers (build/docs/html/index.html); fails on any Doxygen warning.
docs:
	@command -v doxygen >/dev/null || bash scripts/install-deps.sh
	@mkdir -p $(BUILD_DIR)/docs
	@VOLLEY_DOCS_OUT=$(BUILD_DIR)/docs doxygen docs/Doxyfile
	@echo "API reference: $(BUILD_DIR)/docs/html/index.html"

# A fuzz campaign: every libFuzzer target for FUZZ_SECONDS (default 60) from its
# corpus, a table of executions and findings (docs/RELIABILITY.md records one).
fuzz: deps
	@bash scripts/fuzz-campaign.sh $(or $(FUZZ_SECONDS),60)

clean:
	rm -rf build build-asan build-tsan build-fuzz
