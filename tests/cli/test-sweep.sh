# qprobe sweep on PP-OCR's text-direction classifier (fetched once, pinned):
# usage errors; a sweep killed with SIGKILL in the middle and run again
# equals one that was not; the GNU parallel and Slurm examples of
# scripts/sweep give the one-process table row for row; merge conflicts;
# recipes and grid files as rows.

sweep_setup() {
    models=$(sh "$ROOT/scripts/fetch-models.sh" ppocr-v4) || fail "fetch-models.sh failed"
    CLS=$(echo "$models" | grep "_cls_")
    MKDEMO=$(dirname "$QPROBE")/mkdemo
    mkdir calib eval
    for s in 2 3; do "$MKDEMO" textline calib/l$s.npy $s; done
    for s in 7 8; do "$MKDEMO" textline eval/e$s.npy $s; done
}

# the table without its timing columns (27-30: ms_per_input .. seconds);
# fields 1-30 hold no comma or quote, the recipe and error come last
untimed() { cut -d, -f1-26,31- "$1"; }

GRID='w{4,8}{t,c}+a8t,int:w8c+a8t,w4g{16,32}'

test_sweep_usage_errors() {
    assert_exit 2 "$QPROBE" sweep m.onnx --grid w8c --calib c
    assert_contains err "--csv is required"
    assert_exit 2 "$QPROBE" sweep m.onnx --calib c --csv s.csv
    assert_contains err "--grid or --grid-file is required"
    assert_exit 2 "$QPROBE" sweep m.onnx --grid 'w8c,w9q' --calib c --csv s.csv
    assert_contains err "--grid: scheme 'w9q'"
    assert_exit 2 "$QPROBE" sweep m.onnx --grid 'w{4,8c' --calib c --csv s.csv
    assert_contains err "'{' without '}'"
    assert_exit 2 "$QPROBE" sweep m.onnx --grid w8c --calib c --csv s.csv --shard 3/3
    assert_contains err "0 <= i < N"
    assert_exit 2 "$QPROBE" sweep m.onnx --grid w8c --csv s.csv
    assert_contains err "--calib or --eval is required"
    assert_exit 2 "$QPROBE" sweep m.onnx --grid w8c --calib c --csv s.csv --text t.txt
    assert_contains err "--text is for language models"
    assert_exit 2 "$QPROBE" sweep --merge a.csv
    assert_contains err "--merge needs the tables to merge and -o"
    # a model folder is a language model: it needs a token stream or tasks,
    # and a folder that is not a model is named
    mkdir llm
    assert_exit 1 "$QPROBE" sweep llm --grid w8c --csv s.csv
    assert_contains err "'llm': a language-model sweep needs --text or --tokens"
    assert_exit 1 "$QPROBE" sweep llm --grid w8c --text t.txt --csv s.csv
    assert_contains err "llm/config.json"
    [ ! -e s.csv ] || fail "a refused sweep left a table"
    assert_exit 1 "$QPROBE" sweep m.onnx --grid w8c --calib c --csv s.csv
    assert_contains err "m.onnx"
    assert_exit 0 "$QPROBE" sweep --columns
    assert_eq "$(tr ',' '\n' <out | wc -l)" 32 "columns"
    assert_eq "$(cut -d, -f1-8 out)" "index,name,kind,mode,scheme,requant,hash,status"
    assert_eq "$(cut -d, -f27-32 out)" "ms_per_input,tokens_per_s,peak_rss_mb,seconds,recipe,error"
}

test_sweep_resumes_after_sigkill() {
    sweep_setup
    "$QPROBE" sweep "$CLS" --calib calib --eval eval --grid "$GRID" --csv whole.csv -q >/dev/null
    assert_eq "$(wc -l <whole.csv)" 10 "rows of the uninterrupted run (+ header)"
    # slow rows (timing passes do not enter the hash), killed after two rows
    "$QPROBE" sweep "$CLS" --calib calib --eval eval --grid "$GRID" --csv k.csv \
        --repeat 40 -q >/dev/null 2>&1 &
    pid=$!
    for _ in $(seq 1 600); do
        [ -f k.csv ] && [ "$(wc -l <k.csv)" -ge 3 ] && break
        sleep 0.05
    done
    kill -KILL $pid
    wait $pid 2>/dev/null || true
    rows=$(($(wc -l <k.csv) - 1))
    echo "killed after $rows rows"
    [ "$rows" -ge 2 ] && [ "$rows" -lt 9 ] || fail "the kill did not land mid-run ($rows rows)"
    assert_exit 0 "$QPROBE" sweep "$CLS" --calib calib --eval eval --grid "$GRID" \
        --csv k.csv --json sum.json
    assert_contains out "$((9 - rows)) computed, $rows done before, 0 failed"
    assert_contains sum.json "\"done_before\":	$rows"
    assert_eq "$(untimed k.csv)" "$(untimed whole.csv)" "resumed table"
    # a row torn in the middle (what a kill during its write leaves)
    size=$(wc -c <whole.csv)
    head -c $((size - 40)) whole.csv >t.csv
    assert_exit 0 "$QPROBE" sweep "$CLS" --calib calib --eval eval --grid "$GRID" --csv t.csv
    assert_contains err "dropped a torn last line"
    assert_contains out "1 computed, 8 done before"
    assert_eq "$(untimed t.csv)" "$(untimed whole.csv)" "table after a torn row"
    # the same command once more computes nothing
    assert_exit 0 "$QPROBE" sweep "$CLS" --calib calib --eval eval --grid "$GRID" --csv t.csv -q
    assert_contains out "0 computed, 9 done before"
    # other evaluation data: other hashes, so every row again
    assert_exit 0 "$QPROBE" sweep "$CLS" --calib calib --eval calib --grid "$GRID" --csv t.csv -q
    assert_contains out "9 computed, 0 done before"
    no_tmp_left .
}

