/* A small GL program for tests/attach/test_gl_preload.py: draws a textured, indexed quad into a
 * framebuffer object for FRAMES frames (with glDrawElements, glDrawArrays, their Instanced forms,
 * then glDrawElementsBaseVertex), swapping a 64x64 pbuffer (an X window with glx) after each, with
 * a fence and glFinish in the last frame, then deletes its objects. It reaches
 * GL on the road named by its first argument (no GL headers: the few types are declared here):
 *   direct  exported symbols of libEGL.so.1 / libOpenGL.so.0, linked (LD_PRELOAD interposition)
 *   gpa     the GL functions through eglGetProcAddress
 *   dlsym   dlopen("libEGL.so.1"), dlopen("libOpenGL.so.0") and dlsym for every function
 *   glx     an X display (Xvfb): dlsym(libGL, "glXGetProcAddressARB"), then everything through it
 *   threads dlsym's road; THREADS threads each draw the scene on a context of their own, at once
 * Usage: gl_getproc MODE PIXELS_OUT [bench N]. Prints the object names as one JSON line; writes
 * the last frame's RGBA pixels to PIXELS_OUT; "bench N" then times N glDeleteSync(0) (a no-op,
 * OpenGL 4.6 core 4.1.3) and prints the mean wall and thread-CPU nanoseconds per call: under the
 * preload library with GLSHARE_ATTACH_FD, the cost of one recorded call. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef unsigned int GLenum, GLuint, GLbitfield;
typedef int GLint, GLsizei;
typedef unsigned char GLboolean;
typedef intptr_t GLintptr, GLsizeiptr;
typedef void *GLsync;
typedef void *EGLDisplay, *EGLSurface, *EGLContext, *EGLConfig;
typedef unsigned int EGLBoolean;
typedef int EGLint;

#define FRAMES 5
#define SIZE 64

/* every GL function used: return type, name, parameters */
#define GL_FUNCS(X)                                                                                  \
    X(void, glClearColor, (float, float, float, float))                                             \
    X(void, glClear, (GLbitfield))                                                                   \
    X(void, glViewport, (GLint, GLint, GLsizei, GLsizei))                                            \
    X(GLuint, glCreateShader, (GLenum))                                                              \
    X(void, glShaderSource, (GLuint, GLsizei, const char *const *, const GLint *))                   \
    X(void, glCompileShader, (GLuint))                                                               \
    X(GLuint, glCreateProgram, (void))                                                               \
    X(void, glAttachShader, (GLuint, GLuint))                                                        \
    X(void, glLinkProgram, (GLuint))                                                                 \
    X(void, glUseProgram, (GLuint))                                                                  \
    X(GLint, glGetUniformLocation, (GLuint, const char *))                                           \
    X(void, glUniform1i, (GLint, GLint))                                                             \
    X(void, glGetProgramiv, (GLuint, GLenum, GLint *))                                               \
    X(void, glGenVertexArrays, (GLsizei, GLuint *))                                                  \
    X(void, glBindVertexArray, (GLuint))                                                             \
    X(void, glDeleteVertexArrays, (GLsizei, const GLuint *))                                         \
    X(void, glGenBuffers, (GLsizei, GLuint *))                                                       \
    X(void, glBindBuffer, (GLenum, GLuint))                                                          \
    X(void, glBufferData, (GLenum, GLsizeiptr, const void *, GLenum))                                \
    X(void, glBufferSubData, (GLenum, GLintptr, GLsizeiptr, const void *))                           \
    X(void *, glMapBufferRange, (GLenum, GLintptr, GLsizeiptr, GLbitfield))                          \
    X(void *, glMapBuffer, (GLenum, GLenum))                                                         \
    X(GLboolean, glUnmapBuffer, (GLenum))                                                            \
    X(void, glDeleteBuffers, (GLsizei, const GLuint *))                                              \
    X(void, glVertexAttribPointer, (GLuint, GLint, GLenum, GLboolean, GLsizei, const void *))        \
    X(void, glEnableVertexAttribArray, (GLuint))                                                     \
    X(void, glGenTextures, (GLsizei, GLuint *))                                                      \
    X(void, glActiveTexture, (GLenum))                                                               \
    X(void, glBindTexture, (GLenum, GLuint))                                                         \
    X(void, glTexParameteri, (GLenum, GLenum, GLint))                                                \
    X(void, glTexImage2D, (GLenum, GLint, GLint, GLsizei, GLsizei, GLint, GLenum, GLenum, const void *)) \
    X(void, glTexSubImage2D, (GLenum, GLint, GLint, GLint, GLsizei, GLsizei, GLenum, GLenum, const void *)) \
    X(void, glDeleteTextures, (GLsizei, const GLuint *))                                             \
    X(void, glGenRenderbuffers, (GLsizei, GLuint *))                                                 \
    X(void, glBindRenderbuffer, (GLenum, GLuint))                                                    \
    X(void, glRenderbufferStorage, (GLenum, GLenum, GLsizei, GLsizei))                               \
    X(void, glGenFramebuffers, (GLsizei, GLuint *))                                                  \
    X(void, glBindFramebuffer, (GLenum, GLuint))                                                     \
    X(void, glFramebufferRenderbuffer, (GLenum, GLenum, GLenum, GLuint))                             \
    X(GLenum, glCheckFramebufferStatus, (GLenum))                                                    \
    X(void, glDeleteFramebuffers, (GLsizei, const GLuint *))                                         \
    X(void, glDeleteRenderbuffers, (GLsizei, const GLuint *))                                        \
    X(void, glDrawArrays, (GLenum, GLint, GLsizei))                                                  \
    X(void, glDrawElements, (GLenum, GLsizei, GLenum, const void *))                                 \
    X(void, glDrawArraysInstanced, (GLenum, GLint, GLsizei, GLsizei))                                \
    X(void, glDrawElementsBaseVertex, (GLenum, GLsizei, GLenum, const void *, GLint))                \
    X(void, glDrawElementsInstanced, (GLenum, GLsizei, GLenum, const void *, GLsizei))               \
    X(GLsync, glFenceSync, (GLenum, GLbitfield))                                                     \
    X(GLenum, glClientWaitSync, (GLsync, GLbitfield, uint64_t))                                      \
    X(void, glWaitSync, (GLsync, GLbitfield, uint64_t))                                              \
    X(void, glDeleteSync, (GLsync))                                                                  \
    X(void, glFlush, (void))                                                                         \
    X(void, glFinish, (void))                                                                        \
    X(void, glReadPixels, (GLint, GLint, GLsizei, GLsizei, GLenum, GLenum, void *))                  \
    X(GLenum, glGetError, (void))

