import { randomUUID } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { Role } from '@a2a-js/sdk'
import { type Client, ClientFactory } from '@a2a-js/sdk/client'
import * as ProviderA2a from '@cordis-subagents/provider-a2a'
import * as ProviderAcp from '@cordis-subagents/provider-acp'
import { bareA2aServer } from './a2a-bare.js'
import { BenchModel, host, now, stats, text, type Stats } from '../lib.js'

const ACP_AGENT = fileURLToPath(new URL('../fixtures/acp-agent.mjs', import.meta.url))

export interface A2aResult { stats: Record<string, Stats>; iterations: number }

/** The A2A floor: one SendStreamingMessage of a hand-written SDK client, its artifact's text checked. */
export async function handA2aRun(client: Client): Promise<void> {
  let output = ''
  const stream = client.sendMessageStream({
    tenant: '', configuration: undefined, metadata: undefined,
    message: { messageId: randomUUID(), contextId: '', taskId: '', role: Role.ROLE_USER, parts: [{ content: { $case: 'text', value: 'hello' }, mediaType: 'text/plain', filename: '', metadata: undefined }], metadata: undefined, extensions: [], referenceTaskIds: [] },
  })
  for await (const event of stream) {
    if (event.payload?.$case === 'artifactUpdate') output += event.payload.value.artifact?.parts.map((p) => p.content?.$case === 'text' ? p.content.value : '').join('') ?? ''
  }
  if (output !== 'child answer') throw new Error(`a2a hand client: wrong output ${output}`)
}

/**
 * Per-run latency of one delegation whose child answers at once, by transport: in-process
 * (provider-spawn, one child model step), ACP (provider-acp, a cold fixture agent process per
 * run), A2A (provider-a2a against an SDK server on loopback, streaming), and the A2A floor: a
 * hand-written SDK client doing the same SendStreamingMessage on the same server.
 */
export async function a2a(options: { iterations: number; warmup: number }): Promise<A2aResult> {
  // An A2A agent whose turn is one text artifact ("child answer"), served by the SDK's own server
  // classes in this process: the figure is the protocol and HTTP cost, not a spawn.
  const remote = await bareA2aServer({ name: 'bench agent', streaming: true, answer: async () => 'child answer' })
  const h = await host({ model: new BenchModel(() => text('child answer')), tools: false })
  h.ctx.plugin(ProviderAcp, { name: 'acp', command: process.execPath, args: [ACP_AGENT] })
  h.ctx.plugin(ProviderA2a, { name: 'a2a', url: remote.url })
  await h.ctx.lifecycle.flush()
  if (!h.ctx.subagents.get('a2a')) throw new Error('a2a: the provider did not load')
  const client = await new ClientFactory().createFromUrl(remote.url)
  // A parent per round: the default tree cap (16 delegations per tree) would stop one parent.
  let parent = h.ctx.agents.create({})
  const delegate = (provider: string) => async () => {
    const run = await h.ctx.subagents.delegate(provider, { prompt: 'hello', parent, signal: new AbortController().signal })
    const result = await run.result
    await run.dispose()
    if (result.stopReason !== 'completed' || result.output !== 'child answer') throw new Error(`${provider}: ${JSON.stringify(result)}`)
  }
  const hand = () => handA2aRun(client)
  const systems: Record<string, () => Promise<void>> = {
    'in-process: ctx.subagents → spawn': delegate('spawn'),
    'ACP: ctx.subagents → acp (cold process per run)': delegate('acp'),
    'A2A floor: hand-written SDK client (SendStreamingMessage)': hand,
    'A2A: ctx.subagents → a2a (streaming, loopback)': delegate('a2a'),
  }
  const samples: Record<string, number[]> = Object.fromEntries(Object.keys(systems).map((k) => [k, []]))
  try {
    for (let i = -options.warmup; i < options.iterations; i++) {
      const names = Object.keys(systems)
      for (const name of i % 2 ? names.reverse() : names) {
        const t0 = now()
        await systems[name]()
        if (i >= 0) samples[name].push(now() - t0)
      }
      await parent.dispose()
      parent = h.ctx.agents.create({})
    }
    if (h.ctx.subagents.runs().length) throw new Error('a2a: live runs left')
  } finally {
    await parent.dispose()
    await h.stop()
    await remote.close()
  }
  return { stats: Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, stats(v)])), iterations: options.iterations }
}
