/// An audio output device as mpv knows it (an entry of `audio-device-list`):
/// ``Player/audioDevices()``, chosen with ``PlayerConfiguration/audioDevice`` or
/// ``Player/setAudioDevice(_:)``.
public struct AudioDevice: Sendable, Hashable, Codable, Identifiable, CustomStringConvertible {
    /// mpv's name for the device: the audio driver and the driver's own name, e.g.
    /// `pulse/alsa_output.pci-0000_00_1f.3.analog-stereo`, `alsa/default`; `auto` for the
    /// system's default.
    public var name: String
    /// What the device calls itself, for people ("Built-in Audio Analog Stereo").
    public var description: String

    /// The device's ``name``.
    public var id: String { name }

    /// Creates a description.
    init(name: String, description: String) {
        self.name = name
        self.description = description
    }
}
