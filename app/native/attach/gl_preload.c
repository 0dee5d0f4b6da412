/* glshare attach's GL preload library: records a program's GL hand-over calls (app/attach/wire.py).
 *
 * Loaded with LD_PRELOAD. It sees the program's GL calls on all three roads a program takes to GL:
 *   1. calls to exported symbols: this library's glFinish etc. come first in the global scope;
 *   2. glXGetProcAddress(ARB) / eglGetProcAddress: for a recorded or tracked name they return this
 *      library's wrapper, which calls the pointer the real GetProcAddress gave;
 *   3. dlsym(handle, name) on a handle of libGL, libEGL, libOpenGL, libGLX or libGLESv2 (PyOpenGL,
 *      GLFW, ctypes: dlopen + dlsym): this library's dlsym returns the wrapper likewise.
 * Without GLSHARE_ATTACH_FD every wrapper only passes the call on, and dlsym / GetProcAddress
 * return the real pointers (a lookup in the global scope finds this library's export first, which
 * passes the call on).
 *
 * Invariants:
 * - A wrapper passes its arguments on unchanged and returns the real function's value: the
 *   program computes and draws exactly what it would without this library.
 * - Each record is one write(2) of one line of at most RECORD_MAX bytes to the pipe (or one
 *   message on a socket): POSIX makes a pipe write of at most PIPE_BUF bytes atomic, so lines of
 *   several threads never interleave.
 * - A "call" record is written before the call goes on (a call that kills the process is seen).
 * - A GL call made while this thread is inside a wrapper (the driver calling an exported entry
 *   point) is passed on unrecorded: the program did not make it.
 * - dlsym(RTLD_NEXT, ...) and any lookup of a name not wrapped here is a tail call of the real
 *   dlsym, so the real one sees the program's return address (glibc resolves RTLD_NEXT and
 *   RTLD_DEFAULT relative to the caller's object).
 * - GL object names, bindings and vertex array state are per GL context (OpenGL 4.6 core, 5.1:
 *   buffers and textures may be shared, bindings and vertex array objects are not): they are kept
 *   per context, found by the context current on the thread.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stddef.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "channel.h"
#include "pysite.h"

#define RECORD_MAX 4096 /* wire.MAX_LINE: PIPE_BUF on Linux */
#define LIB_NAME "glshare-gl-preload"
#define LIB_VERSION 1

/* The GL, GLX and EGL types used here (no GL headers: the Khronos gl.h, glx.h and egl.h types). */
typedef unsigned int GLenum;
typedef unsigned int GLuint;
typedef int GLint;
typedef int GLsizei;
typedef unsigned int GLbitfield;
typedef unsigned char GLboolean;
typedef unsigned char GLubyte;
typedef uint64_t GLuint64;
typedef intptr_t GLintptr;
typedef intptr_t GLsizeiptr;
typedef void *GLsync;
typedef unsigned long GLXDrawable; /* an X resource id */
typedef void *GLXContext;
typedef unsigned int EGLBoolean;
typedef void *EGLDisplay;
typedef void *EGLSurface;
typedef void *EGLContext;
typedef void (*any_fn)(void);

#define GL_TEXTURE0 0x84C0

/* ---- the entry points: one index each ------------------------------------------------------------ */
#define ENTRY_POINTS(X)                                                                               \
    X(glXSwapBuffers) X(eglSwapBuffers) X(glXMakeCurrent) X(glXMakeContextCurrent) X(eglMakeCurrent)  \
    X(glFinish) X(glFlush) X(glFenceSync) X(glClientWaitSync) X(glWaitSync) X(glDeleteSync)           \
    X(glDeleteBuffers) X(glDeleteTextures) X(glDeleteRenderbuffers) X(glBufferData)                   \
    X(glBufferSubData) X(glMapBuffer) X(glMapBufferRange) X(glUnmapBuffer) X(glTexImage2D)            \
    X(glTexSubImage2D) X(glDrawArrays) X(glDrawElements) X(glDrawArraysInstanced)                     \
    X(glDrawElementsInstanced) X(glBindBuffer) X(glBindTexture) X(glActiveTexture)                    \
    X(glBindVertexArray) X(glDeleteVertexArrays) X(glVertexAttribPointer) X(glVertexAttribIPointer)   \
    X(glEnableVertexAttribArray) X(glDisableVertexAttribArray) X(glXGetProcAddress)                   \
    X(glXGetProcAddressARB) X(eglGetProcAddress) X(glXDestroyContext) X(eglDestroyContext)            \
    X(glDrawRangeElements) X(glDrawElementsBaseVertex) X(glDrawRangeElementsBaseVertex)               \
    X(glDrawElementsInstancedBaseVertex) X(glDrawArraysInstancedBaseInstance)                         \
    X(glDrawElementsInstancedBaseInstance) X(glDrawElementsInstancedBaseVertexBaseInstance)

#define AS_ENUM(name) F_##name,
enum { ENTRY_POINTS(AS_ENUM) F_COUNT };
#define AS_NAME(name) #name,
static const char *const NAMES[F_COUNT] = {ENTRY_POINTS(AS_NAME)};

static void *_Atomic REAL[F_COUNT]; /* the real pointer of each entry point, once known */
static void *WRAPPER[F_COUNT];      /* this library's wrapper of each (filled by init) */

typedef void *(*dlsym_fn)(void *, const char *);
static dlsym_fn _Atomic real_dlsym_ptr;
typedef void *(*getctx_fn)(void);
static getctx_fn _Atomic real_egl_getctx, real_glx_getctx;

/* ---- process state ----------------------------------------------------------------------------- */
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int _Atomic g_on;        /* recording: GLSHARE_ATTACH_FD named a usable descriptor */
static int g_fd = -1;
static int g_is_socket;
static long _Atomic g_pid;
static uint64_t _Atomic g_next_id = 1;
static int _Atomic g_dropped;
static int _Atomic g_hello_done; /* this process's "hello" is written (before any other record) */
static pthread_mutex_t g_hello_lock = PTHREAD_MUTEX_INITIALIZER;

#define TLS __thread __attribute__((tls_model("initial-exec")))
static TLS int t_depth;  /* >0 while this thread is inside a wrapper */
static TLS long t_tid;
static TLS int t_api;    /* the API of this thread's last make-current: 1 GLX, 2 EGL, 0 none seen */

static dlsym_fn real_dlsym(void) {
    dlsym_fn f = atomic_load_explicit(&real_dlsym_ptr, memory_order_acquire);
    if (f)
        return f;
    /* dlvsym is not interposed here: no recursion. glibc 2.34 moved dlsym into libc. */
    f = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (!f)
        f = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    atomic_store_explicit(&real_dlsym_ptr, f, memory_order_release);
    return f;
}

static int name_index(const char *name) {
    if (!name || (name[0] != 'g' && name[0] != 'e'))
        return -1;
    for (int i = 0; i < F_COUNT; i++)
        if (strcmp(name, NAMES[i]) == 0)
            return i;
    return -1;
}

/* Keeps the library holding ``p`` loaded for the rest of the process: a wrapper handed out may be
 * called after the program dlclose()d the handle it looked the function up in (a loader such as
 * glad closes libOpenGL once it has its pointers), and must not call into an unmapped library. */
static void pin_library(void *p) {
    static void *_Atomic pinned[16];
    Dl_info info;
    struct link_map *map = NULL;
    if (!dladdr1(p, &info, (void **)&map, RTLD_DL_LINKMAP) || !map || !map->l_name || !map->l_name[0])
        return; /* the main program: never unloaded */
    for (int i = 0; i < 16; i++) {
        void *seen = atomic_load(&pinned[i]);
        if (seen == map)
            return;
        if (!seen) {
            void *expected = NULL;
            if (!atomic_compare_exchange_strong(&pinned[i], &expected, map)) {
                if (expected == map)
                    return;
                continue;
            }
            dlopen(map->l_name, RTLD_LAZY | RTLD_NOLOAD); /* one more reference, never released */
            return;
        }
    }
}

