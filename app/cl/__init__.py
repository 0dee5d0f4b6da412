"""OpenCL side: device selection, kernel builds from ``kernels/``, queues with profiling."""
