/* zeromem inspector: a static page over the /v1 API. Plain JS, no build step, no network
 * beyond this server. Every piece of server data reaches the page through textContent or
 * setAttribute on elements built here, never through innerHTML: trace text is user data. */
'use strict';

(() => {
  const KEY_STORAGE = 'zeromem.inspector.apiKey';
  const PAGE = 50;             // traces per page in the session list
  const GRAPH_LIMIT = 20;      // neighbouring traces asked of /graph
  const SVG_NS = 'http://www.w3.org/2000/svg';

  // Signals of an evidence item's `why`, grouped as the retrieval pipeline computes them.
  const WHY_GROUPS = [
    ['Graph', [['graph', 'graph'], ['ppr', 'PPR']]],
    ['Lexical', [['lexical_refinement', 'refinement'], ['lexical', 'lexical']]],
    ['Hierarchy', [['hierarchy', 'hierarchy'], ['h_turn', 'turn'], ['h_span', 'span'],
                   ['h_window', 'window'], ['h_episode', 'episode'], ['h_title', 'title']]],
    ['Dense', [['dense_cosine', 'cosine'], ['dense', 'dense']]],
    ['Compatibility', [['compatibility', 'compatibility']]],
  ];
  const WHY_TEXT = ['reason', 'route'];

  const state = {
    key: '',
    gen: 0,            // bumped on every (re)connect: late answers for an old key are dropped
    connected: false,
    sessions: [],
    session: undefined,  // undefined: none picked; null: the traces without a session
    offset: 0,
    traceId: null,
    traceReq: 0,
    listReq: 0,
    queryReq: 0,
  };

  const $ = (id) => document.getElementById(id);

  // -- DOM helpers (text only) ----------------------------------------------------------
  function h(tag, props, ...kids) {
    const node = document.createElement(tag);
    setProps(node, props);
    append(node, kids);
    return node;
  }

  function s(tag, props, ...kids) {
    const node = document.createElementNS(SVG_NS, tag);
    setProps(node, props);
    append(node, kids);
    return node;
  }

  function setProps(node, props) {
    for (const [name, value] of Object.entries(props || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (name === 'class') node.setAttribute('class', value);
      // through the CSSOM: the page's Content-Security-Policy refuses style attributes
      else if (name === 'style') node.style.cssText = String(value);
      else if (name === 'text') node.textContent = String(value);
      else if (name.startsWith('on') && typeof value === 'function') {
        node.addEventListener(name.slice(2), value);
      } else node.setAttribute(name, value === true ? '' : String(value));
    }
  }

  function append(node, kids) {
    for (const kid of kids.flat(Infinity)) {
      if (kid === null || kid === undefined || kid === false) continue;
      node.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
    }
  }

  function clear(...ids) {
    for (const id of ids) $(id).replaceChildren();
  }

  function show(id, visible) {
    $(id).hidden = !visible;
  }

  // -- formatting -----------------------------------------------------------------------
  function fmtNum(value, digits = 3) {
    if (typeof value !== 'number' || !Number.isFinite(value)) return String(value);
    return Number.isInteger(value) ? String(value) : value.toFixed(digits);
  }

  function fmtTime(text) {
    if (!text) return '—';
    const m = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2})(:\d{2})?(\.\d+)?(Z|[+-]\d{2}:?\d{2})?$/.exec(text);
    if (!m) return text;
    const seconds = m[3] && m[3] !== ':00' ? m[3] : '';
    const zone = m[5] === 'Z' || m[5] === '+00:00' ? ' UTC' : (m[5] ? ' ' + m[5] : '');
    return `${m[1]} ${m[2]}${seconds}${zone}`;
  }

  function fmtDay(text) {
    return text ? fmtTime(text).slice(0, 10) : '—';
  }

  function plural(n, word) {
    return `${n.toLocaleString('en')} ${word}${n === 1 ? '' : 's'}`;
  }

  function snippet(text, n) {
    const flat = String(text).replace(/\s+/g, ' ').trim();
    return flat.length > n ? flat.slice(0, Math.max(1, n - 1)) + '…' : flat;
  }

  function sessionName(session) {
    return session === null || session === undefined ? '(no session)' : session;
  }

  // -- the API --------------------------------------------------------------------------
  class ApiError extends Error {
    constructor(status, type, message) {
      super(message);
      this.status = status;
      this.type = type;
    }
  }

  async function api(method, path, body) {
    const headers = { Accept: 'application/json' };
    if (state.key) headers.Authorization = 'Bearer ' + state.key;
    const init = { method, headers, cache: 'no-store' };
    if (body !== undefined) {
      headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    let response;
    try {
      response = await fetch(path, init);   // relative: works behind a path prefix too
    } catch (err) {
      throw new ApiError(0, 'NetworkError', `could not reach the server (${err.message}); is zeromem serve running?`);
    }
    const raw = await response.text();
    let data = null;
    if (raw) {
      try { data = JSON.parse(raw); } catch (_) { data = null; }
    }
    if (!response.ok) {
      const error = data && typeof data === 'object' && data.error ? data.error : null;
      throw new ApiError(response.status, (error && error.type) || `HTTP ${response.status}`,
                         (error && error.message) || snippet(raw, 300) || response.statusText);
    }
    return data;
  }

  function showError(id, err) {
    const box = $(id);
    if (!err) {
      box.hidden = true;
      box.replaceChildren();
      return;
    }
    const type = err instanceof ApiError ? err.type : (err && err.name) || 'Error';
    const status = err instanceof ApiError && err.status ? ` (HTTP ${err.status})` : '';
    box.replaceChildren(h('strong', { text: type + status + ':' }),
                        document.createTextNode(String((err && err.message) || err)));
    box.hidden = false;
  }

  async function busy(id, work) {
    const node = $(id);
    node.setAttribute('aria-busy', 'true');
    try {
      return await work();
    } finally {
      node.removeAttribute('aria-busy');
    }
  }

  // -- key and connection ---------------------------------------------------------------
  // The key lives in this tab (sessionStorage: gone when the tab closes) unless the user ticks
  // "Remember": only then in localStorage, where every later visit of this browser finds it.
  function storedKey() {
    try {
      const remembered = localStorage.getItem(KEY_STORAGE);
      if (remembered) return { key: remembered, remember: true };
      return { key: sessionStorage.getItem(KEY_STORAGE) || '', remember: false };
    } catch (_) { return { key: '', remember: false }; }
  }

  function storeKey(key, remember) {
    try {
      localStorage.removeItem(KEY_STORAGE);
      sessionStorage.removeItem(KEY_STORAGE);
      if (key) (remember ? localStorage : sessionStorage).setItem(KEY_STORAGE, key);
    } catch (_) { /* storage disabled: the key lives for this page only */ }
  }

  function resetView() {
    state.sessions = [];
    state.session = undefined;
    state.offset = 0;
    state.traceId = null;
    state.connected = false;
    clear('stats', 'sessions', 'traces', 'evidence', 'query-summary', 'context-text');
    $('evidence').removeAttribute('data-query');
    $('context-text').removeAttribute('data-query');
    $('context-meta').textContent = 'The prompt block a reader would get, within the token budget.';
    $('evidence-count').textContent = '';
    $('traces-title').textContent = '';
    $('sessions-empty').textContent = 'Connect with an API key to list the sessions.';
    show('sessions-empty', true);
    $('traces-empty').textContent = 'Pick a session to list its traces.';
    show('traces-empty', true);
    show('traces-more', false);
    show('evidence-empty', true);
    hideTrace();
    for (const id of ['global-error', 'browse-error', 'query-error', 'context-error']) showError(id, null);
    const select = $('query-session');
    while (select.options.length > 1) select.remove(1);
    $('refresh').disabled = true;
  }

  async function connect(initial = false) {
    const key = $('api-key').value.trim();
    if (/[^\x21-\x7e]/.test(key)) {
      showError('global-error', new ApiError(0, 'InvalidKey', 'an API key has no spaces or non-ASCII characters; paste it again'));
      return;
    }
    state.key = key;
    state.gen += 1;
    const gen = state.gen;
    resetView();
    $('scope').replaceChildren('connecting…');
    $('sessions-empty').textContent = 'Loading…';
    try {
      const who = await api('GET', 'v1/whoami');
      if (gen !== state.gen) return;
      renderScope(who);
      storeKey(key, $('key-remember').checked);  // only a key that worked replaces the stored one
      state.connected = true;
      $('refresh').disabled = false;
      await refresh();
    } catch (err) {
      if (gen !== state.gen) return;
      $('sessions-empty').textContent = 'Connect with an API key to list the sessions.';
      if (initial && !key && err instanceof ApiError && err.status === 401) {
        $('scope').replaceChildren('not connected: enter an API key (make one with ',
                                   h('code', { text: 'zeromem keys add --user U' }), ')');
        return;
      }
      $('scope').replaceChildren('not connected');
      showError('global-error', err);
    }
  }

  async function refresh() {
    const gen = state.gen;
    const [stats, sessions] = await Promise.allSettled([api('GET', 'v1/stats'), api('GET', 'v1/sessions')]);
    if (gen !== state.gen) return;
    showError('global-error', null);
    if (stats.status === 'fulfilled') renderStats(stats.value);
    else showError('global-error', stats.reason);
    if (sessions.status === 'fulfilled') renderSessions(sessions.value.sessions || []);
    else showError('browse-error', sessions.reason);
  }

  function renderScope(who) {
    const parts = [];
    if (who.user !== null && who.user !== undefined) parts.push(h('span', {}, 'user ', h('code', { text: who.user })));
    if (who.agent !== null && who.agent !== undefined) parts.push(h('span', {}, 'agent ', h('code', { text: who.agent })));
    if (!parts.length) parts.push(h('span', { text: 'the unscoped store' }));
    const joined = [];
    parts.forEach((p, i) => { if (i) joined.push(' · '); joined.push(p); });
    joined.push(' ');
    joined.push(who.key_id
      ? h('span', { class: 'chip mono', title: 'API key id' }, 'key ' + who.key_id)
      : h('span', { class: 'chip warn', title: 'the server runs with --no-auth' }, 'no auth'));
    $('scope').replaceChildren(...joined);
  }

  function renderStats(stats) {
    const rows = [];
    const add = (label, value, testid) => rows.push(h('div', { 'data-testid': testid || null },
      h('dt', { text: label }), h('dd', { text: value })));
    const num = (v) => (typeof v === 'number' ? v.toLocaleString('en') : String(v));
    const pairs = (obj) => Object.entries(obj).map(([k, v]) => `${k} ${num(v)}`).join(', ');
    const seen = new Set(['traces', 'sessions', 'characters', 'first_time', 'last_time', 'history_events',
                          'units', 'speakers', 'scopes']);
    if ('traces' in stats) add('traces', num(stats.traces), 'stat-traces');
    if ('sessions' in stats) add('sessions', num(stats.sessions), 'stat-sessions');
    if ('characters' in stats) add('characters', num(stats.characters));
    if (stats.first_time || stats.last_time) add('time span', `${fmtDay(stats.first_time)} → ${fmtDay(stats.last_time)}`);
    if (stats.speakers && typeof stats.speakers === 'object') add('speakers', pairs(stats.speakers) || '—');
    if (stats.history_events && typeof stats.history_events === 'object') add('history', pairs(stats.history_events) || '—');
    if (stats.units && typeof stats.units === 'object') add('units', pairs(stats.units) || '—');
    for (const [k, v] of Object.entries(stats)) {
      if (seen.has(k) || v === null || v === undefined) continue;
      add(k.replace(/_/g, ' '), typeof v === 'object' ? pairs(v) : num(v));
    }
    $('stats').replaceChildren(...rows);
  }

  // -- sessions and traces --------------------------------------------------------------
  function renderSessions(sessions) {
    state.sessions = sessions;
    const items = sessions.map((sess) => h('li', {},
      h('button', {
        type: 'button',
        'data-testid': 'session',
        'data-session': sess.session === null ? '' : sess.session,
        'aria-current': sessionMatches(sess.session) ? 'true' : null,
        onclick: () => selectSession(sess.session),
      },
      h('span', { class: 'title', text: sessionName(sess.session) }),
      h('span', { class: 'sub', text: `${plural(sess.traces, 'trace')} · ${rangeText(sess.first_time, sess.last_time)}` }))));
    $('sessions').replaceChildren(...items);
    $('sessions-empty').textContent = 'No sessions in this scope yet.';
    show('sessions-empty', sessions.length === 0);
    const select = $('query-session');
    while (select.options.length > 1) select.remove(1);
    for (const sess of sessions) {
      if (sess.session === null) continue;  // the search filter takes a session name
      select.add(new Option(sess.session, sess.session));
    }
  }

  function rangeText(first, last) {
    if (!first && !last) return 'no time';
    if (first === last || !last) return fmtTime(first);
    if (!first) return fmtTime(last);
    return `${fmtTime(first)} → ${fmtTime(last)}`;
  }

  function sessionMatches(session) {
    return state.session !== undefined && state.session === session;
  }

  function markCurrent() {
    for (const btn of $('sessions').querySelectorAll('button[data-testid="session"]')) {
      const value = btn.getAttribute('data-session');
      const match = state.session !== undefined && (state.session === null ? value === '' : value === state.session);
      if (match) btn.setAttribute('aria-current', 'true'); else btn.removeAttribute('aria-current');
    }
    for (const btn of $('traces').querySelectorAll('button[data-trace-id]')) {
      if (btn.getAttribute('data-trace-id') === state.traceId) btn.setAttribute('aria-current', 'true');
      else btn.removeAttribute('aria-current');
    }
  }

  async function selectSession(session) {
    state.session = session;
    state.offset = 0;
    clear('traces');
    $('traces-title').textContent = '· ' + sessionName(session);
    show('traces-empty', false);
    show('traces-more', false);
    markCurrent();
    await loadTraces();
  }

  async function loadTraces() {
    const gen = state.gen;
    const req = ++state.listReq;
    const params = new URLSearchParams();
    const noSession = state.session === null;
    if (!noSession) params.set('session', state.session);
    params.set('limit', String(noSession ? 1000 : PAGE));
    params.set('offset', String(state.offset));
    try {
      const page = await busy('traces', () => api('GET', 'v1/traces?' + params.toString()));
      if (gen !== state.gen || req !== state.listReq) return;
      showError('browse-error', null);
      const got = page.traces || [];
      state.offset += got.length;
      const shown = noSession ? got.filter((t) => t.session === null) : got;
      append($('traces'), shown.map(traceItem));
      show('traces-more', got.length === Number(params.get('limit')));
      show('traces-empty', $('traces').children.length === 0);
      $('traces-empty').textContent = 'No traces in this session.';
      markCurrent();
    } catch (err) {
      if (gen !== state.gen || req !== state.listReq) return;
      showError('browse-error', err);
    }
  }

  function traceItem(trace) {
    return h('li', {},
      h('button', {
        type: 'button',
        'data-trace-id': trace.id,
        'data-testid': 'trace-item',
        onclick: () => openTrace(trace.id),
      },
      h('span', { class: 'head' },
        h('span', { class: 'id', text: trace.id }),
        h('span', { class: 'speaker', text: trace.speaker || trace.role }),
        trace.source_id ? h('span', { text: trace.source_id }) : null,
        h('span', { text: '#' + trace.seq }),
        trace.version > 1 ? h('span', { class: 'chip warn', text: 'v' + trace.version }) : null),
      h('span', { class: 'snippet', text: trace.text })));
  }

  // -- one trace ------------------------------------------------------------------------
  function hideTrace() {
    show('trace-body', false);
    show('trace-empty', true);
    clear('trace-detail', 'trace-history', 'graph-view', 'graph-entities', 'graph-neighbours');
  }

  async function openTrace(traceId) {
    const gen = state.gen;
    const req = ++state.traceReq;
    state.traceId = traceId;
    markCurrent();
    const results = await busy('trace-body', () => Promise.allSettled([
      api('GET', `v1/traces/${encodeURIComponent(traceId)}`),
      api('GET', `v1/traces/${encodeURIComponent(traceId)}/history`),
      api('GET', `v1/traces/${encodeURIComponent(traceId)}/graph?limit=${GRAPH_LIMIT}`),
    ]));
    if (gen !== state.gen || req !== state.traceReq) return;
    const [trace, history, graph] = results;
    const events = history.status === 'fulfilled' ? history.value.events || [] : [];
    if (trace.status === 'rejected') {
      const deleted = events.length && events[events.length - 1].event === 'delete';
      if (!deleted) {
        showError('browse-error', trace.reason);
        return;
      }
    }
    showError('browse-error', null);
    show('trace-empty', false);
    show('trace-body', true);
    if (trace.status === 'fulfilled') renderTraceDetail(trace.value);
    else renderDeletedTrace(traceId, events);
    if (history.status === 'fulfilled') renderHistory(events);
    else $('trace-history').replaceChildren(errorLine(history.reason));
    if (graph.status === 'fulfilled') renderGraph(graph.value);
    else {
      clear('graph-view', 'graph-entities', 'graph-neighbours');
      $('graph-view').append(trace.status === 'rejected'
        ? h('p', { class: 'muted', text: 'A deleted trace has no place in the graph.' })
        : errorLine(graph.reason));
    }
    // Show the trace among its session's traces (a neighbour may live in another session).
    if (trace.status === 'fulfilled' && !sessionMatches(trace.value.session)) {
      await selectSession(trace.value.session);
    }
  }

  function errorLine(err) {
    const type = err instanceof ApiError ? err.type : 'Error';
    return h('p', { class: 'error' }, h('strong', { text: type + ':' }), String(err.message || err));
  }

  function renderTraceDetail(trace) {
    const rows = [
      ['id', trace.id, 'mono'],
      ['version', String(trace.version)],
      ['session', sessionName(trace.session)],
      ['speaker', trace.speaker || '—'],
      ['role', trace.role],
      ['session time', fmtTime(trace.session_time)],
      ['event time', fmtTime(trace.event_time)],
      ['recorded at', fmtTime(trace.recorded_at)],
      ['seq', String(trace.seq)],
      ['source id', trace.source_id || '—', 'mono'],
    ];
    if (trace.metadata && Object.keys(trace.metadata).length) rows.push(['metadata', JSON.stringify(trace.metadata), 'mono']);
    if (trace.attachments && trace.attachments.length) rows.push(['attachments', trace.attachments.join(' | ')]);
    $('trace-detail').replaceChildren(
      h('blockquote', { class: 'trace-text', 'data-testid': 'trace-text', text: trace.text }),
      h('dl', { class: 'prov', 'data-testid': 'trace-provenance' },
        rows.map(([k, v, cls]) => [h('dt', { text: k }), h('dd', { class: cls || null, text: v })])));
  }

  function renderDeletedTrace(traceId, events) {
    const last = events[events.length - 1];
    $('trace-detail').replaceChildren(
      h('p', { class: 'deleted-note', 'data-testid': 'trace-deleted' },
        `${traceId} was deleted ${fmtTime(last.at)}; its history remains.`),
      last.old_text ? h('blockquote', { class: 'trace-text', 'data-testid': 'trace-text', text: last.old_text }) : null);
  }

  function renderHistory(events) {
    if (!events.length) {
      $('trace-history').replaceChildren(h('li', { class: 'muted', text: 'No history recorded.' }));
      return;
    }
    const items = events.map((ev) => {
      const rows = [];
      if (ev.event === 'update' && ev.old_text !== null && ev.new_text !== null && ev.old_text !== ev.new_text) {
        const [before, after] = wordDiff(ev.old_text, ev.new_text);
        rows.push(textRow('before', before), textRow('after', after));
      } else {
        if (ev.old_text !== null && ev.old_text !== undefined) rows.push(textRow(ev.event === 'delete' ? 'text' : 'old', [ev.old_text]));
        if (ev.new_text !== null && ev.new_text !== undefined) rows.push(textRow(ev.event === 'add' ? 'text' : 'new', [ev.new_text]));
      }
      const oldMeta = JSON.stringify(ev.old_metadata || {});
      const newMeta = JSON.stringify(ev.new_metadata || {});
      if (ev.event === 'update' && oldMeta !== newMeta) {
        rows.push(textRow('meta', [h('del', { text: oldMeta }), ' → ', h('ins', { text: newMeta })]));
      } else if (ev.event === 'add' && newMeta !== '{}') {
        rows.push(textRow('meta', [newMeta]));
      }
      return h('li', { 'data-event': ev.event, 'data-testid': 'history-event' },
        h('span', { class: 'hev', text: ev.event }),
        h('span', { class: 'when', text: fmtTime(ev.at) }),
        rows);
    });
    $('trace-history').replaceChildren(...items);
  }

  function textRow(label, parts) {
    return h('div', { class: 'text-row' }, h('span', { class: 'k', text: label }), h('span', { class: 'v' }, parts));
  }

  /* Word-level diff (longest common subsequence) of two texts: [old parts, new parts], with
   * removed words in <del> and added words in <ins>. Long texts fall back to whole blocks. */
  function wordDiff(oldText, newText) {
    const a = oldText.split(/(\s+)/);
    const b = newText.split(/(\s+)/);
    if (a.length * b.length > 250000) return [[h('del', { text: oldText })], [h('ins', { text: newText })]];
    const n = a.length;
    const m = b.length;
    const lcs = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
    for (let i = n - 1; i >= 0; i -= 1) {
      for (let j = m - 1; j >= 0; j -= 1) {
        lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
      }
    }
    const before = [];
    const after = [];
    let i = 0;
    let j = 0;
    const push = (list, kind, text) => {
      const last = list[list.length - 1];
      if (last && last.kind === kind) last.text += text; else list.push({ kind, text });
    };
    while (i < n && j < m) {
      if (a[i] === b[j]) { push(before, 'same', a[i]); push(after, 'same', b[j]); i += 1; j += 1; }
      else if (lcs[i + 1][j] >= lcs[i][j + 1]) { push(before, 'del', a[i]); i += 1; }
      else { push(after, 'ins', b[j]); j += 1; }
    }
    for (; i < n; i += 1) push(before, 'del', a[i]);
    for (; j < m; j += 1) push(after, 'ins', b[j]);
    const render = (list) => list.map((p) => (p.kind === 'same' ? p.text : h(p.kind, { text: p.text })));
    return [render(before), render(after)];
  }

  // -- the entity graph -----------------------------------------------------------------
  const LABEL_COLOURS = ['#5c6bc0', '#26a69a', '#ef6c00', '#8e24aa', '#43a047', '#d81b60', '#00897b', '#6d4c41', '#1e88e5'];

  function labelColour(label) {
    let hash = 0;
    for (const ch of String(label)) hash = (hash * 31 + ch.codePointAt(0)) >>> 0;
    return LABEL_COLOURS[hash % LABEL_COLOURS.length];
  }

  function renderGraph(hood) {
    const view = $('graph-view');
    const entities = hood.entities || [];
    const neighbours = hood.neighbours || [];
    const trace = hood.trace;
    view.replaceChildren();
    renderGraphLists(entities, neighbours);
    if (!entities.length) {
      view.append(h('p', { class: 'muted', 'data-testid': 'graph-empty',
        text: 'No entities were extracted from this turn, so it has no graph neighbours.' }));
      return;
    }
    const width = Math.max(460, Math.min(900, view.clientWidth || 560));
    const rowH = 30;
    const pad = 26;
    const rows = Math.max(entities.length, neighbours.length, 2);
    const height = rows * rowH + pad * 2;
    const traceW = 84;
    const entW = Math.round(Math.min(230, width * 0.4));
    const nbW = Math.round(Math.min(170, width * 0.28));
    const traceX = 4;
    const entX = Math.round(traceX + traceW + (width - traceW - entW - nbW - 8) / 2);
    const nbX = width - nbW - 4;
    const yAt = (i, n) => pad + (i + 0.5) * ((height - 2 * pad) / n);
    const traceY = height / 2;
    const entY = new Map(entities.map((e, i) => [e.entity, yAt(i, entities.length)]));
    const curve = (x1, y1, x2, y2) => {
      const mid = (x1 + x2) / 2;
      return `M${x1},${y1} C${mid},${y1} ${mid},${y2} ${x2},${y2}`;
    };
    const maxChars = (w) => Math.max(4, Math.floor((w - 14) / 6.6));

    const edges = s('g', { class: 'edges' });
    const nodes = s('g', { class: 'nodes' });
    const svg = s('svg', {
      viewBox: `0 0 ${width} ${height}`,
      width, height,
      role: 'img',
      'data-testid': 'graph-svg',
      'aria-label': `${trace.id} mentions ${entities.length} ${entities.length === 1 ? 'entity' : 'entities'}; ` +
                    `${plural(neighbours.length, 'other trace')} share one. The lists below hold the same.`,
    },
    s('text', { class: 'col-title', x: traceX, y: 10 }, 'trace'),
    s('text', { class: 'col-title', x: entX, y: 10 }, 'entities (turns that mention them)'),
    neighbours.length ? s('text', { class: 'col-title', x: nbX, y: 10 }, 'neighbouring traces') : null,
    edges, nodes);

    entities.forEach((e) => {
      edges.append(s('path', { class: 'edge', d: curve(traceX + traceW, traceY, entX, entY.get(e.entity)) }));
    });
    neighbours.forEach((nb, i) => {
      const y = yAt(i, neighbours.length);
      for (const key of nb.shared || []) {
        if (!entY.has(key)) continue;
        edges.append(s('path', { class: 'edge shared', d: curve(entX + entW, entY.get(key), nbX, y) }));
      }
    });

    nodes.append(s('g', { class: 'node-trace', 'data-testid': 'graph-trace' },
      s('title', {}, `${trace.id}: ${trace.text}`),
      s('rect', { x: traceX, y: traceY - 13, width: traceW, height: 26, rx: 13 }),
      s('text', { x: traceX + traceW / 2, y: traceY + 1, 'text-anchor': 'middle' }, trace.id)));

    entities.forEach((e) => {
      const y = entY.get(e.entity);
      const colour = labelColour(e.label);
      const tag = `${e.label} · ${e.turns}`;
      const room = maxChars(entW) - tag.length - 2;
      nodes.append(s('g', { class: 'node-entity', 'data-testid': 'graph-entity', 'data-entity': e.entity },
        s('title', {}, `${e.surface} (${e.label}): mentioned ${e.count}× here, in ${plural(e.turns, 'turn')} of the scope`),
        s('rect', { x: entX, y: y - 11, width: entW, height: 22, rx: 11, fill: colour + '22', stroke: colour }),
        s('text', { x: entX + 10, y: y + 1 }, snippet(e.surface, Math.max(4, room))),
        s('text', { class: 'tag', x: entX + entW - 10, y: y + 1, 'text-anchor': 'end' }, tag)));
    });

    neighbours.forEach((nb, i) => {
      const y = yAt(i, neighbours.length);
      const t = nb.trace;
      const label = `${t.id} · ${t.speaker || t.role}`;
      const open = () => openTrace(t.id);
      nodes.append(s('g', {
        class: 'node-nb',
        'data-testid': 'graph-neighbour-node',
        'data-trace-id': t.id,
        onclick: open,
      },
      s('title', {}, `${t.id} (${sessionName(t.session)}): ${t.text}`),
      s('rect', { x: nbX, y: y - 11, width: nbW, height: 22, rx: 5 }),
      s('text', { x: nbX + 8, y: y + 1 }, snippet(label, maxChars(nbW)))));
    });
    view.append(svg);
  }

  function renderGraphLists(entities, neighbours) {
    const surfaces = new Map(entities.map((e) => [e.entity, e.surface]));
    $('graph-entities').replaceChildren(...(entities.length ? entities.map((e) => h('li', {
      'data-testid': 'graph-entity-item', 'data-entity': e.entity,
    },
    h('strong', { text: e.surface }), ' ',
    h('span', { class: 'chip', style: `background:${labelColour(e.label)}22`, text: e.label }), ' ',
    h('span', { class: 'muted', text: `${e.count}× here · in ${plural(e.turns, 'turn')}` }))) : [h('li', { class: 'muted', text: 'none' })]));
    $('graph-neighbours').replaceChildren(...(neighbours.length ? neighbours.map((nb) => h('li', {
      'data-testid': 'graph-neighbour',
    },
    h('button', {
      type: 'button',
      class: 'link',
      'data-trace-id': nb.trace.id,
      'data-testid': 'graph-neighbour-open',
      'aria-label': `open trace ${nb.trace.id}`,
      onclick: () => openTrace(nb.trace.id),
    }, nb.trace.id),
    ' ',
    h('span', { class: 'muted', text: `${nb.trace.speaker || nb.trace.role} · ${sessionName(nb.trace.session)} · shares ` }),
    (nb.shared || []).map((key, i) => [i ? ', ' : '', h('em', { text: surfaces.get(key) || key })]),
    h('span', { class: 'nb-text', text: snippet(nb.trace.text, 160) }))) : [h('li', { class: 'muted', text: 'no other trace shares these entities' })]));
  }

  // -- query ----------------------------------------------------------------------------
  async function runQuery() {
    const gen = state.gen;
    const req = ++state.queryReq;
    const query = $('query-text').value;
    const k = Number($('query-k').value);
    const budget = Number($('query-budget').value);
    const session = $('query-session').value || null;
    const body = { query, k };
    if (session !== null) body.session = session;
    $('query-run').disabled = true;
    const [search, context] = await busy('panel-query', () => Promise.allSettled([
      api('POST', 'v1/search', body),
      api('POST', 'v1/context', { ...body, budget_tokens: budget, why: false }),
    ])).finally(() => { $('query-run').disabled = false; });
    if (gen !== state.gen || req !== state.queryReq) return;
    if (search.status === 'fulfilled') {
      showError('query-error', null);
      renderSearch(search.value);
    } else {
      showError('query-error', search.reason);
      clear('evidence', 'query-summary');
      $('evidence-count').textContent = '';
      show('evidence-empty', true);
    }
    if (context.status === 'fulfilled') {
      showError('context-error', null);
      renderContext({ ...context.value, query }, budget);
    } else {
      // the same query error is already above when both fail
      showError('context-error', search.status === 'rejected' ? null : context.reason);
      clear('context-text');
      $('context-meta').textContent = '';
    }
  }

  function summaryItem(label, ...value) {
    return h('span', { class: 'item' }, h('span', { class: 'k', text: label }), value);
  }

  function renderSearch(result) {
    const items = [];
    const route = result.route || {};
    items.push(summaryItem('route', h('span', { class: 'chip', 'data-testid': 'route', text: route.primary || '—' }),
      route.rho !== undefined && route.rho !== null ? h('span', { class: 'muted', text: 'ρ ' + fmtNum(route.rho, 2) }) : null));
    items.push(summaryItem('no-answer score', meter('no-answer score', result.no_answer_score),
      h('span', { class: 'mono', 'data-testid': 'no-answer', text: fmtNum(result.no_answer_score) })));
    const timings = Object.entries(result.timings || {})
      .map(([k, v]) => `${k.replace(/_ms$/, '')} ${fmtNum(v, 1)} ms`).join(' · ');
    if (timings) items.push(summaryItem('timings', h('span', { 'data-testid': 'timings', text: timings })));
    $('query-summary').replaceChildren(...items);
    const degraded = result.degraded || [];
    const list = $('evidence');
    const cards = (result.evidence || []).map((ev, i) => evidenceCard(ev, i + 1));
    list.replaceChildren(...cards);
    list.setAttribute('data-query', result.query);  // which query these results answer
    if (degraded.length) {
      list.prepend(h('li', { class: 'warning', role: 'status', 'data-testid': 'degraded' },
        h('strong', { text: 'Degraded: ' }),
        `these components failed and the results use the rest — ${degraded.join('; ')}`));
    }
    $('evidence-count').textContent = `· ${plural(cards.length, 'item')}`;
    show('evidence-empty', cards.length === 0);
    $('evidence-empty').textContent = cards.length ? '' : 'No evidence: memory holds nothing that matches.';
  }

  function meter(label, value) {
    const v = typeof value === 'number' && Number.isFinite(value) ? value : 0;
    const clamped = Math.max(0, Math.min(1, v));
    return h('span', {
      class: 'bar-track', role: 'meter', 'aria-label': label,
      'aria-valuemin': 0, 'aria-valuemax': 1, 'aria-valuenow': clamped.toFixed(3),
    }, h('span', { class: 'bar-fill', style: `width:${(clamped * 100).toFixed(1)}%` }));
  }

  function bar(key, label, value) {
    return h('div', { class: value ? 'bar' : 'bar zero', 'data-testid': 'why-bar', 'data-signal': key, title: key },
      h('span', { class: 'bar-label', text: label }),
      meter(key, value),
      h('span', { class: 'bar-value', text: fmtNum(value) }));
  }

  function evidenceCard(ev, rank) {
    const why = ev.why || null;
    const head = h('div', { class: 'ev-head' },
      h('span', { class: 'ev-rank', text: '#' + rank }),
      h('span', { class: 'ev-score' }, 'score', meter('score', ev.score),
        h('span', { class: 'mono', 'data-testid': 'ev-score', text: fmtNum(ev.score) })),
      why && why.reason ? h('span', { class: 'chip', 'data-testid': 'why-reason', title: 'why it was chosen', text: String(why.reason) }) : null,
      why && why.route ? h('span', { class: 'chip', title: 'route', text: 'route ' + String(why.route) }) : null);
    const prov = [ev.provenance].filter(Boolean).map((p) => h('div', { class: 'ev-prov', 'data-testid': 'ev-provenance' },
      h('button', {
        type: 'button', class: 'link', 'data-trace-id': p.trace_id, title: 'open in Browse',
        onclick: () => { selectTab('browse'); openTrace(p.trace_id); },
      }, p.trace_id),
      h('span', { text: p.speaker || '—' }),
      h('span', { text: sessionName(p.session) }),
      h('span', { text: fmtTime(p.time) }),
      p.source_id ? h('span', { text: 'source ' + p.source_id }) : null,
      h('span', { text: 'seq ' + p.seq })));
    const notes = [];
    for (const note of ev.annotations || []) notes.push(h('span', { class: 'chip', text: note }));
    if (ev.superseded_by) notes.push(h('span', { class: 'chip warn', text: 'superseded by ' + ev.superseded_by }));
    return h('li', { class: 'ev', 'data-testid': 'evidence-item', 'data-trace-id': ev.trace_id },
      head,
      h('p', { class: 'ev-text', 'data-testid': 'ev-text', text: ev.text }),
      prov,
      notes.length ? h('div', { class: 'ev-notes' }, notes) : null,
      why ? whyBlock(why) : null);
  }

  function whyBlock(why) {
    const used = new Set(WHY_TEXT);
    const groups = [];
    for (const [title, signals] of WHY_GROUPS) {
      const bars = [];
      for (const [key, label] of signals) {
        if (typeof why[key] !== 'number') continue;
        used.add(key);
        bars.push(bar(key, label, why[key]));
      }
      if (bars.length) groups.push(h('div', { class: 'why-group' }, h('h4', { text: title }), bars));
    }
    const other = [];
    const extra = [];
    for (const [key, value] of Object.entries(why)) {
      if (used.has(key)) continue;
      if (typeof value === 'number') other.push(bar(key, key.replace(/_/g, ' '), value));
      else extra.push(`${key}: ${typeof value === 'string' ? value : JSON.stringify(value)}`);
    }
    if (other.length) groups.push(h('div', { class: 'why-group' }, h('h4', { text: 'Other' }), other));
    return h('div', { class: 'why', 'data-testid': 'why' },
      h('div', { class: 'why-groups' }, groups),
      extra.length ? h('div', { class: 'why-extra', text: extra.join(' · ') }) : null);
  }

  function renderContext(result, budget) {
    $('context-text').textContent = result.text || '';
    $('context-text').setAttribute('data-query', result.query || '');
    const degraded = result.degraded && result.degraded.length ? ` · degraded: ${result.degraded.join('; ')}` : '';
    $('context-meta').replaceChildren(
      h('span', { 'data-testid': 'context-tokens', text: plural(result.tokens, 'token') }),
      ` of a ${budget.toLocaleString('en')}-token budget · ${plural((result.evidence || []).length, 'evidence item')}${degraded}`);
    if (!result.text) $('context-text').textContent = '(empty: no evidence fits)';
  }

  // -- tabs -----------------------------------------------------------------------------
  function selectTab(name) {
    for (const tab of ['browse', 'query']) {
      const selected = tab === name;
      const button = $('tab-' + tab);
      button.setAttribute('aria-selected', String(selected));
      button.tabIndex = selected ? 0 : -1;
      $('panel-' + tab).hidden = !selected;
    }
  }

  // -- wiring ---------------------------------------------------------------------------
  function init() {
    const stored = storedKey();
    $('api-key').value = stored.key;
    $('key-remember').checked = stored.remember;
    $('key-form').addEventListener('submit', (event) => { event.preventDefault(); connect(false); });
    $('key-show').addEventListener('click', () => {
      const input = $('api-key');
      const visible = input.type === 'password';
      input.type = visible ? 'text' : 'password';
      $('key-show').textContent = visible ? 'Hide' : 'Show';
      $('key-show').setAttribute('aria-pressed', String(visible));
    });
    $('key-forget').addEventListener('click', () => {
      $('api-key').value = '';
      $('key-remember').checked = false;
      storeKey('', false);
      state.key = '';
      state.gen += 1;
      resetView();
      $('scope').replaceChildren('not connected');
    });
    $('refresh').addEventListener('click', () => refresh());
    $('traces-more').addEventListener('click', () => loadTraces());
    $('goto-form').addEventListener('submit', (event) => {
      event.preventDefault();
      const id = $('goto-id').value.trim();
      if (id) openTrace(id);
    });
    $('query-form').addEventListener('submit', (event) => { event.preventDefault(); runQuery(); });
    for (const tab of ['browse', 'query']) {
      $('tab-' + tab).addEventListener('click', () => selectTab(tab));
      $('tab-' + tab).addEventListener('keydown', (event) => {
        if (event.key !== 'ArrowLeft' && event.key !== 'ArrowRight') return;
        const next = tab === 'browse' ? 'query' : 'browse';
        selectTab(next);
        $('tab-' + next).focus();
      });
    }
    connect(true);  // with the stored key, or none (a --no-auth server needs none)
  }

  document.addEventListener('DOMContentLoaded', init);
})();
