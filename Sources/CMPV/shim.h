#ifndef PLAYERKIT_CMPV_SHIM_H
#define PLAYERKIT_CMPV_SHIM_H

// PlayerKit's only C boundary: libmpv's client API (client API 2.0, libmpv 0.35+).
#include <mpv/client.h>
#if MPV_CLIENT_API_VERSION < MPV_MAKE_VERSION(2, 0)
#error "PlayerKit needs libmpv 0.35 or newer (client API 2.0); this system's mpv/client.h is older (Ubuntu 22.04 ships 0.34: use Ubuntu 24.04, Debian 12, Fedora 38 or newer)."
#endif
// Frames the app draws: the software and OpenGL renderers (libmpv 0.35+).
#include <mpv/render.h>
#include <mpv/render_gl.h>
// Streams the app serves itself (custom protocols, libmpv 0.35+).
#include <mpv/stream_cb.h>
#include <locale.h>
// malloc_trim: after a player releases its media, the heap libmpv freed goes back to the system.
#include <malloc.h>

#endif
