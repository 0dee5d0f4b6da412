/* dlsym as a program sees it under the GL preload library (tests/attach/test_gl_preload.py).
 * Built four times: -DPROBE_LIB=1 and -DPROBE_LIB=2 give libprobe1.so / libprobe2.so, each
 * defining probe() (returning 1 or 2); libprobe1.so also defines next_probe(), which calls the
 * probe() after its own one, found with dlsym(RTLD_NEXT): 2, where dlsym resolves RTLD_NEXT from
 * its caller's object as glibc does (an interposed dlsym that called the real one as a plain call
 * would make it resolve from the preload library's place, finding libprobe1's own: 1).
 * -DPROBE_LIB=3 gives libprobe3.so, linked against libOpenGL.so.0, whose probe_gl_finish() calls
 * glFinish directly: the program dlopen()s it RTLD_LOCAL, so its libOpenGL is outside the global
 * scope (as a Python extension linking libOpenGL is).
 * Without PROBE_LIB: the program, linked against libprobe1 and libprobe2 (in that order); prints
 * one JSON line: next (next_probe()), whether dlerror() is clear after a successful lookup of
 * glFinish in libOpenGL.so.0 (dlopen()ed RTLD_LOCAL) and set after a failed lookup there, and
 * whether dlsym(RTLD_DEFAULT, "glFinish") found one (it must not: no GL library is global).
 * With no context current (GL calls are no-ops, OpenGL through glvnd), so that the calls show in
 * the records: first of all libprobe3's probe_gl_finish(); then the glFinish it found,
 * glDeleteBuffers with NAMES names (its record has no room for them all); forks, and the child
 * calls glFinish too (a new process: a record stream of its own). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#define NAMES 2000

#if defined(PROBE_LIB) && PROBE_LIB == 3
extern void glFinish(void);
void probe_gl_finish(void) { glFinish(); }
#elif defined(PROBE_LIB)
int probe(void) { return PROBE_LIB; }
#if PROBE_LIB == 1
int next_probe(void) {
    int (*next)(void) = (int (*)(void))dlsym(RTLD_NEXT, "probe");
    return next ? next() : 0;
}
#endif
#else
int next_probe(void);

int main(void) {
    /* first, before any lookup of glFinish: the call bound to the export finds its way alone */
    void *probe3 = dlopen("libprobe3.so", RTLD_NOW | RTLD_LOCAL);
    void (*probe_gl_finish)(void) = probe3 ? (void (*)(void))dlsym(probe3, "probe_gl_finish") : NULL;
    if (!probe_gl_finish)
        return 1;
    probe_gl_finish();
    void *gl = dlopen("libOpenGL.so.0", RTLD_NOW | RTLD_LOCAL);
    dlerror();
    void *found = gl ? dlsym(gl, "glFinish") : NULL;
    int clear_after_found = found && dlerror() == NULL;
    void *missing = gl ? dlsym(gl, "glshareNoSuchFunction") : NULL;
    int set_after_missing = !missing && dlerror() != NULL;
    int default_found = dlsym(RTLD_DEFAULT, "glFinish") != NULL;
    printf("{\"next\":%d,\"clear_after_found\":%s,\"set_after_missing\":%s,\"default_found\":%s}\n",
           next_probe(), clear_after_found ? "true" : "false", set_after_missing ? "true" : "false",
           default_found ? "true" : "false");
    fflush(stdout);
    if (!found)
        return 1;
    ((void (*)(void))found)();
    void (*delete_buffers)(int, const unsigned *) = (void (*)(int, const unsigned *))dlsym(gl, "glDeleteBuffers");
    static unsigned names[NAMES];
    for (unsigned i = 0; i < NAMES; i++)
        names[i] = i + 1;
    if (!delete_buffers)
        return 1;
    delete_buffers(NAMES, names);
    pid_t child = fork();
    if (child == 0) {
        ((void (*)(void))found)();
        _exit(0);
    }
    int status = 0;
    return child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
#endif
