#!/usr/bin/env bash
# Every test, three ways: the Release build, the same tests under AddressSanitizer
# and UndefinedBehaviorSanitizer, and the libFuzzer targets (where clang is).
# Ends with one line counting every test run: "volley: N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/.."

passed=0
failed=0
status=0

# Runs ctest in a build folder and adds its counts to the totals.
run_ctest() {
  local dir=$1 label=$2 log
  log=$(mktemp)
  echo "=== $label ($dir)"
  (cd "$dir" && ctest --output-on-failure --timeout 600 -j "$(nproc)") 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  local summary
  summary=$(grep -E "tests passed, [0-9]+ tests failed out of [0-9]+" "$log" | tail -1)
  if [[ -n "$summary" ]]; then
    local total fail
    fail=$(sed -E 's/.*passed, ([0-9]+) tests failed out of ([0-9]+).*/\1/' <<<"$summary")
    total=$(sed -E 's/.*failed out of ([0-9]+).*/\1/' <<<"$summary")
    passed=$((passed + total - fail))
    failed=$((failed + fail))
  else
    echo "run-tests: no ctest summary from $label" >&2
    failed=$((failed + 1))
  fi
  [[ $rc -eq 0 ]] || status=1
  rm -f "$log"
}

build() {
  local dir=$1; shift
  cmake -S . -B "$dir" -G Ninja "$@" >/dev/null && cmake --build "$dir"
}

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

if command -v clang++ >/dev/null 2>&1; then
  if build build-fuzz -DVOLLEY_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++ -DVOLLEY_FUZZ_SECONDS="${VOLLEY_FUZZ_SECONDS:-30}"; then
    run_ctest build-fuzz "libFuzzer targets, ${VOLLEY_FUZZ_SECONDS:-30} s each"
  else
    echo "run-tests: fuzz build failed" >&2; status=1; failed=$((failed + 1))
  fi
else
  echo "=== libFuzzer targets skipped: clang++ is not installed"
fi

echo
echo "volley: $passed passed, $failed failed"
exit $status
