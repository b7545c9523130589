#!/usr/bin/env bash
# The integration tests on Asio's io_uring backend (scripts/test-stages.sh,
# uring_stage, says what it builds and runs). Not part of `make test`: Boost
# 1.81's io_uring backend can lose an operation that close() cancels, after
# which a loop never stops. Connections, UDP endpoints and acceptors avoid
# that cancel (the three never-reading-client tests hung before they did);
# connectors, the SCTP channel and the TUN relay do not (docs/BENCHMARKS.md,
# "Asio's io_uring backend"), and the build would take CI past its time. Ends
# with "volley io_uring: N passed, M failed".
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
