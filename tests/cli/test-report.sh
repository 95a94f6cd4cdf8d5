# qprobe report on the tables qprobe writes for PP-OCR's text-direction
# classifier (fetched once, pinned): a sweep, a diff, a sensitivity
# ranking, a ladder and a recipe search's Pareto steps become one page whose
# plots come as PNG and SVG with their .gp and .dat; headless Chromium
# loads it with no console message, every image loads, and a table sorts.
# The page is checked by tests/cli/report-check.html, loaded beside it with
# --allow-file-access-from-files and read back with --dump-dom: no driver
# (puppeteer, Python) is needed.

report_setup() {
    models=$(sh "$ROOT/scripts/fetch-models.sh" ppocr-v4) || fail "fetch-models.sh failed"
    CLS=$(echo "$models" | grep "_cls_")
    MKDEMO=$(dirname "$QPROBE")/mkdemo
    mkdir calib
    for s in 2 3; do "$MKDEMO" textline calib/l$s.npy $s; done
    "$MKDEMO" textline x.npy 1
    q=-q
    "$QPROBE" sweep "$CLS" --calib calib --eval x.npy --grid 'w{4,8}c+a8t,int:w8c+a8t' \
        --csv sweep.csv $q >/dev/null
    "$QPROBE" run "$CLS" --input x.npy --dump fp.h5 $q >/dev/null
    "$QPROBE" run "$CLS" --input x.npy --mode fake --scheme w8c+a8t --calib calib \
        --dump fake.h5 $q >/dev/null
    "$QPROBE" run "$CLS" --input x.npy --mode int --scheme w8c+a8t --calib calib \
        --dump int.h5 $q >/dev/null
    "$QPROBE" diff fp.h5 fake.h5 --csv diff.csv $q >/dev/null
    "$QPROBE" ladder fp.h5 fake.h5 int.h5 --labels fp32,fake,int --csv ladder.csv >/dev/null
    "$QPROBE" sensitivity "$CLS" --calib calib --eval x.npy --scheme w8c+a8t \
        --method in --parts wa --csv sens.csv $q >/dev/null
    "$QPROBE" recipe "$CLS" --calib calib/l2.npy --eval x.npy --base w4c+a8t \
        --promote w8c+a8t --group 'conv2d_*' --target-sqnr 3 -o r.json \
        --pareto pareto.csv $q >/dev/null
}

