/* glshare attach: the Python file and line a call comes from, where the process is a Python
 * interpreter (issue 39: "file and line for Python programs; the return address otherwise").
 * Included by both libraries; a call record gets ``"py": {"file":..., "line":..., "func":...}``
 * (app/attach/wire.py).
 *
 * The CPython C API is looked up once, lazily, in the global scope (a process that is no Python, or
 * whose libpython was loaded RTLD_LOCAL, has none of it: no "py"). Every function used is a function
 * of CPython 3.9 to 3.13's C API (PyFrame_GetBack and PyFrame_GetCode since 3.9).
 *
 * Invariants:
 * - Python is read only where this thread holds the GIL already: PyGILState_Check() says so and this
 *   thread's GIL state is the interpreter's current thread state (PyGILState_Check answers 1 without
 *   looking where the check is off, after a sub-interpreter was made). The GIL is never taken: a call
 *   made with it released (pyopencl's blocking calls, every ctypes call: PyOpenGL, glfw) has no "py".
 * - Nothing runs while the interpreter is not initialized or is finalizing, or while the thread has an
 *   exception set (the program's error indicator is never touched; one this code causes is cleared).
 * - No Python code runs: the collector is off during the walk (PyGC_Disable, 3.10+: a frame object
 *   made for the walk cannot start a collection whose finalizers would run), and only code objects'
 *   and modules' plain attributes are read.
 * - The frame named is the innermost one whose file is not pyopencl's (its folder, and the invokers it
 *   generates for kernels), PyOpenGL's (OpenGL/), glfw's, the standard library's (the folder of os.py,
 *   less its site-packages and dist-packages) or glshare's own site hook's (app/attach/pyhook): the
 *   program's own line. Each code object's answer is cached
 *   with a reference held on it (its address is never reused while cached), under the GIL and a flag
 *   that is taken, never waited for. */
#ifndef GLSHARE_ATTACH_PYSITE_H
#define GLSHARE_ATTACH_PYSITE_H

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define PYSITE_MAX 1400   /* the longest "py" piece: a longer file name gives none (never a cut name) */
#define PYSITE_DEPTH 64   /* frames walked at most */
#define PYSITE_CACHE 1024 /* code objects remembered (a power of two); past it each is looked at anew */
#define PYSITE_LINES 8    /* lines remembered per cached code object (PyFrame_GetLineNumber scans the line table) */
#define PYDIR_DIR 1024   /* a library folder's longest name */
/* glshare's site hook (app/attach/launch.py's HOOK_DIR): its wrapper's frame is never the program's */
#define PYSITE_HOOK "/attach/pyhook/sitecustomize.py"
/* the file name of the code pyopencl generates for a kernel's __call__ (its invoker, made by pytools'
 * py_codegen, which names generated code "<generated: 'PREFIX-DIGEST'>"): pyopencl's, not the program's */
#define PYSITE_PYOPENCL_GENERATED "<generated: 'pyopencl "

typedef void *(*pysite_lookup_fn)(void *, const char *);
typedef void *pyobj;

static struct {
    int (*gil_check)(void);
    pyobj (*gil_tstate)(void);  /* PyGILState_GetThisThreadState */
    pyobj (*cur_tstate)(void);  /* PyThreadState_GetUnchecked (3.13), _PyThreadState_UncheckedGet before */
    int (*initialized)(void);
    int (*finalizing)(void);    /* Py_IsFinalizing (3.13), _Py_IsFinalizing before */
    pyobj (*get_frame)(void);   /* borrowed */
    pyobj (*frame_back)(pyobj); /* new reference */
    int (*frame_line)(pyobj);
    int (*frame_lasti)(pyobj);  /* PyFrame_GetLasti (3.11+): the line cache's key; absent before */
    pyobj (*frame_code)(pyobj); /* new reference */
    pyobj (*getattr)(pyobj, const char *);
    const char *(*utf8)(pyobj);
    void (*incref)(pyobj);
    void (*decref)(pyobj);
    pyobj (*err_occurred)(void);
    void (*err_clear)(void);
    int (*gc_disable)(void);
    int (*gc_enable)(void);
    pyobj (*sys_get)(const char *);          /* PySys_GetObject: borrowed */
    pyobj (*dict_get)(pyobj, const char *);  /* PyDict_GetItemString: borrowed, sets no error */
} py;
static int py_ready; /* the API was found: this process is a Python interpreter */
static _Atomic(pysite_lookup_fn) py_lookup;
/* the cache and the folders: taken, never waited for (a call into this code on the same thread while
 * it walks, or a free-threaded build's other thread, gets no "py" rather than waiting) */
