#!/usr/bin/env node
// scripts/ort-reference.js: the independent fp32 reference for `qprobe run`.
//
// Runs an ONNX model through onnxruntime-node (CPU; made available by
// scripts/ort-setup.sh from the tarballs pinned in scripts/ort/ort.lock;
// QP_ORT_DIR is the folder it prints) and writes requested values as
// .npy files, named as qprobe's npy dump directories name them. ONNX
// Runtime only returns graph outputs, so the intermediate values asked
// for are appended to the model's graph outputs by editing the protobuf
// bytes here (ModelProto.graph = field 7, GraphProto.output = field 12,
// ValueInfoProto.name = field 1); nothing of qprobe is involved in
// producing the reference.
//
//   node ort-reference.js image --shape N,C,H,W --seed S [--norm ocr|imagenet]
//       -o X.npy [--each PREFIX]
//       a batch of synthetic document-like images (dark strokes on a light
//       page), normalized as PP-OCR preprocesses: ocr = (v - 0.5) / 0.5,
//       imagenet = (v - mean) / std per channel; --each also writes every
//       image alone as PREFIX<k>.npy, shaped [C,H,W]
//   node ort-reference.js run --model M.onnx --input X.npy
//       (--names a,b,... | --names-from DUMPDIR) -o OUTDIR
//       writes every named value (and the model's outputs) to OUTDIR
//   node ort-reference.js compare --ref DIR --test DIR --max-rel-l2 T
//       relative L2 error ||ref - test|| / ||ref|| of every tensor in ref
//       (shapes must match); exits 1 if one exceeds T or is missing
'use strict';
const fs = require('fs');
const path = require('path');

function die(msg) {
    process.stderr.write(`ort-reference: ${msg}\n`);
    process.exit(1);
}

function parseArgs(argv) {
    const a = { _: [] };
    for (let i = 0; i < argv.length; i++) {
        const k = argv[i];
        if (k.startsWith('--')) a[k.slice(2)] = argv[++i];
        else if (k === '-o') a.o = argv[++i];
        else a._.push(k);
    }
    return a;
}

// ---- .npy ---------------------------------------------------------------

const DESCR = {
    '<f4': ['float32', Float32Array], '<f8': ['float64', Float64Array],
    '<i8': ['int64', BigInt64Array], '<i4': ['int32', Int32Array],
    '|i1': ['int8', Int8Array], '|u1': ['uint8', Uint8Array],
    '|b1': ['bool', Uint8Array], '<i2': ['int16', Int16Array],
    '<u2': ['uint16', Uint16Array],
};

function readNpy(file) {
    const b = fs.readFileSync(file);
    if (b.toString('latin1', 0, 6) !== '\x93NUMPY') die(`${file}: not an .npy file`);
    const major = b[6];
    const hlen = major === 1 ? b.readUInt16LE(8) : b.readUInt32LE(8);
    const pre = major === 1 ? 10 : 12;
    const h = b.toString('latin1', pre, pre + hlen);
    const descr = /'descr':\s*'([^']+)'/.exec(h)[1];
    if (/'fortran_order':\s*True/.test(h)) die(`${file}: Fortran order`);
    const shape = /'shape':\s*\(([^)]*)\)/.exec(h)[1].split(',')
        .map(s => s.trim()).filter(s => s).map(Number);
    const t = DESCR[descr];
    if (!t) die(`${file}: unsupported dtype ${descr}`);
    const n = shape.reduce((x, y) => x * y, 1);
    const off = pre + hlen;
    const raw = b.subarray(off, off + n * t[1].BYTES_PER_ELEMENT);
    const data = new t[1](n);
    Buffer.from(data.buffer).set(raw);
    return { type: t[0], descr, shape, data };
}

