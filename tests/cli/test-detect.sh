# qprobe detect: on dumps qprobe itself made in a flavor, that flavor
# reproduces every tensor (PP-OCR's classifier, fetched once and pinned).

detect_setup() {
    models=$(sh "$ROOT/scripts/fetch-models.sh" ppocr-v4) || fail "fetch failed"
    CLS=$(echo "$models" | grep "_cls_")
    MKDEMO=$(dirname "$QPROBE")/mkdemo
    mkdir calib
    for s in 2 3; do "$MKDEMO" textline calib/l$s.npy $s; done
    "$MKDEMO" textline x.npy 1
}

test_detect_finds_each_flavor_on_its_own_dumps() {
    detect_setup
    for f in tflite-double tflite-single gemmlowp ort onnx-ref; do
        "$QPROBE" run "$CLS" --input x.npy --mode int --scheme w8c+a8t \
            --calib calib --requant $f --dump dev-$f.h5 -q > /dev/null
        "$QPROBE" detect "$CLS" --input x.npy --device dev-$f.h5 \
            --scheme w8c+a8t --calib calib -q > out-$f
        assert_contains out-$f "match: "
        # the flavor is the match or one of its equivalents on this model
        grep '^match: ' out-$f | grep -q -- "$f" || fail "$f not found: $(cat out-$f)"
        # and the others are ranked below with mismatches counted
        n=$(awk '$1 ~ /^[0-9]+$/ && $5 ~ /^[0-9]+$/ && $5 > 0' out-$f | wc -l)
        [ "$n" -ge 2 ] || fail "$f: fewer than 2 flavors with mismatches"
    done
    # a damaged device tensor: no flavor matches; the first it breaks named
    "$QPROBE" run "$CLS" --input x.npy -q --dump fp.h5 > /dev/null
    "$QPROBE" detect "$CLS" --input x.npy --device fp.h5 --scheme w8c+a8t \
        --calib calib -q > outf
    assert_contains outf "no match: every candidate differs from the device first at"
}

test_detect_usage() {
    assert_exit 2 "$QPROBE" detect m.onnx --input x.npy
    assert_contains err "--input and --device are required"
    assert_exit 2 "$QPROBE" detect m.onnx --input x.npy --device d --scheme w8c --recipe r
    assert_contains err "not both"
}