#define EGL_FUNCS(X)                                                                                 \
    X(EGLDisplay, eglGetPlatformDisplay, (GLenum, void *, const intptr_t *))                         \
    X(EGLDisplay, eglGetDisplay, (void *))                                                           \
    X(EGLBoolean, eglInitialize, (EGLDisplay, EGLint *, EGLint *))                                   \
    X(EGLBoolean, eglBindAPI, (GLenum))                                                              \
    X(EGLBoolean, eglChooseConfig, (EGLDisplay, const EGLint *, EGLConfig *, EGLint, EGLint *))      \
    X(EGLSurface, eglCreatePbufferSurface, (EGLDisplay, EGLConfig, const EGLint *))                  \
    X(EGLContext, eglCreateContext, (EGLDisplay, EGLConfig, EGLContext, const EGLint *))             \
    X(EGLBoolean, eglMakeCurrent, (EGLDisplay, EGLSurface, EGLSurface, EGLContext))                  \
    X(EGLBoolean, eglSwapBuffers, (EGLDisplay, EGLSurface))                                          \
    X(EGLBoolean, eglTerminate, (EGLDisplay))                                                        \
    X(void *, eglGetProcAddress, (const char *))

#define GLX_FUNCS(X)                                                                                 \
    X(void **, glXChooseFBConfig, (void *, int, const int *, int *))                                 \
    X(int, glXGetFBConfigAttrib, (void *, void *, int, int *))                                       \
    X(void *, glXCreateNewContext, (void *, void *, int, void *, int))                               \
    X(int, glXMakeCurrent, (void *, unsigned long, void *))                                          \
    X(void, glXSwapBuffers, (void *, unsigned long))

#define AS_FIELD(r, name, params) r(*name) params;
static struct {
    GL_FUNCS(AS_FIELD) EGL_FUNCS(AS_FIELD) GLX_FUNCS(AS_FIELD)
} f;

