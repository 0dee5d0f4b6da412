/* A small OpenCL program for the layer's tests (tests/attach/test_cl_layer.py) and its overhead probe
 * (bench/probes/attach_cl_overhead.py); it knows nothing of glshare.
 *
 *   cl_vecadd PLATFORM MODE [ARG]
 * PLATFORM: a part of the platform's name ("Portable", "Intel"). MODE:
 *   run OUT       a kernel enqueued 8 times on one buffer pair, the result read back into the file OUT
 *   transfers OUT every transfer the layer records (buffers, rects, images, maps), in a chain whose end
 *                 is read into OUT
 *   fromtype      a context from clCreateContextFromType with the platform in its properties
 *   threads OUT   two threads, each its own queue, buffers and kernel; both results into OUT
 *   gl            a fill left in flight, then clCreateFromGLBuffer on a context without GL (PoCL ends the
 *                 process there)
 *   acquire       clEnqueueAcquireGLObjects of a plain buffer; prints the status it got
 *   ext           clGetGLContextInfoKHR through clGetExtensionFunctionAddressForPlatform, without a GL
 *                 context; prints the status it got ("none" where the platform has no such entry point)
 *   fork          a buffer made in a forked child (the parent waits for it)
 *   sem           a binary semaphore (cl_khr_semaphore) signalled and waited on one queue; prints
 *                 "none" where the platform has no clCreateSemaphoreWithPropertiesKHR
 *   badqueue      a queue with a property bit no version defines; prints the status it got
 *   many          300 fills, each with its event, then one clWaitForEvents on all 300
 *   bench N       N enqueues of a small kernel then clFinish: the loop's wall-clock and process CPU
 *                 ns per enqueue printed
 * Exit status 0 on success, 1 with one line on stderr otherwise. */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <CL/cl_ext.h>
#include <CL/cl_gl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define N 4096
#define CHECK(x)                                                                   \
    do {                                                                           \
        cl_int e_ = (x);                                                           \
        if (e_ != CL_SUCCESS) {                                                    \
            fprintf(stderr, "cl_vecadd: %s failed: %d (line %d)\n", #x, e_, __LINE__); \
            exit(1);                                                               \
        }                                                                          \
    } while (0)

static const char *SOURCE =
    "__kernel void scale(__global const float *a, __global float *b, float k) {\n"
    "    size_t i = get_global_id(0);\n"
    "    b[i] = b[i] * 0.5f + a[i] * k + (float)i;\n"
    "}\n";

static cl_platform_id platform;
static cl_device_id device;
static cl_context context;
static cl_program program;

static void setup(const char *want)
{
    cl_platform_id ps[16];
    cl_uint n = 0;
    CHECK(clGetPlatformIDs(16, ps, &n));
    for (cl_uint i = 0; i < n && !platform; i++) {
        char name[256] = {0};
        CHECK(clGetPlatformInfo(ps[i], CL_PLATFORM_NAME, sizeof name - 1, name, NULL));
        if (strstr(name, want))
            platform = ps[i];
    }
    if (!platform) {
        fprintf(stderr, "cl_vecadd: no platform named like %s\n", want);
        exit(1);
    }
    CHECK(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, NULL));
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)platform, 0};
    cl_int err;
    context = clCreateContext(props, 1, &device, NULL, NULL, &err);
    CHECK(err);
    program = clCreateProgramWithSource(context, 1, &SOURCE, NULL, &err);
    CHECK(err);
    CHECK(clBuildProgram(program, 1, &device, "", NULL, NULL));
}

