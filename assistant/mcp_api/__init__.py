"""The MCP tools (plain functions over the services) and the MCP server that serves them over stdio and HTTP."""
