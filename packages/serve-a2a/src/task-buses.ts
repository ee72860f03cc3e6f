import {
  DefaultExecutionEventBus, type ExecutionEventBus, type ExecutionEventBusManager, ServerCallContext,
} from '@a2a-js/sdk/server'

const UNSCOPED = new ServerCallContext()

/**
 * The event buses of the tasks executing now, one per task, as the SDK's own manager files them (tenant, the caller's
 * user name or `unknown`, task id) but in one flat map: the SDK's keeps an empty map per tenant and caller it ever saw,
 * so a client naming a new tenant with each message grew it for good.
 */
export class TaskBuses implements ExecutionEventBusManager {
  private readonly buses = new Map<string, ExecutionEventBus>()

  createOrGetByTaskId(taskId: string, context?: ServerCallContext): ExecutionEventBus {
    const key = busKey(taskId, context)
    let bus = this.buses.get(key)
    if (!bus) this.buses.set(key, bus = new DefaultExecutionEventBus())
    return bus
  }

  getByTaskId(taskId: string, context?: ServerCallContext): ExecutionEventBus | undefined {
    return this.buses.get(busKey(taskId, context))
  }

  cleanupByTaskId(taskId: string, context?: ServerCallContext): void {
    const key = busKey(taskId, context)
    this.buses.get(key)?.removeAllListeners()
    this.buses.delete(key)
  }

  /** Buses held now. */
  get size(): number {
    return this.buses.size
  }
}

function busKey(taskId: string, context = UNSCOPED): string {
  return `${context.tenant ?? ''}\u0000${context.user?.userName || 'unknown'}\u0000${taskId}`
}
