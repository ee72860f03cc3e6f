import { createHash } from 'node:crypto'
import type { Request, Response, Router } from 'express'
import type { A2ARequestHandler } from '@a2a-js/sdk/server'

/**
 * The agent card's route. A client that asks for 0.3 (or names no version) gets the SDK's 0.3 card
 * (its compat router); every other client gets the 1.0 card in protobuf's JSON form
 * (`AgentCard.toJSON`: a oneof as its member's field, enums by name, defaults left out), which is
 * what A2A 1.0 publishes and what the 1.x SDK's card resolver reads. The SDK's own 1.0 card handler
 * sends `JSON.stringify` of its in-memory card instead, whose security scheme reads
 * `{ scheme: { $case, value } }` and is lost on the client's side. The signed card (`signing`) is
 * signed over this same JSON form, so what is served is what verifies.
 *
 * Loads what the route is made of; the function it resolves with makes the route without waiting (the server makes it
 * once its port is bound, before any request is read).
 */
export async function cardRouterMaker(): Promise<(handler: A2ARequestHandler) => Router> {
  const [{ default: express }, { legacyAgentCardRouter }, { AgentCard }] = await Promise.all([
    import('express'),
    import('@a2a-js/sdk/compat/v0_3/server/express'),
    import('@a2a-js/sdk'),
  ])
  return (handler) => {
    const router = express.Router()
    router.use(legacyAgentCardRouter({ agentCardProvider: handler, cache: { maxAge: 0 } }))
    router.get('/', async (req: Request, res: Response) => {
      res.append('Vary', 'A2A-Version')
      let body: string
      try {
        body = JSON.stringify(AgentCard.toJSON(await handler.getAgentCard()))
      } catch {
        res.status(500).json({ error: 'The agent card could not be made.' })
        return
      }
      res.setHeader('ETag', `W/"${createHash('sha256').update(body).digest('hex').slice(0, 16)}"`)
      res.setHeader('Cache-Control', 'no-cache')
      if (req.fresh) return void res.status(304).end()
      res.setHeader('Content-Type', 'application/json')
      res.status(200).send(body)
    })
    return router
  }
}
