# qprobe ladder: hand-made rungs whose errors are known, and a real model
# whose device rung is the host's own int run.

MKDEMO=$(dirname "$QPROBE")/mkdemo
mkt() { "$MKDEMO" tensor "$@"; }

# four tensors a..d in model order; fake adds small noise everywhere, int
# equals fake but for c and d (a kernel bug from c on), device equals int
make_rungs() {
    mkdir fp32 fake int dev
    for t in a b c d; do mkt "fp32/$t.npy" f32 4 1,2,3,4; done
    for t in a b c d; do mkt "fake/$t.npy" f32 4 1,2,3,4.01; done
    for t in a b; do mkt "int/$t.npy" f32 4 1,2,3,4.01; done
    mkt int/c.npy f32 4 1,2,3,5
    mkt int/d.npy f32 4 1,2,3,5
    cp int/*.npy dev/
}

test_ladder_names_the_step_and_layer() {
    make_rungs
    "$QPROBE" ladder fp32 fake int dev --labels fp32,fake,int,device \
        --csv l.csv --plot l.png > out
    # fake vs fp32: error float(4.01) - 4 = 0.0100002289 on sum ref^2 = 30
    assert_near "$(csv_field l.csv a fake_vs_first_db)" 54.7710137 1e-6
    # int vs fake from c on: error 5 - float(4.01) on 30.0801836 (ref = fake)
    assert_eq "$(csv_field l.csv b int_vs_prev_db)" inf
    assert_near "$(csv_field l.csv c int_vs_prev_db)" 14.8700911 1e-6
    assert_eq "$(csv_field l.csv d device_vs_prev_db)" inf
    assert_contains out "int          kernel error  vs fake: output 14.9 dB"
    assert_contains out "appears at 'c'"
    assert_contains out "device       device error  vs int: output inf dB, median inf dB, 4 of 4 exact"
    assert_contains out "finding: the output loses most at 'int' (kernel error"
    [ -s l.png ] || fail "no plot"
    # the jump threshold: fake's small error never jumps
    case "$(grep '^  fake ' out)" in *jumps*) fail "fake jumped" ;; esac
}

test_ladder_on_a_model_with_its_own_int_run_as_device() {
    models=$(sh "$ROOT/scripts/fetch-models.sh" ppocr-v4) || fail "fetch failed"
    CLS=$(echo "$models" | grep "_cls_")
    mkdir calib
    for s in 2 3; do "$MKDEMO" textline calib/l$s.npy $s; done
    "$MKDEMO" textline x.npy 1
    "$QPROBE" run "$CLS" --input x.npy --mode int --scheme w8c+a8t --calib calib \
        --requant tflite --dump dev.h5 -q > /dev/null
    "$QPROBE" ladder "$CLS" --input x.npy --device dev.h5 --scheme w8c+a8t \
        --calib calib --requant tflite --dumps rungs --csv l.csv > out
    n=$(awk -F, 'NR > 1' l.csv | wc -l)
    assert_contains out "device       device error  vs int: output inf dB, median inf dB, $n of $n exact"
    assert_contains out "local ladder (every layer fed fp32): fp32 -> fake-local -> int-local"
    [ -s rungs/fp32.h5 ] && [ -s rungs/int-local.h5 ] || fail "rungs not kept"
    [ -s l-local.csv ] || fail "no local CSV"
    # teacher-forced, the int kernels stay within 1 LSB of fake quantization
    # on every integer tensor
    bad=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "int-local_prev_max_lsb") c = i; next }
                   $c != "" && $c > 1.0001 { n++ } END { print n + 0 }' l-local.csv)
    assert_eq "$bad" 0
}

test_ladder_usage_errors() {
    assert_exit 2 "$QPROBE" ladder a
    assert_contains err "two or more DUMPs"
    assert_exit 2 "$QPROBE" ladder a b --labels x
    assert_contains err "1 labels for 2 dumps"
    assert_exit 2 "$QPROBE" ladder m.onnx --device d.h5
    assert_contains err "--input is required"
    assert_exit 1 "$QPROBE" ladder nope1 nope2
    assert_contains err "nope1"
}
