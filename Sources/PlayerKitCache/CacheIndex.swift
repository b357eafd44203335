import CSQLite
import Foundation
import PlayerKitSupport

/// The cache's index: one SQLite database (the system's libsqlite3, through its C API) in the
/// cache folder. It records, per entry, the key, the URL, what the server said (length, ETag,
/// Last-Modified) and the byte ranges whose bytes are on disk. Ranges are committed only after
/// their bytes were written and flushed (fdatasync), so a crash loses at most the bytes after the
/// last commit, never records bytes that are not there. Each write is one transaction.
///
/// Every call may come from any thread; they run one at a time under the index's lock (SQLite
/// calls are short: a few rows per transaction).
final class CacheIndex: Sendable {
    struct Record: Sendable {
        var id: Int64
        var key: String
        var url: String
        var size: Int64?
        var etag: String?
        var lastModified: String?
        var lastAccess: Double
        var ranges: ByteRanges
    }

    /// The connection; used only under `database`'s lock (SQLite is opened without its own mutex).
    private struct Connection: @unchecked Sendable {
        let handle: OpaquePointer
    }

    /// A value bound to a statement's `?`.
    private enum Value {
        case integer(Int64?)
        case real(Double)
        case text(String?)
    }

    private let database: Locked<Connection>
    private let path: String

    /// The schema, version 1 (the same tables earlier versions made through GRDB, so their
    /// indexes open as they are).
    private static let schema = """
        CREATE TABLE IF NOT EXISTS entry (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            key TEXT NOT NULL UNIQUE,
            url TEXT NOT NULL,
            size INTEGER,
            etag TEXT,
            lastModified TEXT,
            lastAccess REAL NOT NULL
        );
        CREATE TABLE IF NOT EXISTS range (
            entryId INTEGER NOT NULL REFERENCES entry(id) ON DELETE CASCADE,
            start INTEGER NOT NULL,
            end INTEGER NOT NULL,
            PRIMARY KEY (entryId, start)
        );
        PRAGMA user_version = 1;
        """