/* Remember ``p`` as the real ``idx`` (the first one found wins; never one of our own wrappers).
 * ``pin``: ``p`` came from a handle or a GetProcAddress, so its library is loaded and initialized
 * (pinning one found at start-up would run its constructor out of order: not done, and not needed,
 * the program's start-up libraries are never unloaded). */
static void learn_real(int idx, void *p, int pin) {
    if (!p || p == WRAPPER[idx])
        return;
    void *expected = NULL;
    if (atomic_compare_exchange_strong(&REAL[idx], &expected, p) && pin)
        pin_library(p);
}

/* The context getters, looked up in ``handle`` (a lookup that fails leaves dlerror() as the program's
 * own successful dlsym left it: cleared). */
static void learn_getters(void *(*lookup)(void *, const char *), void *handle, int pin) {
    static const char *const names[2] = {"eglGetCurrentContext", "glXGetCurrentContext"};
    getctx_fn _Atomic *slots[2] = {&real_egl_getctx, &real_glx_getctx};
    for (int i = 0; i < 2; i++) {
        if (atomic_load(slots[i]))
            continue;
        void *p = lookup(handle, names[i]);
        if (!p) {
            dlerror();
            continue;
        }
        getctx_fn expected = NULL;
        if (atomic_compare_exchange_strong(slots[i], &expected, (getctx_fn)p) && pin)
            pin_library(p);
    }
}

static int is_gl_name(const char *path);

#define MAX_GL_LIBS 8
typedef struct {
    int n;
    char path[MAX_GL_LIBS][512];
} gl_libs_t;

static int collect_gl_library(struct dl_phdr_info *info, size_t size, void *data) {
    gl_libs_t *libs = data;
    (void)size;
    if (libs->n < MAX_GL_LIBS && info->dlpi_name && info->dlpi_name[0] && is_gl_name(info->dlpi_name) &&
        strlen(info->dlpi_name) < sizeof libs->path[0])
        strcpy(libs->path[libs->n++], info->dlpi_name);
    return 0;
}

/* ``idx`` in a loaded GL library outside the global scope (dlopen()ed RTLD_LOCAL, or the local
 * dependency of such a library: a Python extension linking libOpenGL), where a program's call
 * bound to this library's export must go on. */
static void *find_in_local_gl(dlsym_fn ds, int idx) {
    gl_libs_t libs = {0};
    dl_iterate_phdr(collect_gl_library, &libs); /* paths first: no dlopen under its lock */
    for (int i = 0; i < libs.n; i++) {
        void *h = dlopen(libs.path[i], RTLD_LAZY | RTLD_NOLOAD);
        if (!h)
            continue;
        void *p = ds(h, NAMES[idx]);
        if (p && p != WRAPPER[idx])
            learn_real(idx, p, 1);
        dlclose(h);
        if (p && p != WRAPPER[idx])
            break;
    }
    dlerror(); /* the failed lookups leave no error for the program to read */
    return atomic_load_explicit(&REAL[idx], memory_order_acquire);
}

static void *real_of(int idx) {
    void *p = atomic_load_explicit(&REAL[idx], memory_order_acquire);
    if (p)
        return p;
    dlsym_fn ds = real_dlsym();
    if (!ds)
        return NULL;
    learn_real(idx, ds(RTLD_NEXT, NAMES[idx]), 0);
    p = atomic_load_explicit(&REAL[idx], memory_order_acquire);
    return p ? p : find_in_local_gl(ds, idx);
}

/* ---- writing records ----------------------------------------------------------------------------- */
/* The end of a failed write: glshare gone (EPIPE, ECONNRESET, a closed descriptor) stops the
 * recording, the program goes on; a full non-blocking descriptor drops the record (counted). */
static void write_failed(int err) {
    if (err == EAGAIN || err == EWOULDBLOCK)
        atomic_fetch_add(&g_dropped, 1);
    else if (err == EPIPE || err == ECONNRESET || err == EBADF || err == ENOTCONN)
        atomic_store(&g_on, 0);
}

