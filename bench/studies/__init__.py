"""The studies behind issues: the autopilot, the load ramp, repeatability, the zero-step costs, the
upshift's recovery. Each runs against the simulated engine here or a real engine on a GPU host and
prints what the issue asked; see ``bench/README.md``."""
