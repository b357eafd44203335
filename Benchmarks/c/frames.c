// The floor for the frame benchmarks: a plain C client of libmpv's render API doing what
// `playerkit-bench frames` does. Prints one JSON object.
//   frames sw PLAYERS SECONDS WIDTH HEIGHT MEDIA   software frames (bgr0, 64-byte aligned), a render
//                                                  thread per player woken by the update callback
//   frames gl PLAYERS SECONDS WIDTH HEIGHT MEDIA   OpenGL into a framebuffer object per player, one GL
//                                                  thread (EGL without a surface, Mesa), glFinish per frame
// Every player loops MEDIA (a 30 fps clip). Counted over SECONDS after the first frames: new
// frames delivered (redraws excluded), CPU time of the process per frame, frames late (more than
// 1.5 frame intervals after the previous one) and frames missing (30 x SECONDS - delivered); for
// gl also the time per render call (mpv_render_context_render + glFinish).
// With FRAMES_LOG=FILE (sw only): also each new frame's number, read from the barcode
// Scripts/live-origin.py burns into the bottom strip (16 blocks, white = 1), and the moment its
// render call returned, as JSON lines {"player": "core-N", "frame": N, "t": seconds} in FILE
// (Benchmarks/multiview.py reads them as it reads playerkit-multiview's --rendered-log); the cores
// then also hand frames over when they are due (video-timing-offset=0), as a multi-view's members do.
// Build: cc -O2 -o frames frames.c -lmpv -lpthread -lEGL -lOpenGL
#define GL_GLEXT_PROTOTYPES 1
#include <EGL/egl.h>
#include <EGL/eglext.h>
#include <GL/gl.h>
#include <GL/glext.h>
#include <locale.h>
#include <mpv/client.h>
#include <mpv/render.h>
#include <mpv/render_gl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "common.h"


