internal import CMPV
import Foundation

/// Conversions between ``MPVValue`` and libmpv's `mpv_node`. Engine-only.
enum MPVNode {
    /// Copies an mpv-owned node into a Swift value. Does not free the node.
    static func value(from node: mpv_node) -> MPVValue {
        switch node.format {
        case MPV_FORMAT_FLAG:
            return .flag(node.u.flag != 0)
        case MPV_FORMAT_INT64:
            return .int(node.u.int64)
        case MPV_FORMAT_DOUBLE:
            return .double(node.u.double_)
        case MPV_FORMAT_STRING, MPV_FORMAT_OSD_STRING:
            guard let cString = node.u.string else { return .none }
            return .string(String(cString: cString))
        case MPV_FORMAT_NODE_ARRAY:
            guard let list = node.u.list?.pointee else { return .array([]) }
            let count = Int(list.num)
            return .array((0..<count).map { value(from: list.values[$0]) })
        case MPV_FORMAT_NODE_MAP:
            guard let list = node.u.list?.pointee else { return .map([]) }
            let count = Int(list.num)
            return .map((0..<count).map { index in
                let key = list.keys?[index].map { String(cString: $0) } ?? ""
                return (key: key, value: value(from: list.values[index]))
            })
        default:
            return .none
        }
    }

    /// Copies the data of an event or property of the given format.
    static func value(format: mpv_format, data: UnsafeMutableRawPointer?) -> MPVValue {
        guard let data else { return .none }
        switch format {
        case MPV_FORMAT_FLAG:
            return .flag(data.load(as: Int32.self) != 0)
        case MPV_FORMAT_INT64:
            return .int(data.load(as: Int64.self))
        case MPV_FORMAT_DOUBLE:
            return .double(data.load(as: Double.self))
        case MPV_FORMAT_STRING, MPV_FORMAT_OSD_STRING:
            guard let cString = data.load(as: UnsafePointer<CChar>?.self) else { return .none }
            return .string(String(cString: cString))
        case MPV_FORMAT_NODE:
            return value(from: data.load(as: mpv_node.self))
        default:
            return .none
        }
    }

    /// Builds a temporary `mpv_node` for `value`, valid only inside `body`.
    static func withNode<Result>(_ value: MPVValue, _ body: (UnsafeMutablePointer<mpv_node>) -> Result) -> Result {
        let node = UnsafeMutablePointer<mpv_node>.allocate(capacity: 1)
        node.initialize(to: build(value))
        defer {
            release(node.pointee)
            node.deallocate()
        }
        return body(node)
    }

    /// Allocates a node tree with malloc'd strings and lists; ``release(_:)`` frees it.
    private static func build(_ value: MPVValue) -> mpv_node {
        var node = mpv_node()
        switch value {
        case .none:
            node.format = MPV_FORMAT_NONE
        case .flag(let flag):
            node.format = MPV_FORMAT_FLAG
            node.u.flag = flag ? 1 : 0
        case .int(let int):
            node.format = MPV_FORMAT_INT64
            node.u.int64 = int
        case .double(let double):
            node.format = MPV_FORMAT_DOUBLE
            node.u.double_ = double
        case .string(let string):
            node.format = MPV_FORMAT_STRING
            node.u.string = strdup(string)
        case .array(let values):
            node.format = MPV_FORMAT_NODE_ARRAY
            node.u.list = makeList(values.map { (nil, $0) }, withKeys: false)
        case .map(let pairs):
            node.format = MPV_FORMAT_NODE_MAP
            node.u.list = makeList(pairs.map { ($0.key, $0.value) }, withKeys: true)
        }
        return node
    }

    private static func makeList(_ items: [(String?, MPVValue)], withKeys: Bool) -> UnsafeMutablePointer<mpv_node_list> {
        let list = UnsafeMutablePointer<mpv_node_list>.allocate(capacity: 1)
        let values = UnsafeMutablePointer<mpv_node>.allocate(capacity: max(items.count, 1))
        var keys: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
        if withKeys {
            keys = UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>.allocate(capacity: max(items.count, 1))
        }
        for (index, item) in items.enumerated() {
            (values + index).initialize(to: build(item.1))
            keys?[index] = strdup(item.0 ?? "")
        }
        list.initialize(to: mpv_node_list(num: Int32(items.count), values: values, keys: keys))
        return list
    }

    private static func release(_ node: mpv_node) {
        switch node.format {
        case MPV_FORMAT_STRING:
            free(node.u.string)
        case MPV_FORMAT_NODE_ARRAY, MPV_FORMAT_NODE_MAP:
            guard let list = node.u.list else { return }
            let count = Int(list.pointee.num)
            for index in 0..<count {
                release(list.pointee.values[index])
                if let keys = list.pointee.keys { free(keys[index]) }
            }
            list.pointee.values.deallocate()
            list.pointee.keys?.deallocate()
            list.deallocate()
        default:
            break
        }
    }
}

/// Runs `body` with a NULL-terminated C string array built from `arguments`.
func withCStringArray<Result>(_ arguments: [String], _ body: (UnsafeMutablePointer<UnsafePointer<CChar>?>) -> Result) -> Result {
    let strings = arguments.map { strdup($0) }
    defer { strings.forEach { free($0) } }
    let array = UnsafeMutablePointer<UnsafePointer<CChar>?>.allocate(capacity: strings.count + 1)
    defer { array.deallocate() }
    for (index, string) in strings.enumerated() { array[index] = UnsafePointer(string) }
    array[strings.count] = nil
    return body(array)
}