/* One queue, one buffer pair, one kernel: `reps` enqueues, the result read into out[N]. */
static void compute(int reps, float *out)
{
    cl_int err;
    cl_command_queue q = clCreateCommandQueueWithProperties(context, device, NULL, &err);
    CHECK(err);
    float *a = malloc(N * sizeof *a);
    for (int i = 0; i < N; i++)
        a[i] = (float)(i % 97) * 0.25f;
    cl_mem da = clCreateBuffer(context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, N * sizeof *a, a, &err);
    CHECK(err);
    cl_mem db = clCreateBuffer(context, CL_MEM_READ_WRITE, N * sizeof *a, NULL, &err);
    CHECK(err);
    float zero = 0.0f;
    CHECK(clEnqueueFillBuffer(q, db, &zero, sizeof zero, 0, N * sizeof zero, 0, NULL, NULL));
    cl_kernel k = clCreateKernel(program, "scale", &err);
    CHECK(err);
    float factor = 1.5f;
    CHECK(clSetKernelArg(k, 0, sizeof da, &da));
    CHECK(clSetKernelArg(k, 1, sizeof db, &db));
    CHECK(clSetKernelArg(k, 2, sizeof factor, &factor));
    size_t gws = N, lws = 64;
    cl_event last = NULL;
    for (int r = 0; r < reps; r++)
        CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &gws, &lws, 0, NULL, r == reps - 1 ? &last : NULL));
    CHECK(clFlush(q));
    CHECK(clWaitForEvents(1, &last));
    CHECK(clEnqueueReadBuffer(q, db, CL_TRUE, 0, N * sizeof *out, out, 0, NULL, NULL));
    CHECK(clFinish(q));
    clReleaseEvent(last);
    clReleaseKernel(k);
    clReleaseMemObject(da);
    clReleaseMemObject(db);
    clReleaseCommandQueue(q);
    free(a);
}

/* A chain through every recorded transfer: each step's result feeds the next, the last read into out. */
static void transfers(unsigned char *out, size_t size)
{
    cl_int err;
    cl_command_queue q = clCreateCommandQueueWithProperties(context, device, NULL, &err);
    CHECK(err);
    enum { W = 32, H = 16 };
    unsigned char host[W * H * 4];
    for (int i = 0; i < W * H * 4; i++)
        host[i] = (unsigned char)(i * 7 + 3);
    cl_mem a = clCreateBuffer(context, CL_MEM_READ_WRITE, sizeof host, NULL, &err);
    CHECK(err);
    cl_mem b = clCreateBuffer(context, CL_MEM_READ_WRITE, sizeof host, NULL, &err);
    CHECK(err);
    cl_image_format fmt = {CL_RGBA, CL_UNORM_INT8};
    cl_image_desc desc = {.image_type = CL_MEM_OBJECT_IMAGE2D, .image_width = W, .image_height = H};
    cl_mem img = clCreateImage(context, CL_MEM_READ_WRITE, &fmt, &desc, NULL, &err);
    CHECK(err);
    cl_mem img2 = clCreateImage(context, CL_MEM_READ_WRITE, &fmt, &desc, NULL, &err);
    CHECK(err);
    size_t origin[3] = {0, 0, 0}, region[3] = {W, H, 1}, rect[3] = {W * 4, H, 1};
    CHECK(clEnqueueWriteBuffer(q, a, CL_FALSE, 0, sizeof host, host, 0, NULL, NULL));
    CHECK(clEnqueueCopyBuffer(q, a, b, 0, 0, sizeof host, 0, NULL, NULL));
    unsigned char *m =
        clEnqueueMapBuffer(q, b, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, sizeof host, 0, NULL, NULL, &err);
    CHECK(err);
    for (size_t i = 0; i < sizeof host; i++)
        m[i] ^= 0x5a;
    CHECK(clEnqueueUnmapMemObject(q, b, m, 0, NULL, NULL));
    CHECK(clEnqueueCopyBufferToImage(q, b, img, 0, origin, region, 0, NULL, NULL));
    CHECK(clEnqueueCopyImage(q, img, img2, origin, origin, region, 0, NULL, NULL));
    size_t pitch = 0;
    unsigned char *mi = clEnqueueMapImage(q, img2, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, origin, region, &pitch, NULL, 0,
                                          NULL, NULL, &err);
    CHECK(err);
    mi[0] = 42;
    CHECK(clEnqueueUnmapMemObject(q, img2, mi, 0, NULL, NULL));
    CHECK(clEnqueueCopyImageToBuffer(q, img2, a, origin, region, 0, 0, NULL, NULL));
    CHECK(clEnqueueReadImage(q, img2, CL_TRUE, origin, region, 0, 0, host, 0, NULL, NULL));
    CHECK(clEnqueueWriteImage(q, img, CL_TRUE, origin, region, 0, 0, host, 0, NULL, NULL));
    size_t fill_origin[3] = {0, 0, 0}, fill_region[3] = {4, 4, 1};
    float color[4] = {1.0f, 0.5f, 0.25f, 1.0f};
    CHECK(clEnqueueFillImage(q, img, color, fill_origin, fill_region, 0, NULL, NULL));
    unsigned char pattern = 9;
    CHECK(clEnqueueFillBuffer(q, b, &pattern, 1, 0, 64, 0, NULL, NULL));
    CHECK(clEnqueueWriteBufferRect(q, b, CL_TRUE, origin, origin, rect, W * 4, 0, W * 4, 0, host, 0, NULL, NULL));
    CHECK(clEnqueueReadBufferRect(q, a, CL_TRUE, origin, origin, rect, W * 4, 0, W * 4, 0, out, 0, NULL, NULL));
    CHECK(clEnqueueReadBuffer(q, b, CL_TRUE, 0, sizeof host, out + sizeof host, 0, NULL, NULL));
    CHECK(clEnqueueReadImage(q, img, CL_TRUE, origin, region, 0, 0, out + 2 * sizeof host, 0, NULL, NULL));
    CHECK(clFinish(q));
    (void)size;
}

