"""k25console: the operator's Textual console. It talks to the agent only through ``console.link``."""
