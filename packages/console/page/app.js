// The delegation view: one live event stream (fetch + SSE framing, so the token goes in a header),
// a tree per root run, DOM built from a <template> with textContent only (no HTML from data).
'use strict'
;(() => {
  const PAGE = 50
  const MAX_RETRY_MS = 10_000
  const trees = new Map()
  const nodes = new Map()
  const elements = new Map()
  const transcripts = new Map()
  let retryMs = 1000

  const token = readToken()
  const $ = (selector, root = document) => root.querySelector(selector)
  const status = (text, kind) => { const el = $('#status'); el.textContent = text; el.dataset.status = kind }
  const notice = (text) => { const el = $('#notice'); el.textContent = text; el.hidden = !text }

  function readToken() {
    const match = /(?:^#|&)token=([^&]+)/.exec(location.hash)
    if (match) {
      sessionStorage.setItem('console-token', decodeURIComponent(match[1]))
      history.replaceState(null, '', location.pathname) // keep the token out of the address bar and screenshots
    }
    return sessionStorage.getItem('console-token') || ''
  }

  async function api(path, init = {}) {
    const response = await fetch(path, { ...init, headers: { ...init.headers, authorization: `Bearer ${token}` } })
    if (!response.ok) {
      const body = await response.json().catch(() => undefined)
      const error = new Error(body && body.error ? body.error.message : `HTTP ${response.status}`)
      error.status = response.status
      throw error
    }
    return response
  }

  async function connect() {
    if (!token) return notice('No token: open the URL the console printed (it ends with #token=…).')
    try {
      const response = await api('/api/events')
      status('live', 'live')
      retryMs = 1000
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader()
      let buffer = ''
      for (;;) {
        const { value, done } = await reader.read()
        if (done) break
        buffer += value
        let end
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const frame = buffer.slice(0, end)
          buffer = buffer.slice(end + 2)
          const event = /^event: (.*)$/m.exec(frame)
          const data = /^data: (.*)$/m.exec(frame)
          if (event && data) receive(event[1], JSON.parse(data[1]))
        }
      }
      status('disconnected; reconnecting…', 'error')
    } catch (error) {
      if (error.status === 401) return status('the token was refused: open the URL the console printed', 'error')
      status(`${error.message}; reconnecting…`, 'error')
    }
    setTimeout(connect, retryMs)
    retryMs = Math.min(retryMs * 2, MAX_RETRY_MS)
  }

  function receive(event, data) {
    // Elapsed times come as durations (the host's monotonic clock) and run on from here on this page's own.
    const receivedAt = performance.now()
    if (event === 'snapshot') {
      trees.clear()
      nodes.clear()
    }
    for (const treeId of data.evicted || []) trees.delete(treeId)
    for (const tree of data.trees) trees.set(tree.treeId, tree)
    for (const node of data.nodes) nodes.set(node.runId, Object.assign(node, { receivedAt }))
    for (const [runId, node] of nodes) if (!trees.has(node.treeId)) nodes.delete(runId)
    render()
    for (const node of data.nodes) if (transcripts.has(node.runId)) refreshTranscript(node.runId)
  }

  function render() {
    const main = $('#trees')
    const seen = new Set()
    const ordered = [...trees.values()].reverse()
    for (const tree of ordered) {
      let section = main.querySelector(`section[data-tree-id="${CSS.escape(tree.treeId)}"]`)
      if (!section) {
        section = document.createElement('section')
        section.className = 'tree'
        section.dataset.treeId = tree.treeId
        section.append(Object.assign(document.createElement('ul'), { className: 'roots' }), Object.assign(document.createElement('div'), { className: 'dropped' }))
      }
      main.append(section)
      section.dataset.live = String(tree.live)
      $('.dropped', section).textContent = tree.droppedNodes ? `${tree.droppedNodes} more delegations not shown (maxNodesPerTree)` : ''
    }
    for (const section of [...main.children]) if (!trees.has(section.dataset.treeId)) section.remove()
    for (const node of nodes.values()) {
      const el = elementOf(node)
      seen.add(node.runId)
      const parent = node.parentRunId && elements.get(node.parentRunId)
      const list = parent ? $('.children', parent) : $(`section[data-tree-id="${CSS.escape(node.treeId)}"] > .roots`, main)
      if (list && el.parentElement !== list) list.append(el)
      fill(el, node)
    }
    for (const [runId, el] of elements) if (!seen.has(runId)) { el.remove(); elements.delete(runId); transcripts.delete(runId) }
  }

  function elementOf(node) {
    let el = elements.get(node.runId)
    if (el) return el
    el = $('#node-template').content.firstElementChild.cloneNode(true)
    el.dataset.runId = node.runId
    $('.open', el).addEventListener('click', () => toggleTranscript(node.runId))
    $('.cancel', el).addEventListener('click', () => act(node.runId, 'cancel'))
    $('.send', el).addEventListener('submit', (event) => {
      event.preventDefault()
      const input = event.target.elements.message
      if (input.value.trim()) act(node.runId, 'send', { message: input.value }).then((ok) => { if (ok) input.value = '' })
    })
    $('.answer', el).addEventListener('submit', (event) => {
      event.preventDefault()
      const input = event.target.elements.answer
      if (input.value.trim()) act(node.runId, 'answer', { answer: input.value }).then((ok) => { if (ok) input.value = '' })
    })
    $('.older', el).addEventListener('click', () => pageTranscript(node.runId, -1))
    $('.newer', el).addEventListener('click', () => pageTranscript(node.runId, 1))
    elements.set(node.runId, el)
    return el
  }

  function fill(el, node) {
    Object.assign(el.dataset, { state: node.state, depth: String(node.depth), transport: node.transport, background: String(node.background), stopReason: node.stopReason || '' })
    const transport = $('.transport', el)
    transport.textContent = node.background ? `${node.transport} · background` : node.transport
    transport.dataset.transport = node.transport
    $('.provider', el).textContent = node.transport === 'root' ? '' : node.provider
    $('.label', el).textContent = node.label
    $('.state', el).textContent = (node.state === 'running' ? (node.question ? 'waiting for an answer' : 'running') : node.stopReason || 'ended')
      + (node.unread ? ' · result not read by its parent yet' : '')
    $('.counts', el).textContent = `${node.steps} steps · ${node.toolCalls} tool calls · ${node.tokens} tokens`
    const budget = $('.budget', el)
    budget.replaceChildren(...node.budget.map((use) => {
      const span = document.createElement('span')
      const meter = Object.assign(document.createElement('meter'), { min: 0, max: use.limit, value: Math.min(use.used, use.limit) })
      span.append(`${use.name} ${use.used}/${use.limit} `, meter)
      return span
    }))
    $('.progress', el).textContent = node.lastProgress ? `» ${node.lastProgress}` : ''
    $('.why', el).textContent = node.state === 'ended' && node.stopReason !== 'completed' ? `${node.stopReason}${node.diagnostic ? `: ${node.diagnostic}` : ''}` : ''
    $('.cancel', el).hidden = !node.can.cancel
    $('.send', el).hidden = !node.can.send
    $('.question', el).hidden = !node.can.answer
    const options = node.question?.options?.length ? ` (choose: ${node.question.options.map((option) => option.name).join(' / ')})` : ''
    $('.question-text', el).textContent = node.question ? `${node.question.kind === 'ask' ? 'asks' : node.question.kind}: ${node.question.text}${options}` : ''
    $('.open', el).hidden = node.transport === 'root'
    tick(el, node)
  }

  function tick(el, node) {
    const ms = node.state === 'running' ? node.elapsedMs + performance.now() - node.receivedAt : node.elapsedMs
    $('.elapsed', el).textContent = `${(ms / 1000).toFixed(1)}s`
  }

  async function act(runId, verb, body) {
    const el = elements.get(runId)
    const result = $('.action-result', el)
    result.textContent = ''
    try {
      await api(`/api/runs/${encodeURIComponent(runId)}/${verb}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body || {}) })
      result.textContent = verb === 'send' ? 'sent' : verb === 'answer' ? 'answered' : 'cancelling…'
      return true
    } catch (error) {
      result.textContent = error.message
      return false
    }
  }

  function toggleTranscript(runId) {
    const panel = $('.transcript', elements.get(runId))
    if (transcripts.has(runId)) {
      transcripts.delete(runId)
      panel.hidden = true
      return
    }
    transcripts.set(runId, { offset: 0, loading: false })
    panel.hidden = false
    refreshTranscript(runId)
  }

  function pageTranscript(runId, direction) {
    const view = transcripts.get(runId)
    if (!view) return
    view.offset = Math.max(0, view.offset + direction * PAGE)
    refreshTranscript(runId)
  }

  async function refreshTranscript(runId) {
    const view = transcripts.get(runId)
    if (!view || view.loading) return
    view.loading = true
    try {
      const page = await (await api(`/api/runs/${encodeURIComponent(runId)}/transcript?offset=${view.offset}&limit=${PAGE}`)).json()
      view.offset = page.offset
      const el = elements.get(runId)
      if (!el || !transcripts.has(runId)) return
      $('.entries', el).start = page.offset + 1
      $('.entries', el).replaceChildren(...page.entries.map((entry) => {
        const li = document.createElement('li')
        li.dataset.kind = entry.kind
        if (entry.isError) li.dataset.error = ''
        const kind = Object.assign(document.createElement('span'), { className: 'kind', textContent: entry.tool ? `${entry.kind} ${entry.tool}` : entry.kind })
        li.append(kind, entry.text)
        return li
      }))
      const last = page.offset + page.entries.length
      $('.range', el).textContent = page.total ? `${page.offset + 1}–${last} of ${page.total}${page.first ? ` (first ${page.first} dropped)` : ''} · ${page.source === 'agent' ? "the child's transcript" : 'recorded progress'}` : 'nothing yet'
      $('.older', el).disabled = page.offset <= page.first
      $('.newer', el).disabled = last >= page.total
    } catch (error) {
      const el = elements.get(runId)
      if (el) $('.range', el).textContent = error.message
    } finally {
      view.loading = false
    }
  }

  setInterval(() => {
    for (const node of nodes.values()) if (node.state === 'running' && elements.has(node.runId)) tick(elements.get(node.runId), node)
  }, 1000)
  connect()
})()
