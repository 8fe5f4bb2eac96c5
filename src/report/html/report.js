/*
 * convgate HTML report (src/report/html.c embeds this file; docs/html-report.md).
 *
 * Reads the one data block of the page, {report: the command's --json
 * envelope, graph: the per-node view (report/graph.c) or null}, and draws
 * it: verdict first, the graph, the per-node table, the compared outputs
 * with their error histograms, the boundary ledger and the targets' cited
 * sources. It computes nothing the library measured; it only lays out.
 *
 * Model strings are untrusted: every one reaches the page through
 * textContent or an attribute value set with setAttribute, never through
 * innerHTML, so a node named like a script element is text.
 *
 * The graph is laid out here, not in C: expanding or collapsing a
 * partition changes the graph to lay out, so the layout has to run where
 * the click happens. It is a layered (Sugiyama-style) layout: ranks by
 * longest path over the edges that go forward in topological order,
 * barycentre ordering sweeps, then x positions from the neighbours above.
 */
(function () {
  'use strict';

  var SVGNS = 'http://www.w3.org/2000/svg';
  var DATA = JSON.parse(document.getElementById('cg-data').textContent);
  var ENV = DATA.report || {};
  var R = ENV.result || {};
  var G = DATA.graph || null;
  var CMD = ENV.command || '';

  /* --- small helpers ------------------------------------------------------- */

  /* An HTML element; string children become text nodes. */
  function el(tag, attrs) {
    var e = document.createElement(tag);
    if (attrs) {
      for (var k in attrs) {
        if (!Object.prototype.hasOwnProperty.call(attrs, k) || attrs[k] == null) continue;
        if (k === 'text') e.textContent = String(attrs[k]);
        else if (k === 'cls') e.className = attrs[k];
        else if (k === 'on') { for (var ev in attrs.on) e.addEventListener(ev, attrs.on[ev]); }
        else e.setAttribute(k, String(attrs[k]));
      }
    }
    for (var i = 2; i < arguments.length; i++) add(e, arguments[i]);
    return e;
  }
  function add(parent, c) {
    if (c == null || c === false) return;
    if (Array.isArray(c)) { c.forEach(function (x) { add(parent, x); }); return; }
    parent.appendChild(typeof c === 'object' ? c : document.createTextNode(String(c)));
  }
  function svg(tag, attrs) {
    var e = document.createElementNS(SVGNS, tag);
    for (var k in attrs) {
      if (!Object.prototype.hasOwnProperty.call(attrs, k) || attrs[k] == null) continue;
      if (k === 'text') e.textContent = String(attrs[k]);
      else e.setAttribute(k, String(attrs[k]));
    }
    return e;
  }
  /* Numbers of the JSON: reals, or "nan"/"inf"/"-inf" (docs/json.md). */
  function num(v) {
    if (typeof v === 'number') return v;
    if (v === 'inf') return Infinity;
    if (v === '-inf') return -Infinity;
    return NaN;
  }
  function fmt(v, digits) {
    if (v == null) return '';
    if (typeof v !== 'number') return String(v);
    if (v !== v) return 'nan';
    if (!isFinite(v)) return v > 0 ? 'inf' : '-inf';
    if (Number.isInteger(v)) return String(v);
    if (Math.abs(v) >= 1000 && Math.abs(v) < 1e15) return v.toFixed(0);
    var s = v.toPrecision(digits || 4);
    if (s.indexOf('e') < 0 && s.indexOf('.') >= 0) s = s.replace(/0+$/, '').replace(/\.$/, '');
    return s;
  }
  function plural(n, one, many) { return n + ' ' + (n === 1 ? one : (many || one + 's')); }
  function truncate(s, n) { s = String(s); return s.length > n ? s.slice(0, n - 1) + '\u2026' : s; }
  function section(id, title) {
    var s = el('section', {cls: 'card', id: id});
    if (title) s.appendChild(el('h2', {text: title}));
    return s;
  }

  /* --- owners and their colours ---------------------------------------------- */

  /* the colours come with the data (report/graph.c), so this page and the
   * Model Explorer overlay agree */
  var ownerColour = (G && G.owner_colours) || {};
  var CPU_COLOUR = ownerColour.cpu || '#9aa4ae';
  var ownerNames = Object.keys(ownerColour).filter(function (k) { return k !== 'cpu' && k !== 'removed'; });
  function colourOf(owner) {
    if (owner == null) return '#cfd8dc';
    if (owner === 'removed') return '#ffffff';
    return ownerColour[owner] || CPU_COLOUR;
  }
  /* A node's fill: its owner's colour; a node the runtime fused into
   * another is drawn (dashed) in the colour of where that node runs */
  function nodeColour(nd) {
    return nd.owner === 'removed' && nd.runs_on ? colourOf(nd.runs_on) : colourOf(nd.owner);
  }
  /* The owner as the table and the tooltips say it. */
  function nodeOwnerLabel(nd) {
    if (nd.owner !== 'removed') return ownerLabel(nd.owner);
    return nd.runs_on ? removedBy() + ' (fused into \u2018' + nd.runtime_node + '\u2019 on ' + ownerLabel(nd.runs_on) + ')'
                      : removedBy();
  }
  /* Who removed the nodes the lowering removed: the runtime's graph
   * optimizations (ort-basic) or the converter that wrote the file it loads
   * (onnx-to-tflite), as the report's JSON names it. */
  function removedBy() {
    return 'removed by ' + (G.remover || 'the runtime');
  }
  /* The refusal, or what removed the node. */
  function nodeWhy(nd) {
    if (!nd.reason) return '';
    return nd.owner === 'removed' ? nd.reason : nd.rule + ' by ' + nd.refused_by + ': ' + nd.reason;
  }
  function ownerLabel(owner) {
    if (owner == null) return 'not placed';
    if (owner === 'cpu') return 'CPU';
    if (owner === 'removed') return removedBy();
    return owner;
  }

  /* --- the verdict ------------------------------------------------------------- */

  /* The verdict word, its class and the one-line reason, from the command's
   * own result (the same object --json prints). */
  function verdictOf() {
    if (ENV.status === 'error' || !ENV.result) {
      var msgs = (ENV.errors || []).map(function (e) { return e.message; });
      return {word: 'ERROR', cls: 'error', reason: msgs.join('; ') || 'the command failed'};
    }
    if (CMD === 'gate') {
      return {word: R.verdict, cls: R.pass ? 'pass' : 'fail', reason: R.reason};
    }
    if (CMD === 'assign') {
      var v = R.verdict || {};
      var words = {full: 'FULL RESIDENCY', partial: 'PARTIAL RESIDENCY', none: 'NO RESIDENCY',
                   init_failure: 'INIT FAILURE'};
      return {word: words[v.kind] || String(v.kind).toUpperCase(),
              cls: v.kind === 'full' ? 'pass' : (v.kind === 'partial' ? 'fail' : 'error'),
              reason: v.text};
    }
    if (CMD === 'compare') {
      var outs = R.outputs || [];
      var bad = outs.filter(function (o) { return !o.pass; });
      var reason = bad.length
        ? plural(bad.length, 'output') + ' of ' + outs.length + ' outside tolerance on ' +
          plural(R.samples, 'sample') + ' (first: \u2018' + bad[0].name + '\u2019, max_abs ' + fmt(bad[0].max_abs) + ')'
        : 'all ' + plural(outs.length, 'output') + ' within tolerance on ' + plural(R.samples, 'sample');
      return {word: R.pass ? 'PASS' : 'FAIL', cls: R.pass ? 'pass' : 'fail', reason: reason};
    }
    if (CMD === 'bisect') {
      var f = R.first_divergent;
      if (!f) return {word: 'MATCHES', cls: 'pass', reason: 'no intermediate tensor diverges (' + plural(R.compared, 'tensor') + ' compared)'};
      return {word: 'DIVERGES', cls: 'fail',
              reason: 'first divergent tensor \u2018' + f.tensor + '\u2019 from ' + f.op_type + ' \u2018' + f.node + '\u2019' +
                      (R.triage ? ': ' + R.triage : '')};
    }
    return {word: ENV.status === 'ok' ? 'OK' : 'FAIL', cls: ENV.status === 'ok' ? 'pass' : 'fail', reason: ''};
  }

  function renderVerdict(root) {
    var v = verdictOf();
    var s = el('section', {cls: 'card ' + v.cls, id: 'verdict'});
    var body = el('div', null, el('div', {id: 'verdict-reason', text: v.reason || ''}));
    s.appendChild(el('div', {id: 'verdict-word', text: v.word || ''}));
    s.appendChild(body);
    if (CMD === 'gate' && ENV.result) {
      var t = el('table', {cls: 'gates'});
      [['GATE 1 converts', R.converts], ['GATE 2 runs where intended', R.runs_where_intended],
       ['GATE 3 matches', R.matches]].forEach(function (g) {
        var st = (g[1] && g[1].state) || 'not_run';
        t.appendChild(el('tr', null, el('td', {text: g[0]}),
                         el('td', {cls: 'state ' + st, text: st === 'not_run' ? 'not run' : st.toUpperCase()}),
                         el('td', {text: (g[1] && g[1].detail) || ''})));
      });
      body.appendChild(t);
    }
    var msgs = [];
    (ENV.errors || []).forEach(function (e) { msgs.push(el('li', {cls: 'error', text: e.message})); });
    (ENV.warnings || []).forEach(function (w) { msgs.push(el('li', {cls: 'warning', text: 'warning: ' + w.message})); });
    if (msgs.length) body.appendChild(el('ul', {cls: 'msgs'}, msgs));
    root.appendChild(s);
  }

  /* --- header and figures -------------------------------------------------------- */

  function renderHeader(root) {
    var model = R.model || (DATA.title || '');
    /* gate: "a,b"; compare, bisect: names; assign: target objects */
    var targets = Array.isArray(R.targets)
      ? R.targets.map(function (t) { return typeof t === 'string' ? t : t.name; }).join(',')
      : (R.target || '');
    root.appendChild(el('h1', {text: 'convgate ' + CMD + ' report'}));
    root.appendChild(el('p', {cls: 'meta'},
      el('span', {cls: 'mono', text: model}),
      targets ? ' \u2014 target ' : '', targets ? el('b', {text: targets}) : '',
      ' \u2014 convgate ' + (ENV.version || '')));
  }

  function renderFigures(root) {
    if (!G) return;
    var figs = el('div', {cls: 'figures'});
    function fig(value, label, id) {
      var b = el('b', {text: value});
      if (id) b.id = id;
      figs.appendChild(el('div', {cls: 'figure'}, b, el('span', {text: label})));
    }
    var total = G.nodes.length;
    fig(String(total), 'nodes', 'node-count');
    if (G.placed) {
      var counts = {};
      G.nodes.forEach(function (n) { counts[n.owner] = (counts[n.owner] || 0) + 1; });
      ownerNames.forEach(function (o) { if (counts[o]) fig(counts[o] + '/' + total, 'on ' + o); });
      fig(String(counts.cpu || 0), 'on CPU');
      if (G.lowering && G.lowering !== 'none')
        fig(String(counts.removed || 0), removedBy() + ' (\u2018' + G.lowering + '\u2019, ' + G.nodes_partitioned + ' nodes partitioned)', 'removed-count');
      fig(String(G.partitions.length), G.partitions.length === 1 ? 'partition' : 'partitions');
      fig(String(G.boundaries.length), G.boundaries.length === 1 ? 'boundary crossing' : 'boundary crossings');
    }
    if (G.timed) {
      var ms = 0, on = 0;
      G.nodes.forEach(function (n) { var t = num(n.ms); if (isFinite(t)) { ms += t; if (n.owner && n.owner !== 'cpu') on += t; } });
      fig(fmt(ms, 3) + ' ms', 'reference time (one run)');
      if (G.placed && ms > 0) fig((100 * on / ms).toFixed(1) + '%', 'of reference time on target');
    }
    root.querySelector('#verdict > div:last-child').appendChild(figs);
  }

  /* --- the graph: groups ------------------------------------------------------------ */

  /* Collapsible groups: each partition, and each run of consecutive CPU
   * nodes (topological order), cut every CPU_RUN_MAX nodes. A run is an
   * interval of the order, so collapsing it never hides a path that leaves
   * and re-enters it through a node outside. */
  var CPU_RUN_MAX = 48;
  var groups = [];          /* {id, kind, label, owner, nodes: [index], expanded} */
  var groupOf = [];         /* node index -> group index, or -1 */
  var producer = {};        /* tensor -> node index */
  var ledger = {};          /* tensors of the boundary ledger */
  /* Constant nodes: every input is a weight (neither a graph input nor a
   * node's output) or the output of a constant node; Constant itself. They
   * feed weights to the whole graph, and drawn they would tie every layer
   * to the top, so they are hidden until asked for (the table lists them). */
  var constNode = [];
  var constCount = 0;
  function buildGroups() {
    var n = G.nodes.length;
    for (var i = 0; i < n; i++) groupOf.push(-1);
    G.nodes.forEach(function (nd, i) { nd.outputs.forEach(function (t) { if (t && !(t in producer)) producer[t] = i; }); });
    var isInput = {};
    (G.inputs || []).forEach(function (t) { isInput[t] = true; });
    G.nodes.forEach(function (nd, v) {
      var c = nd.inputs.every(function (t) {
        if (!t) return true;
        if (t in producer) return producer[t] < v && constNode[producer[t]];
        return !(t in isInput);
      });
      constNode.push(c);
      if (c) constCount++;
    });
    G.partitions.forEach(function (p) {
      var gi = groups.length;
      groups.push({id: 'p' + p.id, kind: 'partition', owner: p.target, nodes: p.nodes.slice(),
                   label: 'partition #' + p.id + ' \u00b7 ' + p.target});
      p.nodes.forEach(function (v) { groupOf[v] = gi; });
    });
    var run = null;
    for (var v = 0; v < n; v++) {
      if (constNode[v] && groupOf[v] < 0) continue; /* drawn alone, when shown */
      if (G.nodes[v].owner === 'removed' && groupOf[v] < 0) { run = null; continue; } /* not the CPU's: drawn alone */
      var cpuLike = groupOf[v] < 0;
      if (cpuLike && run && run.nodes.length < CPU_RUN_MAX) {
        run.nodes.push(v);
      } else if (cpuLike) {
        run = {id: 'c' + groups.length, kind: 'cpu', owner: G.nodes[v].owner, nodes: [v], label: ''};
        groups.push(run);
      } else {
        run = null;
        continue;
      }
      groupOf[v] = groups.length - 1;
    }
    groups.forEach(function (g) {
      if (g.kind === 'cpu') g.label = (G.placed ? 'CPU' : 'nodes') + ' #' + g.nodes[0] + '\u2013' + g.nodes[g.nodes.length - 1];
      var hist = {};
      g.nodes.forEach(function (v) { hist[G.nodes[v].op] = (hist[G.nodes[v].op] || 0) + 1; });
      g.ops = Object.keys(hist).sort(function (a, b) { return hist[b] - hist[a]; })
        .slice(0, 3).map(function (k) { return k + ' \u00d7' + hist[k]; }).join(', ');
    });
    /* a single-node CPU group is just its node */
    groups.forEach(function (g) { g.expanded = g.nodes.length === 1; });
    (G.boundaries || []).forEach(function (b) { ledger[b.tensor] = true; });
  }

  /* --- the graph: layout --------------------------------------------------------------- */

  var NODE_H = 34, RANK_GAP = 30, X_GAP = 16, MARGIN = 24;
  var charW = 6.6;

  /* The visible items and edges for the current expansion state. */
  function visibleGraph() {
    var items = [], itemOfNode = [], itemOfGroup = {};
    function addItem(it) { it.idx = items.length; items.push(it); return it; }
    (G.inputs || []).forEach(function (name, k) {
      addItem({kind: 'io', io: 'in', name: name, key: -1 - (G.inputs.length - k) / (G.inputs.length + 1)});
    });
    var inputItem = {};
    items.forEach(function (it) { inputItem[it.name] = it.idx; });
    for (var v = 0; v < G.nodes.length; v++) {
      var gi = groupOf[v], g = groups[gi];
      if (constNode[v] && !state.showConstants) { itemOfNode.push(null); continue; }
      if (g && !g.expanded) {
        if (!(gi in itemOfGroup)) itemOfGroup[gi] = addItem({kind: 'group', group: gi, key: v}).idx;
        itemOfNode.push(itemOfGroup[gi]);
      } else {
        itemOfNode.push(addItem({kind: 'node', node: v, key: v}).idx);
      }
    }
    var outputItem = {};
    (G.outputs || []).forEach(function (name, k) {
      outputItem[name] = addItem({kind: 'io', io: 'out', name: name, key: G.nodes.length + 1 + k}).idx;
    });
    var edges = {}, list = [];
    function link(a, b, tensor, crossing) {
      if (a === b || a == null || b == null) return;
      var id = a + '>' + b, e = edges[id];
      if (!e) { e = edges[id] = {from: a, to: b, tensors: [], crossing: false}; list.push(e); }
      if (e.tensors.length < 6 && e.tensors.indexOf(tensor) < 0) e.tensors.push(tensor);
      e.crossing = e.crossing || crossing;
    }
    /* an edge is a crossing when its tensor is in the boundary ledger and
     * its two ends are on different sides (the ledger's crossings, no more) */
    function partOf(v) { return v == null || v < 0 ? -1 : G.nodes[v].partition; }
    G.nodes.forEach(function (nd, c) {
      nd.inputs.forEach(function (t) {
        if (!t) return;
        if (t in producer) {
          var p = producer[t];
          link(itemOfNode[p], itemOfNode[c], t, (t in ledger) && partOf(p) !== partOf(c));
        } else if (t in inputItem) {
          link(inputItem[t], itemOfNode[c], t, (t in ledger) && partOf(c) >= 0);
        }
      });
    });
    Object.keys(outputItem).forEach(function (name) {
      if (name in producer) link(itemOfNode[producer[name]], outputItem[name], name, (name in ledger) && partOf(producer[name]) >= 0);
      else if (name in inputItem) link(inputItem[name], outputItem[name], name, false);
    });
    return {items: items, edges: list, itemOfNode: itemOfNode,
            hidden: state.showConstants ? 0 : constCount};
  }

  function itemText(it) {
    if (it.kind === 'io') return [(it.io === 'in' ? 'input ' : 'output ') + truncate(it.name, 40), ''];
    if (it.kind === 'group') {
      var g = groups[it.group];
      return [g.label + ' \u00b7 ' + plural(g.nodes.length, 'node'), g.ops];
    }
    var nd = G.nodes[it.node];
    return [nd.op, truncate(nd.name, 34)];
  }

  function layout(vg) {
    var items = vg.items, n = items.length;
    var outs = [], ins = [];
    for (var i = 0; i < n; i++) { outs.push([]); ins.push([]); }
    vg.edges.forEach(function (e) {
      e.back = items[e.from].key > items[e.to].key;
      if (e.back) return;
      outs[e.from].push(e.to);
      ins[e.to].push(e.from);
    });
    /* ranks: longest path over forward edges, in key order */
    var order = items.map(function (it) { return it.idx; })
      .sort(function (a, b) { return items[a].key - items[b].key; });
    var rank = new Array(n).fill(0);
    order.forEach(function (v) { ins[v].forEach(function (u) { if (rank[u] + 1 > rank[v]) rank[v] = rank[u] + 1; }); });
    /* graph outputs sit at the bottom of their producer's next rank */
    var maxRank = 0;
    rank.forEach(function (r) { if (r > maxRank) maxRank = r; });
    var layers = [];
    for (var r = 0; r <= maxRank; r++) layers.push([]);
    order.forEach(function (v) { layers[rank[v]].push(v); });
    /* widths */
    items.forEach(function (it) {
      var t = itemText(it);
      var len = Math.max(t[0].length, (t[1] || '').length);
      it.w = Math.max(it.kind === 'io' ? 70 : 86, Math.min(300, Math.ceil(len * charW) + 18));
      it.h = it.kind === 'group' ? NODE_H + 12 : (it.kind === 'io' ? 24 : NODE_H);
    });
    /* barycentre sweeps: order within a layer by the mean position of the
     * neighbours in the layers already placed */
    var pos = new Array(n).fill(0);
    function setPos(layer) { layer.forEach(function (v, i) { pos[v] = i; }); }
    layers.forEach(setPos);
    function sweep(down) {
      for (var k = down ? 1 : layers.length - 2; down ? k < layers.length : k >= 0; k += down ? 1 : -1) {
        var layer = layers[k], bary = {};
        layer.forEach(function (v) {
          var nb = down ? ins[v] : outs[v];
          bary[v] = nb.length ? nb.reduce(function (s, u) { return s + pos[u]; }, 0) / nb.length : pos[v];
        });
        layer.sort(function (a, b) { return bary[a] - bary[b] || items[a].key - items[b].key; });
        setPos(layer);
      }
    }
    if (n < 6000) for (var it = 0; it < 3; it++) { sweep(true); sweep(false); }
    /* x: each item wants the centre of its parents, then overlaps are pushed right */
    var x = new Array(n).fill(0);
    var width = 0;
    layers.forEach(function (layer) {
      var want = layer.map(function (v) {
        var p = ins[v];
        if (!p.length) return null;
        return p.reduce(function (s, u) { return s + x[u]; }, 0) / p.length;
      });
      var cursor = MARGIN;
      layer.forEach(function (v, i) {
        var w = items[v].w, c = want[i] == null ? cursor + w / 2 : Math.max(want[i], cursor + w / 2);
        x[v] = c;
        cursor = c + w / 2 + X_GAP;
      });
      if (cursor > width) width = cursor;
    });
    var y = 0, yOf = [];
    layers.forEach(function (layer) {
      var h = 0;
      layer.forEach(function (v) { h = Math.max(h, items[v].h); });
      yOf.push(y + MARGIN);
      y += h + RANK_GAP;
    });
    items.forEach(function (it) { it.x = x[it.idx]; it.y = yOf[rank[it.idx]]; it.rank = rank[it.idx]; });
    /* room on the right for the "first divergent" mark and bowed edges */
    return {width: width + MARGIN + 140, height: y + MARGIN};
  }

  /* --- the graph: drawing -------------------------------------------------------------- */

  var state = {selected: -1, matches: {}};
  var firstDivergentNode = -1;

  function drawGraph() {
    var box = document.getElementById('graph-box');
    var t0 = performance.now();
    var vg = visibleGraph();
    var size = layout(vg);
    var zoom = state.zoom || 1;
    var root = svg('svg', {width: Math.ceil(size.width * zoom), height: Math.ceil(size.height * zoom),
                           viewBox: '0 0 ' + Math.ceil(size.width) + ' ' + Math.ceil(size.height),
                           role: 'img', 'aria-label': 'model graph'});
    var gGroups = svg('g', {}), gEdges = svg('g', {}), gNodes = svg('g', {});
    var labelRight = 0;
    root.appendChild(gGroups); root.appendChild(gEdges); root.appendChild(gNodes);
    var items = vg.items;

    /* expanded groups of several nodes: an outline around their nodes */
    groups.forEach(function (g, gi) {
      if (!g.expanded || g.nodes.length < 2) return;
      var x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
      g.nodes.forEach(function (v) {
        if (vg.itemOfNode[v] == null) return;
        var it = items[vg.itemOfNode[v]];
        x0 = Math.min(x0, it.x - it.w / 2); x1 = Math.max(x1, it.x + it.w / 2);
        y0 = Math.min(y0, it.y); y1 = Math.max(y1, it.y + it.h);
      });
      if (x0 === Infinity) return;
      var colour = g.kind === 'partition' ? colourOf(g.owner) : '#78909c';
      var grp = svg('g', {'class': 'group', 'data-group': g.id});
      grp.appendChild(svg('rect', {'class': 'box', x: x0 - 8, y: y0 - 18, width: x1 - x0 + 16, height: y1 - y0 + 26,
                                   rx: 8, fill: colour, stroke: colour}));
      /* the label sits right of the box's top edge, clear of the edges
       * that enter the box from above */
      var text = g.label + ' \u00b7 ' + plural(g.nodes.length, 'node') + ' \u25B4 collapse';
      var label = svg('text', {x: x1 + 12, y: y0 - 4, 'font-size': 11, fill: colour, text: text});
      labelRight = Math.max(labelRight, x1 + 12 + text.length * 6.2);
      label.addEventListener('click', function () { g.expanded = false; drawGraph(); });
      grp.appendChild(label);
      gGroups.appendChild(grp);
    });

    vg.edges.forEach(function (e) {
      var a = items[e.from], b = items[e.to];
      var x1 = a.x, y1 = a.y + a.h, x2 = b.x, y2 = b.y, d;
      if (e.back) {
        var bend = Math.max(a.w, b.w) / 2 + 30;
        d = 'M' + (x1 + a.w / 2) + ',' + (a.y + a.h / 2) + ' C' + (x1 + bend + 40) + ',' + (a.y + a.h / 2) +
            ' ' + (x2 + bend + 40) + ',' + (b.y + b.h / 2) + ' ' + (x2 + b.w / 2) + ',' + (b.y + b.h / 2);
      } else if (b.rank - a.rank > 1) {
        /* skips ranks: bow out to the right of both ends instead of
         * running through the nodes in between */
        var side = Math.max(x1 + a.w / 2, x2 + b.w / 2) + 18 + 6 * Math.min(8, b.rank - a.rank);
        d = 'M' + x1 + ',' + y1 + ' C' + side + ',' + (y1 + 30) + ' ' + side + ',' + (y2 - 30) + ' ' + x2 + ',' + y2;
      } else {
        var my = (y1 + y2) / 2;
        d = 'M' + x1 + ',' + y1 + ' C' + x1 + ',' + my + ' ' + x2 + ',' + my + ' ' + x2 + ',' + y2;
      }
      var path = svg('path', {'class': 'edge' + (e.back ? ' back' : '') + (e.crossing ? ' crossing' : ''), d: d});
      path.appendChild(svg('title', {text: (e.crossing ? 'boundary crossing: ' : '') + e.tensors.join(', ')}));
      gEdges.appendChild(path);
      if (e.crossing && !e.back) {
        /* at the consumer's end, where the tensor enters the other side */
        var mark = svg('circle', {'class': 'cross-mark', cx: x2, cy: y2 - 5, r: 4});
        mark.appendChild(svg('title', {text: 'boundary crossing: ' + e.tensors.join(', ')}));
        gEdges.appendChild(mark);
      }
    });

    items.forEach(function (it) {
      var txt = itemText(it), g, fill, textFill = '#fff', title;
      if (it.kind === 'io') {
        g = svg('g', {'class': 'io'});
        g.appendChild(svg('rect', {x: it.x - it.w / 2, y: it.y, width: it.w, height: it.h, rx: 12}));
        g.appendChild(svg('text', {x: it.x, y: it.y + 16, 'text-anchor': 'middle', 'font-size': 11, fill: '#37474f', text: txt[0]}));
        g.appendChild(svg('title', {text: (it.io === 'in' ? 'graph input ' : 'graph output ') + it.name}));
        gNodes.appendChild(g);
        return;
      }
      if (it.kind === 'group') {
        var grp = groups[it.group];
        fill = grp.kind === 'partition' ? colourOf(grp.owner) : colourOf(G.placed ? 'cpu' : null);
        g = svg('g', {'class': 'node collapsed', 'data-group': grp.id});
        title = grp.label + ': ' + plural(grp.nodes.length, 'node') + ' (' + grp.ops + '). Click to expand.';
        g.addEventListener('click', function () { grp.expanded = true; drawGraph(); });
      } else {
        var nd = G.nodes[it.node];
        fill = nodeColour(nd);
        if (nd.owner === 'removed' && !nd.runs_on) textFill = '#37474f';
        var cls = 'node';
        if (nd.error && !nd.error.pass) cls += ' diverged';
        if (state.matches[it.node]) cls += ' match';
        if (state.selected === it.node) cls += ' selected';
        if (nd.owner === 'removed') cls += ' removed';
        g = svg('g', {'class': cls, 'data-node': it.node});
        title = nd.op + ' \u2018' + nd.name + '\u2019 \u2014 ' + nodeOwnerLabel(nd) +
                (nd.reason ? '\n' + nodeWhy(nd) : '') +
                (nd.ms != null ? '\nreference ' + fmt(num(nd.ms), 3) + ' ms' : '') +
                (nd.error ? '\nmax_abs ' + fmt(nd.error.max_abs) + ' at \u2018' + nd.error.tensor + '\u2019' : '');
        (function (v) { g.addEventListener('click', function () { select(v, false); }); })(it.node);
      }
      var rect = svg('rect', {x: it.x - it.w / 2, y: it.y, width: it.w, height: it.h, rx: 5, fill: fill});
      if (it.kind === 'node' && G.nodes[it.node].owner === 'removed') rect.setAttribute('stroke-dasharray', '4 3');
      g.appendChild(rect);
      g.appendChild(svg('text', {x: it.x, y: it.y + 14, 'text-anchor': 'middle', 'font-size': 12, 'font-weight': 600,
                                 fill: textFill, text: txt[0]}));
      if (txt[1]) g.appendChild(svg('text', {x: it.x, y: it.y + 27, 'text-anchor': 'middle', 'font-size': 10,
                                             fill: textFill, 'fill-opacity': 0.9, text: txt[1]}));
      if (it.kind === 'node' && it.node === firstDivergentNode)
        g.appendChild(svg('text', {x: it.x + it.w / 2 + 4, y: it.y + 14, 'font-size': 11, 'font-weight': 700,
                                   fill: '#c62828', text: '\u25C0 first divergent'}));
      g.appendChild(svg('title', {text: title}));
      gNodes.appendChild(g);
    });
    if (labelRight > size.width) {
      size.width = labelRight + MARGIN;
      root.setAttribute('width', Math.ceil(size.width * zoom));
      root.setAttribute('viewBox', '0 0 ' + Math.ceil(size.width) + ' ' + Math.ceil(size.height));
    }
    box.textContent = '';
    box.appendChild(root);
    state.lastItems = vg;
    window.__cgGraph = {items: items.length, edges: vg.edges.length, hidden: vg.hidden,
                        crossings: vg.edges.filter(function (e) { return e.crossing; }).length,
                        layoutMs: performance.now() - t0};
    return vg;
  }

  /* Expands the node's group, redraws, scrolls to it and marks its row. */
  function select(v, scrollGraph) {
    state.selected = v;
    if (constNode[v] && !state.showConstants) {
      state.showConstants = true;
      var box = document.getElementById('show-constants');
      if (box) box.checked = true;
    }
    var gi = groupOf[v];
    if (gi >= 0 && !groups[gi].expanded) groups[gi].expanded = true;
    var vg = drawGraph();
    if (scrollGraph && vg.itemOfNode[v] != null) {
      var it = vg.items[vg.itemOfNode[v]], box = document.getElementById('graph-box');
      var z = state.zoom || 1;
      box.scrollTo({left: Math.max(0, it.x * z - box.clientWidth / 2), top: Math.max(0, it.y * z - box.clientHeight / 2)});
    }
    var rows = document.querySelectorAll('#nodes-table tbody tr');
    rows.forEach(function (tr) { tr.classList.toggle('hl', Number(tr.getAttribute('data-node')) === v); });
    var row = document.querySelector('#nodes-table tbody tr[data-node="' + v + '"]');
    if (row && !scrollGraph) row.scrollIntoView({block: 'nearest'});
  }

  function renderGraph(root) {
    var s = section('graph', 'Graph');
    var search = el('input', {type: 'search', id: 'search', placeholder: 'search nodes by name or op', 'aria-label': 'search nodes'});
    var results = el('div', {id: 'search-results'});
    var count = el('span', {cls: 'muted', id: 'search-count'});
    function setAll(expanded) { groups.forEach(function (g) { g.expanded = expanded || g.nodes.length === 1; }); drawGraph(); }
    function zoomBy(f) { state.zoom = Math.max(0.15, Math.min(3, (state.zoom || 1) * f)); drawGraph(); }
    s.appendChild(el('div', {cls: 'toolbar'}, search,
      el('button', {text: 'expand all', id: 'expand-all', on: {click: function () { setAll(true); }}}),
      el('button', {text: 'collapse all', id: 'collapse-all', on: {click: function () { setAll(false); }}}),
      constCount ? el('label', {title: 'nodes that only compute weights (Constant, Identity of a weight, ...)'},
        el('input', {type: 'checkbox', id: 'show-constants', on: {change: function (e) { state.showConstants = e.target.checked; drawGraph(); }}}),
        ' show ' + plural(constCount, 'constant node')) : null,
      el('button', {text: '\u2212', title: 'zoom out', on: {click: function () { zoomBy(1 / 1.25); }}}),
      el('button', {text: '+', title: 'zoom in', on: {click: function () { zoomBy(1.25); }}}),
      count));
    s.appendChild(results);
    var legend = el('div', {cls: 'legend'});
    var owners = G.placed ? ownerNames.concat(['cpu']) : [null];
    if (G.nodes.some(function (n) { return n.owner === 'removed'; })) owners.push('removed');
    owners.forEach(function (o) {
      var i = el('i', {cls: o === 'removed' ? 'removed' : ''});
      i.style.background = o === 'removed' ? '#fff' : colourOf(o);
      legend.appendChild(el('span', null, i, o === 'removed'
        ? removedBy() + ' (dashed; filled with the colour of where it runs when fused into another node)'
        : ownerLabel(o)));
    });
    if (G.placed) legend.appendChild(el('span', null, el('i', {cls: 'crossing'}), 'boundary crossing'));
    legend.appendChild(el('span', {cls: 'muted', text: 'Click a partition to expand it; click its label to collapse.'}));
    s.appendChild(legend);
    s.appendChild(el('div', {id: 'graph-box'}));
    root.appendChild(s);

    function onSearch() {
      var q = search.value.trim().toLowerCase();
      state.matches = {};
      results.textContent = '';
      var hits = [];
      if (q) G.nodes.forEach(function (nd, i) {
        if (nd.name.toLowerCase().indexOf(q) >= 0 || nd.op.toLowerCase().indexOf(q) >= 0) hits.push(i);
      });
      hits.forEach(function (i) { state.matches[i] = true; });
      count.textContent = q ? plural(hits.length, 'match', 'matches') : '';
      hits.slice(0, 40).forEach(function (i) {
        results.appendChild(el('button', {text: G.nodes[i].op + ' ' + truncate(G.nodes[i].name, 50),
                                          on: {click: function () { select(i, true); }}}));
      });
      if (hits.length > 40) results.appendChild(el('span', {cls: 'muted', text: '\u2026 and ' + (hits.length - 40) + ' more'}));
      filterTable(q);
      if (hits.length === 1) select(hits[0], true); else drawGraph();
    }
    var timer = 0;
    search.addEventListener('input', function () { clearTimeout(timer); timer = setTimeout(onSearch, 150); });
    search.addEventListener('keydown', function (e) {
      if (e.key === 'Enter') { clearTimeout(timer); onSearch(); var k = Object.keys(state.matches); if (k.length) select(Number(k[0]), true); }
    });
  }

  /* --- the per-node table ------------------------------------------------------------------ */

  function filterTable(q) {
    document.querySelectorAll('#nodes-table tbody tr').forEach(function (tr) {
      var v = Number(tr.getAttribute('data-node')), nd = G.nodes[v];
      tr.hidden = !!q && nd.name.toLowerCase().indexOf(q) < 0 && nd.op.toLowerCase().indexOf(q) < 0;
    });
  }

  function renderTable(root) {
    var s = section('nodes', 'Nodes');
    var cols = [
      {h: '#', num: true, get: function (v) { return v; }},
      {h: 'node', get: function (v, nd) { return nd.name; }, mono: true},
      {h: 'op', get: function (v, nd) { return nd.op; }},
      {h: 'owner', get: function (v, nd) { return nodeOwnerLabel(nd); }, swatch: true},
      {h: 'partition', num: true, get: function (v, nd) { return nd.partition >= 0 ? nd.partition : ''; }},
      {h: 'refusal (rule: reason) or removal', get: function (v, nd) { return nodeWhy(nd); }},
      {h: 'reference ms', num: true, get: function (v, nd) { return nd.ms == null ? '' : num(nd.ms); }, fmt: function (x) { return x === '' ? '' : fmt(x, 3); }},
      {h: 'max_abs error', num: true, err: true, get: function (v, nd) { return nd.error ? num(nd.error.max_abs) : ''; }, fmt: function (x) { return x === '' ? '' : fmt(x); }},
      {h: 'at tensor', mono: true, get: function (v, nd) { return nd.error ? nd.error.tensor + (nd.error.source === 'bisect' ? '' : ' (output)') : ''; }}
    ];
    var table = el('table', {cls: 'data', id: 'nodes-table'});
    var head = el('tr');
    var tbody = el('tbody');
    var sortCol = 0, sortDir = 1;
    cols.forEach(function (c, ci) {
      head.appendChild(el('th', {text: c.h, title: 'sort', on: {click: function () {
        sortDir = sortCol === ci ? -sortDir : 1; sortCol = ci; fill();
      }}}));
    });
    table.appendChild(el('thead', null, head));
    table.appendChild(tbody);
    function fill() {
      var idx = G.nodes.map(function (nd, i) { return i; });
      var c = cols[sortCol];
      idx.sort(function (a, b) {
        var x = c.get(a, G.nodes[a]), y = c.get(b, G.nodes[b]);
        if (x === y) return a - b;
        if (x === '') return 1;
        if (y === '') return -1;
        if (typeof x === 'number' && typeof y === 'number') {
          if (isNaN(x)) return -sortDir; if (isNaN(y)) return sortDir;
          return (x - y) * sortDir;
        }
        return String(x).localeCompare(String(y)) * sortDir;
      });
      var frag = document.createDocumentFragment();
      idx.forEach(function (v) {
        var nd = G.nodes[v];
        var tr = el('tr', {'data-node': v, 'data-owner': nd.owner == null ? '' : nd.owner, cls: nd.error && !nd.error.pass ? 'bad' : ''});
        cols.forEach(function (c) {
          var raw = c.get(v, nd), td = el('td', {cls: (c.num ? 'num' : '') + (c.mono ? ' mono' : '') + (c.err ? ' err' : '') + (c.swatch ? ' owner' : '')});
          if (c.swatch) { var sw = el('span', {cls: 'swatch' + (nd.owner === 'removed' ? ' removed' : '')}); sw.style.background = nodeColour(nd); td.appendChild(sw); }
          td.appendChild(document.createTextNode(c.fmt ? c.fmt(raw) : String(raw)));
          tr.appendChild(td);
        });
        tr.addEventListener('click', function () { select(v, true); document.getElementById('graph').scrollIntoView({block: 'start'}); });
        frag.appendChild(tr);
      });
      tbody.textContent = '';
      tbody.appendChild(frag);
      var q = document.getElementById('search');
      if (q && q.value) filterTable(q.value.trim().toLowerCase());
    }
    fill();
    s.appendChild(el('p', {cls: 'muted', text: plural(G.nodes.length, 'node') + ' in topological order' +
      (G.timed ? '; reference time from one run of the reference runtime' : '') +
      (G.tensors.length ? '; errors at ' + plural(G.tensors.length, 'tensor') + ' measured' : '') + '.'}));
    s.appendChild(el('div', {cls: 'table-wrap'}, table));
    root.appendChild(s);
  }

  /* --- compared outputs ----------------------------------------------------------------------- */

  function histogram(h, tolerance) {
    if (!h || !h.counts) return null;
    var counts = h.counts, edges = h.edges, n = counts.length;
    var W = 30, H = 90, top = 14, max = 0;
    counts.forEach(function (c) { if (c > max) max = c; });
    var root = svg('svg', {'class': 'hist', width: n * W + 10, height: H + top + 30, role: 'img', 'aria-label': '|diff| histogram'});
    var atol = tolerance ? num(tolerance.atol) : NaN;
    counts.forEach(function (c, i) {
      var bh = max ? Math.max(c ? 2 : 0, Math.round(H * c / max)) : 0;
      /* bins are decades: label each by its exponent */
      var lo = num(edges[i]), exp = Math.round(Math.log10(i === 0 ? num(edges[1]) : lo));
      var label = (i === 0 ? '<' : (i === n - 1 ? '\u2265' : '')) + exp;
      var bar = svg('rect', {'class': 'bar' + (isFinite(atol) && lo >= atol && c ? ' over' : ''),
                             x: 5 + i * W + 3, y: top + H - bh, width: W - 6, height: bh});
      bar.appendChild(svg('title', {text: (i === 0 ? '|diff| < ' + fmt(num(edges[1])) : '|diff| \u2265 ' + fmt(lo) +
                                           (i + 1 < n ? ' and < ' + fmt(num(edges[i + 1])) : '')) + ': ' + c}));
      root.appendChild(bar);
      if (c) root.appendChild(svg('text', {x: 5 + i * W + W / 2, y: top + H - bh - 3, 'text-anchor': 'middle', text: String(c)}));
      root.appendChild(svg('text', {x: 5 + i * W + W / 2, y: top + H + 12, 'text-anchor': 'middle', text: label}));
    });
    root.appendChild(svg('text', {x: 5, y: top + H + 26, text: 'log10 |target \u2212 reference| (red: at or above atol)'}));
    return root;
  }

  function metricsBox(o, title) {
    var box = el('div', {cls: 'output'});
    box.appendChild(el('h3', null, title || o.name || o.tensor, ' ',
      el('span', {cls: 'badge ' + (o.pass ? 'pass' : 'fail'), text: o.pass ? 'pass' : 'FAIL'})));
    var kv = el('table', {cls: 'kv'});
    function row(k, v) { kv.appendChild(el('tr', null, el('td', {text: k}), el('td', {cls: 'mono', text: v}))); }
    row('mismatches', fmt(o.mismatches) + ' / ' + fmt(o.count));
    row('max_abs', fmt(o.max_abs)); row('max_rel', fmt(o.max_rel)); row('mean_abs', fmt(o.mean_abs));
    if (o.rmse != null) row('rmse', fmt(o.rmse));
    row('cosine', fmt(o.cosine, 9));
    if (o.max_ulp != null) row('max_ulp', fmt(o.max_ulp));
    if (o.nan_ref != null) row('NaN ref/target', o.nan_ref + ' / ' + o.nan_target);
    if (o.inf_ref != null) row('Inf ref/target', o.inf_ref + ' / ' + o.inf_target);
    if (o.tolerance) row('tolerance', 'atol ' + fmt(o.tolerance.atol) + ', rtol ' + fmt(o.tolerance.rtol));
    if (o.worst) row('worst', (o.worst.sample ? 'sample ' + o.worst.sample + ' ' : '') + 'at ' + o.worst.position +
                     ': ref ' + fmt(o.worst.ref, 9) + ', target ' + fmt(o.worst.target, 9));
    if (o.verdict && o.verdict.verdict) row('verdict', o.verdict.verdict + ', ' + fmt(num(o.verdict.ratio)) + 'x the ' + o.verdict.against + ' floor');
    /* an fp16 target with two device classes: each class's category and ratio */
    (o.device_classes || []).forEach(function (c) {
      if (c && c.verdict) row(c.name, c.verdict.verdict + ', ' + fmt(num(c.verdict.ratio)) + 'x the ' +
                                (c.verdict.against === 'fp32' ? 'fp32' : c.accumulate === 'fp16' ? 'fp16-sums' : 'fp16 storage') + ' floor');
    });
    if (o.shape_mismatch) row('shape', 'MISMATCH');
    if (o.dtype_mismatch) row('dtype', 'MISMATCH');
    box.appendChild(kv);
    var hs = histogram(o.hist, o.tolerance);
    if (hs) { box.appendChild(el('div', {cls: 'muted', text: 'elements by |target \u2212 reference|, one bar a decade'})); box.appendChild(hs); }
    return box;
  }

  function renderOutputs(root) {
    var outs = CMD === 'gate' ? (R.matches && R.matches.outputs) : (CMD === 'compare' ? R.outputs : null);
    var s;
    if (outs && outs.length) {
      s = section('outputs', 'Outputs');
      var meta = CMD === 'gate' ? plural(R.matches.samples, 'sample') + (R.samples_source ? ' (' + R.samples_source + ')' : '')
                                : plural(R.samples, 'sample') + (R.reduced_precision ? '; reduced precision' : '');
      s.appendChild(el('p', {cls: 'muted', text: 'Merged over ' + meta + '.'}));
      var wrap = el('div', {cls: 'outputs'});
      outs.forEach(function (o) { wrap.appendChild(metricsBox(o)); });
      s.appendChild(wrap);
      root.appendChild(s);
    }
    var b = CMD === 'bisect' ? R : (CMD === 'gate' && R.matches ? R.matches.bisect : null);
    if (b) {
      s = section('bisect', 'Bisection');
      s.appendChild(el('p', null, plural(b.watched, 'tensor') + ' watched, ' + b.compared + ' compared, ' + b.divergent +
        ' beyond tolerance' + (b.sample ? ' on sample ' + b.sample : '') + (b.device_class ? ', as ' + b.device_class : '') + (b.refined_in_partition ? '; traced inside the partition' : '') + '.'));
      var w2 = el('div', {cls: 'outputs'});
      if (b.first_divergent) {
        var f = b.first_divergent;
        w2.appendChild(metricsBox(f, 'first divergent: \u2018' + f.tensor + '\u2019 (' + f.op_type + ' \u2018' + f.node + '\u2019' + (f.placed_on ? ' on ' + f.placed_on : '') + ')'));
      }
      if (b.last_matching) w2.appendChild(metricsBox(b.last_matching, 'last matching: \u2018' + b.last_matching.tensor + '\u2019 (' + b.last_matching.op_type + ')'));
      s.appendChild(w2);
      if (b.triage) s.appendChild(el('p', null, el('b', {text: 'triage: ' + b.triage}), b.triage_note ? ' \u2014 ' + b.triage_note : ''));
      root.appendChild(s);
    } else if (CMD === 'gate' && R.matches && R.matches.bisect_error) {
      s = section('bisect', 'Bisection');
      s.appendChild(el('p', {text: 'bisection could not run: ' + R.matches.bisect_error}));
      root.appendChild(s);
    }
  }

  /* --- boundaries and targets --------------------------------------------------------------- */

  function renderBoundaries(root) {
    if (!G || !G.placed || !G.boundaries.length) return;
    var s = section('boundaries', 'Boundary crossings');
    var t = el('table', {cls: 'data'});
    t.appendChild(el('thead', null, el('tr', null, ['tensor', 'from', 'to', 'dtype', 'shape', 'bytes', 'conversion'].map(function (h) { return el('th', {text: h}); }))));
    var tb = el('tbody');
    G.boundaries.forEach(function (b) {
      var conv = [b.layout_conversion ? 'layout' : '', b.dtype_conversion ? 'dtype' : ''].filter(Boolean).join(', ');
      tb.appendChild(el('tr', null, el('td', {cls: 'mono', text: b.tensor}),
        el('td', {text: b.from < 0 ? 'CPU' : '#' + b.from + ' ' + b.from_target}),
        el('td', {text: b.to < 0 ? 'CPU' : '#' + b.to + ' ' + b.to_target}),
        el('td', {text: b.dtype || '?'}), el('td', {cls: 'mono', text: b.shape ? '[' + b.shape.join(',') + ']' : '?'}),
        el('td', {cls: 'num', text: b.bytes == null ? '?' : String(b.bytes)}), el('td', {text: conv})));
    });
    t.appendChild(tb);
    s.appendChild(el('div', {cls: 'table-wrap'}, t));
    root.appendChild(s);
  }

  function renderTargets(root) {
    if (!G || !G.targets || !G.targets.length) return;
    var s = section('targets', 'Targets: where the rules come from');
    G.targets.forEach(function (t) {
      var d = el('div', {cls: 'target'});
      d.appendChild(el('h3', null, el('span', {cls: 'swatch', style: null}), t.name + ' ',
        el('span', {cls: 'muted', text: '(' + t.kind + (t.runtime ? ', ' + t.runtime : '') + ', ' + t.version + '; fallback ' + t.fallback + ', ' + t.precision + ')'})));
      d.querySelector('.swatch').style.background = colourOf(t.name);
      if (t.kind === 'profiled') d.appendChild(el('p', {cls: 'muted', text: 'A prediction from a cited capability profile, not a run.'}));
      if (t.sources && t.sources.length) {
        d.appendChild(el('div', {text: 'Sources:'}));
        d.appendChild(el('ul', {cls: 'plain'}, t.sources.map(function (src) {
          return el('li', null, el('span', {cls: 'mono', text: src.repo + ' ' + src.path}), ' @ ' + src.revision + (src.note ? ' \u2014 ' + src.note : ''));
        })));
      } else if (t.source) {
        d.appendChild(el('p', null, 'Source: ', el('span', {cls: 'mono', text: t.source})));
      }
      d.appendChild(el('div', {text: 'Not modelled:'}));
      d.appendChild(el('ul', {cls: 'plain'}, (t.not_modelled && t.not_modelled.length ? t.not_modelled : ['(nothing listed)']).map(function (x) {
        return el('li', {text: x});
      })));
      s.appendChild(d);
    });
    root.appendChild(s);
  }

  /* --- the page ----------------------------------------------------------------------------- */

  function render() {
    var t0 = performance.now();
    var main = el('main');
    renderHeader(main);
    renderVerdict(main);
    if (G) {
      buildGroups();
      (G.nodes || []).forEach(function (nd, i) {
        var f = (CMD === 'bisect' ? R : (R.matches && R.matches.bisect)) || null;
        if (f && f.first_divergent && nd.outputs.indexOf(f.first_divergent.tensor) >= 0) firstDivergentNode = i;
      });
      /* small graphs open expanded; large ones collapsed by partition */
      var small = G.nodes.length <= 200;
      groups.forEach(function (g) { g.expanded = small || g.nodes.length === 1; });
      if (firstDivergentNode >= 0 && groupOf[firstDivergentNode] >= 0) groups[groupOf[firstDivergentNode]].expanded = true;
      renderFigures(main);
      renderGraph(main);
    }
    renderOutputs(main);
    if (G) renderTable(main);
    renderBoundaries(main);
    renderTargets(main);
    document.body.appendChild(main);
    if (G) drawGraph();
    window.__cgRenderMs = performance.now() - t0;
    document.body.setAttribute('data-rendered', 'true');
  }

  render();
})();
