# The demo (scripts/demo.sh), run once in its quick form (no recognizer
# searches): the tiny Llama's sweep and recipe, the recognizer's runs and
# ladder, the damaged layer of the generated dumps, and the page.

MKDEMO=$(dirname "$QPROBE")/mkdemo

run_demo() {
    QP_MKDEMO=$MKDEMO QP_DEMO_DATA=$PWD/data QP_DEMO_TABLES=$PWD/rep \
        QP_DEMO_OUT=$PWD/page QP_DEMO_QUICK=1 \
        sh "$ROOT/scripts/demo.sh" "$(dirname "$QPROBE")" >demo.out 2>demo.err ||
        { tail -n 20 demo.out demo.err >&2; fail "the demo failed"; }
}

test_demo_runs_the_whole_workflow() {
    run_demo
    check_dumps_part
    check_recognizer_part
    check_llama_part
    check_page
}

check_dumps_part() {
    for f in diff.csv align.csv inspect-ref.csv inspect-device.csv sqnr.png sqnr.gp sqnr.dat; do
        [ -s "rep/$f" ] || fail "rep/$f missing"
    done
    # block2.conv1 saturates on the device: ranked first, far below the rest
    assert_eq "$(csv_field rep/diff.csv 1 name)" block2.conv1
    assert_eq "$(csv_field rep/diff.csv 1 test_name)" b2_c1
    sq=$(csv_field rep/diff.csv 1 sqnr_db)
    awk -v s="$sq" 'BEGIN { exit !(s < 10) }' || fail "damaged layer at $sq dB"
    next=$(csv_field rep/diff.csv 2 sqnr_db)
    awk -v s="$next" 'BEGIN { exit !(s > 30) }' || fail "healthy layer at $next dB"
    assert_eq "$(grep -c '^' rep/diff.csv)" 10   # header + 9 pairs
    assert_contains demo.err "threshold crossed: sqnr_db<20: 'block2.conv1'"
    # the alignment needed every stage and the layout conversion
    assert_eq "$(csv_field rep/align.csv stem.relu how)" normalised
    assert_eq "$(csv_field rep/align.csv block2.conv1 detail)" "rule 0; layout NHWC->NCHW"
    assert_eq "$(csv_field rep/align.csv pool how)" map-pair
    assert_eq "$(csv_field rep/align.csv debug.block1_in how)" ref-only
    # logits: a healthy int8 output keeps every argmax
    assert_eq "$(csv_field rep/diff.csv logits top1)" 1
    # inspect shows the device's quantization
    assert_eq "$(csv_field rep/inspect-device.csv b1_c2 q_granularity)" "per-axis 3"
    assert_eq "$(csv_field rep/inspect-device.csv Stem_Relu_output_0 q_zero_point_min)" -128
    assert_eq "$(csv_field rep/inspect-ref.csv logits shape)" 4x10
}

test_demo_data_is_deterministic() {
    "$MKDEMO" demo a
    "$MKDEMO" demo b
    cmp -s a/ref.h5 b/ref.h5 || "$QPROBE" diff a/ref.h5 b/ref.h5 --fail-if 'sqnr_db<inf' -q >/dev/null ||
        fail "two runs of mkdemo differ (ref.h5)"
    diff -r a/device b/device >/dev/null || fail "two runs of mkdemo differ (device)"
    # and regenerating over an existing folder replaces it
    "$MKDEMO" demo a
    diff -r a/device b/device >/dev/null || fail "regenerated data differs"
}

