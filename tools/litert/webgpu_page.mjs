// The page run_webgpu.mjs opens in headless Chromium: it loads LiteRT.js
// (JSPI build), fetches the job list from the local server, compiles each
// model for the WebGPU delegate (ML Drift) at the requested precision, runs
// it on the given inputs, and posts back the outputs and the log lines
// LiteRT printed while compiling and running that model.
const log = [];
// Must be set before LiteRT loads: the Emscripten module takes print and
// printErr from it, which is how the delegate's residency lines are seen.
self.Module = {
  print: (line) => log.push(String(line)),
  printErr: (line) => log.push(String(line)),
};
const consoleWarn = console.warn;
console.warn = (...args) => {
  log.push(args.map(String).join(' ').replace(/%c/g, ''));
  consoleWarn(...args);
};

async function post(path, body) {
  await fetch(path, {method: 'POST', headers: {'Content-Type': 'application/json'},
                     body: JSON.stringify(body)});
}

const ARRAYS = {float32: Float32Array, int32: Int32Array, uint8: Uint8Array};

async function runJob(litert, job) {
  const start = log.length;
  const result = {id: job.id, ok: false};
  try {
    const bytes = new Uint8Array(await (await fetch(job.model)).arrayBuffer());
    const model = await litert.loadAndCompile(bytes, {
      accelerator: 'webgpu', gpuOptions: {precision: job.precision},
    });
    result.fully_accelerated = model.isFullyAccelerated;
    const details = model.getInputDetails();
    const inputs = [];
    // named specs ({name, ...}) follow the signature's order
    const named = job.inputs.length > 0 && job.inputs.every((s) => s.name);
    const specs = named ? details.map((d) => {
      const s = job.inputs.find((x) => x.name === d.name);
      if (!s) throw new Error(`no input for '${d.name}'`);
      return s;
    }) : job.inputs;
    for (let i = 0; i < specs.length; i++) {
      const spec = specs[i];
      const buf = await (await fetch(spec.url)).arrayBuffer();
      const Ctor = ARRAYS[spec.dtype];
      if (!Ctor) throw new Error(`input ${i}: dtype ${spec.dtype} cannot cross LiteRT.js`);
      inputs.push(new litert.Tensor(new Ctor(buf), spec.shape));
    }
    if (details.length !== inputs.length) {
      throw new Error(`the model has ${details.length} inputs, ${inputs.length} given`);
    }
    const outs = await model.run(inputs);
    const outDetails = model.getOutputDetails();
    result.outputs = [];
    for (let i = 0; i < outs.length; i++) {
      const cpu = await outs[i].moveTo('wasm');
      const data = await cpu.data();
      result.outputs.push({name: outDetails[i].name, dtype: outDetails[i].dtype,
                           shape: Array.from(outDetails[i].shape), data: Array.from(data)});
      cpu.delete();
    }
    inputs.forEach((t) => t.delete());
    model.delete();
    result.ok = true;
  } catch (e) {
    result.error = String(e && e.message ? e.message : e);
  }
  result.log = log.slice(start);
  return result;
}

async function main() {
  try {
    const litert = await import('/litert/core/index.js');
    const adapter = navigator.gpu ? await navigator.gpu.requestAdapter() : null;
    const info = adapter ? (adapter.info || {}) : {};
    await post('/adapter', {available: !!adapter, vendor: info.vendor || null,
                            architecture: info.architecture || null,
                            fallback: adapter ? !!adapter.isFallbackAdapter : null,
                            crossOriginIsolated: self.crossOriginIsolated});
    if (!adapter) throw new Error('navigator.gpu.requestAdapter() returned no adapter');
    await litert.loadLiteRt('/litert/wasm/', {jspi: true});
    const jobs = await (await fetch('/jobs')).json();
    for (const job of jobs) await post('/result', await runJob(litert, job));
    await post('/done', {ok: true});
  } catch (e) {
    await post('/done', {ok: false, error: String(e && e.message ? e.message : e),
                         log: log.slice(-40)});
  }
}

main();
