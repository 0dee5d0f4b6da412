/* glshare attach's OpenCL layer: records the hand-overs of any OpenCL program (issue 39).
 *
 * The ICD loader loads it from OPENCL_LAYERS and calls clInitLayer with the next layer's dispatch table
 * (cl_loader_layers, "Installable OpenCL Loader Layers"); the layer hands back its own table, in which
 * the entry points below record and call on, and every other entry is the next layer's. Records are
 * the lines app/attach/wire.py describes, each one write(2) of at most MAX_LINE bytes to the file
 * descriptor GLSHARE_ATTACH_FD names (a pipe: POSIX makes a write of at most PIPE_BUF bytes atomic, so
 * threads' lines never interleave; or a socket), through a private duplicate, and only where the
 * descriptor is that channel (channel.h). Without it the layer's table is the next layer's: the
 * program runs exactly as without it.
 *
 * Invariants:
 * - Every wrapper calls the next layer's entry with the program's arguments, except two changes that
 *   do not change what a command computes: a queue gets CL_QUEUE_PROFILING_ENABLE (OpenCL 3.0 5.1, it
 *   only makes profiling information available), and an enqueue without an event gets the layer's own
 *   (released by the layer once its stamps are read). In strict mode a non-zero verdict returns that
 *   status instead of calling on (wire.py).
 * - A "call" record is written before the call goes on: a call that kills the process is still seen.
 * - A call the layer makes itself (a nested call through the loader, the stamps thread) is never
 *   recorded: a thread-local depth guards the wrappers.
 */
#define _GNU_SOURCE
#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_0_APIS
#define CL_USE_DEPRECATED_OPENCL_1_1_APIS
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#define CL_USE_DEPRECATED_OPENCL_2_0_APIS
#include <CL/cl_layer.h>
#include <CL/cl_gl.h>
#include <CL/cl_ext.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "channel.h"
#include "pysite.h"

#define EXPORT __attribute__((visibility("default")))
#define MAX_LINE 4096  /* wire.MAX_LINE: PIPE_BUF on Linux */
#define LIST_MAX 64    /* handles listed per list; a longer list is cut and a "note" says so */
#define SITE() __builtin_return_address(0)

/* ---- state --------------------------------------------------------------------------------------- */

static const cl_icd_dispatch *nx;  /* the next layer's table */
static cl_icd_dispatch disp;       /* the table handed to the loader */
static int out_fd = -1;            /* GLSHARE_ATTACH_FD; -1: record nothing (unset, or the reader went away) */
static int out_socket;             /* out_fd is a socket: sent with MSG_NOSIGNAL */
static int strict_mode;
static int verdict_fd = -1;
static pid_t cur_pid;              /* this process (updated in a forked child) */
static _Atomic pid_t hello_pid;    /* the process whose "hello" was written */
static atomic_ullong next_id = 1;
static __thread pid_t my_tid;
static __thread int depth;         /* > 0 while this thread is inside a wrapper's call on */
static pthread_mutex_t hello_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t verdict_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t x_mu = PTHREAD_MUTEX_INITIALIZER;  /* the extension entry points handed out */

static inline int recording(void) { return __builtin_expect(out_fd >= 0, 1) && depth == 0; }

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static pid_t tid(void)
{
    if (!my_tid)
        my_tid = (pid_t)syscall(SYS_gettid);
    return my_tid;
}

/* ---- records: one JSON object, one line, one write --------------------------------------------- */

typedef struct {
    char b[MAX_LINE];
    size_t n;
    int cut;  /* a piece did not fit, or a list was shortened */
} rec_t;

/* Appends a whole piece or none of it (the line stays valid JSON); room is kept for the closing. */
static void put(rec_t *r, const char *s, size_t len)
{
    if (r->n + len > MAX_LINE - 8) {
        r->cut = 1;
        return;
    }
    memcpy(r->b + r->n, s, len);
    r->n += len;
}

static void puts_(rec_t *r, const char *s) { put(r, s, strlen(s)); }

/* Hand-made number formatting for the per-call records (printf's cost shows at every enqueue). */
static size_t key_(char *t, const char *key)
{
    size_t k = strlen(key);
    t[0] = ',';
    t[1] = '"';
    memcpy(t + 2, key, k);
    t[k + 2] = '"';
    t[k + 3] = ':';
    return k + 4;
}

static size_t dec_(char *t, uint64_t v)
{
    char d[24];
    size_t i = 0;
    do {
        d[i++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t j = 0; j < i; j++)
        t[j] = d[i - 1 - j];
    return i;
}

static size_t sdec_(char *t, int64_t v)
{
    if (v >= 0)
        return dec_(t, (uint64_t)v);
    t[0] = '-';
    return 1 + dec_(t + 1, -(uint64_t)v);
}

/* A handle as a JSON string, "0x..." */
static size_t hex_(char *t, uintptr_t v)
{
    char d[20];
    size_t i = 0;
    do {
        d[i++] = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v);
    t[0] = '"';
    t[1] = '0';
    t[2] = 'x';
    for (size_t j = 0; j < i; j++)
        t[3 + j] = d[i - 1 - j];
    t[3 + i] = '"';
    return i + 4;
}

static void put_u64(rec_t *r, const char *key, uint64_t v)
{
    char t[96];
    size_t n = key_(t, key);
    put(r, t, n + dec_(t + n, v));
}

static void put_i64(rec_t *r, const char *key, int64_t v)
{
    char t[96];
    size_t n = key_(t, key);
    put(r, t, n + sdec_(t + n, v));
}

static void put_ptr(rec_t *r, const char *key, const void *p)
{
    char t[96];
    size_t n = key_(t, key);
    put(r, t, n + hex_(t + n, (uintptr_t)p));
}

/* A key and a literal value (true, false, null) */
static void put_word(rec_t *r, const char *key, const char *word)
{
    char t[96];
    size_t n = key_(t, key), k = strlen(word);
    memcpy(t + n, word, k);
    put(r, t, n + k);
}

static void put_bool(rec_t *r, const char *key, int v) { put_word(r, key, v ? "true" : "false"); }

static void put_null(rec_t *r, const char *key) { put_word(r, key, "null"); }

/* A JSON string of ``s`` into t (room for 512 bytes), escaped; cut at 200 bytes. */
static size_t qstr_(char *t, const char *s)
{
    size_t n = 0;
    t[n++] = '"';
    for (size_t i = 0; s && s[i] && i < 200 && n < 512 - 8; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            t[n++] = '\\';
            t[n++] = (char)c;
        } else if (c < 0x20) {
            n += (size_t)snprintf(t + n, 512 - n, "\\u%04x", c);
        } else {
            t[n++] = (char)c;
        }
    }
    t[n++] = '"';
    return n;
}

static void put_str(rec_t *r, const char *key, const char *s)
{
    char t[600];
    size_t n = key_(t, key);
    put(r, t, n + qstr_(t + n, s));
}

/* A list of handles ("0x..." strings); null where the array is NULL. */
static void put_handles(rec_t *r, const char *key, const void *const *h, cl_uint count)
{
    if (!h) {
        put_null(r, key);
        return;
    }
    char t[64];
    size_t start = r->n, n = key_(t, key);
    t[n++] = '[';
    put(r, t, n);
    if (r->n == start)
        return;
    for (cl_uint i = 0; i < count; i++) {
        if (i == LIST_MAX || r->n > MAX_LINE - 400) {
            r->cut = 1;
            break;
        }
        if (i)
            r->b[r->n++] = ',';
        r->n += hex_(r->b + r->n, (uintptr_t)h[i]);
    }
    r->b[r->n++] = ']';
}

static void put_sizes(rec_t *r, const char *key, const size_t *v, cl_uint count)
{
    if (!v) {
        put_null(r, key);
        return;
    }
    char t[128];
    size_t n = key_(t, key);
    t[n++] = '[';
    for (cl_uint i = 0; i < count && i < 3; i++) {
        if (i)
            t[n++] = ',';
        n += dec_(t + n, v[i]);
    }
    t[n++] = ']';
    put(r, t, n);
}

/* [[name, value], ...] of a zero-terminated property list (cl_context_properties, cl_queue_properties,
 * cl_mem_properties ... are all 64-bit on the platforms the loader runs on). */
static void put_props(rec_t *r, const char *key, const void *props)
{
    if (!props) {
        put_null(r, key);
        return;
    }
    const int64_t *p = props;
    char t[64];
    size_t start = r->n;
    put(r, t, (size_t)snprintf(t, sizeof t, ",\"%s\":[", key));
    if (r->n == start)
        return;
    for (int i = 0; p[2 * i]; i++) {
        if (i == LIST_MAX || r->n > MAX_LINE - 400) {
            r->cut = 1;
            break;
        }
        size_t len = (size_t)snprintf(t, sizeof t, "%s[%lld,%lld]", i ? "," : "", (long long)p[2 * i],
                                      (long long)p[2 * i + 1]);
        memcpy(r->b + r->n, t, len);
        r->n += len;
    }
    r->b[r->n++] = ']';
}

static void write_line(const char *b, size_t n);

static void ensure_hello(void);

/* A record's head; each process's hello comes before its first other record. */
static void begin_raw(rec_t *r, const char *kind)
{
    r->n = 0;
    r->cut = 0;
    static const char head[] = "{\"k\":\"";
    memcpy(r->b, head, sizeof head - 1);
    r->n = sizeof head - 1;
    puts_(r, kind);
    puts_(r, "\",\"src\":\"cl\"");
    put_i64(r, "pid", cur_pid);
    put_u64(r, "t", now_ns());
}

static void begin(rec_t *r, const char *kind)
{
    ensure_hello();
    begin_raw(r, kind);
}

static void note(const char *text)
{
    rec_t r;
    begin(&r, "note");
    put_str(&r, "text", text);
    r.b[r.n++] = '}';
    r.b[r.n++] = '\n';
    write_line(r.b, r.n);
}

/* Closes the record and writes it; a record that lost a piece is followed by a note. */
static void emit(rec_t *r, uint64_t id)
{
    r->b[r->n++] = '}';
    r->b[r->n++] = '\n';
    write_line(r->b, r->n);
    if (r->cut) {
        char t[96];
        snprintf(t, sizeof t, "record of call %llu cut to fit one line", (unsigned long long)id);
        note(t);
    }
}

/* The reader may go away (glshare killed): the write then fails with EPIPE, whose SIGPIPE would kill
 * the program. A socket is sent to with MSG_NOSIGNAL (one system call); on a pipe SIGPIPE is blocked
 * on this thread around the write and a pending one taken back (three). */
