#!/usr/bin/env node
// The onnxruntime-node peer for convgate's benchmarks and parity checks.
//
// Default mode: for each model, create an InferenceSession N times (CPU
// provider, intraOpNumThreads = --threads (default 1), interOpNumThreads =
// 1, all graph optimisations) and report the median creation time and the
// process's peak RSS.  Peak RSS is process-wide and only ever grows, so for
// a clean per-model number run one model per process (bench_load.sh does).
//
// --run mode: create one session per model, then time N inferences (after
// one warm-up run, reported as first_ms) and report the median latency
// (run_ms) and the median process CPU time per inference (cpu_ms).  Inputs come from .npy
// files (--input NAME=FILE.npy), a constant (--fill NAME=VALUE), or a
// seeded PRNG (uniform in [-1,1) for floats, [0,4) for integers);
// symbolic or unknown dimensions take --dim NAME=V, else --dim '*'=V, else 1.
// --save-inputs / --save-outputs DIR write what was fed / produced as
// <name>.npy, so convgate can be run on the same inputs and compared.
//
//   node bench/ort_session.js [--runs N] [--threads T] [--json] MODEL...
//   node bench/ort_session.js --run [--runs N] [--threads T] [--input x=a.npy] [--fill sr=16000]
//        [--dim batch=1] [--shape x=1x512] [--seed S] [--save-inputs D]
//        [--save-outputs D] [--json] MODEL
'use strict';

const fs = require('fs');
const path = require('path');

let ort;
try {
  ort = require('onnxruntime-node');
} catch (e) {
  process.stderr.write('ort_session: onnxruntime-node is not installed: run scripts/setup.sh --bench ' +
                       '(npm ci in bench/)\n' + e.message + '\n');
  process.exit(2);
}

function usage(msg) {
  if (msg) process.stderr.write('ort_session: ' + msg + '\n');
  process.stderr.write('usage: ort_session.js [--run] [--runs N] [--threads T] [--json] [--input NAME=FILE.npy] ' +
                       '[--fill NAME=VALUE] [--dim NAME=V] [--shape NAME=AxBxC] [--seed S] ' +
                       '[--save-inputs DIR] [--save-outputs DIR] MODEL...\n');
  process.exit(2);
}

function splitKeyValue(opt, arg) {
  const eq = arg === undefined ? -1 : arg.indexOf('=');
  if (eq <= 0) usage(opt + ' wants NAME=VALUE, got ' + JSON.stringify(arg));
  return [arg.slice(0, eq), arg.slice(eq + 1)];
}

function parseArgs(argv) {
  const o = { run: false, runs: 10, threads: 1, json: false, inputs: {}, fills: {}, dims: {}, shapes: {},
              seed: 1, saveInputs: null, saveOutputs: null, models: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => { if (i + 1 >= argv.length) usage(a + ' needs a value'); return argv[++i]; };
    if (a === '--run') o.run = true;
    else if (a === '--json') o.json = true;
    else if (a === '--runs') { o.runs = Number(next()); if (!Number.isInteger(o.runs) || o.runs < 1) usage('bad --runs'); }
    else if (a === '--threads') { o.threads = Number(next()); if (!Number.isInteger(o.threads) || o.threads < 1) usage('bad --threads'); }
    else if (a === '--seed') { o.seed = Number(next()) >>> 0; }
    else if (a === '--input') { const [k, v] = splitKeyValue(a, next()); o.inputs[k] = v; }
    else if (a === '--fill') { const [k, v] = splitKeyValue(a, next()); o.fills[k] = Number(v); }
    else if (a === '--dim') { const [k, v] = splitKeyValue(a, next()); o.dims[k] = Number(v); }
    else if (a === '--shape') {
      const [k, v] = splitKeyValue(a, next());
      o.shapes[k] = v === '' ? [] : v.split('x').map(Number);
      if (o.shapes[k].some((d) => !Number.isInteger(d) || d < 0)) usage('bad --shape ' + v);
    }
    else if (a === '--save-inputs') o.saveInputs = next();
    else if (a === '--save-outputs') o.saveOutputs = next();
    else if (a === '-h' || a === '--help') usage();
    else if (a.startsWith('--')) usage('unknown option ' + a);
    else o.models.push(a);
  }
  if (o.models.length === 0) usage('no model given');
  return o;
}

// ---- .npy (format 1.0/2.0/3.0, C order, little-endian) -------------------

