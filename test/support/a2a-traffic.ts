// What the A2A contract specs (0.3 and 1.0) drive: a scripted model whose prompt names what the turn
// does, and a webhook on 127.0.0.1 that keeps every push body it is sent.
import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import { type GenerateRequest, ScriptedModel, type ScriptedResponse } from '@cordis-subagents/agent'
import { expect } from 'chai'
import { provider, request, until } from '../../packages/provider-a2a/tests/helpers.js'
import { serve, type Served } from '../../packages/serve-a2a/tests/helpers.js'
import { type Recorder, startRecorder } from './http-recorder.js'

/** `ask …` asks a question (the next message answers it), `tool …` calls `echo` first, `forever …` works until cancelled. */
function script(req: GenerateRequest): ScriptedResponse | Promise<ScriptedResponse> {
  const first = String(req.messages.find((message) => message.role === 'user')?.content ?? '')
  const last = req.messages.at(-1)!
  if (first.startsWith('forever')) {
    return new Promise((_, reject) => req.signal.addEventListener('abort', () => reject(req.signal.reason), { once: true }))
  }
  if (first.startsWith('ask')) return last.role === 'tool' ? ScriptedModel.text(`read ${String(last.content)}`) : ScriptedModel.call('ask_parent', { question: 'Which file?' })
  if (first.startsWith('tool') && last.role !== 'tool') return ScriptedModel.call('echo', { text: 'echoed' })
  return ScriptedModel.text(`answer to: ${first}`)
}

export interface Webhook {
  url: string
  bodies: Array<{ headers: IncomingHttpHeaders; text: string }>
  close(): Promise<void>
}

/** A webhook on 127.0.0.1 that keeps every body it is sent. */
async function webhook(): Promise<Webhook> {
  const bodies: Webhook['bodies'] = []
  const server = createServer((req, res) => {
    let text = ''
    req.setEncoding('utf8')
    req.on('data', (chunk: string) => text += chunk)
    req.on('end', () => {
      bodies.push({ headers: req.headers, text })
      res.writeHead(200).end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    bodies,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  }
}

/**
 * Drives provider-a2a through every outcome against a scripted peer (both contract specs): completed, a message,
 * failed, a question answered, and a cancel of a running task.
 */
export async function driveEveryOutcome(remoteUrl: string, server: { running(): number }): Promise<void> {
  // What is checked is the traffic, not the grace: a cancel's round trip may take seconds on a loaded machine, and one
  // that outlived the test-sized 2 s cancelGrace was aborted before it was answered, and so never recorded.
  const remote = await provider(remoteUrl, { cancelGrace: 30_000, requestTimeout: 30_000 })
  for (const prompt of ['complete', 'message', 'fail']) {
    const run = await remote.start(request({ prompt }))
    await run.result
    await run.dispose()
  }
  const asking = await remote.start(request({ prompt: 'input' }))
  expect((await asking.result).stopReason).to.equal('pending')
  expect((await asking.resume!('notes.txt')).stopReason).to.equal('completed')
  await asking.dispose()
  const waiting = await remote.start(request({ prompt: 'wait' }))
  await until(() => server.running() === 1, 'the remote task started')
  waiting.cancel('contract test')
  expect((await waiting.result).stopReason).to.equal('aborted')
  await waiting.dispose()
}

export interface RecordedServe {
  served: Served
  recorder: Recorder
  hook: Webhook
}

/**
 * serve-a2a on 127.0.0.1 (asks allowed, push to loopback allowed) behind a recording proxy, and a webhook for its
 * pushes (both contract specs). Each is closed through `closers`, last opened first.
 */
export async function serveRecorded(closers: Array<() => Promise<unknown>>): Promise<RecordedServe> {
  const served = await serve({ name: 'contract agent', askParent: true, push: { enabled: true, allowHttp: true, allowHosts: ['127.0.0.1'], retries: 0 } as never }, script)
  closers.push(() => served.ctx.stop())
  const recorder = await startRecorder(served.server.url)
  closers.push(() => recorder.close())
  const hook = await webhook()
  closers.push(() => hook.close())
  return { served, recorder, hook }
}
