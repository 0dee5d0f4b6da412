"""Scenes: each declares the GL objects it shares with CL, its kernels and how GL draws them."""
from __future__ import annotations


def scene_class(name: str):
    from app.errors import UsageError

    if name == "particles":
        from app.scenes.particles import ParticlesScene

        return ParticlesScene
    if name == "image":
        from app.scenes.image import ImageScene

        return ImageScene
    if name == "yuv":
        from app.scenes.yuv import YuvScene

        return YuvScene
    raise UsageError(f"unknown scene {name!r}; choose particles, image or yuv")