check_recognizer_part() {
    for f in rec-weights.csv rec-quantize-w8c.csv rec-fp32-vs-int.csv \
             rec-fake-vs-int.csv rec-sqnr.png; do
        [ -s "rep/$f" ] || { cat demo.out >&2; fail "rep/$f missing"; }
    done
    # the recognizer's heaviest-tailed weight is found by inspect
    top=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
                   $c["kurtosis"] != "nan" && $c["kurtosis"] + 0 > m + 0 { m = $c["kurtosis"] + 0; n = $c["name"] }
                   END { print n, (m > 1000) }' rep/rec-weights.csv)
    assert_eq "$top" "conv2d_184.w_0 1"
    # every weight is w8c: one byte per weight plus one f32 scale per output
    # channel (symmetric: no zero points), conv OIHW and MatMul [in, out] as
    # the graph says; 1-D tensors stay fp32
    awk -F, 'NR == 1 { next }
             { n = split($2, d, "x"); numel = 1; for (i = 1; i <= n; i++) numel *= d[i] }
             n == 4 && !($3 == "w8c" && $4 == 8 && $10 == numel + 4 * d[1] && $9 == 4 * numel) { bad = $1 }
             n == 2 && !($3 == "w8c" && $10 == numel + 4 * d[2]) { bad = $1 }
             n == 1 && !($3 == "fp32" && $10 == $9) { bad = $1 }
             n == 4 { conv++ } n == 2 { lin++ }
             END { if (bad || conv != 38 || lin != 9) {
                       print "bad row " bad ", " conv " conv and " lin " matmul weights"; exit 1 } }' \
        rep/rec-quantize-w8c.csv
    # int8 vs fp32: every captured tensor compared, with finite SQNR and no NaN
    rows=$(($(grep -c '^' rep/rec-fp32-vs-int.csv) - 1))
    [ "$rows" -ge 400 ] || fail "only $rows tensors compared"
    awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
             $c["sqnr_db"] == "nan" || $c["sqnr_db"] == "-inf" || $c["nonfinite"] != 0 { bad = $c["name"] }
             END { if (bad) { print "non-finite: " bad; exit 1 } }' rep/rec-fp32-vs-int.csv
    assert_contains demo.out "qprobe diff: fake-quant against int8"
    # the ladder names the rungs' kinds of error; the sweep has its rows
    assert_contains demo.out "scheme error"
    assert_contains demo.out "kernel error"
    assert_eq "$(csv_field rep/rec-sweep.csv fp32 sqnr_db)" inf
    w8=$(csv_field rep/rec-sweep.csv w8c+a8t sqnr_db)
    w16=$(csv_field rep/rec-sweep.csv w8c+a16t sqnr_db)
    awk -v a="$w8" -v b="$w16" 'BEGIN { exit !(a > 10 && b > a + 3) }' ||
        fail "a16t ($w16 dB) does not recover w8c+a8t ($w8 dB)"
}

check_llama_part() {
    # fp32 perplexity at ctx 256 on heldout.txt, as data/llama-tiny/PROVENANCE.md
    assert_near "$(csv_field rep/llama-sweep.csv fp32 ppl)" 94.4557 0.001
    f=$(csv_field rep/llama-sweep.csv fp32 ppl)
    w4=$(csv_field rep/llama-sweep.csv w4g32 ppl)
    kw=$(csv_field rep/llama-sweep.csv w4g32 kl)
    r=$(awk -F, 'NR > 1 && /llama-recipe.json/ { print NR; exit }' rep/llama-sweep.csv)
    [ -n "$r" ] || fail "the recipe is not a sweep row"
    kr=$(csv_field rep/llama-sweep.csv "$(sed -n "${r}p" rep/llama-sweep.csv | cut -d, -f1)" kl)
    awk -v f="$f" -v w="$w4" -v kw="$kw" -v kr="$kr" \
        'BEGIN { exit !(w > f && kw > 0.01 && kr < kw && kr > 0) }' ||
        fail "fp32 $f, w4g32 $w4 (KL $kw), recipe KL $kr"
    # the recipe keeps w4g32 as its default and says what it reached
    grep -q '"default":[[:space:]]*"w4g32"' rep/llama-recipe.json ||
        fail "the recipe's default is not w4g32"
    assert_contains rep/llama-recipe.json '"derived"'
    [ -s rep/llama-sensitivity.csv ] && [ -s rep/llama-depth.png ] ||
        fail "llama sensitivity or depth plot missing"
}

check_page() {
    [ -s page/index.html ] || fail "no page"
    for kind in sweep diff recipe sensitivity ladder; do
        assert_contains page/index.html "$kind"
    done
    # every image of the page is there
    for img in $(grep -o '<img src="[^"]*"' page/index.html | sed 's/.*src="//; s/"$//'); do
        [ -s "page/$img" ] || fail "page/$img missing"
    done
}

test_textline_inputs_are_deterministic_and_normalised() {
    "$MKDEMO" textline a.npy 7
    "$MKDEMO" textline b.npy 7
    "$MKDEMO" textline c.npy 8
    cmp -s a.npy b.npy || fail "same seed, different bytes"
    cmp -s a.npy c.npy && fail "different seeds, same bytes"
    "$QPROBE" inspect a.npy --csv s.csv --quiet >/dev/null
    assert_eq "$(csv_field s.csv a shape)" 1x3x48x320
    awk -F, 'NR == 2 && !($5 >= -1 && $6 <= 1 && $5 < -0.5 && $6 > 0.5) { exit 1 }' s.csv ||
        fail "values outside [-1, 1] or no contrast: $(cat s.csv)"
}