function writeNpy(file, descr, shape, data) {
    const sh = shape.length === 1 ? `(${shape[0]},)` : `(${shape.join(', ')})`;
    let h = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${sh}, }`;
    const total = 10 + h.length + 1;
    h += ' '.repeat((64 - (total % 64)) % 64) + '\n';
    const head = Buffer.alloc(10);
    head.write('\x93NUMPY', 0, 'latin1');
    head[6] = 1;
    head[7] = 0;
    head.writeUInt16LE(h.length, 8);
    const body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    fs.writeFileSync(file, Buffer.concat([head, Buffer.from(h, 'latin1'), body]));
}

// qprobe's file names: bytes outside [A-Za-z0-9._-] (and a leading '.')
// become %XX (formats/dump-npy.c)
function escapeName(name) {
    let r = '';
    const b = Buffer.from(name, 'utf8');
    for (let i = 0; i < b.length; i++) {
        const c = b[i];
        const plain = (c >= 97 && c <= 122) || (c >= 65 && c <= 90) ||
            (c >= 48 && c <= 57) || c === 46 || c === 95 || c === 45;
        r += plain && !(i === 0 && c === 46) ? String.fromCharCode(c)
            : '%' + c.toString(16).toUpperCase().padStart(2, '0');
    }
    return r;
}

function unescapeName(s) {
    return Buffer.from(s.replace(/%([0-9A-Fa-f]{2})/g,
        (_, h) => String.fromCharCode(parseInt(h, 16))), 'latin1').toString('utf8');
}

function listDump(dir) {
    return fs.readdirSync(dir).filter(f => f.endsWith('.npy') && !f.startsWith('.'))
        .map(f => ({ file: path.join(dir, f), name: unescapeName(f.slice(0, -4)) }));
}

// ---- protobuf: append graph outputs ------------------------------------

function readVarint(b, p) {
    let v = 0n, s = 0n;
    for (;;) {
        if (p >= b.length) die('truncated protobuf varint');
        const c = b[p++];
        v |= BigInt(c & 0x7f) << s;
        s += 7n;
        if (!(c & 0x80)) return [v, p];
    }
}

function varint(n) {
    const out = [];
    let v = BigInt(n);
    do {
        let c = Number(v & 0x7fn);
        v >>= 7n;
        if (v) c |= 0x80;
        out.push(c);
    } while (v);
    return Buffer.from(out);
}

function withOutputs(model, names) {
    const extra = Buffer.concat(names.map(n => {
        const nb = Buffer.from(n, 'utf8');
        const vi = Buffer.concat([Buffer.from([0x0a]), varint(nb.length), nb]);
        return Buffer.concat([Buffer.from([0x62]), varint(vi.length), vi]);
    }));
    const parts = [];
    let p = 0, found = false;
    while (p < model.length) {
        const start = p;
        let tag;
        [tag, p] = readVarint(model, p);
        const field = Number(tag >> 3n), wt = Number(tag & 7n);
        if (wt === 2) {
            let len;
            [len, p] = readVarint(model, p);
            const body = model.subarray(p, p + Number(len));
            p += Number(len);
            if (field === 7) {
                const g = Buffer.concat([body, extra]);
                parts.push(Buffer.concat([varint(tag), varint(g.length), g]));
                found = true;
                continue;
            }
        } else if (wt === 0) {
            [, p] = readVarint(model, p);
        } else if (wt === 1) {
            p += 8;
        } else if (wt === 5) {
            p += 4;
        } else {
            die(`unexpected protobuf wire type ${wt}`);
        }
        parts.push(model.subarray(start, p));
    }
    if (!found) die('model has no graph');
    return Buffer.concat(parts);
}

// ---- commands -----------------------------------------------------------

// xorshift32: the same image for the same seed everywhere
function rng(seed) {
    let s = (seed >>> 0) || 1;
    return () => {
        s ^= s << 13; s >>>= 0;
        s ^= s >>> 17;
        s ^= s << 5; s >>>= 0;
        return s / 4294967296;
    };
}

function cmdImage(a) {
    const shape = a.shape.split(',').map(Number);
    const [n, c, h, w] = shape;
    const r = rng(Number(a.seed || 1));
    const px = new Float32Array(n * c * h * w);
    for (let b = 0; b < n; b++) {
        const page = new Float32Array(h * w).fill(0.92);
        // text-like strokes: short dark bars on lines, some blobs
        const lines = Math.max(1, Math.floor(h / 40));
        for (let l = 0; l < lines; l++) {
            const y0 = Math.floor((l + 0.3) * h / lines), th = Math.max(2, Math.floor(h / lines * 0.4));
            for (let x = Math.floor(w * 0.05); x < w * 0.95;) {
                const len = 2 + Math.floor(r() * 8), gap = 1 + Math.floor(r() * 6);
                const ink = 0.05 + 0.2 * r(), top = y0 + Math.floor(r() * th / 3);
                const bot = Math.min(h, top + Math.floor(th * (0.5 + 0.5 * r())));
                for (let y = top; y < bot; y++)
                    for (let xx = x; xx < Math.min(w, x + len); xx++) page[y * w + xx] = ink;
                x += len + gap + (r() < 0.1 ? 8 : 0);
            }
        }
        for (let i = 0; i < h * w; i++) page[i] = Math.min(1, Math.max(0, page[i] + (r() - 0.5) * 0.04));
        const mean = [0.485, 0.456, 0.406], std = [0.229, 0.224, 0.225];
        for (let ch = 0; ch < c; ch++)
            for (let i = 0; i < h * w; i++) {
                const v = page[i];
                px[((b * c + ch) * h * w) + i] = a.norm === 'imagenet'
                    ? (v - mean[ch % 3]) / std[ch % 3] : (v - 0.5) / 0.5;
            }
    }
    writeNpy(a.o, '<f4', shape, px);
    const per = c * h * w;
    for (let b = 0; a.each && b < n; b++)
        writeNpy(`${a.each}${b}.npy`, '<f4', [c, h, w], px.subarray(b * per, (b + 1) * per));
}

const ORT_TYPES = {
    float32: ['<f4', Float32Array], int64: ['<i8', BigInt64Array],
    int32: ['<i4', Int32Array], bool: ['|b1', Uint8Array], float64: ['<f8', Float64Array],
    int8: ['|i1', Int8Array], uint8: ['|u1', Uint8Array],
    int16: ['<i2', Int16Array], uint16: ['<u2', Uint16Array],
};

async function cmdRun(a) {
    const ortDir = process.env.QP_ORT_DIR;
    if (!ortDir) die('QP_ORT_DIR is not set (see scripts/ort-setup.sh)');
    const ort = require(path.join(ortDir, 'node_modules', 'onnxruntime-node'));
    const x = readNpy(a.input);
    let names = [];
    if (a.names) names = a.names.split(',').filter(s => s);
    if (a['names-from']) names = names.concat(listDump(a['names-from']).map(e => e.name));
    const plain = await ort.InferenceSession.create(fs.readFileSync(a.model));
    const inputName = a['input-name'] || plain.inputNames[0];
    names = [...new Set(names)].filter(n => !plain.inputNames.includes(n) &&
                                             !plain.outputNames.includes(n));
    const s = await ort.InferenceSession.create(withOutputs(fs.readFileSync(a.model), names));
    const feeds = {};
    feeds[inputName] = new ort.Tensor(x.type, x.data, x.shape);
    const r = await s.run(feeds);
    fs.mkdirSync(a.o, { recursive: true });
    const order = [];
    for (const k of s.outputNames) {
        const t = r[k];
        const ty = ORT_TYPES[t.type];
        if (!ty) die(`output '${k}' has type ${t.type}`);
        const f = escapeName(k) + '.npy';
        writeNpy(path.join(a.o, f), ty[0], t.dims, t.data);
        order.push(f);
    }
    fs.writeFileSync(path.join(a.o, '.qprobe-order'), order.join('\n') + '\n');
    process.stdout.write(`${order.length} tensors written to ${a.o}\n`);
}

function cmdCompare(a) {
    const max = Number(a['max-rel-l2']);
    const test = new Map(listDump(a.test).map(e => [e.name, e.file]));
    let worst = 0, worstName = '', bad = 0, count = 0;
    for (const e of listDump(a.ref)) {
        const tf = test.get(e.name);
        if (!tf) { process.stdout.write(`MISSING ${e.name}\n`); bad++; continue; }
        const r = readNpy(e.file), t = readNpy(tf);
        if (r.shape.join(',') !== t.shape.join(',')) {
            process.stdout.write(`SHAPE ${e.name}: ref [${r.shape}] test [${t.shape}]\n`);
            bad++;
            continue;
        }
        let num = 0, den = 0;
        for (let i = 0; i < r.data.length; i++) {
            const rv = Number(r.data[i]), d = rv - Number(t.data[i]);
            num += d * d;
            den += rv * rv;
        }
        const rel = num === 0 ? 0 : Math.sqrt(num / (den || Number.MIN_VALUE));
        count++;
        if (!(rel <= max)) {
            process.stdout.write(`OVER ${e.name}: rel_l2 ${rel.toExponential(3)}\n`);
            bad++;
        }
        if (!(rel <= worst)) { worst = rel; worstName = e.name; }
    }
    process.stdout.write(`compared ${count} tensors, max rel_l2 ${worst.toExponential(3)}` +
                         ` (${worstName}), ${bad} bad\n`);
    process.exit(bad ? 1 : 0);
}

const args = parseArgs(process.argv.slice(2));
const cmd = args._[0];
if (cmd === 'image') cmdImage(args);
else if (cmd === 'run') cmdRun(args).catch(e => die(e.message));
else if (cmd === 'compare') cmdCompare(args);
else die('usage: ort-reference.js image|run|compare ... (see the header)');
