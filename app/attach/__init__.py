"""``glshare attach``: another program's OpenCL/OpenGL hand-overs recorded by glshare's layer and
preload library (app/native/attach/) and checked, timed and shown by glshare's own model.

``wire`` (the record stream's format, and its parsing), ``launch`` (the program's environment, the
reader thread, strict answers), ``model`` (each process's records fed to the scenes' validator and
ownership tracker), ``timeline`` (device stamps on the CPU clock; hand-overs as frame records for
ownership lanes and races), ``report`` and ``trace`` (the outputs), ``command`` (the command line's
``attach``), ``pyhook/sitecustomize.py`` (the Python site hook, run inside the attached program).
docs/attach.md says what is recorded, checked and not seen."""
