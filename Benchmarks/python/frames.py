"""The peer for the frame benchmark: python-mpv doing what Benchmarks/c/frames.c does in its gl
mode. Prints one JSON object.

Usage: python3 frames.py gl PLAYERS SECONDS WIDTH HEIGHT MEDIA

OpenGL into a framebuffer object per player, on one GL thread (this one; EGL without a surface,
Mesa), glFinish per frame. Every player loops MEDIA (a 30 fps clip). Counted over SECONDS after
a one-second warm-up: new frames delivered (redraws excluded), CPU time of the process per frame,
frames late (more than 1.5 frame intervals after the previous one), frames missing
(30 x SECONDS - delivered) and the time per render call (render + glFinish).

The OpenGL context is made with ctypes (libEGL, libOpenGL), nothing beyond python-mpv.
(python-mpv 1.0.8 has no software-renderer parameters, so there is no sw mode here.)
"""
import ctypes
import json
import resource
import sys
import threading
import time

import mpv

OPTIONS = dict(config=False, terminal=False, vo="libmpv", ao="null", idle="yes", hwdec="no",
               gpu_hwdec_interop="no", loop_file="inf")

# EGL and GL constants (EGL/egl.h, EGL/eglext.h, GL/gl.h).
EGL_PLATFORM_SURFACELESS_MESA = 0x31DD
EGL_OPENGL_API = 0x30A2
EGL_SURFACE_TYPE, EGL_PBUFFER_BIT = 0x3033, 0x0001
EGL_RENDERABLE_TYPE, EGL_OPENGL_BIT = 0x3040, 0x0008
EGL_CONTEXT_MAJOR_VERSION, EGL_CONTEXT_MINOR_VERSION = 0x3098, 0x30FB
EGL_NONE = 0x3038
GL_TEXTURE_2D, GL_RGBA8, GL_RGBA, GL_UNSIGNED_BYTE = 0x0DE1, 0x8058, 0x1908, 0x1401
GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0 = 0x8D40, 0x8CE0

# mpv_render_frame_info flags (mpv/render.h).
FRAME_INFO_PRESENT, FRAME_INFO_REDRAW, FRAME_INFO_REPEAT = 1, 2, 4

c_void_p, c_int, c_uint, c_char_p = ctypes.c_void_p, ctypes.c_int, ctypes.c_uint, ctypes.c_char_p
egl = ctypes.CDLL("libEGL.so.1")
gl = ctypes.CDLL("libOpenGL.so.0")


def declare(library, name, restype, *argtypes):
    function = getattr(library, name)
    function.restype = restype
    function.argtypes = list(argtypes)
    return function


eglGetPlatformDisplay = declare(egl, "eglGetPlatformDisplay", c_void_p, c_uint, c_void_p, c_void_p)
eglInitialize = declare(egl, "eglInitialize", c_uint, c_void_p, c_void_p, c_void_p)
eglBindAPI = declare(egl, "eglBindAPI", c_uint, c_uint)
eglChooseConfig = declare(egl, "eglChooseConfig", c_uint, c_void_p, ctypes.POINTER(c_int),
                          ctypes.POINTER(c_void_p), c_int, ctypes.POINTER(c_int))
eglCreateContext = declare(egl, "eglCreateContext", c_void_p, c_void_p, c_void_p, c_void_p, ctypes.POINTER(c_int))
eglMakeCurrent = declare(egl, "eglMakeCurrent", c_uint, c_void_p, c_void_p, c_void_p, c_void_p)
eglGetProcAddress = declare(egl, "eglGetProcAddress", c_void_p, c_char_p)
glGenTextures = declare(gl, "glGenTextures", None, c_int, ctypes.POINTER(c_uint))
glBindTexture = declare(gl, "glBindTexture", None, c_uint, c_uint)
glTexImage2D = declare(gl, "glTexImage2D", None, c_uint, c_int, c_int, c_int, c_int, c_int, c_uint, c_uint, c_void_p)
glGenFramebuffers = declare(gl, "glGenFramebuffers", None, c_int, ctypes.POINTER(c_uint))
glBindFramebuffer = declare(gl, "glBindFramebuffer", None, c_uint, c_uint)
glFramebufferTexture2D = declare(gl, "glFramebufferTexture2D", None, c_uint, c_uint, c_uint, c_uint, c_int)
glFinish = declare(gl, "glFinish", None)


def cpu_s():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def start_gl():
    """Makes a surfaceless OpenGL 3.3 context current on this thread; False if there is none."""
    display = eglGetPlatformDisplay(EGL_PLATFORM_SURFACELESS_MESA, None, None)
    if not display or not eglInitialize(display, None, None):
        return False
    eglBindAPI(EGL_OPENGL_API)
    attributes = (c_int * 5)(EGL_SURFACE_TYPE, EGL_PBUFFER_BIT, EGL_RENDERABLE_TYPE, EGL_OPENGL_BIT, EGL_NONE)
    config, count = c_void_p(), c_int(0)
    if not eglChooseConfig(display, attributes, ctypes.byref(config), 1, ctypes.byref(count)) or count.value < 1:
        return False
    context_attributes = (c_int * 5)(EGL_CONTEXT_MAJOR_VERSION, 3, EGL_CONTEXT_MINOR_VERSION, 3, EGL_NONE)
    context = eglCreateContext(display, config, None, context_attributes)
    return bool(context) and bool(eglMakeCurrent(display, None, None, context))


