// Answering a child from the chat, through Koishi's own loader: `koishi start` of a temporary
// project whose koishi.yml loads the in-memory database, the mock adapter (@koishijs/plugin-mock),
// the cordis-subagents plugins, this package and fixtures/driver.cjs, with the agents' model on a
// loopback OpenAI-compatible server run by this spec (a scripted model: the far edge). The driver
// talks in the mock channel and prints what the bot sent (see the driver for the scenario).
//
// It runs in a child process: the Koishi worker is CommonJS and require()s our ESM packages (see
// test/koishi-yml.slow.spec.ts), which mocha (ESM only here) cannot host.
import { execFileSync, spawn } from 'node:child_process'
import { copyFileSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect } from 'chai'
import { type ChatMessage, chatModelServer, type ChatModelServer, type ScriptReply } from './support/chat-model-server.js'

const HERE = dirname(fileURLToPath(import.meta.url))
const ROOT = join(HERE, '../../..')
const PACKAGES = ['tools', 'agent', 'model-openai', 'subagents-service', 'provider-spawn', 'subagent-tool', 'koishi-chat']
const SECRET = 'sk-proj-ABCDEFGHIJKLMNOPQRSTUVWX1234567890'

/** The root delegates `Deploy <task>`; the child asks, then reports the answer it got; the root reports the child's result. */
function script(messages: ChatMessage[]): ScriptReply {
  const task = String(messages.find((m) => m.role === 'user')?.content ?? '')
  const results = messages.filter((m) => m.role === 'tool').map((m) => String(m.content))
  if (task.startsWith('Deploy ')) {
    if (!results.length) {
      const hostile = task.includes('gamma') ? ` <at type="all"/> with key ${SECRET} \u001b[31mred\u001b[0m ${'y'.repeat(5000)}` : ''
      return { tool: 'ask_parent', input: { question: `Which region for ${task.slice(7)}?${hostile}` } }
    }
    return { text: `deployed ${task.slice(7)} to ${results.at(-1)}` }
  }
  // `nested`: the root's child delegates the deploy in turn (a grandchild asks).
  if (task.startsWith('Plan ')) {
    if (!results.length) return { tool: 'subagent', input: { description: 'deploy it', prompt: `Deploy ${task.slice(5)}` } }
    return { text: `planned: ${results.at(-1)}` }
  }
  if (!results.length) return { tool: 'subagent', input: { description: `deploy ${task}`, prompt: task === 'nested' ? 'Plan nested' : `Deploy ${task}` } }
  return { text: `root ${task}: ${results.at(-1)}` }
}

function koishiYml(baseURL: string): string {
  const at = (name: string) => `./node_modules/${name}`
  return `plugins:
  ${at('@koishijs/plugin-database-memory')}:db: {}
  ${at('@koishijs/plugin-mock')}:mock: {}
  ${at('@cordis-subagents/tools')}:tools: {}
  ${at('@cordis-subagents/model-openai')}:model:
    baseURL: ${baseURL}
    apiKey: ''
    model: scripted
    maxRetries: 0
  ${at('@cordis-subagents/agent')}:agent:
    model: openai
  ${at('@cordis-subagents/subagents-service')}:subagents: {}
  ${at('@cordis-subagents/provider-spawn')}:spawn:
    name: spawn
    askParent: true
  ${at('@cordis-subagents/subagent-tool')}:subagent:
    provider: spawn
    questions: escalate
    nested: true
  ${at('@cordis-subagents/koishi-chat')}:chat: {}
  ./driver.cjs:driver: {}
`
}

interface Outcome { code: number | null, stdout: string, stderr: string }

function koishiStart(cwd: string, guard: number): Promise<Outcome> {
  const env: NodeJS.ProcessEnv = { ...process.env }
  for (const key of Object.keys(env)) if (key === 'NODE_OPTIONS' || key.startsWith('KOISHI_') || key.startsWith('OPENAI_')) delete env[key]
  const child = spawn(process.execPath, [join(ROOT, 'node_modules/koishi/lib/cli/index.js'), 'start', 'koishi.yml'], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk) => { stdout += chunk })
  child.stderr.on('data', (chunk) => { stderr += chunk })
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`koishi start did not exit within ${guard} ms\nstdout:\n${stdout}\nstderr:\n${stderr}`))
    }, guard)
    child.on('close', (code) => { clearTimeout(timer); resolve({ code, stdout, stderr }) })
  })
}

