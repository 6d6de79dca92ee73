/**
 * The dashboard's browser script, served as /dashboard/assets/dashboard.js.
 * It is a string (not a .js file beside the sources) so that it exists the
 * same under tsx and in the compiled dist/, which tsc would not copy it to.
 *
 * What it does, and nothing more:
 * - polls the page's JSON endpoint (`<main data-poll>`) every few seconds
 *   and binds the view model into the server-rendered markup: `data-bind`
 *   (text), `data-bind-title`, `data-bind-href` (only /dashboard/ links),
 *   `data-bind-value` (meters), `data-bind-state` (a `data-state` attribute
 *   for colours), `data-scope` (children bind to a part of the view model),
 *   `data-list` (rows cloned from the list's <template>) and
 *   `data-empty-for` (the "nothing yet" line of a list);
 * - draws `data-chart` containers with uPlot (money as bars on the left
 *   axis, counts as lines on the right, times in UTC like the rollups);
 * - submits a filter form when one of its `data-autosubmit` fields changes;
 * - copies a new key's secret (`data-copy` names the element holding it) and
 *   asks before a `data-confirm` form is posted (the forms work without it).
 * Values only ever reach the page as text or attributes (never as HTML), and
 * the numbers arrive formatted by the server; only chart axes format here.
 */
