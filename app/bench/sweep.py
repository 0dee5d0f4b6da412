"""What ``glshare bench`` measures: the sizes of each scene, frame counts and the thresholds of the ratios.

Three sweeps: ``full`` (particles 16K ... 16M, image 256^2 ... 4096^2), ``quick`` (under a minute on
the 2-core machine) and ``tiny`` (``GLSHARE_BENCH_TINY=1``: for tests, a few seconds). Sizes follow
../shared/WORKLOADS.md: particles share 32 bytes each (position + color), images 4 bytes a pixel.
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass

MIB = 1 << 20
ZERO_COPY_BYTES = 64 * MIB  # where zero_copy_speedup and semaphore_vs_finish are read
ZERO_COPY_PARTICLES = ZERO_COPY_BYTES // 32
ZERO_COPY_IMAGE = (4096, 4096)  # 4 bytes a pixel: 64 MiB


@dataclass(frozen=True)
class Sweep:
    name: str
    particles: tuple[int, ...]
    images: tuple[tuple[int, int], ...]
    warmup: int  # frames before timing (each kind of frame)
    frames: int  # timed frames of glshare per cell (and as many bare-loop frames)
    rounds: int  # the timed frames are split into rounds, interleaved with the baselines
    cell_budget_s: float  # stop adding rounds to a cell after this long (large sizes)
    default_particles: int = 65_536  # the fountain's default (WORKLOADS.md): scheduler_overhead and panel_cost_ms are read here
    efficiency_min_bytes: int = 4 * MIB  # host_copy_efficiency from this size up
    kernel_sizes: tuple[tuple[int, int], ...] = ((512, 512), (1024, 1024), (2048, 2048))  # the Julia kernel race
    kernel_rounds: int = 7
    race_images: tuple[tuple[int, int], ...] | None = None  # the zero-copy race's image sizes (None: ``images``)
    # frames each session of the zero-copy race runs before its first timed round: enough that its
    # opening round holds none of host_mapped's slow first frames, which a warm-up of a few frames
    # still left in it (bench/results/README.md, 'Sixteenth session')
    race_warmup: int = 40
    # sync modes without a CPU wait (semaphores) are measured again at these frames in flight (on as
    # many copies of the shared objects where the scene allows: Scene.max_slots)
    flight_depths: tuple[int, ...] = ()
    # their sustained frames (``cells._drained_pairs``): each loop warmed for drain_warm_s, then
    # drain_rounds interleaved measurements of at least drain_frames frames each
    drain_frames: int = 300
    drain_rounds: int = 3
    drain_warm_s: float = 0.5
    # scheduler_overhead_us's pairs (the smallest particles' finish cell), over all its rounds: its
    # pairs' spread is tens of microseconds, so the median of a few dozen pairs moved by more than
    # the target's margin between two runs of one loan (bench/results/README.md, 'Twelfth session').
    # The median's standard error falls as 1.25 sigma / sqrt(n), sigma from the pairs' interquartile
    # range: 600 pairs bring it to a small fraction of the margin. The host's own drift from minute
    # to minute stays in it
    overhead_pairs: int = 600

    def with_zero_copy_size(self) -> "Sweep":
        """Add the 64 MiB sizes (2M particles, a 4096x4096 image) where a GPU zero-copy backend exists."""
        sizes = tuple(sorted(set(self.particles) | {ZERO_COPY_PARTICLES}))
        images = tuple(sorted(set(self.images) | {ZERO_COPY_IMAGE}))
        return dataclasses.replace(self, particles=sizes, images=images, flight_depths=(1, 4, 8))


FULL = Sweep("full", particles=(16_384, 65_536, 262_144, 1 << 20, ZERO_COPY_PARTICLES, 4 << 20, 16 << 20),
             images=((256, 256), (512, 512), (1024, 1024), (2048, 2048), (4096, 4096)),
             warmup=5, frames=60, rounds=4, cell_budget_s=25.0, overhead_pairs=1200)
QUICK = Sweep("quick", particles=(16_384, 65_536, 262_144), images=((256, 256), (1024, 1024)),
              warmup=5, frames=30, rounds=3, cell_budget_s=8.0, kernel_rounds=5)
TINY = Sweep("tiny", particles=(4_096, 8_192), images=((64, 64),), warmup=2, frames=6, rounds=2,
             cell_budget_s=2.0, default_particles=8_192, efficiency_min_bytes=0, kernel_sizes=((64, 48),),
             kernel_rounds=3, drain_frames=10, drain_rounds=1, drain_warm_s=0.0, overhead_pairs=6, race_warmup=3)


def choose_sweep(quick: bool) -> Sweep:
    """``GLSHARE_BENCH_TINY=1`` (tests) wins over ``--quick``."""
    if os.environ.get("GLSHARE_BENCH_TINY") == "1":
        return TINY
    return QUICK if quick else FULL


def size_label(scene: str, size) -> str:
    from app.scenes import scene_class

    return scene_class(scene).size_label(size)


def shared_bytes(scene: str, size) -> int:
    """Bytes shared with GL per frame (the scene says: WORKLOADS.md's 32 x N for particles, RGBA8 for images)."""
    from app.scenes import scene_class

    return scene_class(scene).shared_bytes(size)