@mpv.MpvGlGetProcAddressFn
def get_proc_address(_context, name):
    return eglGetProcAddress(name)


def framebuffer(width, height):
    """An FBO with an RGBA8 texture of width x height attached; returns its name."""
    texture, fbo = c_uint(0), c_uint(0)
    glGenTextures(1, ctypes.byref(texture))
    glBindTexture(GL_TEXTURE_2D, texture.value)
    glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, width, height, 0, GL_RGBA, GL_UNSIGNED_BYTE, None)
    glGenFramebuffers(1, ctypes.byref(fbo))
    glBindFramebuffer(GL_FRAMEBUFFER, fbo.value)
    glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, texture.value, 0)
    return fbo.value


def next_is_new(context):
    """Whether the frame due is a new one (not a redraw or repeat), from MPV_RENDER_PARAM_NEXT_FRAME_INFO.
    python-mpv 1.0.8's own getter for it (`context.next_frame_info`) raises TypeError, so the query is
    made with python-mpv's MpvRenderParam and its binding of mpv_render_context_get_info."""
    param = mpv.MpvRenderParam("next_frame_info", {})
    try:
        mpv._mpv_render_context_get_info(context.handle, param)
    except Exception:
        return False
    flags = param.value.flags
    return bool(flags & FRAME_INFO_PRESENT) and not flags & (FRAME_INFO_REDRAW | FRAME_INFO_REPEAT)


def main():
    if len(sys.argv) != 7 or sys.argv[1] != "gl":
        print("usage: frames.py gl PLAYERS SECONDS WIDTH HEIGHT MEDIA", file=sys.stderr)
        return 2
    count, seconds = int(sys.argv[2]), float(sys.argv[3])
    width, height, media = int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
    if not start_gl():
        print("frames: no EGL surfaceless OpenGL context", file=sys.stderr)
        return 1

    changed = threading.Condition()
    pending = [False] * count

    def on_update(index):
        # Called on an mpv thread: only signal, the rendering is done on the GL thread.
        def signal():
            with changed:
                pending[index] = True
                changed.notify_all()
        return signal

    players, contexts, fbos = [], [], []
    for index in range(count):
        player = mpv.MPV(**OPTIONS)
        context = mpv.MpvRenderContext(player, "opengl", opengl_init_params={"get_proc_address": get_proc_address})
        fbos.append(framebuffer(width, height))
        context.update_cb = on_update(index)
        player.play(media)
        players.append(player)
        contexts.append(context)

    frames, late, last = [0] * count, [0] * count, [0.0] * count
    render_seconds, render_calls = 0.0, 0
    counting = False
    # Warm up one second, then count.
    start = time.monotonic()
    warm, end, cpu_start = start + 1, start + 1 + seconds, 0.0
    while time.monotonic() < end:
        if not counting and time.monotonic() >= warm:
            counting = True
            cpu_start = cpu_s()
        # The GL thread: wait for an update, render every player that has one.
        with changed:
            if not any(pending):
                changed.wait(0.010)
            due = [index for index in range(count) if pending[index]]
            for index in due:
                pending[index] = False
        for index in due:
            context = contexts[index]
            if not context.update():
                continue
            fresh = next_is_new(context)
            began = time.monotonic()
            context.render(opengl_fbo={"fbo": fbos[index], "w": width, "h": height}, flip_y=False,
                           block_for_target_time=False)
            glFinish()
            if counting:
                render_seconds += time.monotonic() - began
                render_calls += 1
            context.report_swap()
            if fresh:
                now = time.monotonic()
                if counting:
                    frames[index] += 1
                    if last[index] > 0 and now - last[index] > 1.5 / 30:
                        late[index] += 1
                last[index] = now
    cpu = cpu_s() - cpu_start

    total = sum(frames)
    expected = int(30 * seconds) * count
    print(json.dumps({"players": count, "seconds": round(seconds, 1), "frames": total,
                      "frames_per_second_per_player": round(total / seconds / count, 2),
                      "cpu_ms_per_frame": round(cpu * 1000 / total, 3) if total else 0, "late": sum(late),
                      "missing": max(0, expected - total),
                      "render_ms": round(render_seconds * 1000 / render_calls, 3) if render_calls else 0}),
          flush=True)
    # The render contexts are freed here, on the GL thread, before their players are terminated.
    for context in contexts:
        context.free()
    for player in players:
        player.terminate()
    return 0


if __name__ == "__main__":
    sys.exit(main())