static void write_line(const char *b, size_t n)
{
    int fd = out_fd;
    if (fd < 0)
        return;
    if (out_socket) {
        ssize_t w;
        do {
            w = send(fd, b, n, MSG_NOSIGNAL);
        } while (w < 0 && errno == EINTR);
        if (w < 0 && (errno == EPIPE || errno == ECONNRESET || errno == ENOTCONN))
            out_fd = -1;
        return;
    }
    sigset_t pipe_set, old;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    ssize_t w;
    do {
        w = write(fd, b, n);
    } while (w < 0 && errno == EINTR);
    if (w < 0 && errno == EPIPE) {
        out_fd = -1;
        struct timespec zero = {0, 0};
        sigtimedwait(&pipe_set, NULL, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void hello(void)
{
    rec_t r;
    begin_raw(&r, "hello");
    puts_(&r, ",\"lib\":\"glshare-cl-layer\",\"version\":1");
    r.b[r.n++] = '}';
    r.b[r.n++] = '\n';
    write_line(r.b, r.n);
}

/* Each process's first record is its hello (a forked child writes its own). */
static void ensure_hello(void)
{
    if (__builtin_expect(atomic_load_explicit(&hello_pid, memory_order_acquire) == cur_pid, 1))
        return;
    pthread_mutex_lock(&hello_mu);
    if (atomic_load(&hello_pid) != cur_pid) {
        hello();
        atomic_store_explicit(&hello_pid, cur_pid, memory_order_release);
    }
    pthread_mutex_unlock(&hello_mu);
}

/* A "call" record's common head; returns its id. */
static uint64_t call_head(rec_t *r, const char *fn, const void *site)
{
    uint64_t id = atomic_fetch_add(&next_id, 1);
    begin(r, "call");
    put_u64(r, "id", id);
    put_i64(r, "tid", tid());
    char t[160];
    size_t n = key_(t, "fn"), k = strlen(fn);
    t[n++] = '"';
    memcpy(t + n, fn, k);
    n += k;
    t[n++] = '"';
    put(r, t, n);
    put_ptr(r, "site", site);
    char py_site[PYSITE_MAX];
    size_t py_n = glshare_pysite(py_site, dlsym); /* the Python line, where this thread runs Python */
    if (py_n)
        put(r, py_site, py_n);
    return id;
}

static void ret_rec(uint64_t id, cl_int status, int with_handle, const void *handle, const void *event)
{
    rec_t r;
    begin(&r, "ret");
    put_u64(&r, "id", id);
    put_i64(&r, "status", status);
    if (with_handle)
        put_ptr(&r, "handle", handle);
    if (event)
        put_ptr(&r, "event", event);
    emit(&r, id);
}

/* Strict mode: the call record asks glshare's verdict and waits for it under one lock (the answers
 * come in the order of the questions). 0: go on (also where glshare is gone). */
static cl_int emit_asking(rec_t *r, uint64_t id)
{
    if (!strict_mode || verdict_fd < 0) {
        emit(r, id);
        return CL_SUCCESS;
    }
    put_bool(r, "verdict", 1);
    pthread_mutex_lock(&verdict_mu);
    emit(r, id);
    char line[256];
    size_t n = 0;
    for (;;) {
        char c;
        ssize_t got = read(verdict_fd, &c, 1);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {  /* end of file: glshare gone, calls go on from now on */
            verdict_fd = -1;
            n = 0;
            break;
        }
        if (c == '\n')
            break;
        if (n < sizeof line - 1)
            line[n++] = c;
    }
    pthread_mutex_unlock(&verdict_mu);
    line[n] = 0;
    if (!n)
        return CL_SUCCESS;
    const char *s = strstr(line, "\"id\"");
    if (s && (s = strchr(s, ':')) && strtoull(s + 1, NULL, 10) != id) {
        note("a verdict for another call: the call goes on");
        return CL_SUCCESS;
    }
    s = strstr(line, "\"status\"");
    if (!s || !(s = strchr(s, ':')))
        return CL_SUCCESS;
    return (cl_int)strtol(s + 1, NULL, 10);
}

/* ---- the handles the layer knows: mem objects it saw created, kernels and their mem arguments ------ */

typedef struct {
    const void *key;
    void *val;  /* mems: (void *)1 alive, NULL removed; kernels: a kinfo_t */
} slot_t;

typedef struct {
    slot_t *s;
    size_t cap, used;
} table_t;

#define KARGS 64
typedef struct {
    char name[128];
    cl_mem args[KARGS];
} kinfo_t;

static pthread_mutex_t tables_mu = PTHREAD_MUTEX_INITIALIZER;
static table_t mems, kernels;

static size_t hash_ptr(const void *p, size_t cap)
{
    return (size_t)(((uintptr_t)p >> 4) * 0x9E3779B97F4A7C15ull) & (cap - 1);
}

static slot_t *tfind(table_t *t, const void *key)
{
    if (!t->cap)
        return NULL;
    for (size_t i = hash_ptr(key, t->cap);; i = (i + 1) & (t->cap - 1)) {
        if (t->s[i].key == key)
            return &t->s[i];
        if (!t->s[i].key)
            return NULL;
    }
}

static slot_t *tinsert(table_t *t, const void *key)
{
    slot_t *f = tfind(t, key);
    if (f)
        return f;
    if ((t->used + 1) * 2 > t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 256;
        slot_t *s = calloc(cap, sizeof *s);
        if (!s)
            return NULL;
        for (size_t i = 0; i < t->cap; i++) {
            if (!t->s[i].key || !t->s[i].val)
                continue;  /* removed entries go at growth */
            size_t j = hash_ptr(t->s[i].key, cap);
            while (s[j].key)
                j = (j + 1) & (cap - 1);
            s[j] = t->s[i];
        }
        size_t kept = 0;
        for (size_t i = 0; i < cap; i++)
            kept += s[i].key != NULL;
        free(t->s);
        t->s = s;
        t->cap = cap;
        t->used = kept;
    }
    size_t i = hash_ptr(key, t->cap);
    while (t->s[i].key)
        i = (i + 1) & (t->cap - 1);
    t->s[i].key = key;
    t->s[i].val = NULL;
    t->used++;
    return &t->s[i];
}

static void mem_known(cl_mem m)
{
    if (!m)
        return;
    pthread_mutex_lock(&tables_mu);
    slot_t *s = tinsert(&mems, m);
    if (s)
        s->val = (void *)1;
    pthread_mutex_unlock(&tables_mu);
}

static int is_known_mem(cl_mem m)
{
    pthread_mutex_lock(&tables_mu);
    slot_t *s = tfind(&mems, m);
    int known = s && s->val;
    pthread_mutex_unlock(&tables_mu);
    return known;
}

static void mem_forget(cl_mem m)
{
    pthread_mutex_lock(&tables_mu);
    slot_t *s = tfind(&mems, m);
    if (s)
        s->val = NULL;
    pthread_mutex_unlock(&tables_mu);
}

/* The kernel's record (tables_mu held); its name read from the driver on first sight. */
static kinfo_t *kinfo(cl_kernel k, const char *name)
{
    slot_t *s = tinsert(&kernels, k);
    if (!s)
        return NULL;
    kinfo_t *ki = s->val;
    if (!ki) {
        ki = calloc(1, sizeof *ki);
        if (!ki)
            return NULL;
        s->val = ki;
        if (!name && nx->clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, sizeof ki->name - 1, ki->name, NULL) != CL_SUCCESS)
            ki->name[0] = 0;
    }
    if (name) {
        memset(ki, 0, sizeof *ki);
        strncpy(ki->name, name, sizeof ki->name - 1);
    }
    return ki;
}

/* ---- device stamps: the events of recorded commands, read by one thread per process -------------- */

typedef struct {
    uint64_t id;
    cl_event ev;
} pending_t;

typedef struct {
    pending_t *p;
    size_t n, cap;
} plist_t;

typedef struct {
    cl_device_id dev;
    int timer;  /* 1: clGetDeviceAndHostTimer (platform 2.1+), 0: not, -1: not asked yet */
    char why[96];
} clockdev_t;

static pthread_mutex_t st_mu = PTHREAD_MUTEX_INITIALIZER;   /* pending, devices, thread state */
static pthread_mutex_t drv_mu = PTHREAD_MUTEX_INITIALIZER;  /* held by whoever reads stamps from the driver */
static pthread_cond_t st_cv = PTHREAD_COND_INITIALIZER;
static plist_t pending, working;  /* working: taken by the reader, under drv_mu */
static clockdev_t devices[32];
static int ndevices;
static int thread_started, exiting;
static int due;  /* the program waited: its commands' events are worth a pass now */
static uint64_t last_pass; /* now_ns() when the thread's last pass ended (st_mu) */
/* a wait of the program wakes the thread only this long after its last pass: a frame's several waits
 * (clFinish, a blocking map...) cost the program's cores one wake-up, not one each */
#define STAMPS_WAKE_NS 20000000ull

static int plist_push(plist_t *l, uint64_t id, cl_event ev)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 256;
        pending_t *p = realloc(l->p, cap * sizeof *p);
        if (!p)
            return 0;
        l->p = p;
        l->cap = cap;
    }
    l->p[l->n].id = id;
    l->p[l->n].ev = ev;
    l->n++;
    return 1;
}

static void stamps_rec(uint64_t id, cl_event ev, cl_int exec)
{
    rec_t r;
    begin(&r, "stamps");
    put_u64(&r, "id", id);
    if (exec < 0) {
        put_str(&r, "error", "the command failed");
        put_i64(&r, "status", exec);
    } else {
        static const cl_profiling_info names[4] = {CL_PROFILING_COMMAND_QUEUED, CL_PROFILING_COMMAND_SUBMIT,
                                                   CL_PROFILING_COMMAND_START, CL_PROFILING_COMMAND_END};
        static const char *const keys[4] = {"queued", "submit", "start", "end"};
        cl_ulong v[4];
        cl_int st = CL_SUCCESS;
        for (int i = 0; i < 4 && st == CL_SUCCESS; i++)
            st = nx->clGetEventProfilingInfo(ev, names[i], sizeof v[i], &v[i], NULL);
        if (st != CL_SUCCESS) {
            char t[96];
            snprintf(t, sizeof t, "no profiling information (clGetEventProfilingInfo: %d)", st);
            put_str(&r, "error", t);
        } else {
            for (int i = 0; i < 4; i++)
                put_u64(&r, keys[i], v[i]);
        }
    }
    emit(&r, id);
}

/* One pass over the working list (drv_mu held): completed events' stamps written, their references
 * dropped; the rest kept. Returns how many completed. At exit (final) the rest are reported too;
 * without ``ask`` the driver is not called at all. */
static size_t poll_working(int final, int ask)
{
    size_t done = 0, keep = 0;
    for (size_t i = 0; i < working.n; i++) {
        pending_t p = working.p[i];
        cl_int exec = CL_QUEUED;
        if (ask && nx->clGetEventInfo(p.ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof exec, &exec, NULL) != CL_SUCCESS)
            exec = CL_INVALID_EVENT;
        if (exec == CL_COMPLETE || exec < 0) {
            stamps_rec(p.id, p.ev, exec);
            nx->clReleaseEvent(p.ev);
            done++;
        } else if (final) {
            rec_t r;
            begin(&r, "stamps");
            put_u64(&r, "id", p.id);
            put_str(&r, "error", "the program ended first");
            emit(&r, p.id);
        } else {
            working.p[keep++] = p;
        }
    }
    working.n = final ? 0 : keep;
    return done;
}

static void take_pending(void)
{
    pthread_mutex_lock(&st_mu);
    for (size_t i = 0; i < pending.n; i++)
        plist_push(&working, pending.p[i].id, pending.p[i].ev);
    pending.n = 0;
    pthread_mutex_unlock(&st_mu);
}

