/// The words of the two refusals a password login may get. Both are `{"status":403,"error":…}`, as
/// Udacity's was, so a client tells them apart by these: each calls for a different next step (retype the
/// password; ask the people who run the server).
public enum LoginRefusal {
    public static let invalidCredentials = "Account not found or invalid credentials."
    public static let accountDisabled = "This account has been disabled; ask the people who run this server to enable it."
}