struct player {
    mpv_handle *mpv;
    mpv_render_context *render;
    pthread_t thread;
    int pending;
    long frames, late;
    double last;
    GLuint fbo, texture;
    long index;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static int stopping, width, height, counting;
static double render_seconds;
static long render_calls;
// FRAMES_LOG: every new frame's number and moment, kept in memory until the end.
struct rendered { int player, number; double t; };
static struct rendered *log_entries;
static long log_count, log_capacity;
static double log_start;

static void on_update(void *context) {
    struct player *p = context;
    pthread_mutex_lock(&lock);
    p->pending = 1;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
}

static int next_is_new(mpv_render_context *render) {
    mpv_render_frame_info info = {0};
    mpv_render_param param = {MPV_RENDER_PARAM_NEXT_FRAME_INFO, &info};
    if (mpv_render_context_get_info(render, param) < 0) return 0;
    return (info.flags & MPV_RENDER_FRAME_INFO_PRESENT) && !(info.flags & (MPV_RENDER_FRAME_INFO_REDRAW | MPV_RENDER_FRAME_INFO_REPEAT));
}

static void count_frame(struct player *p) {
    double t = now_s();
    pthread_mutex_lock(&lock);
    if (counting) {
        p->frames++;
        if (p->last > 0 && t - p->last > 1.5 / 30) p->late++;
    }
    p->last = t;
    pthread_mutex_unlock(&lock);
}

// The number in a bgr0 frame's bottom strip; -1 when a block is neither dark nor light.
static int frame_number(const unsigned char *buffer, size_t stride) {
    int row = (int)(height * (1 - 1.0 / 16)), number = 0;
    for (int bit = 0; bit < 16; bit++) {
        const unsigned char *pixel = buffer + row * stride + (size_t)(width * (bit + 0.5) / 16) * 4;
        int level = (pixel[0] + pixel[1] + pixel[2]) / 3;
        if (level > 170) number |= 1 << bit;
        else if (level > 85) return -1;
    }
    return number;
}

static void note_rendered(struct player *p, int number, double t) {
    pthread_mutex_lock(&lock);
    if (log_count == log_capacity) {
        log_capacity = log_capacity ? log_capacity * 2 : 4096;
        log_entries = realloc(log_entries, log_capacity * sizeof *log_entries);
    }
    log_entries[log_count++] = (struct rendered){(int)(p->index), number, t - log_start};
    pthread_mutex_unlock(&lock);
}

static void *software_thread(void *context) {
    struct player *p = context;
    size_t stride = ((size_t)width * 4 + 63) / 64 * 64;
    void *buffer = aligned_alloc(64, stride * height);
    int size[2] = {width, height};
    for (;;) {
        pthread_mutex_lock(&lock);
        while (!p->pending && !stopping) pthread_cond_wait(&changed, &lock);
        int stop = stopping;
        p->pending = 0;
        pthread_mutex_unlock(&lock);
        if (stop) break;
        if (!(mpv_render_context_update(p->render) & MPV_RENDER_UPDATE_FRAME)) continue;
        int fresh = next_is_new(p->render);
        mpv_render_param params[] = {
            {MPV_RENDER_PARAM_SW_SIZE, size}, {MPV_RENDER_PARAM_SW_FORMAT, "bgr0"},
            {MPV_RENDER_PARAM_SW_STRIDE, &stride}, {MPV_RENDER_PARAM_SW_POINTER, buffer}, {0, NULL}};
        mpv_render_context_render(p->render, params);
        if (fresh && log_entries != NULL) {
            double t = now_s();
            int number = frame_number(buffer, stride);
            if (number >= 0) note_rendered(p, number, t);
        }
        if (fresh) count_frame(p);
    }
    free(buffer);
    return NULL;
}

static void *get_proc_address(void *context, const char *name) {
    (void)context;
    return (void *)eglGetProcAddress(name);
}

static int start_gl(void) {
    EGLDisplay display = eglGetPlatformDisplay(EGL_PLATFORM_SURFACELESS_MESA, EGL_DEFAULT_DISPLAY, NULL);
    if (!display || !eglInitialize(display, NULL, NULL)) return -1;
    eglBindAPI(EGL_OPENGL_API);
    EGLint attributes[] = {EGL_SURFACE_TYPE, EGL_PBUFFER_BIT, EGL_RENDERABLE_TYPE, EGL_OPENGL_BIT, EGL_NONE};
    EGLConfig config;
    EGLint count;
    if (!eglChooseConfig(display, attributes, &config, 1, &count) || count < 1) return -1;
    EGLint context_attributes[] = {EGL_CONTEXT_MAJOR_VERSION, 3, EGL_CONTEXT_MINOR_VERSION, 3, EGL_NONE};
    EGLContext context = eglCreateContext(display, config, EGL_NO_CONTEXT, context_attributes);
    if (!context || !eglMakeCurrent(display, EGL_NO_SURFACE, EGL_NO_SURFACE, context)) return -1;
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 7) {
        fprintf(stderr, "usage: frames sw|gl PLAYERS SECONDS WIDTH HEIGHT MEDIA\n");
        return 2;
    }
    int gl = strcmp(argv[1], "gl") == 0;
    int count = atoi(argv[2]);
    double seconds = atof(argv[3]);
    width = atoi(argv[4]);
    height = atoi(argv[5]);
    const char *media = argv[6];
    if (gl && start_gl() != 0) {
        fprintf(stderr, "frames: no EGL surfaceless OpenGL context\n");
        return 1;
    }
    const char *log_path = getenv("FRAMES_LOG");
    if (log_path && !gl) {
        log_capacity = 4096;
        log_entries = malloc(log_capacity * sizeof *log_entries);
    }
    log_start = now_s();
    struct player *players = calloc(count, sizeof *players);
    for (int i = 0; i < count; i++) {
        struct player *p = &players[i];
        p->index = i + 1;
        setlocale(LC_NUMERIC, "C");
        p->mpv = mpv_create();
        const char *options[][2] = {{"config", "no"}, {"terminal", "no"}, {"vo", "libmpv"}, {"ao", "null"}, {"idle", "yes"},
                                    {"hwdec", "no"}, {"gpu-hwdec-interop", "no"}, {"loop-file", "inf"}};
        for (size_t k = 0; k < sizeof options / sizeof options[0]; k++) mpv_set_option_string(p->mpv, options[k][0], options[k][1]);
        if (log_entries) mpv_set_option_string(p->mpv, "video-timing-offset", "0");
        mpv_initialize(p->mpv);
        if (gl) {
            mpv_opengl_init_params init = {get_proc_address, NULL};
            mpv_render_param params[] = {{MPV_RENDER_PARAM_API_TYPE, MPV_RENDER_API_TYPE_OPENGL},
                                         {MPV_RENDER_PARAM_OPENGL_INIT_PARAMS, &init}, {0, NULL}};
            if (mpv_render_context_create(&p->render, p->mpv, params) < 0) return 1;
            glGenTextures(1, &p->texture);
            glBindTexture(GL_TEXTURE_2D, p->texture);
            glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, width, height, 0, GL_RGBA, GL_UNSIGNED_BYTE, NULL);
            glGenFramebuffers(1, &p->fbo);
            glBindFramebuffer(GL_FRAMEBUFFER, p->fbo);
            glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, p->texture, 0);
        } else {
            mpv_render_param params[] = {{MPV_RENDER_PARAM_API_TYPE, MPV_RENDER_API_TYPE_SW}, {0, NULL}};
            if (mpv_render_context_create(&p->render, p->mpv, params) < 0) return 1;
        }
        mpv_render_context_set_update_callback(p->render, on_update, p);
        if (!gl) pthread_create(&p->thread, NULL, software_thread, p);
        const char *command[] = {"loadfile", media, NULL};
        mpv_command(p->mpv, command);
    }
    // Warm up one second, then count.
    double start = now_s(), warm = start + 1, end = warm + seconds, cpu_start = 0;
    while (now_s() < end) {
        if (!counting && now_s() >= warm) {
            pthread_mutex_lock(&lock);
            counting = 1;
            pthread_mutex_unlock(&lock);
            cpu_start = cpu_s();
        }
        if (!gl) {
            struct timespec pause = {0, 10 * 1000 * 1000};
            nanosleep(&pause, NULL);
            continue;
        }
        // The GL thread: wait for an update, render every player that has one.
        pthread_mutex_lock(&lock);
        int any = 0;
        for (int i = 0; i < count; i++) any |= players[i].pending;
        if (!any) {
            struct timespec deadline;
            clock_gettime(CLOCK_REALTIME, &deadline);
            deadline.tv_nsec += 10 * 1000 * 1000;
            if (deadline.tv_nsec >= 1000000000) { deadline.tv_sec++; deadline.tv_nsec -= 1000000000; }
            pthread_cond_timedwait(&changed, &lock, &deadline);
        }
        pthread_mutex_unlock(&lock);
        for (int i = 0; i < count; i++) {
            struct player *p = &players[i];
            pthread_mutex_lock(&lock);
            int pending = p->pending;
            p->pending = 0;
            pthread_mutex_unlock(&lock);
            if (!pending) continue;
            if (!(mpv_render_context_update(p->render) & MPV_RENDER_UPDATE_FRAME)) continue;
            int fresh = next_is_new(p->render);
            mpv_opengl_fbo fbo = {(int)p->fbo, width, height, 0};
            int flip = 0, block = 0;
            mpv_render_param params[] = {{MPV_RENDER_PARAM_OPENGL_FBO, &fbo}, {MPV_RENDER_PARAM_FLIP_Y, &flip},
                                         {MPV_RENDER_PARAM_BLOCK_FOR_TARGET_TIME, &block}, {0, NULL}};
            double began = now_s();
            mpv_render_context_render(p->render, params);
            glFinish();
            if (counting) {
                render_seconds += now_s() - began;
                render_calls++;
            }
            mpv_render_context_report_swap(p->render);
            if (fresh) count_frame(p);
        }
    }
    double cpu = cpu_s() - cpu_start;
    pthread_mutex_lock(&lock);
    counting = 0;
    stopping = 1;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
    long frames = 0, late = 0;
    for (int i = 0; i < count; i++) {
        if (!gl) pthread_join(players[i].thread, NULL);
        frames += players[i].frames;
        late += players[i].late;
    }
    long expected = (long)(30 * seconds) * count;
    printf("{\"players\": %d, \"seconds\": %.1f, \"frames\": %ld, \"frames_per_second_per_player\": %.2f, "
           "\"cpu_ms_per_frame\": %.3f, \"late\": %ld, \"missing\": %ld, \"render_ms\": %.3f}\n",
           count, seconds, frames, frames / seconds / count, frames ? cpu * 1000 / frames : 0, late,
           expected > frames ? expected - frames : 0, render_calls ? render_seconds * 1000 / render_calls : 0);
    if (log_entries) {
        FILE *file = fopen(log_path, "w");
        if (!file) return 1;
        for (long k = 0; k < log_count; k++)
            fprintf(file, "{\"player\":\"core-%d\",\"frame\":%d,\"t\":%.6f}\n", log_entries[k].player, log_entries[k].number, log_entries[k].t);
        fclose(file);
    }
    for (int i = 0; i < count; i++) {
        mpv_render_context_free(players[i].render);
        mpv_terminate_destroy(players[i].mpv);
    }
    return 0;
}
