/**
 * `@modelcontextprotocol/sdk`, imported on first use: its cold import takes a large part of a
 * second (zod schemas for the whole protocol), which an app that never connects should not pay.
 */
export async function clientSdk() {
  const [client, http, stdio, types] = await Promise.all([
    import('@modelcontextprotocol/sdk/client/index.js'),
    import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
    import('@modelcontextprotocol/sdk/shared/stdio.js'),
    import('@modelcontextprotocol/sdk/types.js'),
  ])
  return {
    Client: client.Client,
    StreamableHTTPClientTransport: http.StreamableHTTPClientTransport,
    ReadBuffer: stdio.ReadBuffer,
    serializeMessage: stdio.serializeMessage,
    ToolListChangedNotificationSchema: types.ToolListChangedNotificationSchema,
    ErrorCode: types.ErrorCode,
    McpError: types.McpError,
  }
}

export type ClientSdk = Awaited<ReturnType<typeof clientSdk>>
