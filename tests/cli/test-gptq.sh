# '@gptq' on the real PP-OCRv4 recognizer (scripts/fetch-models.sh) with
# two generated text lines as calibration data: quantize's checkpoint and
# its report, the fake checkpoint equal to the integer one, run's fake and
# int modes, a recipe mixing GPTQ and RTN, and the refusals. The unit
# tests (test-gptq-graph.c, test-gptq-session.c) check the numbers on a
# model small enough to recompute them.
MKDEMO=$(dirname "$QPROBE")/mkdemo

gptq_setup() {
    rec=$(sh "$ROOT/scripts/fetch-models.sh" ppocr-v4 | grep '/ch_PP-OCRv4_rec_infer\.onnx$')
    [ -f "$rec" ] || fail "no PP-OCRv4 recognizer from scripts/fetch-models.sh"
    mkdir calib
    for s in 2 3; do "$MKDEMO" textline calib/l$s.npy $s; done
    "$MKDEMO" textline held.npy 11
}

# out_sqnr DUMP: SQNR of the recognizer's output in DUMP against ref.h5
out_sqnr() {
    "$QPROBE" diff ref.h5 "$1" --csv d.csv >/dev/null 2>&1
    awk -F, '$2 == "softmax_11.tmp_0" { print $5 }' d.csv
}

test_gptq_quantize_rec_checkpoint_report_and_fake() {
    gptq_setup
    "$QPROBE" quantize "$rec" --scheme w4g32@gptq --calib calib -o q.safetensors \
        --report r.csv -q
    assert_eq "$(head -n 1 r.csv)" "name,shape,scheme,bits,sqnr_db,cosine,mae,max_abs,bytes_fp32,bytes_quantized,layer,rows,cols,groups,tokens,samples,damp,retries,gptq_loss,out_err,rtn_out_err,seconds"
    # every Conv and MatMul weight of the model has a GPTQ log row
    assert_eq "$(awk -F, 'NR > 1 && $11 != ""' r.csv | wc -l)" 47
    # ... with GPTQ's output error at most RTN's, both calibration inputs,
    # at least the default dampening, a finite loss
    bad=$(awk -F, 'NR > 1 && $11 != "" && !($20 + 0 <= $21 + 0 && $16 == 2 &&
        $17 >= 0.01 && $3 == "w4g32@gptq" && $19 + 0 > 0 && $15 > 0)' r.csv)
    assert_eq "$bad" "" "rows breaking an invariant"
    # GPTQ's view of the layers: a 1x3 conv [60,960,1,3] is 60 x 2880, the
    # classifier MatMul [120,6625] has 6625 outputs of 120 inputs, a
    # depthwise conv [240,1,5,5] 240 groups of 1 x 25
    assert_eq "$(csv_field r.csv conv2d_145.w_0 rows)x$(csv_field r.csv conv2d_145.w_0 cols)" "60x2880"
    assert_eq "$(csv_field r.csv linear_85.w_0 rows)x$(csv_field r.csv linear_85.w_0 cols)" "6625x120"
    assert_eq "$(csv_field r.csv conv2d_169.w_0 groups)x$(csv_field r.csv conv2d_169.w_0 cols)" "240x25"
    # the first conv (stride 2) reads 24 x 160 positions of each line
    assert_eq "$(csv_field r.csv conv2d_10.w_0 tokens)" 7680
    # the checkpoint: integers with the RTN layout, scheme and provenance
    head -c 65536 q.safetensors | tr -d '\0' > hdr
    assert_contains hdr '"scheme:conv2d_10.w_0":"w4g32@gptq"'
    assert_contains hdr '"quantize:gptq_inputs":"quantized"'
    assert_contains hdr '"conv2d_145.w_0.scale":{"dtype":"F32","shape":[60,30,1,3]'
    # --fake writes exactly the dequantized integers
    "$QPROBE" quantize "$rec" --scheme w4g32@gptq --calib calib --fake \
        -o f.safetensors -q
    "$QPROBE" diff q.safetensors f.safetensors --csv qf.csv >/dev/null 2>&1
    assert_eq "$(awk -F, 'NR > 1 && $5 != "inf"' qf.csv | wc -l)" 0
    # act-order: the groups' order goes with the weights as NAME.g_idx
    "$QPROBE" quantize "$rec" --scheme w4g32@gptq:act --calib calib \
        --gptq-inputs fp32 -o a.safetensors -q
    head -c 65536 a.safetensors | tr -d '\0' > hdr
    assert_contains hdr '"conv2d_145.w_0.g_idx":{"dtype":"I32","shape":[960,1,3]'
    assert_contains hdr '"quantize:gptq_inputs":"fp32"'
}

