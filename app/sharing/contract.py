"""What a backend implements: the hooks of ``SharingBackend`` a backend module may override, one
signature each, checked when the backend registers (``check_backend``, from
``SharingBackend.__init_subclass__``), so a hook with another signature fails at import, naming it.

The public calls (``acquire``, ``release``, ``create_buffer`` ...) are ``SharingBackend``'s and the
hand-over engine's (app/sharing/handover.py): they validate against the rule set, track ownership
and count objects, with one signature for every backend; a backend only implements these hooks.
A new backend: one module under app/sharing/backends/ with a ``SharingBackend`` subclass that sets
``name``, ``title`` and ``capabilities`` and implements the hooks it needs (at least ``probe``,
``_create_context``, ``_enqueue_acquire``, ``_enqueue_release``).
"""
from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import pyopencl as cl

    from app.sharing.objects import SharedObject


class BackendHooks(Protocol):
    """The hooks, with the one signature each keeps (parameter names and kinds)."""

    @classmethod
    def probe(cls, env) -> Any:
        """Available here, or why not (a ``Probe``): never calls an entry point the device does not list."""

    def _create_context(self) -> "cl.Context":
        """The CL context the backend's queue and objects live in."""

    def _share_buffer(self, gl, access: str) -> Any:
        """The CL memory object for an existing GL buffer (backends whose memory GL allocates)."""

    def _share_texture(self, gl, access: str) -> Any:
        """The CL memory object for an existing GL texture."""

    def _new_buffer(self, label: str, nbytes: int, access: str) -> "SharedObject":
        """A new GL buffer and its CL memory object."""

    def _new_texture(self, label: str, width: int, height: int, fmt, access: str,
                     drawn_by_quad: bool) -> "SharedObject":
        """A new GL texture and its CL memory object (or what GL draws it from)."""

    def _enqueue_acquire(self, queue, objects: list, wait_for, event: bool = True) -> Any:
        """Enqueue the hand-over GL -> CL of ``objects`` (validated, not yet tracked); its event, or
        None (``event`` False: the C API's NULL event, where the backend's ``null_events``)."""

    def _enqueue_release(self, queue, objects: list, wait_for, event: bool = True) -> Any:
        """Enqueue the hand-over CL -> GL, as ``_enqueue_acquire``."""

    def _upload(self, obj, data) -> None:
        """Write ``data`` into ``obj`` from the host."""

    def _unshare(self, obj) -> None:
        """Release ``obj``'s CL side (and what the backend made for it)."""

    def gl_before_acquire(self, objects: list) -> None:
        """GL's part of the hand-over before the acquire is ordered (a copy into the memory CL reads)."""

    def gl_after_release(self, objects: list) -> None:
        """GL's part of the hand-over after the release (a copy into the texture GL draws)."""

    def native_hand_over(self, queue, objects: list, event: bool) -> Any:
        """The acquire's and the release's calls prepared for a native call list, or None."""

    def memory_tab(self) -> Any:
        """What the Memory tab shows of this backend, or None."""

    def _close_extra(self) -> None:
        """What the backend made besides its objects, queue and context, released."""


HOOKS = tuple(name for name, value in vars(BackendHooks).items()
              if callable(getattr(value, "__func__", value)) and not name.startswith("__"))
REQUIRED_ATTRIBUTES = ("name", "title", "capabilities")


def _shape(fn) -> tuple:
    fn = getattr(fn, "__func__", fn)
    return tuple((p.name, p.kind, p.default is not inspect.Parameter.empty)
                 for p in inspect.signature(fn).parameters.values())


def check_backend(cls: type) -> None:
    """Raise TypeError where backend class ``cls`` lacks a required attribute or defines a hook with
    another signature than the contract's (wgpu-py's ``_register_backend`` checks its backends so)."""
    missing = [a for a in REQUIRED_ATTRIBUTES if not hasattr(cls, a)]
    if missing:
        raise TypeError(f"backend {cls.__name__} does not set {', '.join(missing)}")
    for name in HOOKS:
        mine = inspect.getattr_static(cls, name, None)
        if mine is None:
            continue
        want, got = _shape(vars(BackendHooks)[name]), _shape(mine)
        if want != got:
            expected = inspect.signature(getattr(vars(BackendHooks)[name], "__func__", vars(BackendHooks)[name]))
            actual = inspect.signature(getattr(mine, "__func__", mine))
            raise TypeError(f"backend {cls.name!r}: hook {name}{actual} differs from the contract's "
                            f"{name}{expected} (app/sharing/contract.py)")