#ifdef GL_LINKED /* built linked against libEGL.so.1 and libOpenGL.so.0 */
#define AS_EXTERN(r, name, params) extern r name params;
GL_FUNCS(AS_EXTERN)
EGL_FUNCS(AS_EXTERN)
#endif

static void die(const char *what) {
    fprintf(stderr, "gl_getproc: %s\n", what);
    exit(1);
}

static void *need(void *p, const char *name) {
    if (!p) {
        fprintf(stderr, "gl_getproc: no %s\n", name);
        exit(1);
    }
    return p;
}

static void *lib_handle(const char *name) {
    void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    return need(h, name);
}

typedef void *(*gpa_t)(const char *);
static gpa_t glx_gpa;
static void *gpa_glx(const char *name) { return glx_gpa(name); }

static void load(const char *mode) {
    if (strcmp(mode, "direct") == 0 || strcmp(mode, "gpa") == 0) {
#ifdef GL_LINKED
#define FROM_LINK(r, name, params) f.name = &name;
#define FROM_GPA(r, name, params) f.name = (r(*) params)need(eglGetProcAddress(#name), #name);
        EGL_FUNCS(FROM_LINK)
        if (strcmp(mode, "direct") == 0) {
            GL_FUNCS(FROM_LINK)
        } else {
            GL_FUNCS(FROM_GPA)
        }
        return;
#else
        die("built without GL_LINKED");
#endif
    }
    if (strcmp(mode, "dlsym") == 0) {
        void *egl = lib_handle("libEGL.so.1"), *gl = lib_handle("libOpenGL.so.0");
#define FROM_EGL(r, name, params) f.name = (r(*) params)need(dlsym(egl, #name), #name);
#define FROM_GL(r, name, params) f.name = (r(*) params)need(dlsym(gl, #name), #name);
        EGL_FUNCS(FROM_EGL)
        GL_FUNCS(FROM_GL)
        return;
    }
    if (strcmp(mode, "glx") == 0) {
        void *gl = lib_handle("libGL.so.1");
        glx_gpa = (gpa_t)need(dlsym(gl, "glXGetProcAddressARB"), "glXGetProcAddressARB");
#define FROM_GLX(r, name, params) f.name = (r(*) params)need(gpa_glx(#name), #name);
        GL_FUNCS(FROM_GLX)
        GLX_FUNCS(FROM_GLX)
        return;
    }
    die("mode: direct, gpa, dlsym or glx");
}

static EGLDisplay egl_display;
static EGLConfig egl_config;
static __thread EGLSurface egl_surface;

/* Mesa's surfaceless platform, else the default display (NVIDIA's EGL answers that one). */
static void open_egl_display(void) {
    EGLDisplay dpy = f.eglGetPlatformDisplay(0x31DD /* EGL_PLATFORM_SURFACELESS_MESA */, NULL, NULL);
    EGLint major, minor, n = 0;
    if (!dpy || !f.eglInitialize(dpy, &major, &minor)) {
        dpy = f.eglGetDisplay(NULL /* EGL_DEFAULT_DISPLAY */);
        if (!dpy || !f.eglInitialize(dpy, &major, &minor))
            die("eglInitialize");
    }
    f.eglBindAPI(0x30A2 /* EGL_OPENGL_API */);
    const EGLint attrs[] = {0x3033, 0x0001, /* EGL_SURFACE_TYPE: PBUFFER_BIT */ 0x3040, 0x0008, /* RENDERABLE: OPENGL */
                            0x3024, 8, 0x3023, 8, 0x3022, 8, 0x3021, 8, 0x3038};
    if (!f.eglChooseConfig(dpy, attrs, &egl_config, 1, &n) || n < 1)
        die("eglChooseConfig");
    egl_display = dpy;
}

/* A pbuffer and a 3.3 core context, current on the calling thread. */
static void open_egl_context(void) {
    const EGLint pb[] = {0x3057, SIZE, 0x3056, SIZE, 0x3038}; /* EGL_WIDTH, EGL_HEIGHT */
    EGLSurface surf = f.eglCreatePbufferSurface(egl_display, egl_config, pb);
    const EGLint ca[] = {0x3098, 3, 0x30FB, 3, 0x30FD, 1, 0x3038}; /* 3.3 core */
    f.eglBindAPI(0x30A2 /* EGL_OPENGL_API: per thread */);
    EGLContext ctx = f.eglCreateContext(egl_display, egl_config, NULL, ca);
    if (!surf || !ctx || !f.eglMakeCurrent(egl_display, surf, surf, ctx))
        die("eglMakeCurrent");
    egl_surface = surf;
}

