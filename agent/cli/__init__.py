"""The ``agent`` command: one module per subcommand, each with a ``register(subparsers)``."""
