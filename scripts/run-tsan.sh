#!/usr/bin/env bash
# The library, the tools and the integration tests under ThreadSanitizer, then
# the tests whose code shares state between threads: the thread-pool design
# (a strand per connection, the acceptor's per-worker bookkeeping), the
# handovers between loops (accept, shutdown, cross-loop posts in the chat
# room), sessions, metrics scrapes gathered from every loop, and every server
# program under the abuse matrices. The tools the tests start are the
# ThreadSanitizer builds too; one report fails the run.
# Ends with "volley tsan: N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/.."
dir=build-tsan
# -O1 -g1, as the sanitizer build of `make test`: file and line in every report,
# half the compile time of -O2 -g.
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
  -DVOLLEY_TSAN=ON >/dev/null || exit 1
cmake --build "$dir" --target volley_unit_tests volley_integration_tests || exit 1
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 exitcode=66"
# The abuse matrices too: every server program, its loops busy with bad input.
filter='ThreadPoolDesign.*:EchoThreadPool.*:Echo.Tcp*:Echo.Tls*:Echo.AThousand*:Http.*:Metrics.*:ChatExample.*:Examples.*:Session*:Sessions*:RpcOver*:ServerPrograms.*:Shutdown*:Servers/*:TlsServers/*:UdpPrograms/*'
log=$(mktemp)
"$dir/bin/volley_unit_tests" 2>&1 | tee "$log"
"$dir/bin/volley_integration_tests" --gtest_filter="$filter" 2>&1 | tee -a "$log"
passed=$(grep -c '^\[       OK \]' "$log")
failed=$(grep -c '^\[  FAILED  \] .*(' "$log")
reports=$(grep -c 'WARNING: ThreadSanitizer' "$log")
rm -f "$log"
echo "volley tsan: $passed passed, $failed failed, $reports ThreadSanitizer reports"
[[ $failed -eq 0 && $reports -eq 0 ]]
