"""Installing the SGLang stack on the GPU host, and checking that the host fits a profile.

* ``patches/``: the SGLang patch set (unified diffs against the pinned wheel, one README each).
* ``patchset``/``patching``: reading the set; applying, detecting and reverting it on site-packages.
* ``plan``/``stack``/``installer``/``manifest``: ``agent install`` (a build beside the old one, then an
  atomic link switch; the manifest whose hash ``/v1/version`` reports).
* ``doctor``: ``agent doctor``'s checks.
"""
