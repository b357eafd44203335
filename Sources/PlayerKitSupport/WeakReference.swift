/// A weak reference to an object, as a value: for lists, dictionaries and state structs that
/// must not keep the object alive (a policy's owner, a budget's waiting player, a delegate).
///
/// `Object` is a class or a class-bound protocol (`WeakReference<any PlayerDelegate>`): the
/// reference is kept as `AnyObject` and cast back when read.
///
/// **Threading.** A `WeakReference` is a value; reading ``object`` from several threads is safe.
package struct WeakReference<Object: Sendable>: @unchecked Sendable {
    // @unchecked: `storage` only ever holds an `Object` (checked at init), which is Sendable.
    private weak var storage: AnyObject?

    /// A reference to `object` (which must be a class instance; anything else is kept as nil).
    package init(_ object: Object?) {
        storage = object.flatMap { Self.asObject($0) }
    }

    /// The object, or nil once it was deallocated.
    package var object: Object? {
        get { storage as? Object }
        set { storage = newValue.flatMap { Self.asObject($0) } }
    }

    private static func asObject(_ value: Object) -> AnyObject? {
        // Only class instances can be held weakly; a value type would die at once.
        type(of: value as Any) is AnyClass ? (value as AnyObject) : nil
    }
}
