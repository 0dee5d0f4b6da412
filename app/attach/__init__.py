"""``glshare attach``: another program's OpenCL/OpenGL hand-overs recorded by glshare's layer and
preload library (app/native/attach/) and checked, timed and shown by glshare's own model.

The record stream is described in ``wire``."""