describe('koishi-chat: answering a child from the chat (koishi start, mock adapter, loopback model)', function () {
  this.timeout(240_000)
  let project: string
  let model: ChatModelServer
  let run: Outcome
  let result: { steps: Record<string, any>, sent: string[], error?: string }

  before(async () => {
    execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-b', ...PACKAGES.map((p) => `packages/${p}`)], { cwd: ROOT, stdio: 'pipe' })
    model = await chatModelServer(script)
    project = mkdtempSync(join(tmpdir(), 'koishi-chat-'))
    writeFileSync(join(project, 'koishi.yml'), koishiYml(model.baseURL))
    copyFileSync(join(HERE, 'fixtures/driver.cjs'), join(project, 'driver.cjs'))
    symlinkSync(join(ROOT, 'node_modules'), join(project, 'node_modules'), 'dir')
    run = await koishiStart(project, 200_000)
    const line = run.stdout.split('\n').find((l) => l.startsWith('RESULT '))
    expect(line, `no RESULT line\nstdout:\n${run.stdout}\nstderr:\n${run.stderr}`).to.not.equal(undefined)
    result = JSON.parse(line!.slice('RESULT '.length))
  })

  after(async () => {
    await model?.close()
    if (project) rmSync(project, { recursive: true, force: true })
  })

  const steps = () => result.steps
  /**
   * What the bot sent in a step's window: `reply` once, and besides it at most the run's own end
   * line (`Run rN ended…`, `bound rN done…`), which the run may post before the step's window closes.
   */
  const replied = (window: string[], reply: string, run: string) => {
    expect(window).to.include(reply)
    expect(window.filter((text) => text !== reply && !text.startsWith(`Run ${run} ended`) && !text.startsWith(`bound ${run} done`))).to.deep.equal([])
  }

  it('runs the whole scenario and exits 0, with no error logged', () => {
    expect(result.error, result.error).to.equal(undefined)
    expect(run.code, run.stderr).to.equal(0)
    expect(`${run.stdout}\n${run.stderr}`).to.not.match(/\[E\]|cannot resolve plugin/)
  })

  it('posts the question a child parks on to the channel, with its tag and how to answer', () => {
    // The question may be posted before the step's window closes.
    // Tags start at a random number per process (the record renames them q1, q2, … in order: fixtures/driver.cjs).
    expect(steps().firstTag).to.be.within(1000, 9999)
    expect(steps().start.filter((text: string) => !text.startsWith('[q1] '))).to.deep.equal(['Run r1 started: alpha'])
    expect(steps().question).to.match(/^\[q1\] Question from subagent run-\S+ of run r1 \(ask\):\nWhich region for alpha\?\n/)
    expect(steps().question).to.include('subagents.answer q1 &lt;answer&gt;')
  })

  it('refuses a reply from a user who may not answer, and lets other talk pass', () => {
    expect(steps().bobReply).to.deep.equal(['Only the user who started its run (or an admin) may answer [q1]; your reply was not passed on.'])
    expect(steps().bobUnquoted).to.deep.equal([])
    expect(steps().listParked.join('\n')).to.match(/^r1 parked \(by alice\): alpha\n {2}\[q1\] Which region for alpha\?/)
  })

  it('resumes the child with the starter\'s reply and posts the final answer', () => {
    replied(steps().aliceReply, 'Answer to [q1] passed on; run r1 goes on.', 'r1')
    expect(steps().final).to.equal('Run r1 ended: completed.\nroot alpha: deployed alpha to eu-west')
    // The child's ask_parent call got the answer as its result.
    const child = model.requests.find((messages) => messages.some((m) => m.role === 'user' && m.content === 'Deploy alpha') && messages.some((m) => m.role === 'tool'))
    expect(child!.filter((m) => m.role === 'tool').map((m) => m.content)).to.deep.equal(['eu-west'])
  })

  it('refuses a second answer to an answered question, by command or by reply', () => {
    expect(steps().doubleCommand).to.deep.equal(['[q1] takes no answer any more: it was answered by alice.'])
    expect(steps().doubleQuote).to.deep.equal(['[q1] takes no answer any more: it was answered by alice.'])
    expect(result.sent.filter((text) => text.startsWith('Run r1 ended: completed'))).to.have.length(1)
  })

  it('answers with `subagents.answer <tag> <text>`', () => {
    replied(steps().answerCommand, 'Answer to [q2] passed on; run r2 goes on.', 'r2')
    expect(steps().final2).to.equal('Run r2 ended: completed.\nroot beta: deployed beta to eu-north')
  })

  it('posts a hostile question bounded, redacted and as text; refuses a huge reply; reads mentions as text', () => {
    const question: string = steps().hostileQuestion
    expect(question).to.include('&lt;at type="all"/&gt;')
    expect(question).to.not.include(SECRET)
    expect(question).to.not.match(/[\u0000-\u0008\u000b-\u001f]/)
    expect(question).to.include('[cut at 1500 characters]')
    expect(question.length).to.be.below(2200)
    expect(steps().huge).to.deep.equal(['That answer is over 4000 characters (maxAnswerLength); [q3] still waits for a shorter one.'])
    replied(steps().mentions, 'Answer to [q3] passed on; run r3 goes on.', 'r3')
    expect(steps().final3).to.equal('Run r3 ended: completed.\nroot gamma: deployed gamma to @bob use @all eu')
  })

  it('tells a late reply that the question was answered elsewhere (the host\'s resume), never resuming twice', () => {
    // The run's end may be posted in the same moment (the host's resume fulfils when the run went on).
    expect(steps().late).to.include('[q4] takes no answer any more: it was answered already (elsewhere), and its run went on.')
    expect(steps().final4).to.equal('Run r4 ended: completed.\nroot delta: deployed delta to from the console')
    expect(result.sent.filter((text) => text.startsWith('Run r4 ended'))).to.have.length(1)
    expect(result.sent.filter((text) => text.startsWith('Answer to [q4]'))).to.deep.equal([])
  })

  it('cancels a run for its starter only; nothing of it stays live', () => {
    expect(steps().cancelBob).to.deep.equal(['Only the user who started run r5 or an admin may cancel it.'])
    // The run's end is posted as the cancel takes effect, around the command's own reply.
    expect(steps().cancelAlice).to.include('Cancelling run r5.')
    expect(steps().cancelAlice.filter((text: string) => text !== 'Cancelling run r5.')).to.deep.equal(['Run r5 ended: cancelled (cancelled by alice).'])
    expect(steps().cancelled).to.equal('Run r5 ended: cancelled (cancelled by alice).')
    expect(steps().afterCancel).to.deep.equal({ runs: 0, pending: 0 })
  })

  it('lets an admin answer; binds an integration\'s own root run through ctx.subagentChat', () => {
    replied(steps().adminReply, 'Answer to [q6] passed on; run r6 goes on.', 'r6')
    expect(steps().final6).to.equal('Run r6 ended: completed.\nroot zeta: deployed zeta to ap-south')
    expect(steps().bind.filter((text: string) => !text.startsWith('[q7] '))).to.deep.equal(['bound r7'])
    replied(steps().bindReply, 'Answer to [q7] passed on; run r7 goes on.', 'r7')
    expect(steps().bindFinal).to.equal('bound r7 done: root theta: deployed theta to us-east')
    expect(steps().listEnded.join('\n').split('\n').slice(0, 2)).to.deep.equal(['r7 ended released (by alice): theta', 'r6 ended completed (by alice): zeta'])
  })

  it('posts a grandchild\'s question once, with the path of runs down to it, and its answer reaches it', () => {
    expect(steps().nestedQuestion).to.match(/^\[q8\] Question from subagent run-\S+ &gt; run-\S+ of run r8 \(ask\):\nWhich region for nested\?\n/)
    expect(steps().nestedPosts).to.equal(1)
    expect(steps().nestedFinal).to.equal('Run r8 ended: completed.\nroot nested: planned: deployed nested to eu-central')
  })

  it('disposed with parked runs: tells each channel its run ended, cancels a bound run\'s delegation, leaves nothing', () => {
    expect(steps().afterDispose).to.deep.equal({ runs: 0, pending: 0, service: 'gone' })
    expect(steps().replyAfterDispose).to.deep.equal([])
    // Each end line once (not waited for by the unload); no question is told anything more.
    const stopped = 'cancelled (the subagents chat plugin was reloaded or unloaded)'
    expect([...steps().sentAfterDispose].sort()).to.deep.equal([`Run r10 ended: ${stopped}.`, `Run r9 ended: ${stopped}.`])
    // The integration's root agent went on once its delegation was cancelled, and said so itself.
    expect(steps().boundAfterDispose).to.match(/^bound r10 done: root lambda: /).and.include(`: ${stopped.slice('cancelled ('.length, -1)}`)
    // Loaded again in the same app: a question of before is told why it takes no answer.
    expect(steps().answerAfterReload).to.deep.equal([`[q9] takes no answer any more: run r9 ended ${stopped}.`])
  })

  it('cancels a run that outlives `timeout` (parked time included) and leaves nothing; loads again after a dispose', () => {
    // Loaded again, run ids go on (r11, not r1 again): the id of a run of before names no run now.
    expect(steps().oldIdAfterReload).to.deep.equal(['No run r1 in this channel (`subagents` lists them).'])
    expect(steps().timedOut).to.equal('Run r11 ended: cancelled (timeout: the run passed 300 ms (timeout)).')
    // A lower bound only, from the driver's own timestamps around the enforced bound.
    expect(steps().timedOutAfterMs).to.be.at.least(300)
    expect(steps().afterTimeout).to.deep.equal({ runs: 0, pending: 0 })
  })
})
