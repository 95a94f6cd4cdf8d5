# qprobe sweep on the two models of the demo, each row checked against the
# separate command that measures the same thing:
# - the bundled tiny Llama (data/llama-tiny): perplexity, KL and same-top-p
#   against the fp32 model's logits, task scores, as `qprobe eval` prints
#   them; the fp32 perplexity is the one data/llama-tiny/PROVENANCE.md
#   gives; a configuration the library refuses is an error row with its
#   message, the other rows are made, and a rerun computes nothing;
# - PP-OCRv4's recognizer (fetched once, pinned): output SQNR and cosine,
#   and the worst tensor, as `qprobe run --dump` + `qprobe diff` give them.

# The value after "KEY" in eval's output line that starts with it.
eval_num() { awk -v k="$2" 'index($0, k) == 1 { sub(/^[^:=]*[:=] */, ""); print $1; exit }' "$1"; }

test_sweep_tiny_llama_rows_equal_eval() {
    M=$ROOT/data/llama-tiny
    mkdir tmp
    export TMPDIR=$PWD/tmp
    opts="--text $M/heldout.txt --ctx 256 --choices $M/choices.jsonl --exact-match $M/exact.jsonl"
    set +e
    "$QPROBE" sweep "$M" $opts --grid 'w4g32,w4g128,w4g128@gptq' --csv s.csv >out 2>err
    rc=$?
    set -e
    assert_eq "$(cut -d, -f2 s.csv | tr '\n' ' ')" "name fp32 w8c w4g32 w4g128 w4g128@gptq " "rows"
    # the fp32 control: llama.cpp's perplexity of heldout.txt at ctx 256
    # (PROVENANCE.md: 24 chunks, 94.4557 +/- 5.7762), KL 0 against itself,
    # the task scores of the provenance (choices 0.833, exact match 1: the
    # answers are the fp32 model's greedy continuations)
    assert_near "$(csv_field s.csv fp32 ppl)" 94.4557 0.0002
    assert_near "$(csv_field s.csv fp32 ppl_err)" 5.7762 0.0002
    assert_near "$(csv_field s.csv fp32 kl)" 0 1e-5
    # (the base file keeps log-probabilities in 16 bits, as llama.cpp's: a
    # near tie can flip)
    assert_near "$(csv_field s.csv fp32 top1)" 1 0.001
    assert_near "$(csv_field s.csv fp32 task_acc)" 0.833333 1e-6
    assert_eq "$(csv_field s.csv fp32 exact_match)" 1 "fp32 exact match"
    assert_eq "$(csv_field s.csv fp32 bits_per_weight)" 32 "fp32 bits per weight"
    # each quantized row equals qprobe eval of that scheme against the
    # fp32 logits
    "$QPROBE" eval "$M" --text "$M/heldout.txt" --ctx 256 --save-logits base.kl -q >/dev/null
    for s in w8c w4g32 w4g128; do
        "$QPROBE" eval "$M" --text "$M/heldout.txt" --ctx 256 --kl-base base.kl \
            --mode fake --scheme $s --choices "$M/choices.jsonl" \
            --exact-match "$M/exact.jsonl" --json e.json -q >e.txt
        assert_near "$(csv_field s.csv $s ppl)" "$(eval_num e.txt 'PPL =')" 0.0001
        assert_near "$(csv_field s.csv $s kl)" "$(eval_num e.txt 'Mean    KLD')" 1e-6
        assert_near "$(csv_field s.csv $s kl_err)" \
            "$(awk '/Mean    KLD/ { print $5; exit }' e.txt)" 1e-6
        top=$(awk '/Same top p/ { print $4 / 100; exit }' e.txt)
        assert_near "$(csv_field s.csv $s top1)" "$top" 1e-5
        acc=$(awk '/^choices:/ { sub(/.*acc /, ""); print $1 / 100; exit }' e.txt)
        assert_near "$(csv_field s.csv $s task_acc)" "$acc" 1e-4
        em=$(awk '/^exact-match:/ { sub(/.*match /, ""); print $1 / 100; exit }' e.txt)
        assert_near "$(csv_field s.csv $s exact_match)" "$em" 1e-4
    done
    # quantization costs quality and saves bytes, in order
    awk -F, -v OFS=' ' 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
        $2 != "w4g128@gptq" { print $2, $c["kl"], $c["weight_bytes"] }' s.csv >kl.txt
    awk 'NR > 1 && !($2 > k && $3 < b) { print "not worse and smaller:", $0; bad = 1 }
         { k = $2; b = $3 } END { exit bad }' kl.txt || fail "kl / bytes order"
    # the GPTQ row: the library's result, or its refusal as an error row
    if [ "$(csv_field s.csv w4g128@gptq status)" = ok ]; then
        assert_eq "$rc" 0 "exit status"
        awk -v p="$(csv_field s.csv w4g128@gptq ppl)" 'BEGIN { exit !(p > 90 && p < 200) }' ||
            fail "GPTQ perplexity"
    else
        assert_eq "$rc" 1 "exit status with an error row"
        assert_contains s.csv "GPTQ"
        assert_contains err "w4g128@gptq: error:"
        assert_contains err "1 configuration failed"
    fi
    assert_contains out "ppl"
    # the base logits were made in a temporary folder, removed at the end
    assert_eq "$(ls -A tmp)" "" "temporaries"
    # a rerun computes nothing
    set +e
    "$QPROBE" sweep "$M" $opts --grid 'w4g32,w4g128,w4g128@gptq' --csv s.csv -q >out 2>err
    set -e
    assert_contains out "0 computed, "
    assert_eq "$(wc -l <s.csv)" 6 "rows after the rerun (+ header)"
}

