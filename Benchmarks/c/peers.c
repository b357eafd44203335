// The peers an app would use instead of libmpv, doing the benchmark's first-frame and
// create + destroy work: GStreamer's playbin and playbin3, and libVLC's media player.
//
//   peers ttff ENGINE RUNS MEDIA    create a player, load MEDIA, play -> its first frame shown
//   peers cycles ENGINE COUNT       create + destroy a player (nothing loaded)
//
// ENGINE: playbin, playbin3 or vlc. Headless and silent, as the other clients are (mpv's
// vo=null and ao=null): GStreamer's sinks are fakesinks that keep the clock (sync), libVLC's
// video goes to memory callbacks in the decoder's own format (I420, no conversion) and its sound
// to the dummy output. Sound is decoded, as mpv's is. "First frame shown": the video sink's
// first rendered buffer (GStreamer's handoff, libVLC's display callback), as mpv's
// MPV_EVENT_PLAYBACK_RESTART is for the C client. libVLC's instance (libvlc_new: its plugin
// cache) is made once per process, as an app makes it; each run makes a media player.
// Prints one JSON object: {"p50_ms":..,"p99_ms":..} or {"cycle_ms":..}.
// Build: cc -O2 -o peers peers.c $(pkg-config --cflags --libs gstreamer-1.0 libvlc) -lpthread
#include <gst/gst.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <vlc/vlc.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

// The first frame of the current run: set by the sink's thread, awaited (bounded) by main.
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t shown = PTHREAD_COND_INITIALIZER;
static int frame_shown;

static void mark_shown(void) {
    pthread_mutex_lock(&lock);
    if (!frame_shown) {
        frame_shown = 1;
        pthread_cond_signal(&shown);
    }
    pthread_mutex_unlock(&lock);
}

static void reset_shown(void) {
    pthread_mutex_lock(&lock);
    frame_shown = 0;
    pthread_mutex_unlock(&lock);
}

// Waits at most 10 s for the first frame; exits on a timeout (a hang fails by name).
static void wait_shown(const char *engine) {
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 10;
    pthread_mutex_lock(&lock);
    while (!frame_shown)
        if (pthread_cond_timedwait(&shown, &lock, &deadline) != 0) {
            fprintf(stderr, "%s: no first frame within 10 s\n", engine);
            exit(1);
        }
    pthread_mutex_unlock(&lock);
}

// GStreamer

static void on_handoff(GstElement *sink, GstBuffer *buffer, GstPad *pad, gpointer data) {
    (void)sink, (void)buffer, (void)pad, (void)data;
    mark_shown();
}

static GstElement *make_playbin(const char *engine, const char *uri) {
    GstElement *playbin = gst_element_factory_make(engine, NULL);
    if (!playbin) { fprintf(stderr, "%s: no such element (gstreamer1.0-plugins-base)\n", engine); exit(1); }
    if (!uri) return playbin;
    GstElement *video = gst_element_factory_make("fakesink", NULL);
    GstElement *audio = gst_element_factory_make("fakesink", NULL);
    g_object_set(video, "signal-handoffs", TRUE, "sync", TRUE, NULL);
    g_object_set(audio, "sync", TRUE, NULL);
    g_signal_connect(video, "handoff", G_CALLBACK(on_handoff), NULL);
    g_object_set(playbin, "uri", uri, "video-sink", video, "audio-sink", audio, NULL);
    return playbin;
}

static void stop_playbin(GstElement *playbin) {
    gst_element_set_state(playbin, GST_STATE_NULL);
    gst_object_unref(playbin);
}

// libVLC

static libvlc_instance_t *vlc;
static unsigned char *planes[3];

