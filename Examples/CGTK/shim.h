#ifndef PLAYERKIT_EXAMPLES_CGTK_H
#define PLAYERKIT_EXAMPLES_CGTK_H

// What the GTK 4 example (playerkit-compare) is built on: GTK 4 itself (its C API, no Swift
// binding), the OpenGL functions it composes pictures with, and the two ways to look GL
// functions up for mpv: EGL (GTK on Wayland, and on X11 when it chose EGL) or GLX (GTK 4.8 on
// X11). Debian/Ubuntu: libgtk-4-dev libgl-dev libegl-dev (Scripts/install-deps.sh test).
// Not part of PlayerKit: an app brings its own toolkit.
#define GL_GLEXT_PROTOTYPES 1
#include <gtk/gtk.h>
#include <glib-unix.h>
#include <GL/gl.h>
#include <GL/glext.h>
#include <EGL/egl.h>
#include <GL/glx.h>

/// The address of the GL function `name` for the context current on this thread: through EGL
/// when an EGL context is current, through GLX otherwise.
static inline void *cgtk_gl_proc_address(const char *name) {
    if (eglGetCurrentContext() != EGL_NO_CONTEXT) return (void *)eglGetProcAddress(name);
    return (void *)glXGetProcAddressARB((const GLubyte *)name);
}

/// The framebuffer object bound for drawing: GtkGLArea draws into one of its own, never 0.
static inline GLint cgtk_current_framebuffer(void) {
    GLint framebuffer = 0;
    glGetIntegerv(GL_DRAW_FRAMEBUFFER_BINDING, &framebuffer);
    return framebuffer;
}

/// Connects `handler` (a C function of the signal's own signature) to `signal` of `instance`;
/// `release` is called with `data` when the handler is disconnected.
static inline gulong cgtk_connect(gpointer instance, const char *signal, GCallback handler, gpointer data, GClosureNotify release) {
    return g_signal_connect_data(instance, signal, handler, data, release, (GConnectFlags)0);
}

#endif