test_sweep_parallel_and_slurm_examples_equal_one_process() {
    command -v parallel >/dev/null || fail "GNU parallel is needed (Debian package parallel)"
    sweep_setup
    "$QPROBE" sweep "$CLS" --calib calib --eval eval --grid "$GRID" --csv one.csv -q >/dev/null
    QPROBE=$QPROBE sh "$ROOT/scripts/sweep/parallel.sh" -j 3 -o all.csv -- "$CLS" \
        --calib calib --eval eval --grid "$GRID" -q >log 2>&1 || { cat log; fail "parallel.sh failed"; }
    cat log
    for i in 0 1 2; do
        assert_eq "$(($(wc -l <all.csv.shard-$i-of-3) - 1))" 3 "rows of shard $i"
    done
    assert_eq "$(untimed all.csv)" "$(untimed one.csv)" "merged table"
    # the Slurm array's tasks by hand, then its merge step
    for i in 0 1 2 3; do
        SLURM_ARRAY_TASK_ID=$i SLURM_ARRAY_TASK_COUNT=4 SLURM_ARRAY_TASK_MIN=0 \
            SLURM_ARRAY_TASK_MAX=3 SLURM_CPUS_PER_TASK=1 QPROBE=$QPROBE \
            bash "$ROOT/scripts/sweep/slurm.sh" s.csv "$CLS" --calib calib \
            --eval eval --grid "$GRID" -q >/dev/null
    done
    QPROBE=$QPROBE bash "$ROOT/scripts/sweep/slurm.sh" --merge s.csv 4 >/dev/null
    assert_eq "$(untimed s.csv)" "$(untimed one.csv)" "Slurm table"
    # an array with a step is refused
    set +e
    SLURM_ARRAY_TASK_ID=2 SLURM_ARRAY_TASK_COUNT=2 SLURM_ARRAY_TASK_MIN=0 \
        SLURM_ARRAY_TASK_MAX=2 QPROBE=$QPROBE bash "$ROOT/scripts/sweep/slurm.sh" \
        x.csv "$CLS" --grid w8c --calib calib 2>err
    rc=$?
    set -e
    assert_eq "$rc" 2 "exit of a stepped array"
    assert_contains err "without a step"
}

test_sweep_merge_conflicts_and_duplicates() {
    sweep_setup
    "$QPROBE" sweep "$CLS" --calib calib --grid 'w8t+a8t' --csv a.csv -q >/dev/null
    "$QPROBE" sweep "$CLS" --calib calib --grid 'w{4,8}t+a8t' --csv b.csv -q >/dev/null
    # a.csv's rows are b.csv's (w8t+a8t at another index): they collapse
    assert_exit 0 "$QPROBE" sweep --merge b.csv a.csv -o m.csv
    assert_contains out "4 rows (3 duplicates collapsed)"
    assert_eq "$(untimed m.csv)" "$(untimed b.csv)" "a.csv is a part of b.csv"
    # a row whose measurement differs: refused, naming both rows
    sq=$(csv_field a.csv w8t+a8t sqnr_db)
    sed "s/,$sq,/,1$sq,/" a.csv >c.csv
    assert_exit 1 "$QPROBE" sweep --merge b.csv c.csv -o m2.csv
    assert_contains err "conflicting rows for 'w8t+a8t'"
    assert_contains err "differ in sqnr_db"
    [ ! -e m2.csv ] || fail "a refused merge left its output"
    # not a sweep table
    echo "rank,name" >d.csv
    assert_exit 1 "$QPROBE" sweep --merge a.csv d.csv -o m3.csv
    assert_contains err "'d.csv': not a sweep table"
    no_tmp_left .
}

test_sweep_recipes_and_grid_files_are_rows() {
    sweep_setup
    printf '{"qprobe_recipe": 1, "default": "w8c+a8t", "layers": {"conv2d_0.w_0": "fp32"}}' >first-fp32.json
    printf '{"qprobe_recipe": 1, "default": "w8c+a8t"}' >same.json
    printf '# the grid\nw8c+a8t\nfirst-fp32.json, same.json  # same.json is w8c+a8t\n' >grid.txt
    assert_exit 0 "$QPROBE" sweep "$CLS" --calib calib --eval eval --grid-file grid.txt \
        --csv r.csv --no-controls
    assert_contains err "1 grid entry repeated a configuration and was dropped"
    assert_eq "$(($(wc -l <r.csv) - 1))" 2 "rows"
    assert_eq "$(csv_field r.csv first-fp32.json kind)" recipe
    assert_eq "$(csv_field r.csv first-fp32.json scheme)" w8c+a8t
    # the kept layer: 8 x 3 x 3 x 3 weights at 4 bytes instead of 1 byte
    # and a scale per channel
    b8=$(csv_field r.csv w8c+a8t weight_bytes)
    br=$(csv_field r.csv first-fp32.json weight_bytes)
    assert_eq "$((br - b8))" $((216 * 4 - 216 - 8 * 4)) "bytes of the fp32 layer"
    assert_contains r.csv '""conv2d_0.w_0"":""fp32""'
    # the table printed: both rows, the worst tensor named
    assert_contains out "first-fp32.json"
    [ -n "$(csv_field r.csv w8c+a8t worst_tensor)" ] || fail "no worst tensor"
}
