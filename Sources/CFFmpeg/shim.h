#ifndef PLAYERKIT_CFFMPEG_SHIM_H
#define PLAYERKIT_CFFMPEG_SHIM_H

// PlayerKitAnalysis's C boundary: FFmpeg's libraries (5.1 or newer: Debian 12's), to decode video
// faster than real time for comparisons. Only PlayerKitAnalysis imports it; an app that only
// plays never links it.
#include <libavformat/avformat.h>
#include <libavcodec/avcodec.h>
#include <libavutil/avutil.h>
#include <libavutil/error.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>
#include <libswresample/swresample.h>
#include <libavutil/channel_layout.h>
#include <libavutil/opt.h>

// The macros Swift cannot import.
static inline int pk_averror_eagain(void) { return AVERROR(EAGAIN); }
static inline int pk_averror_eof(void) { return AVERROR_EOF; }
static inline int64_t pk_av_nopts_value(void) { return AV_NOPTS_VALUE; }
static inline AVChannelLayout pk_mono_layout(void) { AVChannelLayout layout = AV_CHANNEL_LAYOUT_MONO; return layout; }

/// Where FFmpeg's log lines go instead of standard error: PlayerKitAnalysis gives a function
/// that hands them to swift-log (a library does not print). FFmpeg's log callback is one for the
/// whole process, and libmpv sets its own while it has cores (and FFmpeg's default back when its
/// last core goes), so PlayerKitAnalysis sets this one again each time it opens a file.
typedef void (*pk_av_log_sink)(int level, const char *line);
static pk_av_log_sink pk_av_log_current_sink = 0;
static void pk_av_log_forward(void *context, int level, const char *format, va_list arguments) {
    pk_av_log_sink sink = pk_av_log_current_sink;
    if (level > AV_LOG_WARNING || !sink) return;
    char line[1024];
    int prefix = 1;
    av_log_format_line2(context, level, format, arguments, line, sizeof line, &prefix);
    sink(level, line);
}
/// Sets where the lines go: once, before any `pk_av_log_install` (PlayerKitAnalysis calls it
/// from a Swift `static let`, which runs it exactly once, before any reader).
static inline void pk_av_log_set_sink(pk_av_log_sink sink) { pk_av_log_current_sink = sink; }
/// Makes FFmpeg's log callback the forwarder (again).
static inline void pk_av_log_install(void) { av_log_set_callback(pk_av_log_forward); }

#endif
