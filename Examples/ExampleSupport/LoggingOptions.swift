import ArgumentParser
import Logging
import PlayerKit

/// `--log-level`, shared by the examples: where PlayerKit's and mpv's log lines go (standard
/// error) and how much of them. What an app does once at start, with its own handler.
public struct LoggingOptions: ParsableArguments {
    /// swift-log's levels, as the command line spells them.
    public enum Level: String, ExpressibleByArgument, CaseIterable, Sendable {
        case trace, debug, info, notice, warning, error, critical

        /// swift-log's level.
        public var logLevel: Logger.Level {
            switch self {
            case .trace: return .trace
            case .debug: return .debug
            case .info: return .info
            case .notice: return .notice
            case .warning: return .warning
            case .error: return .error
            case .critical: return .critical
            }
        }

        /// The mpv log level that produces lines at this level and above.
        public var mpvLogLevel: PlayerConfiguration.MPVLogLevel {
            switch self {
            case .trace: return .trace
            case .debug: return .debug
            case .info, .notice: return .info
            case .warning: return .warn
            case .error: return .error
            case .critical: return .fatal
            }
        }
    }

    @Option(help: "Log PlayerKit's and mpv's messages at this level and above to standard error: trace, debug, info, notice, warning, error or critical.")
    public var logLevel: Level = .warning

    public init() {}

    /// Sends swift-log's messages to standard error at the chosen level (once per process).
    public func bootstrap() {
        let level = logLevel.logLevel
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
    }

    /// `configuration` with mpv's log level to match.
    public func applied(to configuration: PlayerConfiguration) -> PlayerConfiguration {
        var configuration = configuration
        configuration.mpvLogLevel = logLevel.mpvLogLevel
        return configuration
    }
}
