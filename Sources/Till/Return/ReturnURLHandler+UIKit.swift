#if canImport(UIKit)
import Foundation
import UIKit

extension ReturnURLHandler {
    /// For `scene(_:openURLContexts:)`: offers each URL; true if one was a waiting attempt's return.
    @MainActor
    public func handle(_ contexts: Set<UIOpenURLContext>) -> Bool {
        var handled = false
        for context in contexts where handle(context.url) { handled = true }
        return handled
    }

    /// For `application(_:continue:restorationHandler:)` and `scene(_:continue:)`: offers the
    /// universal link of a browsing activity.
    public func handle(_ userActivity: NSUserActivity) -> Bool {
        guard userActivity.activityType == NSUserActivityTypeBrowsingWeb, let url = userActivity.webpageURL else {
            return false
        }
        return handle(url)
    }
}
#endif
