#!/usr/bin/env node
/*
 * Opens a convgate HTML report in Debian's headless Chromium and checks it
 * against the JSON report of the same run (tests/scripts/html_report.sh).
 *
 *   node check_report.js --chromium PATH --html REPORT.html --json REPORT.json
 *        --screenshot OUT.png [--hostile NAME] [--min-nodes N]
 *
 * Talks the DevTools protocol over --remote-debugging-pipe (Chromium reads
 * NUL-terminated JSON messages on fd 3 and answers on fd 4), so it needs
 * Node's standard library only: no npm package, no port.
 *
 * Checks: the page loads with no console error, no uncaught exception, no
 * log entry of level error (CSP violations land there) and no dialog; the
 * verdict word and reason in the DOM are the JSON report's; the node count
 * shown, the rows of the node table and the nodes drawn are the JSON
 * report's node count (the file's, nodes_in_file, when a runtime's lowering
 * made the graph partitioned); the rows owned by "removed", the removed
 * count shown and the removed nodes drawn are the JSON report's
 * removed_by_runtime; collapsing and expanding every partition and a
 * search by name work; with --hostile, the hostile node name is on the page
 * as text and nothing it spells ran. Prints the render time and keeps a
 * full-page screenshot. Exit 0 when every check passes, 1 otherwise.
 */
'use strict';

const {spawn} = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');

function parseArgs(argv) {
  const a = {};
  for (let i = 2; i < argv.length; i++) {
    const k = argv[i];
    if (!k.startsWith('--')) throw new Error('unexpected argument ' + k);
    a[k.slice(2)] = argv[++i];
  }
  for (const k of ['chromium', 'html', 'json', 'screenshot'])
    if (!a[k]) throw new Error('missing --' + k);
  return a;
}

/* A DevTools session over the pipe: send(method, params, sessionId) returns
 * a promise of the result; events go to the listeners. */
class Cdp {
  constructor(proc) {
    this.out = proc.stdio[3];
    this.id = 0;
    this.pending = new Map();
    this.listeners = [];
    let buf = Buffer.alloc(0);
    proc.stdio[4].on('data', (chunk) => {
      buf = Buffer.concat([buf, chunk]);
      let end;
      while ((end = buf.indexOf(0)) >= 0) {
        const msg = JSON.parse(buf.slice(0, end).toString('utf8'));
        buf = buf.slice(end + 1);
        if (msg.id !== undefined && this.pending.has(msg.id)) {
          const {resolve, reject, method} = this.pending.get(msg.id);
          this.pending.delete(msg.id);
          if (msg.error) reject(new Error(method + ': ' + JSON.stringify(msg.error)));
          else resolve(msg.result);
        } else if (msg.method) {
          this.listeners.forEach((l) => l(msg));
        }
      }
    });
  }
  send(method, params, sessionId) {
    const id = ++this.id;
    const msg = {id, method, params: params || {}};
    if (sessionId) msg.sessionId = sessionId;
    return new Promise((resolve, reject) => {
      this.pending.set(id, {resolve, reject, method});
      this.out.write(JSON.stringify(msg) + '\0');
    });
  }
  on(fn) { this.listeners.push(fn); }
  waitFor(method, timeoutMs) {
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error('timed out waiting for ' + method)), timeoutMs);
      this.on((m) => { if (m.method === method) { clearTimeout(t); resolve(m); } });
    });
  }
}