test_report_every_kind_in_headless_chromium() {
    command -v chromium >/dev/null || fail "chromium is needed (Debian package chromium)"
    report_setup
    assert_exit 0 "$QPROBE" report sweep.csv diff.csv sens.csv ladder.csv pareto.csv \
        -o rep --screenshot --title 'cls report'
    assert_contains out "1 sweep 1 diff 1 sensitivity 1 ladder 1 recipe; 6 plots"
    [ ! -e rep/recipe-1-ppl.png ] || fail "a graph model's search got a perplexity curve"
    assert_contains out "screenshot.png"
    assert_contains rep/index.html "<title>cls report</title>"
    for id in sweep-1 diff-1 sensitivity-1 ladder-1 recipe-1; do
        assert_contains rep/index.html "<section id=\"$id\">"
    done
    # every plot as PNG and SVG, with the script and data that draw it
    for p in sweep-1-size sweep-1-speed diff-1-depth sensitivity-1-bars \
             ladder-1-depth recipe-1-pareto; do
        [ "$(head -c 4 rep/$p.png | od -A n -t x1 | tr -d ' ')" = 89504e47 ] ||
            fail "$p.png is not a PNG"
        grep -q '<svg' rep/$p.svg || fail "$p.svg is not an SVG"
        [ -s rep/$p.dat ] && [ -s rep/$p.gp ] || fail "$p: .gp or .dat missing"
        assert_contains rep/index.html "src=\"$p.png\""
    done
    # the kept script draws either format again
    (cd rep && rm sweep-1-size.png && gnuplot sweep-1-size.gp &&
     gnuplot -e "qp_out='again.svg'" sweep-1-size.gp) || fail "the .gp does not redraw"
    [ -s rep/sweep-1-size.png ] && grep -q '<svg' rep/again.svg || fail "redrawn plots"
    # no outside resource
    ! grep -Eq '(src|href)="(https?:)?//' rep/index.html || fail "the page loads something from outside"
    # the best SQNR of the sweep table is the highest of the quantized rows
    best=$(awk -F, 'NR > 1 && $3 != "fp32" && $8 == "ok" && $9 + 0 > m { m = $9 + 0 }
        END { printf "%.2f", m }' sweep.csv)
    grep -Eq "<td class=\"best\" data-k=\"[^\"]*\">$best</td>" rep/index.html ||
        fail "the best SQNR $best is not marked"
    # the sensitivity's hints and the ladder's rungs are on the page
    hint=$(awk -F, 'NR == 2 { print $NF }' sens.csv | cut -c1-20)
    assert_contains rep/index.html "$hint"
    assert_contains rep/index.html "<td class=\"t\">fake</td>"
    assert_contains rep/index.html "<td class=\"t\">int</td>"
    # the diff's depth plot follows model order (the order column)
    assert_eq "$(awk '!/^#/ && NF { print $1; exit }' rep/diff-1-depth.dat)" 0 "first point"
    no_tmp_left .
    # the screenshot: a PNG of the page, 1280 pixels wide
    assert_eq "$(head -c 4 rep/screenshot.png | od -A n -t x1 | tr -d ' ')" 89504e47 "PNG magic"
    w=$(od -A n -t u1 -j 16 -N 4 rep/screenshot.png | awk '{ print $1 * 16777216 + $2 * 65536 + $3 * 256 + $4 }')
    assert_eq "$w" 1280 "screenshot width"
    cp "$ROOT/tests/cli/report-check.html" rep/
    sandbox=""
    [ "$(id -u)" = 0 ] && sandbox=--no-sandbox
    timeout 120 chromium --headless $sandbox --disable-gpu --allow-file-access-from-files \
        --enable-logging=stderr --v=0 --virtual-time-budget=5000 \
        --dump-dom "file://$PWD/rep/report-check.html" >dom.html 2>chrome.log ||
        { tail -5 chrome.log; fail "chromium failed"; }
    sed -n '/<pre id="result">/,/<\/pre>/p' dom.html
    assert_contains dom.html "images 6 broken 0"
    assert_contains dom.html "tables "
    assert_contains dom.html "sections 5"
    assert_contains dom.html "sort column SQNR (dB) asc ok desc ok aria descending"
    assert_contains dom.html "first after desc: fp32" # inf sorts highest
    # no console message at all (errors, uncaught exceptions, failed loads)
    ! grep -E 'CONSOLE' chrome.log || fail "the page wrote to the console"
    # a second run replaces the folder
    assert_exit 0 "$QPROBE" report sweep.csv -o rep -q
    [ ! -e rep/diff-1-depth.png ] || fail "the old report was kept"
}

test_report_refusals() {
    echo "a,b,c" >other.csv
    printf 'rank,name,shape,numel,sqnr_db,cosine\n1,x,1,1,"3\n' >broken.csv
    assert_exit 2 "$QPROBE" report other.csv
    assert_contains err "-o DIR is required"
    assert_exit 1 "$QPROBE" report other.csv -o rep
    assert_contains err "'other.csv': not a table qprobe writes (its header starts 'a,b,c')"
    assert_exit 1 "$QPROBE" report broken.csv -o rep
    assert_contains err "broken.csv"
    assert_exit 1 "$QPROBE" report nope.csv -o rep
    assert_contains err "nope.csv"
    [ ! -e rep ] || fail "a refused report left its folder"
    no_tmp_left .
}

# A language model's tables: a sweep of the tiny Llama with a recipe from
# `qprobe recipe --target-ppl-delta` as a row, and that search's Pareto CSV
# (its kind, units and perplexity columns as main writes them): the sweep
# plots perplexity, the recipe section adds a perplexity curve.
test_report_llm_sweep_and_ppl_recipe() {
    M=$ROOT/data/llama-tiny
    head -c 3000 "$M/heldout.txt" >a.txt
    tail -c 3000 "$M/heldout.txt" >b.txt
    "$QPROBE" tokenize "$M" --text a.txt --add-special -o calib.npy
    "$QPROBE" tokenize "$M" --text b.txt --add-special -o eval.npy
    "$QPROBE" recipe "$M" --calib calib.npy --eval eval.npy --base w4g128 --promote w8c \
        --target-ppl-delta 0.5 -o r.json --pareto p.csv -q >/dev/null
    assert_eq "$(head -1 p.csv | cut -d, -f13-)" \
        "reranked,kind,units,calib_ppl_delta,eval_ppl_delta" "recipe CSV header"
    "$QPROBE" sweep "$M" --text "$M/heldout.txt" --ctx 256 --grid 'w4g128,r.json' \
        --csv s.csv -q >/dev/null
    # the recipe, validated as a sweep row: better than its base, larger
    awk -v r="$(csv_field s.csv r.json ppl)" -v b="$(csv_field s.csv w4g128 ppl)" \
        'BEGIN { exit !(r < b) }' || fail "the recipe row is not better than w4g128"
    awk -v r="$(csv_field s.csv r.json weight_bytes)" -v b="$(csv_field s.csv w4g128 weight_bytes)" \
        'BEGIN { exit !(r > b) }' || fail "the recipe row is not larger than w4g128"
    assert_exit 0 "$QPROBE" report s.csv p.csv -o rep
    assert_contains out "1 sweep 1 recipe; 4 plots"
    assert_contains rep/sweep-1-size.gp "set ylabel 'perplexity (lower is better)'"
    # the best perplexity of the quantized rows is marked
    best=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
        $3 != "fp32" && (m == "" || $c["ppl"] + 0 < m) { m = $c["ppl"] + 0 }
        END { printf "%.3f", m }' s.csv)
    grep -Eq "<td class=\"best\" data-k=\"[^\"]*\">$best</td>" rep/index.html ||
        fail "the best PPL $best is not marked"
    # the perplexity curve holds the CSV's steps: size, calib and eval delta
    awk -F, 'NR > 1 { printf "%s %s %s\n", $10 / 1e6, $16, $17 }' p.csv >want.txt
    grep -v '^#' rep/recipe-1-ppl.dat | awk '{ printf "%s %s %s\n", $1, $2, $3 }' >got.txt
    assert_eq "$(cat got.txt)" "$(cat want.txt)" "recipe-1-ppl.dat"
    [ -s rep/recipe-1-ppl.png ] && grep -q '<svg' rep/recipe-1-ppl.svg || fail "the PPL plot"
    assert_contains rep/index.html "held-out PPL - fp32"
    assert_contains rep/index.html "<td class=\"t\">promote</td>"
}
