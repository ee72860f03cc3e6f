import { Schema } from 'cordis'
import { count } from '@cordis-subagents/shared'
import type { TracerProvider } from '@opentelemetry/api'

export interface Config {
  /** Record prompts, responses and tool arguments/results on spans (off: they may hold personal data or secrets). */
  captureContent?: boolean
  /** Characters kept of each captured text (longer ones are cut). */
  maxContentLength?: number
  /** Root runs continue the trace in `TRACEPARENT` / `TRACESTATE` of this process' environment (set by a parent host). */
  fromEnvironment?: boolean
  /** Join array-valued attributes (`gen_ai.response.finish_reasons`) into comma-separated strings, for receivers that reject arrays. */
  flatAttributes?: boolean
  /** The tracer provider to use (programmatic only); default: the global one (`trace.setGlobalTracerProvider`). */
  tracerProvider?: TracerProvider
}

export const Config: Schema<Config> = Schema.object({
  captureContent: Schema.boolean().default(false).description('Record prompts, model output and tool arguments/results on spans (gen_ai.input.messages, gen_ai.output.messages, gen_ai.tool.call.arguments/result). Off by default: they may hold personal data or secrets.'),
  maxContentLength: count({ min: 1, max: 1_000_000 }).default(4096).description('Characters kept of each captured text; longer ones are cut.'),
  fromEnvironment: Schema.boolean().default(true).description('Root runs continue the trace named by TRACEPARENT / TRACESTATE in this process\' environment (what provider-acp sets for an ACP child).'),
  flatAttributes: Schema.boolean().default(false).description('Join array-valued span attributes (gen_ai.response.finish_reasons) into comma-separated strings. Turn on when your trace receiver rejects array attributes (an OTLP export then fails with HTTP 400/500); off keeps the semantic conventions\' string[] form.'),
  tracerProvider: Schema.any().hidden().description('A TracerProvider (programmatic only). Default: the global one.'),
})

/** The schema's defaults, for a programmatic `new Telemetry(ctx, {})`. */
export const DEFAULTS = Config({})
