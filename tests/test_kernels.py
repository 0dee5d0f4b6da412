"""A kernel that fails to build says where, with which options, the compiler's log and a saved copy."""
from __future__ import annotations

import pathlib

import pytest

from app.errors import KernelBuildError


def test_build_failure_carries_its_context(host_copy, tmp_path, monkeypatch):
    import app.cl.programs as kernels

    (tmp_path / "broken.cl").write_text("__kernel void k(__global float* p) { p[0] = undefined_name; }\n")
    monkeypatch.setattr(kernels, "KERNELS_DIR", tmp_path)
    with pytest.raises(KernelBuildError) as exc:
        kernels.KernelProgram(host_copy.context, "broken.cl", options=["-DX=1"])
    err = exc.value
    assert err.source_path.endswith("broken.cl") and "-DX=1" in err.options
    assert "undefined_name" in err.log
    assert pathlib.Path(err.saved_copy).read_text().startswith("__kernel void k")
    assert "broken.cl" in err.one_line() and "-DX=1" in err.one_line()
