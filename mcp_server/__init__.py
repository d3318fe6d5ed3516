"""orc's MCP server: document tools over the ``orc.documents`` services (in memory, stdio or HTTP)."""
