/** The server side of `@modelcontextprotocol/sdk`, imported on first use (its cold import is slow). */
export async function serverSdk() {
  const [server, types, http, stdio] = await Promise.all([
    import('@modelcontextprotocol/sdk/server/index.js'),
    import('@modelcontextprotocol/sdk/types.js'),
    import('@modelcontextprotocol/sdk/server/streamableHttp.js'),
    import('@modelcontextprotocol/sdk/server/stdio.js'),
  ])
  return {
    Server: server.Server,
    ListToolsRequestSchema: types.ListToolsRequestSchema,
    CallToolRequestSchema: types.CallToolRequestSchema,
    isInitializeRequest: types.isInitializeRequest,
    StreamableHTTPServerTransport: http.StreamableHTTPServerTransport,
    StdioServerTransport: stdio.StdioServerTransport,
  }
}

export type ServerSdk = Awaited<ReturnType<typeof serverSdk>>
