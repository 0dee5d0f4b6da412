"""Planar YUV 4:2:0 frames (NV12, P010): formats, the test pattern, the reference and the CL converter."""
