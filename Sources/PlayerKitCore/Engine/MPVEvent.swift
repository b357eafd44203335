internal import CMPV

/// A libmpv event copied into Swift values. mpv's `mpv_event` is valid only until the next
/// `mpv_wait_event`, so the pump copies everything it needs into this before asking again.
enum MPVEvent: Sendable {
    case propertyChanged(observationID: UInt64, name: String, value: MPVValue)
    case startFile(entryID: Int64)
    /// `insertedEntryID`/`insertedCount`: for a redirect (a playlist file expanded in place),
    /// the first entry mpv inserted and how many (consecutive IDs).
    case endFile(entryID: Int64, reason: EndFileReason, error: Int32, insertedEntryID: Int64 = 0, insertedCount: Int = 0)
    case fileLoaded
    case seek
    case playbackRestart
    case commandReply(replyID: UInt64, error: Int32, result: MPVValue)
    case propertyReply(replyID: UInt64, error: Int32, name: String, value: MPVValue)
    case setPropertyReply(replyID: UInt64, error: Int32)
    case logMessage(level: LogLevel, prefix: String, text: String)
    case queueOverflow
    /// A hook this client registered (`mpv_hook_add`) runs: mpv waits for `mpv_hook_continue(id)`.
    case hook(name: String, id: UInt64)
    case shutdown
    case other(name: String)

    /// mpv's log levels, as the pump forwards them to swift-log.
    enum LogLevel: Sendable, Hashable {
        case fatal, error, warn, info, verbose, debug, trace
    }

    enum EndFileReason: Sendable, Equatable {
        case endOfFile, stop, quit, error, redirect, unknown(Int32)
    }

    /// Copies `event` (owned by mpv). Returns nil for `MPV_EVENT_NONE`.
    init?(copying event: mpv_event) {
        switch event.event_id {
        case MPV_EVENT_NONE:
            return nil
        case MPV_EVENT_PROPERTY_CHANGE:
            guard let property = event.data?.assumingMemoryBound(to: mpv_event_property.self).pointee else {
                self = .other(name: "property-change")
                return
            }
            self = .propertyChanged(
                observationID: event.reply_userdata,
                name: String(cString: property.name),
                value: MPVNode.value(format: property.format, data: property.data))
        case MPV_EVENT_GET_PROPERTY_REPLY:
            let property = event.data?.assumingMemoryBound(to: mpv_event_property.self).pointee
            self = .propertyReply(
                replyID: event.reply_userdata, error: event.error,
                name: property.map { String(cString: $0.name) } ?? "",
                value: property.map { MPVNode.value(format: $0.format, data: $0.data) } ?? .none)
        case MPV_EVENT_SET_PROPERTY_REPLY:
            self = .setPropertyReply(replyID: event.reply_userdata, error: event.error)
        case MPV_EVENT_START_FILE:
            let start = event.data?.assumingMemoryBound(to: mpv_event_start_file.self).pointee
            self = .startFile(entryID: start?.playlist_entry_id ?? -1)
        case MPV_EVENT_END_FILE:
            let end = event.data?.assumingMemoryBound(to: mpv_event_end_file.self).pointee
            let reason: EndFileReason
            switch end?.reason {
            case MPV_END_FILE_REASON_EOF: reason = .endOfFile
            case MPV_END_FILE_REASON_STOP: reason = .stop
            case MPV_END_FILE_REASON_QUIT: reason = .quit
            case MPV_END_FILE_REASON_ERROR: reason = .error
            case MPV_END_FILE_REASON_REDIRECT: reason = .redirect
            case let other?: reason = .unknown(Int32(bitPattern: other.rawValue))
            case nil: reason = .unknown(-1)
            }
            self = .endFile(
                entryID: end?.playlist_entry_id ?? -1, reason: reason, error: end?.error ?? 0,
                insertedEntryID: end?.playlist_insert_id ?? 0, insertedCount: Int(end?.playlist_insert_num_entries ?? 0))
        case MPV_EVENT_FILE_LOADED:
            self = .fileLoaded
        case MPV_EVENT_SEEK:
            self = .seek
        case MPV_EVENT_PLAYBACK_RESTART:
            self = .playbackRestart
        case MPV_EVENT_COMMAND_REPLY:
            let reply = event.data?.assumingMemoryBound(to: mpv_event_command.self).pointee
            self = .commandReply(
                replyID: event.reply_userdata, error: event.error,
                result: reply.map { MPVNode.value(from: $0.result) } ?? .none)
        case MPV_EVENT_LOG_MESSAGE:
            guard let message = event.data?.assumingMemoryBound(to: mpv_event_log_message.self).pointee else {
                self = .other(name: "log-message")
                return
            }
            let level: LogLevel
            switch message.log_level {
            case MPV_LOG_LEVEL_FATAL: level = .fatal
            case MPV_LOG_LEVEL_ERROR: level = .error
            case MPV_LOG_LEVEL_WARN: level = .warn
            case MPV_LOG_LEVEL_INFO: level = .info
            case MPV_LOG_LEVEL_V: level = .verbose
            case MPV_LOG_LEVEL_DEBUG: level = .debug
            default: level = .trace
            }
            self = .logMessage(
                level: level,
                prefix: String(cString: message.prefix),
                text: String(cString: message.text))
        case MPV_EVENT_HOOK:
            guard let hook = event.data?.assumingMemoryBound(to: mpv_event_hook.self).pointee else {
                self = .other(name: "hook")
                return
            }
            self = .hook(name: String(cString: hook.name), id: hook.id)
        case MPV_EVENT_QUEUE_OVERFLOW:
            self = .queueOverflow
        case MPV_EVENT_SHUTDOWN:
            self = .shutdown
        default:
            self = .other(name: String(cString: mpv_event_name(event.event_id)))
        }
    }
}
