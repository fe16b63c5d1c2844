"""citeline.mcp_server: the MCP server (stdio) over one Engine, importing only citeline.engine and
citeline.fronts (the folder is not named `mcp`, which would hide the MCP SDK's `mcp` package
wherever the checkout is on sys.path)."""
