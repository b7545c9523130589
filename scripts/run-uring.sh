#!/usr/bin/env bash
# The integration tests on Asio's io_uring backend alone, without sanitizers
# (scripts/test-stages.sh, uring_stage, says what it builds and runs): the
# quick check of that backend. `make test` covers it too: its sanitizer stage
# runs every test on io_uring where the machine allows it. Ends with
# "volley io_uring: N passed, M failed".
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
stage_times
echo "volley io_uring: $passed passed, $failed failed"
exit $status