/* A "clock" record of one device: clGetDeviceAndHostTimer (OpenCL 3.0 4.2, 2.1+). */
static void clock_rec(clockdev_t *d)
{
    rec_t r;
    begin(&r, "clock");
    put_ptr(&r, "device", d->dev);
    if (d->timer < 0) {
        cl_platform_id plat = NULL;
        char ver[128] = {0};
        int major = 0, minor = 0;
        if (nx->clGetDeviceInfo(d->dev, CL_DEVICE_PLATFORM, sizeof plat, &plat, NULL) == CL_SUCCESS &&
            nx->clGetPlatformInfo(plat, CL_PLATFORM_VERSION, sizeof ver - 1, ver, NULL) == CL_SUCCESS)
            sscanf(ver, "OpenCL %d.%d", &major, &minor);
        d->timer = major > 2 || (major == 2 && minor >= 1);
        if (!d->timer)
            snprintf(d->why, sizeof d->why, "the platform is OpenCL %d.%d (the timer is 2.1+)", major, minor);
    }
    cl_ulong dev_ns = 0, host_ns = 0;
    if (d->timer) {
        cl_int st = nx->clGetDeviceAndHostTimer ? nx->clGetDeviceAndHostTimer(d->dev, &dev_ns, &host_ns)
                                                : CL_INVALID_OPERATION;
        if (st != CL_SUCCESS) {
            d->timer = 0;
            snprintf(d->why, sizeof d->why, "clGetDeviceAndHostTimer: %d", st);
        }
    }
    if (d->timer) {
        put_u64(&r, "device_ns", dev_ns);
        put_u64(&r, "host_ns", host_ns);
    } else {
        put_str(&r, "error", d->why);
    }
    emit(&r, 0);
}

static void clocks_all(void)
{
    clockdev_t copy[32];
    pthread_mutex_lock(&st_mu);
    int n = ndevices;
    memcpy(copy, devices, sizeof devices);
    pthread_mutex_unlock(&st_mu);
    for (int i = 0; i < n; i++)
        if (copy[i].timer > 0)  /* a device without the timer said why once, at its first queue */
            clock_rec(&copy[i]);
    pthread_mutex_lock(&st_mu);
    for (int i = 0; i < n; i++)
        devices[i] = copy[i];
    pthread_mutex_unlock(&st_mu);
}

/* Reads the events' status rather than waiting on them: clWaitForEvents would flush the program's
 * queues at other times than the program does. A pass runs when the program waited (clFinish,
 * clWaitForEvents, a blocking transfer: its commands are then complete; at most one wake-up per
 * STAMPS_WAKE_NS), else every 50 ms while events are pending and every second otherwise (the clock
 * records): no wake-up per command. */
static void *stamps_thread(void *arg)
{
    (void)arg;
    uint64_t last_clock = now_ns();
    for (;;) {
        pthread_mutex_lock(&drv_mu);
        int waiting = working.n > 0;
        pthread_mutex_unlock(&drv_mu);
        pthread_mutex_lock(&st_mu);
        if (!due && !exiting) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            uint64_t ns = until.tv_nsec + (waiting || pending.n ? 50000000ull : 1000000000ull);
            until.tv_sec += (time_t)(ns / 1000000000ull);
            until.tv_nsec = (long)(ns % 1000000000ull);
            pthread_cond_timedwait(&st_cv, &st_mu, &until);
        }
        due = 0;
        pthread_mutex_unlock(&st_mu);
        pthread_mutex_lock(&drv_mu);
        if (exiting) {
            pthread_mutex_unlock(&drv_mu);
            return NULL;
        }
        take_pending();
        poll_working(0, 1);
        if (now_ns() - last_clock >= 1000000000ull) {
            clocks_all();
            last_clock = now_ns();
        }
        pthread_mutex_unlock(&drv_mu);
        pthread_mutex_lock(&st_mu);
        last_pass = now_ns();
        pthread_mutex_unlock(&st_mu);
    }
}

/* The program waited: a pass soon, at once where the last one is STAMPS_WAKE_NS old (else the
 * timed wait's 50 ms, or a later wait, brings it; at exit the rest are read). */
static void stamps_due(void)
{
    pthread_mutex_lock(&st_mu);
    if (thread_started && now_ns() - last_pass >= STAMPS_WAKE_NS) {
        due = 1;
        pthread_cond_signal(&st_cv);
    }
    pthread_mutex_unlock(&st_mu);
}

/* Starts the stamps thread once per process (st_mu held); it takes no signal meant for the program. */
static void start_thread_locked(void)
{
    if (thread_started)
        return;
    thread_started = 1;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_t th;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&th, &attr, stamps_thread, NULL) != 0)
        thread_started = 0;
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void watch_event(uint64_t id, cl_event ev)
{
    pthread_mutex_lock(&st_mu);
    if (!exiting && plist_push(&pending, id, ev)) {
        start_thread_locked();
    } else {
        nx->clReleaseEvent(ev);
    }
    pthread_mutex_unlock(&st_mu);
}

static void watch_device(cl_device_id dev)
{
    if (!dev)
        return;
    pthread_mutex_lock(&st_mu);
    int i;
    for (i = 0; i < ndevices && devices[i].dev != dev; i++)
        ;
    int fresh = i == ndevices && ndevices < 32;
    if (fresh) {
        devices[ndevices].dev = dev;
        devices[ndevices].timer = -1;
        ndevices++;
    }
    start_thread_locked();
    clockdev_t d = devices[i < 32 ? i : 0];
    pthread_mutex_unlock(&st_mu);
    if (fresh) {
        clock_rec(&d);
        pthread_mutex_lock(&st_mu);
        devices[i] = d;
        pthread_mutex_unlock(&st_mu);
    }
}

/* At exit: the stamps that are there are written, the rest reported; nothing waits on the device.
 * A driver that ends the process from inside a call (PoCL's unimplemented entry points call exit) may
 * hold its own locks: from inside a recorded call the driver is not asked, and a stamps thread stuck
 * in the driver is left alone after 200 ms. */
static void at_exit(void)
{
    if (out_fd < 0)
        return;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += 200000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    if (pthread_mutex_timedlock(&drv_mu, &until) != 0)
        return;
    pthread_mutex_lock(&st_mu);
    exiting = 1;
    pthread_cond_signal(&st_cv);
    pthread_mutex_unlock(&st_mu);
    take_pending();
    poll_working(1, depth == 0);
    pthread_mutex_unlock(&drv_mu);
}

/* A forked child has only the forking thread: the locks start free, the parent's events are not its. */
static void in_child(void)
{
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    hello_mu = verdict_mu = tables_mu = st_mu = drv_mu = x_mu = fresh;
    pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
    st_cv = cv;
    pending.n = working.n = 0;
    thread_started = 0;
    cur_pid = getpid();
    my_tid = 0;
}

/* ---- the enqueue pattern: call record, own event, ret record, stamps ------------------------------ */

typedef struct {
    rec_t r;
    uint64_t id;
    cl_event own;
    cl_event *evp;  /* what goes to the driver */
} enq_t;

static void enq_waits(enq_t *e, cl_uint num_wait, const cl_event *wait, cl_event *event)
{
    put_u64(&e->r, "num_wait", num_wait);
    put_handles(&e->r, "wait", (const void *const *)wait, wait ? num_wait : 0);
    put_bool(&e->r, "event_out", event != NULL);
    uintptr_t at = (uintptr_t)event, first = (uintptr_t)wait;
    if (event && wait && at >= first && at < first + num_wait * sizeof *wait && (at - first) % sizeof *wait == 0)
        put_u64(&e->r, "event_in_wait", (at - first) / sizeof *wait); /* the alias 5.5.15 forbids: the slot's index */
    e->own = NULL;
    e->evp = event ? event : &e->own;
}

static void enq_done(enq_t *e, cl_int status, cl_event *event)
{
    cl_event ev = event ? (status == CL_SUCCESS ? *event : NULL) : e->own;
    ret_rec(e->id, status, 0, NULL, ev);
    if (status == CL_SUCCESS && ev) {
        if (event)
            nx->clRetainEvent(ev);  /* the program's event: the layer's reference until its stamps are read */
        watch_event(e->id, ev);
    }
}

/* ---- contexts and queues -------------------------------------------------------------------------- */

static void context_made(uint64_t id, cl_int st, cl_context c);

static cl_context CL_API_CALL w_clCreateContext(const cl_context_properties *props, cl_uint ndev,
                                                const cl_device_id *devs,
                                                void(CL_CALLBACK *notify)(const char *, const void *, size_t, void *),
                                                void *ud, cl_int *err)
{
    if (!recording())
        return nx->clCreateContext(props, ndev, devs, notify, ud, err);
    rec_t r;
    uint64_t id = call_head(&r, "clCreateContext", SITE());
    put_props(&r, "props", props);
    put_handles(&r, "devices", (const void *const *)devs, devs ? ndev : 0);
    emit(&r, id);
    cl_int st = CL_SUCCESS;
    depth++;
    cl_context c = nx->clCreateContext(props, ndev, devs, notify, ud, &st);
    depth--;
    if (err)
        *err = st;
    context_made(id, st, c);
    return c;
}

static cl_context CL_API_CALL w_clCreateContextFromType(const cl_context_properties *props, cl_device_type type,
                                                        void(CL_CALLBACK *notify)(const char *, const void *, size_t,
                                                                                  void *),
                                                        void *ud, cl_int *err)
{
    if (!recording())
        return nx->clCreateContextFromType(props, type, notify, ud, err);
    rec_t r;
    uint64_t id = call_head(&r, "clCreateContextFromType", SITE());
    put_props(&r, "props", props);
    put_u64(&r, "device_type", type);
    emit(&r, id);
    cl_int st = CL_SUCCESS;
    depth++;
    cl_context c = nx->clCreateContextFromType(props, type, notify, ud, &st);
    depth--;
    if (err)
        *err = st;
    context_made(id, st, c);
    return c;
}

/* The extensions a context's devices are asked about (wire.py, SHARING_EXTENSIONS): those the sharing
 * calls need (cl_khr_gl_sharing: clCreateFromGL*, clEnqueueAcquire/ReleaseGLObjects, OpenCL 3.0
 * Extension spec 9.5; cl_khr_external_memory and its handle types; cl_khr_semaphore and the external
 * semaphores). */
static const char *const SHARING_EXTS[] = {
    "cl_khr_gl_sharing", "cl_khr_gl_event", "cl_khr_egl_image", "cl_khr_external_memory",
    "cl_khr_external_memory_opaque_fd", "cl_khr_external_memory_dma_buf", "cl_khr_semaphore",
    "cl_khr_external_semaphore", "cl_khr_external_semaphore_opaque_fd", "cl_khr_external_semaphore_sync_fd"};
#define DEVICES_MAX 8 /* devices described in one context's ret record */

/* ``name`` is one of the space-separated words of ``list`` (a prefix of a longer name is not). */
static int lists_word(const char *list, const char *name)
{
    size_t k = strlen(name);
    for (const char *p = list; (p = strstr(p, name)) != NULL; p += k)
        if ((p == list || p[-1] == ' ') && (p[k] == ' ' || p[k] == 0))
            return 1;
    return 0;
}

static void info_str(cl_int (*get)(void *, cl_uint, size_t, void *, size_t *), void *obj, cl_uint what, char *out,
                     size_t cap)
{
    out[0] = 0;
    if (get(obj, what, cap - 1, out, NULL) != CL_SUCCESS)
        out[0] = 0;
    out[cap - 1] = 0;
}

/* A context's ret record: with each of its devices (CL_CONTEXT_DEVICES, at most DEVICES_MAX) as
 * ``devices_info``: its name, its platform's name and version, and which of SHARING_EXTS its
 * CL_DEVICE_EXTENSIONS lists. Only queries: the program's context is what the driver made. */
