"""Checks of every hand-over against the specification texts, and the ownership of shared objects.

``spec`` (the validator and the cl_khr_gl_sharing rules), ``external_memory`` and ``semaphores``
(the rules of those extensions' calls), ``liveness`` (which objects are alive, from glshare's own
registry), ``ownership`` (who owns each shared object; spec violations and advice), ``findings``
(the two kinds and the strict modes), ``khr_extracts.txt`` (the Khronos sentences quoted).
"""
