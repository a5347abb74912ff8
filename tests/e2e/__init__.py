"""End-to-end tests: the console (Pilot) -> a real OpenSSH sshd on 127.0.0.1 -> ``agent serve`` on the
simulated engine, all real processes; faults, bad input, access and a short soak.

Run: ``.venv/bin/python -m pytest tests/e2e -q`` (or ``-m e2e`` from the whole suite). Needs
``/usr/sbin/sshd`` and ``ssh-keygen`` (``.ci/run`` installs openssh-server). As root the sshd needs
``/run/sshd`` (created here) and the real full-disk test mounts a 64 KiB tmpfs; without root that
test is skipped and the in-process ENOSPC test still runs. The full ten-minute soak is
``python -m bench.costs.soak``.
"""
