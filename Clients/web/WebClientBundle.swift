import Foundation

/// The browser client's files (`static/`), as the gateway serves them.
public enum WebClientBundle {
    /// The folder holding `index.html`, in this module's resource bundle beside the executable.
    public static var directory: URL? {
        Bundle.module.url(forResource: "static", withExtension: nil)
    }
}
