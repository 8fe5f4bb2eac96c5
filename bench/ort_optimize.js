#!/usr/bin/env node
// Writes the graph ONNX Runtime partitions: for each model, one CPU session at
// graphOptimizationLevel 'basic' (ORT's Level 1, the EP-independent
// transformers) with optimizedModelFilePath set, so ORT saves the graph it
// ran.  The ground truth of tests/scripts/ort_basic.sh.
//
//   node bench/ort_optimize.js OUT_DIR MODEL...
//
// For MODEL it writes OUT_DIR/<basename>.onnx, or on failure
// OUT_DIR/<basename>.error holding ORT's message (a model ORT refuses is not
// an inventory to compare).  One line per model on stdout: "ok NAME" or
// "error NAME: message".  Exit status 0 unless the arguments are wrong.
'use strict';

const fs = require('fs');
const path = require('path');

let ort;
try {
  ort = require('onnxruntime-node');
} catch (e) {
  process.stderr.write('ort_optimize: onnxruntime-node is not installed: ' + e.message + '\n');
  process.exit(2);
}

async function main() {
  const argv = process.argv.slice(2);
  if (argv.length < 2) {
    process.stderr.write('usage: ort_optimize.js OUT_DIR MODEL...\n');
    process.exit(2);
  }
  const out = argv[0];
  fs.mkdirSync(out, {recursive: true});
  for (const model of argv.slice(1)) {
    const base = path.basename(model, '.onnx');
    const dest = path.join(out, base + '.onnx');
    const errFile = path.join(out, base + '.error');
    try {
      fs.rmSync(dest, {force: true});
      fs.rmSync(errFile, {force: true});
      const session = await ort.InferenceSession.create(model, {
        executionProviders: ['cpu'],
        graphOptimizationLevel: 'basic',
        optimizedModelFilePath: dest,
        intraOpNumThreads: 1,
        interOpNumThreads: 1,
        logSeverityLevel: 3,
      });
      await session.release();
      console.log('ok ' + base);
    } catch (e) {
      const msg = String(e && e.message ? e.message : e).replace(/\s+/g, ' ');
      fs.rmSync(dest, {force: true});
      fs.writeFileSync(errFile, msg + '\n');
      console.log('error ' + base + ': ' + msg);
    }
  }
}

main();
