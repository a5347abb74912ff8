"""`k25console --demo`: a local agent on the simulated engine, and traffic that makes every view move."""
