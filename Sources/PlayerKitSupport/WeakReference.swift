/// A weak reference to an object, as a value: for lists, dictionaries and state structs that
/// must not keep the object alive (a policy's owner, a budget's waiting player).
///
/// **Threading.** A `WeakReference` is a value; reading ``object`` from several threads is safe.
public struct WeakReference<Object: AnyObject & Sendable>: Sendable {
    /// The object, or nil once it was deallocated.
    public weak var object: Object?

    /// A reference to `object`.
    public init(_ object: Object?) {
        self.object = object
    }
}