const NPY_TYPES = {
  '<f4': ['float32', Float32Array], '<f8': ['float64', Float64Array],
  '<i1': ['int8', Int8Array], '|i1': ['int8', Int8Array], '|u1': ['uint8', Uint8Array],
  '<u1': ['uint8', Uint8Array], '<i2': ['int16', Int16Array], '<u2': ['uint16', Uint16Array],
  '<i4': ['int32', Int32Array], '<u4': ['uint32', Uint32Array],
  '<i8': ['int64', BigInt64Array], '<u8': ['uint64', BigUint64Array],
  '|b1': ['bool', Uint8Array], '<f2': ['float16', Uint16Array],
};

function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.length < 10 || buf.toString('latin1', 0, 6) !== '\x93NUMPY') throw new Error(file + ': not a .npy file');
  const major = buf[6];
  const hlen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const hstart = major === 1 ? 10 : 12;
  if (hstart + hlen > buf.length) throw new Error(file + ': header past end of file');
  const header = buf.toString('latin1', hstart, hstart + hlen);
  const descr = /'descr':\s*'([^']+)'/.exec(header);
  const fortran = /'fortran_order':\s*(True|False)/.exec(header);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header);
  if (!descr || !fortran || !shape) throw new Error(file + ': unreadable header ' + header);
  if (fortran[1] === 'True') throw new Error(file + ': Fortran-order arrays are not supported');
  const t = NPY_TYPES[descr[1]];
  if (!t) throw new Error(file + ': unsupported dtype ' + descr[1]);
  const dims = shape[1].split(',').map((s) => s.trim()).filter((s) => s !== '').map(Number);
  const count = dims.reduce((a, b) => a * b, 1);
  const start = hstart + hlen;
  const bytes = count * t[1].BYTES_PER_ELEMENT;
  if (start + bytes > buf.length) throw new Error(file + ': data shorter than shape ' + JSON.stringify(dims));
  // Copy so the typed array is aligned regardless of the header length.
  const data = new t[1](count);
  Buffer.from(data.buffer).set(buf.subarray(start, start + bytes));
  if (t[0] === 'bool') return new ort.Tensor('bool', Uint8Array.from(data, (v) => (v ? 1 : 0)), dims);
  return new ort.Tensor(t[0], data, dims);
}

const ORT_TO_NPY = {
  float32: '<f4', float64: '<f8', int8: '|i1', uint8: '|u1', int16: '<i2', uint16: '<u2',
  int32: '<i4', uint32: '<u4', int64: '<i8', uint64: '<u8', bool: '|b1', float16: '<f2',
};

function writeNpy(file, tensor) {
  const descr = ORT_TO_NPY[tensor.type];
  if (!descr) throw new Error('cannot save a ' + tensor.type + ' tensor as .npy');
  const dims = tensor.dims.map(String);
  const shapeStr = dims.length === 1 ? '(' + dims[0] + ',)' : '(' + dims.join(', ') + ')';
  let header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shapeStr + ', }';
  const total = 10 + header.length + 1;
  header += ' '.repeat((64 - (total % 64)) % 64) + '\n';
  const pre = Buffer.alloc(10);
  pre.write('\x93NUMPY', 0, 'latin1');
  pre[6] = 1; pre[7] = 0;
  pre.writeUInt16LE(header.length, 8);
  const data = tensor.data;
  const body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  fs.writeFileSync(file, Buffer.concat([pre, Buffer.from(header, 'latin1'), body]));
}

// ---- inputs ---------------------------------------------------------------

// mulberry32: small, seedable, and the same on every Node version.
function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6D2B79F5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const TYPED = {
  float32: Float32Array, float64: Float64Array, int8: Int8Array, uint8: Uint8Array,
  int16: Int16Array, uint16: Uint16Array, int32: Int32Array, uint32: Uint32Array,
  int64: BigInt64Array, uint64: BigUint64Array, bool: Uint8Array,
};

