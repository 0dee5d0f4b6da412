"""Checks of every hand-over against the specification texts, and the ownership of shared objects.

``families`` (the registry: each rule-set family registers itself, in its own module, with its
rules, hazards, lab cases and teaching texts: ``gl`` for cl_khr_gl_sharing, ``external_memory``,
``semaphores`` for cl_khr_semaphore, ``planar`` for cl_amd_planar_yuv), ``spec`` (the validator of
the acquire and release calls), ``liveness`` (which objects are alive, from glshare's own
registry), ``ownership`` (who owns each shared object; spec violations and advice), ``findings``
(the two kinds, the strict modes, the texts' versions), ``khr_extracts.txt`` (the Khronos sentences
quoted).
"""
