#!/usr/bin/env bash
# The integration tests on Asio's io_uring backend (scripts/test-stages.sh,
# uring_stage, says what it builds and runs). Not part of `make test`: on
# Boost 1.81's io_uring backend three tests hang (the echo server with a
# client that never reads does not stop: its worker loop waits for a write
# whose cancellation by close() Asio lost; docs/BENCHMARKS.md, "Asio's
# io_uring backend", has the two Asio defects). Ends with "volley io_uring: N
# passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/test-stages.sh

passed=0
failed=0
status=0
if pkg-config --exists liburing; then
  uring_stage
else
  echo "=== io_uring backend skipped: liburing is not installed (scripts/install-deps.sh installs it)"
fi
echo
echo "volley io_uring: $passed passed, $failed failed"
exit $status
