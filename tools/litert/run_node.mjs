#!/usr/bin/env node
// Runs a .tflite model in the real LiteRT (LiteRT.js @litertjs/core 2.5.3,
// pinned by package-lock.json) on the CPU path (XNNPACK) in plain Node 20:
//
//   node tools/litert/run_node.mjs MODEL.tflite OUTDIR [INPUT.npy ...]
//   node tools/litert/run_node.mjs --batch JOBS.json OUTDIR   (many models, one load)
//
// Inputs are taken in the order of the model's default signature (the
// first SignatureDef, or LiteRT's default one when the model has none); in
// --batch jobs an input may also be {name, file}, matched to the signature
// input of that name (convgate's runners pass them so).
// Writes OUTDIR/output_<i>.npy and OUTDIR/result.json:
//   {runtime, accelerator, model, inputs: [{name, dtype, shape}],
//    outputs: [{name, dtype, shape, file}], log: [lines LiteRT printed]}
// Exit status: 0 ran, 1 LiteRT refused or failed (the message says why;
// LiteRT's "ERROR:" log lines count as a refusal even where LiteRT.js
// itself carries on), 2 usage or a missing package.
//
// LiteRT.js is written for browsers; three shims make it run in Node
// (shared/reference/litert-oracles.md): `self` and `importScripts` for the
// Emscripten loader, a CommonJS copy of the loader scripts (the package is
// an ES module, so Node would load them as ESM and they would export
// nothing), and a `navigator`.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {createRequire} from 'node:module';
import {fileURLToPath, pathToFileURL} from 'node:url';

import {readNpy, writeNpy} from './npy.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const coreDir = path.join(here, 'node_modules', '@litertjs', 'core');
const log = [];

function usage(message) {
  process.stderr.write(`run_node: ${message}\n` +
      'usage: node tools/litert/run_node.mjs MODEL.tflite OUTDIR [INPUT.npy ...]\n');
  process.exit(2);
}

// A folder with the loader scripts as CommonJS and the .wasm files beside
// them; removed when the process exits.
function commonjsLoaderDir() {
  const wasmDir = path.join(coreDir, 'wasm');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'convgate-litert-'));
  process.on('exit', () => fs.rmSync(dir, {recursive: true, force: true}));
  fs.writeFileSync(path.join(dir, 'package.json'), '{"type": "commonjs"}\n');
  for (const name of fs.readdirSync(wasmDir)) {
    const from = path.join(wasmDir, name);
    if (name.endsWith('.js')) fs.copyFileSync(from, path.join(dir, name));
    else fs.symlinkSync(from, path.join(dir, name));
  }
  return dir;
}

function installShims(loaderDir) {
  const require = createRequire(path.join(loaderDir, 'package.json'));
  globalThis.self = globalThis;
  globalThis.importScripts = (url) => {
    const file = url.startsWith('file:') ? fileURLToPath(url) : url;
    const factory = require(file);
    globalThis.self.ModuleFactory = factory.default ?? factory;
  };
  if (typeof globalThis.navigator === 'undefined') {
    globalThis.navigator = {hardwareConcurrency: os.cpus().length, userAgent: 'node'};
  }
  // LiteRT's C++ log goes through Module.print / printErr.
  globalThis.self.Module = {
    print: (line) => log.push(String(line)),
    printErr: (line) => log.push(String(line)),
  };
}

// Loads LiteRT.js once (with the shims) and returns its module.
async function loadLiteRtNode() {
  if (!fs.existsSync(path.join(coreDir, 'package.json'))) {
    usage(`${coreDir} is missing: run scripts/setup.sh (npm ci in tools/litert)`);
  }
  const loaderDir = commonjsLoaderDir();
  installShims(loaderDir);
  const litert = await import(pathToFileURL(path.join(coreDir, 'dist', 'index.js')).href);
  // Quiet the "Failed to create default WebGPU device" noise of Node.
  const warn = console.warn;
  console.warn = (...args) => log.push(args.join(' '));
  await litert.loadLiteRt(pathToFileURL(loaderDir).href + '/');
  console.warn = warn;
  return litert;
}

// The .npy files in the order of the model's inputs: as given, or by name
// when every spec is {name, file}.
function orderInputs(modelPath, inDetails, specs) {
  const named = specs.length > 0 && specs.every((s) => typeof s === 'object' && s.name);
  const files = named ? inDetails.map((d) => {
    const s = specs.find((x) => x.name === d.name);
    if (!s) {
      throw new Error(`${modelPath}: no input file for '${d.name}' (given: ` +
                      `${specs.map((x) => x.name).join(', ')})`);
    }
    return s.file;
  }) : specs.map((s) => (typeof s === 'object' ? s.file : s));
  if (files.length !== inDetails.length) {
    throw new Error(`${modelPath} has ${inDetails.length} inputs ` +
        `(${inDetails.map((d) => d.name).join(', ')}); ${files.length} .npy files given`);
  }
  return files;
}