static atomic_flag py_busy = ATOMIC_FLAG_INIT;
static pthread_once_t py_once = PTHREAD_ONCE_INIT;

static void py_find(void)
{
#define PY_FIND(field, name) *(void **)&py.field = py_lookup(RTLD_DEFAULT, name)
    PY_FIND(gil_check, "PyGILState_Check");
    PY_FIND(gil_tstate, "PyGILState_GetThisThreadState");
    PY_FIND(cur_tstate, "PyThreadState_GetUnchecked");
    if (!py.cur_tstate)
        PY_FIND(cur_tstate, "_PyThreadState_UncheckedGet");
    PY_FIND(initialized, "Py_IsInitialized");
    PY_FIND(finalizing, "Py_IsFinalizing");
    if (!py.finalizing)
        PY_FIND(finalizing, "_Py_IsFinalizing");
    PY_FIND(get_frame, "PyEval_GetFrame");
    PY_FIND(frame_back, "PyFrame_GetBack");
    PY_FIND(frame_line, "PyFrame_GetLineNumber");
    PY_FIND(frame_lasti, "PyFrame_GetLasti");
    PY_FIND(frame_code, "PyFrame_GetCode");
    PY_FIND(getattr, "PyObject_GetAttrString");
    PY_FIND(utf8, "PyUnicode_AsUTF8");
    PY_FIND(incref, "Py_IncRef");
    PY_FIND(decref, "Py_DecRef");
    PY_FIND(err_occurred, "PyErr_Occurred");
    PY_FIND(err_clear, "PyErr_Clear");
    PY_FIND(gc_disable, "PyGC_Disable");
    PY_FIND(gc_enable, "PyGC_Enable");
    PY_FIND(sys_get, "PySys_GetObject");
    PY_FIND(dict_get, "PyDict_GetItemString");
#undef PY_FIND
    py_ready = py.gil_check && py.gil_tstate && py.cur_tstate && py.initialized && py.finalizing && py.get_frame
        && py.frame_back && py.frame_line && py.frame_code && py.getattr && py.utf8 && py.incref && py.decref
        && py.err_occurred && py.err_clear && py.sys_get && py.dict_get;
}

/* ---- which files are libraries (all of this under the GIL) ---------------------------------------- */

enum { PYDIR_PYOPENCL, PYDIR_OPENGL, PYDIR_GLFW, PYDIR_STDLIB, PYDIR_COUNT };
static const char *const PYDIR_MODULE[PYDIR_COUNT] = {"pyopencl", "OpenGL", "glfw", "os"};
static char py_dirs[PYDIR_COUNT][PYDIR_DIR]; /* each module's folder with its '/', "" until imported */

typedef struct {
    pyobj code;       /* a reference is held: the address stays this code object's */
    int library;
    const char *file; /* UTF-8 of the code object's own co_filename and co_name (live while it does) */
    const char *func;
    int lasti[PYSITE_LINES]; /* the lines of the last instructions seen, by instruction (-1: none) */
    int line[PYSITE_LINES];
} py_code_t;
static py_code_t py_cache[PYSITE_CACHE];
static unsigned py_cached;

