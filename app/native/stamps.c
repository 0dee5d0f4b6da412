/* glshare's one native piece: the time stamps of a frame's commands read in batches, one call each:
 * the CL profiling stamps of many events, and the GL timestamp queries of many timed passes.
 *
 * FrameScheduler.harvest reads QUEUED, (SUBMIT,) START and END of every command of every frame:
 * three or four clGetEventProfilingInfo calls per event. Through ctypes each call costs the frame
 * more on the host than the driver's own work (bench: "CL profiling of 3 events"); here a batch of
 * events is one foreign call. The entry point is handed in (the ICD loader's clGetEventProfilingInfo,
 * as ctypes found it), so this library links against nothing but itself.
 *
 * Semantics are app/cl/ext.py EventInfo.profile's, event by event: a QUEUED stamp of 0 is a
 * command the driver did not time (NVIDIA's markers); its other stamps are not asked and stay 0.
 * The first refused query stops the batch: its status is returned and *failed names the event.
 * GL: app/gl/timer.py GlTimer.harvest's reads of a pass's two GL_TIMESTAMP queries, oldest pass
 * first, stopping at the first whose end stamp is not there (GL answers queries in order: when the
 * end stamp is there, the start stamp is too). The GL entry points are handed in as well.
 * Build: python -m app.native build (make setup does it). */
#include <stddef.h>
#include <stdint.h>

#define GLSHARE_STAMPS_VERSION 2

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
