// See include/playerkit_ffmpeg_log.h.
#define _GNU_SOURCE
#include "playerkit_ffmpeg_log.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

// The first fields of FFmpeg's AVClass (libavutil/log.h, stable across its major versions):
// every object FFmpeg logs with starts with a pointer to its class.
struct playerkit_av_class {
    const char *class_name;
    const char *(*item_name)(void *context);
};

// The start of AVCodecContext (libavcodec/avcodec.h): its class, an int, then the media type
// (AVMEDIA_TYPE_VIDEO 0, AVMEDIA_TYPE_AUDIO 1).
struct playerkit_av_codec_context_start {
    const struct playerkit_av_class *av_class;
    int log_level_offset;
    int codec_type;
};

static playerkit_ffmpeg_log_sink installed_sink;
static int installed_max_level;
// A thread's own sink (PlayerKitAnalysis's threads), ahead of the process's.
static _Thread_local playerkit_ffmpeg_log_sink thread_sink;
static _Thread_local int thread_max_level;
// Lines of threads with no sink of their own while no process sink is installed.
static playerkit_ffmpeg_log_sink fallback_sink;
static int fallback_max_level;
static int callback_installed;

// A line FFmpeg logs in several calls, joined per thread (mpv joins them the same way).
#define PLAYERKIT_LINE_CAPACITY 2048
static _Thread_local char pending_line[PLAYERKIT_LINE_CAPACITY];
static _Thread_local size_t pending_length;
static _Thread_local int pending_level;
static _Thread_local const char *pending_category;

static const char *category_of(void *context) {
    if (!context) return "";
    const struct playerkit_av_class *class = *(const struct playerkit_av_class **)context;
    if (!class || !class->class_name) return "";
    if (strcmp(class->class_name, "AVFormatContext") == 0) return "demuxer";
    if (strcmp(class->class_name, "AVCodecContext") == 0) {
        int type = ((const struct playerkit_av_codec_context_start *)context)->codec_type;
        return type == 0 ? "video" : type == 1 ? "audio" : "";
    }
    return "";
}

static void append(const char *text, size_t length) {
    size_t room = PLAYERKIT_LINE_CAPACITY - 1 - pending_length;
    if (length > room) length = room;
    memcpy(pending_line + pending_length, text, length);
    pending_length += length;
    pending_line[pending_length] = 0;
}

static void callback(void *context, int level, const char *format, va_list arguments) {
    if (!format) return;
    playerkit_ffmpeg_log_sink sink = thread_sink;
    int max_level = thread_max_level;
    if (!sink) {
        sink = __atomic_load_n(&installed_sink, __ATOMIC_ACQUIRE);
        max_level = __atomic_load_n(&installed_max_level, __ATOMIC_RELAXED);
    }
    if (!sink) {
        sink = __atomic_load_n(&fallback_sink, __ATOMIC_ACQUIRE);
        max_level = __atomic_load_n(&fallback_max_level, __ATOMIC_RELAXED);
    }
    if (!sink || level > max_level) return;
    if (pending_length == 0) {
        // A new line: the object's name first ("hls: "), as mpv writes it.
        const struct playerkit_av_class *class = context ? *(const struct playerkit_av_class **)context : NULL;
        const char *name = class && class->item_name ? class->item_name(context) : NULL;
        if (name && *name) {
            append(name, strlen(name));
            append(": ", 2);
        }
        pending_level = level;
        pending_category = category_of(context);
    } else if (level < pending_level) {
        pending_level = level;  // the most severe of its pieces
    }
    char piece[PLAYERKIT_LINE_CAPACITY];
    int written = vsnprintf(piece, sizeof piece, format, arguments);
    if (written < 0) written = 0;
    if ((size_t)written >= sizeof piece) written = (int)sizeof piece - 1;
    append(piece, (size_t)written);
    size_t length = strlen(format);
    if (length == 0 || format[length - 1] != '\n') return;  // more of the line to come
    while (pending_length > 0 && (pending_line[pending_length - 1] == '\n' || pending_line[pending_length - 1] == '\r')) {
        pending_line[--pending_length] = 0;
    }
    int line_level = pending_level;
    const char *category = pending_category;
    pending_length = 0;
    // The sink gets a copy: a line it logs may reach this callback again on this thread.
    char line[PLAYERKIT_LINE_CAPACITY];
    memcpy(line, pending_line, sizeof line);
    pending_line[0] = 0;
    sink(line_level, category, line);
}

static int set_callback(void) {
    void (*set)(void (*)(void *, int, const char *, va_list)) =
        (void (*)(void (*)(void *, int, const char *, va_list)))dlsym(RTLD_DEFAULT, "av_log_set_callback");
    if (!set) return -1;
    set(callback);
    __atomic_store_n(&callback_installed, 1, __ATOMIC_RELEASE);
    return 0;
}

int playerkit_ffmpeg_log_install(playerkit_ffmpeg_log_sink sink, int max_level) {
    if (!dlsym(RTLD_DEFAULT, "av_log_set_callback")) return -1;
    __atomic_store_n(&installed_max_level, max_level, __ATOMIC_RELAXED);
    __atomic_store_n(&installed_sink, sink, __ATOMIC_RELEASE);
    return set_callback();
}

int playerkit_ffmpeg_log_claim_thread(playerkit_ffmpeg_log_sink sink, int max_level,
                                      playerkit_ffmpeg_log_sink fallback) {
    thread_max_level = max_level;
    thread_sink = sink;
    if (fallback) {
        __atomic_store_n(&fallback_max_level, max_level, __ATOMIC_RELAXED);
        __atomic_store_n(&fallback_sink, fallback, __ATOMIC_RELEASE);
    }
    // Only while nobody installed it: once the process sink is in, PlayerKit's core keeps mpv
    // from ever taking the callback back (Engine/FFmpegLog.swift), so it is still this one.
    if (__atomic_load_n(&callback_installed, __ATOMIC_ACQUIRE)) return 0;
    return set_callback();
}

void playerkit_ffmpeg_log_set_max_level(int max_level) {
    __atomic_store_n(&installed_max_level, max_level, __ATOMIC_RELAXED);
}