static void context_made(uint64_t id, cl_int st, cl_context c)
{
    rec_t r;
    begin(&r, "ret");
    put_u64(&r, "id", id);
    put_i64(&r, "status", st);
    put_ptr(&r, "handle", c);
    cl_device_id devs[DEVICES_MAX];
    size_t size = 0;
    if (st == CL_SUCCESS && c && nx->clGetContextInfo(c, CL_CONTEXT_DEVICES, sizeof devs, devs, &size) == CL_SUCCESS) {
        size_t ndev = size / sizeof devs[0];
        puts_(&r, ",\"devices_info\":[");
        for (size_t i = 0; i < ndev && i < DEVICES_MAX; i++) {
            if (r.n > MAX_LINE - 2200) { /* room for one more whole entry (three escaped strings, the list) */
                r.cut = 1;
                break;
            }
            char name[256], pname[256], pver[256], t[600];
            cl_platform_id plat = NULL;
            info_str((cl_int(*)(void *, cl_uint, size_t, void *, size_t *))nx->clGetDeviceInfo, devs[i], CL_DEVICE_NAME,
                     name, sizeof name);
            pname[0] = pver[0] = 0;
            if (nx->clGetDeviceInfo(devs[i], CL_DEVICE_PLATFORM, sizeof plat, &plat, NULL) == CL_SUCCESS) {
                info_str((cl_int(*)(void *, cl_uint, size_t, void *, size_t *))nx->clGetPlatformInfo, plat,
                         CL_PLATFORM_NAME, pname, sizeof pname);
                info_str((cl_int(*)(void *, cl_uint, size_t, void *, size_t *))nx->clGetPlatformInfo, plat,
                         CL_PLATFORM_VERSION, pver, sizeof pver);
            }
            size_t n = 0;
            t[n++] = i ? ',' : '{';
            if (i)
                t[n++] = '{';
            memcpy(t + n, "\"device\":", 9);
            n += 9;
            n += hex_(t + n, (uintptr_t)devs[i]);
            put(&r, t, n);
            put_str(&r, "name", name);
            put_str(&r, "platform", pname);
            put_str(&r, "platform_version", pver);
            size_t elen = 0;
            char *exts = NULL;
            if (nx->clGetDeviceInfo(devs[i], CL_DEVICE_EXTENSIONS, 0, NULL, &elen) == CL_SUCCESS && elen &&
                (exts = malloc(elen + 1)) != NULL &&
                nx->clGetDeviceInfo(devs[i], CL_DEVICE_EXTENSIONS, elen, exts, NULL) == CL_SUCCESS) {
                exts[elen] = 0;
                puts_(&r, ",\"lists\":[");
                int first = 1;
                for (size_t e = 0; e < sizeof SHARING_EXTS / sizeof SHARING_EXTS[0]; e++) {
                    if (!lists_word(exts, SHARING_EXTS[e]))
                        continue;
                    n = 0;
                    if (!first)
                        t[n++] = ',';
                    n += qstr_(t + n, SHARING_EXTS[e]);
                    put(&r, t, n);
                    first = 0;
                }
                puts_(&r, "]");
            }
            free(exts);
            puts_(&r, "}");
        }
        puts_(&r, "]");
    }
    emit(&r, id);
}

/* A queue's ret record; ``refused``: the driver refused the profiling the layer asked for, and the
 * queue was made with the program's own properties (what the program then sees is the driver's answer
 * to them). */
static cl_command_queue queue_made(uint64_t id, cl_device_id dev, cl_command_queue q, cl_int st, cl_int *err,
                                   int refused)
{
    if (err)
        *err = st;
    rec_t r;
    begin(&r, "ret");
    put_u64(&r, "id", id);
    put_i64(&r, "status", st);
    put_ptr(&r, "handle", q);
    if (refused)
        put_bool(&r, "profiling", 0);
    emit(&r, id);
    if (st == CL_SUCCESS)
        watch_device(dev);
    return q;
}

static cl_command_queue CL_API_CALL w_clCreateCommandQueue(cl_context ctx, cl_device_id dev,
                                                           cl_command_queue_properties props, cl_int *err)
{
    if (!recording())
        return nx->clCreateCommandQueue(ctx, dev, props, err);
    rec_t r;
    uint64_t id = call_head(&r, "clCreateCommandQueue", SITE());
    put_ptr(&r, "context", ctx);
    put_ptr(&r, "device", dev);
    put_u64(&r, "props", props);
    int add = !(props & CL_QUEUE_PROFILING_ENABLE);
    put_bool(&r, "profiling", add);
    emit(&r, id);
    cl_int st = CL_SUCCESS;
    cl_command_queue q = NULL;
    depth++;
    if (add)
        q = nx->clCreateCommandQueue(ctx, dev, props | CL_QUEUE_PROFILING_ENABLE, &st);
    int kept = add && st == CL_SUCCESS;
    if (!kept)
        q = nx->clCreateCommandQueue(ctx, dev, props, &st);
    depth--;
    return queue_made(id, dev, q, st, err, add && !kept);
}

static cl_command_queue CL_API_CALL w_clCreateCommandQueueWithProperties(cl_context ctx, cl_device_id dev,
                                                                         const cl_queue_properties *props,
                                                                         cl_int *err)
{
    if (!recording())
        return nx->clCreateCommandQueueWithProperties(ctx, dev, props, err);
    rec_t r;
    uint64_t id = call_head(&r, "clCreateCommandQueueWithProperties", SITE());
    put_ptr(&r, "context", ctx);
    put_ptr(&r, "device", dev);
    put_props(&r, "props", props);
    /* the program's list with CL_QUEUE_PROFILING_ENABLE in CL_QUEUE_PROPERTIES (added where absent) */
    cl_queue_properties mine[2 * LIST_MAX + 3];
    int n = 0, has = 0, add = 0;
    for (; props && props[n] && n < 2 * LIST_MAX; n += 2) {
        mine[n] = props[n];
        mine[n + 1] = props[n + 1];
        if (props[n] == CL_QUEUE_PROPERTIES) {
            has = 1;
            add = !(props[n + 1] & CL_QUEUE_PROFILING_ENABLE);
            mine[n + 1] |= CL_QUEUE_PROFILING_ENABLE;
        }
    }
    if (!has && (!props || !props[n])) {
        add = 1;
        mine[n++] = CL_QUEUE_PROPERTIES;
        mine[n++] = CL_QUEUE_PROFILING_ENABLE;
    }
    if (props && props[n] && n >= 2 * LIST_MAX)
        add = 0;  /* a list longer than the copy: the program's own */
    mine[n] = 0;
    put_bool(&r, "profiling", add);
    emit(&r, id);
    cl_int st = CL_SUCCESS;
    cl_command_queue q = NULL;
    depth++;
    if (add)
        q = nx->clCreateCommandQueueWithProperties(ctx, dev, mine, &st);
    int kept = add && st == CL_SUCCESS;
    if (!kept)
        q = nx->clCreateCommandQueueWithProperties(ctx, dev, props, &st);
    depth--;
    return queue_made(id, dev, q, st, err, add && !kept);
}

/* ---- memory objects ------------------------------------------------------------------------------- */

/* A handle-returning creation: the call record (head filled by the caller), the call, ret, and the
 * new mem object remembered. */
#define CREATE_MEM(rec, id, call)              \
    do {                                       \
        emit(&rec, id);                        \
        cl_int st_ = CL_SUCCESS;               \
        depth++;                               \
        cl_mem m_ = call;                      \
        depth--;                               \
        if (err)                               \
            *err = st_;                        \
        ret_rec(id, st_, 1, m_, NULL);         \
        if (st_ == CL_SUCCESS)                 \
            mem_known(m_);                     \
        return m_;                             \
    } while (0)

static cl_mem CL_API_CALL w_clCreateBuffer(cl_context ctx, cl_mem_flags flags, size_t size, void *host, cl_int *err)
{
    if (!recording())
        return nx->clCreateBuffer(ctx, flags, size, host, err);
    rec_t r;
    uint64_t id = call_head(&r, "clCreateBuffer", SITE());
    put_ptr(&r, "context", ctx);
    put_u64(&r, "flags", flags);
    put_u64(&r, "size", size);
    CREATE_MEM(r, id, nx->clCreateBuffer(ctx, flags, size, host, &st_));
}

static cl_mem CL_API_CALL w_clCreateBufferWithProperties(cl_context ctx, const cl_mem_properties *props,
                                                         cl_mem_flags flags, size_t size, void *host, cl_int *err)
{
    if (!recording())
        return nx->clCreateBufferWithProperties(ctx, props, flags, size, host, err);
    rec_t r;
    uint64_t id = call_head(&r, "clCreateBufferWithProperties", SITE());
    put_ptr(&r, "context", ctx);
    put_u64(&r, "flags", flags);
    put_u64(&r, "size", size);
    put_props(&r, "props", props);
    CREATE_MEM(r, id, nx->clCreateBufferWithProperties(ctx, props, flags, size, host, &st_));
}

static void put_image(rec_t *r, const cl_image_desc *desc)
{
    if (!desc)
        return;
    put_u64(r, "width", desc->image_width);
    put_u64(r, "height", desc->image_height);
}

static cl_mem CL_API_CALL w_clCreateImage(cl_context ctx, cl_mem_flags flags, const cl_image_format *fmt,
                                          const cl_image_desc *desc, void *host, cl_int *err)
{
    if (!recording())
        return nx->clCreateImage(ctx, flags, fmt, desc, host, err);
    rec_t r;
    uint64_t id = call_head(&r, "clCreateImage", SITE());
    put_ptr(&r, "context", ctx);
    put_u64(&r, "flags", flags);
    put_image(&r, desc);
    CREATE_MEM(r, id, nx->clCreateImage(ctx, flags, fmt, desc, host, &st_));
}

static cl_mem CL_API_CALL w_clCreateImageWithProperties(cl_context ctx, const cl_mem_properties *props,
                                                        cl_mem_flags flags, const cl_image_format *fmt,
                                                        const cl_image_desc *desc, void *host, cl_int *err)
{
    if (!recording())
        return nx->clCreateImageWithProperties(ctx, props, flags, fmt, desc, host, err);
    rec_t r;
    uint64_t id = call_head(&r, "clCreateImageWithProperties", SITE());
    put_ptr(&r, "context", ctx);
    put_u64(&r, "flags", flags);
    put_image(&r, desc);
    put_props(&r, "props", props);
    CREATE_MEM(r, id, nx->clCreateImageWithProperties(ctx, props, flags, fmt, desc, host, &st_));
}

static cl_mem CL_API_CALL w_clCreateImage2D(cl_context ctx, cl_mem_flags flags, const cl_image_format *fmt, size_t w,
                                            size_t h, size_t pitch, void *host, cl_int *err)
{
    cl_mem m = nx->clCreateImage2D(ctx, flags, fmt, w, h, pitch, host, err);
    if (out_fd >= 0 && m)
        mem_known(m);
    return m;
}

static cl_mem CL_API_CALL w_clCreateImage3D(cl_context ctx, cl_mem_flags flags, const cl_image_format *fmt, size_t w,
                                            size_t h, size_t d, size_t rp, size_t sp, void *host, cl_int *err)
{
    cl_mem m = nx->clCreateImage3D(ctx, flags, fmt, w, h, d, rp, sp, host, err);
    if (out_fd >= 0 && m)
        mem_known(m);
    return m;
}

static cl_mem CL_API_CALL w_clCreateSubBuffer(cl_mem buf, cl_mem_flags flags, cl_buffer_create_type type,
                                              const void *info, cl_int *err)
{
    cl_mem m = nx->clCreateSubBuffer(buf, flags, type, info, err);
    if (out_fd >= 0 && m)
        mem_known(m);
    return m;
}

