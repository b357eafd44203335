#ifndef PLAYERKIT_EXAMPLES_CGLHOST_H
#define PLAYERKIT_EXAMPLES_CGLHOST_H

// What the OpenGL examples host their players in: an SDL2 window with an OpenGL context, or
// (headless) an EGL context without any surface, and the GL functions to compose frames.
// Debian/Ubuntu: libsdl2-dev libegl-dev libopengl-dev (Scripts/install-deps.sh installs them).
// Not part of PlayerKit: an app brings its own toolkit.
#define GL_GLEXT_PROTOTYPES 1
#define SDL_MAIN_HANDLED 1
#include <SDL2/SDL.h>
#include <GL/gl.h>
#include <GL/glext.h>
#include <EGL/egl.h>
#include <EGL/eglext.h>

#endif