export const CLIENT_SCRIPT = String.raw`(function () {
  'use strict';

  document.querySelectorAll('[data-autosubmit]').forEach(function (field) {
    field.addEventListener('change', function () { if (field.form) field.form.submit(); });
  });

  document.querySelectorAll('form[data-confirm]').forEach(function (form) {
    form.addEventListener('submit', function (event) {
      if (!window.confirm(form.getAttribute('data-confirm'))) event.preventDefault();
    });
  });

  document.querySelectorAll('button[data-copy]').forEach(function (button) {
    button.addEventListener('click', function () {
      var source = document.getElementById(button.getAttribute('data-copy'));
      if (!source) return;
      var value = source.textContent;
      function done() { button.textContent = 'Copied'; button.setAttribute('data-copied', ''); }
      function fallback() {
        var range = document.createRange();
        range.selectNodeContents(source);
        var selection = window.getSelection();
        selection.removeAllRanges();
        selection.addRange(range);
        if (document.execCommand('copy')) done(); else button.textContent = 'Selected: press Ctrl+C';
      }
      if (navigator.clipboard && navigator.clipboard.writeText) navigator.clipboard.writeText(value).then(done, fallback);
      else fallback();
    });
  });

  var main = document.querySelector('main[data-poll]');
  if (!main) return;
  var endpoint = main.getAttribute('data-poll');
  var interval = Number(main.getAttribute('data-poll-ms')) || 2500;
  var live = document.querySelector('[data-live]');
  var charts = {};
  var timer = null;

  function lookup(value, path) {
    var parts = path.split('.');
    for (var i = 0; i < parts.length; i += 1) {
      if (value === null || value === undefined) return undefined;
      value = value[parts[i]];
    }
    return value;
  }

  function text(value) {
    return value === null || value === undefined ? '' : String(value);
  }

  function bindElement(el, data) {
    var path = el.getAttribute('data-bind');
    if (path !== null) {
      var next = text(lookup(data, path));
      if (el.textContent !== next) el.textContent = next;
    }
    path = el.getAttribute('data-bind-title');
    if (path !== null) el.title = text(lookup(data, path));
    path = el.getAttribute('data-bind-href');
    if (path !== null) {
      var href = lookup(data, path);
      if (typeof href === 'string' && href.indexOf('/dashboard/') === 0) el.setAttribute('href', href);
    }
    path = el.getAttribute('data-bind-value');
    if (path !== null) {
      var number = Number(lookup(data, path));
      el.value = isFinite(number) ? number : 0;
    }
    path = el.getAttribute('data-bind-state');
    if (path !== null) el.setAttribute('data-state', text(lookup(data, path)));
  }

  function bindChildren(node, data) {
    for (var child = node.firstElementChild; child; child = child.nextElementSibling) {
      if (child.tagName === 'TEMPLATE') continue;
      bindElement(child, data);
      var list = child.getAttribute('data-list');
      var scope = child.getAttribute('data-scope');
      if (list !== null) renderList(child, list, lookup(data, list));
      else if (scope !== null) {
        var scoped = lookup(data, scope);
        if (scoped !== null && scoped !== undefined) bindChildren(child, scoped);
      } else bindChildren(child, data);
    }
  }

  function renderList(container, path, items) {
    if (!Array.isArray(items)) return;
    var template = null;
    for (var child = container.firstElementChild; child; child = child.nextElementSibling) {
      if (child.tagName === 'TEMPLATE') template = child;
    }
    if (!template || !template.content.firstElementChild) return;
    container.querySelectorAll(':scope > [data-item]').forEach(function (row) { row.remove(); });
    var fragment = document.createDocumentFragment();
    items.forEach(function (item) {
      var row = template.content.firstElementChild.cloneNode(true);
      row.setAttribute('data-item', '');
      bindElement(row, item);
      bindChildren(row, item);
      fragment.appendChild(row);
    });
    container.appendChild(fragment);
    document.querySelectorAll('[data-empty-for="' + path + '"]').forEach(function (note) { note.hidden = items.length > 0; });
  }

  function dollars(value) {
    if (value === null || value === undefined) return '';
    var abs = Math.abs(value);
    if (abs > 0 && abs < 0.01) return '$' + Number(value.toPrecision(4)).toString();
    return '$' + value.toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 });
  }

  function counted(value) {
    return value === null || value === undefined ? '' : Math.round(value).toLocaleString('en-US');
  }

  var COLORS = ['#2f6fdf', '#1f9d55', '#d0342c', '#c98a00'];

  function chartOptions(el, spec) {
    var hasUsd = spec.series.some(function (s) { return s.unit === 'usd'; });
    var hasCount = spec.series.some(function (s) { return s.unit === 'count'; });
    var series = [{ label: 'Time (UTC)' }];
    spec.series.forEach(function (s, i) {
      var color = COLORS[i % COLORS.length];
      var isUsd = s.unit === 'usd';
      series.push({
        label: s.label,
        scale: s.unit,
        stroke: color,
        width: isUsd ? 0 : 1.5,
        fill: isUsd ? color + '88' : undefined,
        paths: isUsd && uPlot.paths && uPlot.paths.bars ? uPlot.paths.bars({ size: [0.7, 40] }) : undefined,
        points: { show: false },
        value: function (u, v) { return isUsd ? dollars(v) : counted(v); },
      });
    });
    var axes = [{}];
    if (hasUsd) axes.push({ scale: 'usd', size: axisSize, values: function (u, vals) { return vals.map(dollars); } });
    if (hasCount) axes.push({ scale: 'count', side: hasUsd ? 1 : 3, size: axisSize, grid: { show: !hasUsd }, values: function (u, vals) { return vals.map(counted); } });
    return {
      width: Math.max(300, el.clientWidth),
      height: 220,
      tzDate: function (ts) { return uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'); },
      scales: { x: { time: true }, usd: { range: function (u, min, max) { return [0, max > 0 ? max * 1.1 : 1]; } }, count: { range: function (u, min, max) { return [0, max > 0 ? max * 1.1 : 1]; } } },
      series: series,
      axes: axes,
      legend: { live: true },
      hooks: { ready: [showLatest], setCursor: [showLatest] },
    };
  }

  // A y axis as wide as its longest label ("15,000,000" would be cut at a fixed width).
  function axisSize(u, values, axisIdx, cycleNum) {
    var axis = u.axes[axisIdx];
    if (cycleNum > 1) return axis._size;
    var longest = (values || []).reduce(function (acc, v) { return v.length > acc.length ? v : acc; }, '');
    u.ctx.font = axis.font[0];
    return Math.ceil(axis.ticks.size + axis.gap + u.ctx.measureText(longest).width / (window.devicePixelRatio || 1)) + 4;
  }

  // Away from the pointer the legend shows the latest point's values (uPlot leaves them empty).
  function showLatest(u) {
    var last = u.data[0].length - 1;
    if (u.cursor.idx == null && last >= 0) u.setLegend({ idx: last }, false);
  }

  function renderCharts(data) {
    if (typeof uPlot === 'undefined') return;
    document.querySelectorAll('[data-chart]').forEach(function (el) {
      var path = el.getAttribute('data-chart');
      var spec = lookup(data, path);
      if (!spec || !Array.isArray(spec.x)) return;
      var columns = [spec.x].concat(spec.series.map(function (s) {
        return s.unit === 'usd' ? s.values.map(function (v) { return v / 1e6; }) : s.values;
      }));
      var shape = spec.series.map(function (s) { return s.label + ':' + s.unit; }).join('|');
      var chart = charts[path];
      if (chart && chart.shape === shape) {
        chart.plot.setData(columns);
        showLatest(chart.plot);
      } else {
        if (chart) chart.plot.destroy();
        chart = { plot: new uPlot(chartOptions(el, spec), columns, el), shape: shape };
        charts[path] = chart;
      }
      var points = 0;
      spec.series.forEach(function (s) { s.values.forEach(function (v) { if (v) points += 1; }); });
      el.setAttribute('data-points', String(points));
    });
  }

  window.addEventListener('resize', function () {
    Object.keys(charts).forEach(function (path) {
      var el = charts[path].plot.root.parentElement;
      if (el) charts[path].plot.setSize({ width: Math.max(300, el.clientWidth), height: 220 });
    });
  });

  function setLive(state, message) {
    if (!live) return;
    live.setAttribute('data-state', state);
    live.textContent = message;
  }

  function schedule() {
    clearTimeout(timer);
    timer = setTimeout(poll, interval);
  }

  function poll() {
    if (document.hidden) { schedule(); return; }
    fetch(endpoint, { headers: { accept: 'application/json' }, credentials: 'same-origin', cache: 'no-store' })
      .then(function (response) {
        if (response.status === 401) {
          location.assign('/dashboard/login?next=' + encodeURIComponent(location.pathname + location.search));
          return null;
        }
        if (!response.ok) throw new Error('HTTP ' + response.status);
        return response.json();
      })
      .then(function (data) {
        if (data === null) return;
        bindChildren(main, data);
        renderCharts(data);
        setLive('ok', 'Live, ' + text(lookup(data, 'text.updated')));
        main.setAttribute('data-generated-at', text(data.generatedAt));
      })
      .catch(function () { setLive('error', 'Connection lost; retrying'); })
      .then(schedule);
  }

  document.addEventListener('visibilitychange', function () { if (!document.hidden) poll(); });
  poll();
})();
`;
