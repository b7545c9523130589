#!/usr/bin/env bash
# `make test`'s ThreadSanitizer stage alone (scripts/test-stages.sh says what
# it builds and runs). Ends with "volley tsan: N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/test-stages.sh

passed=0
failed=0
status=0
tsan_stage
echo
stage_times
echo "volley tsan: $passed passed, $failed failed"
exit $status
