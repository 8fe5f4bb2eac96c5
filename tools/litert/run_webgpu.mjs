#!/usr/bin/env node
// Runs .tflite models through LiteRT.js's WebGPU path (Google's ML Drift GPU
// delegate) in Debian's headless Chromium on its SwiftShader adapter, and
// reports what the delegate printed about residency:
//
//   node tools/litert/run_webgpu.mjs [--precision fp32|fp16] MODEL.tflite OUTDIR [INPUT.npy ...]
//     writes OUTDIR/output_<i>.npy and OUTDIR/result.json (as run_node.mjs,
//     plus "residency")
//   node tools/litert/run_webgpu.mjs [--precision P] --batch JOBS.json RESULTS.json
//     JOBS.json: [{id, model, inputs: [npy paths, or {name, file} matched to the
//     signature inputs by name]}]; RESULTS.json: per id
//     {ok, error, fully_accelerated, residency, outputs: [{name, dtype,
//     shape, data}], log}
//
// residency: {gpu_ops, cpu_ops, rejected: [{op, reason}], graph_inits,
// source, delegate_error}; delegate_error is the delegate's own message when
// it accepted the ops but then failed to build its kernel; graph_inits counts the delegate's "Initializing WebGPU-based API
// from graph" lines, one per delegated graph (IF/WHILE branch subgraphs and
// re-initialisations at run time included, so it is not the number of GPU
// partitions of the main subgraph). When the delegate rejects ops it prints "ERROR: Following
// operations are not supported by GPU delegate:", one line per op, and "N
// operations will run on the GPU, and the remaining M operations will run
// on the CPU."; when it takes the whole model it prints no count, and
// gpu_ops is then the model's operator count in the main subgraph (source
// "fully_accelerated"). A model the delegate cannot take at all falls back
// to the CPU (gpu_ops 0).
//
// The page and LiteRT's files are served from 127.0.0.1 only, with the
// COOP/COEP headers that make the page cross-origin isolated; Chromium runs
// with --enable-unsafe-webgpu (without it requestAdapter() returns null)
// and the flags that keep it off the network
// (shared/reference/litert-oracles.md, .library/env/machines/c.md).
// Exit status: 0 ran, 1 a model failed (single mode) or Chromium/WebGPU is
// unusable, 2 usage or something missing (chromium, the packages).
import {spawn, spawnSync} from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import {fileURLToPath} from 'node:url';

import {readNpy, writeNpy} from './npy.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const pkg = path.join(here, 'node_modules', '@litertjs');
const TIMEOUT_MS = Number(process.env.CG_WEBGPU_TIMEOUT_MS || 600000);

function die(code, message) {
  process.stderr.write(`run_webgpu: ${message}\n`);
  process.exit(code);
}

function findChromium() {
  for (const name of [process.env.CG_CHROMIUM, 'chromium', 'chromium-browser']) {
    if (!name) continue;
    const r = spawnSync('sh', ['-c', `command -v ${name}`], {encoding: 'utf8'});
    if (r.status === 0 && r.stdout.trim()) return r.stdout.trim();
  }
  return null;
}

// Parses the delegate's residency lines out of one model's log.
export function parseResidency(log, operatorCount, fullyAccelerated) {
  const r = {gpu_ops: null, cpu_ops: null, rejected: [], graph_inits: 0, source: null,
             delegate_error: null};
  let inList = false;
  for (const line of log) {
    const text = line.replace(/^(ERROR|INFO|WARNING): /, '');
    if (/Following operations are not supported by GPU delegate/.test(line)) {
      inList = true;
      continue;
    }
    const counts = /(\d+) operations will run on the GPU, and the remaining (\d+) operations? will run on the CPU/.exec(line);
    if (counts) {
      r.gpu_ops = Number(counts[1]);
      r.cpu_ops = Number(counts[2]);
      r.source = 'delegate log';
      inList = false;
      continue;
    }
    if (/Initializing WebGPU-based API from graph/.test(line)) r.graph_inits++;
    const failed = /Failed to create \S*DelegateKernel\S*: (.*)/.exec(line);
    if (failed && !r.delegate_error) r.delegate_error = failed[1].split('\n')[0];
    if (inList) {
      const m = /^([A-Za-z0-9_]+): (.*)$/.exec(text);
      if (m) r.rejected.push({op: m[1], reason: m[2]});
      else inList = false;
    }
  }
  if (r.gpu_ops === null) {
    if (fullyAccelerated) {
      r.gpu_ops = operatorCount;
      r.cpu_ops = 0;
      r.source = 'fully_accelerated';
    } else {
      r.gpu_ops = 0;
      r.cpu_ops = operatorCount;
      r.source = r.rejected.length ? 'rejected, no count printed' : 'not delegated';
    }
  }
  return r;
}

