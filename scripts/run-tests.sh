#!/usr/bin/env bash
# Every test, four ways: the Release build, the same tests under AddressSanitizer
# and UndefinedBehaviorSanitizer, the tests of code shared between threads under
# ThreadSanitizer, and the libFuzzer targets (where clang is). The Release stage
# runs on Asio's epoll backend and the sanitizer stage on its io_uring backend
# where the machine allows io_uring (it says so where it does not): every test
# runs once per backend. Ends with the time each build and test run took and
# one line counting every test run: "volley: N passed, M failed".
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

asan_stage
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
stage_times
echo "volley: $passed passed, $failed failed"
exit $status