/* A string attribute's UTF-8, or NULL (an error it caused is cleared); *ref: the new reference. */
static const char *py_str_attr(pyobj o, const char *name, pyobj *ref)
{
    *ref = py.getattr(o, name);
    const char *s = *ref ? py.utf8(*ref) : NULL; /* NULL for a non-str attribute (None) */
    if (!s)
        py.err_clear();
    return s;
}

static void py_find_dirs(void)
{
    pyobj modules = py.sys_get("modules");
    for (int i = 0; i < PYDIR_COUNT; i++) {
        if (py_dirs[i][0] || !modules)
            continue;
        pyobj mod = py.dict_get(modules, PYDIR_MODULE[i]);
        if (!mod)
            continue;
        pyobj ref;
        const char *file = py_str_attr(mod, "__file__", &ref);
        const char *slash = file ? strrchr(file, '/') : NULL;
        if (slash && (size_t)(slash - file) + 2 <= PYDIR_DIR) {
            memcpy(py_dirs[i], file, (size_t)(slash - file) + 1);
            py_dirs[i][slash - file + 1] = 0;
        }
        if (ref)
            py.decref(ref);
    }
}

static int py_starts(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

static int py_library_file(const char *file)
{
    size_t n = strlen(file), h = sizeof PYSITE_HOOK - 1;
    if (py_starts(file, "<frozen ") || py_starts(file, PYSITE_PYOPENCL_GENERATED)
        || (n >= h && strcmp(file + n - h, PYSITE_HOOK) == 0))
        return 1;
    for (int i = 0; i < PYDIR_COUNT; i++) {
        if (!py_dirs[i][0] || !py_starts(file, py_dirs[i]))
            continue;
        if (i != PYDIR_STDLIB)
            return 1;
        const char *rest = file + strlen(py_dirs[i]);
        if (!py_starts(rest, "site-packages/") && !py_starts(rest, "dist-packages/"))
            return 1;
    }
    return 0;
}

/* The cached answer for a code object (taking over the reference ``code``), or a temporary one in
 * *tmp (whose reference the caller drops) where the cache is full; NULL where its file is unknown. */
static py_code_t *py_code_info(pyobj code, py_code_t *tmp)
{
    uintptr_t k = (uintptr_t)code;
    unsigned h = (unsigned)((k >> 4) ^ (k >> 14)) & (PYSITE_CACHE - 1);
    for (unsigned probe = 0; probe < PYSITE_CACHE; probe++, h = (h + 1) & (PYSITE_CACHE - 1)) {
        if (py_cache[h].code == code) {
            py.decref(code); /* the cache holds its own */
            return &py_cache[h];
        }
        if (!py_cache[h].code)
            break;
    }
    pyobj file_ref, func_ref;
    const char *file = py_str_attr(code, "co_filename", &file_ref);
    const char *func = py_str_attr(code, "co_name", &func_ref);
    /* co_filename and co_name are the code object's own (read-only) members: their UTF-8 lives as long */
    if (file_ref)
        py.decref(file_ref);
    if (func_ref)
        py.decref(func_ref);
    if (!file) {
        py.decref(code);
        return NULL;
    }
    py_find_dirs();
    py_code_t info = {code, py_library_file(file), file, func ? func : "?", {0}, {0}};
    for (int i = 0; i < PYSITE_LINES; i++)
        info.lasti[i] = -1;
    if (py_cached * 4 >= PYSITE_CACHE * 3 || py_cache[h].code) { /* full enough: not cached */
        *tmp = info;
        return tmp;
    }
    py_cache[h] = info;
    py_cached++;
    return &py_cache[h];
}

/* JSON string of s (quotes included) into t, at most room bytes; 0 where it does not fit. */
static size_t py_json(char *t, size_t room, const char *s)
{
    size_t n = 0;
    if (room < 2)
        return 0;
    t[n++] = '"';
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (n + 8 > room)
            return 0;
        if (*c == '"' || *c == '\\') {
            t[n++] = '\\';
            t[n++] = (char)*c;
        } else if (*c < 0x20) {
            n += (size_t)snprintf(t + n, room - n, "\\u%04x", *c);
        } else {
            t[n++] = (char)*c;
        }
    }
    t[n++] = '"';
    return n;
}

