/* glshare's one native piece: what a frame asks of the drivers many times over, done in one foreign
 * call each, because through ctypes every call costs the frame more on the host than the driver's
 * own work:
 *  - the time stamps of a frame's commands read in batches: the CL profiling stamps of many events,
 *    and the GL timestamp queries of many timed passes;
 *  - the frame's hand-over made in one call: a list of foreign calls prepared once (entry point and
 *    arguments), made in order, with a clock stamp after each (glshare_run_calls).
 *
 * FrameScheduler.harvest reads QUEUED, (SUBMIT,) START and END of every command of every frame:
 * three or four clGetEventProfilingInfo calls per event. Through ctypes each call costs the frame
 * more on the host than the driver's own work (bench: "CL profiling of 3 events"); here a batch of
 * events is one foreign call. The entry points are handed in (the ICD loader's and GL's, as ctypes
 * found them), so this library links against nothing but the C library.
 *
 * Semantics are app/cl/ext.py EventInfo.profile's, event by event: a QUEUED stamp of 0 is a
 * command the driver did not time (NVIDIA's markers); its other stamps are not asked and stay 0.
 * The first refused query stops the batch: its status is returned and *failed names the event.
 * GL: app/gl/timer.py GlTimer.harvest's reads of a pass's two GL_TIMESTAMP queries, oldest pass
 * first, stopping at the first whose end stamp is not there (GL answers queries in order: when the
 * end stamp is there, the start stamp is too). The GL entry points are handed in as well.
 * Build: python -m app.native build (make setup does it). */
#define _POSIX_C_SOURCE 199309L
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define GLSHARE_STAMPS_VERSION 3

typedef int32_t (*profiling_info_fn)(void *event, uint32_t param, size_t size, void *value, size_t *size_ret);

enum { QUEUED = 0x1280, SUBMIT = 0x1281, START = 0x1282, END = 0x1283 };

#ifndef GLSHARE_STAMPS_SOURCE
#define GLSHARE_STAMPS_SOURCE 0u /* the CRC-32 of this file, given by app/native's build */
#endif

int32_t glshare_stamps_version(void) { return GLSHARE_STAMPS_VERSION; }
uint32_t glshare_stamps_source(void) { return GLSHARE_STAMPS_SOURCE; }

/* out: 4 stamps per event (queued, submit, start, end); submit stays 0 unless asked. */
int32_t glshare_read_stamps(void *fn_ptr, void *const *events, int32_t n, int32_t submit,
                            uint64_t *out, int32_t *failed)
{
    profiling_info_fn fn = (profiling_info_fn)fn_ptr;
    for (int32_t i = 0; i < n; i++) {
        uint64_t *o = out + 4 * (size_t)i;
        o[0] = o[1] = o[2] = o[3] = 0;
        int32_t err = fn(events[i], QUEUED, 8, &o[0], NULL);
        if (!err && o[0]) {
            if (submit)
                err = fn(events[i], SUBMIT, 8, &o[1], NULL);
            if (!err)
                err = fn(events[i], START, 8, &o[2], NULL);
            if (!err)
                err = fn(events[i], END, 8, &o[3], NULL);
        }
        if (err) {
            o[0] = o[1] = o[2] = o[3] = 0;
            *failed = i;
            return err;
        }
    }
    *failed = -1;
    return 0;
}

/* OpenGL 4.6 section 4.2 (timer queries) and ARB_query_buffer_object (QUERY_RESULT_NO_WAIT, core in 4.4) */
typedef void (*get_query_ui64v_fn)(uint32_t id, uint32_t pname, uint64_t *params);
typedef void (*get_query_iv_fn)(uint32_t id, uint32_t pname, int32_t *params);
enum { GL_QUERY_RESULT = 0x8866, GL_QUERY_RESULT_AVAILABLE = 0x8867, GL_QUERY_RESULT_NO_WAIT = 0x9194 };
#define UNWRITTEN UINT64_MAX /* left in params by a NO_WAIT read whose result is not there */

