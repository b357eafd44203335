#ifndef PLAYERKIT_FFMPEG_LOG_H
#define PLAYERKIT_FFMPEG_LOG_H

// FFmpeg's log, taken by PlayerKit: the process's one owner of FFmpeg's log callback.
// PlayerKitCore's Engine (Engine/FFmpegLog.swift) installs the process's sink; PlayerKitAnalysis
// (AnalysisThread.swift) claims the threads it decodes on, so an analysis never takes FFmpeg's
// callback from the players (their models read FFmpeg's lines).
//
// FFmpeg logs through one process-wide callback with no context of the caller's but the
// FFmpeg object that logs. libmpv hands every line to the first mpv core of the process, so a
// process with several players credits every FFmpeg line to one of them. This callback runs on
// the thread that logged, where PlayerKit can tell which player's demuxer it is (the URLs that
// thread opens): it joins a line's pieces (FFmpeg logs some lines in several calls), prefixes
// the logging object's name as mpv does ("hls: ..."), and hands the whole line to a sink.
//
// Swift cannot take a C callback with a `va_list` parameter, hence this file.

/// A whole FFmpeg line: FFmpeg's level (AV_LOG_*: 8 fatal, 16 error, 24 warning, 32 info,
/// 40 verbose, 48 debug, 56 trace), the kind of object that logged ("demuxer", "video",
/// "audio" or "" for the rest, as mpv names its FFmpeg log modules) and the text without its
/// newline. Called on the logging thread, with no lock of PlayerKit's held; must not call mpv
/// or FFmpeg. The strings live until the call returns.
typedef void (*playerkit_ffmpeg_log_sink)(int level, const char *category, const char *text);

/// Makes `sink` FFmpeg's log callback (`av_log_set_callback`, found in the process at run time:
/// libmpv links libavutil, so it is there whenever libmpv is). Lines above `max_level` are
/// dropped before they are formatted. Returns 0, or -1 when the process has no
/// `av_log_set_callback` (nothing changed then).
int playerkit_ffmpeg_log_install(playerkit_ffmpeg_log_sink sink, int max_level);

/// Sends the lines the calling thread logs to `sink` (up to `max_level`), ahead of the process's
/// sink, for the rest of the thread's life (NULL: back to the process's sink). `fallback`, when
/// not NULL, takes the lines of every other thread while no process sink is installed (a
/// decoder's worker threads before the process's first player). Installs the callback when
/// nobody has. Returns 0, or -1 when the process has no `av_log_set_callback`.
int playerkit_ffmpeg_log_claim_thread(playerkit_ffmpeg_log_sink sink, int max_level,
                                      playerkit_ffmpeg_log_sink fallback);

/// Changes the level above which the process sink's lines are dropped (any thread).
void playerkit_ffmpeg_log_set_max_level(int max_level);

#endif
