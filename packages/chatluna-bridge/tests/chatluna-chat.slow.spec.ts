// A chat message as the trigger: a private message through Koishi's mock adapter reaches ChatLuna's chat
// pipeline in agent mode, whose agent delegates through our `subagent` tool to a spawn child running on a
// ChatLuna model, and the reply carries the child's answer. In a child process: see fixtures/chat-app.ts
// for why (ChatLuna leaves timers behind once its chat pipeline ran).
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { expect } from 'chai'

const APP = fileURLToPath(new URL('./fixtures/chat-app.ts', import.meta.url))

function runChatApp(): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['--import', 'tsx', '--conditions=cordis-subagents-source', '--no-experimental-require-module', APP], {
      timeout: 60_000, maxBuffer: 4 * 1024 * 1024,
    }, (error, stdout, stderr) => (error ? reject(new Error(`${error.message}\n${stderr.slice(-2000)}`)) : resolve(stdout)))
  })
}

describe('a chat message to ChatLuna in agent mode delegates through the bridge (Koishi mock adapter)', function () {
  this.timeout(90_000)

  it('the reply carries the child\'s answer; the child ran on the ChatLuna model with its own prompt', async () => {
    const line = (await runChatApp()).split('\n').find((text) => text.startsWith('RESULT '))
    expect(line, 'the app printed its RESULT').to.be.a('string')
    const { replies, ends, requests } = JSON.parse(line!.slice('RESULT '.length)) as {
      replies: string[]; ends: string[]; requests: { roles: string[]; tools: string[]; model: string }[]
    }
    expect(replies).to.deep.equal(['lead got: one, two, three'])
    expect(ends).to.deep.equal(['spawn:1:completed'])
    // ChatLuna's agent was offered our tool; the child's call (system + its prompt, no tools) went to m1.
    expect(requests[0].tools).to.include('subagent')
    expect(requests.filter((request) => request.roles.join() === 'system,user' && request.tools.length === 0)).to.have.length(1)
    expect(requests.every((request) => request.model === 'm1')).to.equal(true)
  })
})