/* pairs: (start query, end query) per pass; out: (start, end) stamps per pass read. get_iv NULL: the
 * end stamp is read with QUERY_RESULT_NO_WAIT (GL 4.4), else after asking QUERY_RESULT_AVAILABLE.
 * Returns how many passes, from the first, were read. */
int32_t glshare_read_query_pairs(void *get_ui64v, void *get_iv, const uint32_t *pairs, int32_t n, uint64_t *out)
{
    get_query_ui64v_fn get = (get_query_ui64v_fn)get_ui64v;
    get_query_iv_fn available = (get_query_iv_fn)get_iv;
    for (int32_t i = 0; i < n; i++) {
        uint32_t start = pairs[2 * (size_t)i], end = pairs[2 * (size_t)i + 1];
        uint64_t *o = out + 2 * (size_t)i;
        if (available == NULL) {
            o[1] = UNWRITTEN;
            get(end, GL_QUERY_RESULT_NO_WAIT, &o[1]);
            if (o[1] == UNWRITTEN)
                return i;
        } else {
            int32_t there = 0;
            available(end, GL_QUERY_RESULT_AVAILABLE, &there);
            if (!there)
                return i;
            get(end, GL_QUERY_RESULT, &o[1]);
        }
        get(start, GL_QUERY_RESULT, &o[0]);
    }
    return n;
}

/* A frame's prepared foreign calls (app/native/calls.py CallList). Each entry is an entry point and
 * up to GLSHARE_CALL_ARGS arguments, every one an integer or a pointer (a handle, a count, a GLenum,
 * the address of a prepared array, of a value, of an event out, or 0 for NULL): no floating-point
 * argument, none passed by value wider than 64 bits. Each is called with all GLSHARE_CALL_ARGS words,
 * the unused ones after its own; on the System V x86-64 and the AArch64 calling conventions (the
 * only ones the Python side uses this on) integer arguments go in order in registers then in 8-byte
 * stack slots that the caller owns, so a callee reads its own and never the rest.
 * status: 1 for an OpenCL entry point (a cl_int status, the list stops at the first non-zero one),
 * 0 for a GL one (void: GL's errors are read with glGetError after the frame's draw). */
#define GLSHARE_CALL_ARGS 10
typedef uint64_t u64;
typedef int32_t (*status_call_fn)(u64, u64, u64, u64, u64, u64, u64, u64, u64, u64);
typedef void (*void_call_fn)(u64, u64, u64, u64, u64, u64, u64, u64, u64, u64);

typedef struct {
    void *fn;
    int32_t status;
    int32_t reserved;
    u64 a[GLSHARE_CALL_ARGS];
} glshare_call;

/* The clock of Python's time.perf_counter_ns on Linux (CLOCK_MONOTONIC), so the stamps sit on the
 * frame's own time line. */
static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int32_t glshare_call_size(void) { return (int32_t)sizeof(glshare_call); }

/* Calls calls[first] .. calls[n - 1] in order. stamps[i] is the clock before call i is made and
 * stamps[i + 1] after it (stamps holds n + 1). Returns 0 with *failed = -1, or the first non-zero
 * status, *failed naming its call: the calls after it are not made. */
int32_t glshare_run_calls(const glshare_call *calls, int32_t first, int32_t n, int64_t *stamps, int32_t *failed)
{
    if (first < n)
        stamps[first] = now_ns();
    for (int32_t i = first; i < n; i++) {
        const glshare_call *c = &calls[i];
        const u64 *a = c->a;
        if (c->status) {
            int32_t err = ((status_call_fn)c->fn)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9]);
            stamps[i + 1] = now_ns();
            if (err) {
                *failed = i;
                return err;
            }
        } else {
            ((void_call_fn)c->fn)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9]);
            stamps[i + 1] = now_ns();
        }
    }
    *failed = -1;
    return 0;
}