test_sweep_ppocr_rec_rows_equal_diff() {
    REC=$(sh "$ROOT/scripts/fetch-models.sh" ppocr-v4 | grep "_rec_") || fail "fetch-models.sh failed"
    MKDEMO=$(dirname "$QPROBE")/mkdemo
    mkdir calib
    for s in 2 3; do "$MKDEMO" textline calib/l$s.npy $s; done
    "$MKDEMO" textline x.npy 7
    assert_exit 0 "$QPROBE" sweep "$REC" --calib calib --eval x.npy \
        --grid 'w8c+a8t,w4g32,int:w8c+a8t' --csv s.csv
    assert_eq "$(cut -d, -f2 s.csv | tr '\n' ' ')" \
        "name fp32 w8c w8c+a8t w4g32 int:w8c+a8t " "rows"
    assert_eq "$(csv_field s.csv fp32 sqnr_db)" inf "fp32 SQNR"
    assert_eq "$(csv_field s.csv fp32 weight_bytes)" \
        "$(awk "BEGIN { print 4 * $(csv_field s.csv fp32 params) }")" "fp32 bytes"
    "$QPROBE" run "$REC" --input x.npy --dump fp.h5 -q >/dev/null
    for row in w8c+a8t int:w8c+a8t; do
        mode=fake scheme=$row
        case $row in int:*) mode=int scheme=${row#int:} ;; esac
        "$QPROBE" run "$REC" --input x.npy --mode $mode --scheme $scheme --calib calib \
            --dump q.h5 -q >/dev/null
        "$QPROBE" diff fp.h5 q.h5 --csv d.csv -q >/dev/null
        assert_near "$(csv_field s.csv $row sqnr_db)" "$(csv_field d.csv softmax_11.tmp_0 sqnr_db)" 1e-6
        assert_near "$(csv_field s.csv $row cosine)" "$(csv_field d.csv softmax_11.tmp_0 cosine)" 1e-8
        # the worst tensor is the diff's first (lowest SQNR) of the tensors
        # the sweep compares (float values)
        worst=$(csv_field s.csv $row worst_tensor)
        assert_near "$(csv_field s.csv $row worst_sqnr_db)" "$(csv_field d.csv "$worst" sqnr_db)" 1e-6
        awk -F, -v w="$(csv_field s.csv $row worst_sqnr_db)" 'NR > 1 && $5 + 0 < w - 1e-6 &&
            $2 !~ /quant|dequant/ { print "lower:", $2, $5; bad = 1 } END { exit bad }' d.csv ||
            fail "$row: a tensor below the worst"
    done
    # 4-bit groups cost more SQNR than 8-bit channels; fewer bytes
    awk -v a="$(csv_field s.csv w4g32 sqnr_db)" -v b="$(csv_field s.csv w8c+a8t sqnr_db)" \
        'BEGIN { exit !(a < b) }' || fail "w4g32 not below w8c+a8t"
    awk -v a="$(csv_field s.csv w4g32 weight_bytes)" -v b="$(csv_field s.csv w8c weight_bytes)" \
        'BEGIN { exit !(a < b) }' || fail "w4g32 not smaller than w8c"
}
