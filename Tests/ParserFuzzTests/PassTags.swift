import Testing

/// The passes of `make test` (Scripts/test-suite.sh), as Tests/PlayerKitTests/Support/PassTags.swift
/// declares them: a tag is matched by its name, so this target's ``timingPass`` is that one.
extension Tag {
    /// Timing assertions: run one at a time, after every other pass.
    @Tag static var timingPass: Self
}