static void *x_display;
static unsigned long x_window;

/* A 64x64 X window of the screen's default visual and a GLX context of a config of that visual
 * (a pbuffer's swap fails in Mesa's X11 software path: BadMatch in XShmPutImage). */
static void open_glx(void) {
    void *x11 = lib_handle("libX11.so.6");
#define X_FN(r, name, params) r(*name) params = (r(*) params)need(dlsym(x11, #name), #name);
    X_FN(void *, XOpenDisplay, (const char *))
    X_FN(int, XDefaultScreen, (void *))
    X_FN(void *, XDefaultVisual, (void *, int))
    X_FN(unsigned long, XVisualIDFromVisual, (void *))
    X_FN(unsigned long, XRootWindow, (void *, int))
    X_FN(unsigned long, XCreateSimpleWindow, (void *, unsigned long, int, int, unsigned, unsigned, unsigned,
                                              unsigned long, unsigned long))
    x_display = need(XOpenDisplay(NULL), "X display");
    int screen = XDefaultScreen(x_display);
    unsigned long visual = XVisualIDFromVisual(XDefaultVisual(x_display, screen));
    const int attrs[] = {0x8010, 0x1, /* GLX_DRAWABLE_TYPE: WINDOW_BIT */ 0x8011, 0x1, /* RENDER_TYPE: RGBA_BIT */
                         5, 1, /* GLX_DOUBLEBUFFER */ 8, 8, 9, 8, 10, 8, 0};
    int n = 0, id = 0;
    void **cfgs = f.glXChooseFBConfig(x_display, screen, attrs, &n);
    void *cfg = NULL;
    for (int i = 0; i < n && !cfg; i++)
        if (f.glXGetFBConfigAttrib(x_display, cfgs[i], 0x800B /* GLX_VISUAL_ID */, &id) == 0 && (unsigned long)id == visual)
            cfg = cfgs[i];
    if (!cfg)
        die("no GLX config of the default visual");
    x_window = XCreateSimpleWindow(x_display, XRootWindow(x_display, screen), 0, 0, SIZE, SIZE, 0, 0, 0);
    void *ctx = f.glXCreateNewContext(x_display, cfg, 0x8014 /* GLX_RGBA_TYPE */, NULL, 1);
    if (!x_window || !ctx || !f.glXMakeCurrent(x_display, x_window, ctx))
        die("glXMakeCurrent");
}

static const char *VS = "#version 330 core\n"
                        "layout(location=0) in vec2 pos; layout(location=1) in vec2 uv; out vec2 v_uv;\n"
                        "void main() { v_uv = uv; gl_Position = vec4(pos * (1.0 - 0.1 * gl_InstanceID), 0, 1); }\n";
static const char *FS = "#version 330 core\n"
                        "in vec2 v_uv; uniform sampler2D tex; out vec4 color;\n"
                        "void main() { color = texture(tex, v_uv); }\n";

typedef struct {
    GLuint vao, bufs[2], tex, rb, fbo;
    unsigned char pixels[SIZE * SIZE * 4];
} scene_t;

static int use_glx;

/* The scene on the current context: FRAMES frames, a swap after each; the last one's pixels read
 * back before its swap. */