/* The program's retains, recorded so that glshare counts a memory object's references: it ends at the
 * release that takes the last one the program holds (OpenCL 3.0 5.5.4; the driver's own references,
 * which CL_MEM_REFERENCE_COUNT may include, are not the program's). */
static cl_int CL_API_CALL w_clRetainMemObject(cl_mem mem)
{
    if (!recording())
        return nx->clRetainMemObject(mem);
    rec_t r;
    uint64_t id = call_head(&r, "clRetainMemObject", SITE());
    put_ptr(&r, "mem", mem);
    emit(&r, id);
    depth++;
    cl_int st = nx->clRetainMemObject(mem);
    depth--;
    ret_rec(id, st, 0, NULL, NULL);
    return st;
}

static cl_int CL_API_CALL w_clReleaseMemObject(cl_mem mem)
{
    if (!recording())
        return nx->clReleaseMemObject(mem);
    rec_t r;
    uint64_t id = call_head(&r, "clReleaseMemObject", SITE());
    put_ptr(&r, "mem", mem);
    emit(&r, id);
    cl_uint refs = 0;
    depth++;
    if (nx->clGetMemObjectInfo(mem, CL_MEM_REFERENCE_COUNT, sizeof refs, &refs, NULL) != CL_SUCCESS)
        refs = 0;
    cl_int st = nx->clReleaseMemObject(mem);
    depth--;
    if (st == CL_SUCCESS && refs == 1)
        mem_forget(mem);  /* the handle may come back for another object */
    ret_rec(id, st, 0, NULL, NULL);
    return st;
}

/* ---- GL sharing (cl_khr_gl_sharing, OpenCL 3.0 extension spec 9.6/9.7) ---------------------------- */

static cl_mem from_gl(const char *fn, const void *site, cl_context ctx, cl_mem_flags flags, int has_target,
                      cl_GLenum target, cl_GLint miplevel, cl_GLuint obj, cl_int *err,
                      cl_mem (*call)(const void *next, cl_context, cl_mem_flags, cl_GLenum, cl_GLint, cl_GLuint,
                                     cl_int *),
                      const void *next)
{
    if (!recording())
        return call(next, ctx, flags, target, miplevel, obj, err);
    rec_t r;
    uint64_t id = call_head(&r, fn, site);
    put_ptr(&r, "context", ctx);
    put_u64(&r, "flags", flags);
    put_u64(&r, "gl_object", obj);
    if (has_target) {
        put_u64(&r, "target", target);
        put_i64(&r, "miplevel", miplevel);
    }
    CREATE_MEM(r, id, call(next, ctx, flags, target, miplevel, obj, &st_));
}

static cl_mem call_buffer(const void *f, cl_context c, cl_mem_flags fl, cl_GLenum t, cl_GLint l, cl_GLuint o, cl_int *e)
{
    (void)t, (void)l;
    return ((cl_api_clCreateFromGLBuffer)f)(c, fl, o, e);
}

static cl_mem call_texture(const void *f, cl_context c, cl_mem_flags fl, cl_GLenum t, cl_GLint l, cl_GLuint o,
                           cl_int *e)
{
    return ((cl_api_clCreateFromGLTexture)f)(c, fl, t, l, o, e);
}

static cl_mem call_renderbuffer(const void *f, cl_context c, cl_mem_flags fl, cl_GLenum t, cl_GLint l, cl_GLuint o,
                                cl_int *e)
{
    (void)t, (void)l;
    return ((cl_api_clCreateFromGLRenderbuffer)f)(c, fl, o, e);
}

typedef cl_int(CL_API_CALL *mem_list_fn)(cl_command_queue, cl_uint, const cl_mem *, cl_uint, const cl_event *,
                                          cl_event *);

/* An acquire or release of a list of mem objects (GL sharing, external memory): strict mode asks first. */
static cl_int mem_list(const char *fn, const void *site, mem_list_fn next, cl_command_queue q, cl_uint num,
                       const cl_mem *objs, cl_uint nw, const cl_event *wl, cl_event *event)
{
    if (!recording() || !next)
        return next ? next(q, num, objs, nw, wl, event) : CL_INVALID_OPERATION;
    enq_t e;
    e.id = call_head(&e.r, fn, site);
    put_ptr(&e.r, "queue", q);
    put_u64(&e.r, "num", num);
    put_handles(&e.r, "mems", (const void *const *)objs, objs ? num : 0);
    enq_waits(&e, nw, wl, event);
    cl_int verdict = emit_asking(&e.r, e.id);
    if (verdict != CL_SUCCESS) {
        rec_t r;
        begin(&r, "ret");
        put_u64(&r, "id", e.id);
        put_i64(&r, "status", verdict);
        put_i64(&r, "verdict", verdict);
        emit(&r, e.id);
        return verdict;
    }
    depth++;
    cl_int st = next(q, num, objs, nw, wl, e.evp);
    depth--;
    enq_done(&e, st, event);
    return st;
}

/* Extension entry points handed out by clGetExtensionFunctionAddress(ForPlatform): the pointer the
 * next layer returned, per ICD (the dispatch table a handle points to names its ICD, cl_khr_icd). */
enum {
    X_ACQ_GL, X_REL_GL, X_BUF_GL, X_TEX_GL, X_TEX2D_GL, X_TEX3D_GL, X_RB_GL, X_SYNC_GL, X_CTXINFO_GL,
    X_ACQ_EXT, X_REL_EXT, X_WAIT_SEM, X_SIGNAL_SEM, X_CREATE_SEM, X_COUNT
};
static const char *const x_names[X_COUNT] = {
    "clEnqueueAcquireGLObjects", "clEnqueueReleaseGLObjects", "clCreateFromGLBuffer", "clCreateFromGLTexture",
    "clCreateFromGLTexture2D", "clCreateFromGLTexture3D", "clCreateFromGLRenderbuffer", "clCreateEventFromGLsyncKHR",
    "clGetGLContextInfoKHR", "clEnqueueAcquireExternalMemObjectsKHR", "clEnqueueReleaseExternalMemObjectsKHR",
    "clEnqueueWaitSemaphoresKHR", "clEnqueueSignalSemaphoresKHR", "clCreateSemaphoreWithPropertiesKHR"};
#define X_ICDS 8
static struct {
    const void *icd;  /* NULL: from clGetExtensionFunctionAddress (any platform) */
    void *fn;
} x_fns[X_COUNT][X_ICDS];

static const void *icd_of(const void *handle) { return handle ? *(const void *const *)handle : NULL; }

static void x_store(int i, const void *icd, void *fn)
{
    pthread_mutex_lock(&x_mu);
    int j;
    for (j = 0; j < X_ICDS && x_fns[i][j].fn && x_fns[i][j].icd != icd; j++)
        ;
    if (j < X_ICDS) {
        x_fns[i][j].icd = icd;
        x_fns[i][j].fn = fn;
    }
    pthread_mutex_unlock(&x_mu);
}

static void *x_next(int i, const void *icd)
{
    void *any = NULL, *first = NULL;
    pthread_mutex_lock(&x_mu);
    for (int j = 0; j < X_ICDS && x_fns[i][j].fn; j++) {
        if (x_fns[i][j].icd == icd) {
            first = x_fns[i][j].fn;
            any = NULL;
            break;
        }
        if (!x_fns[i][j].icd && !any)
            any = x_fns[i][j].fn;
        if (!first)
            first = x_fns[i][j].fn;
    }
    pthread_mutex_unlock(&x_mu);
    return any ? any : first;
}

static cl_int CL_API_CALL w_clEnqueueAcquireGLObjects(cl_command_queue q, cl_uint n, const cl_mem *o, cl_uint nw,
                                                      const cl_event *wl, cl_event *ev)
{
    return mem_list("clEnqueueAcquireGLObjects", SITE(), nx->clEnqueueAcquireGLObjects, q, n, o, nw, wl, ev);
}

static cl_int CL_API_CALL w_clEnqueueReleaseGLObjects(cl_command_queue q, cl_uint n, const cl_mem *o, cl_uint nw,
                                                      const cl_event *wl, cl_event *ev)
{
    return mem_list("clEnqueueReleaseGLObjects", SITE(), nx->clEnqueueReleaseGLObjects, q, n, o, nw, wl, ev);
}

static cl_int CL_API_CALL x_clEnqueueAcquireGLObjects(cl_command_queue q, cl_uint n, const cl_mem *o, cl_uint nw,
                                                      const cl_event *wl, cl_event *ev)
{
    return mem_list("clEnqueueAcquireGLObjects", SITE(), x_next(X_ACQ_GL, icd_of(q)), q, n, o, nw, wl, ev);
}

static cl_int CL_API_CALL x_clEnqueueReleaseGLObjects(cl_command_queue q, cl_uint n, const cl_mem *o, cl_uint nw,
                                                      const cl_event *wl, cl_event *ev)
{
    return mem_list("clEnqueueReleaseGLObjects", SITE(), x_next(X_REL_GL, icd_of(q)), q, n, o, nw, wl, ev);
}

static cl_int CL_API_CALL x_clEnqueueAcquireExternalMemObjectsKHR(cl_command_queue q, cl_uint n, const cl_mem *o,
                                                                  cl_uint nw, const cl_event *wl, cl_event *ev)
{
    return mem_list("clEnqueueAcquireExternalMemObjectsKHR", SITE(), x_next(X_ACQ_EXT, icd_of(q)), q, n, o, nw, wl,
                    ev);
}

static cl_int CL_API_CALL x_clEnqueueReleaseExternalMemObjectsKHR(cl_command_queue q, cl_uint n, const cl_mem *o,
                                                                  cl_uint nw, const cl_event *wl, cl_event *ev)
{
    return mem_list("clEnqueueReleaseExternalMemObjectsKHR", SITE(), x_next(X_REL_EXT, icd_of(q)), q, n, o, nw, wl,
                    ev);
}

#define GL_CREATORS(PFX, NEXT_BUF, NEXT_TEX, NEXT_TEX2D, NEXT_TEX3D, NEXT_RB)                                         \
    static cl_mem CL_API_CALL PFX##clCreateFromGLBuffer(cl_context c, cl_mem_flags f, cl_GLuint o, cl_int *e)         \
    {                                                                                                                 \
        return from_gl("clCreateFromGLBuffer", SITE(), c, f, 0, 0, 0, o, e, call_buffer, NEXT_BUF);                   \
    }                                                                                                                 \
    static cl_mem CL_API_CALL PFX##clCreateFromGLTexture(cl_context c, cl_mem_flags f, cl_GLenum t, cl_GLint l,       \
                                                         cl_GLuint o, cl_int *e)                                      \
    {                                                                                                                 \
        return from_gl("clCreateFromGLTexture", SITE(), c, f, 1, t, l, o, e, call_texture, NEXT_TEX);                 \
    }                                                                                                                 \
    static cl_mem CL_API_CALL PFX##clCreateFromGLTexture2D(cl_context c, cl_mem_flags f, cl_GLenum t, cl_GLint l,     \
                                                           cl_GLuint o, cl_int *e)                                    \
    {                                                                                                                 \
        return from_gl("clCreateFromGLTexture2D", SITE(), c, f, 1, t, l, o, e, call_texture, NEXT_TEX2D);             \
    }                                                                                                                 \
    static cl_mem CL_API_CALL PFX##clCreateFromGLTexture3D(cl_context c, cl_mem_flags f, cl_GLenum t, cl_GLint l,     \
                                                           cl_GLuint o, cl_int *e)                                    \
    {                                                                                                                 \
        return from_gl("clCreateFromGLTexture3D", SITE(), c, f, 1, t, l, o, e, call_texture, NEXT_TEX3D);             \
    }                                                                                                                 \
    static cl_mem CL_API_CALL PFX##clCreateFromGLRenderbuffer(cl_context c, cl_mem_flags f, cl_GLuint o, cl_int *e)   \
    {                                                                                                                 \
        return from_gl("clCreateFromGLRenderbuffer", SITE(), c, f, 0, 0, 0, o, e, call_renderbuffer, NEXT_RB);        \
    }

