#!/usr/bin/env python3
"""Writes Scripts/mpv-names.txt: every property, option and command name of the installed libmpv
(its `property-list`, `options` and `command-list`), one per line, sorted. check-layers.sh refuses
any of them quoted in Swift code outside the core's engine: a feature that needs something of mpv
adds it to the core's typed API. Rerun after a libmpv upgrade: python3 Scripts/list-mpv-names.py
"""
import ctypes
import ctypes.util
import json
import pathlib
import sys

library = ctypes.util.find_library("mpv")
if library is None:
    sys.exit("list-mpv-names: libmpv is not installed (Debian: apt-get install libmpv-dev)")
mpv = ctypes.CDLL(library)
# libmpv refuses to start unless LC_NUMERIC is "C".
ctypes.CDLL(None).setlocale(1, b"C")
mpv.mpv_create.restype = ctypes.c_void_p
mpv.mpv_initialize.argtypes = [ctypes.c_void_p]
mpv.mpv_set_option_string.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p]
mpv.mpv_get_property_string.restype = ctypes.c_void_p
mpv.mpv_get_property_string.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
mpv.mpv_free.argtypes = [ctypes.c_void_p]
mpv.mpv_terminate_destroy.argtypes = [ctypes.c_void_p]

handle = mpv.mpv_create()
for name, value in ((b"vo", b"null"), (b"ao", b"null"), (b"config", b"no")):
    mpv.mpv_set_option_string(handle, name, value)
if mpv.mpv_initialize(handle) < 0:
    sys.exit("list-mpv-names: mpv_initialize failed")


def read(name: bytes) -> str:
    pointer = mpv.mpv_get_property_string(handle, name)
    if not pointer:
        sys.exit(f"list-mpv-names: cannot read {name.decode()}")
    text = ctypes.cast(pointer, ctypes.c_char_p).value.decode()
    mpv.mpv_free(pointer)
    return text


names = set(read(b"property-list").split(","))
names |= set(read(b"options").split(","))
names |= {command["name"] for command in json.loads(read(b"command-list"))}
mpv.mpv_terminate_destroy(handle)
out = pathlib.Path(__file__).resolve().parent / "mpv-names.txt"
out.write_text("".join(f"{name}\n" for name in sorted(n for n in names if n)))
print(f"list-mpv-names: {len(names)} names -> {out}")