static void emit(const char *line, size_t n) {
    int saved = errno;
    ssize_t r;
    if (g_is_socket) {
        do {
            r = send(g_fd, line, n, MSG_NOSIGNAL);
        } while (r < 0 && errno == EINTR);
        if (r < 0)
            write_failed(errno);
    } else {
        /* a pipe whose reader is gone raises SIGPIPE: blocked around the write, taken if raised */
        sigset_t pipe_set, old;
        sigemptyset(&pipe_set);
        sigaddset(&pipe_set, SIGPIPE);
        pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
        do {
            r = write(g_fd, line, n);
        } while (r < 0 && errno == EINTR);
        if (r < 0) {
            int err = errno;
            if (err == EPIPE && !sigismember(&old, SIGPIPE)) {
                struct timespec zero = {0, 0};
                sigtimedwait(&pipe_set, NULL, &zero);
            }
            write_failed(err);
        }
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    errno = saved;
}

typedef struct {
    char b[RECORD_MAX];
    size_t n;
} line_t;

#define ROOM_END 2 /* "}\n" */

static int put(line_t *l, const char *s, size_t len) {
    if (l->n + len > RECORD_MAX - ROOM_END)
        return 0;
    memcpy(l->b + l->n, s, len);
    l->n += len;
    return 1;
}
#define PUTS(l, lit) put((l), (lit), sizeof(lit) - 1)

static int put_u64(line_t *l, uint64_t v) {
    char tmp[24];
    int i = sizeof tmp;
    do {
        tmp[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return put(l, tmp + i, sizeof tmp - i);
}

static int put_i64(line_t *l, int64_t v) {
    if (v < 0) {
        return PUTS(l, "-") && put_u64(l, (uint64_t)0 - (uint64_t)v);
    }
    return put_u64(l, (uint64_t)v);
}

static int put_hex(line_t *l, uintptr_t v) {
    static const char digits[] = "0123456789abcdef";
    char tmp[24];
    int i = sizeof tmp;
    tmp[--i] = '"';
    do {
        tmp[--i] = digits[v & 15];
        v >>= 4;
    } while (v);
    tmp[--i] = 'x';
    tmp[--i] = '0';
    tmp[--i] = '"';
    return put(l, tmp + i, sizeof tmp - i);
}

static int put_str(line_t *l, const char *s) { /* s: plain ASCII without quotes or backslashes */
    return PUTS(l, "\"") && put(l, s, strlen(s)) && PUTS(l, "\"");
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void write_hello(void);

/* Opens a record of ``kind``; the process's "hello" is written first if it was not. */
static void head(line_t *l, const char *kind) {
    if (kind[0] != 'h' && !atomic_load_explicit(&g_hello_done, memory_order_acquire)) {
        pthread_mutex_lock(&g_hello_lock);
        if (!atomic_load_explicit(&g_hello_done, memory_order_relaxed)) {
            write_hello();
            atomic_store_explicit(&g_hello_done, 1, memory_order_release);
        }
        pthread_mutex_unlock(&g_hello_lock);
    }
    l->n = 0;
    PUTS(l, "{\"k\":\"");
    put(l, kind, strlen(kind));
    PUTS(l, "\",\"src\":\"gl\",\"pid\":");
    put_i64(l, atomic_load_explicit(&g_pid, memory_order_relaxed));
    PUTS(l, ",\"t\":");
    put_u64(l, now_ns());
}

static void write_note(const char *text);

static void finish(line_t *l) {
    l->b[l->n++] = '}';
    l->b[l->n++] = '\n';
    emit(l->b, l->n);
    if (atomic_load_explicit(&g_dropped, memory_order_relaxed)) {
        int n = atomic_exchange(&g_dropped, 0);
        line_t note;
        head(&note, "note");
        PUTS(&note, ",\"text\":\"");
        put_u64(&note, (uint64_t)n);
        PUTS(&note, " records dropped: the descriptor was full\"");
        note.b[note.n++] = '}';
        note.b[note.n++] = '\n';
        emit(note.b, note.n);
    }
}

static void write_hello(void) {
    line_t l;
    head(&l, "hello");
    PUTS(&l, ",\"lib\":\"" LIB_NAME "\",\"version\":");
    put_u64(&l, LIB_VERSION);
    l.b[l.n++] = '}';
    l.b[l.n++] = '\n';
    emit(l.b, l.n);
}

static void write_note(const char *text) {
    line_t l;
    head(&l, "note");
    PUTS(&l, ",\"text\":");
    put_str(&l, text);
    finish(&l);
}

/* ---- the current context and its binding state --------------------------------------------------- */
static void *current_context(void) {
    getctx_fn egl = atomic_load_explicit(&real_egl_getctx, memory_order_relaxed);
    getctx_fn glx = atomic_load_explicit(&real_glx_getctx, memory_order_relaxed);
    if (t_api == 2)
        return egl ? egl() : NULL;
    if (t_api == 1)
        return glx ? glx() : NULL;
    void *c = egl ? egl() : NULL;
    if (!c && glx)
        c = glx();
    return c;
}

enum { BT_ARRAY, BT_ELEMENT, BT_PACK, BT_UNPACK, BT_COPY_READ, BT_COPY_WRITE, BT_UNIFORM, BT_TEXTURE,
       BT_XFB, BT_DRAW_INDIRECT, BT_DISPATCH_INDIRECT, BT_STORAGE, BT_ATOMIC, BT_QUERY, BT_COUNT };

static int buffer_target(GLenum t) {
    switch (t) {
    case 0x8892: return BT_ARRAY;
    case 0x8893: return BT_ELEMENT;
    case 0x88EB: return BT_PACK;
    case 0x88EC: return BT_UNPACK;
    case 0x8F36: return BT_COPY_READ;
    case 0x8F37: return BT_COPY_WRITE;
    case 0x8A11: return BT_UNIFORM;
    case 0x8C2A: return BT_TEXTURE;
    case 0x8C8E: return BT_XFB;
    case 0x8F3F: return BT_DRAW_INDIRECT;
    case 0x90EE: return BT_DISPATCH_INDIRECT;
    case 0x90D2: return BT_STORAGE;
    case 0x92C0: return BT_ATOMIC;
    case 0x9192: return BT_QUERY;
    default: return -1;
    }
}

enum { TT_1D, TT_2D, TT_3D, TT_CUBE, TT_RECT, TT_1D_ARRAY, TT_2D_ARRAY, TT_BUFFER, TT_CUBE_ARRAY, TT_2D_MS,
       TT_2D_MS_ARRAY, TT_EXTERNAL, TT_COUNT };

static int texture_target(GLenum t) { /* a glBindTexture target, or a glTexImage2D target's binding */
    switch (t) {
    case 0x0DE0: return TT_1D;
    case 0x0DE1: return TT_2D;
    case 0x806F: return TT_3D;
    case 0x8513: case 0x8515: case 0x8516: case 0x8517: case 0x8518: case 0x8519: case 0x851A:
        return TT_CUBE; /* the cube map and its six faces (glTexImage2D targets) */
    case 0x84F5: return TT_RECT;
    case 0x8C18: return TT_1D_ARRAY;
    case 0x8C1A: return TT_2D_ARRAY;
    case 0x8C2A: return TT_BUFFER;
    case 0x9009: return TT_CUBE_ARRAY;
    case 0x9100: return TT_2D_MS;
    case 0x9102: return TT_2D_MS_ARRAY;
    case 0x8D65: return TT_EXTERNAL;
    default: return -1;
    }
}

#define MAX_UNITS 32
#define MAX_ATTRIBS 32
#define MAX_VAOS 65536

typedef struct {
    GLuint element;
    GLuint attrib[MAX_ATTRIBS]; /* the GL_ARRAY_BUFFER bound at glVertexAttrib*Pointer time */
    uint32_t enabled;
} vao_t;

typedef struct {
    void *ctx;
    int _Atomic destroyed; /* the context was destroyed: a new one at its address starts clean */
    GLuint buffer[BT_COUNT];
    GLuint texture[MAX_UNITS][TT_COUNT];
    uint32_t units_used;
    unsigned active_unit;
    GLuint vao;
    vao_t *vaos;
    uint32_t vao_count;
} ctx_state;

#define MAX_CONTEXTS 64
static ctx_state *_Atomic g_states[MAX_CONTEXTS];
static pthread_mutex_t g_states_lock = PTHREAD_MUTEX_INITIALIZER;
static ctx_state g_overflow_state; /* past MAX_CONTEXTS contexts: one shared, approximate state */

static TLS void *t_ctx;
/* t_ctx is the context current on this thread, read through the real getter at this thread's last
 * make-current (and at each swap): a record then costs no getter call (glvnd's eglGetCurrentContext
 * is slower than the rest of the record). Before the thread's first make-current seen here, each
 * record asks the getter. */
static TLS int t_ctx_known;
static TLS ctx_state *t_state;

static ctx_state *state_for(void *ctx) {
    for (int i = 0; i < MAX_CONTEXTS; i++) {
        ctx_state *s = atomic_load_explicit(&g_states[i], memory_order_acquire);
        if (!s)
            break;
        if (s->ctx == ctx)
            return s;
    }
    pthread_mutex_lock(&g_states_lock);
    ctx_state *found = &g_overflow_state;
    for (int i = 0; i < MAX_CONTEXTS; i++) {
        ctx_state *s = atomic_load_explicit(&g_states[i], memory_order_acquire);
        if (s && s->ctx == ctx) {
            found = s;
            break;
        }
        if (!s) {
            ctx_state *n = calloc(1, sizeof *n);
            if (n) {
                n->ctx = ctx;
                atomic_store_explicit(&g_states[i], n, memory_order_release);
                found = n;
            }
            break;
        }
    }
    pthread_mutex_unlock(&g_states_lock);
    return found;
}

static ctx_state *switch_state(void *ctx) {
    t_ctx = ctx;
    t_state = state_for(ctx);
    return t_state;
}

static ctx_state *state_now(void) {
    return t_state ? t_state : switch_state(current_context());
}

static vao_t *vao_of(ctx_state *s, GLuint name) {
    if (name >= MAX_VAOS)
        return NULL;
    if (name >= s->vao_count) {
        uint32_t n = s->vao_count ? s->vao_count : 16;
        while (n <= name)
            n *= 2;
        vao_t *grown = realloc(s->vaos, n * sizeof *grown);
        if (!grown)
            return NULL;
        memset(grown + s->vao_count, 0, (n - s->vao_count) * sizeof *grown);
        s->vaos = grown;
        s->vao_count = n;
    }
    return &s->vaos[name];
}

/* ---- record helpers ------------------------------------------------------------------------------ */
/* Opens a "call" record (returns its id); the caller adds the arguments and calls finish().
 * ``fresh``: read the current context through the real getter (swaps, make-currents). */
static uint64_t call_head(line_t *l, int fn, void *site, int fresh) {
    if (!t_tid)
        t_tid = syscall(SYS_gettid);
    void *ctx = (t_ctx_known && !fresh) ? t_ctx : current_context();
    if (ctx != t_ctx || !t_state)
        switch_state(ctx);
    uint64_t id = atomic_fetch_add_explicit(&g_next_id, 1, memory_order_relaxed);
    head(l, "call");
    PUTS(l, ",\"id\":");
    put_u64(l, id);
    PUTS(l, ",\"tid\":");
    put_i64(l, t_tid);
    PUTS(l, ",\"fn\":\"");
    put(l, NAMES[fn], strlen(NAMES[fn]));
    PUTS(l, "\",\"site\":");
    put_hex(l, (uintptr_t)site);
    PUTS(l, ",\"ctx\":");
    put_hex(l, (uintptr_t)ctx);
    char py_site[PYSITE_MAX];
    size_t py_n = glshare_pysite(py_site, real_dlsym()); /* the Python line, where this thread runs Python */
    if (py_n)
        put(l, py_site, py_n);
    return id;
}

static void ret_head(line_t *l, uint64_t id) {
    head(l, "ret");
    PUTS(l, ",\"id\":");
    put_u64(l, id);
}

static void write_ret(uint64_t id) {
    line_t l;
    ret_head(&l, id);
    finish(&l);
}

static void write_ret_result(uint64_t id, int64_t result) {
    line_t l;
    ret_head(&l, id);
    PUTS(&l, ",\"result\":");
    put_i64(&l, result);
    finish(&l);
}

static void write_ret_handle(uint64_t id, void *handle) {
    line_t l;
    ret_head(&l, id);
    PUTS(&l, ",\"handle\":");
    put_hex(&l, (uintptr_t)handle);
    finish(&l);
}

static void put_kv_u(line_t *l, const char *key, uint64_t v) {
    PUTS(l, ",\"");
    put(l, key, strlen(key));
    PUTS(l, "\":");
    put_u64(l, v);
}

static void put_kv_i(line_t *l, const char *key, int64_t v) {
    PUTS(l, ",\"");
    put(l, key, strlen(key));
    PUTS(l, "\":");
    put_i64(l, v);
}

static void put_kv_hex(line_t *l, const char *key, uintptr_t v) {
    PUTS(l, ",\"");
    put(l, key, strlen(key));
    PUTS(l, "\":");
    put_hex(l, v);
}

/* ``"key":[n, ...]``: as many names as fit the line; the rest counted in ``<key>_left``. */
static void put_names(line_t *l, const char *key, const GLuint *names, GLsizei n) {
    PUTS(l, ",\"");
    put(l, key, strlen(key));
    PUTS(l, "\":[");
    GLsizei i = 0;
    for (; names && i < n; i++) {
        if (l->n + 16 + 40 > RECORD_MAX - ROOM_END)
            break; /* room for this name, "]" and the count of the others */
        if (i)
            PUTS(l, ",");
        put_u64(l, names[i]);
    }
    PUTS(l, "]");
    if (names && i < n) {
        PUTS(l, ",\"");
        put(l, key, strlen(key));
        PUTS(l, "_left\":");
        put_u64(l, (uint64_t)(n - i));
    }
}

static void add_unique(GLuint *list, int *n, int cap, GLuint v) {
    if (!v)
        return;
    for (int i = 0; i < *n; i++)
        if (list[i] == v)
            return;
    if (*n < cap)
        list[(*n)++] = v;
}

static void put_draw_bindings(line_t *l, ctx_state *s) {
    GLuint list[MAX_ATTRIBS + 2];
    int n = 0;
    add_unique(list, &n, MAX_ATTRIBS + 2, s->buffer[BT_ARRAY]);
    vao_t *v = vao_of(s, s->vao);
    if (v) {
        add_unique(list, &n, MAX_ATTRIBS + 2, v->element);
        for (int a = 0; a < MAX_ATTRIBS; a++)
            if (v->enabled & (1u << a))
                add_unique(list, &n, MAX_ATTRIBS + 2, v->attrib[a]);
    }
    put_names(l, "buffers", list, n);
    GLuint tex[MAX_UNITS * 2];
    int nt = 0;
    for (unsigned u = 0; u < MAX_UNITS; u++)
        if (s->units_used & (1u << u))
            for (int t = 0; t < TT_COUNT; t++)
                add_unique(tex, &nt, MAX_UNITS * 2, s->texture[u][t]);
    put_names(l, "textures", tex, nt);
}

static int64_t pixel_bytes(GLenum format, GLenum type) {
    int64_t per;
    switch (type) {
    case 0x1400: case 0x1401: per = 1; break;                      /* BYTE, UNSIGNED_BYTE */
    case 0x1402: case 0x1403: case 0x140B: per = 2; break;         /* SHORT, UNSIGNED_SHORT, HALF_FLOAT */
    case 0x1404: case 0x1405: case 0x1406: per = 4; break;         /* INT, UNSIGNED_INT, FLOAT */
    case 0x8035: case 0x8367: case 0x8368: case 0x8C3B: case 0x8C3E: case 0x84FA:
        return 4; /* packed 32-bit pixels: 8_8_8_8(_REV), 2_10_10_10_REV, 10F_11F_11F_REV, 5_9_9_9_REV, 24_8 */
    case 0x8363: case 0x8364: case 0x8033: case 0x8365: case 0x8034: case 0x8366:
        return 2; /* packed 16-bit pixels: 5_6_5(_REV), 4_4_4_4(_REV), 5_5_5_1 / 1_5_5_5_REV */
    default: return -1;
    }
    switch (format) {
    case 0x1903: case 0x8D94: case 0x1902: case 0x1901: return per;                   /* RED(_INTEGER), DEPTH, STENCIL */
    case 0x8227: case 0x8228: return 2 * per;                                         /* RG(_INTEGER) */
    case 0x1907: case 0x80E0: case 0x8D98: case 0x8D9A: return 3 * per;               /* RGB, BGR (+_INTEGER) */
    case 0x1908: case 0x80E1: case 0x8D99: case 0x8D9B: return 4 * per;               /* RGBA, BGRA (+_INTEGER) */
    default: return -1;
    }
}

/* ---- the wrappers ---------------------------------------------------------------------------------- */
#define EXPORT __attribute__((visibility("default")))
#define SITE __builtin_return_address(0)
/* The real function of entry point ``name`` as a pointer of type ``type``. */
#define REAL_FN(name, type) ((type)real_of(F_##name))
#define RECORDING() (atomic_load_explicit(&g_on, memory_order_relaxed) && !t_depth)

static void missing(int fn) {
    static int _Atomic said[F_COUNT];
    if (RECORDING() && !atomic_exchange(&said[fn], 1)) {
        char text[160] = "no real ";
        strncat(text, NAMES[fn], sizeof text - 40);
        strcat(text, " found: the call was not passed on");
        write_note(text);
    }
}

typedef void (*swap_glx_fn)(void *, GLXDrawable);
EXPORT void glXSwapBuffers(void *dpy, GLXDrawable drawable) {
    swap_glx_fn real = REAL_FN(glXSwapBuffers, swap_glx_fn);
    if (!real)
        return missing(F_glXSwapBuffers);
    if (!RECORDING())
        return real(dpy, drawable);
    t_depth++;
    line_t l;
    uint64_t id = call_head(&l, F_glXSwapBuffers, SITE, 1);
    put_kv_hex(&l, "display", (uintptr_t)dpy);
    put_kv_hex(&l, "drawable", (uintptr_t)drawable);
    finish(&l);
    real(dpy, drawable);
    write_ret(id);
    t_depth--;
}

typedef EGLBoolean (*swap_egl_fn)(EGLDisplay, EGLSurface);
EXPORT EGLBoolean eglSwapBuffers(EGLDisplay dpy, EGLSurface surface) {
    swap_egl_fn real = REAL_FN(eglSwapBuffers, swap_egl_fn);
    if (!real)
        return missing(F_eglSwapBuffers), 0;
    if (!RECORDING())
        return real(dpy, surface);
    t_depth++;
    line_t l;
    uint64_t id = call_head(&l, F_eglSwapBuffers, SITE, 1);
    put_kv_hex(&l, "display", (uintptr_t)dpy);
    put_kv_hex(&l, "drawable", (uintptr_t)surface);
    finish(&l);
    EGLBoolean r = real(dpy, surface);
    write_ret_result(id, r);
    t_depth--;
    return r;
}

/* make-current: recorded, and this thread's context state follows the context now current */
static uint64_t make_current_call(int fn, void *site, void *dpy, uintptr_t draw, void *ctx) {
    line_t l;
    uint64_t id = call_head(&l, fn, site, 1);
    put_kv_hex(&l, "display", (uintptr_t)dpy);
    put_kv_hex(&l, "drawable", draw);
    put_kv_hex(&l, "context", (uintptr_t)ctx);
    finish(&l);
    return id;
}

/* The state of a context made current: cleared here, on the thread it is current on, where the
 * context that had its address was destroyed (never while another thread may use it). */
static void current_state_after_make_current(void) {
    ctx_state *s = switch_state(current_context());
    if (s != &g_overflow_state && atomic_exchange(&s->destroyed, 0)) {
        free(s->vaos);
        void *ctx = s->ctx;
        memset((char *)s + offsetof(ctx_state, buffer), 0, sizeof *s - offsetof(ctx_state, buffer));
        s->ctx = ctx;
    }
    t_ctx_known = 1;
}

static void make_current_ret(uint64_t id, int api, int64_t result) {
    if (result)
        t_api = api;
    current_state_after_make_current();
    write_ret_result(id, result);
}

typedef int (*glx_mc_fn)(void *, GLXDrawable, GLXContext);
EXPORT int glXMakeCurrent(void *dpy, GLXDrawable drawable, GLXContext ctx) {
    glx_mc_fn real = REAL_FN(glXMakeCurrent, glx_mc_fn);
    if (!real)
        return missing(F_glXMakeCurrent), 0;
    if (!RECORDING()) {
        t_state = NULL; /* found again from the context on the next tracked call */
        t_ctx_known = 0;
        return real(dpy, drawable, ctx);
    }
    t_depth++;
    uint64_t id = make_current_call(F_glXMakeCurrent, SITE, dpy, drawable, ctx);
    int r = real(dpy, drawable, ctx);
    make_current_ret(id, 1, r);
    t_depth--;
    return r;
}

typedef int (*glx_mcc_fn)(void *, GLXDrawable, GLXDrawable, GLXContext);
EXPORT int glXMakeContextCurrent(void *dpy, GLXDrawable draw, GLXDrawable read, GLXContext ctx) {
    glx_mcc_fn real = REAL_FN(glXMakeContextCurrent, glx_mcc_fn);
    if (!real)
        return missing(F_glXMakeContextCurrent), 0;
    if (!RECORDING()) {
        t_state = NULL;
        t_ctx_known = 0;
        return real(dpy, draw, read, ctx);
    }
    t_depth++;
    uint64_t id = make_current_call(F_glXMakeContextCurrent, SITE, dpy, draw, ctx);
    int r = real(dpy, draw, read, ctx);
    make_current_ret(id, 1, r);
    t_depth--;
    return r;
}

typedef EGLBoolean (*egl_mc_fn)(EGLDisplay, EGLSurface, EGLSurface, EGLContext);
EXPORT EGLBoolean eglMakeCurrent(EGLDisplay dpy, EGLSurface draw, EGLSurface read, EGLContext ctx) {
    egl_mc_fn real = REAL_FN(eglMakeCurrent, egl_mc_fn);
    if (!real)
        return missing(F_eglMakeCurrent), 0;
    if (!RECORDING()) {
        t_state = NULL;
        t_ctx_known = 0;
        return real(dpy, draw, read, ctx);
    }
    t_depth++;
    uint64_t id = make_current_call(F_eglMakeCurrent, SITE, dpy, (uintptr_t)draw, ctx);
    EGLBoolean r = real(dpy, draw, read, ctx);
    make_current_ret(id, 2, r);
    t_depth--;
    return r;
}

typedef void (*void_fn)(void);
EXPORT void glFinish(void) {
    void_fn real = REAL_FN(glFinish, void_fn);
    if (!real)
        return missing(F_glFinish);
    if (!RECORDING())
        return real();
    t_depth++;
    line_t l;
    uint64_t id = call_head(&l, F_glFinish, SITE, 0);
    finish(&l);
    real();
    write_ret(id);
    t_depth--;
}

EXPORT void glFlush(void) {
    void_fn real = REAL_FN(glFlush, void_fn);
    if (!real)
        return missing(F_glFlush);
    if (!RECORDING())
        return real();
    t_depth++;
    line_t l;
    call_head(&l, F_glFlush, SITE, 0);
    finish(&l);
    real();
    t_depth--;
}

typedef GLsync (*fence_fn)(GLenum, GLbitfield);
EXPORT GLsync glFenceSync(GLenum condition, GLbitfield flags) {
    fence_fn real = REAL_FN(glFenceSync, fence_fn);
    if (!real)
        return missing(F_glFenceSync), NULL;
    if (!RECORDING())
        return real(condition, flags);
    t_depth++;
    line_t l;
    uint64_t id = call_head(&l, F_glFenceSync, SITE, 0);
    finish(&l);
    GLsync r = real(condition, flags);
    write_ret_handle(id, r);
    t_depth--;
    return r;
}

typedef GLenum (*cwait_fn)(GLsync, GLbitfield, GLuint64);
EXPORT GLenum glClientWaitSync(GLsync sync, GLbitfield flags, GLuint64 timeout) {
    cwait_fn real = REAL_FN(glClientWaitSync, cwait_fn);
    if (!real)
        return missing(F_glClientWaitSync), 0x911D; /* GL_WAIT_FAILED */
    if (!RECORDING())
        return real(sync, flags, timeout);
    t_depth++;
    line_t l;
    uint64_t id = call_head(&l, F_glClientWaitSync, SITE, 0);
    put_kv_hex(&l, "sync", (uintptr_t)sync);
    put_kv_u(&l, "timeout", timeout);
    finish(&l);
    GLenum r = real(sync, flags, timeout);
    write_ret_result(id, r);
    t_depth--;
    return r;
}

typedef void (*wait_fn)(GLsync, GLbitfield, GLuint64);
EXPORT void glWaitSync(GLsync sync, GLbitfield flags, GLuint64 timeout) {
    wait_fn real = REAL_FN(glWaitSync, wait_fn);
    if (!real)
        return missing(F_glWaitSync);
    if (!RECORDING())
        return real(sync, flags, timeout);
    t_depth++;
    line_t l;
    uint64_t id = call_head(&l, F_glWaitSync, SITE, 0);
    put_kv_hex(&l, "sync", (uintptr_t)sync);
    put_kv_u(&l, "timeout", timeout);
    finish(&l);
    real(sync, flags, timeout);
    write_ret(id);
    t_depth--;
}

typedef void (*delsync_fn)(GLsync);
EXPORT void glDeleteSync(GLsync sync) {
    delsync_fn real = REAL_FN(glDeleteSync, delsync_fn);
    if (!real)
        return missing(F_glDeleteSync);
    if (!RECORDING())
        return real(sync);
    t_depth++;
    line_t l;
    call_head(&l, F_glDeleteSync, SITE, 0);
    put_kv_hex(&l, "sync", (uintptr_t)sync);
    finish(&l);
    real(sync);
    t_depth--;
}

/* Deleting a bound buffer unbinds it from the context's targets and from the bound vertex array
 * (OpenGL 4.6 core, 6.1.1); deleting a bound texture binds 0 in its place (8.1). */
static void forget_buffers(ctx_state *s, GLsizei n, const GLuint *names) {
    vao_t *v = vao_of(s, s->vao);
    for (GLsizei i = 0; names && i < n; i++) {
        if (!names[i])
            continue;
        for (int t = 0; t < BT_COUNT; t++)
            if (s->buffer[t] == names[i])
                s->buffer[t] = 0;
        if (v) {
            if (v->element == names[i])
                v->element = 0;
            for (int a = 0; a < MAX_ATTRIBS; a++)
                if (v->attrib[a] == names[i])
                    v->attrib[a] = 0;
        }
    }
}

static void forget_textures(ctx_state *s, GLsizei n, const GLuint *names) {
    for (GLsizei i = 0; names && i < n; i++)
        for (int u = 0; u < MAX_UNITS && names[i]; u++)
            for (int t = 0; t < TT_COUNT; t++)
                if (s->texture[u][t] == names[i])
                    s->texture[u][t] = 0;
}

typedef void (*delete_fn)(GLsizei, const GLuint *);
static void deleting(int fn, void *site, GLsizei n, const GLuint *names) {
    line_t l;
    call_head(&l, fn, site, 0);
    put_names(&l, "names", names, n);
    finish(&l);
}

EXPORT void glDeleteBuffers(GLsizei n, const GLuint *names) {
    delete_fn real = REAL_FN(glDeleteBuffers, delete_fn);
    if (!real)
        return missing(F_glDeleteBuffers);
    if (!RECORDING())
        return real(n, names);
    t_depth++;
    deleting(F_glDeleteBuffers, SITE, n, names);
    forget_buffers(t_state, n, names);
    real(n, names);
    t_depth--;
}

EXPORT void glDeleteTextures(GLsizei n, const GLuint *names) {
    delete_fn real = REAL_FN(glDeleteTextures, delete_fn);
    if (!real)
        return missing(F_glDeleteTextures);
    if (!RECORDING())
        return real(n, names);
    t_depth++;
    deleting(F_glDeleteTextures, SITE, n, names);
    forget_textures(t_state, n, names);
    real(n, names);
    t_depth--;
}

EXPORT void glDeleteRenderbuffers(GLsizei n, const GLuint *names) {
    delete_fn real = REAL_FN(glDeleteRenderbuffers, delete_fn);
    if (!real)
        return missing(F_glDeleteRenderbuffers);
    if (!RECORDING())
        return real(n, names);
    t_depth++;
    deleting(F_glDeleteRenderbuffers, SITE, n, names);
    real(n, names);
    t_depth--;
}

/* An upload or map's record: ``target``, the name bound to it (``buffer``), ``size`` (< 0: none). */
static uint64_t buffer_call(int fn, void *site, GLenum target, int64_t size) {
    line_t l;
    uint64_t id = call_head(&l, fn, site, 0);
    int bt = buffer_target(target);
    ctx_state *s = t_state;
    GLuint name = 0;
    if (bt == BT_ELEMENT) {
        vao_t *v = vao_of(s, s->vao);
        name = v ? v->element : 0;
    } else if (bt >= 0) {
        name = s->buffer[bt];
    }
    put_kv_u(&l, "target", target);
    put_kv_u(&l, "buffer", name);
    if (size >= 0)
        put_kv_i(&l, "size", size);
    finish(&l);
    return id;
}

typedef void (*bdata_fn)(GLenum, GLsizeiptr, const void *, GLenum);
EXPORT void glBufferData(GLenum target, GLsizeiptr size, const void *data, GLenum usage) {
    bdata_fn real = REAL_FN(glBufferData, bdata_fn);
    if (!real)
        return missing(F_glBufferData);
    if (!RECORDING())
        return real(target, size, data, usage);
    t_depth++;
    buffer_call(F_glBufferData, SITE, target, size);
    real(target, size, data, usage);
    t_depth--;
}

typedef void (*bsub_fn)(GLenum, GLintptr, GLsizeiptr, const void *);
EXPORT void glBufferSubData(GLenum target, GLintptr offset, GLsizeiptr size, const void *data) {
    bsub_fn real = REAL_FN(glBufferSubData, bsub_fn);
    if (!real)
        return missing(F_glBufferSubData);
    if (!RECORDING())
        return real(target, offset, size, data);
    t_depth++;
    buffer_call(F_glBufferSubData, SITE, target, size);
    real(target, offset, size, data);
    t_depth--;
}

typedef void *(*map_fn)(GLenum, GLenum);
EXPORT void *glMapBuffer(GLenum target, GLenum access) {
    map_fn real = REAL_FN(glMapBuffer, map_fn);
    if (!real)
        return missing(F_glMapBuffer), NULL;
    if (!RECORDING())
        return real(target, access);
    t_depth++;
    uint64_t id = buffer_call(F_glMapBuffer, SITE, target, -1);
    void *r = real(target, access);
    write_ret_handle(id, r);
    t_depth--;
    return r;
}

typedef void *(*maprange_fn)(GLenum, GLintptr, GLsizeiptr, GLbitfield);
EXPORT void *glMapBufferRange(GLenum target, GLintptr offset, GLsizeiptr length, GLbitfield access) {
    maprange_fn real = REAL_FN(glMapBufferRange, maprange_fn);
    if (!real)
        return missing(F_glMapBufferRange), NULL;
    if (!RECORDING())
        return real(target, offset, length, access);
    t_depth++;
    uint64_t id = buffer_call(F_glMapBufferRange, SITE, target, length);
    void *r = real(target, offset, length, access);
    write_ret_handle(id, r);
    t_depth--;
    return r;
}

typedef GLboolean (*unmap_fn)(GLenum);
EXPORT GLboolean glUnmapBuffer(GLenum target) {
    unmap_fn real = REAL_FN(glUnmapBuffer, unmap_fn);
    if (!real)
        return missing(F_glUnmapBuffer), 0;
    if (!RECORDING())
        return real(target);
    t_depth++;
    uint64_t id = buffer_call(F_glUnmapBuffer, SITE, target, -1);
    GLboolean r = real(target);
    write_ret_result(id, r);
    t_depth--;
    return r;
}

static void texture_call(int fn, void *site, GLenum target, GLsizei w, GLsizei h, GLenum format, GLenum type) {
    line_t l;
    call_head(&l, fn, site, 0);
    ctx_state *s = t_state;
    int tt = texture_target(target);
    GLuint name = (tt >= 0 && s->active_unit < MAX_UNITS) ? s->texture[s->active_unit][tt] : 0;
    put_kv_u(&l, "target", target);
    put_kv_u(&l, "texture", name);
    int64_t per = pixel_bytes(format, type);
    if (per > 0 && w >= 0 && h >= 0)
        put_kv_i(&l, "size", per * w * h);
    finish(&l);
}

typedef void (*teximage_fn)(GLenum, GLint, GLint, GLsizei, GLsizei, GLint, GLenum, GLenum, const void *);
EXPORT void glTexImage2D(GLenum target, GLint level, GLint internalformat, GLsizei width, GLsizei height,
                         GLint border, GLenum format, GLenum type, const void *pixels) {
    teximage_fn real = REAL_FN(glTexImage2D, teximage_fn);
    if (!real)
        return missing(F_glTexImage2D);
    if (!RECORDING())
        return real(target, level, internalformat, width, height, border, format, type, pixels);
    t_depth++;
    texture_call(F_glTexImage2D, SITE, target, width, height, format, type);
    real(target, level, internalformat, width, height, border, format, type, pixels);
    t_depth--;
}

typedef void (*texsub_fn)(GLenum, GLint, GLint, GLint, GLsizei, GLsizei, GLenum, GLenum, const void *);
EXPORT void glTexSubImage2D(GLenum target, GLint level, GLint xoffset, GLint yoffset, GLsizei width,
                            GLsizei height, GLenum format, GLenum type, const void *pixels) {
    texsub_fn real = REAL_FN(glTexSubImage2D, texsub_fn);
    if (!real)
        return missing(F_glTexSubImage2D);
    if (!RECORDING())
        return real(target, level, xoffset, yoffset, width, height, format, type, pixels);
    t_depth++;
    texture_call(F_glTexSubImage2D, SITE, target, width, height, format, type);
    real(target, level, xoffset, yoffset, width, height, format, type, pixels);
    t_depth--;
}

static void draw_call(int fn, void *site, GLenum mode, GLsizei count) {
    line_t l;
    call_head(&l, fn, site, 0);
    put_kv_u(&l, "mode", mode);
    put_kv_i(&l, "count", count);
    put_draw_bindings(&l, t_state);
    finish(&l);
}

typedef void (*drawarrays_fn)(GLenum, GLint, GLsizei);
EXPORT void glDrawArrays(GLenum mode, GLint first, GLsizei count) {
    drawarrays_fn real = REAL_FN(glDrawArrays, drawarrays_fn);
    if (!real)
        return missing(F_glDrawArrays);
    if (!RECORDING())
        return real(mode, first, count);
    t_depth++;
    draw_call(F_glDrawArrays, SITE, mode, count);
    real(mode, first, count);
    t_depth--;
}

typedef void (*drawelements_fn)(GLenum, GLsizei, GLenum, const void *);
EXPORT void glDrawElements(GLenum mode, GLsizei count, GLenum type, const void *indices) {
    drawelements_fn real = REAL_FN(glDrawElements, drawelements_fn);
    if (!real)
        return missing(F_glDrawElements);
    if (!RECORDING())
        return real(mode, count, type, indices);
    t_depth++;
    draw_call(F_glDrawElements, SITE, mode, count);
    real(mode, count, type, indices);
    t_depth--;
}

typedef void (*drawarraysinst_fn)(GLenum, GLint, GLsizei, GLsizei);
EXPORT void glDrawArraysInstanced(GLenum mode, GLint first, GLsizei count, GLsizei instances) {
    drawarraysinst_fn real = REAL_FN(glDrawArraysInstanced, drawarraysinst_fn);
    if (!real)
        return missing(F_glDrawArraysInstanced);
    if (!RECORDING())
        return real(mode, first, count, instances);
    t_depth++;
    draw_call(F_glDrawArraysInstanced, SITE, mode, count);
    real(mode, first, count, instances);
    t_depth--;
}

typedef void (*drawelementsinst_fn)(GLenum, GLsizei, GLenum, const void *, GLsizei);
EXPORT void glDrawElementsInstanced(GLenum mode, GLsizei count, GLenum type, const void *indices, GLsizei instances) {
    drawelementsinst_fn real = REAL_FN(glDrawElementsInstanced, drawelementsinst_fn);
    if (!real)
        return missing(F_glDrawElementsInstanced);
    if (!RECORDING())
        return real(mode, count, type, indices, instances);
    t_depth++;
    draw_call(F_glDrawElementsInstanced, SITE, mode, count);
    real(mode, count, type, indices, instances);
    t_depth--;
}

/* The other draws of OpenGL 4.6 core 10.4 that name a count of vertices (ImGui's OpenGL 3 renderer
 * draws with glDrawElementsBaseVertex). */
#define DRAW_WRAPPER(name, params, args, mode_arg, count_arg)                                            \
    typedef void (*name##_fn) params;                                                                  \
    EXPORT void name params {                                                                          \
        name##_fn real = REAL_FN(name, name##_fn);                                                     \
        if (!real)                                                                                     \
            return missing(F_##name);                                                                  \
        if (!RECORDING())                                                                              \
            return real args;                                                                          \
        t_depth++;                                                                                     \
        draw_call(F_##name, SITE, mode_arg, count_arg);                                                \
        real args;                                                                                     \
        t_depth--;                                                                                     \
    }
DRAW_WRAPPER(glDrawRangeElements, (GLenum mode, GLuint start, GLuint end, GLsizei count, GLenum type, const void *indices),
             (mode, start, end, count, type, indices), mode, count)
DRAW_WRAPPER(glDrawElementsBaseVertex, (GLenum mode, GLsizei count, GLenum type, const void *indices, GLint basevertex),
             (mode, count, type, indices, basevertex), mode, count)
DRAW_WRAPPER(glDrawRangeElementsBaseVertex,
             (GLenum mode, GLuint start, GLuint end, GLsizei count, GLenum type, const void *indices, GLint basevertex),
             (mode, start, end, count, type, indices, basevertex), mode, count)
DRAW_WRAPPER(glDrawElementsInstancedBaseVertex,
             (GLenum mode, GLsizei count, GLenum type, const void *indices, GLsizei instances, GLint basevertex),
             (mode, count, type, indices, instances, basevertex), mode, count)
DRAW_WRAPPER(glDrawArraysInstancedBaseInstance,
             (GLenum mode, GLint first, GLsizei count, GLsizei instances, GLuint baseinstance),
             (mode, first, count, instances, baseinstance), mode, count)
DRAW_WRAPPER(glDrawElementsInstancedBaseInstance,
             (GLenum mode, GLsizei count, GLenum type, const void *indices, GLsizei instances, GLuint baseinstance),
             (mode, count, type, indices, instances, baseinstance), mode, count)
DRAW_WRAPPER(glDrawElementsInstancedBaseVertexBaseInstance,
             (GLenum mode, GLsizei count, GLenum type, const void *indices, GLsizei instances, GLint basevertex,
              GLuint baseinstance),
             (mode, count, type, indices, instances, basevertex, baseinstance), mode, count)

/* ---- tracked, not recorded: the bindings the records name ----------------------------------------- */
typedef void (*bind_fn)(GLenum, GLuint);
EXPORT void glBindBuffer(GLenum target, GLuint buffer) {
    bind_fn real = REAL_FN(glBindBuffer, bind_fn);
    if (!real)
        return missing(F_glBindBuffer);
    if (RECORDING()) {
        ctx_state *s = state_now();
        int bt = buffer_target(target);
        if (bt == BT_ELEMENT) {
            vao_t *v = vao_of(s, s->vao); /* element array binding is vertex array state */
            if (v)
                v->element = buffer;
        } else if (bt >= 0) {
            s->buffer[bt] = buffer;
        }
    }
    real(target, buffer);
}

EXPORT void glBindTexture(GLenum target, GLuint texture) {
    bind_fn real = REAL_FN(glBindTexture, bind_fn);
    if (!real)
        return missing(F_glBindTexture);
    if (RECORDING()) {
        ctx_state *s = state_now();
        int tt = texture_target(target);
        if (tt >= 0 && s->active_unit < MAX_UNITS) {
            s->texture[s->active_unit][tt] = texture;
            s->units_used |= 1u << s->active_unit;
        }
    }
    real(target, texture);
}

typedef void (*enum_fn)(GLenum);
EXPORT void glActiveTexture(GLenum texture) {
    enum_fn real = REAL_FN(glActiveTexture, enum_fn);
    if (!real)
        return missing(F_glActiveTexture);
    if (RECORDING())
        state_now()->active_unit = texture - GL_TEXTURE0; /* past MAX_UNITS: not tracked */
    real(texture);
}

typedef void (*uint_fn)(GLuint);
EXPORT void glBindVertexArray(GLuint array) {
    uint_fn real = REAL_FN(glBindVertexArray, uint_fn);
    if (!real)
        return missing(F_glBindVertexArray);
    if (RECORDING())
        state_now()->vao = array;
    real(array);
}

EXPORT void glDeleteVertexArrays(GLsizei n, const GLuint *arrays) {
    delete_fn real = REAL_FN(glDeleteVertexArrays, delete_fn);
    if (!real)
        return missing(F_glDeleteVertexArrays);
    if (RECORDING()) {
        ctx_state *s = state_now();
        for (GLsizei i = 0; arrays && i < n; i++) {
            if (!arrays[i])
                continue;
            if (arrays[i] < s->vao_count)
                memset(&s->vaos[arrays[i]], 0, sizeof s->vaos[0]);
            if (s->vao == arrays[i])
                s->vao = 0; /* deleting the bound vertex array binds 0 (OpenGL 4.6 core, 10.3.1) */
        }
    }
    real(n, arrays);
}

static void attrib_pointer(GLuint index) {
    ctx_state *s = state_now();
    vao_t *v = vao_of(s, s->vao);
    if (v && index < MAX_ATTRIBS)
        v->attrib[index] = s->buffer[BT_ARRAY];
}

typedef void (*attrib_fn)(GLuint, GLint, GLenum, GLboolean, GLsizei, const void *);
EXPORT void glVertexAttribPointer(GLuint index, GLint size, GLenum type, GLboolean normalized, GLsizei stride,
                                  const void *pointer) {
    attrib_fn real = REAL_FN(glVertexAttribPointer, attrib_fn);
    if (!real)
        return missing(F_glVertexAttribPointer);
    if (RECORDING())
        attrib_pointer(index);
    real(index, size, type, normalized, stride, pointer);
}

typedef void (*iattrib_fn)(GLuint, GLint, GLenum, GLsizei, const void *);
EXPORT void glVertexAttribIPointer(GLuint index, GLint size, GLenum type, GLsizei stride, const void *pointer) {
    iattrib_fn real = REAL_FN(glVertexAttribIPointer, iattrib_fn);
    if (!real)
        return missing(F_glVertexAttribIPointer);
    if (RECORDING())
        attrib_pointer(index);
    real(index, size, type, stride, pointer);
}

static void attrib_enable(GLuint index, int on) {
    ctx_state *s = state_now();
    vao_t *v = vao_of(s, s->vao);
    if (v && index < MAX_ATTRIBS)
        v->enabled = on ? (v->enabled | (1u << index)) : (v->enabled & ~(1u << index));
}

EXPORT void glEnableVertexAttribArray(GLuint index) {
    uint_fn real = REAL_FN(glEnableVertexAttribArray, uint_fn);
    if (!real)
        return missing(F_glEnableVertexAttribArray);
    if (RECORDING())
        attrib_enable(index, 1);
    real(index);
}

EXPORT void glDisableVertexAttribArray(GLuint index) {
    uint_fn real = REAL_FN(glDisableVertexAttribArray, uint_fn);
    if (!real)
        return missing(F_glDisableVertexAttribArray);
    if (RECORDING())
        attrib_enable(index, 0);
    real(index);
}

/* ---- context destruction: tracked, not recorded ------------------------------------------------------ */
static void context_destroyed(void *ctx) {
    for (int i = 0; ctx && i < MAX_CONTEXTS; i++) {
        ctx_state *s = atomic_load_explicit(&g_states[i], memory_order_acquire);
        if (!s)
            return;
        if (s->ctx == ctx)
            atomic_store(&s->destroyed, 1);
    }
}

typedef void (*glx_destroy_fn)(void *, GLXContext);
EXPORT void glXDestroyContext(void *dpy, GLXContext ctx) {
    glx_destroy_fn real = REAL_FN(glXDestroyContext, glx_destroy_fn);
    if (!real)
        return missing(F_glXDestroyContext);
    if (RECORDING())
        context_destroyed(ctx);
    real(dpy, ctx);
}

typedef EGLBoolean (*egl_destroy_fn)(EGLDisplay, EGLContext);
EXPORT EGLBoolean eglDestroyContext(EGLDisplay dpy, EGLContext ctx) {
    egl_destroy_fn real = REAL_FN(eglDestroyContext, egl_destroy_fn);
    if (!real)
        return missing(F_eglDestroyContext), 0;
    EGLBoolean r = real(dpy, ctx);
    if (r && RECORDING())
        context_destroyed(ctx);
    return r;
}

/* ---- the roads to GL: GetProcAddress and dlsym ------------------------------------------------------ */
/* The wrapper to hand out for ``name`` found as ``p``, or ``p`` itself. */
static void *wrap_found(const char *name, void *p) {
    if (!p || !atomic_load_explicit(&g_on, memory_order_relaxed))
        return p;
    int idx = name_index(name);
    if (idx < 0)
        return p;
    learn_real(idx, p, 1);
    return WRAPPER[idx];
}

typedef any_fn (*gpa_fn)(const GLubyte *);
static any_fn get_proc(int fn, const GLubyte *name) {
    gpa_fn real = (gpa_fn)real_of(fn);
    if (!real)
        return missing(fn), NULL;
    any_fn p = real(name);
    if (!p || t_depth || !atomic_load_explicit(&g_on, memory_order_relaxed))
        return p;
    getctx_fn _Atomic *slot = fn == F_eglGetProcAddress ? &real_egl_getctx : &real_glx_getctx;
    if (!atomic_load(slot)) {
        void *getter = (void *)real((const GLubyte *)(fn == F_eglGetProcAddress ? "eglGetCurrentContext"
                                                                                : "glXGetCurrentContext"));
        getctx_fn expected = NULL;
        if (getter && atomic_compare_exchange_strong(slot, &expected, (getctx_fn)getter))
            pin_library(getter);
    }
    return (any_fn)wrap_found((const char *)name, (void *)p);
}

EXPORT any_fn glXGetProcAddress(const GLubyte *name) { return get_proc(F_glXGetProcAddress, name); }
EXPORT any_fn glXGetProcAddressARB(const GLubyte *name) { return get_proc(F_glXGetProcAddressARB, name); }
EXPORT any_fn eglGetProcAddress(const char *name) { return get_proc(F_eglGetProcAddress, (const GLubyte *)name); }

/* Whether ``path`` names one of the GL API libraries programs look GL up in (not a vendor library
 * such as libGLX_mesa or libEGL_mesa: glvnd's own lookups stay unwrapped). */
static int is_gl_name(const char *path) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    static const char *const libs[] = {"libGL.so", "libEGL.so", "libOpenGL.so", "libGLX.so", "libGLESv2.so"};
    for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++)
        if (strncmp(base, libs[i], strlen(libs[i])) == 0)
            return 1;
    return 0;
}

static int is_gl_library(void *handle) {
    struct link_map *map = NULL;
    return dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && is_gl_name(map->l_name);
}

/* The lookup of entry point ``idx`` in ``handle``: a GL library's function swapped for its wrapper.
 * A lookup in the global scope (RTLD_DEFAULT, the program's own handle) finds this library's export
 * first: it is handed out only where the program would have found the function without this
 * library (after it in the global scope), else NULL, as the program would have had. */
static void *__attribute__((noinline)) dlsym_gl(dlsym_fn real, void *handle, const char *name, int idx) {
    void *p = real(handle, name);
    if (!p)
        return p;
    if (p == WRAPPER[idx]) {
        void *next = real(RTLD_NEXT, name);
        if (!next)
            return NULL;
        learn_real(idx, next, 0);
        return p;
    }
    if (!atomic_load_explicit(&g_on, memory_order_relaxed) || t_depth || !is_gl_library(handle))
        return p;
    learn_getters((void *(*)(void *, const char *))real, handle, 1);
    return wrap_found(name, p);
}

static void init(void);

EXPORT void *dlsym(void *restrict handle, const char *restrict name) {
    pthread_once(&init_once, init);
    dlsym_fn real = real_dlsym();
    int idx;
    if (handle == RTLD_NEXT || (idx = name_index(name)) < 0)
        return real(handle, name); /* a tail call: glibc resolves RTLD_NEXT from the caller's address */
    return dlsym_gl(real, handle, name, idx);
}

/* ---- start-up and fork ------------------------------------------------------------------------------ */
static void after_fork_child(void) {
    atomic_store(&g_pid, (long)getpid());
    t_tid = 0;
    pthread_mutex_init(&g_hello_lock, NULL);
    atomic_store(&g_hello_done, 0); /* a new process: a new record stream, its hello first */
}

static void init(void) {
#define AS_WRAPPER(name) WRAPPER[F_##name] = (void *)&name;
    ENTRY_POINTS(AS_WRAPPER)
    atomic_store(&g_pid, (long)getpid());
    dlsym_fn ds = real_dlsym();
    if (ds)
        learn_getters((void *(*)(void *, const char *))ds, RTLD_NEXT, 0);
    const char *env = getenv("GLSHARE_ATTACH_FD");
    if (!env || !*env)
        return;
    int why;
    g_fd = glshare_channel(env, &g_is_socket, &why);
    if (g_fd < 0)
        return; /* not glshare's channel in this process (channel.h): nothing is recorded */
    pthread_atfork(NULL, NULL, after_fork_child);
    atomic_store(&g_on, 1); /* "hello" comes with the first record: a process that makes no GL call writes none */
}

__attribute__((constructor)) static void glshare_gl_preload_start(void) { pthread_once(&init_once, init); }