GL_CREATORS(w_, (const void *)nx->clCreateFromGLBuffer, (const void *)nx->clCreateFromGLTexture,
            (const void *)nx->clCreateFromGLTexture2D, (const void *)nx->clCreateFromGLTexture3D,
            (const void *)nx->clCreateFromGLRenderbuffer)
GL_CREATORS(x_, x_next(X_BUF_GL, icd_of(c)), x_next(X_TEX_GL, icd_of(c)), x_next(X_TEX2D_GL, icd_of(c)),
            x_next(X_TEX3D_GL, icd_of(c)), x_next(X_RB_GL, icd_of(c)))

static cl_event sync_event(const void *site, cl_api_clCreateEventFromGLsyncKHR next, cl_context ctx, cl_GLsync sync,
                           cl_int *err)
{
    if (!recording() || !next) {
        if (!next) {
            if (err)
                *err = CL_INVALID_OPERATION;
            return NULL;
        }
        return next(ctx, sync, err);
    }
    rec_t r;
    uint64_t id = call_head(&r, "clCreateEventFromGLsyncKHR", site);
    put_ptr(&r, "context", ctx);
    put_ptr(&r, "sync", sync);
    emit(&r, id);
    cl_int st = CL_SUCCESS;
    depth++;
    cl_event ev = next(ctx, sync, &st);
    depth--;
    if (err)
        *err = st;
    ret_rec(id, st, 1, ev, NULL);
    return ev;
}

static cl_event CL_API_CALL w_clCreateEventFromGLsyncKHR(cl_context c, cl_GLsync s, cl_int *e)
{
    return sync_event(SITE(), nx->clCreateEventFromGLsyncKHR, c, s, e);
}

static cl_event CL_API_CALL x_clCreateEventFromGLsyncKHR(cl_context c, cl_GLsync s, cl_int *e)
{
    return sync_event(SITE(), (cl_api_clCreateEventFromGLsyncKHR)x_next(X_SYNC_GL, icd_of(c)), c, s, e);
}

static cl_int gl_context_info(const void *site, cl_api_clGetGLContextInfoKHR next, const cl_context_properties *props,
                              cl_gl_context_info param, size_t size, void *value, size_t *size_ret)
{
    if (!recording() || !next)
        return next ? next(props, param, size, value, size_ret) : CL_INVALID_OPERATION;
    rec_t r;
    uint64_t id = call_head(&r, "clGetGLContextInfoKHR", site);
    put_props(&r, "props", props);
    put_u64(&r, "param", param);
    emit(&r, id);
    depth++;
    cl_int st = next(props, param, size, value, size_ret);
    depth--;
    ret_rec(id, st, 0, NULL, NULL);
    return st;
}

static cl_int CL_API_CALL w_clGetGLContextInfoKHR(const cl_context_properties *p, cl_gl_context_info n, size_t s,
                                                  void *v, size_t *sr)
{
    return gl_context_info(SITE(), nx->clGetGLContextInfoKHR, p, n, s, v, sr);
}

/* The platform named in a property list, for the ICD its entry point comes from. */
static const void *icd_of_props(const cl_context_properties *p)
{
    for (int i = 0; p && p[i] && i < 2 * LIST_MAX; i += 2)
        if (p[i] == CL_CONTEXT_PLATFORM)
            return icd_of((const void *)p[i + 1]);
    return NULL;
}

static cl_int CL_API_CALL x_clGetGLContextInfoKHR(const cl_context_properties *p, cl_gl_context_info n, size_t s,
                                                  void *v, size_t *sr)
{
    return gl_context_info(SITE(), (cl_api_clGetGLContextInfoKHR)x_next(X_CTXINFO_GL, icd_of_props(p)), p, n, s, v,
                           sr);
}

/* ---- semaphores (cl_khr_semaphore) ---------------------------------------------------------------- */

typedef cl_int(CL_API_CALL *sem_list_fn)(cl_command_queue, cl_uint, const cl_semaphore_khr *,
                                          const cl_semaphore_payload_khr *, cl_uint, const cl_event *, cl_event *);

static cl_int sem_list(const char *fn, const void *site, sem_list_fn next, cl_command_queue q, cl_uint num,
                       const cl_semaphore_khr *sems, const cl_semaphore_payload_khr *payloads, cl_uint nw,
                       const cl_event *wl, cl_event *event)
{
    if (!recording() || !next)
        return next ? next(q, num, sems, payloads, nw, wl, event) : CL_INVALID_OPERATION;
    enq_t e;
    e.id = call_head(&e.r, fn, site);
    put_ptr(&e.r, "queue", q);
    put_u64(&e.r, "num", num);
    put_handles(&e.r, "semaphores", (const void *const *)sems, sems ? num : 0);
    if (payloads) {
        size_t start = e.r.n;
        put(&e.r, ",\"payloads\":[", 13);
        if (e.r.n != start) {
            for (cl_uint i = 0; i < num; i++) {
                if (i == LIST_MAX || e.r.n > MAX_LINE - 400) {
                    e.r.cut = 1;
                    break;
                }
                char t[32];
                size_t len = (size_t)snprintf(t, sizeof t, "%s%llu", i ? "," : "", (unsigned long long)payloads[i]);
                memcpy(e.r.b + e.r.n, t, len);
                e.r.n += len;
            }
            e.r.b[e.r.n++] = ']';
        }
    } else {
        put_null(&e.r, "payloads");
    }
    enq_waits(&e, nw, wl, event);
    cl_int verdict = emit_asking(&e.r, e.id);
    if (verdict != CL_SUCCESS) {
        rec_t r;
        begin(&r, "ret");
        put_u64(&r, "id", e.id);
        put_i64(&r, "status", verdict);
        put_i64(&r, "verdict", verdict);
        emit(&r, e.id);
        return verdict;
    }
    depth++;
    cl_int st = next(q, num, sems, payloads, nw, wl, e.evp);
    depth--;
    enq_done(&e, st, event);
    return st;
}

static cl_int CL_API_CALL x_clEnqueueWaitSemaphoresKHR(cl_command_queue q, cl_uint n, const cl_semaphore_khr *s,
                                                       const cl_semaphore_payload_khr *p, cl_uint nw,
                                                       const cl_event *wl, cl_event *ev)
{
    return sem_list("clEnqueueWaitSemaphoresKHR", SITE(), x_next(X_WAIT_SEM, icd_of(q)), q, n, s, p, nw, wl, ev);
}

static cl_int CL_API_CALL x_clEnqueueSignalSemaphoresKHR(cl_command_queue q, cl_uint n, const cl_semaphore_khr *s,
                                                         const cl_semaphore_payload_khr *p, cl_uint nw,
                                                         const cl_event *wl, cl_event *ev)
{
    return sem_list("clEnqueueSignalSemaphoresKHR", SITE(), x_next(X_SIGNAL_SEM, icd_of(q)), q, n, s, p, nw, wl, ev);
}

typedef cl_semaphore_khr(CL_API_CALL *create_sem_fn)(cl_context, const cl_semaphore_properties_khr *, cl_int *);

static cl_semaphore_khr CL_API_CALL x_clCreateSemaphoreWithPropertiesKHR(cl_context ctx,
                                                                         const cl_semaphore_properties_khr *props,
                                                                         cl_int *err)
{
    create_sem_fn next = (create_sem_fn)x_next(X_CREATE_SEM, icd_of(ctx));
    if (!recording() || !next) {
        if (!next) {
            if (err)
                *err = CL_INVALID_OPERATION;
            return NULL;
        }
        return next(ctx, props, err);
    }
    rec_t r;
    uint64_t id = call_head(&r, "clCreateSemaphoreWithPropertiesKHR", SITE());
    put_ptr(&r, "context", ctx);
    put_props(&r, "props", props);
    emit(&r, id);
    cl_int st = CL_SUCCESS;
    depth++;
    cl_semaphore_khr s = next(ctx, props, &st);
    depth--;
    if (err)
        *err = st;
    ret_rec(id, st, 1, s, NULL);
    return s;
}

static void *const x_wrappers[X_COUNT] = {
    (void *)x_clEnqueueAcquireGLObjects, (void *)x_clEnqueueReleaseGLObjects, (void *)x_clCreateFromGLBuffer,
    (void *)x_clCreateFromGLTexture, (void *)x_clCreateFromGLTexture2D, (void *)x_clCreateFromGLTexture3D,
    (void *)x_clCreateFromGLRenderbuffer, (void *)x_clCreateEventFromGLsyncKHR, (void *)x_clGetGLContextInfoKHR,
    (void *)x_clEnqueueAcquireExternalMemObjectsKHR, (void *)x_clEnqueueReleaseExternalMemObjectsKHR,
    (void *)x_clEnqueueWaitSemaphoresKHR, (void *)x_clEnqueueSignalSemaphoresKHR,
    (void *)x_clCreateSemaphoreWithPropertiesKHR};

static void *wrap_extension(const void *icd, const char *name, void *fn)
{
    if (!fn || !name || out_fd < 0)
        return fn;
    for (int i = 0; i < X_COUNT; i++) {
        if (strcmp(name, x_names[i]) == 0) {
            x_store(i, icd, fn);
            return x_wrappers[i];
        }
    }
    return fn;
}

static void *CL_API_CALL w_clGetExtensionFunctionAddress(const char *name)
{
    return wrap_extension(NULL, name, nx->clGetExtensionFunctionAddress(name));
}

static void *CL_API_CALL w_clGetExtensionFunctionAddressForPlatform(cl_platform_id platform, const char *name)
{
    return wrap_extension(icd_of(platform), name, nx->clGetExtensionFunctionAddressForPlatform(platform, name));
}

/* ---- kernels -------------------------------------------------------------------------------------- */

static cl_kernel CL_API_CALL w_clCreateKernel(cl_program prog, const char *name, cl_int *err)
{
    if (!recording())
        return nx->clCreateKernel(prog, name, err);
    rec_t r;
    uint64_t id = call_head(&r, "clCreateKernel", SITE());
    put_ptr(&r, "program", prog);
    put_str(&r, "name", name);
    emit(&r, id);
    cl_int st = CL_SUCCESS;
    depth++;
    cl_kernel k = nx->clCreateKernel(prog, name, &st);
    depth--;
    if (err)
        *err = st;
    if (st == CL_SUCCESS && k) {
        pthread_mutex_lock(&tables_mu);
        kinfo(k, name ? name : "");
        pthread_mutex_unlock(&tables_mu);
    }
    ret_rec(id, st, 1, k, NULL);
    return k;
}

/* Recorded only where the argument is a mem object the layer saw created (wire.py); every argument
 * keeps the kernel's table of mem arguments current. */