async function main() {
  const args = parseArgs(process.argv);
  const report = JSON.parse(fs.readFileSync(args.json, 'utf8'));
  const R = report.result;
  /* gate: the verdict and node count of its JSON; assign: its node count;
   * compare and bisect: the page must load clean and say something */
  const gate = report.command === 'gate', assign = report.command === 'assign';
  /* the page draws the file's nodes; with a runtime's lowering the JSON
   * counts the graph partitioned (nodes) and the file's (nodes_in_file) */
  const placed = gate ? (R.runs_where_intended || {}) : (assign ? R : {});
  const expect = {
    verdict: gate ? R.verdict : null,
    reason: gate ? R.reason : null,
    nodes: typeof placed.nodes_in_file === 'number' ? placed.nodes_in_file
         : gate ? placed.nodes : (assign ? R.nodes_total : null),
    removed: gate || assign ? (placed.removed_by_runtime || 0) : null,
  };
  if (gate && typeof expect.nodes !== 'number') throw new Error(args.json + ': no node count (gate 2 did not run)');
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'convgate-chromium-'));
  const flags = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
                 '--disable-background-networking', '--disable-component-update', '--disable-sync',
                 '--user-data-dir=' + profile, '--remote-debugging-pipe', '--window-size=1400,1000',
                 'about:blank'];
  const proc = spawn(args.chromium, flags, {stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe']});
  let stderr = '';
  proc.stderr.on('data', (d) => { stderr += d; });
  const failures = [];
  let expandedGraph = null;
  const problems = [];
  const exited = new Promise((resolve) => proc.on('exit', resolve));
  /* Chromium and its helpers may still write to the profile as they go:
   * wait for the browser to exit (killing it after 5 s), then remove the
   * profile with retries; a profile left behind is not a test failure */
  const cleanup = async () => {
    const t = setTimeout(() => { try { proc.kill('SIGKILL'); } catch (e) { /* gone */ } }, 5000);
    await exited;
    clearTimeout(t);
    try {
      fs.rmSync(profile, {recursive: true, force: true, maxRetries: 10, retryDelay: 200});
    } catch (e) {
      console.error('check_report: note: could not remove ' + profile + ': ' + e.code);
    }
  };
  const watchdog = setTimeout(() => {
    console.error('check_report: timed out; chromium said:\n' + stderr.slice(-2000));
    try { proc.kill('SIGKILL'); } catch (e) { /* gone */ }
    process.exit(1);
  }, 90000);
  try {
    const cdp = new Cdp(proc);
    const {targetId} = await cdp.send('Target.createTarget', {url: 'about:blank'});
    const {sessionId} = await cdp.send('Target.attachToTarget', {targetId, flatten: true});
    cdp.on((m) => {
      if (m.sessionId !== sessionId) return;
      if (m.method === 'Runtime.consoleAPICalled' && (m.params.type === 'error' || m.params.type === 'assert'))
        problems.push('console ' + m.params.type + ': ' + m.params.args.map((x) => x.value || x.description).join(' '));
      if (m.method === 'Runtime.exceptionThrown')
        problems.push('exception: ' + JSON.stringify(m.params.exceptionDetails).slice(0, 600));
      if (m.method === 'Log.entryAdded' && m.params.entry.level === 'error')
        problems.push('log error (' + m.params.entry.source + '): ' + m.params.entry.text);
      if (m.method === 'Page.javascriptDialogOpening')
        problems.push('a dialog opened: ' + m.params.message);
    });
    for (const d of ['Runtime.enable', 'Log.enable', 'Page.enable'])
      await cdp.send(d, {}, sessionId);
    await cdp.send('Emulation.setDeviceMetricsOverride',
                   {width: 1400, height: 1000, deviceScaleFactor: 1, mobile: false}, sessionId);
    const loaded = cdp.waitFor('Page.loadEventFired', 60000);
    const t0 = Date.now();
    await cdp.send('Page.navigate', {url: 'file://' + path.resolve(args.html)}, sessionId);
    await loaded;
    const eval_ = async (expr) => {
      const r = await cdp.send('Runtime.evaluate', {expression: expr, returnByValue: true, awaitPromise: true}, sessionId);
      if (r.exceptionDetails) throw new Error('evaluating ' + expr + ': ' + JSON.stringify(r.exceptionDetails).slice(0, 400));
      return r.result.value;
    };
    const loadMs = Date.now() - t0;
    const page = await eval_(`(() => {
      const t = (s) => { const e = document.querySelector(s); return e ? e.textContent : null; };
      return {
        rendered: document.body.getAttribute('data-rendered'),
        renderMs: window.__cgRenderMs,
        graph: window.__cgGraph || null,
        word: t('#verdict-word'), reason: t('#verdict-reason'), count: t('#node-count'),
        rows: document.querySelectorAll('#nodes-table tbody tr').length,
        removedRows: document.querySelectorAll('#nodes-table tbody tr[data-owner="removed"]').length,
        removedShown: t('#removed-count'),
        drawn: document.querySelectorAll('#graph-box g.node[data-node]').length,
        collapsed: document.querySelectorAll('#graph-box g.node.collapsed').length,
        external: [...document.querySelectorAll('script[src], link[rel=stylesheet], img[src^=http], iframe')].length,
        scripts: document.scripts.length
      };
    })()`);
    const check = (ok, what) => { if (!ok) failures.push(what); };
    check(page.rendered === 'true', 'the page did not finish rendering');
    if (gate) {
      check(page.word === expect.verdict, `verdict word '${page.word}' is not the JSON report's '${expect.verdict}'`);
      check(page.reason === expect.reason, `verdict reason '${page.reason}' is not the JSON report's '${expect.reason}'`);
    } else {
      check(page.word && page.reason, 'no verdict on the page');
    }
    if (expect.nodes === null) expect.nodes = page.rows; /* compare, bisect: no count in their JSON */
    check(page.count === String(expect.nodes), `node count shown '${page.count}' is not the JSON report's ${expect.nodes}`);
    check(page.rows === expect.nodes, `${page.rows} rows in the node table, the JSON report has ${expect.nodes} nodes`);
    check(page.drawn + page.collapsed > 0, 'no node drawn');
    check(page.external === 0, 'the page refers to an external resource');
    check(page.scripts === 2, `${page.scripts} script elements (expected the data block and the one script)`);
    if (expect.removed !== null) {
      check(page.removedRows === expect.removed,
            `${page.removedRows} rows owned by 'removed', the JSON report has ${expect.removed} nodes removed by the runtime`);
      check(expect.removed === 0 || page.removedShown === String(expect.removed),
            `removed count shown '${page.removedShown}' is not the JSON report's ${expect.removed}`);
    }
    if (expect.nodes <= 200)
      check(page.drawn + page.graph.hidden === expect.nodes,
            `${page.drawn} nodes drawn and ${page.graph.hidden} constants hidden, the JSON report has ${expect.nodes} nodes`);

    /* a full-page screenshot of the page as it opened, the page's height capped */
    const metrics = await cdp.send('Page.getLayoutMetrics', {}, sessionId);
    const height = Math.min(6000, Math.ceil(metrics.cssContentSize.height));
    await cdp.send('Emulation.setDeviceMetricsOverride',
                   {width: 1400, height, deviceScaleFactor: 1, mobile: false}, sessionId);
    const shot = await cdp.send('Page.captureScreenshot', {format: 'png'}, sessionId);
    fs.writeFileSync(args.screenshot, Buffer.from(shot.data, 'base64'));

    /* interaction: collapse every partition, expand again, search by name */
    const inter = await eval_(`(async () => {
      const wait = (ms) => new Promise((r) => setTimeout(r, ms));
      document.getElementById('collapse-all').click();
      const collapsed = document.querySelectorAll('#graph-box g.node.collapsed').length;
      const drawnCollapsed = document.querySelectorAll('#graph-box g.node[data-node]').length;
      document.getElementById('expand-all').click();
      const box = document.getElementById('show-constants');
      if (box && !box.checked) box.click();
      const drawnExpanded = document.querySelectorAll('#graph-box g.node[data-node]').length;
      const removedDrawn = document.querySelectorAll('#graph-box g.node.removed[data-node]').length;
      const expanded = window.__cgGraph;
      const s = document.getElementById('search');
      const firstName = document.querySelector('#nodes-table tbody tr td.mono').textContent;
      /* the search runs 150 ms after the last keystroke: wait for its count
       * (polling, so a loaded machine's late timers do not fail the test) */
      s.value = firstName;
      s.dispatchEvent(new Event('input'));
      const count = document.getElementById('search-count');
      for (let t = 0; t < 300 && !count.textContent; t++) await wait(50);
      const visibleRows = [...document.querySelectorAll('#nodes-table tbody tr')].filter((tr) => !tr.hidden).length;
      const hits = count.textContent;
      s.value = ''; s.dispatchEvent(new Event('input'));
      for (let t = 0; t < 300 && count.textContent; t++) await wait(50);
      return {collapsed, drawnCollapsed, drawnExpanded, removedDrawn, visibleRows, hits, firstName, expanded};
    })()`);
    expandedGraph = inter.expanded;
    check(inter.drawnExpanded === expect.nodes, `expand all drew ${inter.drawnExpanded} nodes, not ${expect.nodes}`);
    if (expect.removed !== null)
      check(inter.removedDrawn === expect.removed, `${inter.removedDrawn} removed nodes drawn, the JSON report has ${expect.removed}`);
    check(inter.collapsed >= 1 && inter.drawnCollapsed < inter.drawnExpanded,
          `collapse all left ${inter.drawnCollapsed} nodes and ${inter.collapsed} collapsed boxes`);
    check(inter.visibleRows >= 1 && inter.visibleRows < expect.nodes || expect.nodes === 1,
          `searching '${inter.firstName}' left ${inter.visibleRows} rows`);
    check(/match/.test(inter.hits), `search count says '${inter.hits}'`);

    if (args.hostile) {
      const h = await eval_(`(() => {
        const name = ${JSON.stringify(args.hostile)};
        const cells = [...document.querySelectorAll('#nodes-table td.mono')].map((td) => td.textContent);
        return {asText: cells.includes(name), pwned: window.__pwned === true,
                imgs: document.querySelectorAll('img').length,
                injected: document.querySelectorAll('#nodes-table script, #graph-box script, #nodes-table b.pwn').length};
      })()`);
      check(h.asText, 'the hostile node name is not in the node table as text');
      check(!h.pwned, 'a script from the hostile name ran');
      check(h.imgs === 0 && h.injected === 0, 'the hostile name made elements');
    }

    failures.push(...problems);
    const size = fs.statSync(args.html).size;
    console.log(`check_report: ${args.html}: ${size} bytes, load ${loadMs} ms, render ${page.renderMs.toFixed(1)} ms` +
                (page.graph ? `, ${page.graph.items} items, ${page.graph.edges} edges (${page.graph.crossings} crossings), layout ${page.graph.layoutMs.toFixed(1)} ms` : '') +
                (expandedGraph ? `; expanded: ${expandedGraph.items} items, layout and draw ${expandedGraph.layoutMs.toFixed(1)} ms` : '') +
                `; screenshot ${args.screenshot}`);
    await cdp.send('Browser.close').catch(() => {});
  } catch (e) {
    failures.push(String(e && e.stack || e));
  } finally {
    clearTimeout(watchdog);
    await cleanup();
  }
  if (failures.length) {
    failures.forEach((f) => console.error('check_report: FAIL: ' + f));
    process.exit(1);
  }
  console.log('check_report: ok');
}

main().catch((e) => { console.error(e); process.exit(1); });
