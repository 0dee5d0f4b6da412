"""The backend contract (app/sharing/contract.py): each hook one signature, checked when a backend
registers, so a backend whose hook differs fails at import, naming the hook, and is not registered."""
from __future__ import annotations

import inspect

import pytest

from app.sharing.backends.external_memory import ExternalMemory
from app.sharing.backends.gl_sharing import KhrGlSharing
from app.sharing.backends.host_copy import HostCopy
from app.sharing.backends.host_mapped import HostMapped
from app.sharing.base import Capabilities, SharingBackend
from app.sharing.contract import HOOKS, BackendHooks, check_backend
from app.sharing.registry import backend_classes


def test_every_backend_keeps_the_contract():
    classes = backend_classes()
    assert {KhrGlSharing.name, ExternalMemory.name, HostMapped.name, HostCopy.name} <= set(classes)
    for cls in classes.values():
        check_backend(cls)  # (raises where a hook differs)
        for name in HOOKS:  # the acquire and the release take the NULL event on every backend
            if name.startswith("_enqueue_"):
                assert "event" in inspect.signature(getattr(cls, name)).parameters, (cls.name, name)
    assert 12 <= len(HOOKS) <= 18 and set(HOOKS) <= set(vars(BackendHooks))


def test_a_hook_with_another_signature_is_refused_when_the_backend_registers():
    with pytest.raises(TypeError, match=r"hook _enqueue_acquire\(self, queue, objects, wait_for\) differs"):
        class WrongAcquire(SharingBackend):  # noqa: F841 - defining it is the test
            name = "test_wrong_acquire"
            capabilities = Capabilities(zero_copy=False)

            def _enqueue_acquire(self, queue, objects, wait_for):
                return None

    assert "test_wrong_acquire" not in SharingBackend.registry


def test_a_backend_without_its_capabilities_is_refused():
    with pytest.raises(TypeError, match="does not set capabilities"):
        class NoCapabilities(SharingBackend):  # noqa: F841
            name = "test_no_capabilities"
    assert "test_no_capabilities" not in SharingBackend.registry