    init(path: String) throws(MediaCacheError) {
        self.path = path
        var handle: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let opened = sqlite3_open_v2(path, &handle, flags, nil)
        guard opened == SQLITE_OK, let handle else {
            let reason = handle.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(opened))
            sqlite3_close_v2(handle)
            throw .indexFailed(reason: "\(path): \(reason)")
        }
        // Another process (or a crashed one's lock) holding the file: wait up to 5 s, bounded.
        sqlite3_busy_timeout(handle, 5_000)
        database = Locked(Connection(handle: handle))
        do throws(MediaCacheError) {
            // Outside a transaction: SQLite ignores this pragma inside one.
            try database.withLock { connection throws(MediaCacheError) in
                try Self.execute(connection, "PRAGMA foreign_keys = ON", path: path)
            }
            try write { connection throws(MediaCacheError) in try Self.executeScript(connection, Self.schema, path: path) }
        } catch {
            throw .indexFailed(reason: "\(path): \(error)")
        }
    }

    deinit {
        _ = database.withLock { sqlite3_close_v2($0.handle) }
    }

    // MARK: Records

    func loadAll() throws(MediaCacheError) -> [Record] {
        try read { connection throws(MediaCacheError) in
            var records: [Int64: Record] = [:]
            try Self.query(connection, "SELECT id, key, url, size, etag, lastModified, lastAccess FROM entry", path: path) { row in
                let id = sqlite3_column_int64(row, 0)
                records[id] = Record(
                    id: id, key: Self.text(row, 1) ?? "", url: Self.text(row, 2) ?? "", size: Self.integer(row, 3),
                    etag: Self.text(row, 4), lastModified: Self.text(row, 5), lastAccess: sqlite3_column_double(row, 6),
                    ranges: ByteRanges())
            }
            try Self.query(connection, "SELECT entryId, start, end FROM range", path: path) { row in
                let id = sqlite3_column_int64(row, 0), start = sqlite3_column_int64(row, 1), end = sqlite3_column_int64(row, 2)
                if start < end { records[id]?.ranges.insert(start..<end) }
            }
            return Array(records.values)
        }
    }

    func insert(key: String, url: String, now: Double) throws(MediaCacheError) -> Int64 {
        try write { connection throws(MediaCacheError) in
            try Self.execute(
                connection, "INSERT INTO entry (key, url, lastAccess) VALUES (?, ?, ?)", [.text(key), .text(url), .real(now)], path: path)
            return sqlite3_last_insert_rowid(connection.handle)
        }
    }

    func updateOrigin(id: Int64, url: String, size: Int64?, etag: String?, lastModified: String?) throws(MediaCacheError) {
        try write { connection throws(MediaCacheError) in
            try Self.execute(
                connection, "UPDATE entry SET url = ?, size = ?, etag = ?, lastModified = ? WHERE id = ?",
                [.text(url), .integer(size), .text(etag), .text(lastModified), .integer(id)], path: path)
        }
    }

    func commitRanges(id: Int64, _ ranges: ByteRanges) throws(MediaCacheError) {
        try write { connection throws(MediaCacheError) in
            try Self.execute(connection, "DELETE FROM range WHERE entryId = ?", [.integer(id)], path: path)
            for range in ranges.ranges {
                try Self.execute(
                    connection, "INSERT INTO range (entryId, start, end) VALUES (?, ?, ?)",
                    [.integer(id), .integer(range.lowerBound), .integer(range.upperBound)], path: path)
            }
        }
    }

    func touch(id: Int64, now: Double) throws(MediaCacheError) {
        try write { connection throws(MediaCacheError) in
            try Self.execute(connection, "UPDATE entry SET lastAccess = ? WHERE id = ?", [.real(now), .integer(id)], path: path)
        }
    }

    func delete(id: Int64) throws(MediaCacheError) {
        try write { connection throws(MediaCacheError) in
            try Self.execute(connection, "DELETE FROM range WHERE entryId = ?", [.integer(id)], path: path)
            try Self.execute(connection, "DELETE FROM entry WHERE id = ?", [.integer(id)], path: path)
        }
    }

    // MARK: SQLite

    /// `body` in one transaction under the lock: committed when it returns, rolled back when it
    /// throws.
    private func write<T>(_ body: (Connection) throws(MediaCacheError) -> T) throws(MediaCacheError) -> T {
        try database.withLock { connection throws(MediaCacheError) -> T in
            try Self.execute(connection, "BEGIN IMMEDIATE", path: path)
            do throws(MediaCacheError) {
                let result = try body(connection)
                try Self.execute(connection, "COMMIT", path: path)
                return result
            } catch {
                _ = sqlite3_exec(connection.handle, "ROLLBACK", nil, nil, nil)
                throw error
            }
        }
    }

    private func read<T>(_ body: (Connection) throws(MediaCacheError) -> T) throws(MediaCacheError) -> T {
        try database.withLock { connection throws(MediaCacheError) -> T in try body(connection) }
    }

    /// The error for SQLite's result `code`: the disk being full is ``MediaCacheError/diskFull(path:)``.
    private static func failure(_ connection: Connection, _ code: Int32, _ sql: String, path: String) -> MediaCacheError {
        if code & 0xff == SQLITE_FULL { return .diskFull(path: path) }
        return .indexFailed(reason: "\(path): \(String(cString: sqlite3_errmsg(connection.handle))) (SQLite \(code), in \"\(sql)\")")
    }

    /// Runs several statements without parameters.
    private static func executeScript(_ connection: Connection, _ sql: String, path: String) throws(MediaCacheError) {
        let code = sqlite3_exec(connection.handle, sql, nil, nil, nil)
        guard code == SQLITE_OK else { throw failure(connection, code, sql, path: path) }
    }

    private static func execute(_ connection: Connection, _ sql: String, _ values: [Value] = [], path: String) throws(MediaCacheError) {
        try query(connection, sql, values, path: path) { _ in }
    }

    /// Prepares `sql`, binds `values` and calls `row` for each result row.
    private static func query(
        _ connection: Connection, _ sql: String, _ values: [Value] = [], path: String, row: (OpaquePointer) -> Void
    ) throws(MediaCacheError) {
        var statement: OpaquePointer?
        let prepared = sqlite3_prepare_v2(connection.handle, sql, -1, &statement, nil)
        guard prepared == SQLITE_OK, let statement else { throw failure(connection, prepared, sql, path: path) }
        defer { sqlite3_finalize(statement) }
        // SQLite copies bound text at once (SQLITE_TRANSIENT).
        let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            switch value {
            case .integer(let number?): sqlite3_bind_int64(statement, index, number)
            case .real(let number): sqlite3_bind_double(statement, index, number)
            case .text(let text?): sqlite3_bind_text(statement, index, text, -1, transient)
            case .integer(nil), .text(nil): sqlite3_bind_null(statement, index)
            }
        }
        while true {
            let stepped = sqlite3_step(statement)
            if stepped == SQLITE_ROW { row(statement); continue }
            guard stepped == SQLITE_DONE else { throw failure(connection, stepped, sql, path: path) }
            return
        }
    }

    private static func text(_ row: OpaquePointer, _ column: Int32) -> String? {
        guard sqlite3_column_type(row, column) != SQLITE_NULL, let bytes = sqlite3_column_text(row, column) else { return nil }
        return String(cString: bytes)
    }

    private static func integer(_ row: OpaquePointer, _ column: Int32) -> Int64? {
        sqlite3_column_type(row, column) == SQLITE_NULL ? nil : sqlite3_column_int64(row, column)
    }
}
