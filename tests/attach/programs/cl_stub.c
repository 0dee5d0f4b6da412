/* The layer's own cost per recorded call, with no driver below it: clInitLayer gets a dispatch table
 * of stubs, and N clEnqueueNDRangeKernel go through the layer's table (bench/probes/attach_cl_overhead.py).
 *
 *   cl_stub LAYER.so N      prints ns per recorded enqueue
 * The layer records where GLSHARE_ATTACH_FD is set; the stub hands out no event, so no stamps are read. */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl_layer.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static cl_int CL_API_CALL enqueue(cl_command_queue q, cl_kernel k, cl_uint dims, const size_t *offset,
                                  const size_t *gws, const size_t *lws, cl_uint nw, const cl_event *wl, cl_event *ev)
{
    (void)q, (void)k, (void)dims, (void)offset, (void)gws, (void)lws, (void)nw, (void)wl;
    if (ev)
        *ev = NULL;
    return CL_SUCCESS;
}

static cl_int CL_API_CALL kernel_info(cl_kernel k, cl_kernel_info name, size_t size, void *value, size_t *size_ret)
{
    (void)k, (void)name, (void)size_ret;
    if (value && size > 5)
        strcpy(value, "stub");
    return CL_SUCCESS;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: cl_stub LAYER.so N\n");
        return 1;
    }
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    pfn_clInitLayer init = lib ? (pfn_clInitLayer)dlsym(lib, "clInitLayer") : NULL;
    if (!init) {
        fprintf(stderr, "cl_stub: %s\n", lib ? "no clInitLayer" : dlerror());
        return 1;
    }
    static cl_icd_dispatch stubs;
    stubs.clEnqueueNDRangeKernel = enqueue;
    stubs.clGetKernelInfo = kernel_info;
    const cl_icd_dispatch *layer = NULL;
    cl_uint entries = 0;
    if (init(sizeof stubs / sizeof(void *), &stubs, &entries, &layer) != CL_SUCCESS || !layer) {
        fprintf(stderr, "cl_stub: clInitLayer failed\n");
        return 1;
    }
    int n = atoi(argv[2]);
    size_t gws = 64;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 0; i < n; i++)
        layer->clEnqueueNDRangeKernel((cl_command_queue)0x1000, (cl_kernel)0x2000, 1, NULL, &gws, NULL, 0, NULL, NULL);
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("%.1f\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n);
    return 0;
}
