# qprobe recipe on PP-OCR's text-direction classifier (fetched once,
# pinned): it meets on calibration data a target the uniform base misses,
# and the recipe it writes, run through `qprobe run --recipe`, gives on the
# held-out inputs the SQNR the search reported for it. (The classifier's
# two saturated probabilities make a poor held-out score; the note of
# issue 11 shows the held-out gains on the recognizer.)

recipe_setup() {
    models=$(sh "$ROOT/scripts/fetch-models.sh" ppocr-v4) || fail "fetch-models.sh failed"
    CLS=$(echo "$models" | grep "_cls_")
    MKDEMO=$(dirname "$QPROBE")/mkdemo
    mkdir calib ev
    for s in 2 3 4 7; do "$MKDEMO" textline calib/l$s.npy $s; done
    for s in 1 5 6; do "$MKDEMO" textline ev/e$s.npy $s; done
}

# The output SQNR of run $@ against the fp32 run over the inputs of ev/
# (one batch: the noise and signal powers of every input summed).
output_sqnr() {
    ins=$(for f in ev/*.npy; do printf -- '--input %s ' "$f"; done)
    "$QPROBE" run "$CLS" $ins -q --dump ref.h5 > /dev/null
    "$QPROBE" run "$CLS" $ins -q --calib calib --dump q.h5 "$@" > /dev/null
    "$QPROBE" diff ref.h5 q.h5 -q --sort order --csv d.csv > /dev/null
    tail -n 1 d.csv | cut -d, -f5
}

test_recipe_meets_the_target_and_run_reproduces_it() {
    recipe_setup
    base=$(output_sqnr --mode fake --scheme w4t+a16t)
    "$QPROBE" recipe "$CLS" --calib calib --eval ev --base w4t+a16t \
        --promote w8c+a16t,fp32 --target-sqnr 12 -o r.json --pareto p.csv \
        -q > out
    assert_eq "$(head -n 1 p.csv | cut -d, -f1-6)" \
        "step,unit,scheme,predicted_gain,measured_gain,calib_sqnr"
    # the uniform base misses the target; the recipe meets it
    calib0=$(awk -F, 'NR == 2 { print $6 }' p.csv)
    calib1=$(tail -n 1 p.csv | cut -d, -f6)
    awk -v a="$calib0" -v b="$calib1" 'BEGIN { exit !(a < 12 && b >= 12) }' ||
        fail "calibration SQNR $calib0 -> $calib1 does not cross 12 dB"
    assert_contains out "target SQNR >= 12: reached on calibration data"
    # the start row's held-out score is the uniform base run above
    start=$(awk -F, 'NR == 2 { print $8 }' p.csv)
    assert_near "$start" "$base" 1e-4
    # the recipe file, run, is the last state of the search
    last=$(tail -n 1 p.csv | cut -d, -f8)
    got=$(output_sqnr --mode fake --recipe r.json)
    assert_near "$got" "$last" 1e-4
    # it is mixed: some layers promoted, some at the base; weights under fp32
    grep -q '"w8c+a8t"\|"fp32"' r.json || fail "no promoted layer in r.json"
    bytes=$(tail -n 1 p.csv | cut -d, -f10)
    fp32=$(grep -o '"weight_bytes_fp32":[[:space:]]*[0-9]*' r.json | grep -o '[0-9]*$')
    [ -n "$fp32" ] || fail "r.json has no weight_bytes_fp32"
    [ "$bytes" -lt "$fp32" ] || fail "recipe weights $bytes >= fp32 $fp32"
}

test_recipe_usage_errors() {
    assert_exit 2 "$QPROBE" recipe m.onnx --calib c --base w8c -o r.json
    assert_contains err "--promote"
    assert_exit 2 "$QPROBE" recipe m.onnx --calib c --base w8c --promote fp32 \
        -o r.json --target-sqnr 20 --target-kl 0.1
    assert_contains err "give one of"
    assert_exit 2 "$QPROBE" recipe m.onnx --calib c --base w8c --promote w9q \
        -o r.json --target-sqnr 20
    assert_exit 1 "$QPROBE" recipe m.onnx --calib c --base w8c --promote fp32 \
        -o r.json --target-sqnr 20
    assert_contains err "m.onnx"
    [ ! -e r.json ] || fail "r.json written on failure"
}