static cl_int CL_API_CALL w_clSetKernelArg(cl_kernel k, cl_uint index, size_t size, const void *value)
{
    if (!recording())
        return nx->clSetKernelArg(k, index, size, value);
    cl_mem m = size == sizeof(cl_mem) && value ? *(const cl_mem *)value : NULL;
    if (m && !is_known_mem(m))
        m = NULL;
    uint64_t id = 0;
    if (m) {
        rec_t r;
        id = call_head(&r, "clSetKernelArg", SITE());
        put_ptr(&r, "kernel", k);
        put_u64(&r, "index", index);
        put_ptr(&r, "mem", m);
        emit(&r, id);
    }
    depth++;
    cl_int st = nx->clSetKernelArg(k, index, size, value);
    depth--;
    if (st == CL_SUCCESS && index < KARGS) {
        pthread_mutex_lock(&tables_mu);
        kinfo_t *ki = kinfo(k, NULL);
        if (ki)
            ki->args[index] = m;
        pthread_mutex_unlock(&tables_mu);
    }
    if (m)
        ret_rec(id, st, 0, NULL, NULL);
    return st;
}

/* A clone has its source's arguments (OpenCL 3.0 5.9.3), so the same mem arguments. */
static cl_kernel CL_API_CALL w_clCloneKernel(cl_kernel source, cl_int *err)
{
    cl_kernel k = nx->clCloneKernel(source, err);
    if (out_fd < 0 || !k)
        return k;
    pthread_mutex_lock(&tables_mu);
    slot_t *s = tfind(&kernels, source);
    kinfo_t copy;
    int known = s && s->val;
    if (known)
        copy = *(kinfo_t *)s->val;
    kinfo_t *ki = known ? kinfo(k, copy.name) : NULL;
    if (ki)
        memcpy(ki->args, copy.args, sizeof ki->args);
    pthread_mutex_unlock(&tables_mu);
    return k;
}

/* A released kernel's handle may come back for another kernel: its record goes with its last reference. */
static cl_int CL_API_CALL w_clReleaseKernel(cl_kernel k)
{
    if (out_fd < 0)
        return nx->clReleaseKernel(k);
    cl_uint refs = 0;
    if (nx->clGetKernelInfo(k, CL_KERNEL_REFERENCE_COUNT, sizeof refs, &refs, NULL) != CL_SUCCESS)
        refs = 0;
    cl_int st = nx->clReleaseKernel(k);
    if (st == CL_SUCCESS && refs == 1) {
        pthread_mutex_lock(&tables_mu);
        slot_t *s = tfind(&kernels, k);
        if (s && s->val) {
            free(s->val);
            s->val = NULL;
        }
        pthread_mutex_unlock(&tables_mu);
    }
    return st;
}

static void kernel_fields(rec_t *r, cl_kernel k)
{
    kinfo_t copy;
    pthread_mutex_lock(&tables_mu);
    kinfo_t *ki = kinfo(k, NULL);
    if (ki)
        copy = *ki;
    else
        memset(&copy, 0, sizeof copy);
    pthread_mutex_unlock(&tables_mu);
    put_ptr(r, "kernel", k);
    put_str(r, "name", copy.name);
    const void *list[KARGS];
    cl_uint n = 0;
    for (int i = 0; i < KARGS; i++)
        if (copy.args[i])
            list[n++] = copy.args[i];
    put_handles(r, "mems", list, n);
}

static cl_int CL_API_CALL w_clEnqueueNDRangeKernel(cl_command_queue q, cl_kernel k, cl_uint dims, const size_t *off,
                                                   const size_t *gws, const size_t *lws, cl_uint nw,
                                                   const cl_event *wl, cl_event *event)
{
    if (!recording())
        return nx->clEnqueueNDRangeKernel(q, k, dims, off, gws, lws, nw, wl, event);
    enq_t e;
    e.id = call_head(&e.r, "clEnqueueNDRangeKernel", SITE());
    put_ptr(&e.r, "queue", q);
    kernel_fields(&e.r, k);
    put_u64(&e.r, "dims", dims);
    put_sizes(&e.r, "gws", gws, dims);
    put_sizes(&e.r, "lws", lws, dims);
    enq_waits(&e, nw, wl, event);
    emit(&e.r, e.id);
    depth++;
    cl_int st = nx->clEnqueueNDRangeKernel(q, k, dims, off, gws, lws, nw, wl, e.evp);
    depth--;
    enq_done(&e, st, event);
    return st;
}

static cl_int CL_API_CALL w_clEnqueueTask(cl_command_queue q, cl_kernel k, cl_uint nw, const cl_event *wl,
                                          cl_event *event)
{
    if (!recording())
        return nx->clEnqueueTask(q, k, nw, wl, event);
    enq_t e;
    e.id = call_head(&e.r, "clEnqueueTask", SITE());
    put_ptr(&e.r, "queue", q);
    kernel_fields(&e.r, k);
    enq_waits(&e, nw, wl, event);
    emit(&e.r, e.id);
    depth++;
    cl_int st = nx->clEnqueueTask(q, k, nw, wl, e.evp);
    depth--;
    enq_done(&e, st, event);
    return st;
}

/* ---- transfers: read, write, copy, fill, map, unmap ----------------------------------------------- */

/* The head of a transfer's call record: queue, mems (source first), blocking (-1: the call has none),
 * size (0: the call does not say). */
static void transfer_head(enq_t *e, const char *fn, const void *site, cl_command_queue q, cl_mem a, cl_mem b,
                          int blocking, size_t size)
{
    e->id = call_head(&e->r, fn, site);
    put_ptr(&e->r, "queue", q);
    const void *list[2] = {a, b};
    put_handles(&e->r, "mems", list, b ? 2 : 1);
    if (blocking >= 0)
        put_bool(&e->r, "blocking", blocking);
    if (size)
        put_u64(&e->r, "size", size);
}

#define TRANSFER(FN, A, B, BLOCKING, SIZE, CALL_ON)                            \
    enq_t e;                                                                   \
    transfer_head(&e, FN, SITE(), q, A, B, BLOCKING, SIZE);                    \
    enq_waits(&e, nw, wl, event);                                              \
    emit(&e.r, e.id);                                                          \
    depth++;                                                                   \
    cl_int st = CALL_ON;                                                       \
    depth--;                                                                   \
    enq_done(&e, st, event);                                                   \
    if ((BLOCKING) == 1)                                                       \
        stamps_due();                                                          \
    return st

static size_t region_cells(const size_t *region) { return region ? region[0] * region[1] * region[2] : 0; }

static cl_int CL_API_CALL w_clEnqueueReadBuffer(cl_command_queue q, cl_mem buf, cl_bool blocking, size_t off,
                                                size_t size, void *ptr, cl_uint nw, const cl_event *wl, cl_event *event)
{
    if (!recording())
        return nx->clEnqueueReadBuffer(q, buf, blocking, off, size, ptr, nw, wl, event);
    TRANSFER("clEnqueueReadBuffer", buf, NULL, blocking != 0, size,
             nx->clEnqueueReadBuffer(q, buf, blocking, off, size, ptr, nw, wl, e.evp));
}

static cl_int CL_API_CALL w_clEnqueueWriteBuffer(cl_command_queue q, cl_mem buf, cl_bool blocking, size_t off,
                                                 size_t size, const void *ptr, cl_uint nw, const cl_event *wl,
                                                 cl_event *event)
{
    if (!recording())
        return nx->clEnqueueWriteBuffer(q, buf, blocking, off, size, ptr, nw, wl, event);
    TRANSFER("clEnqueueWriteBuffer", buf, NULL, blocking != 0, size,
             nx->clEnqueueWriteBuffer(q, buf, blocking, off, size, ptr, nw, wl, e.evp));
}

static cl_int CL_API_CALL w_clEnqueueReadBufferRect(cl_command_queue q, cl_mem buf, cl_bool blocking,
                                                    const size_t *bo, const size_t *ho, const size_t *region,
                                                    size_t brp, size_t bsp, size_t hrp, size_t hsp, void *ptr,
                                                    cl_uint nw, const cl_event *wl, cl_event *event)
{
    if (!recording())
        return nx->clEnqueueReadBufferRect(q, buf, blocking, bo, ho, region, brp, bsp, hrp, hsp, ptr, nw, wl, event);
    TRANSFER("clEnqueueReadBufferRect", buf, NULL, blocking != 0, region_cells(region),
             nx->clEnqueueReadBufferRect(q, buf, blocking, bo, ho, region, brp, bsp, hrp, hsp, ptr, nw, wl, e.evp));
}

static cl_int CL_API_CALL w_clEnqueueWriteBufferRect(cl_command_queue q, cl_mem buf, cl_bool blocking,
                                                     const size_t *bo, const size_t *ho, const size_t *region,
                                                     size_t brp, size_t bsp, size_t hrp, size_t hsp, const void *ptr,
                                                     cl_uint nw, const cl_event *wl, cl_event *event)
{
    if (!recording())
        return nx->clEnqueueWriteBufferRect(q, buf, blocking, bo, ho, region, brp, bsp, hrp, hsp, ptr, nw, wl, event);
    TRANSFER("clEnqueueWriteBufferRect", buf, NULL, blocking != 0, region_cells(region),
             nx->clEnqueueWriteBufferRect(q, buf, blocking, bo, ho, region, brp, bsp, hrp, hsp, ptr, nw, wl, e.evp));
}

static cl_int CL_API_CALL w_clEnqueueCopyBuffer(cl_command_queue q, cl_mem src, cl_mem dst, size_t so, size_t dof,
                                                size_t size, cl_uint nw, const cl_event *wl, cl_event *event)
{
    if (!recording())
        return nx->clEnqueueCopyBuffer(q, src, dst, so, dof, size, nw, wl, event);
    TRANSFER("clEnqueueCopyBuffer", src, dst, -1, size,
             nx->clEnqueueCopyBuffer(q, src, dst, so, dof, size, nw, wl, e.evp));
}

static cl_int CL_API_CALL w_clEnqueueFillBuffer(cl_command_queue q, cl_mem buf, const void *pattern, size_t psize,
                                                size_t off, size_t size, cl_uint nw, const cl_event *wl,
                                                cl_event *event)
{
    if (!recording())
        return nx->clEnqueueFillBuffer(q, buf, pattern, psize, off, size, nw, wl, event);
    TRANSFER("clEnqueueFillBuffer", buf, NULL, -1, size,
             nx->clEnqueueFillBuffer(q, buf, pattern, psize, off, size, nw, wl, e.evp));
}

static cl_int CL_API_CALL w_clEnqueueReadImage(cl_command_queue q, cl_mem img, cl_bool blocking, const size_t *origin,
                                               const size_t *region, size_t rp, size_t sp, void *ptr, cl_uint nw,
                                               const cl_event *wl, cl_event *event)
{
    if (!recording())
        return nx->clEnqueueReadImage(q, img, blocking, origin, region, rp, sp, ptr, nw, wl, event);
    TRANSFER("clEnqueueReadImage", img, NULL, blocking != 0, 0,
             nx->clEnqueueReadImage(q, img, blocking, origin, region, rp, sp, ptr, nw, wl, e.evp));
}

static cl_int CL_API_CALL w_clEnqueueWriteImage(cl_command_queue q, cl_mem img, cl_bool blocking, const size_t *origin,
                                                const size_t *region, size_t rp, size_t sp, const void *ptr,
                                                cl_uint nw, const cl_event *wl, cl_event *event)
{
    if (!recording())
        return nx->clEnqueueWriteImage(q, img, blocking, origin, region, rp, sp, ptr, nw, wl, event);
    TRANSFER("clEnqueueWriteImage", img, NULL, blocking != 0, 0,
             nx->clEnqueueWriteImage(q, img, blocking, origin, region, rp, sp, ptr, nw, wl, e.evp));
}