function makeInput(meta, opts, rand) {
  const name = meta.name;
  if (opts.inputs[name] !== undefined) return readNpy(opts.inputs[name]);
  if (!meta.isTensor) throw new Error('input ' + name + ' is not a tensor: give it with --input');
  const Ctor = TYPED[meta.type];
  if (!Ctor) throw new Error('input ' + name + ' has type ' + meta.type + ': give it with --input');
  let dims = opts.shapes[name];
  if (dims === undefined) {
    dims = meta.shape.map((d) => {
      if (typeof d === 'number' && d >= 0) return d;
      if (typeof d === 'string' && d !== '' && opts.dims[d] !== undefined) return opts.dims[d];
      return opts.dims['*'] !== undefined ? opts.dims['*'] : 1;
    });
  }
  const count = dims.reduce((a, b) => a * b, 1);
  const data = new Ctor(count);
  const big = meta.type === 'int64' || meta.type === 'uint64';
  const isFloat = meta.type.startsWith('float');
  const fill = opts.fills[name];
  for (let i = 0; i < count; i++) {
    let v;
    if (fill !== undefined) v = fill;
    else if (isFloat) v = rand() * 2 - 1;
    else if (meta.type === 'bool') v = rand() < 0.5 ? 0 : 1;
    else v = Math.floor(rand() * 4);
    data[i] = big ? BigInt(Math.trunc(v)) : v;
  }
  return new ort.Tensor(meta.type, data, dims);
}

// ---- measurement -----------------------------------------------------------

function sessionOptions(opts) {
  return {
    executionProviders: ['cpu'],
    intraOpNumThreads: opts.threads,
    interOpNumThreads: 1,
    graphOptimizationLevel: 'all',
  };
}

function median(xs) {
  const s = xs.slice().sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

function nowMs() { return Number(process.hrtime.bigint()) / 1e6; }

function sanitize(name) { return name.replace(/[^A-Za-z0-9_.-]/g, '_'); }

async function benchCreate(model, opts) {
  const times = [];
  for (let i = 0; i < opts.runs; i++) {
    const t0 = nowMs();
    const s = await ort.InferenceSession.create(model, sessionOptions(opts));
    times.push(nowMs() - t0);
    await s.release();
  }
  return { create_ms: median(times), create_runs: opts.runs };
}

async function benchRun(model, opts) {
  const t0 = nowMs();
  const session = await ort.InferenceSession.create(model, sessionOptions(opts));
  const createMs = nowMs() - t0;
  const rand = prng(opts.seed);
  const feeds = {};
  for (const meta of session.inputMetadata) feeds[meta.name] = makeInput(meta, opts, rand);
  if (opts.saveInputs) {
    fs.mkdirSync(opts.saveInputs, { recursive: true });
    for (const [k, t] of Object.entries(feeds)) writeNpy(path.join(opts.saveInputs, sanitize(k) + '.npy'), t);
  }
  const f0 = nowMs();
  let outputs = await session.run(feeds); // warm-up, and the outputs we save
  const firstMs = nowMs() - f0;
  const times = [], cpus = [];
  for (let i = 0; i < opts.runs; i++) {
    const c0 = process.cpuUsage();
    const r0 = nowMs();
    outputs = await session.run(feeds);
    times.push(nowMs() - r0);
    const c1 = process.cpuUsage(c0);
    cpus.push((c1.user + c1.system) / 1000);
  }
  if (opts.saveOutputs) {
    fs.mkdirSync(opts.saveOutputs, { recursive: true });
    for (const [k, t] of Object.entries(outputs)) writeNpy(path.join(opts.saveOutputs, sanitize(k) + '.npy'), t);
  }
  const shapes = {};
  for (const [k, t] of Object.entries(outputs)) shapes[k] = t.dims;
  await session.release();
  return { create_ms: createMs, first_ms: firstMs, run_ms: median(times), cpu_ms: median(cpus),
           run_runs: opts.runs, threads: opts.threads, output_shapes: shapes };
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const baseKb = process.resourceUsage().maxRSS;
  let failed = 0;
  for (const model of opts.models) {
    let r;
    try {
      r = opts.run ? await benchRun(model, opts) : await benchCreate(model, opts);
    } catch (e) {
      process.stderr.write('ort_session: ' + model + ': ' + e.message + '\n');
      failed++;
      continue;
    }
    r = Object.assign({ model, ort: ort.env.versions.common },
                      r, { peak_rss_kb: process.resourceUsage().maxRSS, baseline_rss_kb: baseKb });
    if (opts.json) {
      process.stdout.write(JSON.stringify(r) + '\n');
    } else {
      let line = path.basename(model) + ': session ' + r.create_ms.toFixed(2) + ' ms';
      if (opts.run) line += ', run ' + r.run_ms.toFixed(3) + ' ms (median of ' + r.run_runs + ')';
      else line += ' (median of ' + r.create_runs + ')';
      line += ', peak RSS ' + (r.peak_rss_kb / 1024).toFixed(1) + ' MiB (node+ort baseline ' +
              (r.baseline_rss_kb / 1024).toFixed(1) + ' MiB)';
      process.stdout.write(line + '\n');
    }
  }
  process.exit(failed ? 1 : 0);
}

main();
