import type { AgentCard, Message, SendMessageRequest, StreamResponse, Task } from '@a2a-js/sdk'
import type { AgentCardSignatureGenerator } from '@a2a-js/sdk'
import {
  type AgentExecutor, DefaultRequestHandler, type ExecutionEventBusManager, type PushNotificationSender, type PushNotificationStore,
  type ServerCallContext, type TaskStore,
} from '@a2a-js/sdk/server'
import { FollowUps, withoutReferences } from './follow-ups.js'

/** What a handler may add to the SDK's: the card's signer, push notifications. */
export interface HandlerExtras {
  signCard?: AgentCardSignatureGenerator
  push?: { store: PushNotificationStore; sender: PushNotificationSender }
}

/**
 * The SDK's request handler with the checks of a message on a known task: its references bounded
 * and never loaded, and at most `maxFollowUpsPerTask` messages in flight per task (`FollowUps`).
 */
export class TaskRequestHandler extends DefaultRequestHandler {
  readonly followUps: FollowUps

  constructor(
    card: AgentCard, store: TaskStore, executor: AgentExecutor, buses: ExecutionEventBusManager, maxFollowUpsPerTask: number,
    extras: HandlerExtras = {},
  ) {
    super(card, store, executor, buses, extras.push?.store, extras.push?.sender, undefined, extras.signCard)
    this.followUps = new FollowUps(buses, maxFollowUpsPerTask)
  }

  override async sendMessage(params: SendMessageRequest, context: ServerCallContext): Promise<Message | Task> {
    const place = this.followUps.enter(params, context)
    let returned = false
    try {
      const result = await super.sendMessage(withoutReferences(params), context)
      returned = true
      return result
    } finally {
      place.settled(returned)
    }
  }

  override async *sendMessageStream(params: SendMessageRequest, context: ServerCallContext): AsyncGenerator<StreamResponse> {
    const place = this.followUps.enter(params, context)
    try {
      return yield* super.sendMessageStream(withoutReferences(params), context)
    } finally {
      // A stream follows the turn to its end (or its client left, and the SDK stopped following).
      place.settled(false)
    }
  }
}
