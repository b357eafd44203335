#ifndef PLAYERKIT_CMPV_SHIM_H
#define PLAYERKIT_CMPV_SHIM_H

// PlayerKit's only C boundary: libmpv's client API (client API 2.0, libmpv 0.35+).
#include <mpv/client.h>
// Frames the app draws: the software and OpenGL renderers (libmpv 0.35+).
#include <mpv/render.h>
#include <mpv/render_gl.h>
// Streams the app serves itself (custom protocols, libmpv 0.35+).
#include <mpv/stream_cb.h>
#include <locale.h>
// malloc_trim: after a player releases its media, the heap libmpv freed goes back to the system.
#include <malloc.h>

#endif
