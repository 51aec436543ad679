"""Command engines: each wires spaces, search, run and ledger for one CLI command and returns a
result object that the reports render. cli.py only parses options and calls these."""