/* ``,"py":{"file":...,"line":N,"func":...}`` into out (PYSITE_MAX bytes) for the calling thread's
 * Python frame, returning its length; 0 where there is none (see the invariants above). ``lookup``
 * finds a symbol in the global scope (dlsym, or the real one where dlsym is interposed). */
static size_t glshare_pysite(char *out, pysite_lookup_fn lookup)
{
    if (!atomic_load_explicit(&py_lookup, memory_order_relaxed)) {
        pysite_lookup_fn none = NULL;
        atomic_compare_exchange_strong(&py_lookup, &none, lookup); /* the same function from every thread */
    }
    pthread_once(&py_once, py_find);
    if (!py_ready || !py.initialized() || py.finalizing() || !py.gil_check())
        return 0;
    pyobj me = py.gil_tstate();
    if (!me || py.cur_tstate() != me || py.err_occurred())
        return 0;
    if (atomic_flag_test_and_set_explicit(&py_busy, memory_order_acquire))
        return 0;
    int gc_was = py.gc_disable && py.gc_enable ? py.gc_disable() : 0;
    pyobj frame = py.get_frame(), own = NULL; /* own: the reference to drop (get_frame's is borrowed) */
    py_code_t *found = NULL;
    py_code_t tmp = {0};
    int line = 0;
    for (int walked = 0; frame && walked < PYSITE_DEPTH && !found; walked++) {
        pyobj code = py.frame_code(frame);
        py_code_t *info = code ? py_code_info(code, &tmp) : NULL;
        if (info && !info->library) {
            found = info;
            int lasti = py.frame_lasti && info != &tmp ? py.frame_lasti(frame) : -1;
            int slot = lasti & (PYSITE_LINES - 1);
            if (lasti >= 0 && info->lasti[slot] == lasti) {
                line = info->line[slot];
            } else {
                line = py.frame_line(frame);
                if (lasti >= 0) {
                    info->lasti[slot] = lasti;
                    info->line[slot] = line;
                }
            }
        } else {
            if (info == &tmp)
                py.decref(tmp.code);
            pyobj back = py.frame_back(frame);
            if (own)
                py.decref(own);
            frame = own = back;
        }
    }
    size_t n = 0;
    if (found) {
        static const char head[] = ",\"py\":{\"file\":";
        memcpy(out, head, sizeof head - 1);
        n = sizeof head - 1;
        size_t f = py_json(out + n, PYSITE_MAX - 200, found->file);
        if (f) {
            n += f;
            static const char line_key[] = ",\"line\":", func_key[] = ",\"func\":";
            memcpy(out + n, line_key, sizeof line_key - 1);
            n += sizeof line_key - 1;
            char digits[12];
            int d = 0;
            unsigned v = line > 0 ? (unsigned)line : 0;
            do {
                digits[d++] = (char)('0' + v % 10);
                v /= 10;
            } while (v);
            while (d)
                out[n++] = digits[--d];
            memcpy(out + n, func_key, sizeof func_key - 1);
            n += sizeof func_key - 1;
            size_t g = py_json(out + n, PYSITE_MAX - n - 2, found->func);
            n = g ? n + g : 0;
            if (n)
                out[n++] = '}';
        } else {
            n = 0;
        }
        if (found == &tmp)
            py.decref(tmp.code);
    }
    if (own)
        py.decref(own);
    if (gc_was)
        py.gc_enable();
    atomic_flag_clear_explicit(&py_busy, memory_order_release);
    return n;
}

#endif
