import { ProxyTracerProvider, type TracerProvider } from '@opentelemetry/api'

/** The API's own no-op provider: what its global proxy delegates to while no SDK is registered. */
const NOOP_PROVIDER = new ProxyTracerProvider().getDelegate()

/**
 * Whether spans of `provider` can be recorded right now. The API's global provider is a proxy
 * that delegates to a no-op until a host registers an SDK, possibly after this plugin loaded, so
 * the answer is asked per run: one method call, no span, no context. A provider passed in the
 * config (or a proxy of another copy of the API) is taken as recording.
 */
export function recordingCheck(provider: TracerProvider): () => boolean {
  if (provider === NOOP_PROVIDER) return () => false
  if (!(provider instanceof ProxyTracerProvider)) return () => true
  return () => provider.getDelegate() !== NOOP_PROVIDER
}
