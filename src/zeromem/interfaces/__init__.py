"""Ways in from outside: the command line (``cli``); servers and MCP join here later."""