static unsigned vlc_setup(void **opaque, char *chroma, unsigned *width, unsigned *height, unsigned *pitches, unsigned *lines) {
    (void)opaque;
    memcpy(chroma, "I420", 4);
    unsigned w = (*width + 31) & ~31u, h = (*height + 15) & ~15u;
    pitches[0] = w, lines[0] = h;
    pitches[1] = pitches[2] = w / 2, lines[1] = lines[2] = h / 2;
    for (int i = 0; i < 3; i++) planes[i] = realloc(planes[i], (size_t)pitches[i] * lines[i]);
    return 1;
}

static void *vlc_lock(void *opaque, void **out) {
    (void)opaque;
    for (int i = 0; i < 3; i++) out[i] = planes[i];
    return NULL;
}

static void vlc_display(void *opaque, void *picture) {
    (void)opaque, (void)picture;
    mark_shown();
}

static libvlc_media_player_t *make_vlc_player(const char *path) {
    libvlc_media_player_t *player = libvlc_media_player_new(vlc);
    if (!player) { fprintf(stderr, "vlc: no media player\n"); exit(1); }
    if (!path) return player;
    libvlc_media_t *media = libvlc_media_new_path(vlc, path);
    libvlc_media_player_set_media(player, media);
    libvlc_media_release(media);
    libvlc_video_set_callbacks(player, vlc_lock, NULL, vlc_display, NULL);
    libvlc_video_set_format_callbacks(player, vlc_setup, NULL);
    return player;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: peers ttff ENGINE RUNS MEDIA | peers cycles ENGINE COUNT\n");
        return 2;
    }
    const char *mode = argv[1], *engine = argv[2];
    int runs = atoi(argv[3]);
    int is_vlc = !strcmp(engine, "vlc");
    if (!is_vlc && strcmp(engine, "playbin") && strcmp(engine, "playbin3")) {
        fprintf(stderr, "peers: unknown engine %s (playbin, playbin3, vlc)\n", engine);
        return 2;
    }
    if (is_vlc) {
        const char *arguments[] = {"--quiet", "--no-xlib", "--aout=adummy", "--no-video-title-show", "--no-stats"};
        vlc = libvlc_new(sizeof arguments / sizeof arguments[0], arguments);
        if (!vlc) { fprintf(stderr, "vlc: libvlc_new failed (vlc-plugin-base)\n"); return 1; }
    } else {
        gst_init(&argc, &argv);
    }
    if (!strcmp(mode, "cycles")) {
        double start = now_s();
        for (int i = 0; i < runs; i++) {
            if (is_vlc) libvlc_media_player_release(make_vlc_player(NULL));
            else stop_playbin(make_playbin(engine, NULL));
        }
        printf("{\"cycle_ms\": %.4f}\n", (now_s() - start) * 1000 / runs);
        return 0;
    }
    if (strcmp(mode, "ttff") || argc < 5) { fprintf(stderr, "peers: unknown mode %s\n", mode); return 2; }
    char path[PATH_MAX];
    if (!realpath(argv[4], path)) { fprintf(stderr, "peers: no file %s\n", argv[4]); return 1; }
    char *uri = gst_filename_to_uri(path, NULL);
    double *ms = calloc(runs, sizeof *ms);
    for (int r = 0; r < runs; r++) {
        reset_shown();
        double start = now_s();
        if (is_vlc) {
            libvlc_media_player_t *player = make_vlc_player(path);
            libvlc_media_player_play(player);
            wait_shown(engine);
            ms[r] = (now_s() - start) * 1000;
            libvlc_media_player_stop(player);
            libvlc_media_player_release(player);
        } else {
            GstElement *playbin = make_playbin(engine, uri);
            if (gst_element_set_state(playbin, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
                fprintf(stderr, "%s: could not play %s\n", engine, uri);
                return 1;
            }
            wait_shown(engine);
            ms[r] = (now_s() - start) * 1000;
            stop_playbin(playbin);
        }
    }
    qsort(ms, runs, sizeof *ms, compare);
    printf("{\"p50_ms\": %.2f, \"p99_ms\": %.2f}\n", ms[runs / 2], ms[(int)(runs * 0.99)]);
    return 0;
}
