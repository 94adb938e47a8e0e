"""One module per subcommand that is not `check` (pre-commit's `commands/`)."""
