/// The work was refused because the service is shutting down: its server has drained and what runs the
/// work (the group commit, the cache's builds) has ended. Answered as 503; a retry reaches a replica or
/// the restarted service.
public struct ServiceStopping: Error, Equatable {
    public init() {}
}
