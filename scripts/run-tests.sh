#!/usr/bin/env bash
# Every test, four ways: the Release build, the same tests under AddressSanitizer
# and UndefinedBehaviorSanitizer, the tests of code shared between threads under
# ThreadSanitizer, and the libFuzzer targets (where clang is). The integration
# tests on Asio's io_uring backend are `make test-uring` (scripts/run-uring.sh).
# Ends with one line counting every test run: "volley: N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/test-stages.sh

passed=0
failed=0
status=0

if build build -DCMAKE_BUILD_TYPE=Release; then
  run_ctest build "Release"
else
  echo "run-tests: Release build failed" >&2; status=1; failed=$((failed + 1))
fi

# -O1 -g1: what the sanitizers need (a stack with file and line for every
# report) and about half the compile time of -O2 -g, which made this build
# three quarters of the run.
if build build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
    -DVOLLEY_SANITIZE=ON; then
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    run_ctest build-asan "AddressSanitizer + UndefinedBehaviorSanitizer"
else
  echo "run-tests: sanitizer build failed" >&2; status=1; failed=$((failed + 1))
fi

tsan_stage

if command -v clang++ >/dev/null 2>&1; then
  if build build-fuzz -DVOLLEY_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++ -DVOLLEY_FUZZ_SECONDS="${VOLLEY_FUZZ_SECONDS:-20}"; then
    run_ctest build-fuzz "libFuzzer targets, ${VOLLEY_FUZZ_SECONDS:-20} s each"
  else
    echo "run-tests: fuzz build failed" >&2; status=1; failed=$((failed + 1))
  fi
else
  echo "=== libFuzzer targets skipped: clang++ is not installed"
fi

echo
echo "volley: $passed passed, $failed failed"
exit $status
