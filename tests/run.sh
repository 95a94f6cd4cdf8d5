#!/bin/sh
# Runs the whole suite against the build in $1 (default build): unit tests,
# the fuzz targets over their seeds, then the CLI tests. Ends with the line
# "N passed, N failed" that CI reads; exits 1 if anything failed.
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
passed=0
failed=0
# Sanitizers (make asan): a leak or an error exits 86, and ASan's reports
# also go to files, so a report from a command a test expects to fail
# (exit 1) or whose status it ignores still fails the suite.
SANLOG="$ROOT/$BUILD/sanitizer-reports"
rm -rf "$SANLOG" && mkdir -p "$SANLOG"
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=1:exitcode=86:log_path=$SANLOG/asan"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}halt_on_error=1:print_stacktrace=1:exitcode=86:log_path=$SANLOG/ubsan"

add() { # "unit: 3 passed, 1 failed" -> totals
    p=$(printf '%s\n' "$1" | sed -n 's/.* \([0-9][0-9]*\) passed, \([0-9][0-9]*\) failed.*/\1/p' | tail -n 1)
    f=$(printf '%s\n' "$1" | sed -n 's/.* \([0-9][0-9]*\) passed, \([0-9][0-9]*\) failed.*/\2/p' | tail -n 1)
    if [ -z "$p" ]; then failed=$((failed + 1)); return; fi
    passed=$((passed + p))
    failed=$((failed + f))
}

out=$("$BUILD/qprobe-test")
rc=$?
printf '%s\n' "$out"
add "$out"
[ $rc -ne 0 ] && [ -z "$(printf '%s' "$out" | grep ' failed')" ] && failed=$((failed + 1))

fp=0; ff=0
for f in "$BUILD"/fuzz/fuzz-*; do
    [ -x "$f" ] || continue
    name=$(basename "$f")
    if "$f" -runs=${QP_FUZZ_RUNS:-3000} "tests/fuzz/seeds/${name#fuzz-}" >/dev/null 2>"$BUILD/$name.log"; then
        fp=$((fp + 1))
    else
        ff=$((ff + 1)); echo "FAIL $name (see $BUILD/$name.log)" >&2; tail -n 20 "$BUILD/$name.log" >&2
    fi
done
echo "fuzz: $fp passed, $ff failed"
passed=$((passed + fp)); failed=$((failed + ff))

if [ -x "$BUILD/qp-mutate" ]; then
    out=$("$BUILD/qp-mutate" "$ROOT/$BUILD/qprobe" "$ROOT")
    printf '%s\n' "$out"
    add "$(printf '%s\n' "$out" | tail -n 1)"
fi

out=$(bash tests/cli/run.sh "$ROOT/$BUILD/qprobe")
printf '%s\n' "$out" | tail -n 1
add "$(printf '%s\n' "$out" | tail -n 1)"

# (a file of warnings alone, "thread was not suspended", is no report)
reports=$(grep -l -E 'ERROR: |runtime error' "$SANLOG"/* 2>/dev/null | wc -l)
if [ "$reports" -gt 0 ]; then
    echo "sanitizers: $reports reports (leaks or errors), in $SANLOG:" >&2
    for f in $(grep -l -E 'ERROR: |runtime error' "$SANLOG"/*); do
        grep -v 'was not suspended' "$f" | head -n 20 >&2
    done
    failed=$((failed + reports))
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
