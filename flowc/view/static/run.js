// A run's page of `flowc view`: the diagram (the SVG `flowc render` draws of the run's
// stored graph) with the checker's findings marked on it and listed, the transcript
// streaming over server-sent events, and a timeline.
// Everything a run holds (names, texts, tool arguments, context values) is put on the
// page with textContent: never parsed as markup.
(function () {
  'use strict';
  var runId = decodeURIComponent(location.pathname.slice('/run/'.length));
  var api = '/api/run/' + encodeURIComponent(runId);
  var turns = [];          // the turns received, turns[n - 1] is turn n
  var contexts = [];       // contexts[n]: the context after turn n (0: the initial one)
  var initial = null;      // the state before the first turn
  var selected = 0;        // the turn shown (0: before the first)
  var follow = true;       // show each new turn as it comes
  var source = null;       // the EventSource
  var ended = false;
  var pending = [];        // turns received, not yet drawn (drawn once per frame)
  var diagramReady = false;
  var countLabels = {};    // edge id -> its <text> of counts
  var el = function (id) { return document.getElementById(id); };

  function text(node, value) { node.textContent = value === null || value === undefined ? '' : String(value); }
  function json(value) { return JSON.stringify(value, null, 2); }

  // ── the diagram ──────────────────────────────────────────────────────────
  var SVG_ELEMENTS = {svg: 1, g: 1, title: 1, path: 1, polygon: 1, polyline: 1, ellipse: 1,
    circle: 1, text: 1, a: 1, tspan: 1, defs: 1, line: 1, rect: 1};
  function clean(node) {
    // only drawing elements and attributes: no script, no handler, no link
    Array.prototype.slice.call(node.children).forEach(function (child) {
      if (!SVG_ELEMENTS[child.localName]) { child.remove(); return; }
      Array.prototype.slice.call(child.attributes).forEach(function (attr) {
        var name = attr.name.toLowerCase();
        if (name.indexOf('on') === 0 || name === 'href' || name === 'xlink:href' || name === 'style') {
          child.removeAttribute(attr.name);
        }
      });
      clean(child);
    });
  }
  function loadDiagram() {
    // the findings are asked for once the server has answered for the diagram (or
    // refused it): their first working out does not compete with the drawing's
    fetch(api + '/diagram.svg', {credentials: 'same-origin'}).finally(loadFindings).then(function (r) {
      return r.text().then(function (body) { return {ok: r.ok, body: body}; });
    }).then(function (answer) {
      var box = el('diagram');
      if (!answer.ok) { text(el('diagram-note'), 'No diagram: ' + answer.body); return; }
      var doc = new DOMParser().parseFromString(answer.body, 'image/svg+xml');
      var svg = doc.documentElement;
      if (svg.localName !== 'svg') { text(el('diagram-note'), 'No diagram: the drawing is not SVG'); return; }
      clean(svg);
      box.textContent = '';
      box.appendChild(document.importNode(svg, true));
      diagramReady = true;
      showTurn(selected);
      markFindings();
    }).catch(function (err) { text(el('diagram-note'), 'No diagram: ' + err.message); });
  }
  function countLabel(edgeId) {
    if (countLabels[edgeId]) { return countLabels[edgeId]; }
    var g = document.getElementById(edgeId);
    var path = g && g.querySelector('path');
    if (!path) { return null; }
    var p = path.getPointAtLength(path.getTotalLength() / 2);
    var label = document.createElementNS('http://www.w3.org/2000/svg', 'text');
    label.setAttribute('class', 'count');
    label.setAttribute('x', String(p.x + 4));
    label.setAttribute('y', String(p.y - 4));
    g.appendChild(label);
    countLabels[edgeId] = label;
    return label;
  }
  // what the diagram shows: each edge's count (taken ones only), the current node and
  // the selected edge; selecting a turn changes only what differs (a large diagram's
  // hundreds of edges are not all touched on each selection)
  var edgeEls = null;      // edge id -> its <g>, once the diagram is in
  var drawn = {counts: {}, node: null, edge: null};
  function setCount(edgeId, count) {
    var g = edgeEls[edgeId];
    if (!g) { return; }
    g.classList.toggle('taken', count > 0);
    if (count > 0 || countLabels[edgeId]) {
      var label = countLabel(edgeId);
      if (label) { label.textContent = count > 0 ? '×' + count : ''; }
    }
    g.dataset.count = String(count);
  }
  function mark(id, cls, before) {
    if (before === id) { return id; }
    var old = before && document.getElementById(before);
    if (old) { old.classList.remove(cls); }
    var g = id && document.getElementById(id);
    if (g) { g.classList.add(cls); }
    return id;
  }
  function drawDiagram(n) {
    if (!diagramReady) { return; }
    if (edgeEls === null) {
      edgeEls = {};
      document.querySelectorAll('#diagram g.edge').forEach(function (g) {
        edgeEls[g.id] = g;
        g.dataset.count = '0';
      });
    }
    var counts = {};
    for (var i = 0; i < n; i++) {
      var edge = turns[i].edge;
      if (edge) { counts[edge] = (counts[edge] || 0) + 1; }
    }
    var shown = drawn.counts;
    Object.keys(shown).forEach(function (id) { if (!counts[id]) { setCount(id, 0); } });
    Object.keys(counts).forEach(function (id) { if (counts[id] !== shown[id]) { setCount(id, counts[id]); } });
    drawn.counts = counts;
    var turn = n > 0 ? turns[n - 1] : null;
    drawn.node = mark((turn ? turn.node : initial && initial.node) || null, 'current', drawn.node);
    drawn.edge = mark((turn && turn.edge) || null, 'selected', drawn.edge);
  }

  // ── the checker's findings (`flowc render --check`'s marks) ─────────────────
  var findings = null;     // the answer of /findings, once it came
  var MARKS = {dead: 1, trap: 1, loop: 1, violation: 1};
  function inDiagram(id) {
    var g = document.getElementById(id);
    return g && g.closest('#diagram svg') ? g : null;
  }
  function markFindings() {
    if (!diagramReady || !findings) { return; }
    Object.keys(findings.marks).forEach(function (id) {
      var mark = findings.marks[id];
      var g = inDiagram(id);
      if (g && MARKS[mark]) { g.classList.add('mark-' + mark); }
    });
    document.body.dataset.findingsMarked = 'true';
  }
  function focusFinding(f, on) {
    f.nodes.concat(f.edges).forEach(function (id) {
      var g = inDiagram(id);
      if (g) { g.classList.toggle('finding-focus', on); }
    });
  }
  function findingEntry(f) {
    var li = document.createElement('li');
    li.className = 'finding ' + f.severity;
    li.dataset.code = String(f.code);
    var where = f.line !== null && f.line !== undefined ? ' (line ' + f.line + ')'
      : f.json_path ? ' (' + f.json_path + ')' : '';
    line(li, 'finding-head', f.severity + '[' + f.code + ']: ' + f.message + where);
    f.notes.forEach(function (note) { line(li, 'finding-note', '= note: ' + note); });
    if (f.fix) { line(li, 'finding-note', '= help: ' + f.fix); }
    if (f.nodes.length || f.edges.length) {
      li.classList.add('marks');
      li.addEventListener('mouseenter', function () { focusFinding(f, true); });
      li.addEventListener('mouseleave', function () { focusFinding(f, false); });
    }
    return li;
  }
  function counted(n, one) { return n + ' ' + one + (n === 1 ? '' : 's'); }
  function showFindings(answer) {
    findings = answer;
    var c = answer.counts;
    var tally = counted(c.error, 'error') + ', ' + counted(c.warning, 'warning') + ', ' + c.info + ' info';
    var said;
    if (answer.status === 'stopped') {
      said = 'Not checked: the checker stopped before exploring the graph (' + tally + ')';
    } else if (answer.status === 'partial') {
      said = 'Partial: the checker stopped at its bound of ' + answer.max_states +
        ' states, so what it did not reach is not checked (' + tally + ')';
    } else if (answer.clean) {
      said = 'Clean: every run of the stored graph was checked, no error or warning (' + c.info + ' info)';
    } else {
      said = 'Every run of the stored graph was checked: ' + tally;
    }
    var status = el('findings-status');
    text(status, said);
    status.className = answer.clean ? 'clean' : answer.status === 'complete' ? '' : 'partial';
    document.body.dataset.findings = answer.clean ? 'clean' : answer.status;
    var frag = document.createDocumentFragment();
    answer.findings.forEach(function (f) { frag.appendChild(findingEntry(f)); });
    el('findings-list').textContent = '';
    el('findings-list').appendChild(frag);
    markFindings();
  }
  function loadFindings() {
    fetch(api + '/findings', {credentials: 'same-origin'}).then(function (r) {
      // an answer that is not JSON (a proxy's or the server's plain error) says its text
      return r.text().then(function (raw) {
        var body;
        try { body = JSON.parse(raw); } catch (e) { body = {error: raw.slice(0, 200)}; }
        return {ok: r.ok, body: body};
      });
    }).then(function (answer) {
      if (!answer.ok) { throw new Error(answer.body && answer.body.error ? answer.body.error : 'the server refused'); }
      showFindings(answer.body);
    }).catch(function (err) {
      text(el('findings-status'), 'No findings: ' + err.message);
      el('findings-status').className = 'partial';
      document.body.dataset.findings = 'failed';
    });
  }

  // ── the transcript ───────────────────────────────────────────────────────
  function line(parent, cls, value) {
    var div = document.createElement('div');
    div.className = cls;
    text(div, value);
    parent.appendChild(div);
    return div;
  }
  // a silent round as `flowc log` shows it: who, and the context it wrote
  function silentText(round) {
    var changes = [];
    Object.keys(round.context.set).forEach(function (key) {
      changes.push(key + ' = ' + JSON.stringify(round.context.set[key]));
    });
    round.context.delete.forEach(function (key) { changes.push(key + ' cleared'); });
    return round.speaker + ': silent round (no text, no routing, no turn)' +
      (changes.length ? '; context: ' + changes.join(', ') : '');
  }
  function entry(turn) {
    var li = document.createElement('li');
    li.id = 'turn-' + turn.n;
    li.dataset.n = String(turn.n);
    var head = document.createElement('div');
    var num = document.createElement('span');
    num.className = 'num';
    text(num, turn.n);
    var who = document.createElement('span');
    who.className = 'who';
    text(who, turn.speaker);
    head.appendChild(num);
    head.appendChild(who);
    li.appendChild(head);
    // the silent rounds before it (context writes no message carried): no turn's
    (turn.silent_before || []).forEach(function (round) { line(li, 'silent', silentText(round)); });
    line(li, 'text', turn.text);
    turn.tool_calls.forEach(function (call) {
      line(li, 'tools', 'calls ' + call.name + ' ' + JSON.stringify(call.args || {}));
    });
    var changes = [];
    Object.keys(turn.context_set).forEach(function (key) {
      changes.push(key + ' = ' + JSON.stringify(turn.context_set[key]));
    });
    turn.context_delete.forEach(function (key) { changes.push(key + ' cleared'); });
    if (changes.length) { line(li, 'ctx', 'context: ' + changes.join(', ')); }
    var next = turn.closes !== null ? 'closes: ' + turn.closes : 'next: ' + turn.next_speaker;
    line(li, 'rule', turn.decided_by + ' → ' + next);
    // the properties the turn broke, as `flowc log` shows them
    (turn.property_violations || []).forEach(function (v) {
      var claim = v.claim ? ' (`' + v.claim + '`)' : '';
      line(li, 'violated', 'violated: property ' + v.property + claim + ': ' + v.why);
    });
    if (turn.property_violations) { li.dataset.violated = 'true'; }
    return li;
  }
  // the transcript's entries go in blocks (an <ol> each) of BLOCK_TURNS: the browser
  // skips the style, layout and paint of a block out of view (content-visibility), so
  // a long run's thousands of entries do not make every frame drawn walk them all
  var BLOCK_TURNS = 25;
  var block = null;        // the last block, while it has room
  function addEntries(batch) {
    var box = el('transcript');
    var i = 0;
    while (i < batch.length) {
      if (block === null || block.childElementCount >= BLOCK_TURNS) {
        block = document.createElement('ol');
        block.className = 'block';
        block.start = batch[i].n;
        box.appendChild(block);
      }
      var frag = document.createDocumentFragment();
      var room = BLOCK_TURNS - block.childElementCount;
      for (var k = 0; k < room && i < batch.length; k++, i++) { frag.appendChild(entry(batch[i])); }
      block.appendChild(frag);
    }
  }
  function flush(backlog) {
    var batch = pending;
    pending = [];
    if (batch.length) {
      addEntries(batch);
      el('turn-slider').max = String(turns.length);
      text(el('turn-total'), turns.length);
    }
    // a backlog's batch only adds its entries: the newest turn is selected once it is in
    if (follow && !backlog && selected !== turns.length) { select(turns.length, true); }
  }
  var scheduled = false;
  function schedule() {
    if (scheduled) { return; }
    scheduled = true;
    requestAnimationFrame(function () { scheduled = false; flush(false); });
  }

  // ── the selected turn ────────────────────────────────────────────────────
  function showTurn(n) {
    // its why asked for first: the answer comes while the page draws the rest
    loadWhy(n);
    var turn = n > 0 ? turns[n - 1] : null;
    text(el('turn-shown'), n);
    text(el('state-turn'), n);
    text(el('state-speaker'), turn ? turn.speaker : '');
    text(el('state-next'), turn ? (turn.closes !== null ? '(closed: ' + turn.closes + ')' : turn.next_speaker)
      : initial ? initial.next_speaker : '');
    text(el('state-count'), turn ? turn.turn_count : 0);
    text(el('state-decided'), turn ? turn.decided_by : 'start');
    var why = '';
    if (turn) {
      why = (turn.rule !== null ? 'fired: ' : 'decided by: ') + turn.decided_by;
    }
    text(el('why-recorded'), why);
    text(el('state-context'), json(contexts[n] || {}));
    drawDiagram(n);
    hideScenario();
    resetFork();
  }

  // ── why and why not (`flowc log RUN --why N`) ───────────────────────────
  var WHY_PARTS = ['why-routing', 'why-note', 'why-fired', 'why-checked-head', 'why-checked',
    'why-others', 'why-default', 'why-cap', 'why-values', 'why-disagrees'];
  var whyBusy = false;     // an answer is awaited
  var whyWanted = 0;       // the turn whose why the page wants next
  function conditionLine(c) {
    if (c.holds === null) { return '`' + c.text + '` was not evaluated (an earlier part decided)'; }
    return '`' + c.text + '` ' + (c.holds ? 'held' : 'was false') + (c.because ? ': ' + c.because : '');
  }
  function conditionList(c) {
    var ul = document.createElement('ul');
    var li = document.createElement('li');
    var span = document.createElement('span');
    span.className = 'why-cond';
    text(span, conditionLine(c));
    li.appendChild(span);
    c.parts.forEach(function (part) { li.appendChild(conditionList(part)); });
    ul.appendChild(li);
    return ul;
  }
  function ruleBlock(rule, cls) {
    var div = document.createElement('div');
    div.className = 'why-rule ' + cls;
    div.dataset.rule = String(rule.rule);
    var label = document.createElement('div');
    label.className = 'why-label';
    text(label, rule.label);
    div.appendChild(label);
    div.appendChild(conditionList(rule.condition));
    return div;
  }
  function defaultPhrase(d) {
    return d.next_speaker === null ? 'would have ended the run: ' + JSON.stringify(d.close_reason || '')
      : 'would have chosen ' + d.next_speaker;
  }
  function showWhy(n, w) {
    WHY_PARTS.forEach(function (id) { el(id).textContent = ''; });
    var routed = w.kind === 'handoff' || w.kind === 'finish';
    if (routed) {
      var r = w.routing || {};
      var tool = String(r.tool || w.kind);
      text(el('why-routing'), w.kind === 'handoff'
        ? "the turn's tool " + tool + ' handed off to ' + w.next_speaker + ': a hand-off bypasses every rule'
        : "the turn's tool " + tool + ' finished the run (' + JSON.stringify(w.closes || '') +
          '): a finish bypasses every rule');
      text(el('why-note'), w.fired ? 'without it, this rule would have fired:'
        : 'without it, no rule would have fired: the default ' + defaultPhrase(w['default']));
    }
    if (w.fired) { el('why-fired').appendChild(ruleBlock(w.fired, 'fired')); }
    if (w.checked.length) {
      text(el('why-checked-head'), w.kind === 'default' ? 'no rule of this speaker fired:'
        : w.kind === 'rule' ? 'higher-priority rules that did not fire:'
        : w.fired ? 'the rules checked before it, none of which would have fired:'
        : "the speaker's rules, none of which would have fired:");
      w.checked.forEach(function (rule) { el('why-checked').appendChild(ruleBlock(rule, 'false')); });
    } else if (w.kind === 'default' && !w.fired) {
      text(el('why-checked-head'), "no rule can fire on this speaker's turn");
    }
    if (w.other_speakers.length) {
      text(el('why-others'), 'not checked: ' + (w.other_speakers.length === 1 ? 'rule ' : 'rules ') +
        w.other_speakers.join(', ') + ' (for other speakers only)');
    }
    if (w.kind !== 'default' && !(routed && !w.fired)) {
      text(el('why-default'), 'the default (' + w['default'].target + ') ' + defaultPhrase(w['default']));
    }
    if (w.close_kind === 'max_turns') {
      text(el('why-cap'), 'the run then reached max_turns ' + w.max_turns + ' (turn ' + w.turn_count +
        ') and closed: "max_turns"');
    }
    var values = el('why-values');
    Object.keys(w.context).forEach(function (key) {
      var dt = document.createElement('dt');
      var dd = document.createElement('dd');
      text(dt, key);
      text(dd, JSON.stringify(w.context[key]));
      values.appendChild(dt);
      values.appendChild(dd);
    });
    if (!w.agrees) {
      text(el('why-disagrees'), 'evaluating the rules again does not reach the decision the transcript ' +
        'shows (a custom condition that reads more than the turn and the context?)');
    }
    el('why').dataset.turn = String(n);
  }
  function loadWhy(n) {
    whyWanted = n;
    if (n === 0) {
      WHY_PARTS.forEach(function (id) { el(id).textContent = ''; });
      el('why').dataset.turn = '0';
      return;
    }
    if (whyBusy) { return; }  // asked for once the answer awaited is in
    whyBusy = true;
    el('why').dataset.turn = '';
    fetch(api + '/why/' + n, {credentials: 'same-origin'}).then(function (r) {
      return r.json().then(function (body) { return {ok: r.ok, body: body}; });
    }).then(function (answer) {
      if (whyWanted !== n) { return; }
      if (!answer.ok) {
        WHY_PARTS.forEach(function (id) { el(id).textContent = ''; });
        text(el('why-disagrees'), 'No explanation: ' + answer.body.error);
        el('why').dataset.turn = String(n);
        return;
      }
      showWhy(n, answer.body);
    }).catch(function (err) {
      if (whyWanted === n) { text(el('why-disagrees'), 'No explanation: ' + err.message); }
    }).then(function () {
      whyBusy = false;
      if (whyWanted !== n) { loadWhy(whyWanted); }
    });
  }

  // ── the scenario block of turns 1 to N (`flowc log RUN --scenario-upto N`) ──
  function hideScenario() {
    el('scenario').hidden = true;
    el('scenario').textContent = '';
    el('scenario').dataset.turn = '';
    el('scenario-copy').hidden = true;
    text(el('scenario-note'), '');
    el('scenario-show').disabled = selected === 0;
  }
  el('scenario-show').addEventListener('click', function () {
    var n = selected;
    if (n === 0) { return; }
    text(el('scenario-note'), 'writing…');
    fetch(api + '/scenario/' + n, {credentials: 'same-origin'}).then(function (r) {
      return r.text().then(function (body) { return {ok: r.ok, body: body}; });
    }).then(function (answer) {
      if (selected !== n) { return; }
      if (!answer.ok) {
        var error = answer.body;
        try { error = JSON.parse(answer.body).error; } catch (e) { /* the body as it is */ }
        text(el('scenario-note'), 'No scenario: ' + error);
        return;
      }
      text(el('scenario-note'), '');
      var pre = el('scenario');
      pre.textContent = answer.body;
      pre.dataset.turn = String(n);
      pre.hidden = false;
      el('scenario-copy').hidden = false;
    }).catch(function (err) { text(el('scenario-note'), 'No scenario: ' + err.message); });
  });
  el('scenario-copy').addEventListener('click', function () {
    var block = el('scenario').textContent;
    navigator.clipboard.writeText(block).then(function () {
      text(el('scenario-note'), 'copied');
    }, function () {
      // no clipboard (not allowed here): select the block, for Ctrl-C
      var range = document.createRange();
      range.selectNodeContents(el('scenario'));
      var chosen = window.getSelection();
      chosen.removeAllRanges();
      chosen.addRange(range);
      text(el('scenario-note'), 'selected: copy it with Ctrl-C');
    });
  });
  // ── a new run from the selected turn (`flowc fork RUN N`): the only POST ──
  var forkTurn = -1;       // the turn the fork control was last set up for
  function resetFork() {
    if (forkTurn === selected) { return; }  // a new live turn: the answer shown stays
    forkTurn = selected;
    text(el('fork-turn'), selected);
    text(el('fork-note'), '');
    el('fork-link').hidden = true;
  }
  el('fork-start').addEventListener('click', function () {
    var n = selected;
    var doc;
    try { doc = JSON.parse(el('fork-script').value || '{}'); } catch (e) {
      text(el('fork-note'), 'The script is not JSON: ' + e.message);
      return;
    }
    el('fork-start').disabled = true;
    el('fork-link').hidden = true;
    text(el('fork-note'), 'starting…');
    fetch(api + '/fork/' + n, {
      method: 'POST',
      credentials: 'same-origin',
      headers: {'Content-Type': 'application/json'},
      body: JSON.stringify(doc)
    }).then(function (r) {
      return r.text().then(function (body) { return {ok: r.ok, body: body}; });
    }).then(function (answer) {
      var found = null;
      try { found = JSON.parse(answer.body); } catch (e) { /* the body as it is */ }
      if (!answer.ok && !(found && found.run_id)) {
        text(el('fork-note'), 'No new run: ' + (found && found.error ? found.error : answer.body));
        return;
      }
      var ended = found.close_reason !== null && found.close_reason !== undefined
        ? 'closed: ' + found.close_reason
        : found.stalled_on ? 'stalled on ' + found.stalled_on : 'open';
      var count = typeof found.turns === 'number' ? found.turns + ' turns, ' : '';
      text(el('fork-note'), 'new run from turn ' + n + ' (' + count + ended + ')' +
        (found.error ? ': ' + found.error : '') + ': ');
      var link = el('fork-link');
      link.href = '/run/' + encodeURIComponent(found.run_id);
      text(link, found.run_id);
      link.hidden = false;
    }).catch(function (err) {
      text(el('fork-note'), 'No new run: ' + err.message);
    }).then(function () { el('fork-start').disabled = false; });
  });
  var selectedEntry = null;  // the transcript's entry marked selected
  function select(n, fromLive) {
    selected = n;
    showTurn(n);
    el('turn-slider').value = String(n);
    // (the entry selected is kept: a query of the transcript's thousands of entries for
    // it took a millisecond or two of each selection)
    if (selectedEntry) { selectedEntry.classList.remove('selected'); }
    var li = selectedEntry = document.getElementById('turn-' + n);
    if (li) {
      li.classList.add('selected');
      if (!fromLive || follow) { li.scrollIntoView({block: 'nearest'}); }
    }
  }
  el('turn-slider').addEventListener('input', function () {
    follow = Number(this.value) === turns.length;
    el('follow').checked = follow;
    select(Number(this.value), false);
  });
  el('follow').addEventListener('change', function () {
    follow = this.checked;
    if (follow) { select(turns.length, true); }
  });
  el('transcript').addEventListener('click', function (ev) {
    var li = ev.target.closest('li');
    if (!li) { return; }
    follow = false;
    el('follow').checked = false;
    select(Number(li.dataset.n), false);
  });

  // ── the stream ───────────────────────────────────────────────────────────
  function status(s) {
    var node = el('run-status');
    text(node, s.status + (s.status === 'stalled' && s.stalled_on ? ' (waits for ' + s.stalled_on + ')' : ''));
    node.className = 'status ' + s.status;
    text(el('run-holder'), s.holder ? 'written by ' + s.holder : '');
    text(el('run-silent'), (s.silent_after || []).map(silentText).join('\n'));
    if (s.close_reason !== null && s.close_reason !== undefined) {
      text(el('run-end'), 'closed: ' + s.close_reason + ' after ' + s.turns + ' turns');
    }
  }
  function add(turn) {
    turns.push(turn);
    contexts[turn.n] = turn.context !== undefined ? turn.context : contexts[turn.n - 1];
    pending.push(turn);
  }
  function receive(turn) {
    if (turn.n <= turns.length) { return; }  // had it already (never shown twice)
    if (turn.n !== turns.length + 1) {       // a gap: ask again from the last turn had
      reconnect();
      return;
    }
    add(turn);
    // drawn once per frame; a long run's backlog, whose events come faster than frames,
    // is drawn every 500 turns as it arrives
    if (pending.length >= 500) { flush(true); }
    schedule();
  }
  function connect() {
    // a first connection asks from the last turn the page has (0, or after a refusal)
    source = new EventSource(api + '/events?after=' + turns.length);
    source.addEventListener('open', function () { text(el('run-connection'), ''); });
    source.addEventListener('turn', function (ev) { receive(JSON.parse(ev.data)); });
    source.addEventListener('status', function (ev) { status(JSON.parse(ev.data)); });
    source.addEventListener('end', function (ev) {
      var end = JSON.parse(ev.data);
      ended = true;
      source.close();
      // every turn received is drawn before the page says the run ended (a page behind
      // others gets no animation frame to draw them in)
      flush(false);
      document.body.dataset.ended = 'true';
      status({status: 'closed', turns: end.turns, close_reason: end.close_reason});
    });
    // a damaged record, or one a plugin fails on now: the server says where (which
    // plugin), and ends the stream; the page shows it in place of the run's status
    ['damaged', 'plugin-failed'].forEach(function (word) {
      source.addEventListener(word, function (ev) {
        ended = true;
        source.close();
        flush(false);
        var node = el('run-status');
        text(node, word);
        node.className = 'status ' + word;
        text(el('run-end'), JSON.parse(ev.data).error);
      });
    });
    source.addEventListener('error', function () {
      if (ended || this !== source) { return; }  // a stream let go since
      text(el('run-connection'), '(reconnecting…)');
      // the browser tries again by itself (with Last-Event-ID) unless the server
      // refused the stream; then this page asks again, from its last turn
      if (source.readyState === EventSource.CLOSED) { setTimeout(reconnect, 1000); }
    });
  }
  // a long run's backlog (but its last turns) comes in one answer before the stream
  // opens: lines of JSON, each an array of turns, drawn a line at a time with a task
  // between two (the page answers and draws its first turns while the rest comes);
  // thousands of events cost the page far more to take in. The stream then brings the
  // turns after the last one had; any failure here leaves them all to it. The newest
  // turn had is selected once the backlog is in (not each page of it on the way).
  function loadBacklog() {
    var taking = true;
    function take(line) {
      if (!taking || !line) { return; }
      var page = JSON.parse(line);
      // (an object, not a page of turns: the run is damaged there; the stream says so)
      if (!Array.isArray(page)) { taking = false; return; }
      page.forEach(function (turn) {
        if (turn.n === turns.length + 1) { add(turn); } else if (turn.n > turns.length) { taking = false; }
      });
      flush(true);
    }
    return fetch(api + '/turns?after=' + turns.length, {credentials: 'same-origin'}).then(function (r) {
      if (!r.ok || !r.body) { return null; }
      var reader = r.body.getReader();
      var decoder = new TextDecoder();
      var rest = '';
      function next() {
        return reader.read().then(function (got) {
          if (got.done) { take(rest + decoder.decode()); return null; }
          var lines = (rest + decoder.decode(got.value, {stream: true})).split('\n');
          rest = lines.pop();
          lines.forEach(take);
          return new Promise(function (done) { setTimeout(done, 0); }).then(next);
        });
      }
      return next();
    }).catch(function () { taking = false; });
  }
  function reconnect() {
    if (source) { source.close(); }
    source = null;
    if (!ended && !document.hidden) { connect(); }
  }
  // a hidden page (another tab in front) lets its stream go, and reads on from its last
  // turn once shown again: a browser opens at most 6 connections to a server, and each
  // open stream holds one, so a 7th page of the same server would get nothing
  var loaded = false;      // the run's summary is in (the stream may be opened)
  document.addEventListener('visibilitychange', function () {
    if (!loaded || ended) { return; }
    if (document.hidden) {
      if (source) { source.close(); }
      source = null;
    } else if (!source) {
      connect();
    }
  });

  fetch(api, {credentials: 'same-origin'}).then(function (r) {
    if (!r.ok) { throw new Error('the server answered ' + r.status); }
    return r.json();
  }).then(function (meta) {
    initial = meta.initial;
    contexts[0] = initial.context;
    text(el('run-flow'), meta.flow);
    text(el('run-id'), runId);
    if (meta.forked_from) {
      var parent = el('run-parent');
      parent.href = '/run/' + encodeURIComponent(meta.forked_from.run_id);
      text(parent, meta.forked_from.run_id);
      text(el('run-parent-turn'), meta.forked_from.turn);
      el('run-forked').hidden = false;
    }
    document.title = 'flowc view: ' + runId;
    showTurn(0);
    loadDiagram();
    return loadBacklog();
  }).then(function () {
    flush(false);
    loaded = true;
    if (!document.hidden) { connect(); }
  }).catch(function (err) { text(el('run-connection'), 'Cannot load the run: ' + err.message); });
})();
