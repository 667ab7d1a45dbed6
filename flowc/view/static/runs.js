// The runs list of `flowc view`: built from /api/runs with textContent only (a run's
// names and reasons are data, never markup).
(function () {
  'use strict';
  function cell(row, text, cls) {
    var td = document.createElement('td');
    td.textContent = text === null || text === undefined ? '' : String(text);
    if (cls) { td.className = cls; }
    row.appendChild(td);
    return td;
  }
  function show(runs) {
    var body = document.querySelector('#runs tbody');
    body.textContent = '';
    document.getElementById('runs-empty').hidden = runs.length > 0;
    runs.forEach(function (run) {
      var row = document.createElement('tr');
      row.dataset.run = run.run_id;
      var first = cell(row, '');
      var link = document.createElement('a');
      link.href = '/run/' + encodeURIComponent(run.run_id);
      link.textContent = run.run_id;
      first.appendChild(link);
      if (run.forked_from) {
        var from = document.createElement('div');
        from.className = 'muted forked';
        from.textContent = 'forked from ' + run.forked_from.run_id + ' at turn ' + run.forked_from.turn;
        first.appendChild(from);
      }
      cell(row, run.flow);
      cell(row, (run.created_at || '').slice(0, 19));
      var status = run.status;
      if (status === 'stalled' && run.stalled_on) { status += ' (waits for ' + run.stalled_on + ')'; }
      cell(row, status, 'status ' + run.status);
      cell(row, run.holder);
      cell(row, run.turns);
      // (a run the list cannot read: what it cannot read, in the close reason's place)
      cell(row, run.error || run.close_reason, run.error ? 'error' : '');
      var broken = run.property_violations || [];
      cell(row, broken.length ? 'violated: ' + broken.join(', ') : '', broken.length ? 'violated' : '');
      body.appendChild(row);
    });
  }
  function load() {
    fetch('/api/runs', {credentials: 'same-origin'}).then(function (r) {
      if (!r.ok) { throw new Error('the server answered ' + r.status); }
      return r.json();
    }).then(show).catch(function (err) {
      var p = document.getElementById('runs-error');
      p.hidden = false;
      p.textContent = 'Cannot list the runs: ' + err.message;
    });
  }
  load();
  setInterval(load, 5000);
})();