static void *worker(void *out)
{
    compute(50, out);
    return NULL;
}

static void save(const char *path, const float *v, size_t count)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(v, sizeof *v, count, f) != count) {
        fprintf(stderr, "cl_vecadd: cannot write %s\n", path);
        exit(1);
    }
    fclose(f);
}

static double now_s(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: cl_vecadd PLATFORM MODE [OUT|N] (modes: see the file's head)\n");
        return 1;
    }
    setup(argv[1]);
    const char *mode = argv[2];
    cl_int err;
    if (!strcmp(mode, "run") && argc > 3) {
        static float out[N];
        compute(8, out);
        save(argv[3], out, N);
    } else if (!strcmp(mode, "transfers") && argc > 3) {
        static unsigned char out[3 * 32 * 16 * 4];
        transfers(out, sizeof out);
        FILE *f = fopen(argv[3], "wb");
        if (!f || fwrite(out, 1, sizeof out, f) != sizeof out) {
            fprintf(stderr, "cl_vecadd: cannot write %s\n", argv[3]);
            return 1;
        }
        fclose(f);
    } else if (!strcmp(mode, "fromtype")) {
        cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)platform, 0};
        cl_context c = clCreateContextFromType(props, CL_DEVICE_TYPE_ALL, NULL, NULL, &err);
        CHECK(err);
        clReleaseContext(c);
    } else if (!strcmp(mode, "threads") && argc > 3) {
        static float out[2][N];
        pthread_t th[2];
        for (int i = 0; i < 2; i++)
            pthread_create(&th[i], NULL, worker, out[i]);
        for (int i = 0; i < 2; i++)
            pthread_join(th[i], NULL);
        save(argv[3], &out[0][0], 2 * N);
    } else if (!strcmp(mode, "gl")) {
        cl_command_queue q = clCreateCommandQueueWithProperties(context, device, NULL, &err);
        CHECK(err);
        cl_mem b = clCreateBuffer(context, CL_MEM_READ_WRITE, 1 << 20, NULL, &err);
        CHECK(err);
        int one = 1;
        CHECK(clEnqueueFillBuffer(q, b, &one, sizeof one, 0, 1 << 20, 0, NULL, NULL));
        cl_mem m = clCreateFromGLBuffer(context, CL_MEM_READ_WRITE, 1, &err);
        printf("clCreateFromGLBuffer: %d %p\n", err, (void *)m);
    } else if (!strcmp(mode, "acquire")) {
        cl_command_queue q = clCreateCommandQueueWithProperties(context, device, NULL, &err);
        CHECK(err);
        cl_mem m = clCreateBuffer(context, CL_MEM_READ_WRITE, 64, NULL, &err);
        CHECK(err);
        cl_int st = clEnqueueAcquireGLObjects(q, 1, &m, 0, NULL, NULL);
        printf("clEnqueueAcquireGLObjects: %d\n", st);
        clFinish(q);
    } else if (!strcmp(mode, "ext")) {
        typedef cl_int (*info_fn)(const cl_context_properties *, cl_gl_context_info, size_t, void *, size_t *);
        info_fn info = (info_fn)clGetExtensionFunctionAddressForPlatform(platform, "clGetGLContextInfoKHR");
        if (!info) {
            printf("clGetGLContextInfoKHR: none\n");
            return 0;
        }
        cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)platform, 0};
        cl_device_id dev = NULL;
        cl_int st = info(props, CL_CURRENT_DEVICE_FOR_GL_CONTEXT_KHR, sizeof dev, &dev, NULL);
        printf("clGetGLContextInfoKHR: %d\n", st);
    } else if (!strcmp(mode, "sem")) {
        clCreateSemaphoreWithPropertiesKHR_fn create = (clCreateSemaphoreWithPropertiesKHR_fn)
            clGetExtensionFunctionAddressForPlatform(platform, "clCreateSemaphoreWithPropertiesKHR");
        clEnqueueSignalSemaphoresKHR_fn signal = (clEnqueueSignalSemaphoresKHR_fn)
            clGetExtensionFunctionAddressForPlatform(platform, "clEnqueueSignalSemaphoresKHR");
        clEnqueueWaitSemaphoresKHR_fn wait = (clEnqueueWaitSemaphoresKHR_fn)
            clGetExtensionFunctionAddressForPlatform(platform, "clEnqueueWaitSemaphoresKHR");
        if (!create || !signal || !wait) {
            printf("semaphores: none\n");
            return 0;
        }
        cl_command_queue q = clCreateCommandQueueWithProperties(context, device, NULL, &err);
        CHECK(err);
        cl_semaphore_properties_khr props[] = {CL_SEMAPHORE_TYPE_KHR, CL_SEMAPHORE_TYPE_BINARY_KHR, 0};
        cl_semaphore_khr sem = create(context, props, &err);
        CHECK(err);
        CHECK(signal(q, 1, &sem, NULL, 0, NULL, NULL));
        CHECK(wait(q, 1, &sem, NULL, 0, NULL, NULL));
        CHECK(clFinish(q));
        printf("semaphores: done\n");
    } else if (!strcmp(mode, "badqueue")) {
        cl_queue_properties props[] = {CL_QUEUE_PROPERTIES, (cl_queue_properties)1 << 40, 0};
        cl_command_queue q = clCreateCommandQueueWithProperties(context, device, props, &err);
        printf("clCreateCommandQueueWithProperties: %d %s\n", err, q ? "queue" : "none");
    } else if (!strcmp(mode, "many")) {
        cl_command_queue q = clCreateCommandQueueWithProperties(context, device, NULL, &err);
        CHECK(err);
        cl_mem m = clCreateBuffer(context, CL_MEM_READ_WRITE, 64, NULL, &err);
        CHECK(err);
        static cl_event evs[300];
        int one = 1;
        for (int i = 0; i < 300; i++)
            CHECK(clEnqueueFillBuffer(q, m, &one, sizeof one, 0, 64, 0, NULL, &evs[i]));
        CHECK(clWaitForEvents(300, evs));
        for (int i = 0; i < 300; i++)
            clReleaseEvent(evs[i]);
    } else if (!strcmp(mode, "fork")) {
        fflush(stdout);
        pid_t child = fork();
        if (child == 0) {
            cl_mem m = clCreateBuffer(context, CL_MEM_READ_WRITE, 64, NULL, &err);
            _exit(err == CL_SUCCESS && m ? 0 : 1);
        }
        int status = 0;
        if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status)) {
            fprintf(stderr, "cl_vecadd: the forked child failed\n");
            return 1;
        }
        cl_mem m = clCreateBuffer(context, CL_MEM_READ_WRITE, 64, NULL, &err);
        CHECK(err);
        clReleaseMemObject(m);
    } else if (!strcmp(mode, "bench") && argc > 3) {
        int reps = atoi(argv[3]);
        cl_command_queue q = clCreateCommandQueueWithProperties(context, device, NULL, &err);
        CHECK(err);
        cl_mem m = clCreateBuffer(context, CL_MEM_READ_WRITE, 64 * sizeof(float), NULL, &err);
        CHECK(err);
        cl_kernel k = clCreateKernel(program, "scale", &err);
        CHECK(err);
        float factor = 1.0f;
        CHECK(clSetKernelArg(k, 0, sizeof m, &m));
        CHECK(clSetKernelArg(k, 1, sizeof m, &m));
        CHECK(clSetKernelArg(k, 2, sizeof factor, &factor));
        size_t gws = 64;
        CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &gws, NULL, 0, NULL, NULL));
        CHECK(clFinish(q));
        double t0 = now_s(CLOCK_MONOTONIC), c0 = now_s(CLOCK_PROCESS_CPUTIME_ID);
        for (int r = 0; r < reps; r++)
            CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &gws, NULL, 0, NULL, NULL));
        CHECK(clFinish(q));
        printf("%.1f %.1f\n", (now_s(CLOCK_MONOTONIC) - t0) * 1e9 / reps,
               (now_s(CLOCK_PROCESS_CPUTIME_ID) - c0) * 1e9 / reps);
    } else {
        fprintf(stderr, "cl_vecadd: unknown mode %s\n", mode);
        return 1;
    }
    return 0;
}