static void draw_scene(scene_t *sc) {
    GLuint prog = f.glCreateProgram(), sh[2] = {f.glCreateShader(0x8B31), f.glCreateShader(0x8B30)};
    f.glShaderSource(sh[0], 1, &VS, NULL);
    f.glShaderSource(sh[1], 1, &FS, NULL);
    for (int i = 0; i < 2; i++) {
        f.glCompileShader(sh[i]);
        f.glAttachShader(prog, sh[i]);
    }
    f.glLinkProgram(prog);
    GLint linked = 0;
    f.glGetProgramiv(prog, 0x8B82 /* GL_LINK_STATUS */, &linked);
    if (!linked)
        die("shader link");
    f.glUseProgram(prog);
    f.glUniform1i(f.glGetUniformLocation(prog, "tex"), 1); /* the texture is on unit 1 */

    f.glGenVertexArrays(1, &sc->vao);
    f.glBindVertexArray(sc->vao);
    f.glGenBuffers(2, sc->bufs);
    const float verts[] = {-0.8f, -0.8f, 0, 0, 0.8f, -0.8f, 1, 0, 0.8f, 0.8f, 1, 1, -0.8f, 0.8f, 0, 1};
    const unsigned short idx[] = {0, 1, 2, 0, 2, 3};
    f.glBindBuffer(0x8892, sc->bufs[0]); /* GL_ARRAY_BUFFER */
    f.glBufferData(0x8892, sizeof verts, NULL, 0x88E4 /* GL_STATIC_DRAW */);
    f.glBufferSubData(0x8892, 0, sizeof verts, verts);
    f.glVertexAttribPointer(0, 2, 0x1406, 0, 16, (void *)0);
    f.glVertexAttribPointer(1, 2, 0x1406, 0, 16, (void *)8);
    f.glEnableVertexAttribArray(0);
    f.glEnableVertexAttribArray(1);
    f.glBindBuffer(0x8893, sc->bufs[1]); /* GL_ELEMENT_ARRAY_BUFFER */
    f.glBufferData(0x8893, sizeof idx, NULL, 0x88E4);
    unsigned short *mapped = f.glMapBufferRange(0x8893, 0, sizeof idx, 0x0002 /* GL_MAP_WRITE_BIT */);
    if (!mapped)
        die("glMapBufferRange");
    memcpy(mapped, idx, sizeof idx);
    f.glUnmapBuffer(0x8893);
    if (!f.glMapBuffer(0x8892, 0x88B8 /* GL_READ_ONLY */))
        die("glMapBuffer");
    f.glUnmapBuffer(0x8892);
    f.glBindBuffer(0x8892, 0); /* the draws name the vertex array's buffers */

    f.glGenTextures(1, &sc->tex);
    f.glActiveTexture(0x84C0 + 1);
    f.glBindTexture(0x0DE1, sc->tex);
    const unsigned char texels[] = {255, 0, 0, 255, 0, 255, 0, 255, 0, 0, 255, 255, 255, 255, 0, 255};
    f.glTexImage2D(0x0DE1, 0, 0x8058 /* GL_RGBA8 */, 2, 2, 0, 0x1908, 0x1401, texels);
    const unsigned char white[] = {255, 255, 255, 255};
    f.glTexSubImage2D(0x0DE1, 0, 1, 1, 1, 1, 0x1908, 0x1401, white);
    f.glTexParameteri(0x0DE1, 0x2801, 0x2600); /* MIN_FILTER: NEAREST */
    f.glTexParameteri(0x0DE1, 0x2800, 0x2600); /* MAG_FILTER: NEAREST */
    /* drawn into a framebuffer object: the picture does not depend on the window's or pbuffer's state */
    f.glGenRenderbuffers(1, &sc->rb);
    f.glBindRenderbuffer(0x8D41 /* GL_RENDERBUFFER */, sc->rb);
    f.glRenderbufferStorage(0x8D41, 0x8058 /* GL_RGBA8 */, SIZE, SIZE);
    f.glGenFramebuffers(1, &sc->fbo);
    f.glBindFramebuffer(0x8D40 /* GL_FRAMEBUFFER */, sc->fbo);
    f.glFramebufferRenderbuffer(0x8D40, 0x8CE0 /* COLOR_ATTACHMENT0 */, 0x8D41, sc->rb);
    if (f.glCheckFramebufferStatus(0x8D40) != 0x8CD5 /* GL_FRAMEBUFFER_COMPLETE */)
        die("framebuffer incomplete");

    f.glViewport(0, 0, SIZE, SIZE);
    for (int frame = 0; frame < FRAMES; frame++) {
        f.glClearColor(0.1f * frame, 0.2f, 0.3f, 1.0f);
        f.glClear(0x4000);
        switch (frame % 4) {
        case 0:
            if (frame)
                f.glDrawElementsBaseVertex(4, 6, 0x1403, 0, 0);
            else
                f.glDrawElements(4, 6, 0x1403, 0);
            break;
        case 1: f.glDrawArrays(4, 0, 3); break;
        case 2: f.glDrawElementsInstanced(4, 6, 0x1403, 0, 2); break;
        default: f.glDrawArraysInstanced(4, 0, 3, 2); break;
        }
        if (frame == FRAMES - 1) {
            GLsync sync = f.glFenceSync(0x9117 /* GL_SYNC_GPU_COMMANDS_COMPLETE */, 0);
            f.glWaitSync(sync, 0, 0xFFFFFFFFFFFFFFFFull);
            if (f.glClientWaitSync(sync, 1 /* FLUSH_COMMANDS_BIT */, 1000000000ull) == 0x911D)
                die("glClientWaitSync failed");
            f.glDeleteSync(sync);
            f.glFlush();
            f.glFinish();
            f.glReadPixels(0, 0, SIZE, SIZE, 0x1908, 0x1401, sc->pixels);
        }
        if (use_glx)
            f.glXSwapBuffers(x_display, x_window);
        else
            f.eglSwapBuffers(egl_display, egl_surface);
    }
    if (f.glGetError())
        die("a GL error");
}