test_gptq_run_rec_fake_int_and_recipe() {
    gptq_setup
    "$QPROBE" run "$rec" --input held.npy --dump ref.h5 -q >/dev/null
    for s in w4g32 w4g32@gptq; do
        "$QPROBE" run "$rec" --input held.npy --mode fake --scheme $s \
            --calib calib --dump "$s.h5" -q >/dev/null
    done
    rtn=$(out_sqnr w4g32.h5)
    gptq=$(out_sqnr w4g32@gptq.h5)
    echo "output SQNR on a held-out line: w4g32 $rtn dB, w4g32@gptq $gptq dB"
    awk -v a="$gptq" -v b="$rtn" 'BEGIN { exit !(a > b + 2) }' ||
        fail "GPTQ $gptq dB is not 2 dB above RTN's $rtn dB"
    # a recipe: GPTQ but for the classifier, rounded at 8 bits
    printf '{"qprobe_recipe": 1, "default": "w4g32@gptq", "layers": {"linear_85*": "w8c"}}' > r.json
    "$QPROBE" run "$rec" --input held.npy --mode fake --recipe r.json \
        --calib calib --dump rec.h5 -q >/dev/null
    mixed=$(out_sqnr rec.h5)
    awk -v a="$mixed" -v b="$rtn" 'BEGIN { exit !(a > b + 2) }' ||
        fail "the recipe's $mixed dB is not 2 dB above RTN's $rtn dB"
    # the int mode runs the same GPTQ integers through the int8 kernels:
    # fed the fake run's activations (--local), each of its tensors is
    # within one step of the fake run's (RTN's integers in the int run:
    # up to 71 steps off). Run end to end the two drift apart through the
    # 400 layers, as one-step differences do, too much to tell the
    # integers apart (softmax SQNR 23.6 dB on an AVX2 EPYC, and 27.5 dB
    # for RTN's int run against GPTQ's fake one).
    "$QPROBE" run "$rec" --input held.npy --mode fake --scheme w8c@gptq+a8t \
        --calib calib --dump fake.h5 -q >/dev/null 2>&1
    "$QPROBE" run "$rec" --input held.npy --mode int --scheme w8c@gptq+a8t \
        --calib calib --local fake.h5 --dump int.h5 -q >/dev/null 2>&1
    "$QPROBE" diff fake.h5 int.h5 --csv fi.csv >/dev/null 2>&1 || true
    # (a NaN anywhere is "nonfinite", and fails: awk reads "nan" as 0)
    res=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) { if ($i == "max_lsb") c = i
                                                      if ($i == "nonfinite") f = i }; next }
        $f + 0 != 0 || $c ~ /[nN]/ { bad++ }
        c && $c != "" { n++; if (!($c + 0 <= 1.0001)) bad++ } END { print n + 0, bad + 0 }' fi.csv)
    n=${res% *}
    [ "$n" -ge 390 ] || fail "only $n quantized tensors compared"
    assert_eq "${res#* }" 0 "int tensors more than a step from fake, fed its inputs"
}

test_gptq_refusals_name_the_input() {
    gptq_setup
    # no calibration data
    assert_exit 1 "$QPROBE" quantize "$rec" --scheme w4c@gptq -o z.safetensors
    assert_contains err "scheme 'w4c@gptq': GPTQ needs calibration data run through the model"
    # calibration data that does not fit the model's input
    mkdir bad
    "$MKDEMO" tensor bad/x.npy f32 1x3x8x8 "$(awk 'BEGIN { for (i = 0; i < 192; i++) printf "%s0.5", i ? "," : "" }')"
    assert_exit 1 "$QPROBE" quantize "$rec" --scheme w4c@gptq --calib bad -o z.safetensors
    assert_contains err "'bad/x.npy': tensor 'x' has shape [1,3,8,8], the model's input 'x' is [-1,3,48,-1]"
    # a NaN reaching a layer is refused naming it
    mkdir nan
    "$MKDEMO" tensor nan/x.npy f32 1x3x48x16 "$(awk 'BEGIN { for (i = 0; i < 2304; i++) printf "%s%s", i ? "," : "", i == 100 ? "nan" : "0.25" }')"
    assert_exit 1 "$QPROBE" run "$rec" --input held.npy --mode fake --scheme w4c@gptq --calib nan
    assert_contains err "calibration input 1: layer 'conv2d_10.w_0': calibration input row"
    assert_contains err "is nan"
    assert_exit 2 "$QPROBE" quantize "$rec" --scheme w4c@gptq --calib calib --gptq-inputs fp16 -o z.safetensors
    assert_contains err "--gptq-inputs: 'fp16': expected quantized"
    [ ! -e z.safetensors ] || fail "output written"
    no_tmp_left .
}