// Runs one model on .npy inputs; writes OUTDIR/output_<i>.npy and
// OUTDIR/result.json; returns the result. Throws on refusal.
async function runModel(litert, modelPath, outDir, inputSpecs) {
  const start = log.length;
  const modelLog = () => log.slice(start);
  // LiteRT.js resolves the compile promise even when TFLite failed to
  // prepare a node (a Flex or unknown custom op): it logs "ERROR:" lines
  // and runs to zeros. Any ERROR line is a refusal.
  const refuse = () => {
    const errors = modelLog().filter((l) => l.startsWith('ERROR'));
    if (errors.length) throw new Error(`LiteRT refused ${modelPath}: ${errors.join(' / ')}`);
  };
  const bytes = new Uint8Array(fs.readFileSync(modelPath));
  let model;
  try {
    model = await litert.loadAndCompile(bytes, {accelerator: 'wasm'});
  } catch (e) {
    throw new Error(`LiteRT could not load/compile ${modelPath}: ${e.message ?? e}`);
  }
  try {
    const inDetails = model.getInputDetails();
    const outDetails = model.getOutputDetails();
    const inputPaths = orderInputs(modelPath, inDetails, inputSpecs);
    const inputs = inputPaths.map((p, i) => {
      const {data, shape} = readNpy(p);
      const want = inDetails[i].dtype;
      const got = data.constructor.name.replace('Array', '').toLowerCase();
      if (got !== want) {
        throw new Error(`${p}: input '${inDetails[i].name}' is ${want}, the file holds ${got}`);
      }
      return new litert.Tensor(data, shape);
    });
    refuse();
    const outputs = await model.run(inputs);
    refuse();
    fs.mkdirSync(outDir, {recursive: true});
    const result = {
      runtime: '@litertjs/core 2.5.3',
      accelerator: 'wasm',
      model: modelPath,
      inputs: inDetails.map((d) => ({name: d.name, dtype: d.dtype, shape: Array.from(d.shape)})),
      outputs: [],
      log: modelLog(),
    };
    for (let i = 0; i < outputs.length; i++) {
      const t = outputs[i];
      const data = await t.data();
      const shape = Array.from(outDetails[i].shape);
      const file = `output_${i}.npy`;
      writeNpy(path.join(outDir, file), data, shape, outDetails[i].dtype);
      result.outputs.push({name: outDetails[i].name, dtype: outDetails[i].dtype, shape, file});
      t.delete();
    }
    inputs.forEach((t) => t.delete());
    fs.writeFileSync(path.join(outDir, 'result.json'), JSON.stringify(result, null, 1) + '\n');
    return result;
  } finally {
    model.delete();
  }
}

async function main() {
  const argv = process.argv.slice(2);
  if (argv[0] === '--batch') {
    // --batch JOBS.json OUTDIR: JOBS.json is [{id, model, inputs: [npy or
    // {name, file}]}];
    // writes OUTDIR/<index>/ per job and OUTDIR/summary.json
    // {id: {ok, error, dir}}, loading LiteRT once for all of them.
    if (argv.length !== 3) usage('--batch JOBS.json OUTDIR');
    const jobs = JSON.parse(fs.readFileSync(argv[1], 'utf8'));
    const litert = await loadLiteRtNode();
    const summary = {};
    for (let i = 0; i < jobs.length; i++) {
      const dir = path.join(argv[2], String(i));
      try {
        await runModel(litert, jobs[i].model, dir, jobs[i].inputs);
        summary[jobs[i].id] = {ok: true, dir};
      } catch (e) {
        summary[jobs[i].id] = {ok: false, error: String(e.message ?? e)};
      }
    }
    fs.mkdirSync(argv[2], {recursive: true});
    fs.writeFileSync(path.join(argv[2], 'summary.json'), JSON.stringify(summary, null, 1) + '\n');
    return;
  }
  const [modelPath, outDir, ...inputPaths] = argv;
  if (!modelPath || !outDir) usage('MODEL and OUTDIR are required');
  const litert = await loadLiteRtNode();
  await runModel(litert, modelPath, outDir, inputPaths);
}

main().then(() => process.exit(0), (e) => {
  process.stderr.write(`run_node: ${e.message ?? e}\n`);
  if (log.length) process.stderr.write(log.slice(-30).map((l) => `  | ${l}\n`).join(''));
  process.exit(1);
});
