// The crossing read by a served agent (not the quick start's): depth refused over the ceiling,
// budget lowered, tool ceiling intersected, from the process's environment (SUBAGENT_*) and from
// session/new's `_meta.cordisSubagents`; the strictest of both applies.
import { expect } from 'chai'
import { appYml, build, newSession, prompt, refusal, said, Workspace } from './helpers.js'

describe('serve-acp honours the crossing from env and _meta', function () {
  this.timeout(60_000)
  let ws: Workspace

  before(() => build())
  beforeEach(() => { ws = new Workspace() })
  afterEach(() => ws.dispose())

  const yml = (extra = '') => appYml({ serve: `persona: "served at depth {depth}"\nstore: ${JSON.stringify(ws.store)}${extra ? `\n${extra}` : ''}` })
  const meta = (crossing: Record<string, unknown>) => ({ cordisSubagents: crossing })

  it('depth: SUBAGENT_DEPTH over SUBAGENT_MAX_DEPTH, a _meta depth over its maxDepth, and a depth over the own maxDepth are refused', async () => {
    const envDeep = await ws.serve(yml(), { SUBAGENT_DEPTH: '3', SUBAGENT_MAX_DEPTH: '2' })
    const error = await refusal(newSession(envDeep, ws.dir))
    expect(error.data).to.deep.equal({ code: 'DEPTH_EXCEEDED', depth: 3, ceiling: 2 })
    expect(error.message).to.include('depth 3 is deeper than this server allows (ceiling 2)')

    const served = await ws.serve(yml('maxDepth: 4'), { SUBAGENT_DEPTH: '1' })
    expect(((await refusal(newSession(served, ws.dir, meta({ depth: 3, maxDepth: 2 })))).data as any).ceiling).to.equal(2)
    expect(((await refusal(newSession(served, ws.dir, meta({ depth: 5 })))).data as any)).to.deep.equal({ code: 'DEPTH_EXCEEDED', depth: 5, ceiling: 4 })
    // Allowed: the session's depth is the deepest claimed, and the persona shows it.
    const { sessionId } = await newSession(served, ws.dir, meta({ depth: 3 }))
    await prompt(served, sessionId, 'persona?')
    expect(said(served, sessionId)).to.equal('persona: served at depth 3')
    const shallow = (await newSession(served, ws.dir)).sessionId
    await prompt(served, shallow, 'persona?')
    expect(said(served, shallow)).to.equal('persona: served at depth 1')
  })

  // The env tool ceiling names this process by a nonce the parent repeats in initialize `_meta` (issue 39).
  const NONCE = 'nonce-of-this-acp-child'
  const bound = (tools: string) => [{ SUBAGENT_ALLOWED_TOOLS: tools, SUBAGENT_CROSSING_FOR: NONCE }, meta({ crossingFor: NONCE })] as const

  it('tool ceiling: config tools, SUBAGENT_ALLOWED_TOOLS and _meta allowedTools intersect', async () => {
    const served = await ws.serve(yml(), ...bound('echo,secret'))
    const all = (await newSession(served, ws.dir)).sessionId
    await prompt(served, all, 'tools?')
    expect(said(served, all)).to.equal('tools: echo,secret')
    const narrowed = (await newSession(served, ws.dir, meta({ allowedTools: ['secret', 'not-there'] }))).sessionId
    await prompt(served, narrowed, 'tools?')
    expect(said(served, narrowed)).to.equal('tools: secret')

    const envOnly = await ws.serve(yml(), ...bound('echo'))
    // _meta cannot widen what the environment allows.
    const widened = (await newSession(envOnly, ws.dir, meta({ allowedTools: ['echo', 'secret'] }))).sessionId
    await prompt(envOnly, widened, 'tools?')
    expect(said(envOnly, widened)).to.equal('tools: echo')

    const denied = await ws.serve(yml('tools:\n  deny: [secret]'))
    const session = (await newSession(denied, ws.dir, meta({ allowedTools: ['secret', 'echo'] }))).sessionId
    await prompt(denied, session, 'tools?')
    expect(said(denied, session)).to.equal('tools: echo')
  })

  it('issue 39: the env tool ceiling applies only when initialize names its nonce; a session left with no tools is refused', async () => {
    // What a process two hops away sees: the variables, but its client never says the nonce.
    const [env] = bound('echo')
    for (const init of [undefined, meta({ crossingFor: 'some-other-parents-nonce' })]) {
      const unbound = await ws.serve(yml(), env, init)
      const session = (await newSession(unbound, ws.dir)).sessionId
      await prompt(unbound, session, 'tools?')
      expect(said(unbound, session)).to.equal('tools: ask,echo,secret')
    }
    // A parent older than the nonce: the variable alone is not applied; its session `_meta` ceiling is.
    const old = await ws.serve(yml(), { SUBAGENT_ALLOWED_TOOLS: 'echo' })
    const oldSession = (await newSession(old, ws.dir, meta({ allowedTools: ['echo'] }))).sessionId
    await prompt(old, oldSession, 'tools?')
    expect(said(old, oldSession)).to.equal('tools: echo')
    // A ceiling that leaves none of the served tools: the prompt is refused with a code, nothing runs.
    const emptied = await ws.serve(yml(), ...bound('subagent_acp'))
    const empty = (await newSession(emptied, ws.dir)).sessionId
    const error = await refusal(prompt(emptied, empty, 'tools?'))
    expect(error.data).to.deep.equal({ code: 'NO_TOOLS_LEFT' })
    expect(error.message, error.message).to.include('leaves this agent none of the tools it serves (ask, echo, secret); give the delegating agent')
    expect(said(emptied, empty)).to.equal('')
    const emptiedByMeta = (await newSession(old, ws.dir, meta({ allowedTools: ['not-here'] }))).sessionId
    expect((await refusal(prompt(old, emptiedByMeta, 'tools?'))).data).to.deep.equal({ code: 'NO_TOOLS_LEFT' })
  })

  it('budget: the lowest of config, SUBAGENT_BUDGET and _meta stops a looping turn with an error naming the limit', async () => {
    const steps = async (served: Awaited<ReturnType<Workspace['serve']>>, crossing?: Record<string, unknown>) => {
      const { sessionId } = await newSession(served, ws.dir, crossing && meta(crossing))
      const error = await refusal(prompt(served, sessionId, 'loop'))
      const reports = served.updates.filter((u) => u.sessionId === sessionId && u.update.sessionUpdate === 'usage_update')
      return { error, steps: reports.at(-1)!.update._meta.cordisSubagents.work.steps as number }
    }
    const env = await ws.serve(yml('budget:\n  maxSteps: 5'), { SUBAGENT_BUDGET: JSON.stringify({ maxSteps: 3 }) })
    const fromEnv = await steps(env)
    expect((fromEnv.error.data as any)).to.deep.equal({ code: 'TURN_FAILED', stopReason: 'budget' })
    expect(fromEnv.error.message).to.match(/steps/i)
    expect(fromEnv.steps).to.equal(3)
    const fromMeta = await steps(env, { budget: { maxSteps: 2 } })
    expect(fromMeta.steps).to.equal(2)
    // _meta cannot raise it above the environment's.
    expect((await steps(env, { budget: { maxSteps: 50 } })).steps).to.equal(3)
    const config = await ws.serve(yml('budget:\n  maxSteps: 4'))
    expect((await steps(config)).steps).to.equal(4)
  })

  it('a prompt\'s crossing re-bases its session (a session opened ahead, the budget spent since), never above the environment\'s', async () => {
    const served = await ws.serve(yml(), { SUBAGENT_BUDGET: JSON.stringify({ maxSteps: 3 }) })
    const stepsOf = async (sessionId: string, meta?: Record<string, unknown>) => {
      const error = await refusal(prompt(served, sessionId, 'loop', meta))
      expect((error.data as any).stopReason).to.equal('budget')
      const reports = served.updates.filter((u) => u.sessionId === sessionId && u.update.sessionUpdate === 'usage_update')
      return reports.at(-1)!.update._meta.cordisSubagents.work.steps as number
    }
    // Opened ahead with what was left then; the prompt says what is left now.
    const ahead = (await newSession(served, ws.dir, meta({ depth: 1, budget: { maxSteps: 3 } }))).sessionId
    expect(await stepsOf(ahead, meta({ depth: 1, budget: { maxSteps: 2 } }))).to.equal(2)
    // The same crossing again keeps the session as it is; none at all too. Spend counts from the re-base.
    const kept = (await newSession(served, ws.dir, meta({ depth: 1, budget: { maxSteps: 2 } }))).sessionId
    expect(await stepsOf(kept, meta({ depth: 1, budget: { maxSteps: 2 } }))).to.equal(2)
    // A prompt cannot raise it above the environment's.
    const raised = (await newSession(served, ws.dir, meta({ depth: 1, budget: { maxSteps: 1 } }))).sessionId
    expect(await stepsOf(raised, meta({ depth: 1, budget: { maxSteps: 50 } }))).to.equal(3)
    // A prompt's tool ceiling that leaves none of the served tools is refused before anything runs.
    const narrowed = (await newSession(served, ws.dir, meta({ depth: 1 }))).sessionId
    const none = await refusal(prompt(served, narrowed, 'tools?', meta({ depth: 1, allowedTools: ['not-served'] })))
    expect((none.data as any).code).to.equal('NO_TOOLS_LEFT')
    // The persona's depth follows the prompt's crossing.
    const deeper = (await newSession(served, ws.dir, meta({ depth: 1 }))).sessionId
    await prompt(served, deeper, 'persona?', meta({ depth: 2 }))
    expect(said(served, deeper)).to.equal('persona: served at depth 2')
  })
})
