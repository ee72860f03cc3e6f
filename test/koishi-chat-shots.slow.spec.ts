// The chat flow as a person sees it, in Koishi's own chat sandbox in its console (test/support/koishi-chat-flow.ts:
// `koishi start`, @koishijs/plugin-sandbox, koishi-chat, a scripted loopback model, Chromium): the question of a
// child appears in the chat, the user's answer there resumes it, and its answer is posted. The same flow writes
// the README's pictures (`npm run screenshot:koishi-chat`).
import { expect } from 'chai'
import { ANSWER, chatFlow, TASK } from './support/koishi-chat-flow.js'

describe('koishi-chat in Koishi\'s console sandbox: a child asks in the chat and the user answers there (chromium)', function () {
  this.timeout(300_000)

  it('posts the run, the child\'s question with how to answer, then the answer once the user replied; no error in the page', async () => {
    const { steps, errors } = await chatFlow()
    expect(steps.map((step) => step.name)).to.deep.equal(['asked', 'answered'])
    const [asked, answered] = steps
    expect(asked.messages).to.have.length(3)
    expect(asked.messages.slice(0, 2)).to.deep.equal([`subagents.run ${TASK}`, `Run r1 started: ${TASK}`])
    // A tag numbered from a random start per process (1000–9999), the same in the heading and the hint.
    const tag = /^\[(q\d{4})\]/.exec(asked.messages[2]!)?.[1]
    expect(tag, asked.messages[2]).to.be.a('string')
    expect(asked.messages[2]).to.match(new RegExp(
      `^\\[${tag}\\] Question from subagent \\S+ of run r1 \\(ask\\):\\nWhich region for ${TASK}: eu-west or us-east\\?\\nReply to this message to answer, or: subagents\\.answer ${tag} <answer>$`))
    // Nothing more was posted while the child waited; the answer resumed it once, and its answer is the run's.
    expect(answered.messages.slice(0, 3)).to.deep.equal(asked.messages)
    expect(answered.messages.slice(3)).to.deep.equal([
      `subagents.answer ${tag} ${ANSWER}`,
      `Answer to [${tag}] passed on; run r1 goes on.`,
      `Run r1 ended: completed.\nDone: deployed ${TASK} to ${ANSWER}`,
    ])
    expect(errors, errors.join('\n')).to.deep.equal([])
  })
})
