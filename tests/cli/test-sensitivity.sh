# qprobe sensitivity on PP-OCR's text-direction classifier (fetched once,
# pinned): the CSV's one-in score of a layer equals what `qprobe run` with a
# recipe quantizing that layer alone gives through `qprobe diff`.

sens_setup() {
    models=$(sh "$ROOT/scripts/fetch-models.sh" ppocr-v4) || fail "fetch-models.sh failed"
    CLS=$(echo "$models" | grep "_cls_")
    MKDEMO=$(dirname "$QPROBE")/mkdemo
    mkdir calib
    for s in 2 3 4; do "$MKDEMO" textline calib/l$s.npy $s; done
    "$MKDEMO" textline x.npy 1
}

test_sensitivity_one_in_equals_a_recipe_run() {
    sens_setup
    "$QPROBE" sensitivity "$CLS" --calib calib --eval x.npy --scheme w4t+a8t \
        --method in --parts w,wa --csv s.csv --plot s.png -q --top 5 > out
    assert_contains out "cost:"
    assert_contains out "forward-pass equivalents"
    [ -s s.png ] && [ -s s.gp ] || fail "no bar chart"
    assert_eq "$(head -n 1 s.csv | cut -d, -f1-4)" "rank,unit,kind,params"
    # the most sensitive weighted layer, and its one-in weights-only score
    unit=$(awk -F, '$3 == "weights" { print $2; exit }' s.csv)
    want=$(csv_field s.csv "$unit" in_w_sqnr)
    [ -n "$unit" ] && [ -n "$want" ] || fail "no weighted unit in s.csv"
    printf '{"qprobe_recipe": 1, "default": "fp32", "layers": {"%s": "w4t+fp32"}}' \
        "$unit" > r.json
    "$QPROBE" run "$CLS" --input x.npy -q --dump ref.h5 > /dev/null
    "$QPROBE" run "$CLS" --input x.npy -q --mode fake --recipe r.json \
        --calib calib --dump one.h5 > /dev/null
    # the model's output is the last tensor in model order
    "$QPROBE" diff ref.h5 one.h5 -q --sort order --csv d.csv > /dev/null
    got=$(tail -n 1 d.csv | cut -d, -f5)
    assert_near "$got" "$want" 1e-4
    # ranks are the rows' order, one unit per row
    assert_eq "$(awk -F, 'NR > 1 { print $1 }' s.csv | sort -n | uniq -d | wc -l)" 0
}

test_sensitivity_usage_errors() {
    assert_exit 2 "$QPROBE" sensitivity m.onnx --scheme w8c
    assert_contains err "--calib is required"
    assert_exit 2 "$QPROBE" sensitivity m.onnx --calib c --scheme w8q
    assert_contains err "--scheme: scheme 'w8q'"
    assert_exit 2 "$QPROBE" sensitivity m.onnx --calib c --scheme w8c --parts x
    assert_contains err "parts are w, a and wa"
    assert_exit 1 "$QPROBE" sensitivity m.onnx --calib c --scheme w8c
    assert_contains err "m.onnx"
}
