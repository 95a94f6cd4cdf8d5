#!/bin/sh
# tests/fuzz/long.sh DIR: `make fuzz-long`. Runs every libFuzzer target in
# DIR (build-fuzz/libfuzzer/fuzz-*, built by `make fuzz` from every
# tests/fuzz/fuzz-*.c) from its seed corpus, for FUZZ_RUNS executions
# (default 10^7; 0: no limit) or FUZZ_TIME seconds (default 0: no limit) each, at
# -rss_limit_mb=2048, and prints one line per target:
#
#   fuzz-npy: 10000000 execs, 812 s (12315/s), cov 523, ft 1204, corpus 230,
#             crashes 0, leaks 0, timeouts 0, ooms 0
#
# A target stops at its first failure: the line names its kind and the
# reproducer (build-fuzz/artifacts/NAME-*), and the script exits 1 at the
# end. The growing corpus lives in build-fuzz/corpus/NAME (seeds are read,
# never written); FUZZ_MERGE=1 then minimises it into
# build-fuzz/corpus-min/NAME, where new seeds worth keeping can be picked.
# FUZZ_ONLY=npy,hdf5 runs some targets; FUZZ_JOBS=N runs N at a time.
# QP_MAX_ALLOC is 256M unless set, so a declared size qprobe refuses is a
# clean error, not libFuzzer's malloc limit.
DIR=${1:-build-fuzz/libfuzzer}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 1
RUNS=${FUZZ_RUNS:-10000000}
TIME=${FUZZ_TIME:-0}
JOBS=${FUZZ_JOBS:-1}
OUT=$(dirname "$DIR")
export QP_MAX_ALLOC="${QP_MAX_ALLOC:-256M}"
mkdir -p "$OUT/corpus" "$OUT/artifacts" "$OUT/logs"
rm -f "$OUT"/logs/*.line

# one TARGET: runs it and prints its line
one() {
    bin=$1
    name=$(basename "$bin")
    seeds="tests/fuzz/seeds/${name#fuzz-}"
    corpus="$OUT/corpus/$name"
    log="$OUT/logs/$name.log"
    mkdir -p "$corpus" "$seeds"
    start=$(date +%s)
    runs=$RUNS
    [ "$runs" -gt 0 ] || runs=-1 # libFuzzer: no limit
    "$bin" "$corpus" "$seeds" -runs="$runs" -max_total_time="$TIME" \
        -rss_limit_mb=2048 -timeout=25 -print_final_stats=1 \
        -artifact_prefix="$OUT/artifacts/$name-" >"$log" 2>&1
    rc=$?
    secs=$(( $(date +%s) - start ))
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    last=$(grep -E '^#[0-9]+' "$log" | tail -n 1)
    cov=$(printf '%s' "$last" | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
    ft=$(printf '%s' "$last" | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
    corp=$(printf '%s' "$last" | sed -n 's/.* corp: \([0-9]*\).*/\1/p')
    # the target's own end decides (a forked helper, as fuzz-hdf5's worker,
    # may print libFuzzer's messages of its own and die, which is fine)
    crashes=0 leaks=0 timeouts=0 ooms=0 art=
    if [ $rc -ne 0 ]; then
        end=$(grep -E 'ERROR: (LeakSanitizer|libFuzzer|AddressSanitizer|UndefinedBehavior)' "$log" | tail -n 1)
        case "$end" in
        *LeakSanitizer*) leaks=1 ;;
        *"libFuzzer: timeout"*) timeouts=1 ;;
        *"libFuzzer: out-of-memory"*|*"libFuzzer: malloc"*) ooms=1 ;;
        *) crashes=1 ;;
        esac
        art=$(sed -n 's/.*Test unit written to \(.*\)/\1/p' "$log" | tail -n 1)
    fi
    rate=$([ "$secs" -gt 0 ] && echo $(( ${execs:-0} / secs )) || echo "${execs:-0}")
    printf '%s: %s execs, %s s (%s/s), cov %s, ft %s, corpus %s, crashes %s, leaks %s, timeouts %s, ooms %s%s\n' \
        "$name" "${execs:-?}" "$secs" "$rate" "${cov:-?}" "${ft:-?}" "${corp:-?}" \
        "$crashes" "$leaks" "$timeouts" "$ooms" "${art:+ (reproducer: $art)}"
    if [ "${FUZZ_MERGE:-0}" = 1 ]; then
        rm -rf "$OUT/corpus-min/$name"
        mkdir -p "$OUT/corpus-min/$name"
        "$bin" -merge=1 -rss_limit_mb=2048 -timeout=25 "$OUT/corpus-min/$name" \
            "$seeds" "$corpus" >/dev/null 2>&1
    fi
    [ $rc -eq 0 ]
}

status=0
running=0
for bin in "$DIR"/fuzz-*; do
    [ -x "$bin" ] || continue
    n=$(basename "$bin")
    if [ -n "${FUZZ_ONLY:-}" ]; then
        case ",$FUZZ_ONLY," in *",${n#fuzz-},"*) ;; *) continue ;; esac
    fi
    if [ "$JOBS" -le 1 ]; then
        one "$bin" || status=1
        continue
    fi
    (one "$bin") >"$OUT/logs/$n.line" &
    running=$((running + 1))
    if [ $running -ge "$JOBS" ]; then
        wait
        running=0
    fi
done
wait
if [ "$JOBS" -gt 1 ]; then
    cat "$OUT"/logs/*.line
    grep -qE 'crashes [1-9]|leaks [1-9]|timeouts [1-9]|ooms [1-9]' \
        "$OUT"/logs/*.line && status=1
fi
exit $status
