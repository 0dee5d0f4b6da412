"""The recipe for a new sharing backend: copy this module to ``app/sharing/backends/NAME.py``, set
``name`` to NAME and replace the copies with the backend's own hand-over. That one module is the
whole backend (and its tests): ``backend_module_names`` lists every module of this package (the
CLI's ``--backend`` choices; modules whose name starts with "_", like this one, are not backends),
the registry imports each, and the class registers itself by subclassing ``SharingBackend`` with a
``name``. Registering checks it (``check_backend``, app/sharing/contract.py): a missing ``name``,
``title`` or ``capabilities``, or a hook with another signature than ``BackendHooks``'s, fails at
import, naming the hook. The contract suite (tests/contract/) then runs every scene on it.

What a backend implements (``BackendHooks`` says each hook's contract):

- class attributes: ``name``, ``title`` (one line), ``capabilities`` (what sync modes and scenes
  read: ``zero_copy``, ``gl_context``, ``semaphores``, ``buffer_textures``), ``probe_order`` (the
  registry probes backends in this order and ``--backend auto`` takes the first available one),
  ``rule_set`` (the error lists its calls are validated against), ``nests_acquisitions``;
  optional: ``teaching`` and ``hazard_effects`` texts;
- ``probe(env)`` (class method): ``Probe(name, True, what it will use)``, or ``Probe(name, False,
  why not)``: ``info``, the panel and the report show the reason; a probe never calls an entry point
  the device does not list, and one that raises is a refusal with the exception as its reason;
- ``_create_context()``: the CL context; ``_share_buffer`` / ``_share_texture`` (or ``_new_buffer``
  / ``_new_texture``): each shared object's CL memory object;
- ``_enqueue_acquire`` / ``_enqueue_release(queue, objects, wait_for, event=True)``: the hand-over
  GL -> CL and CL -> GL of objects already validated (the hand-over engine, app/sharing/handover.py,
  validates, then calls these, then tracks ownership); return the last event (or None where nothing
  was enqueued and nothing waits);
- optional: ``_upload``, ``_unshare`` (its own per-object state released, then the base's),
  ``gl_before_acquire`` / ``gl_after_release``, ``memory_tab``, ``_close_extra``,
  ``native_hand_over``.

The public calls (``acquire``, ``release``, ``create_buffer`` ...) are ``SharingBackend``'s: a
backend never validates or tracks itself. This one copies, as host_copy does: CL works on its own
buffers and images, the acquire copies GL's data into them, the release copies CL's back.
"""
from __future__ import annotations

import pyopencl as cl

from app.cl.formats import cl_image_format
from app.gl import api as GL
from app.gl.objects import GlBuffer
from app.gl.upload import READ, WRITE_DISCARD, mapped, texture_from_unpack_buffer, texture_to_pack_buffer
from app.sharing.base import ACCESS_FLAGS, Capabilities, Probe, ProbeEnv, SharedObject, SharingBackend


class TemplateCopy(SharingBackend):
    name = "template"  # the module's name: app/sharing/backends/template.py
    title = "copies through mapped GL buffers, every hand-over (the backend recipe)"
    probe_order = 95  # after every real backend: ``auto`` never takes it before them
    capabilities = Capabilities(zero_copy=False)
    nests_acquisitions = False  # its own hand-over: one release hands back any number of acquires

    @classmethod
    def probe(cls, env: ProbeEnv) -> Probe:
        if not env.choice.device.image_support:  # textures are shared as CL images
            return Probe(cls.name, False, f"{env.choice.device.name.strip()} has no image support")
        return Probe(cls.name, True, "copies through mapped GL buffers on every hand-over")

    def _create_context(self) -> cl.Context:
        self._pbos: dict[int, GlBuffer] = {}  # id(shared object) -> the pixel buffer its texels pass through
        return cl.Context([self.device])

    def _share_buffer(self, gl: GlBuffer, access: str):
        return cl.Buffer(self.context, ACCESS_FLAGS[access], gl.nbytes)

    def _share_texture(self, gl, access: str):
        return cl.create_image(self.context, ACCESS_FLAGS[access], cl_image_format(gl.texel_format),
                               shape=(gl.width, gl.height))

    def _pbo(self, obj: SharedObject) -> GlBuffer:
        if id(obj) not in self._pbos:
            self._pbos[id(obj)] = GlBuffer(f"{obj.label}.pbo", obj.gl.nbytes, target=GL.GL_PIXEL_PACK_BUFFER,
                                           usage=GL.GL_STREAM_COPY, owner=self.name)
        return self._pbos[id(obj)]

    def _enqueue_acquire(self, queue, objects, wait_for, event=True):
        events = [self._copy(queue, obj, wait_for, to_cl=True) for obj in objects if obj.access != "write_only"]
        if not events and not wait_for:
            return None  # nothing copied, nothing to order after: bookkeeping only
        return cl.enqueue_marker(queue, wait_for=events or wait_for)

    def _enqueue_release(self, queue, objects, wait_for, event=True):
        events = [self._copy(queue, obj, wait_for, to_cl=False) for obj in objects if obj.access != "read_only"]
        return cl.enqueue_marker(queue, wait_for=events or wait_for)

    def _copy(self, queue, obj: SharedObject, wait_for, *, to_cl: bool) -> cl.Event:
        """One blocking copy between GL's object and CL's (GL's mapping is valid only until it is
        unmapped, so the copy completes inside it)."""
        gl = obj.gl
        if isinstance(gl, GlBuffer):
            target = GL.GL_COPY_READ_BUFFER if to_cl else GL.GL_COPY_WRITE_BUFFER
            with mapped(target, gl.name, gl.nbytes, READ if to_cl else WRITE_DISCARD) as view:
                dst, src = (obj.mem, view) if to_cl else (view, obj.mem)
                return cl.enqueue_copy(queue, dst, src, wait_for=wait_for, is_blocking=True)
        pbo, region = self._pbo(obj), (gl.width, gl.height)
        if to_cl:
            texture_to_pack_buffer(gl, pbo.name)
        target = GL.GL_PIXEL_PACK_BUFFER if to_cl else GL.GL_PIXEL_UNPACK_BUFFER
        with mapped(target, pbo.name, gl.nbytes, READ if to_cl else WRITE_DISCARD) as view:
            dst, src = (obj.mem, view) if to_cl else (view, obj.mem)
            event = cl.enqueue_copy(queue, dst, src, origin=(0, 0), region=region, wait_for=wait_for,
                                    is_blocking=True)
        if not to_cl:
            texture_from_unpack_buffer(gl, pbo.name)
        return event

    def _unshare(self, obj: SharedObject) -> None:
        pbo = self._pbos.pop(id(obj), None)
        if pbo is not None:
            pbo.release()
        super()._unshare(obj)
