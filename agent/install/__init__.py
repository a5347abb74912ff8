"""Installing the SGLang stack on the GPU host, and checking that the host fits a profile.

* ``overlay/``: the modules of ours that SGLang imports, laid out as in site-packages (its README says
  how to work on them); ``patches/``: the hooks in SGLang's own files, an ordered series.
* ``patchset``/``patching``: reading the set; installing, detecting and removing it on site-packages.
* ``series``: the series as a git tree to edit, and back (``python -m agent.install.series``).
* ``plan``/``stack``/``installer``/``manifest``: ``agent install`` (a build beside the old one, then an
  atomic link switch; the manifest whose hash ``/v1/version`` reports).
* ``doctor``: ``agent doctor``'s checks.
"""
