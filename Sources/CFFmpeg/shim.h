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

// FFmpeg's log: never set here (FFmpeg's callback is one for the process); an analysis claims
// its thread's lines from CFFmpegLog (PlayerKitAnalysis/AnalysisThread.swift).

#endif
