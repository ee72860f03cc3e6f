/**
 * `@modelcontextprotocol/sdk` (and our schema validation on ajv and re2js), imported on first use:
 * their cold import takes a large part of a second, which an app that never connects should not pay.
 */
export async function clientSdk() {
  const [client, http, stdio, types, validation] = await Promise.all([
    import('@modelcontextprotocol/sdk/client/index.js'),
    import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
    import('@modelcontextprotocol/sdk/shared/stdio.js'),
    import('@modelcontextprotocol/sdk/types.js'),
    import('./validation.js'),
  ])
  return {
    Client: client.Client,
    StreamableHTTPClientTransport: http.StreamableHTTPClientTransport,
    ReadBuffer: stdio.ReadBuffer,
    serializeMessage: stdio.serializeMessage,
    ToolListChangedNotificationSchema: types.ToolListChangedNotificationSchema,
    ErrorCode: types.ErrorCode,
    CreateTaskResultSchema: types.CreateTaskResultSchema,
    CallToolResultSchema: types.CallToolResultSchema,
    McpError: types.McpError,
    outputSchemas: validation.outputSchemas,
    schemaCheck: validation.schemaCheck,
  }
}

export type ClientSdk = Awaited<ReturnType<typeof clientSdk>>
