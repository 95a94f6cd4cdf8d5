#!/bin/sh
# Runs every benchmark binary in BUILD/bench (default build) and prints its
# lines. Each benchmark reports ratios against a baseline it measures in
# the same process, which keeps the numbers meaningful on a busy machine.
BUILD=${1:-build}
status=0
for b in "$BUILD"/bench/bench-*; do
    [ -x "$b" ] || continue
    echo "== $(basename "$b")"
    "$b" || { echo "FAIL $(basename "$b") (exit $?)" >&2; status=1; }
done
for s in "$(dirname "$0")"/bench-*.sh; do
    [ -f "$s" ] || continue
    echo "== $(basename "$s")"
    bash "$s" "$BUILD" || { echo "FAIL $(basename "$s")" >&2; status=1; }
done
exit $status
