import Foundation
import GRDB

/// The cache's index: one SQLite database (through GRDB) in the cache folder. It records, per
/// entry, the key, the URL, what the server said (length, ETag, Last-Modified) and the byte
/// ranges whose bytes are on disk. Ranges are committed only after their bytes were written
/// and flushed (fdatasync), so a crash loses at most the bytes after the last commit, never
/// records bytes that are not there.
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

    private let database: DatabaseQueue
    private let path: String

    init(path: String) throws(MediaCacheError) {
        self.path = path
        do {
            var configuration = Configuration()
            configuration.label = "PlayerKit.cache.index"
            database = try DatabaseQueue(path: path, configuration: configuration)
            var migrator = DatabaseMigrator()
            migrator.registerMigration("v1") { db in
                try db.execute(sql: """
                    CREATE TABLE entry (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        key TEXT NOT NULL UNIQUE,
                        url TEXT NOT NULL,
                        size INTEGER,
                        etag TEXT,
                        lastModified TEXT,
                        lastAccess REAL NOT NULL
                    );
                    CREATE TABLE range (
                        entryId INTEGER NOT NULL REFERENCES entry(id) ON DELETE CASCADE,
                        start INTEGER NOT NULL,
                        end INTEGER NOT NULL,
                        PRIMARY KEY (entryId, start)
                    );
                    """)
            }
            try migrator.migrate(database)
        } catch {
            throw .indexFailed(reason: "\(path): \(error)")
        }
    }

    private func write<T>(_ body: (Database) throws -> T) throws(MediaCacheError) -> T {
        do {
            return try database.write(body)
        } catch let error as DatabaseError where error.resultCode == .SQLITE_FULL {
            throw .diskFull(path: path)
        } catch {
            throw .indexFailed(reason: "\(error)")
        }
    }

    func loadAll() throws(MediaCacheError) -> [Record] {
        do {
            return try database.read { db in
                var records: [Int64: Record] = [:]
                for row in try Row.fetchAll(db, sql: "SELECT id, key, url, size, etag, lastModified, lastAccess FROM entry") {
                    let id: Int64 = row["id"]
                    records[id] = Record(
                        id: id, key: row["key"], url: row["url"], size: row["size"], etag: row["etag"],
                        lastModified: row["lastModified"], lastAccess: row["lastAccess"], ranges: ByteRanges())
                }
                for row in try Row.fetchAll(db, sql: "SELECT entryId, start, end FROM range") {
                    let id: Int64 = row["entryId"], start: Int64 = row["start"], end: Int64 = row["end"]
                    if start < end { records[id]?.ranges.insert(start..<end) }
                }
                return Array(records.values)
            }
        } catch {
            throw .indexFailed(reason: "\(error)")
        }
    }

    func insert(key: String, url: String, now: Double) throws(MediaCacheError) -> Int64 {
        try write { db in
            try db.execute(sql: "INSERT INTO entry (key, url, lastAccess) VALUES (?, ?, ?)", arguments: [key, url, now])
            return db.lastInsertedRowID
        }
    }

    func updateOrigin(id: Int64, url: String, size: Int64?, etag: String?, lastModified: String?) throws(MediaCacheError) {
        try write { db in
            try db.execute(
                sql: "UPDATE entry SET url = ?, size = ?, etag = ?, lastModified = ? WHERE id = ?",
                arguments: [url, size, etag, lastModified, id])
        }
    }

    func commitRanges(id: Int64, _ ranges: ByteRanges) throws(MediaCacheError) {
        try write { db in
            try db.execute(sql: "DELETE FROM range WHERE entryId = ?", arguments: [id])
            for range in ranges.ranges {
                try db.execute(
                    sql: "INSERT INTO range (entryId, start, end) VALUES (?, ?, ?)",
                    arguments: [id, range.lowerBound, range.upperBound])
            }
        }
    }

    func touch(id: Int64, now: Double) throws(MediaCacheError) {
        try write { db in try db.execute(sql: "UPDATE entry SET lastAccess = ? WHERE id = ?", arguments: [now, id]) }
    }

    func delete(id: Int64) throws(MediaCacheError) {
        try write { db in
            try db.execute(sql: "DELETE FROM range WHERE entryId = ?", arguments: [id])
            try db.execute(sql: "DELETE FROM entry WHERE id = ?", arguments: [id])
        }
    }
}
