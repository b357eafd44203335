// expect-error: value of type 'any PlayerDelegate' has no member 'playerDidShutDown'
// 2.0 removed 1.x's typed delegate methods player(_:didEndItem:), player(_:didFail:) and
// playerDidShutDown(_:) (and PlayerDelegateEvent): player(_:didEmit:) hears those events
// (`.itemEnded(let reason)`, `.error(let error)`, `.shutDown`). Code that calls them fails with
// an error naming them. An app's delegate that still implements them compiles without a word
// (a method no requirement matches is an ordinary method) and is never called: Migrating.md says
// so, and gives the didEmit cases.
import PlayerKitCore

func oldTypedMethods(delegate: any PlayerDelegate, player: any MediaPlayer) {
    delegate.playerDidShutDown(player)
    delegate.player(player, didEndItem: .finished)
}
