# Sourced by run-tests.sh (`make test`) and run-tsan.sh (`make tsan`): building
# a tree, running ctest in it, and adding its counts to the totals `passed`,
# `failed` and `status` of the caller.

# Each build and test run's wall time, "seconds<TAB>what", printed by stage_times.
stage_seconds=()

# stage_times: the table of where the time went, longest first, and the total.
stage_times() {
  local total=0 line
  echo "=== time per stage (wall seconds)"
  for line in "${stage_seconds[@]}"; do total=$((total + ${line%%$'\t'*})); done
  printf '%s\n' "${stage_seconds[@]}" | sort -t$'\t' -k1,1nr | while IFS=$'\t' read -r s what; do
    printf '  %6d s  %s\n' "$s" "$what"
  done
  printf '  %6d s  in all (%d min)\n' "$total" $(((total + 59) / 60))
}

# build DIR CMAKE-ARGS... [-- TARGETS...]: configures and builds DIR (every
# target, or only those after "--").
build() {
  local dir=$1; shift
  local args=() targets=() start=$SECONDS rc
  while [[ $# -gt 0 && $1 != "--" ]]; do args+=("$1"); shift; done
  [[ $# -gt 0 ]] && shift && targets=("$@")
  cmake -S . -B "$dir" -G Ninja "${args[@]}" >/dev/null || return 1
  if [[ ${#targets[@]} -gt 0 ]]; then
    cmake --build "$dir" --target "${targets[@]}"
  else
    cmake --build "$dir"
  fi
  rc=$?
  stage_seconds+=("$((SECONDS - start))"$'\t'"build $dir${targets:+ (${targets[*]})}")
  return $rc
}

# run_ctest DIR LABEL [CTEST-ARGS...]: runs the tests of DIR (those CTEST-ARGS
# select) and adds its counts to the totals.
run_ctest() {
  local dir=$1 label=$2 log start=$SECONDS; shift 2
  log=$(mktemp)
  echo "=== $label ($dir)"
  (cd "$dir" && ctest --output-on-failure --timeout 600 -j "$(nproc)" "$@") 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  stage_seconds+=("$((SECONDS - start))"$'\t'"test: $label")
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

# The sanitizer builds compile as unity builds (CMAKE_UNITY_BUILD: the sources
# of a target compiled a batch at a time, so Asio's, Beast's and fmt's
# templates are instantiated once per batch instead of once per file), which
# nearly halves their compile time (the ASan build from scratch on 2 cores,
# 2026-11-27: 2,296 CPU seconds one object per file, 1,268 as a unity build;
# 645 s of wall time). The Release build stays one
# object per file, as a user builds it, so a file that leans on an include of
# its neighbour in a batch still fails there.
unity=(-DCMAKE_UNITY_BUILD=ON)

# The AddressSanitizer + UndefinedBehaviorSanitizer stage: every test, in
# build-asan/ at -O1 -g1 (what the sanitizers need: a stack with file and line
# for every report, at about half the compile time of -O2 -g). It runs on
# Asio's io_uring backend (VOLLEY_IO_URING) where liburing is installed and the
# kernel lets the process use io_uring, so that the whole suite runs once per
# backend (the Release stage runs it on epoll) without a fifth build, which
# would take `make test` past its time; the io_uring build's memory is checked
# on the way. Elsewhere it runs on epoll, and says why.
asan_stage() {
  local dir=build-asan backend=io_uring why=""
  local args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DVOLLEY_SANITIZE=ON "${unity[@]}")
  if ! pkg-config --exists liburing; then
    why="liburing is not installed (scripts/install-deps.sh installs it)"
  elif ! build "$dir" "${args[@]}" -DVOLLEY_IO_URING=ON -- io_uring_probe; then
    why="the io_uring probe did not build"
  elif ! why=$("$dir/bin/io_uring_probe" 2>&1); then
    :  # why: the probe's reason
  else
    why=""
  fi
  [[ -n $why ]] && backend=epoll
  if ! build "$dir" "${args[@]}" -DVOLLEY_IO_URING=$([[ $backend == io_uring ]] && echo ON || echo OFF); then
    echo "run-tests: sanitizer build failed" >&2; status=1; failed=$((failed + 1))
    return
  fi
  [[ -n $why ]] && echo "=== io_uring backend not tested: $why; the sanitizer stage runs on epoll"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    run_ctest "$dir" "AddressSanitizer + UndefinedBehaviorSanitizer, $backend backend"
}

# The ThreadSanitizer stage: the library, the tools and the tests with
# -fsanitize=thread in build-tsan/ (-O1 -g1, as the other sanitizer build: file
# and line in every report, half the compile time of -O2 -g), then the
# integration tests of code that shares state between threads:
# the thread-pool design (a strand per connection, the acceptor's per-worker
# bookkeeping), the handovers between loops (accept, shutdown, cross-loop posts
# in the chat room), sessions, metrics scrapes gathered from every loop, and
# every server program under the abuse matrices. The programs the tests start
# are ThreadSanitizer builds too and exit with 66 on a report, which fails the
# test that checks their exit; a report in the test process fails its test the
# same way. No suppressions. The unit tests are not run here: they start no
# thread (the pure cores they test have none), so ThreadSanitizer has nothing
# to check in them, and they took two of this stage's six minutes.
tsan_stage() {
  local dir=build-tsan
  if ! build "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
      -DVOLLEY_TSAN=ON "${unity[@]}" -- volley_integration_tests; then
    echo "run-tests: ThreadSanitizer build failed" >&2; status=1; failed=$((failed + 1))
    return
  fi
  local threaded='^(ThreadPoolDesign\.|BusyPoll\.|EdgeReadWait\.|EchoThreadPool\.|Echo\.Tcp|Echo\.Tls|Echo\.AThousand|Http\.|Metrics\.'
  threaded+='|ChatExample\.|Examples\.|Session|RpcOver|ServerPrograms\.|Shutdown|Servers/|TlsServers/|TlsResumption\.|UdpPrograms/|Shm\.|PeerKilled\.|UnixSocket\.'
  threaded+='|Schemes/ArqOverRelay\..*thread_pool)'
  export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 exitcode=66"
  run_ctest "$dir" "ThreadSanitizer: integration tests of code shared between threads" -L integration -R "$threaded"
  unset TSAN_OPTIONS
}

# The integration tests once more on Asio's io_uring backend (VOLLEY_IO_URING:
# every socket, timer and wait through io_uring instead of epoll), in
# build-uring/ at -O1 without debug information (the compile time is most of
# this stage). Skipped, with the reason, where the kernel or a container does
# not let the process use io_uring. The unit tests are left out (the pure
# cores do no I/O, and the Release stage runs them), and so is the minute-long
# soak, which measures the server's memory, not its I/O: it would be a sixth
# of this stage.
uring_stage() {
  local dir=build-uring
  if ! build "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -DNDEBUG" \
      -DVOLLEY_IO_URING=ON -DVOLLEY_BUILD_BENCHMARKS=OFF -- io_uring_probe volley_integration_tests; then
    echo "run-tests: io_uring build failed" >&2; status=1; failed=$((failed + 1))
    return
  fi
  local why
  if ! why=$("$dir/bin/io_uring_probe" 2>&1); then
    echo "=== io_uring backend: integration tests skipped ($why)"
    return
  fi
  run_ctest "$dir" "io_uring backend: integration tests" -L integration -E '^Soak\.'
}
