/// mpv's error strings, without calling into libmpv (the model is pure logic).
enum MPVErrorMessages {
    static func message(for code: Int32) -> String {
        switch code {
        case 0: return "success"
        case -1: return "event queue full"
        case -2: return "memory allocation failed"
        case -3: return "core not uninitialized"
        case -4: return "invalid parameter"
        case -5: return "option not found"
        case -6: return "unsupported format for accessing option"
        case -7: return "error setting option"
        case -8: return "property not found"
        case -9: return "unsupported format for accessing property"
        case -10: return "property unavailable"
        case -11: return "error accessing property"
        case -12: return "error running command"
        case -13: return "loading failed"
        case -14: return "audio output initialization failed"
        case -15: return "video output initialization failed"
        case -16: return "no audio or video data played"
        case -17: return "unrecognized file format"
        case -18: return "not supported"
        case -19: return "operation not implemented"
        case -20: return "something happened"
        default: return "unknown error"
        }
    }
}