/* Deletes the scene's objects and finishes. */
static void delete_scene(scene_t *sc) {
    f.glDeleteBuffers(2, sc->bufs);
    f.glDeleteTextures(1, &sc->tex);
    f.glBindFramebuffer(0x8D40, 0);
    f.glDeleteFramebuffers(1, &sc->fbo);
    f.glDeleteRenderbuffers(1, &sc->rb);
    f.glDeleteVertexArrays(1, &sc->vao);
    f.glFinish();
}

#define THREADS 2
static scene_t thread_scenes[THREADS];

static void *scene_thread(void *arg) {
    scene_t *sc = arg;
    open_egl_context();
    draw_scene(sc);
    delete_scene(sc);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 3)
        die("usage: gl_getproc MODE PIXELS_OUT [bench N]");
    const char *mode = argv[1];
    int threads = strcmp(mode, "threads") == 0; /* dlsym's road, a context and a scene on each of THREADS threads */
    load(threads ? "dlsym" : mode);
    use_glx = strcmp(mode, "glx") == 0;
    static scene_t main_scene;
    scene_t *sc = &main_scene;
    if (use_glx) {
        open_glx();
    } else {
        open_egl_display();
        if (!threads)
            open_egl_context();
    }
    if (threads) {
        pthread_t t[THREADS];
        for (int i = 0; i < THREADS; i++)
            if (pthread_create(&t[i], NULL, scene_thread, &thread_scenes[i]))
                die("pthread_create");
        for (int i = 0; i < THREADS; i++)
            pthread_join(t[i], NULL);
        for (int i = 1; i < THREADS; i++)
            if (memcmp(thread_scenes[i].pixels, thread_scenes[0].pixels, sizeof thread_scenes[0].pixels))
                die("the threads drew different pictures");
        sc = &thread_scenes[0];
    } else {
        draw_scene(sc);
    }
    printf("{\"vao\":%u,\"vbo\":%u,\"ebo\":%u,\"tex\":%u,\"rb\":%u}\n", sc->vao, sc->bufs[0], sc->bufs[1], sc->tex, sc->rb);
    FILE *out = fopen(argv[2], "wb");
    if (!out || fwrite(sc->pixels, 1, sizeof sc->pixels, out) != sizeof sc->pixels || fclose(out))
        die("writing the pixels");
    if (argc >= 5 && strcmp(argv[3], "bench") == 0) {
        long n = atol(argv[4]);
        struct timespec a, b, ca, cb; /* wall time, and this thread's CPU time (the cost on a shared machine) */
        clock_gettime(CLOCK_MONOTONIC, &a);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ca);
        for (long i = 0; i < n; i++)
            f.glDeleteSync(NULL);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cb);
        clock_gettime(CLOCK_MONOTONIC, &b);
        printf("{\"ns_per_call\":%.1f,\"cpu_ns_per_call\":%.1f}\n",
               ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / (double)n,
               ((cb.tv_sec - ca.tv_sec) * 1e9 + (cb.tv_nsec - ca.tv_nsec)) / (double)n);
    }
    if (!threads)
        delete_scene(sc);
    return 0;
}
