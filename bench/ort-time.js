#!/usr/bin/env node
// bench/ort-time.js: ONNX Runtime's time for one forward pass, the
// baseline bench-run measures qprobe's fp32 mode against.
//
//   node bench/ort-time.js MODEL.onnx INPUT.npy THREADS [SECONDS]
//
// Runs the model in onnxruntime-node (CPU execution provider, all graph
// optimizations, THREADS intra-op threads, sequential execution; the
// pinned package that scripts/ort-setup.sh makes available, QP_ORT_DIR
// being the folder it prints) on the f32 input in INPUT.npy: one warm-up
// run, then at least 4 and at most 12 timed runs, until SECONDS (default
// 3) are spent. Prints "ort_ms BEST" (milliseconds of the fastest run).
'use strict';
const fs = require('fs');
const path = require('path');

function die(msg) {
    process.stderr.write(`ort-time: ${msg}\n`);
    process.exit(1);
}

// A little-endian f32 .npy file, C order: { shape, data }.
function readNpyF32(file) {
    const b = fs.readFileSync(file);
    if (b.toString('latin1', 0, 6) !== '\x93NUMPY') die(`${file}: not an .npy file`);
    const hlen = b[6] === 1 ? b.readUInt16LE(8) : b.readUInt32LE(8);
    const pre = b[6] === 1 ? 10 : 12;
    const h = b.toString('latin1', pre, pre + hlen);
    if (!/'descr':\s*'<f4'/.test(h) || /'fortran_order':\s*True/.test(h))
        die(`${file}: f32 in C order expected`);
    const shape = /'shape':\s*\(([^)]*)\)/.exec(h)[1].split(',')
        .map(s => s.trim()).filter(s => s).map(Number);
    const n = shape.reduce((x, y) => x * y, 1);
    const data = new Float32Array(n);
    Buffer.from(data.buffer).set(b.subarray(pre + hlen, pre + hlen + 4 * n));
    return { shape, data };
}

async function main() {
    const [model, input, threads, seconds] = process.argv.slice(2);
    if (!model || !input || !threads) die('usage: ort-time.js MODEL INPUT.npy THREADS [SECONDS]');
    const ortDir = process.env.QP_ORT_DIR;
    if (!ortDir) die('QP_ORT_DIR is not set (see scripts/ort-setup.sh)');
    const ort = require(path.join(ortDir, 'node_modules', 'onnxruntime-node'));
    const x = readNpyF32(input);
    const s = await ort.InferenceSession.create(fs.readFileSync(model), {
        executionProviders: ['cpu'], graphOptimizationLevel: 'all',
        intraOpNumThreads: Number(threads), interOpNumThreads: 1,
        executionMode: 'sequential',
    });
    const feeds = { [s.inputNames[0]]: new ort.Tensor('float32', x.data, x.shape) };
    await s.run(feeds); // warm-up
    const budget = 1e3 * Number(seconds || 3);
    let best = Infinity, spent = 0;
    for (let r = 0; r < 12 && (r < 4 || spent < budget); r++) {
        const t0 = process.hrtime.bigint();
        await s.run(feeds);
        const ms = Number(process.hrtime.bigint() - t0) / 1e6;
        spent += ms;
        if (ms < best) best = ms;
    }
    process.stdout.write(`ort_ms ${best.toFixed(3)}\n`);
}

main().catch(e => die(e.message));