// Operators of the main subgraph, read with convgate's own tools would be
// circular; count them from the FlatBuffer directly (Model.subgraphs[0].
// operators length) with bounds checks, for the fully-accelerated case.
export function mainOperatorCount(bytes) {
  const u32 = (p) => {
    if (p < 0 || p + 4 > bytes.length) throw new Error('offset out of range');
    return (bytes[p] | (bytes[p + 1] << 8) | (bytes[p + 2] << 16) | (bytes[p + 3] << 24)) >>> 0;
  };
  const field = (table, id) => {
    const vt = table - (u32(table) | 0);
    const vtSize = bytes[vt] | (bytes[vt + 1] << 8);
    if (4 + 2 * id + 2 > vtSize) return 0;
    const off = bytes[vt + 4 + 2 * id] | (bytes[vt + 5 + 2 * id] << 8);
    return off ? table + off : 0;
  };
  const deref = (p) => p + u32(p);
  const root = deref(0);
  const subs = field(root, 2);
  if (!subs) return 0;
  const vec = deref(subs);
  if (u32(vec) < 1) return 0;
  const main = deref(vec + 4);
  const ops = field(main, 3);
  return ops ? u32(deref(ops)) : 0;
}

function startServer(jobs, onAdapter, onResult, onDone) {
  const files = new Map(); // url -> {file | bytes, type}
  const serveDir = (prefix, dir) => {
    for (const name of fs.readdirSync(dir)) {
      files.set(prefix + name, {file: path.join(dir, name)});
    }
  };
  serveDir('/litert/core/', path.join(pkg, 'core', 'dist'));
  serveDir('/litert/wasm/', path.join(pkg, 'core', 'wasm'));
  serveDir('/litert/wasm-utils/', path.join(pkg, 'wasm-utils', 'dist'));
  files.set('/page.mjs', {file: path.join(here, 'webgpu_page.mjs')});
  const pageJobs = jobs.map((job) => {
    files.set(`/files/${job.index}/model.tflite`, {file: job.model});
    return {
      id: job.id, precision: job.precision, model: `/files/${job.index}/model.tflite`,
      inputs: job.inputs.map((spec, i) => {
        const named = typeof spec === 'object' && spec !== null;
        const {descr, shape, data} = readNpy(named ? spec.file : spec);
        const dtype = {'<f4': 'float32', '<i4': 'int32', '|u1': 'uint8'}[descr] || descr;
        const url = `/files/${job.index}/input_${i}.bin`;
        files.set(url, {bytes: Buffer.from(data.buffer, data.byteOffset, data.byteLength)});
        return named ? {url, dtype, shape, name: spec.name} : {url, dtype, shape};
      }),
    };
  });
  const html = '<!doctype html><meta charset="utf-8"><title>convgate LiteRT WebGPU</title>\n' +
      '<script type="importmap">{"imports": {"@litertjs/wasm-utils": ' +
      '"/litert/wasm-utils/index.js"}}</script>\n<script type="module" src="/page.mjs"></script>\n';
  const types = {'.js': 'text/javascript', '.mjs': 'text/javascript', '.wasm': 'application/wasm',
                 '.json': 'application/json'};
  const server = http.createServer((req, res) => {
    const headers = {'Cross-Origin-Opener-Policy': 'same-origin',
                     'Cross-Origin-Embedder-Policy': 'require-corp',
                     'Cross-Origin-Resource-Policy': 'same-origin', 'Cache-Control': 'no-store'};
    const url = req.url.split('?')[0];
    if (req.method === 'POST') {
      let body = '';
      req.on('data', (c) => { body += c; });
      req.on('end', () => {
        res.writeHead(204, headers);
        res.end();
        let msg;
        try { msg = JSON.parse(body); } catch (e) { msg = {ok: false, error: 'bad JSON'}; }
        if (url === '/adapter') onAdapter(msg);
        else if (url === '/result') onResult(msg);
        else if (url === '/done') onDone(msg);
      });
      return;
    }
    if (url === '/' || url === '/index.html') {
      res.writeHead(200, {...headers, 'Content-Type': 'text/html'});
      res.end(html);
      return;
    }
    if (url === '/jobs') {
      res.writeHead(200, {...headers, 'Content-Type': 'application/json'});
      res.end(JSON.stringify(pageJobs));
      return;
    }
    const entry = files.get(url);
    if (!entry) {
      res.writeHead(404, headers);
      res.end();
      return;
    }
    const type = types[path.extname(url)] || 'application/octet-stream';
    res.writeHead(200, {...headers, 'Content-Type': type});
    res.end(entry.bytes || fs.readFileSync(entry.file));
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

// Runs jobs [{id, model, inputs, precision}] in one Chromium; resolves to
// {adapter, results: {id: result}}.
export async function runJobs(jobs) {
  const chromium = findChromium();
  if (!chromium) die(2, 'chromium is not installed (scripts/setup.sh installs Debian\'s)');
  if (!fs.existsSync(path.join(pkg, 'core', 'package.json'))) {
    die(2, `${pkg}/core is missing: run scripts/setup.sh (npm ci in tools/litert)`);
  }
  jobs.forEach((j, i) => { j.index = i; });
  const results = {};
  let adapter = null;
  let finish;
  const done = new Promise((resolve) => { finish = resolve; });
  const server = await startServer(jobs, (a) => { adapter = a; },
                                   (r) => { results[r.id] = r; }, (d) => finish(d));
  const port = server.address().port;
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'convgate-chromium-'));
  const args = ['--headless=new', '--no-sandbox', `--user-data-dir=${profile}`,
                '--enable-unsafe-webgpu', '--no-first-run', '--disable-background-networking',
                '--disable-component-update', '--disable-sync', '--disable-quic',
                '--disable-default-apps', '--mute-audio', `http://127.0.0.1:${port}/`];
  const child = spawn(chromium, args, {detached: true, stdio: ['ignore', 'ignore', 'pipe']});
  let stderr = '';
  child.stderr.on('data', (c) => { stderr = (stderr + c).slice(-4000); });
  const timer = setTimeout(() => finish({ok: false, error: `no answer in ${TIMEOUT_MS} ms`}),
                           TIMEOUT_MS);
  child.on('exit', (code) => finish({ok: false, error: `chromium exited (${code}) early`}));
  const end = await done;
  clearTimeout(timer);
  try { process.kill(-child.pid, 'SIGKILL'); } catch (e) { /* already gone */ }
  server.close();
  fs.rmSync(profile, {recursive: true, force: true});
  if (!end.ok) {
    const tail = (end.log || []).concat(stderr.split('\n').slice(-8)).join('\n  | ');
    throw new Error(`${end.error}${adapter ? '' : ' (no WebGPU adapter reported)'}\n  | ${tail}`);
  }
  for (const job of jobs) {
    const r = results[job.id];
    if (!r) continue;
    r.residency = parseResidency(r.log || [], mainOperatorCount(fs.readFileSync(job.model)),
                                 !!r.fully_accelerated);
  }
  return {adapter, results};
}

async function main() {
  const argv = process.argv.slice(2);
  let precision = 'fp32';
  const i = argv.indexOf('--precision');
  if (i >= 0) {
    precision = argv[i + 1];
    argv.splice(i, 2);
    if (precision !== 'fp32' && precision !== 'fp16') die(2, '--precision is fp32 or fp16');
  }
  if (argv[0] === '--batch') {
    if (argv.length !== 3) die(2, 'usage: run_webgpu.mjs [--precision P] --batch JOBS.json OUT.json');
    const jobs = JSON.parse(fs.readFileSync(argv[1], 'utf8')).map((j) => ({precision, ...j}));
    const {adapter, results} = await runJobs(jobs);
    fs.writeFileSync(argv[2], JSON.stringify({runtime: '@litertjs/core 2.5.3', accelerator:
        'webgpu', precision, adapter, results}, null, 1) + '\n');
    return 0;
  }
  const [model, outDir, ...inputs] = argv;
  if (!model || !outDir) {
    die(2, 'usage: run_webgpu.mjs [--precision fp32|fp16] MODEL.tflite OUTDIR [INPUT.npy ...]');
  }
  const {adapter, results} = await runJobs([{id: 'model', model, inputs, precision}]);
  const r = results.model;
  if (!r || !r.ok) {
    process.stderr.write(`run_webgpu: LiteRT (WebGPU) failed on ${model}: ` +
                         `${r ? r.error : 'no result'}\n`);
    return 1;
  }
  fs.mkdirSync(outDir, {recursive: true});
  const outputs = r.outputs.map((o, k) => {
    const Ctor = {float32: Float32Array, int32: Int32Array, uint8: Uint8Array}[o.dtype];
    const file = `output_${k}.npy`;
    writeNpy(path.join(outDir, file), Ctor.from(o.data), o.shape, o.dtype);
    return {name: o.name, dtype: o.dtype, shape: o.shape, file};
  });
  fs.writeFileSync(path.join(outDir, 'result.json'), JSON.stringify({
    runtime: '@litertjs/core 2.5.3', accelerator: 'webgpu', precision, adapter, model,
    fully_accelerated: r.fully_accelerated, residency: r.residency, outputs, log: r.log,
  }, null, 1) + '\n');
  return 0;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  main().then((code) => process.exit(code), (e) => die(1, e.message || String(e)));
}