static cl_int CL_API_CALL w_clEnqueueCopyImage(cl_command_queue q, cl_mem src, cl_mem dst, const size_t *so,
                                               const size_t *dof, const size_t *region, cl_uint nw, const cl_event *wl,
                                               cl_event *event)
{
    if (!recording())
        return nx->clEnqueueCopyImage(q, src, dst, so, dof, region, nw, wl, event);
    TRANSFER("clEnqueueCopyImage", src, dst, -1, 0,
             nx->clEnqueueCopyImage(q, src, dst, so, dof, region, nw, wl, e.evp));
}

static cl_int CL_API_CALL w_clEnqueueFillImage(cl_command_queue q, cl_mem img, const void *color, const size_t *origin,
                                               const size_t *region, cl_uint nw, const cl_event *wl, cl_event *event)
{
    if (!recording())
        return nx->clEnqueueFillImage(q, img, color, origin, region, nw, wl, event);
    TRANSFER("clEnqueueFillImage", img, NULL, -1, 0,
             nx->clEnqueueFillImage(q, img, color, origin, region, nw, wl, e.evp));
}

static cl_int CL_API_CALL w_clEnqueueCopyImageToBuffer(cl_command_queue q, cl_mem src, cl_mem dst, const size_t *so,
                                                       const size_t *region, size_t dof, cl_uint nw,
                                                       const cl_event *wl, cl_event *event)
{
    if (!recording())
        return nx->clEnqueueCopyImageToBuffer(q, src, dst, so, region, dof, nw, wl, event);
    TRANSFER("clEnqueueCopyImageToBuffer", src, dst, -1, 0,
             nx->clEnqueueCopyImageToBuffer(q, src, dst, so, region, dof, nw, wl, e.evp));
}

static cl_int CL_API_CALL w_clEnqueueCopyBufferToImage(cl_command_queue q, cl_mem src, cl_mem dst, size_t so,
                                                       const size_t *dof, const size_t *region, cl_uint nw,
                                                       const cl_event *wl, cl_event *event)
{
    if (!recording())
        return nx->clEnqueueCopyBufferToImage(q, src, dst, so, dof, region, nw, wl, event);
    TRANSFER("clEnqueueCopyBufferToImage", src, dst, -1, 0,
             nx->clEnqueueCopyBufferToImage(q, src, dst, so, dof, region, nw, wl, e.evp));
}

/* A map returns a pointer and its status through errcode_ret. */
#define MAP(FN, MEM, BLOCKING, SIZE, CALL_ON)                                  \
    enq_t e;                                                                   \
    transfer_head(&e, FN, SITE(), q, MEM, NULL, BLOCKING, SIZE);               \
    enq_waits(&e, nw, wl, event);                                              \
    emit(&e.r, e.id);                                                          \
    cl_int st = CL_SUCCESS;                                                    \
    depth++;                                                                   \
    void *p = CALL_ON;                                                         \
    depth--;                                                                   \
    if (err)                                                                   \
        *err = st;                                                             \
    enq_done(&e, st, event);                                                   \
    if ((BLOCKING) == 1)                                                       \
        stamps_due();                                                          \
    return p

static void *CL_API_CALL w_clEnqueueMapBuffer(cl_command_queue q, cl_mem buf, cl_bool blocking, cl_map_flags flags,
                                              size_t off, size_t size, cl_uint nw, const cl_event *wl,
                                              cl_event *event, cl_int *err)
{
    if (!recording())
        return nx->clEnqueueMapBuffer(q, buf, blocking, flags, off, size, nw, wl, event, err);
    MAP("clEnqueueMapBuffer", buf, blocking != 0, size,
        nx->clEnqueueMapBuffer(q, buf, blocking, flags, off, size, nw, wl, e.evp, &st));
}

static void *CL_API_CALL w_clEnqueueMapImage(cl_command_queue q, cl_mem img, cl_bool blocking, cl_map_flags flags,
                                             const size_t *origin, const size_t *region, size_t *rp, size_t *sp,
                                             cl_uint nw, const cl_event *wl, cl_event *event, cl_int *err)
{
    if (!recording())
        return nx->clEnqueueMapImage(q, img, blocking, flags, origin, region, rp, sp, nw, wl, event, err);
    MAP("clEnqueueMapImage", img, blocking != 0, 0,
        nx->clEnqueueMapImage(q, img, blocking, flags, origin, region, rp, sp, nw, wl, e.evp, &st));
}

static cl_int CL_API_CALL w_clEnqueueUnmapMemObject(cl_command_queue q, cl_mem mem, void *ptr, cl_uint nw,
                                                    const cl_event *wl, cl_event *event)
{
    if (!recording())
        return nx->clEnqueueUnmapMemObject(q, mem, ptr, nw, wl, event);
    TRANSFER("clEnqueueUnmapMemObject", mem, NULL, -1, 0, nx->clEnqueueUnmapMemObject(q, mem, ptr, nw, wl, e.evp));
}

/* ---- waits ---------------------------------------------------------------------------------------- */

static cl_int queue_call(const char *fn, const void *site, cl_int(CL_API_CALL *next)(cl_command_queue),
                         cl_command_queue q)
{
    if (!recording())
        return next(q);
    rec_t r;
    uint64_t id = call_head(&r, fn, site);
    put_ptr(&r, "queue", q);
    emit(&r, id);
    depth++;
    cl_int st = next(q);
    depth--;
    ret_rec(id, st, 0, NULL, NULL);
    if (next == nx->clFinish)
        stamps_due();
    return st;
}

static cl_int CL_API_CALL w_clFinish(cl_command_queue q) { return queue_call("clFinish", SITE(), nx->clFinish, q); }

static cl_int CL_API_CALL w_clFlush(cl_command_queue q) { return queue_call("clFlush", SITE(), nx->clFlush, q); }

static cl_int CL_API_CALL w_clWaitForEvents(cl_uint n, const cl_event *list)
{
    if (!recording())
        return nx->clWaitForEvents(n, list);
    rec_t r;
    uint64_t id = call_head(&r, "clWaitForEvents", SITE());
    put_handles(&r, "events", (const void *const *)list, list ? n : 0);
    emit(&r, id);
    depth++;
    cl_int st = nx->clWaitForEvents(n, list);
    depth--;
    ret_rec(id, st, 0, NULL, NULL);
    stamps_due();
    return st;
}

/* ---- the layer's entry points (cl_loader_layers) -------------------------------------------------- */

EXPORT cl_int CL_API_CALL clGetLayerInfo(cl_layer_info name, size_t size, void *value, size_t *size_ret)
{
    static const char layer_name[] = "glshare-cl-layer";
    const void *src;
    size_t len;
    cl_layer_api_version version = CL_LAYER_API_VERSION_100;
    switch (name) {
    case CL_LAYER_API_VERSION:
        src = &version;
        len = sizeof version;
        break;
    case CL_LAYER_NAME:
        src = layer_name;
        len = sizeof layer_name;
        break;
    default:
        return CL_INVALID_VALUE;
    }
    if (value) {
        if (size < len)
            return CL_INVALID_VALUE;
        memcpy(value, src, len);
    }
    if (size_ret)
        *size_ret = len;
    return CL_SUCCESS;
}

/* GLSHARE_ATTACH_FD / GLSHARE_ATTACH_VERDICT_FD identify glshare's channel (channel.h), else the
 * layer records nothing (one line only where the variable is malformed). */
static int open_fd_from_env(const char *var, int *is_socket)
{
    const char *s = getenv(var);
    int why;
    int fd = glshare_channel(s, is_socket, &why);
    if (fd < 0 && why == CHANNEL_BAD_TEXT)
        fprintf(stderr, "glshare cl layer: %s=%s is not FD:DEV:INO; recording nothing\n", var, s);
    return fd;
}

static void install(void)
{
#define W(name) disp.name = w_##name
    W(clCreateContext);
    W(clCreateContextFromType);
    W(clCreateCommandQueue);
    W(clCreateCommandQueueWithProperties);
    W(clCreateBuffer);
    W(clCreateBufferWithProperties);
    W(clCreateImage);
    W(clCreateImageWithProperties);
    W(clCreateImage2D);
    W(clCreateImage3D);
    W(clCreateSubBuffer);
    W(clRetainMemObject);
    W(clReleaseMemObject);
    W(clCreateFromGLBuffer);
    W(clCreateFromGLTexture);
    W(clCreateFromGLTexture2D);
    W(clCreateFromGLTexture3D);
    W(clCreateFromGLRenderbuffer);
    W(clEnqueueAcquireGLObjects);
    W(clEnqueueReleaseGLObjects);
    W(clCreateEventFromGLsyncKHR);
    W(clGetGLContextInfoKHR);
    W(clGetExtensionFunctionAddress);
    W(clGetExtensionFunctionAddressForPlatform);
    W(clCreateKernel);
    W(clSetKernelArg);
    W(clReleaseKernel);
    W(clCloneKernel);
    W(clEnqueueNDRangeKernel);
    W(clEnqueueTask);
    W(clEnqueueReadBuffer);
    W(clEnqueueWriteBuffer);
    W(clEnqueueReadBufferRect);
    W(clEnqueueWriteBufferRect);
    W(clEnqueueCopyBuffer);
    W(clEnqueueFillBuffer);
    W(clEnqueueReadImage);
    W(clEnqueueWriteImage);
    W(clEnqueueCopyImage);
    W(clEnqueueFillImage);
    W(clEnqueueCopyImageToBuffer);
    W(clEnqueueCopyBufferToImage);
    W(clEnqueueMapBuffer);
    W(clEnqueueMapImage);
    W(clEnqueueUnmapMemObject);
    W(clFinish);
    W(clFlush);
    W(clWaitForEvents);
#undef W
}

EXPORT cl_int CL_API_CALL clInitLayer(cl_uint num_entries, const cl_icd_dispatch *target, cl_uint *num_entries_ret,
                                      const cl_icd_dispatch **layer_dispatch_ret)
{
    const cl_uint ours = sizeof(cl_icd_dispatch) / sizeof(void *);
    if (!target || !num_entries_ret || !layer_dispatch_ret || num_entries < ours)
        return CL_INVALID_VALUE;
    if (nx && nx != target) {
        /* A second ICD loader in the process (a Python wheel's own beside the system's) loads the same
         * library: the wrappers call the first loader's table, so the second one's calls pass through
         * unrecorded, on a copy of its own table. */
        static cl_icd_dispatch others[4];
        static int n_others;
        if (n_others == 4)
            return CL_OUT_OF_RESOURCES;
        memcpy(&others[n_others], target, sizeof others[0]);
        if (out_fd >= 0)
            note("a second OpenCL ICD loader in this process: its calls are not recorded");
        *num_entries_ret = ours;
        *layer_dispatch_ret = &others[n_others++];
        return CL_SUCCESS;
    }
    nx = target;
    memcpy(&disp, target, sizeof disp);
    out_fd = open_fd_from_env("GLSHARE_ATTACH_FD", &out_socket);
    if (out_fd >= 0) {
        const char *s = getenv("GLSHARE_ATTACH_STRICT");
        strict_mode = s && strcmp(s, "1") == 0;
        if (strict_mode)
        {
            int is_socket;
            verdict_fd = open_fd_from_env("GLSHARE_ATTACH_VERDICT_FD", &is_socket);
        }
        cur_pid = getpid();
        pthread_atfork(NULL, NULL, in_child);
        atexit(at_exit);
        ensure_hello();
        install();
    }
    *num_entries_ret = ours;
    *layer_dispatch_ret = &disp;
    return CL_SUCCESS;
}
